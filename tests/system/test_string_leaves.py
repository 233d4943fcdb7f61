"""String leaves (UK MSOA codes) coded without the join to the code tables, their ancestors
checked without it too (issue 26): the same releases, the same errors."""

from __future__ import annotations

from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import inftda_sql
from inftda_sql import DomainError
from inftda_sql.engines.duckdb import compile as compile_module
from inftda_sql.engines.duckdb import domain as domain_module

ORIGIN = ["o_country", "o_lad", "o_msoa"]
DEST = ["d_country", "d_lad", "d_msoa"]
SEEDED: dict[str, Any] = {"epsilon": 1.0, "delta": 1e-8, "seed": 7, "overwrite": True}
EXACT: dict[str, Any] = {"rho": float("inf"), "overwrite": True}


def _world(con: duckdb.DuckDBPyConnection, *, shuffled: bool = True) -> None:
    """A geography of 2 x 6 x 30 string paths (stored out of code order) and O/D trips with
    every hierarchy column (``trips``) and with the leaves only (``leaves``)."""
    msoa = [f"{'EW'[i // 15]}0{i:07d}" for i in range(30)]
    geo = pa.table({
        "country": ["EW"[i // 15] for i in range(30)],
        "lad": [f"L{i // 5}" for i in range(30)],
        "msoa": msoa,
    })  # fmt: skip
    if shuffled:
        geo = geo.take(pa.array(np.random.default_rng(1).permutation(30)))
    con.register("g", geo)
    con.execute("CREATE TABLE geo AS SELECT * FROM g").fetchall()
    con.unregister("g")
    rng = np.random.default_rng(0)
    o, d = rng.integers(0, 30, 400), rng.integers(0, 30, 400)
    con.register("t", pa.table({"o": np.array(msoa)[o], "d": np.array(msoa)[d]}))
    con.execute(
        "CREATE TABLE trips AS SELECT go.country AS o_country, go.lad AS o_lad, t.o AS o_msoa, "
        "gd.country AS d_country, gd.lad AS d_lad, t.d AS d_msoa FROM t "
        "JOIN geo AS go ON go.msoa = t.o JOIN geo AS gd ON gd.msoa = t.d"
    ).fetchall()
    con.unregister("t")
    con.execute("CREATE VIEW leaves AS SELECT o_msoa, d_msoa FROM trips").fetchall()


def _release(con: duckdb.DuckDBPyConnection, table: str, **kw: Any) -> list[tuple[Any, ...]]:
    inftda_sql.release(
        con, table, hierarchy=[ORIGIN, DEST], domain=["geo", "geo"], output="out", **kw
    )
    return con.execute("SELECT * FROM out ORDER BY ALL").fetchall()


@pytest.fixture
def joins(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the scans that join the leaf cells to the code tables."""
    calls: list[int] = []
    real = compile_module.leaf_codes

    def counting(*args: Any, **kw: Any) -> str:
        calls.append(1)
        return real(*args, **kw)

    monkeypatch.setattr(compile_module, "leaf_codes", counting)
    return calls


@pytest.mark.parametrize("table", ["leaves", "trips"])  # star schema; wide, checked in full
def test_string_leaves_are_coded_without_the_join(
    con: duckdb.DuckDBPyConnection,
    monkeypatch: pytest.MonkeyPatch,
    joins: list[int],
    table: str,
) -> None:
    """The same released table as through the join (exact and seeded), and no join."""
    _world(con)
    exact = _release(con, table, **EXACT)
    seeded = _release(con, table, **SEEDED)
    assert joins == []
    truth = con.execute("SELECT *, count(*) FROM trips GROUP BY ALL ORDER BY ALL").fetchall()
    assert [r for r in exact if r[-1]] == truth
    monkeypatch.setattr(domain_module.CodedChain, "leaf_index", None)  # every chain joins
    assert _release(con, table, **EXACT) == exact
    assert _release(con, table, **SEEDED) == seeded
    assert len(joins) == 2


def _error(con: duckdb.DuckDBPyConnection, table: str) -> str:
    with pytest.raises(DomainError) as caught:
        _release(con, table, **EXACT)
    return str(caught.value)


@pytest.mark.parametrize("table", ["leaves", "trips"])
def test_a_leaf_missing_from_a_string_domain_is_named_as_by_the_join(
    con: duckdb.DuckDBPyConnection,
    monkeypatch: pytest.MonkeyPatch,
    joins: list[int],
    table: str,
) -> None:
    """A value the domain does not list (another case, a blank) gets no code: the same error
    as through the join, found without it."""
    _world(con)
    con.execute(
        "INSERT INTO trips VALUES ('E', 'L0', 'e00000001', 'E', 'L0', 'E00000001'), "
        "('E', 'L0', 'e00000001', 'E', 'L0', 'E00000002 ')"
    ).fetchall()
    message = _error(con, table)
    assert joins == []
    assert "1 value(s) of 'o_msoa' in the input are not in the domain" in message
    assert "o_msoa='e00000001'" in message
    monkeypatch.setattr(domain_module.CodedChain, "leaf_index", None)
    assert _error(con, table) == message


#: one row whose destination LAD is not its MSOA's in the domain; one whose origin and
#: destination ancestors are swapped (a hash of all ancestors at once would let it pass if it
#: combined the chains' hashes symmetrically)
CHANGES = (
    "UPDATE trips SET d_lad = CASE d_lad WHEN 'L1' THEN 'L2' ELSE 'L1' END WHERE rowid = 7",
    "UPDATE trips SET o_country = d_country, o_lad = d_lad, d_country = o_country, "
    "d_lad = o_lad WHERE rowid = (SELECT min(rowid) FROM trips WHERE o_lad <> d_lad)",
)


def _refused(con: duckdb.DuckDBPyConnection, change: str) -> str:
    con.execute("CREATE OR REPLACE TABLE saved AS FROM trips").fetchall()
    con.execute(change).fetchall()
    message = _error(con, "trips")
    con.execute("CREATE OR REPLACE TABLE trips AS FROM saved").fetchall()
    return message


def test_an_ancestor_that_disagrees_is_refused_as_by_the_join(
    con: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch, joins: list[int]
) -> None:
    """Each bad row refused with the join's message, found without the join."""
    _world(con)
    messages = [_refused(con, change) for change in CHANGES]
    assert joins == []
    assert all("is not in the domain: the domain puts" in message for message in messages)
    monkeypatch.setattr(domain_module.CodedChain, "leaf_index", None)
    assert [_refused(con, change) for change in CHANGES] == messages
