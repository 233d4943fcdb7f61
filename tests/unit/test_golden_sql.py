"""Golden SQL: one file per compile function of engines/duckdb/compile.py.

Each test compiles a small fixed spec, compares the text with ``tests/golden/<function>.sql``
(rewrite them deliberately with ``INFTDA_UPDATE_GOLDEN=1``, then review ``git diff``) and
executes the same SQL on an in-memory DuckDB holding the small tables below, checking the rows.

The world: an O/D hierarchy refined destination first, origin (o_reg > o_mun) and destination
(d_reg > d_mun), three paths each. Codes (sorted domain): a1 0, a2 1, b1 2 (A 0, B 1) and
x1 0, x2 1, y1 2 (X 0, Y 1). The trips, one row per record with a count column n and a
fractional one w::

    u  o_reg o_mun d_reg d_mun  n   w
    1  A     a1    X     x1     2   2.0
    1  A     a1    X     x1     1   1.0
    1  A     a2    Y     y1     4   4.0
    2  B     b1    X     x2     3   3.0
    3  A     a1    Y     y1     1   0.5
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from inftda_sql.core.features import Lattice, code_lattice, parse_features
from inftda_sql.core.spec import parse_hierarchy
from inftda_sql.engines.duckdb import compile as _compile
from inftda_sql.engines.duckdb.domain import build_chain
from tests.conftest import UPDATE_GOLDEN

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
NAMES = _compile.TempNames("__inftda_g_")
SPEC = parse_hierarchy([["o_reg", "o_mun"], ["d_reg", "d_mun"]], "destination")
ORIGIN, DESTINATION = SPEC.chains
LEAF = '"__inftda_g_leaf"'
#: the ancestor columns, checked against the domain
ANCESTORS = ("o_reg", "d_reg")
#: public functions of compile.py that do not return SQL
NOT_SQL = {
    "TempNames",
    "ancestors",
    "count_checks",
    "depth_code",
    "feature_set_mask",
    "leaf_code",
    "level_cell_columns",
    "query_code",
}
#: golden files that are not one compile function's (tests/unit/test_compile.py)
OTHER_GOLDEN = {"od_destination.sql"}

Golden = Callable[[str, str], None]
Rows = list[tuple[Any, ...]]


def _text(*calls: tuple[str, str]) -> str:
    """The golden file: every call, labelled, with the SQL it compiled to."""
    return "\n".join(f"-- {label}\n{sql.strip()};\n" for label, sql in calls)


def _rows(con: duckdb.DuckDBPyConnection, sql: str, params: dict[str, Any] | None = None) -> Rows:
    return con.execute(sql, params).fetchall()


def _run(con: duckdb.DuckDBPyConnection, sql: str, params: dict[str, Any] | None = None) -> None:
    con.execute(sql, params).fetchall()


TRIPS = [
    (1, "A", "a1", "X", "x1", 2, 2.0),
    (1, "A", "a1", "X", "x1", 1, 1.0),
    (1, "A", "a2", "Y", "y1", 4, 4.0),
    (2, "B", "b1", "X", "x2", 3, 3.0),
    (3, "A", "a1", "Y", "y1", 1, 0.5),
]


def _table(con: duckdb.DuckDBPyConnection, name: str, rows: Sequence[tuple[Any, ...]]) -> None:
    con.execute(
        f"CREATE TABLE {name} (u INTEGER, o_reg VARCHAR, o_mun VARCHAR, d_reg VARCHAR, "
        "d_mun VARCHAR, n INTEGER, w DOUBLE)"
    ).fetchall()
    con.executemany(f"INSERT INTO {name} VALUES (?, ?, ?, ?, ?, ?, ?)", list(rows))


@pytest.fixture
def world(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """The trips and both domains, inserted out of order, with their code tables registered."""
    con.execute(
        "CREATE TABLE geo_o AS SELECT * FROM (VALUES ('B','b1'), ('A','a2'), ('A','a1'), "
        "('A','a1')) g(o_reg, o_mun)"
    ).fetchall()
    con.execute(
        "CREATE TABLE geo_d AS SELECT * FROM (VALUES ('Y','y1'), ('X','x2'), ('X','x1')) "
        "g(d_reg, d_mun)"
    ).fetchall()
    _table(con, "trips", TRIPS)
    for c, (chain, geo) in enumerate(zip(SPEC.chains, ('"geo_o"', '"geo_d"'), strict=True)):
        build_chain(con, NAMES, c, chain, geo, ["VARCHAR"] * len(chain), "domain")
    return con


def _scan(con: duckdb.DuckDBPyConnection, table: str, count: str | None = "n") -> Rows:
    """leaf_counts then leaf_codes on ``table`` (the scan's two statements): the fetched cells."""
    _run(con, f'DROP TABLE IF EXISTS "{NAMES.leaf}"')
    _run(con, _compile.leaf_counts(NAMES, SPEC, f'"{table}"', count, True, check=ANCESTORS))
    return _rows(con, _compile.leaf_codes(NAMES, SPEC, ANCESTORS))


# ----------------------------------------------------------------------------- coverage


def test_every_compile_function_has_a_golden_file() -> None:
    functions = {
        name
        for name in _compile.__all__
        if name not in NOT_SQL and inspect.isfunction(getattr(_compile, name))
    }
    files = {p.name for p in GOLDEN.glob("*.sql")} - OTHER_GOLDEN
    missing = sorted(f"{f}.sql" for f in functions if f"{f}.sql" not in files)
    stale = sorted(f for f in files if f.removesuffix(".sql") not in functions)
    if os.environ.get(UPDATE_GOLDEN) != "1":  # else the tests below write the missing files
        assert not missing, f"compile functions without a golden fixture: {missing}"
    assert not stale, f"golden files without a compile function: {stale}"
    tests = {n.removeprefix("test_golden_") for n in globals() if n.startswith("test_golden_")}
    assert functions <= tests, (
        f"compile functions without a golden test: {sorted(functions - tests)}"
    )


# ----------------------------------------------------------------------------- the domain


def test_golden_domain_paths(world: duckdb.DuckDBPyConnection, golden: Golden) -> None:
    plain = _compile.domain_paths(ORIGIN, '"geo_o"', ["VARCHAR", "VARCHAR"])
    cast = _compile.domain_paths(DESTINATION, '"geo_d"', ["VARCHAR", "ENUM('x1', 'x2', 'y1')"])
    golden(
        "domain_paths.sql",
        _text(
            ("domain_paths(('o_reg', 'o_mun'), '\"geo_o\"', ['VARCHAR', 'VARCHAR'])", plain),
            ("domain_paths(('d_reg', 'd_mun'), '\"geo_d\"', ['VARCHAR', ENUM])", cast),
        ),
    )
    # sorted, repeats kept (code_paths drops them)
    assert _rows(world, plain) == [("A", "a1"), ("A", "a1"), ("A", "a2"), ("B", "b1")]
    assert _rows(world, cast) == [("X", "x1"), ("X", "x2"), ("Y", "y1")]


def test_golden_chain_columns(world: duckdb.DuckDBPyConnection, golden: Golden) -> None:
    """One geography read as each chain: its columns renamed in a subquery (nothing created)."""
    world.execute(
        "CREATE TABLE geography AS SELECT * FROM (VALUES ('A', 'a1', 'Alpha'), ('B', 'b1', "
        "'Beta')) g(reg, mun, name)"
    ).fetchall()
    origin = _compile.chain_columns({"o_reg": "reg", "o_mun": "mun"}, '"geography"')
    golden(
        "chain_columns.sql",
        _text(("chain_columns({'o_reg': 'reg', 'o_mun': 'mun'}, '\"geography\"')", origin)),
    )
    assert _rows(world, f"SELECT * FROM {origin} ORDER BY ALL") == [("A", "a1"), ("B", "b1")]
    assert [r[0] for r in _rows(world, _compile.describe(origin))] == ["o_reg", "o_mun"]
    paths = _compile.domain_paths(ORIGIN, origin, ["VARCHAR", "VARCHAR"])
    assert _rows(world, paths) == [("A", "a1"), ("B", "b1")]
    tables = "SELECT count(*) FROM duckdb_tables() UNION ALL SELECT count(*) FROM duckdb_views()"
    before = _rows(world, tables)
    _rows(world, paths)
    assert _rows(world, tables) == before


def test_golden_nesting_check(world: duckdb.DuckDBPyConnection, golden: Golden) -> None:
    sql = _compile.nesting_check("__inftda_g_codes_0_nesting", "o_reg", "o_mun")
    golden("nesting_check.sql", _text(("nesting_check(codes, 'o_reg', 'o_mun')", sql)))
    world.register(
        "__inftda_g_codes_0_nesting",
        pa.table({"o_reg": ["A", "A", "B", "B", "C"], "o_mun": ["a1", "b1", "b1", "c1", "b1"]}),
    )
    assert _rows(world, sql) == [("b1", "A", "C")]  # one value, its first and last parent
    world.register("__inftda_g_codes_0_nesting", pa.table({"o_reg": ["A"], "o_mun": ["a1"]}))
    assert _rows(world, sql) == []


def test_golden_distinct_paths(world: duckdb.DuckDBPyConnection, golden: Golden) -> None:
    sql = _compile.distinct_paths(DESTINATION, '"trips"')
    golden("distinct_paths.sql", _text(("distinct_paths(('d_reg', 'd_mun'), '\"trips\"')", sql)))
    assert _rows(world, f"SELECT * FROM {sql} ORDER BY ALL") == [
        ("X", "x1"),
        ("X", "x2"),
        ("Y", "y1"),
    ]


# ----------------------------------------------------------------------------- the scan


def test_golden_bound_units(world: duckdb.DuckDBPyConnection, golden: Golden) -> None:
    records = _compile.bound_units(SPEC.columns, '"trips"', "u", distinct=False, m=2)
    cells = _compile.bound_units(SPEC.columns, '"trips"', "u", distinct=True, m=1)
    golden(
        "bound_units.sql",
        _text(
            ("bound_units(SPEC.columns, '\"trips\"', 'u', distinct=False, m=2)", records),
            ("bound_units(SPEC.columns, '\"trips\"', 'u', distinct=True, m=1)", cells),
        ),
    )
    salt = {"salt": "ab" * 32}
    kept = "SELECT __u, count(*), count(*) FILTER (__keep) FROM {} GROUP BY 1 ORDER BY 1"
    # unit 1 has 3 records (keeps 2), units 2 and 3 one each
    assert _rows(world, kept.format(records), salt) == [(1, 3, 2), (2, 1, 1), (3, 1, 1)]
    # distinct: unit 1 has 2 distinct leaf cells (keeps 1)
    assert _rows(world, kept.format(cells), salt) == [(1, 2, 1), (2, 1, 1), (3, 1, 1)]
    # the salt decides which records a unit keeps, the same way every time
    again = _rows(world, f"SELECT * FROM {records} WHERE __keep ORDER BY ALL", salt)
    assert again == _rows(world, f"SELECT * FROM {records} WHERE __keep ORDER BY ALL", salt)


# the count checks (zeros where the scan counted records and kept none), the path hash check
LEAF_ROWS = "SELECT o_mun, d_mun, __n, {}, {} FROM {} ORDER BY 1, 2"
COUNT_CHECKS = "__nulls, __neg, __frac, __big"


def test_golden_leaf_counts(world: duckdb.DuckDBPyConnection, golden: Golden) -> None:
    world.execute(
        "CREATE TABLE trips_enum AS SELECT * REPLACE (o_reg::ENUM('A', 'B') AS o_reg) FROM trips"
    ).fetchall()
    bounded_input = _compile.bound_units(SPEC.columns, '"trips"', "u", distinct=False, m=1)
    check = {"check": ANCESTORS}
    variants = [
        ("microdata, ancestors not checked", ('"trips"', None, True), {}),
        ("microdata", ('"trips"', None, True), check),
        ("integer count column n", ('"trips"', "n", True), check),
        ("fractional count column w", ('"trips"', "w", False), check),
        ("a 128-bit count column n (wide)", ('"trips"', "n", True), {"wide": True, **check}),
        (
            "an ENUM ancestor",
            ('"trips_enum"', None, True),
            {"as_varchar": frozenset({"o_reg"}), **check},
        ),
        ("bound_units() input", (bounded_input, None, True), {"bounded": True, **check}),
    ]
    compiled = [_compile.leaf_counts(NAMES, SPEC, *args, **kw) for _, args, kw in variants]
    golden(
        "leaf_counts.sql",
        _text(
            *(
                (f"leaf_counts(NAMES, SPEC, ...): {label}", sql)
                for (label, _, _), sql in zip(variants, compiled, strict=True)
            )
        ),
    )
    results = []
    for sql in compiled:
        _run(world, f'DROP TABLE IF EXISTS "{NAMES.leaf}"')
        _run(world, sql, {"salt": "ab" * 32} if "$salt" in sql else None)
        hashes = "__h IS NOT NULL" if "__h" in sql else "NULL"
        checks = COUNT_CHECKS if "__nulls" in sql else "0, 0, 0, 0"
        results.append(_rows(world, LEAF_ROWS.format(checks, hashes, LEAF)))
    unchecked, microdata, counted, fractional, wide, enum, bounded = results
    # o_mun d_mun  n  NULL, negative, not whole, beyond int64 rows  path checks out
    assert microdata == [
        ("a1", "x1", 2, 0, 0, 0, 0, True),
        ("a1", "y1", 1, 0, 0, 0, 0, True),
        ("a2", "y1", 1, 0, 0, 0, 0, True),
        ("b1", "x2", 1, 0, 0, 0, 0, True),
    ]
    assert unchecked == [(*r[:-1], None) for r in microdata]  # no hashes taken
    assert counted == [
        ("a1", "x1", 3, 0, 0, 0, 0, True),
        ("a1", "y1", 1, 0, 0, 0, 0, True),
        ("a2", "y1", 4, 0, 0, 0, 0, True),
        ("b1", "x2", 3, 0, 0, 0, 0, True),
    ]
    assert [(r[2], r[5]) for r in fractional] == [(3.0, 0), (0.5, 1), (4.0, 0), (3.0, 0)]
    assert wide == counted
    assert enum == microdata
    assert sum(r[2] for r in bounded) == 3  # one record per unit
    # the ENUM column's path hash is taken as VARCHAR, as the domain's is: the paths check out
    # (an ENUM hashes differently from the same VARCHAR, so without as_varchar they would not)
    for as_varchar, ok in ((frozenset({"o_reg"}), True), (frozenset(), False)):
        _run(world, f'DROP TABLE IF EXISTS "{NAMES.leaf}"')
        _run(
            world,
            _compile.leaf_counts(
                NAMES, SPEC, '"trips_enum"', None, True, as_varchar, check=ANCESTORS
            ),
        )
        fetched = _rows(world, _compile.leaf_codes(NAMES, SPEC, ANCESTORS))
        assert all(path_ok for *_, path_ok in fetched) is ok


def test_golden_leaf_codes(world: duckdb.DuckDBPyConnection, golden: Golden) -> None:
    checked = _compile.leaf_codes(NAMES, SPEC, ANCESTORS)
    plain = _compile.leaf_codes(NAMES, SPEC)
    cached = _compile.leaf_codes(NAMES, SPEC, codes=['"cached_o"', '"cached_d"'])
    golden(
        "leaf_codes.sql",
        _text(
            ("leaf_codes(NAMES, SPEC, ('o_reg', 'd_reg'))", checked),
            ("leaf_codes(NAMES, SPEC)", plain),
            ("leaf_codes(NAMES, SPEC, codes=['\"cached_o\"', '\"cached_d\"'])", cached),
        ),
    )
    _run(world, _compile.leaf_counts(NAMES, SPEC, '"trips"', None, True, check=ANCESTORS))
    assert sorted(_rows(world, checked)) == [
        # leaf0 leaf1 n path_ok: (a1, x1), (a1, y1), (a2, y1), (b1, x2)
        (0, 0, 2, True),
        (0, 2, 1, True),
        (1, 2, 1, True),
        (2, 1, 1, True),
    ]
    assert sorted(_rows(world, plain)) == [(0, 0, 2), (0, 2, 1), (1, 2, 1), (2, 1, 1)]
    for c in range(2):  # a code table stored elsewhere (the domain cache) is joined the same way
        world.execute(f'CREATE TABLE "cached_{"od"[c]}" AS FROM "{NAMES.codes(c)}"').fetchall()
    assert sorted(_rows(world, cached)) == sorted(_rows(world, plain))


def test_golden_leaf_values(world: duckdb.DuckDBPyConnection, golden: Golden) -> None:
    plain = _compile.leaf_values(NAMES, SPEC)
    golden("leaf_values.sql", _text(("leaf_values(NAMES, SPEC)", plain)))
    _run(world, _compile.leaf_counts(NAMES, SPEC, '"trips"', None, True))
    assert sorted(_rows(world, plain)) == [
        ("a1", "x1", 2),
        ("a1", "y1", 1),
        ("a2", "y1", 1),
        ("b1", "x2", 1),
    ]


def test_golden_coded_leaf_counts(world: duckdb.DuckDBPyConnection, golden: Golden) -> None:
    """The scan grouped by leaf codes gives the cells the scan by values and the join give,
    the same count checks, and NULL codes where a leaf is NULL or not in the domain."""
    variants: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
        ("microdata", ('"trips"', None, True), {}),
        ("integer count column n", ('"trips"', "n", True), {}),
        ("fractional count column w", ('"trips"', "w", False), {}),
        ("a 128-bit count column n (wide)", ('"trips"', "n", True), {"wide": True}),
        ("a cached code table", ('"trips"', None, True), {"codes": ['"cached_o"', '"cached_d"']}),
        ("ancestors checked", ('"trips"', None, True), {"check": ANCESTORS}),
        (
            "an ENUM ancestor checked",
            ('"trips"', None, True),
            {"check": ANCESTORS, "as_varchar": frozenset({"o_reg"})},
        ),
    ]
    compiled = [_compile.coded_leaf_counts(NAMES, SPEC, *a, **kw) for _, a, kw in variants]
    cells = _compile.coded_cells(NAMES, SPEC)
    golden(
        "coded_leaf_counts.sql",
        _text(
            *((f"coded_leaf_counts(NAMES, SPEC, ...): {label}", sql)
              for (label, _, _), sql in zip(variants, compiled, strict=True)),
        ),
    )  # fmt: skip
    for c in range(2):
        world.execute(f'CREATE TABLE "cached_{"od"[c]}" AS FROM "{NAMES.codes(c)}"').fetchall()
    for (_, args, kw), sql in zip(variants, compiled, strict=True):
        if "check" in kw:
            continue  # test_golden_ancestor_hashes
        _run(world, f'DROP TABLE IF EXISTS "{NAMES.leaf}"')
        _run(world, sql)
        coded = sorted(_rows(world, cells))
        _run(world, f'DROP TABLE IF EXISTS "{NAMES.leaf}"')
        _run(world, _compile.leaf_counts(NAMES, SPEC, *args[:3], wide=kw.get("wide", False)))
        assert coded == sorted(_rows(world, _compile.leaf_codes(NAMES, SPEC)))
    _run(world, f'DROP TABLE IF EXISTS "{NAMES.leaf}"')
    _dirty(world)
    _run(world, f'DROP TABLE IF EXISTS "{NAMES.leaf}"')
    _run(world, _compile.coded_leaf_counts(NAMES, SPEC, '"dirty"', "n", True))
    # the count checks, then the cells without a code per chain (the NULL d_mun), before any
    # fetch converts a count: the two cells holding a NULL and a negative count are flagged
    # (the release then scans by values, whose checks count the rows: test_golden_leaf_stats)
    codes = [_compile.leaf_code(c) for c in range(2)]
    stats = _compile.leaf_stats(NAMES, codes, 1, counted=True)
    assert _rows(world, stats) == [(2, 0, 0, 0, 1, 0, 1)]
    assert (0, None, 1) in _rows(world, cells)  # the NULL d_mun: no code


def test_golden_ancestor_hashes(world: duckdb.DuckDBPyConnection, golden: Golden) -> None:
    """The domain's hash of each leaf's ancestors, xor-ed over the chains by code, is the
    ``__h`` of the scan grouped by codes where the input's ancestors are the domain's; a row
    with other ancestors splits its cell into a group whose hash differs."""
    origin = _compile.ancestor_hashes(NAMES, 0, ORIGIN, ["o_reg"], None)
    cached = _compile.ancestor_hashes(NAMES, 1, DESTINATION, ["d_reg"], '"cached_d"')
    golden(
        "ancestor_hashes.sql",
        _text(
            ("ancestor_hashes(NAMES, 0, ORIGIN, ['o_reg'], None)", origin),
            ("ancestor_hashes(NAMES, 1, DESTINATION, ['d_reg'], '\"cached_d\"')", cached),
        ),
    )
    world.execute(f'CREATE TABLE "cached_d" AS FROM "{NAMES.codes(1)}"').fetchall()
    per_leaf = [[h for (h,) in _rows(world, sql)] for sql in (origin, cached)]
    assert len(per_leaf[0]) == len(per_leaf[1]) == 3
    _table(world, "mixed", [*TRIPS, (4, "B", "a1", "X", "x1", 1, 1.0)])  # a1 is under A
    for table, wrong in (("trips", 0), ("mixed", 1)):
        _run(world, f'DROP TABLE IF EXISTS "{NAMES.leaf}"')
        _run(
            world,
            _compile.coded_leaf_counts(NAMES, SPEC, f'"{table}"', None, True, check=ANCESTORS),
        )
        fetched = _rows(world, _compile.coded_cells(NAMES, SPEC, check=True))
        bad = [r for r in fetched if r[2] != per_leaf[0][r[0]] ^ per_leaf[1][r[1]]]
        assert len(bad) == wrong
        assert sum(r[3] for r in fetched) == (6 if table == "mixed" else 5)  # records


def test_golden_coded_cells(world: duckdb.DuckDBPyConnection, golden: Golden) -> None:
    cells = _compile.coded_cells(NAMES, SPEC)
    checked = _compile.coded_cells(NAMES, SPEC, check=True)
    golden(
        "coded_cells.sql",
        _text(
            ("coded_cells(NAMES, SPEC)", cells),
            ("coded_cells(NAMES, SPEC, check=True)", checked),
        ),
    )
    _run(world, _compile.coded_leaf_counts(NAMES, SPEC, '"trips"', None, True))
    # leaf0 leaf1 n: (a1, x1), (a1, y1), (a2, y1), (b1, x2)
    assert sorted(_rows(world, cells)) == [(0, 0, 2), (0, 2, 1), (1, 2, 1), (2, 1, 1)]


# ----------------------------------------------------------------------------- the checks


def _dirty(con: duckdb.DuckDBPyConnection) -> None:
    """A table with a NULL unit, a NULL leaf, a NULL count and a negative count, scanned."""
    _table(
        con,
        "dirty",
        [
            (1, "A", "a1", "X", "x1", 2, 2.0),
            (None, "A", "a1", "X", None, 1, 1.0),
            (2, "A", "a2", "Y", "y1", None, None),
            (2, "B", "b1", "X", "x2", -3, -3.0),
            (3, "B", "b1", "X", "x2", 1, 1.0),
        ],
    )
    _run(con, _compile.leaf_counts(NAMES, SPEC, '"dirty"', "n", True))


def test_golden_leaf_stats(world: duckdb.DuckDBPyConnection, golden: Golden) -> None:
    sql = _compile.leaf_stats(NAMES, SPEC.leaf_columns, 1, counted=True)
    records = _compile.leaf_stats(NAMES, SPEC.leaf_columns, 1, counted=False)
    golden(
        "leaf_stats.sql",
        _text(
            ("leaf_stats(NAMES, ('o_mun', 'd_mun'), 1, counted=True)", sql),
            ("leaf_stats(NAMES, ('o_mun', 'd_mun'), 1, counted=False)", records),
        ),
    )
    _dirty(world)
    # count rows NULL, negative, not whole, beyond int64; leaf cells whose count exceeds the
    # limit 1 (a1 x1 holds 2); rows with NULL o_mun, NULL d_mun: numbers, never a count
    assert _rows(world, sql) == [(1, 1, 0, 0, 1, 0, 1)]
    # a table grouped by leaf codes has no NULL leaf to count (a cell without a code is
    # scanned again by values): the count checks alone
    assert _rows(world, _compile.leaf_stats(NAMES, [], 1, counted=True)) == [(1, 1, 0, 0, 1)]
    # records counted one by one: the scan keeps no count checks (count_checks), so the
    # table has no such columns and the stats read zeros, the NULL leaves still counted
    assert not _compile.count_checks(None, bounded=False)
    assert not _compile.count_checks("n", bounded=True)  # records bounded per unit
    assert _compile.count_checks("n", bounded=False)
    _run(world, f'DROP TABLE IF EXISTS "{NAMES.leaf}"')
    _run(world, _compile.leaf_counts(NAMES, SPEC, '"dirty"', None, True))
    columns = {r[0] for r in _rows(world, f'DESCRIBE "{NAMES.leaf}"')}
    assert columns == {"o_mun", "d_mun", "__n"}
    assert _rows(world, records) == [(0, 0, 0, 0, 1, 0, 1)]  # b1 x2 holds two records


def test_golden_nan_leaves(world: duckdb.DuckDBPyConnection, golden: Golden) -> None:
    sql = _compile.nan_leaves(NAMES, ["w"])
    golden("nan_leaves.sql", _text(("nan_leaves(NAMES, ['w'])", sql)))
    _run(world, f'CREATE OR REPLACE TEMP TABLE "{NAMES.leaf}" AS SELECT * FROM '
         "(VALUES (1.0::DOUBLE), ('nan'::DOUBLE), ('nan'::DOUBLE), (NULL)) t(w)")  # fmt: skip
    assert _rows(world, sql) == [(2,)]  # NaN cells; a NULL is not NaN


def test_golden_offending_rows(world: duckdb.DuckDBPyConnection, golden: Golden) -> None:
    sql = _compile.offending_rows('"dirty"', '"n" < 0')
    golden("offending_rows.sql", _text(("offending_rows('\"dirty\"', '\"n\" < 0')", sql)))
    _dirty(world)
    assert _rows(world, sql) == [(2, "B", "b1", "X", "x2", -3, -3.0)]


def test_golden_not_whole(world: duckdb.DuckDBPyConnection, golden: Golden) -> None:
    condition = _compile.not_whole("w")
    golden("not_whole.sql", _text(("not_whole('w')", f"SELECT {condition}")))
    _table(
        world,
        "odd",
        [(i, "A", "a1", "X", "x1", 1, w) for i, w in enumerate([2.0, 0.5, None, -1.0])],
    )
    world.execute(
        "INSERT INTO odd VALUES (9, 'A', 'a1', 'X', 'x1', 1, 'nan'), "
        "(10, 'A', 'a1', 'X', 'x1', 1, 'inf')"
    ).fetchall()
    got = _rows(world, f"SELECT u FROM odd WHERE {condition} ORDER BY u")
    assert got == [(1,), (9,), (10,)]  # 0.5, NaN and infinity; a NULL is no answer


def test_golden_unit_nulls(world: duckdb.DuckDBPyConnection, golden: Golden) -> None:
    sql = _compile.unit_nulls('"dirty"', "u")
    golden("unit_nulls.sql", _text(("unit_nulls('\"dirty\"', 'u')", sql)))
    _dirty(world)
    assert _rows(world, sql) == [(1,)]
    assert _rows(world, _compile.unit_nulls('"trips"', "u")) == [(0,)]


def test_golden_missing_leaf(world: duckdb.DuckDBPyConnection, golden: Golden) -> None:
    origin = _compile.missing_leaf(NAMES, 0, ORIGIN)
    destination = _compile.missing_leaf(NAMES, 1, DESTINATION)
    golden(
        "missing_leaf.sql",
        _text(
            ("missing_leaf(NAMES, 0, ('o_reg', 'o_mun'))", origin),
            ("missing_leaf(NAMES, 1, ('d_reg', 'd_mun'))", destination),
        ),
    )
    _table(
        world,
        "outside",
        [*TRIPS, (4, "A", "a1", "Y", "zz", 1, 1.0), (4, "A", "a1", "Y", "zy", 1, 1.0)],
    )
    fetched = _scan(world, "outside")
    assert sum(r[1] is None for r in fetched) == 2  # two leaf cells without a destination code
    assert _rows(world, origin) == []
    assert _rows(world, destination) == [("zy", 2)]  # the first value, and how many there are
    _table(
        world, "outside_twice", [*TRIPS, *[(4, "A", m, "Y", "zz", 1, 1.0) for m in ("a1", "a2")]]
    )
    _scan(world, "outside_twice")
    assert _rows(world, destination) == [("zz", 1)]  # values, not cells


def _bad_path(con: duckdb.DuckDBPyConnection) -> None:
    """One row puts a1 under B (the domain has it under A)."""
    _table(con, "bad", [*TRIPS, (5, "B", "a1", "X", "x1", 1, 1.0)])
    fetched = _scan(con, "bad")
    assert [r[:2] for r in fetched if not r[3]] == [(0, 0)]  # the leaf cell (a1, x1)


def test_golden_leaf_of_code(world: duckdb.DuckDBPyConnection, golden: Golden) -> None:
    sql = _compile.leaf_of_code(NAMES, 0, ORIGIN)
    golden("leaf_of_code.sql", _text(("leaf_of_code(NAMES, 0, ('o_reg', 'o_mun'))", sql)))
    assert [_rows(world, sql, {"code": c}) for c in (0, 2, 3)] == [[("a1",)], [("b1",)], []]


def test_golden_bad_path(world: duckdb.DuckDBPyConnection, golden: Golden) -> None:
    sql = _compile.bad_path(NAMES, 0, ORIGIN, '"bad"')
    golden("bad_path.sql", _text(("bad_path(NAMES, 0, ('o_reg', 'o_mun'), '\"bad\"')", sql)))
    _bad_path(world)
    assert _rows(world, sql, {"leaf": "a1"}) == [("B", "a1")]  # the input's path, not the domain's
    assert _rows(world, sql, {"leaf": "b1"}) == []


def test_golden_row_count(world: duckdb.DuckDBPyConnection, golden: Golden) -> None:
    sql = _compile.row_count('"trips"')
    golden("row_count.sql", _text(("row_count('\"trips\"')", sql)))
    assert _rows(world, sql) == [(5,)]


# ----------------------------------------------------------------------------- the write


def _released(con: duckdb.DuckDBPyConnection) -> None:
    """Released cells, decoded in leaf code order: (a1, x1) 5 and (b1, x2) 7."""
    con.register(
        NAMES.released,
        pa.table(
            {
                "o_reg": ["A", "B"],
                "o_mun": ["a1", "b1"],
                "d_reg": ["X", "X"],
                "d_mun": ["x1", "x2"],
                "count": [5, 7],
            }
        ),
    )


def test_golden_write_output(world: duckdb.DuckDBPyConnection, golden: Golden) -> None:
    ordered = _compile.write_output(SPEC, '"out"', NAMES.released, ordered=True)
    spelled = _compile.write_output(SPEC, '"out2"', NAMES.released, ordered=False)
    golden(
        "write_output.sql",
        _text(
            ("write_output(SPEC, '\"out\"', NAMES.released, ordered=True)", ordered),
            ("write_output(SPEC, '\"out2\"', NAMES.released, ordered=False)", spelled),
        ),
    )
    _released(world)
    _run(world, ordered)
    _run(world, spelled)
    expected = [("A", "a1", "X", "x1", 5), ("B", "b1", "X", "x2", 7)]
    assert _rows(world, 'SELECT * FROM "out"') == expected
    assert _rows(world, 'SELECT * FROM "out2"') == expected
    assert [r[1] for r in _rows(world, 'DESCRIBE "out"')][-1] == "BIGINT"


def test_golden_insertion_order(world: duckdb.DuckDBPyConnection, golden: Golden) -> None:
    sql = _compile.insertion_order()
    golden("insertion_order.sql", _text(("insertion_order()", sql)))
    assert _rows(world, sql) == [(True,)]
    _run(world, "SET preserve_insertion_order = false")
    assert _rows(world, sql) == [(False,)]


def test_golden_levels_view(world: duckdb.DuckDBPyConnection, golden: Golden) -> None:
    sql = _compile.levels_view(SPEC, '"out_levels"', '"out"')
    golden("levels_view.sql", _text(("levels_view(SPEC, '\"out_levels\"', '\"out\"')", sql)))
    _released(world)
    _run(world, _compile.write_output(SPEC, '"out"', NAMES.released, ordered=True))
    _run(world, sql)
    assert _rows(world, 'SELECT * FROM "out_levels" ORDER BY ALL') == [
        (0, "root", None, None, None, None, 12),
        (1, "d_reg", None, None, "X", None, 12),
        (2, "o_reg x d_reg", "A", None, "X", None, 5),
        (2, "o_reg x d_reg", "B", None, "X", None, 7),
        (3, "o_reg x d_mun", "A", None, "X", "x1", 5),
        (3, "o_reg x d_mun", "B", None, "X", "x2", 7),
        (4, "o_mun x d_mun", "A", "a1", "X", "x1", 5),
        (4, "o_mun x d_mun", "B", "b1", "X", "x2", 7),
    ]


# ----------------------------------------------------------------------------- evaluate(), plot_zoom()


def _evaluated(con: duckdb.DuckDBPyConnection) -> str:
    """A released table beside the trips: (a1, x1) 5, (b1, x2) 7 and (a2, x2) 1, a cell the
    truth does not have."""
    con.execute(
        "CREATE TABLE out AS SELECT * FROM (VALUES ('A','a1','X','x1',5), ('B','b1','X','x2',7), "
        "('A','a2','X','x2',1)) r(o_reg, o_mun, d_reg, d_mun, count)"
    ).fetchall()
    return _compile.evaluate_cells(
        SPEC, '"trips"', '"out"', "count(*)::BIGINT", 'sum("count")::BIGINT'
    )


CELLS = [  # (level, true, released) of every cell of either side
    (0, 5, 13),
    (1, 2, 0),  # Y
    (1, 3, 13),  # X
    (2, 1, 7),  # (B, X)
    (2, 2, 0),  # (A, Y)
    (2, 2, 6),  # (A, X)
    (3, 0, 1),  # (A, X, x2): released only
    (3, 1, 7),
    (3, 2, 0),
    (3, 2, 5),
    (4, 0, 1),  # (a2, x2)
    (4, 1, 0),  # (a1, y1)
    (4, 1, 0),  # (a2, y1)
    (4, 1, 7),
    (4, 2, 5),
]


def test_golden_evaluate_cells(world: duckdb.DuckDBPyConnection, golden: Golden) -> None:
    cte = _evaluated(world)
    golden(
        "evaluate_cells.sql",
        _text(("evaluate_cells(SPEC, '\"trips\"', '\"out\"', count(*), sum(count))", cte)),
    )
    # a cell of a level is identified by its ancestors too
    assert _compile.level_cell_columns(SPEC, 3) == ("o_reg", "d_reg", "d_mun")
    assert _rows(world, f"{cte}\nSELECT level, t, r FROM cells ORDER BY ALL") == CELLS


def test_golden_zoom_cells(world: duckdb.DuckDBPyConnection, golden: Golden) -> None:
    sql = _compile.zoom_cells("WITH cells AS (SELECT 1 AS level, 2 AS t, 3 AS r)")
    golden("zoom_cells.sql", _text(("zoom_cells('WITH cells AS (...)')", sql)))
    got = _rows(world, _compile.zoom_cells(_evaluated(world)))
    assert [r[0] for r in got] == sorted(r[0] for r in got)  # by level
    assert sorted(got) == CELLS[1:]  # every cell but the root


# ----------------------------------------------------------------------------- plan()


def test_golden_node_counts(world: duckdb.DuckDBPyConnection, golden: Golden) -> None:
    origin = _compile.node_counts(ORIGIN, '"geo_o"')
    one = _compile.node_counts(("d_mun",), '"geo_d"')
    golden(
        "node_counts.sql",
        _text(
            ("node_counts(('o_reg', 'o_mun'), '\"geo_o\"')", origin),
            ("node_counts(('d_mun',), '\"geo_d\"')", one),
        ),
    )
    assert _rows(world, origin) == [(2, 3)]  # A, B; a1, a2, b1 (a1 is listed twice)
    assert _rows(world, one) == [(3,)]
    # nodes are paths: the same value under two parents is two nodes
    world.execute("INSERT INTO geo_o VALUES ('B', 'a1')").fetchall()
    assert _rows(world, origin) == [(2, 4)]


# ----------------------------------------------------------------------------- the catalog


def _names(con: duckdb.DuckDBPyConnection) -> list[str]:
    return [
        r[0]
        for r in _rows(
            con,
            "SELECT table_name FROM information_schema.tables WHERE table_name LIKE 'x%' ORDER BY 1",
        )
    ]


def test_golden_describe(world: duckdb.DuckDBPyConnection, golden: Golden) -> None:
    sql = _compile.describe("(SELECT o_reg, n FROM trips)")
    golden("describe.sql", _text(("describe('(SELECT o_reg, n FROM trips)')", sql)))
    assert [r[:2] for r in _rows(world, sql)] == [("o_reg", "VARCHAR"), ("n", "INTEGER")]


def test_golden_describe_table(world: duckdb.DuckDBPyConnection, golden: Golden) -> None:
    sql = _compile.describe_table("geo_d")
    golden("describe_table.sql", _text(("describe_table('geo_d')", sql)))
    assert [r[:2] for r in _rows(world, sql)] == [("d_reg", "VARCHAR"), ("d_mun", "VARCHAR")]


def test_golden_drop_object(con: duckdb.DuckDBPyConnection, golden: Golden) -> None:
    table = _compile.drop_object("table", '"xt"')
    view = _compile.drop_object("view", '"xv"')
    golden(
        "drop_object.sql",
        _text(("drop_object('table', '\"xt\"')", table), ("drop_object('view', '\"xv\"')", view)),
    )
    _run(con, "CREATE TABLE xt (a INTEGER); CREATE VIEW xv AS SELECT 1 AS a")
    _run(con, view)
    assert _names(con) == ["xt"]
    _run(con, table)
    assert _names(con) == []
    with pytest.raises(duckdb.CatalogException):  # no IF EXISTS: the caller checked the kind
        _run(con, table)


def test_golden_drop_temp_table(con: duckdb.DuckDBPyConnection, golden: Golden) -> None:
    sql = _compile.drop_temp_table("x_keys")
    golden("drop_temp_table.sql", _text(("drop_temp_table('x_keys')", sql)))
    _run(con, "CREATE TEMP TABLE x_keys (a INTEGER)")
    _run(con, sql)
    assert _names(con) == []
    _run(con, sql)  # IF EXISTS: dropping twice is harmless


def test_golden_drop_temp_view(con: duckdb.DuckDBPyConnection, golden: Golden) -> None:
    sql = _compile.drop_temp_view("x_input")
    golden("drop_temp_view.sql", _text(("drop_temp_view('x_input')", sql)))
    con.sql("SELECT 1 AS a").create_view("x_input")
    _run(con, sql)
    assert _names(con) == []
    _run(con, sql)


# ----------------------------------------------------------------------------- publish()


def test_golden_explain(world: duckdb.DuckDBPyConnection, golden: Golden) -> None:
    sql = _compile.explain('"geo_d"')
    golden("explain.sql", _text(("explain('\"geo_d\"')", sql)))
    plans = dict(_rows(world, sql))
    assert "geo_d" in plans["physical_plan"]


def test_golden_set_explain_output(con: duckdb.DuckDBPyConnection, golden: Golden) -> None:
    sql = _compile.set_explain_output("all")
    golden("set_explain_output.sql", _text(("set_explain_output('all')", sql)))
    _run(con, sql)
    assert _rows(con, "SELECT current_setting('explain_output')") == [("all",)]


def test_golden_string_literal(con: duckdb.DuckDBPyConnection, golden: Golden) -> None:
    plain, quoted = _compile.string_literal("out.duckdb"), _compile.string_literal("it's; --")
    golden(
        "string_literal.sql",
        _text(("string_literal('out.duckdb')", plain), ('string_literal("it\'s; --")', quoted)),
    )
    assert _rows(con, f"SELECT {plain}, {quoted}") == [("out.duckdb", "it's; --")]


def test_golden_read_files(con: duckdb.DuckDBPyConnection, golden: Golden, tmp_path: Path) -> None:
    fixed = _compile.read_files("parquet", ["/data/od 1.parquet", "/data/it's.parquet"])
    csv = _compile.read_files("csv", ["/data/geo.csv"])
    golden(
        "read_files.sql",
        _text(
            ("read_files('parquet', ['/data/od 1.parquet', \"/data/it's.parquet\"])", fixed),
            ("read_files('csv', ['/data/geo.csv'])", csv),
        ),
    )
    first, second = tmp_path / "a 1.parquet", tmp_path / "it's.parquet"
    _run(con, f"COPY (SELECT 1 AS x) TO {_compile.string_literal(str(first))}")
    _run(con, f"COPY (SELECT 2 AS x) TO {_compile.string_literal(str(second))}")
    both = _compile.read_files("parquet", [str(first), str(second)])
    assert sorted(_rows(con, f"SELECT x FROM {both}")) == [(1,), (2,)]
    text = tmp_path / "g.csv"
    text.write_text("region,city\nN,a\n", encoding="utf-8")
    assert _rows(con, f"SELECT * FROM {_compile.read_files('csv', [str(text)])}") == [("N", "a")]


@pytest.fixture
def in_tmp(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Relative file names (fixed in the golden files) land in a fresh temporary folder."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _databases(con: duckdb.DuckDBPyConnection) -> list[str]:
    return [
        r[0]
        for r in _rows(
            con, "SELECT database_name FROM duckdb_databases() WHERE NOT internal ORDER BY 1"
        )
    ]


def test_golden_attach(con: duckdb.DuckDBPyConnection, golden: Golden, in_tmp: Path) -> None:
    latest = _compile.attach("pub.duckdb", "__inftda_pub", None)
    old = _compile.attach("it's.duckdb", "__inftda_pub", "v1.0.0")
    golden(
        "attach.sql",
        _text(
            ("attach('pub.duckdb', '__inftda_pub', None)", latest),
            ("attach(\"it's.duckdb\", '__inftda_pub', 'v1.0.0')", old),
        ),
    )
    _run(con, old)
    assert _databases(con) == ["__inftda_pub", "memory"]
    tags = _rows(con, "SELECT tags FROM duckdb_databases() WHERE database_name = '__inftda_pub'")
    assert tags == [({"storage_version": "v1.0.0+"},)]
    _run(con, "DETACH __inftda_pub")
    assert (in_tmp / "it's.duckdb").exists()
    _run(con, latest)
    assert _databases(con) == ["__inftda_pub", "memory"]


def test_golden_copy_table(world: duckdb.DuckDBPyConnection, golden: Golden, in_tmp: Path) -> None:
    sql = _compile.copy_table('"__inftda_pub".main."trips"', '"trips"')
    golden(
        "copy_table.sql", _text(('copy_table(\'"__inftda_pub".main."trips"\', \'"trips"\')', sql))
    )
    _run(world, _compile.attach("pub.duckdb", "__inftda_pub", None))
    _run(world, sql)
    assert _rows(world, 'SELECT * FROM "__inftda_pub".main.trips ORDER BY ALL') == sorted(TRIPS)


def test_golden_use(con: duckdb.DuckDBPyConnection, golden: Golden, in_tmp: Path) -> None:
    sql = _compile.use("__inftda_pub")
    golden("use.sql", _text(("use('__inftda_pub')", sql)))
    _run(con, _compile.attach("pub.duckdb", "__inftda_pub", None))
    _run(con, sql)
    assert _rows(con, "SELECT current_database()") == [("__inftda_pub",)]
    _run(con, _compile.use("memory"))
    assert _rows(con, "SELECT current_database()") == [("memory",)]


def test_golden_detach(con: duckdb.DuckDBPyConnection, golden: Golden, in_tmp: Path) -> None:
    sql = _compile.detach("__inftda_pub")
    golden("detach.sql", _text(("detach('__inftda_pub')", sql)))
    _run(con, _compile.attach("pub.duckdb", "__inftda_pub", None))
    _run(con, sql)
    assert _databases(con) == ["memory"]


# ----------------------------------------------------------------------------- feature releases


FEATURES = parse_features(
    {
        "total": [],
        "zones": ["o_reg", "d_reg"],
        "pair": ["o_mun", "d_mun"],
        "leaf": ["o_mun", "d_mun", "t"],
    }
)


@pytest.fixture
def lattice(world: duckdb.DuckDBPyConnection) -> Lattice:
    """The trips' O/D pairs in two periods: the domain as the product of a pairs table (every
    origin x destination with their regions) and a periods table; their code tables
    registered as a feature release registers them."""
    world.execute(
        "CREATE TABLE fpairs AS SELECT o.o_reg, o.o_mun, d.d_reg, d.d_mun FROM geo_o o, geo_d d"
    ).fetchall()
    world.execute("CREATE TABLE fperiods AS SELECT range::INTEGER AS t FROM range(2)").fetchall()
    world.execute(
        "CREATE TABLE ftrips AS SELECT o_mun, d_mun, (u - 1) % 2 AS t, n FROM trips"
    ).fetchall()
    tables = [
        world.sql(
            _compile.feature_part(["o_reg", "o_mun", "d_reg", "d_mun"], {}, '"fpairs"')
        ).to_arrow_table(),
        world.sql(_compile.feature_part(["t"], {"t": "INTEGER"}, '"fperiods"')).to_arrow_table(),
    ]
    lat = code_lattice(FEATURES, tables, ["fpairs", "fperiods"])
    for t, part in enumerate(lat.parts):
        table = part.rows
        for q in range(len(part.codes)):
            table = table.append_column(_compile.query_code(q), pa.array(part.row_codes(q)))
        world.register(NAMES.part(t), table)
    return lat


def test_golden_feature_part(world: duckdb.DuckDBPyConnection, golden: Golden) -> None:
    sql = _compile.feature_part(["o_mun", "d_mun"], {"o_mun": "VARCHAR"}, '"geo_pairs"')
    golden(
        "feature_part.sql",
        _text(("feature_part(['o_mun', 'd_mun'], {'o_mun': 'VARCHAR'}, '\"geo_pairs\"')", sql)),
    )
    world.execute(
        "CREATE TABLE geo_pairs AS SELECT o_mun, d_mun, 1 AS extra FROM geo_o, geo_d"
    ).fetchall()
    assert len(_rows(world, sql)) == 12  # 4 origin rows (a1 twice) x 3 destinations


def test_golden_feature_counts(
    world: duckdb.DuckDBPyConnection, lattice: Lattice, golden: Golden
) -> None:
    leaf = {"o_mun": "o_mun", "d_mun": "d_mun", "t": "t"}
    micro = _compile.feature_counts(NAMES, lattice, '"ftrips"', leaf, None, True, False)
    counted = _compile.feature_counts(NAMES, lattice, '"ftrips"', leaf, "n", True, False)
    golden(
        "feature_counts.sql",
        _text(
            ("feature_counts(NAMES, lattice, '\"ftrips\"', leaf, None, True, False)", micro),
            ("feature_counts(NAMES, lattice, '\"ftrips\"', leaf, 'n', True, False)", counted),
        ),
    )
    found = _rows(world, f"SELECT __set, __k0, __k1, __k2, __k3, __n FROM ({counted}) ORDER BY ALL")
    per_set: dict[int, dict[Any, int]] = {}
    for row in found:
        q = [_compile.feature_set_mask(lattice, i) for i in range(4)].index(row[0])
        per_set.setdefault(q, {})[row[1 + q]] = row[-1]
    assert per_set[0] == {0: 11}  # the total of n
    assert sum(per_set[1].values()) == sum(per_set[2].values()) == sum(per_set[3].values()) == 11
    assert len(per_set[1]) == 3  # zone pairs A>X, A>Y, B>X
    assert len(per_set[3]) == 4  # leaves: (a1, x1, 0), (a2, y1, 0), (b1, x2, 1), (a1, y1, 0)


def test_golden_feature_unmatched(
    world: duckdb.DuckDBPyConnection, lattice: Lattice, golden: Golden
) -> None:
    leaf = {"o_mun": "o_mun", "d_mun": "d_mun", "t": "t"}
    sql = _compile.feature_unmatched(NAMES, lattice, '"ftrips"', leaf)
    golden("feature_unmatched.sql", _text(("feature_unmatched(NAMES, lattice, ...)", sql)))
    assert _rows(world, sql) == []
    world.execute("INSERT INTO ftrips VALUES ('zz', 'x1', 0, 1), ('a1', 'x1', 5, 1)").fetchall()
    assert _rows(world, sql) == [("a1", "x1", 5, 2)]


def test_golden_feature_output(
    world: duckdb.DuckDBPyConnection, lattice: Lattice, golden: Golden
) -> None:
    sql = _compile.feature_output(NAMES, lattice, '"fout"')
    golden("feature_output.sql", _text(("feature_output(NAMES, lattice, '\"fout\"')", sql)))
    leaves = np.array([0, 11], dtype=np.int64)  # two leaves: the first and last pair
    parts = lattice.part_codes(leaves)
    world.register(NAMES.released, pa.table({"__p0": parts[0], "__p1": parts[1], "count": [5, 7]}))
    _run(world, sql)
    rows = _rows(world, "SELECT o_mun, d_mun, t, o_reg, d_reg, count FROM fout ORDER BY ALL")
    assert sorted(r[-1] for r in rows) == [5, 7]
    # every leaf decoded with the regions the domain gives it, and the periods of its codes
    assert all(r[3] == r[0][0].upper() and r[4] == r[1][0].upper() for r in rows)
    assert {r[2] for r in rows} == {int(c) for c in parts[1]}


def test_golden_feature_read_back(world: duckdb.DuckDBPyConnection, golden: Golden) -> None:
    sql = _compile.feature_read_back(FEATURES, '"fback"')
    golden("feature_read_back.sql", _text(("feature_read_back(FEATURES, '\"fback\"')", sql)))
    world.execute(
        "CREATE TABLE fback AS SELECT * FROM (VALUES ('b1','y1',0,'B','Y',7), "
        "('a1','x1',0,'A','X',5), ('a1','x1',1,'A','X',2)) r(o_mun, d_mun, t, o_reg, d_reg, count)"
    ).fetchall()
    # in the order of the leaf's columns, as feature_output writes the table
    assert [r[:3] for r in _rows(world, sql)] == [("a1", "x1", 0), ("a1", "x1", 1), ("b1", "y1", 0)]


def test_golden_features_view(
    world: duckdb.DuckDBPyConnection, lattice: Lattice, golden: Golden
) -> None:
    sql = _compile.features_view(FEATURES, '"fout_features"', '"fout"')
    golden("features_view.sql", _text(("features_view(FEATURES, ...)", sql)))
    world.execute(
        "CREATE TABLE fout AS SELECT * FROM (VALUES ('a1','x1',0,'A','X',5), "
        "('a2','x1',1,'A','X',2), ('b1','y1',0,'B','Y',7)) r(o_mun, d_mun, t, o_reg, d_reg, count)"
    ).fetchall()
    _run(world, sql)
    assert _rows(world, "SELECT feature, count FROM fout_features WHERE feature = 'total'") == [
        ("total", 14)
    ]
    assert _rows(
        world, "SELECT o_reg, d_reg, count FROM fout_features WHERE feature = 'zones' ORDER BY ALL"
    ) == [("A", "X", 7), ("B", "Y", 7)]
    assert len(_rows(world, "SELECT * FROM fout_features WHERE feature = 'leaf'")) == 3


# ----------------------------------------------------------------------------- count of counts
#
# persons (hh, state, county): household 1 has 2 persons in A/a1, household 2 one in A/a1,
# household 3 three in B/b1; household 4 sits in A/a1 and A/a2 (a split group) in the dirty
# table only. The public groups table lists a1: 2, a2: 1, b1: 1 households.

COC_CHAIN = ("state", "county")
COC_PERSONS = [(1, "A", "a1"), (1, "A", "a1"), (2, "A", "a1"), (3, "B", "b1"), (3, "B", "b1"), (3, "B", "b1")]  # fmt: skip
COC_CODES = "__inftda_g_codes_0"
COC_SIZES, COC_HIST = "__inftda_g_sizes", "__inftda_g_hist"


@pytest.fixture
def households(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """The persons and groups tables, the groups table coded as the domain."""
    con.execute("CREATE TABLE persons (hh INTEGER, state VARCHAR, county VARCHAR)").fetchall()
    con.executemany("INSERT INTO persons VALUES (?, ?, ?)", COC_PERSONS)
    con.execute(
        "CREATE TABLE hh AS SELECT * FROM (VALUES ('B', 'b1', 1), ('A', 'a2', 1), "
        "('A', 'a1', 2)) g(state, county, n)"
    ).fetchall()
    build_chain(con, NAMES, 0, COC_CHAIN, '"hh"', ["VARCHAR", "VARCHAR"], "groups table")
    return con


def _coc_scan(con: duckdb.DuckDBPyConnection) -> None:
    _run(con, _compile.coc_group_sizes(COC_SIZES, COC_CHAIN, "hh", '"persons"'))
    _run(con, _compile.coc_histograms(COC_HIST, COC_SIZES, COC_CHAIN))


def test_golden_coc_public_groups(households: duckdb.DuckDBPyConnection, golden: Golden) -> None:
    sql = _compile.coc_public_groups(COC_CHAIN, '"hh"', "n", COC_CODES, "VARCHAR")
    golden(
        "coc_public_groups.sql",
        _text(("coc_public_groups(('state', 'county'), '\"hh\"', 'n', codes, 'VARCHAR')", sql)),
    )
    # leaf code, rows listing it, groups, groups_hi, NULLs, fractional
    assert _rows(households, sql) == [
        (0, 1, 2, 2, 0, False),
        (1, 1, 1, 1, 0, False),
        (2, 1, 1, 1, 0, False),
    ]


def test_golden_coc_group_sizes(households: duckdb.DuckDBPyConnection, golden: Golden) -> None:
    sql = _compile.coc_group_sizes(COC_SIZES, COC_CHAIN, "hh", '"persons"')
    golden("coc_group_sizes.sql", _text(("coc_group_sizes(sizes, CHAIN, 'hh', persons)", sql)))
    _run(households, sql)
    assert _rows(households, f'SELECT * FROM "{COC_SIZES}" ORDER BY 1') == [
        (1, "A", "a1", 2),
        (2, "A", "a1", 1),
        (3, "B", "b1", 3),
    ]


def test_golden_coc_split_groups(households: duckdb.DuckDBPyConnection, golden: Golden) -> None:
    sql = _compile.coc_split_groups(COC_SIZES)
    golden("coc_split_groups.sql", _text(("coc_split_groups(sizes)", sql)))
    _coc_scan(households)
    assert _rows(households, sql) == [(0, 0)]
    households.execute("INSERT INTO persons VALUES (2, 'A', 'a2'), (NULL, 'B', 'b1')").fetchall()
    _run(households, f'DROP TABLE "{COC_SIZES}"')
    _run(households, _compile.coc_group_sizes(COC_SIZES, COC_CHAIN, "hh", '"persons"'))
    assert _rows(households, sql) == [(1, 1)]  # household 2 in two leaves; one NULL id


def test_golden_coc_histograms(households: duckdb.DuckDBPyConnection, golden: Golden) -> None:
    sql = _compile.coc_histograms(COC_HIST, COC_SIZES, COC_CHAIN)
    golden("coc_histograms.sql", _text(("coc_histograms(hist, sizes, CHAIN)", sql)))
    _run(households, _compile.coc_group_sizes(COC_SIZES, COC_CHAIN, "hh", '"persons"'))
    _run(households, sql)
    assert _rows(households, f'SELECT * FROM "{COC_HIST}" ORDER BY 1, 2, 3, 4') == [
        (0, None, None, 1, 1),
        (0, None, None, 2, 1),
        (0, None, None, 3, 1),
        (1, "A", None, 1, 1),
        (1, "A", None, 2, 1),
        (1, "B", None, 3, 1),
        (2, "A", "a1", 1, 1),
        (2, "A", "a1", 2, 1),
        (2, "B", "b1", 3, 1),
    ]


def test_golden_coc_node_codes(households: duckdb.DuckDBPyConnection, golden: Golden) -> None:
    compiled = [_compile.coc_node_codes(COC_HIST, COC_CODES, COC_CHAIN, lv) for lv in range(3)]
    golden(
        "coc_node_codes.sql",
        _text(*((f"coc_node_codes(hist, codes, CHAIN, {lv})", s) for lv, s in enumerate(compiled))),
    )
    _coc_scan(households)
    assert sorted(_rows(households, compiled[0])) == [(0, 1, 1), (0, 2, 1), (0, 3, 1)]
    assert sorted(_rows(households, compiled[1])) == [
        (0, 1, 1, "A"),
        (0, 2, 1, "A"),
        (1, 3, 1, "B"),
    ]
    assert sorted(_rows(households, compiled[2])) == [
        (0, 1, 1, "A", "a1"),
        (0, 2, 1, "A", "a1"),
        (2, 3, 1, "B", "b1"),
    ]
    # a county under the wrong state has no code
    households.execute("INSERT INTO persons VALUES (9, 'B', 'a2')").fetchall()
    for table in (COC_SIZES, COC_HIST):
        _run(households, f'DROP TABLE "{table}"')
    _coc_scan(households)
    assert (None, 1, 1, "B", "a2") in _rows(households, compiled[2])


def test_golden_coc_write_output(households: duckdb.DuckDBPyConnection, golden: Golden) -> None:
    sql = _compile.coc_write_output('"out"', "__inftda_g_released", COC_CODES, COC_CHAIN)
    golden(
        "coc_write_output.sql", _text(("coc_write_output('\"out\"', released, codes, CHAIN)", sql))
    )
    households.register(
        "__inftda_g_released",
        pa.table({"leaf": [2, 0, 0], "size": [3, 2, 1], "groups": [1, 1, 1]}),
    )
    _run(households, sql)
    assert _rows(households, 'SELECT * FROM "out"') == [
        ("A", "a1", 1, 1),
        ("A", "a1", 2, 1),
        ("B", "b1", 3, 1),
    ]


def test_golden_coc_levels_view(households: duckdb.DuckDBPyConnection, golden: Golden) -> None:
    sql = _compile.coc_levels_view(COC_CHAIN, '"out_levels"', '"out"')
    golden(
        "coc_levels_view.sql", _text(("coc_levels_view(CHAIN, '\"out_levels\"', '\"out\"')", sql))
    )
    households.execute(
        "CREATE TABLE out AS SELECT * FROM (VALUES ('A', 'a1', 1, 2), ('A', 'a2', 1, 1), "
        "('B', 'b1', 3, 1)) t(state, county, size, groups)"
    ).fetchall()
    _run(households, sql)
    assert _rows(households, 'SELECT * FROM "out_levels" ORDER BY ALL') == [
        (0, "root", None, None, 1, 3),
        (0, "root", None, None, 3, 1),
        (1, "state", "A", None, 1, 3),
        (1, "state", "B", None, 3, 1),
        (2, "county", "A", "a1", 1, 2),
        (2, "county", "A", "a2", 1, 1),
        (2, "county", "B", "b1", 3, 1),
    ]


def test_golden_coc_disagree_hint(households: duckdb.DuckDBPyConnection, golden: Golden) -> None:
    sql = _compile.coc_disagree_hint(COC_CHAIN, '"hh"', "n", '"persons"', "hh")
    golden(
        "coc_disagree_hint.sql", _text(("coc_disagree_hint(CHAIN, hh, 'n', persons, 'hh')", sql))
    )
    # a2 lists one household, the persons table has none there
    assert _rows(households, sql) == [("A", "a2", 1, 0)]


def test_golden_coc_evaluate(households: duckdb.DuckDBPyConnection, golden: Golden) -> None:
    plain = _compile.coc_evaluate(COC_CHAIN, '"persons"', "hh", '"rel"', "size", "groups")
    empty = _compile.coc_evaluate(
        COC_CHAIN, '"persons"', "hh", '"rel"', "size", "groups", '"hh"', "n"
    )
    golden(
        "coc_evaluate.sql",
        _text(
            ("coc_evaluate(CHAIN, persons, 'hh', rel, 'size', 'groups')", plain),
            ("coc_evaluate(..., groups table hh, 'n'): empty groups", empty),
        ),
    )
    # released: a1 has sizes 1, 3 (true 1, 2), b1 has 3 (exact), a2 has one group of size 1
    households.execute(
        "CREATE TABLE rel AS SELECT * FROM (VALUES ('A', 'a1', 1, 1), ('A', 'a1', 3, 1), "
        "('B', 'b1', 3, 1), ('A', 'a2', 1, 1)) t(state, county, size, groups)"
    ).fetchall()
    # level, nodes, mean EMD, max EMD, groups true, groups released
    # a1: 1,2 vs 1,3 -> 1; b1 exact; a2: none vs 1 (nothing past the last size) -> 0
    assert _rows(households, plain) == [
        (0, 1, 1.0, 1.0, 3, 4),
        (1, 2, 0.5, 1.0, 3, 4),
        (2, 3, 1.0 / 3.0, 1.0, 3, 4),
    ]
    # with the groups table, a2's listed household is a group of size 0 in the truth: EMD 1
    assert _rows(households, empty)[2] == (2, 3, 2.0 / 3.0, 1.0, 4, 4)
