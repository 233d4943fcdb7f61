"""No mechanism ever sees a cell whose true count is 0.

The Stability Histogram noises the *positive* leaf cells only; a cell holding none of the kept
records must never reach it. Two ways such cells arise: contribution bounding drops every record
of a cell (one person with records in many cells, ``contribution=1``), and a pre-aggregated
input lists a cell with ``count = 0``. The engine leaves them out of its level counts
(``sql/level_counts.sql``) while its checks still see every input row, and the mechanism side
refuses a zero from any engine (``mechanisms/base.py``).

The release tests are statistical only in the *power* they need: with the bug, each of ~2,000
zero cells is released independently with probability q0 = P[Laplace noise >= threshold], so
the chance that a buggy release shows none of them is (1 - q0)^n, checked below 1e-6 before the
release runs (a fixed p-value floor: the test misses the bug with probability below 1e-6).
After the fix nothing but the positive cells can be released at all.
"""

from __future__ import annotations

import math

import duckdb
import numpy as np
import pytest

import inftda_sql
from inftda_sql.core.accounting import Budget, account, stability_histogram
from inftda_sql.core.rng import SeededSource
from inftda_sql.core.spec import parse_hierarchy
from inftda_sql.core.tree import ChainTree
from inftda_sql.mechanisms import MechanismContext, get

CELLS = 2000
EPSILON, DELTA = 1.0, 0.02  # a threshold low enough that a zero cell would show (issue 10)
P_FLOOR = 1e-6


def _miss_probability(zero_cells: int, **model: object) -> float:
    """P[a release that noised ``zero_cells`` empty cells shows none of them]."""
    params = stability_histogram(EPSILON, DELTA, **model)  # type: ignore[arg-type]
    a = math.exp(-1.0 / params.scale)
    q0 = a**params.threshold / (1.0 + a)  # P[L >= threshold] for the discrete Laplace
    return (1.0 - q0) ** zero_cells


@pytest.fixture
def geo(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    con.execute(
        f"CREATE TABLE geo AS SELECT 'R' AS r, 'c' || i AS c FROM range({CELLS}) t(i)"
    ).fetchall()
    return con


def test_cells_of_dropped_records_are_never_released(geo: duckdb.DuckDBPyConnection) -> None:
    """One person with a record in each of 2,000 cells, contribution=1: one record is kept,
    the 1,999 cells holding only dropped records must never be released."""
    geo.execute("CREATE TABLE trips AS SELECT 7 AS person, r, c FROM geo").fetchall()
    assert _miss_probability(CELLS - 1) < P_FLOOR
    for _ in range(3):
        r = inftda_sql.release(
            geo,
            "trips",
            hierarchy=["r", "c"],
            domain="geo",
            epsilon=EPSILON,
            delta=DELTA,
            mechanism="stability_histogram",
            privacy_unit="person",
            contribution=1,
            output="out",
            overwrite=True,
        )
        assert r.diagnostics["rows_kept"] == 1 and r.diagnostics["rows_dropped"] == CELLS - 1
        released = geo.execute("SELECT count(*) FROM out").fetchall()[0][0]
        assert released <= 1, f"{released} cells released from one kept record"


def test_explicit_zero_rows_are_never_released(geo: duckdb.DuckDBPyConnection) -> None:
    """A pre-aggregated input listing every cell, all but three with count 0."""
    geo.execute(
        "CREATE TABLE agg AS SELECT r, c, CASE WHEN c IN ('c1', 'c2', 'c3') THEN 500 ELSE 0 END "
        "AS n FROM geo"
    ).fetchall()
    assert _miss_probability(CELLS - 3) < P_FLOOR
    for _ in range(3):
        inftda_sql.release(
            geo,
            "agg",
            hierarchy=["r", "c"],
            domain="geo",
            epsilon=EPSILON,
            delta=DELTA,
            mechanism="stability_histogram",
            count="n",
            output="out",
            overwrite=True,
        )
        cells = {c for (c,) in geo.execute("SELECT c FROM out").fetchall()}
        assert cells <= {"c1", "c2", "c3"}, sorted(cells - {"c1", "c2", "c3"})[:5]


def test_zero_rows_are_still_checked(geo: duckdb.DuckDBPyConnection) -> None:
    """Leaving zero cells out of the level counts does not hide them from the input checks."""
    geo.execute("CREATE TABLE agg AS SELECT 'R' AS r, 'nowhere' AS c, 0 AS n").fetchall()
    with pytest.raises(inftda_sql.DomainError, match="nowhere"):
        inftda_sql.release(geo, "agg", hierarchy=["r", "c"], domain="geo", rho=1.0, count="n")
    geo.execute("CREATE OR REPLACE TABLE agg AS SELECT 'S' AS r, 'c1' AS c, 0 AS n").fetchall()
    with pytest.raises(inftda_sql.DomainError, match="not in the domain"):
        inftda_sql.release(geo, "agg", hierarchy=["r", "c"], domain="geo", rho=1.0, count="n")


def test_every_mechanism_gets_the_same_total_with_zero_rows(
    geo: duckdb.DuckDBPyConnection,
) -> None:
    """Zero rows change nothing for the mechanisms that noise the whole domain either."""
    geo.execute(
        "CREATE TABLE agg AS SELECT r, c, CASE WHEN c < 'c2' THEN 3 ELSE 0 END AS n FROM geo"
    ).fetchall()
    true_total = geo.execute("SELECT sum(n) FROM agg").fetchall()[0][0]
    for mechanism in ("inftda", "vanilla_gauss", "hierarchical"):
        r = inftda_sql.release(
            geo,
            "agg",
            hierarchy=["r", "c"],
            domain="geo",
            rho=float("inf"),
            count="n",
            mechanism=mechanism,
            output="out",
            overwrite=True,
        )
        assert r.total == true_total, mechanism


def _context(counts: np.ndarray) -> MechanismContext:
    spec = parse_hierarchy(["cell"])
    chain = ChainTree.from_parents([np.zeros(counts.size, dtype=np.int64)])
    keys = np.arange(counts.size, dtype=np.int64)
    budget = Budget.from_args(epsilon=EPSILON, delta=DELTA)
    return MechanismContext(
        spec=spec,
        chains=[chain],
        true_level=lambda level, strides: (keys, counts),
        total=int(counts.sum()),
        accounting=account(budget, ["cell"]),
        source=SeededSource(1),
    )


@pytest.mark.parametrize("mechanism", ["stability_histogram", "inftda", "vanilla_gauss"])
def test_a_zero_from_any_engine_is_refused(mechanism: str) -> None:
    """An engine that breaks the non-zero contract is a bug, caught before any noise."""
    ctx = _context(np.array([4, 0, 2], dtype=np.int64))
    with pytest.raises(inftda_sql.InternalError, match="true count below 1"):
        get(mechanism).run(ctx)
    ok = _context(np.array([4, 1, 2], dtype=np.int64))
    assert get(mechanism).run(ok).counts.dtype == np.int64


def test_unsorted_keys_from_an_engine_are_refused() -> None:
    ctx = _context(np.array([4, 1, 2], dtype=np.int64))
    keys = np.array([2, 0, 1], dtype=np.int64)
    bad = MechanismContext(
        spec=ctx.spec,
        chains=ctx.chains,
        true_level=lambda level, strides: (keys, np.array([1, 1, 1], dtype=np.int64)),
        total=3,
        accounting=ctx.accounting,
        source=ctx.source,
    )
    with pytest.raises(inftda_sql.InternalError, match="unsorted"):
        bad.true_level(1, (1,))
