"""engines/duckdb/scan.py: the one pass over the private input, its checks, its leaf cells."""

from __future__ import annotations

import duckdb
import numpy as np
import pytest

from inftda_sql import DomainError, InputDataError, SpecError
from inftda_sql.core.rng import SeededSource
from inftda_sql.core.spec import parse_hierarchy
from inftda_sql.engines.base import Scan
from inftda_sql.engines.duckdb import compile as _compile
from inftda_sql.engines.duckdb.catalog import count_column, resolve_source
from inftda_sql.engines.duckdb.domain import build_chain
from inftda_sql.engines.duckdb.scan import LeafScan, scan
from tests.system.helpers import make_geo

NAMES = _compile.TempNames("__inftda_s_")
GEO = ["region", "province", "mun"]
SPEC = parse_hierarchy(GEO)
# (unit, region, province, mun, n): unit 1 has 4 records in 2 cells, unit 2 one, unit 3 two
ROWS = [
    (1, "North", "N1", "n1a", 2),
    (1, "North", "N1", "n1a", 1),
    (1, "North", "N1", "n1a", 1),
    (1, "South", "S1", "s1c", 3),
    (2, "North", "N2", "n2a", 0),
    (3, "South", "S1", "s1c", 4),
    (3, "South", "S1", "s1a", 1),
]


@pytest.fixture
def db(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    make_geo(con)
    con.execute(
        "CREATE TABLE t (u INTEGER, region VARCHAR, province VARCHAR, mun VARCHAR, n INTEGER)"
    ).fetchall()
    con.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?)", ROWS)
    build_chain(con, NAMES, 0, GEO, '"geo"', ["VARCHAR"] * 3, "domain")
    return con


def _scan(
    con: duckdb.DuckDBPyConnection,
    table: str = "t",
    *,
    count: str | None = None,
    privacy_unit: str | None = None,
    contribution: int = 1,
    distinct: bool = False,
    check: tuple[str, ...] = ("region", "province"),
) -> Scan:
    return _leaf_scan(
        con,
        table,
        count=count,
        privacy_unit=privacy_unit,
        contribution=contribution,
        distinct=distinct,
        check=check,
    ).found


def _leaf_scan(
    con: duckdb.DuckDBPyConnection,
    table: str = "t",
    *,
    count: str | None = None,
    privacy_unit: str | None = None,
    contribution: int = 1,
    distinct: bool = False,
    check: tuple[str, ...] = ("region", "province"),
) -> LeafScan:
    # from an earlier scan in the same test
    con.execute(f'DROP TABLE IF EXISTS "{NAMES.leaf}"').fetchall()
    inp = resolve_source(con, table, role="input table", temp_name=NAMES.input)
    is_int = count_column(inp, count)[1] if count else True
    return scan(
        con,
        NAMES,
        SPEC,
        inp,
        count=count,
        count_is_integer=is_int,
        privacy_unit=privacy_unit,
        contribution=contribution,
        distinct=distinct,
        source=SeededSource(5),
        check=check,
    )


def _cells(found: LeafScan) -> list[tuple[int, int]]:
    """(leaf code, count) of every non-empty leaf cell, by code."""
    assert len(found.codes) == 1
    assert found.codes[0].dtype == np.int64 and found.counts.dtype == np.int64
    return sorted(zip(found.codes[0].tolist(), found.counts.tolist(), strict=True))


def test_microdata(db: duckdb.DuckDBPyConnection) -> None:
    found = _leaf_scan(db)
    assert found.found == Scan(total=7, diagnostics={})
    # one entry per non-empty leaf cell, with the domain's leaf code (e1a 0, n1a 1, ..., s1c 6)
    assert _cells(found) == [(1, 3), (3, 1), (4, 1), (6, 2)]


def test_pre_aggregated(db: duckdb.DuckDBPyConnection) -> None:
    found = _leaf_scan(db, count="n")
    assert found.found.total == 12
    # n2a's only row counts 0: the leaf table (string leaves: grouped by their codes, n1a 1,
    # n2a 3, s1a 4, s1c 6) keeps it for the checks, the cells leave it out
    assert _cells(found) == [(1, 4), (4, 1), (6, 7)]
    leaf = db.execute(f'SELECT __leaf0, __n FROM "{NAMES.leaf}" ORDER BY 1').fetchall()
    assert leaf == [(1, 4), (3, 0), (4, 1), (6, 7)]


def test_a_fractional_count_column_with_whole_values(db: duckdb.DuckDBPyConnection) -> None:
    db.execute("CREATE TABLE f AS SELECT * REPLACE (n::DOUBLE AS n) FROM t").fetchall()
    assert _scan(db, "f", count="n").total == 12


def test_privacy_unit_bounds_each_units_records(db: duckdb.DuckDBPyConnection) -> None:
    found = _scan(db, privacy_unit="u", contribution=2)
    assert found.total == 5  # unit 1 keeps 2 of its 4, the others keep all
    assert found.diagnostics == {
        "privacy_unit": "u",
        "contribution_bound": 2,
        "distinct": False,
        "rows_in": 7,
        "rows_kept": 5,
        "rows_dropped": 2,
    }


def test_privacy_unit_distinct_cells(db: duckdb.DuckDBPyConnection) -> None:
    # distinct: a unit counts once per leaf cell, in at most m cells
    cells = _leaf_scan(db, privacy_unit="u", contribution=2, distinct=True)
    found = cells.found
    assert found.total == 5  # unit 1: n1a and s1c; unit 2: n2a; unit 3: s1a and s1c
    assert found.diagnostics["rows_dropped"] == 2 and found.diagnostics["distinct"] is True
    assert _cells(cells) == [(1, 1), (3, 1), (4, 1), (6, 2)]
    found = _scan(db, privacy_unit="u", contribution=1, distinct=True)
    assert found.total == 3


# ----------------------------------------------------------------------------- every check


def _error(con: duckdb.DuckDBPyConnection, sql: str, **kw: object) -> str:
    con.execute(f"CREATE OR REPLACE TABLE bad AS {sql}").fetchall()
    with pytest.raises((InputDataError, DomainError, SpecError)) as info:
        _scan(con, "bad", **kw)  # type: ignore[arg-type]
    return f"{type(info.value).__name__}: {info.value}"


def test_null_leaf(db: duckdb.DuckDBPyConnection) -> None:
    got = _error(db, "SELECT * REPLACE (CASE WHEN u = 2 THEN NULL ELSE mun END AS mun) FROM t")
    assert got == (
        "InputDataError: hierarchy column 'mun' of table 'bad' has NULL values; every record "
        "needs a value in every hierarchy column (filter or fill them in a view first)"
    )


def test_null_ancestor(db: duckdb.DuckDBPyConnection) -> None:
    got = _error(
        db, "SELECT * REPLACE (CASE WHEN u = 2 THEN NULL ELSE region END AS region) FROM t"
    )
    assert got.startswith("InputDataError: hierarchy column 'region' of table 'bad' has NULL")


def test_null_count(db: duckdb.DuckDBPyConnection) -> None:
    got = _error(
        db, "SELECT * REPLACE (CASE WHEN u = 1 THEN NULL ELSE n END AS n) FROM t", count="n"
    )
    assert got == (
        "InputDataError: count column 'n' has 4 row(s) with NULL; use 0 or drop those rows in a "
        'view; see them with: SELECT * FROM "memory"."main"."bad" WHERE "n" IS NULL'
    )


def test_negative_count(db: duckdb.DuckDBPyConnection) -> None:
    got = _error(db, "SELECT * REPLACE (CASE WHEN u = 2 THEN -3 ELSE n END AS n) FROM t", count="n")
    # the number of rows and a query that lists them, never the value (-3) or its cell
    assert got == (
        "InputDataError: count column 'n' has 1 row(s) with a negative value; counts must be "
        'non-negative integers: fix or drop those rows in a view first (e.g. WHERE "n" >= 0); '
        'see them with: SELECT * FROM "memory"."main"."bad" WHERE "n" < 0'
    )


def test_fractional_count(db: duckdb.DuckDBPyConnection) -> None:
    got = _error(db, "SELECT * REPLACE (n + 0.5 AS n) FROM t", count="n")
    assert got == (
        "InputDataError: count column 'n' has 7 row(s) that are not whole numbers (fractional, "
        "NaN or infinite); counts must be whole numbers (CAST or ROUND them in a view); see them "
        'with: SELECT * FROM "memory"."main"."bad" WHERE NOT (isfinite("n") AND "n" = trunc("n"))'
    )


def test_leaf_outside_the_domain(db: duckdb.DuckDBPyConnection) -> None:
    got = _error(
        db,
        "SELECT * FROM t UNION ALL SELECT 9, 'North', 'N1', 'zz', 1 UNION ALL SELECT 9, 'North', 'N1', 'zy', 1",
    )
    assert got == (
        "DomainError: 2 value(s) of 'mun' in the input are not in the domain, e.g. mun='zy'; "
        "add them to the public domain table or fix the input"
    )


def test_path_that_disagrees_with_the_domain(db: duckdb.DuckDBPyConnection) -> None:
    got = _error(
        db, "SELECT * REPLACE (CASE WHEN u = 2 THEN 'South' ELSE region END AS region) FROM t"
    )
    assert got == (
        "DomainError: input path (region='South', province='N2', mun='n2a') is not in the "
        "domain: the domain puts mun='n2a' under other ancestors; fix the input's region, "
        "province or the domain (or pass check_ancestors='off' to take every leaf's ancestors "
        "from the domain)"
    )


def test_ancestors_not_checked_are_not_read(db: duckdb.DuckDBPyConnection) -> None:
    """Without the check, wrong or NULL ancestors change nothing: every leaf's ancestors are
    the domain's. Checking one column checks that column only."""
    wrong = (
        "SELECT * REPLACE (CASE WHEN u = 2 THEN 'South' ELSE region END AS region, "
        "CASE WHEN u = 3 THEN NULL ELSE province END AS province) FROM t"
    )
    db.execute(f"CREATE OR REPLACE TABLE bad AS {wrong}").fetchall()
    assert _cells(_leaf_scan(db, "bad", check=())) == _cells(_leaf_scan(db))
    assert _error(db, wrong, check=("province",)).startswith(
        "InputDataError: hierarchy column 'province' of table 'bad' has NULL"
    )
    assert "region='South'" in _error(db, wrong, check=("region",))


def test_a_star_schema_input_holds_the_leaf_column_only(db: duckdb.DuckDBPyConnection) -> None:
    db.execute("CREATE TABLE star AS SELECT u, mun, n FROM t").fetchall()
    found = _leaf_scan(db, "star", count="n", check=())
    assert _cells(found) == _cells(_leaf_scan(db, count="n"))
    bounded = _leaf_scan(db, "star", privacy_unit="u", contribution=2, check=())
    assert bounded.found.total == 5


@pytest.mark.parametrize(
    ("kw", "expected"),
    [
        ({"privacy_unit": ""}, "SpecError: privacy_unit must be a column name, got ''"),
        (
            {"privacy_unit": "person"},
            "InputDataError: column 'person' (privacy unit) not in table 'bad'; available: u, "
            "region, province, mun, n",
        ),
        (
            {"privacy_unit": "MUN"},
            "SpecError: privacy_unit 'MUN' is also a hierarchy column; name the column that "
            "identifies a person or household",
        ),
        (
            {"privacy_unit": "u", "count": "n"},
            "SpecError: privacy_unit= bounds the records of each unit",
        ),
    ],
)
def test_privacy_unit_errors(
    db: duckdb.DuckDBPyConnection, kw: dict[str, object], expected: str
) -> None:
    assert _error(db, "SELECT * FROM t", **kw).startswith(expected)


def test_null_privacy_unit(db: duckdb.DuckDBPyConnection) -> None:
    got = _error(
        db, "SELECT * REPLACE (CASE WHEN u = 1 THEN NULL ELSE u END AS u) FROM t", privacy_unit="u"
    )
    assert got == (
        "InputDataError: privacy unit column 'u' has 4 NULL value(s); every record must belong "
        "to a unit (drop or label them in a view)"
    )


def test_checks_run_leaves_first_then_counts_then_domain(db: duckdb.DuckDBPyConnection) -> None:
    """With every fault at once, the NULL leaf is reported; without it, the NULL count; and so
    on: the order of the checks is the order of this test."""
    faults = {
        "null leaf": "CASE WHEN u = 2 THEN NULL ELSE mun END AS mun",
        "null count": "CASE WHEN u = 1 THEN NULL ELSE n END AS n",
        "outside": "CASE WHEN u = 3 THEN 'zz' ELSE mun END AS mun",
    }
    expected = ["has NULL values", "has 4 row(s) with NULL", "are not in the domain"]
    for i, fragment in enumerate(expected):
        active = list(faults.values())[i:]
        # the leaf column can only be replaced once: the later replacement of mun wins otherwise
        replace = [active[0]] + [f for f in active[1:] if not f.endswith("AS mun")]
        sql = f"SELECT * REPLACE ({', '.join(replace)}) FROM t"
        assert fragment in _error(db, sql, count="n")
