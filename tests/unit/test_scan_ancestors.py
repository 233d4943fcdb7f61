"""The ancestor check of the DuckDB scan (issue 26, item 1): one hash of a row's ancestor
columns is grouped on beside the leaf columns, and every group's hash must be the domain's for
its leaf. These tests pin what it refuses: one wrong row among many of a leaf, every row of a
leaf wrong alike, NULL ancestors, on microdata, pre-aggregated (``count=``) and contribution
bounded (``privacy_unit=``) inputs; and, on random inputs, exactly what the per-row query of the
input joined to the domain refuses (the oracle).
"""

from __future__ import annotations

from typing import Any

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inftda_sql import DomainError, InputDataError
from inftda_sql.core.rng import SeededSource
from inftda_sql.core.spec import parse_hierarchy
from inftda_sql.engines.duckdb import compile as _compile
from inftda_sql.engines.duckdb.catalog import count_column, resolve_source
from inftda_sql.engines.duckdb.domain import build_chain
from inftda_sql.engines.duckdb.scan import LeafScan, scan
from tests.system.helpers import make_geo

NAMES = _compile.TempNames("__inftda_a_")
GEO = ["region", "province", "mun"]
SPEC = parse_hierarchy(GEO)
CHECK = ("region", "province")
#: the domain's path of every leaf (tests/system/helpers.py make_geo)
DOMAIN = {
    "n1a": ("North", "N1"),
    "n1b": ("North", "N1"),
    "n2a": ("North", "N2"),
    "s1a": ("South", "S1"),
    "s1b": ("South", "S1"),
    "s1c": ("South", "S1"),
    "e1a": ("East", "E1"),
}
#: kinds of input: keyword arguments of the scan
MODES: dict[str, dict[str, Any]] = {
    "microdata": {},
    "pre-aggregated": {"count": "n"},
    "privacy unit": {"privacy_unit": "u", "contribution": 2},
    "privacy unit, distinct": {"privacy_unit": "u", "contribution": 2, "distinct": True},
}
#: the old per-row check, as an oracle: input rows whose ancestors are not the domain's
ORACLE = (
    "SELECT count(*) FROM bad AS t JOIN geo AS g ON g.mun = t.mun "
    "WHERE t.region IS DISTINCT FROM g.region OR t.province IS DISTINCT FROM g.province"
)


@pytest.fixture
def db(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    make_geo(con)
    build_chain(con, NAMES, 0, GEO, '"geo"', ["VARCHAR"] * 3, "domain")
    return con


def _table(con: duckdb.DuckDBPyConnection, rows: list[tuple[Any, ...]]) -> None:
    con.execute(
        "CREATE OR REPLACE TABLE bad "
        "(u INTEGER, region VARCHAR, province VARCHAR, mun VARCHAR, n INTEGER)"
    ).fetchall()
    if rows:
        con.executemany("INSERT INTO bad VALUES (?, ?, ?, ?, ?)", rows)


def _scan(con: duckdb.DuckDBPyConnection, check: tuple[str, ...] = CHECK, **kw: Any) -> LeafScan:
    con.execute(f'DROP TABLE IF EXISTS "{NAMES.leaf}"').fetchall()
    inp = resolve_source(con, "bad", role="input table", temp_name=NAMES.input)
    count = kw.get("count")
    return scan(
        con,
        NAMES,
        SPEC,
        inp,
        count=count,
        count_is_integer=count_column(inp, count)[1] if count else True,
        privacy_unit=kw.get("privacy_unit"),
        contribution=kw.get("contribution", 1),
        distinct=kw.get("distinct", False),
        source=SeededSource(5),
        check=check,
    )


def _error(con: duckdb.DuckDBPyConnection, **kw: Any) -> str:
    with pytest.raises((InputDataError, DomainError)) as info:
        _scan(con, **kw)
    return f"{type(info.value).__name__}: {info.value}"


def _cells(found: LeafScan) -> list[tuple[int, int]]:
    return sorted(zip(found.codes[0].tolist(), found.counts.tolist(), strict=True))


def _right(mun: str, u: int = 1, n: int = 1) -> tuple[Any, ...]:
    return (u, *DOMAIN[mun], mun, n)


MANY = [_right("n1a", u=u % 7) for u in range(300)] + [_right("s1c", u=u) for u in range(50)]


@pytest.mark.parametrize("mode", list(MODES))
def test_one_wrong_row_among_many_of_a_leaf(db: duckdb.DuckDBPyConnection, mode: str) -> None:
    """The leaf's rows disagree among themselves: 299 carry the domain's ancestors, one does
    not (in the middle, so neither the first nor the last row of the leaf's group)."""
    _table(db, [*MANY[:150], (3, "South", "N1", "n1a", 1), *MANY[150:]])
    assert _error(db, **MODES[mode]) == (
        "DomainError: input path (region='South', province='N1', mun='n1a') is not in the "
        "domain: the domain puts mun='n1a' under other ancestors; fix the input's region, "
        "province or the domain (or pass check_ancestors='off' to take every leaf's ancestors "
        "from the domain)"
    )


@pytest.mark.parametrize("mode", list(MODES))
def test_every_row_of_a_leaf_wrong_alike(db: duckdb.DuckDBPyConnection, mode: str) -> None:
    """Every row of s1c carries the same wrong province: the leaf's rows agree among
    themselves, not with the domain."""
    _table(db, [*MANY[:300], *((u, "South", "S2", "s1c", 2) for u in range(50))])
    got = _error(db, **MODES[mode])
    assert got.startswith(
        "DomainError: input path (region='South', province='S2', mun='s1c') is not in the domain"
    )


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("column", CHECK)
def test_a_null_ancestor_in_one_row(db: duckdb.DuckDBPyConnection, mode: str, column: str) -> None:
    row = dict(zip(("u", "region", "province", "mun", "n"), _right("n1a", u=4), strict=True))
    row[column] = None
    _table(db, [*MANY[:10], tuple(row.values()), *MANY[10:]])
    assert _error(db, **MODES[mode]) == (
        f"InputDataError: hierarchy column {column!r} of table 'bad' has NULL values; every "
        "record needs a value in every hierarchy column (filter or fill them in a view first)"
    )


@pytest.mark.parametrize("mode", list(MODES))
def test_right_ancestors_pass_and_change_nothing(db: duckdb.DuckDBPyConnection, mode: str) -> None:
    _table(db, MANY)
    assert _cells(_scan(db, **MODES[mode])) == _cells(_scan(db, check=(), **MODES[mode]))


# a row: a leaf, then either the domain's ancestors or others from a small pool (with NULL)
_REGIONS = st.sampled_from(["North", "South", "East", None])
_PROVINCES = st.sampled_from(["N1", "N2", "S1", "E1", "S2", None])
_ROW = st.tuples(
    st.integers(0, 3),
    st.sampled_from(sorted(DOMAIN)),
    st.one_of(st.none(), st.tuples(_REGIONS, _PROVINCES)),
    st.integers(0, 3),
)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(rows=st.lists(_ROW, min_size=1, max_size=40), mode=st.sampled_from(sorted(MODES)))
def test_refuses_exactly_what_the_per_row_query_refuses(
    db: duckdb.DuckDBPyConnection,
    rows: list[tuple[int, str, tuple[str | None, str | None] | None, int]],
    mode: str,
) -> None:
    """Random inputs (most rows right, some with other or NULL ancestors): the scan refuses an
    input exactly when the per-row query finds a row whose ancestors are not its leaf's in the
    domain, and otherwise finds the cells of the unchecked scan."""
    _table(db, [(u, *(path or DOMAIN[mun]), mun, n) for u, mun, path, n in rows])
    wrong = db.execute(ORACLE).fetchall()[0][0]
    if wrong:
        _error(db, **MODES[mode])
    else:
        assert _cells(_scan(db, **MODES[mode])) == _cells(_scan(db, check=(), **MODES[mode]))
