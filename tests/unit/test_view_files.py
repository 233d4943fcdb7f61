"""The files a view or relation reads, from its SQL (catalog/view_files.py): DuckDB's plan
names the operator (PARQUET_SCAN), never the path."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from inftda_sql.engines.duckdb.catalog import files_read, reads_files, resolve_source


@pytest.fixture
def con(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> duckdb.DuckDBPyConnection:
    """A connection in a folder holding a.parquet, b.parquet and c.csv."""
    monkeypatch.chdir(tmp_path)
    c = duckdb.connect()
    for name in ("a.parquet", "b.parquet"):
        c.execute(f"COPY (SELECT 1 AS x) TO '{name}' (FORMAT parquet)")
    c.execute("COPY (SELECT 1 AS x) TO 'c.csv' (FORMAT csv)")
    return c


def names(con: duckdb.DuckDBPyConnection, sql: str) -> tuple[list[str], bool]:
    found = files_read(con, sql)
    return [Path(f).name for f in found.files], found.complete


def test_paths_and_readers(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("CREATE VIEW v1 AS FROM 'a.parquet'")
    con.execute(
        "CREATE VIEW v2 AS FROM read_parquet(['a.parquet', './b.parquet'], union_by_name=true)"
    )
    con.execute("CREATE VIEW v3 AS FROM read_csv('c.csv') WHERE x IN (FROM '*.parquet')")
    con.execute("CREATE VIEW \"odd AS name\" (y) AS SELECT x FROM 'b.parquet'")
    assert names(con, "v1") == (["a.parquet"], True)
    assert names(con, "v2") == (["a.parquet", "b.parquet"], True)
    assert names(con, "v3") == (["a.parquet", "b.parquet", "c.csv"], True)
    assert names(con, '"odd AS name"') == (["b.parquet"], True)


def test_views_are_followed_in_their_own_schema(con: duckdb.DuckDBPyConnection) -> None:
    """A name in a view's body binds in the view's schema (as DuckDB binds it); a CTE of that
    name shadows it."""
    con.execute("CREATE VIEW inner_v AS FROM 'a.parquet'")
    con.execute("CREATE SCHEMA s")
    con.execute("CREATE VIEW s.inner_v AS FROM 'b.parquet'")
    con.execute("CREATE VIEW s.outer_v AS FROM inner_v")
    con.execute("CREATE VIEW shadowed AS WITH inner_v AS (SELECT 1 AS x) FROM inner_v")
    assert names(con, "s.outer_v") == (["b.parquet"], True)
    assert names(con, "shadowed") == ([], True)


def test_relations_and_frames(con: duckdb.DuckDBPyConnection) -> None:
    """A relation is read through the temporary view it is registered as; an Arrow table reads
    no file."""
    source = resolve_source(
        con, con.sql("SELECT * FROM 'a.parquet'"), role="domain", temp_name="__inftda_t1"
    )
    assert [Path(f).name for f in source.resolved.files] == ["a.parquet"]
    frame = resolve_source(con, pa.table({"x": [1]}), role="domain", temp_name="__inftda_t2")
    assert frame.resolved.files == () and frame.resolved.files_complete
    assert not reads_files(frame.resolved.outside)
    assert reads_files(source.resolved.outside)


def test_what_cannot_be_named_makes_it_incomplete(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("CREATE VIEW computed AS FROM read_parquet('a' || '.parquet')")
    con.execute("CREATE MACRO rows_of() AS TABLE FROM 'a.parquet'")
    con.execute("CREATE VIEW by_macro AS FROM rows_of()")
    con.execute("CREATE VIEW counted AS FROM range(3)")
    assert names(con, "computed") == ([], False)
    assert names(con, "by_macro") == ([], False)
    assert names(con, "counted") == ([], True)


def test_frames_are_named_by_their_registration(con: duckdb.DuckDBPyConnection) -> None:
    """A data frame's scan is named by the alias DuckDB registered it under: a relation made
    from another keeps it (through the temporary view it is registered as), a view over a
    registered frame reads it, and another registration of the data has its own."""
    table = pa.table({"x": [1, 2]})
    base = con.from_arrow(table)
    derived = resolve_source(con, base.filter("x > 1"), role="domain", temp_name="__inftda_d")
    first = resolve_source(con, base, role="input", temp_name="__inftda_i")
    assert first.resolved.memory and set(first.resolved.memory) == set(derived.resolved.memory)
    con.register("t_v", table)
    con.execute("CREATE TEMP VIEW over_t AS SELECT DISTINCT x FROM t_v")
    assert files_read(con, "over_t").memory == files_read(con, "t_v").memory != ()
    assert not set(files_read(con, "t_v").memory) & set(first.resolved.memory)
    assert files_read(con, "'a.parquet'").memory == ()
