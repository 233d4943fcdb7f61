"""engines/duckdb/catalog.py: every user-given name, relation or mapping is resolved here."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pytest

from inftda_sql import DomainError, InputDataError, SpecError
from inftda_sql.core.names import file_spelling, file_stem, is_file_key, split_name
from inftda_sql.engines.duckdb.catalog import (
    FileInput,
    Resolved,
    Source,
    TableRef,
    base_tables,
    check_domain_types,
    count_column,
    drop_temp,
    join_type,
    lookup,
    object_kind,
    reads_view,
    resolve_files,
    resolve_source,
    resolve_target,
    type_family,
)


def _views(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Every view of the connection, registered Arrow tables included (temporary views)."""
    return [
        r[0]
        for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()
    ]


@pytest.fixture
def db(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    con.execute('CREATE TABLE trips ("Region" VARCHAR, n INTEGER, w DOUBLE)').fetchall()
    con.execute("CREATE SCHEMA s").fetchall()
    con.execute("CREATE TABLE s.geo (region VARCHAR, city VARCHAR)").fetchall()
    con.execute("CREATE VIEW north AS SELECT * FROM trips WHERE \"Region\" = 'N'").fetchall()
    return con


# ----------------------------------------------------------------------------- names


def test_a_table_resolves_with_its_stored_column_names(db: duckdb.DuckDBPyConnection) -> None:
    src = resolve_source(db, "trips", role="input table", temp_name="__t")
    assert src.sql == '"memory"."main"."trips"'  # read by its full name: what was resolved
    assert src.description == "table 'trips'"
    assert src.resolved.kind == "table" and src.resolved.keys == ("main.trips",)
    assert dict(src.columns) == {"region": "VARCHAR", "n": "INTEGER", "w": "DOUBLE"}
    assert dict(src.names) == {"region": "Region", "n": "n", "w": "w"}
    assert src.temp_view is None
    assert src.column("REGION", "hierarchy column") == "Region"  # case-insensitive


def test_schema_qualified_names_and_views(db: duckdb.DuckDBPyConnection) -> None:
    geo = resolve_source(db, "s.geo", role="domain", temp_name="__d", error=DomainError)
    assert geo.sql == '"memory"."s"."geo"' and list(geo.columns) == ["region", "city"]
    assert geo.resolved.keys == ("s.geo",)
    view = resolve_source(db, "north", role="input table", temp_name="__t")
    assert view.sql == '"memory"."main"."north"' and view.description == "view 'north'"
    assert view.resolved.keys == ("main.trips",)  # the base table the view reads
    assert db.execute(f"SELECT count(*) FROM {view.sql}").fetchall() == [(0,)]


def test_names_are_case_insensitive(db: duckdb.DuckDBPyConnection) -> None:
    assert (
        resolve_source(db, "TRIPS", role="input table", temp_name="__t").columns["n"] == "INTEGER"
    )
    assert object_kind(db, "S.Geo") == "table"


@pytest.mark.parametrize("name", ["", "a.b.c.d", 'a."b', "a..b"])
def test_malformed_names_are_spec_errors(db: duckdb.DuckDBPyConnection, name: str) -> None:
    with pytest.raises(SpecError) as info:
        resolve_source(db, name, role="input table", temp_name="__t")
    assert str(info.value) == (
        "input table must be a table or view name (table, schema.table or "
        f"database.schema.table), got {name!r}"
    )


def test_an_unknown_name_lists_what_exists(db: duckdb.DuckDBPyConnection) -> None:
    with pytest.raises(InputDataError) as info:
        resolve_source(db, "tripz", role="input table", temp_name="__t")
    assert str(info.value) == (
        "input table 'tripz' is not a table or view of this database; existing: geo, north, trips"
    )
    with pytest.raises(DomainError, match=r"domain 'x\.geo' is not a table"):
        resolve_source(db, "x.geo", role="domain", temp_name="__d", error=DomainError)


def test_an_empty_database_says_none(con: duckdb.DuckDBPyConnection) -> None:
    with pytest.raises(InputDataError, match=r"existing: \(none\)$"):
        resolve_source(con, "t", role="input table", temp_name="__t")


def test_object_kind(db: duckdb.DuckDBPyConnection) -> None:
    assert object_kind(db, "trips") == "table"
    assert object_kind(db, "north") == "view"
    assert object_kind(db, "s.geo") == "table"
    assert object_kind(db, "main.geo") is None  # geo lives in schema s
    assert object_kind(db, "missing") is None


# ----------------------------------------------------------------------------- relations, mappings


def test_a_relation_becomes_a_temporary_view_that_drop_temp_removes(
    db: duckdb.DuckDBPyConnection,
) -> None:
    rel = db.sql('SELECT "Region" AS r, n FROM trips')
    src = resolve_source(db, rel, role="input table", temp_name="__inftda_x_input")
    assert src.sql == '"__inftda_x_input"' and src.temp_view == "__inftda_x_input"
    assert src.description == "the input table relation"
    assert dict(src.columns) == {"r": "VARCHAR", "n": "INTEGER"}
    assert "__inftda_x_input" in _views(db)
    drop_temp(db, src)
    assert "__inftda_x_input" not in _views(db)
    drop_temp(db, src)  # twice is harmless


def test_a_relation_that_cannot_be_used_is_an_input_error(db: duckdb.DuckDBPyConnection) -> None:
    rel = db.table("trips")
    db.execute("DROP VIEW north").fetchall()
    db.execute("DROP TABLE trips").fetchall()
    with pytest.raises(
        InputDataError, match="input table: the DuckDB relation cannot be used here"
    ):
        resolve_source(db, rel, role="input table", temp_name="__t")


def test_a_mapping_is_registered_and_drop_temp_removes_it(con: duckdb.DuckDBPyConnection) -> None:
    src = resolve_source(
        con, {"sex": ["F", "M"], "k": [1, 2]}, role="domain", temp_name="__inftda_x_domain_0"
    )
    assert src.description == "the declared domain" and src.temp_view == "__inftda_x_domain_0"
    assert dict(src.columns) == {"sex": "VARCHAR", "k": "BIGINT"}
    assert con.execute(f"SELECT * FROM {src.sql} ORDER BY 1").fetchall() == [("F", 1), ("M", 2)]
    drop_temp(con, src)
    assert _views(con) == []


@pytest.mark.parametrize(
    ("mapping", "fragment"),
    [
        ({"sex": "FM"}, "mapping must be {column: [values, ...]}, got 'sex': 'FM'"),
        ({"sex": 3}, "mapping must be {column: [values, ...]}, got 'sex': 3"),
        ({1: ["F"]}, "mapping must be {column: [values, ...]}, got 1: ['F']"),
        ({"a": [1], "b": [1, 2]}, "mapping columns must be non-empty and of equal length"),
        ({"a": []}, "mapping columns must be non-empty and of equal length"),
        ({"a": [1, "x"]}, "mapping has mixed value types"),
    ],
)
def test_malformed_mappings(con: duckdb.DuckDBPyConnection, mapping: object, fragment: str) -> None:
    with pytest.raises(DomainError, match=f"^domain {re.escape(fragment)}"):
        resolve_source(con, mapping, role="domain", temp_name="__d", error=DomainError)
    assert _views(con) == []  # nothing registered on the way


def test_other_objects_are_refused_with_their_type(con: duckdb.DuckDBPyConnection) -> None:
    with pytest.raises(InputDataError, match=r"a mapping \{column: \[values\]\}; got int$"):
        resolve_source(con, 5, role="input table", temp_name="__t")


def test_drop_temp_leaves_named_sources_alone(db: duckdb.DuckDBPyConnection) -> None:
    drop_temp(db, None)
    drop_temp(db, resolve_source(db, "north", role="input table", temp_name="__t"))
    assert object_kind(db, "north") == "view"


# ----------------------------------------------------------------------------- types


@pytest.mark.parametrize(
    ("duck_type", "family"),
    [
        ("TINYINT", "integer"),
        ("BIGINT", "integer"),
        ("UHUGEINT", "integer"),
        ("DECIMAL(18,0)", "integer"),
        ("DECIMAL(18,3)", "fractional"),
        ("DOUBLE", "fractional"),
        ("float", "fractional"),
        ("VARCHAR", "string"),
        ("ENUM('a', 'b')", "string"),
        ("DATE", "DATE"),
        ("BOOLEAN", "BOOLEAN"),
    ],
)
def test_type_family(duck_type: str, family: str) -> None:
    assert type_family(duck_type) == family


def test_join_type_compares_enums_as_varchar() -> None:
    assert join_type("ENUM('a', 'b')") == "VARCHAR"
    assert join_type("INTEGER") == "INTEGER"


def _source(**columns: str) -> Source:
    return Source(
        '"t"',
        "table 't'",
        {k.lower(): v for k, v in columns.items()},
        {k.lower(): k for k in columns},
        Resolved("t", None, "relation", (), (), "memory"),
    )


def test_count_column() -> None:
    src = _source(N="INTEGER", w="DOUBLE", d="DECIMAL(9,0)", label="VARCHAR")
    assert count_column(src, "n") == ("N", True)
    assert count_column(src, "w") == ("w", False)
    assert count_column(src, "d") == ("d", True)
    with pytest.raises(SpecError, match="count column must be a column name, got 3"):
        count_column(src, 3)
    with pytest.raises(SpecError, match="count column must be a column name, got ''"):
        count_column(src, "")
    with pytest.raises(
        InputDataError,
        match=r"column 'x' \(count column\) not in table 't'; available: N, w, d, label",
    ):
        count_column(src, "x")
    with pytest.raises(InputDataError) as info:
        count_column(src, "label")
    assert str(info.value).startswith(
        "count column 'label' has type VARCHAR, not a number (in table 't')"
    )
    assert "CAST(label AS BIGINT)" in str(info.value)


def test_check_domain_types() -> None:
    inp = _source(region="VARCHAR", code="INTEGER", kind="ENUM('a')")
    check_domain_types(
        inp,
        _source(region="VARCHAR", code="BIGINT", kind="VARCHAR"),
        ["region", "code", "kind"],
        "domain",
    )
    with pytest.raises(DomainError) as info:
        check_domain_types(
            inp, _source(region="VARCHAR", code="VARCHAR"), ["region", "code"], "domain of chain 2"
        )
    assert str(info.value).startswith(
        "column 'code' is INTEGER in the input but VARCHAR in the domain of chain 2; cast one"
    )


def test_source_column_error_class_is_the_callers() -> None:
    with pytest.raises(DomainError, match=r"column 'c' \(hierarchy column of the domain\) not in"):
        _source(a="INTEGER").column("c", "hierarchy column of the domain", DomainError)


# ----------------------------------------------------------------------------- resolution


def test_split_name() -> None:
    assert split_name("trips") == ("trips",)
    assert split_name('Main."My.Table"') == ("Main", "My.Table")
    assert split_name('"a""b".c') == ('a"b', "c")
    for bad in ("", "a.", ".a", '"a', "a..b"):
        with pytest.raises(ValueError):
            split_name(bad)


def test_lookup_follows_duckdbs_binding_order(db: duckdb.DuckDBPyConnection) -> None:
    db.execute("CREATE TEMP TABLE trips (x INTEGER)").fetchall()  # shadows main.trips
    assert lookup(db, "trips") == (TableRef("temp", "main", "trips"), "table")
    assert lookup(db, "main.trips") == (TableRef("memory", "main", "trips"), "table")
    assert lookup(db, "MEMORY.MAIN.TRIPS") == (TableRef("memory", "main", "trips"), "table")
    assert lookup(db, "temp.trips") == (TableRef("temp", "main", "trips"), "table")
    assert lookup(db, "geo") is None  # in schema s only
    assert lookup(db, "s.geo") == (TableRef("memory", "s", "geo"), "table")
    assert resolve_source(db, "trips", role="input", temp_name="__t").resolved.kind == "temp table"


def test_a_name_that_is_both_schema_and_database_is_ambiguous(
    db: duckdb.DuckDBPyConnection,
) -> None:
    db.execute("ATTACH ':memory:' AS s").fetchall()
    with pytest.raises(SpecError, match="ambiguous"):
        lookup(db, "s.geo")


def test_base_tables_come_from_the_binder(db: duckdb.DuckDBPyConnection) -> None:
    db.execute("CREATE TABLE s.trips (a INTEGER)").fetchall()
    db.execute("CREATE VIEW s.v AS SELECT * FROM trips").fetchall()  # s.trips: the view's schema
    db.execute("CREATE VIEW vv AS SELECT * FROM s.v, north").fetchall()
    reads, outside = base_tables(db, "(SELECT * FROM vv WHERE false)")  # pruned later, not here
    assert [str(r) for r in reads] == ["memory.main.trips", "memory.s.trips"]
    assert outside == ()
    reads, outside = base_tables(db, "(SELECT * FROM range(3), (VALUES (1)) t(x))")
    assert reads == () and outside == ()
    db.register("arrow_data", db.table("trips").to_arrow_table())
    reads, outside = base_tables(db, '"arrow_data"')
    assert reads == () and outside == ("PYTHON_ARROW_SCAN",)
    setting = "SELECT current_setting('explain_output')"
    assert db.execute(setting).fetchall() == [("physical_only",)]  # restored


def test_keys_are_relative_to_the_ledgers_database() -> None:
    assert TableRef("work", "main", "trips").key("work") == "main.trips"
    assert TableRef("Work", "s", "trips").key("work") == "s.trips"
    assert TableRef("other", "main", "trips").key("work") == "other.main.trips"
    assert TableRef("temp", "main", "a b").key("work") == 'temp.main."a b"'
    assert split_name(TableRef("temp", "main", "a.b").key("work")) == ("temp", "main", "a.b")


def test_resolve_target(db: duckdb.DuckDBPyConnection) -> None:
    db.execute("CREATE TEMP TABLE out (x INTEGER)").fetchall()
    target = resolve_target(db, "out")  # created in main, whatever temp holds
    assert target.ref == TableRef("memory", "main", "out") and target.existing is None
    assert resolve_target(db, "NORTH").existing == "view"
    assert resolve_target(db, "s.new").ref == TableRef("memory", "s", "new")
    with pytest.raises(SpecError, match="CREATE SCHEMA nope first") as info:
        resolve_target(db, "nope.x")
    assert info.value.param == "output"
    with pytest.raises(SpecError, match="not attached"):
        resolve_target(db, "nodb.main.x")
    with pytest.raises(SpecError, match="vanishes with the connection"):
        resolve_target(db, "temp.x")


def test_reads_view_binds_without_the_view_and_rolls_back(db: duckdb.DuckDBPyConnection) -> None:
    db.execute("CREATE VIEW nn AS SELECT * FROM north").fetchall()
    north = TableRef("memory", "main", "north")
    assert reads_view(db, north, ['"memory"."main"."nn"'])
    assert not reads_view(db, north, ['"memory"."main"."trips"'])
    assert object_kind(db, "north") == "view"  # rolled back


# ----------------------------------------------------------------------------- files


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("od.parquet", "od.parquet"),
        ("OD.PARQUET", "OD.PARQUET"),
        ("flows.csv.gz", "flows.csv.gz"),
        ("geo.tsv", "geo.tsv"),
        ("data/od", "data/od"),  # a path: resolve_files() then says what is wrong with it
        ("flows_*", "flows_*"),
        ("trips", None),
        ("main.trips", None),
        ('s."x.csv"', None),  # quoted: the table csv.x of schema s, not a file
        ("parquet", None),
    ],
)
def test_file_spelling(given: str, expected: str | None) -> None:
    assert file_spelling(given) == expected


def test_a_path_object_always_names_a_file(tmp_path: Path) -> None:
    assert file_spelling(tmp_path / "trips") == str(tmp_path / "trips")
    assert file_spelling(["od.parquet"]) is None and file_spelling(None) is None


def _write(con: duckdb.DuckDBPyConnection, path: Path, sql: str = "SELECT 'N' AS region") -> Path:
    con.execute(f"COPY ({sql}) TO '{path}'").fetchall()
    return path


def test_a_file_resolves_to_its_absolute_path(
    con: duckdb.DuckDBPyConnection, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = _write(con, tmp_path / "od.parquet")
    (tmp_path / "sub").mkdir()
    (tmp_path / "link.parquet").symlink_to(real)
    monkeypatch.chdir(tmp_path / "sub")
    for spelling in ("../od.parquet", str(real), "../sub/../link.parquet", Path("../od.parquet")):
        found = resolve_files(spelling, role="input table")
        assert found == FileInput(str(real), (str(real),), "parquet"), spelling
    src = resolve_source(con, "../od.parquet", role="input table", temp_name="__t")
    assert src.resolved == Resolved(
        str(real), None, "parquet file", (), (), "memory", files=(str(real),)
    )
    assert src.resolved.keys == (str(real),)  # the budget key is the file itself
    assert src.description == f"parquet file {str(real)!r}"
    assert src.sql == f"read_parquet(['{real}'])"  # read by the path resolved, nothing created
    assert src.temp_view is None and _views(con) == []
    assert dict(src.columns) == {"region": "VARCHAR"}


def test_a_glob_reads_and_is_charged_to_every_file_it_matches(
    con: duckdb.DuckDBPyConnection, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("b.csv", "a.csv"):
        (tmp_path / name).write_text("region,n\nN,1\n", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("x", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    found = resolve_files("*.csv", role="input table")
    assert found.pattern == str(tmp_path.resolve() / "*.csv")
    assert found.files == (str(tmp_path / "a.csv"), str(tmp_path / "b.csv"))
    assert found.format == "csv" and found.kind == "CSV file"
    src = resolve_source(con, "*.csv", role="input table", temp_name="__t")
    assert src.resolved.spelling == found.pattern and src.resolved.keys == found.files
    assert con.execute(f"SELECT sum(n) FROM {src.sql}").fetchall() == [(2,)]
    # a glob without an ending takes the format of the files it matches
    assert resolve_files("[ab].*", role="input").format == "csv"


def test_files_that_cannot_be_read_say_why(
    con: duckdb.DuckDBPyConnection, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "folder").mkdir()
    (tmp_path / "od.json").write_text("{}", encoding="utf-8")
    (tmp_path / "x.csv").write_text("a\n1\n", encoding="utf-8")
    (tmp_path / "x.parquet").write_text("not parquet", encoding="utf-8")
    for spelling, error, message in [
        ("missing.parquet", InputDataError, "no such file ("),
        ("folder/", InputDataError, "is a folder; name a file, or its files with a glob"),
        ("none_*.parquet", InputDataError, "no file matches"),
        ("data/od.json", InputDataError, "no such file"),
        ("./od.json", InputDataError, "cannot tell one file format from the name"),
        ("x.*", InputDataError, "cannot tell one file format from the names of the files"),
        ("s3://bucket/od.parquet", InputDataError, "is a URL"),
        ("x.parquet", InputDataError, "cannot be read as a parquet file"),
    ]:
        with pytest.raises(error, match=re.escape(message)):
            resolve_source(con, spelling, role="input table", temp_name="__t", param="table")
    with pytest.raises(DomainError, match="no such file"):
        resolve_source(con, "geo.csv", role="domain", temp_name="__t", error=DomainError)


def test_file_stem() -> None:
    assert [
        file_stem(t)
        for t in ("od.parquet", "/a/b/UK flows.CSV", "x.csv.zst", "2021.parquet", "*.csv", "d/")
    ] == ["od", "UK_flows", "x", "t_2021", "input", "d"]


def test_file_keys_are_absolute_paths() -> None:
    assert is_file_key("/data/od.parquet") and not is_file_key("main.trips")
