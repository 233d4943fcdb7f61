"""CBDP at O/D scale (issue 26 item 5): the DC-like lattice of block-group pairs (326K leaf
cells) with features at tract level on both sides and mixed block-group x tract features,
whose Newton systems take the conjugate-gradient path of inftda_sql.core.lsq."""

from __future__ import annotations

import duckdb
import numpy as np
import pytest

import inftda_sql
from inftda_sql.core import lsq
from inftda_sql.synthetic import DCLike, dc_like, dc_like_features, dc_like_flows

pytestmark = pytest.mark.slow

INF = float("inf")


@pytest.fixture(scope="module")
def dc() -> tuple[duckdb.DuckDBPyConnection, DCLike]:
    con = duckdb.connect()
    return con, dc_like(con, seed=3)


def leaves(con: duckdb.DuckDBPyConnection, table: str, count: str) -> dict[tuple[str, str], int]:
    return {
        (o, d): int(n)
        for o, d, n in con.execute(
            f"SELECT o_bg, d_bg, {count} FROM {table} WHERE {count} <> 0"
        ).fetchall()
    }


def test_the_generator_is_dc_shaped_and_deterministic() -> None:
    a, b = dc_like_flows(seed=3), dc_like_flows(seed=3)
    assert np.array_equal(a.counts, b.counts) and np.array_equal(a.tract, b.tract)
    assert not np.array_equal(a.counts, dc_like_flows(seed=4).counts)
    assert a.counts.size == 570 * 570 and a.tracts == 200
    assert int(a.counts.sum()) == 250_000
    nonzero = a.counts[a.counts > 0]
    # sparse and heavy-tailed: a minority of cells non-zero, the largest hundreds of trips
    assert 0.05 < nonzero.size / a.counts.size < 0.4
    assert np.median(nonzero) <= 3 and nonzero.max() >= 300


def test_released_exactly_under_an_infinite_budget(
    dc: tuple[duckdb.DuckDBPyConnection, DCLike],
) -> None:
    con, d = dc
    r = inftda_sql.release(
        con,
        d.trips,
        mechanism="cbdp",
        features=dc_like_features("mixed"),
        domain=[d.origins, d.destinations],
        rho=INF,
        output="dc_exact",
    )
    truth = {
        (o, dd): n
        for o, dd, n in con.execute(
            f"SELECT o_bg, d_bg, count(*) FROM {d.trips} GROUP BY ALL"
        ).fetchall()
    }
    assert leaves(con, "dc_exact", '"count"') == truth
    assert r.total == d.trips_total == 250_000


@pytest.mark.parametrize(
    ("kind", "lapack", "solver"),
    [("mixed", None, "cg"), ("tract", None, "cg"), ("tract", 4000, "direct")],
)
def test_consistent_at_epsilon_one(
    dc: tuple[duckdb.DuckDBPyConnection, DCLike],
    kind: str,
    lapack: int | None,
    solver: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Non-negative integers; every feature's view sums the leaves; the public total is met.
    The mixed features (coarse cells 268K besides the largest) take the CG path, and so do the
    tract features (401 besides the 40K tract pairs: a 201-cell border for LAPACK) unless the
    direct solver is allowed a larger dense system."""
    if lapack is not None:
        monkeypatch.setattr(lsq, "MAX_LAPACK_CELLS", lapack)
    con, d = dc
    out = f"dc_eps_{kind}_{solver}"
    features = dc_like_features(kind)
    r = inftda_sql.release(
        con,
        d.trips,
        mechanism="cbdp",
        features=features,
        domain=[d.origins, d.destinations],
        epsilon=1.0,
        output=out,
    )
    assert r.mechanism_params["newton_solver"] == solver
    assert r.total == 250_000
    got = leaves(con, out, '"count"')
    assert all(isinstance(n, int) and n > 0 for n in got.values())
    assert sum(got.values()) == 250_000
    rows = con.execute(f'SELECT o_bg, d_bg, o_tract, d_tract, "count" FROM {out}').fetchall()
    position = {"o_bg": 0, "d_bg": 1, "o_tract": 2, "d_tract": 3}
    for name, by in features.items():
        sums: dict[tuple[str, ...], int] = {}
        for row in rows:
            key = tuple(row[position[c]] for c in by)
            sums[key] = sums.get(key, 0) + row[4]
        select = ", ".join(by) if by else "'x'"
        view = con.execute(
            f'SELECT {select}, "count" FROM {out}_features WHERE feature = $f', {"f": name}
        ).fetchall()
        assert {tuple(v[:-1]) if by else (): v[-1] for v in view} == sums, name
