"""engines/duckdb/catalog/memo.py: a release reads the catalog once, and resolves every name
exactly as it did with one statement per question (issue 26, item 3: the fixed cost)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest

import inftda_sql
from inftda_sql.engines.duckdb.catalog import (
    TableRef,
    active,
    base_tables,
    home_database,
    lookup,
    object_kind,
    reads_view,
    remember,
    resolve_source,
    resolve_target,
)
from inftda_sql.engines.duckdb.sql import _noted, catalog_epoch, run
from inftda_sql.engines.duckdb.write import write_settings


@pytest.fixture
def db(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> duckdb.DuckDBPyConnection:
    con.execute("CREATE TABLE trips (region VARCHAR, n INTEGER)").fetchall()
    con.execute("CREATE TEMP VIEW trips AS SELECT 'N' AS region, 1 AS n").fetchall()  # shadows
    con.execute("CREATE SCHEMA s").fetchall()
    con.execute("CREATE TABLE s.geo (region VARCHAR)").fetchall()
    con.execute('CREATE TABLE "MixedCase" ("Region" VARCHAR)').fetchall()
    con.execute("CREATE VIEW v AS SELECT * FROM s.geo").fetchall()
    con.execute(f"COPY (SELECT 'N' AS region) TO '{tmp_path / 'p.parquet'}'").fetchall()
    return con


NAMES = ["trips", "main.trips", "memory.main.trips", "s.geo", '"MixedCase"', "mixedcase", "v"]


def _resolved(con: duckdb.DuckDBPyConnection, name: object) -> tuple[object, ...]:
    src = resolve_source(con, name, role="input table", temp_name="__t")
    return (src.sql, src.description, dict(src.columns), src.resolved)


@pytest.mark.parametrize("name", [*NAMES, "FILE"])
def test_a_name_resolves_the_same_with_one_catalog_read(
    db: duckdb.DuckDBPyConnection, name: str, tmp_path: Path
) -> None:
    given: object = str(tmp_path / "p.parquet") if name == "FILE" else name
    alone = _resolved(db, given)
    with remember(db, ["trips", "geo", "MixedCase", "v"], explain=True) as memo:
        assert _resolved(db, given) == alone
        assert memo.reads <= 1


def test_what_each_name_denotes(db: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    """The cases the memo must not blur: a temporary view shadows a table of the same name, a
    qualified name reaches the table, quoted and unquoted spellings find the one object, a file
    is its own base table."""
    with remember(db, NAMES):
        found = {name: lookup(db, name) for name in NAMES}
        parquet = resolve_source(db, tmp_path / "p.parquet", role="input", temp_name="__t")
    assert found["trips"] is not None and found["trips"][0].database == "temp"
    assert found["trips"][1] == "view"
    assert found["main.trips"] is not None and found["main.trips"][0].database == "memory"
    assert found["main.trips"][1] == "table"
    assert found['"MixedCase"'] == found["mixedcase"]
    assert found["mixedcase"] is not None and found["mixedcase"][0].name == "MixedCase"
    assert str(found["s.geo"][0]) == "memory.s.geo"  # type: ignore[index]
    assert parquet.resolved.files == (str((tmp_path / "p.parquet").resolve()),)


def test_one_read_answers_every_question(db: duckdb.DuckDBPyConnection) -> None:
    """Told the names (their last parts) at the start, it reads the catalog once for all."""
    with remember(db, ["trips", "geo", "MixedCase", "mixedcase", "v", "out"]) as memo:
        for name in NAMES:
            lookup(db, name)
        resolve_target(db, "s.out")
        home_database(db)
        lookup(db, "not_asked_before")  # a name it was not told about: read once more
        lookup(db, "v")
    assert memo.reads == 2
    assert active(db) is None  # nothing is remembered after the block


def test_a_statement_that_changes_the_catalog_is_seen(db: duckdb.DuckDBPyConnection) -> None:
    with remember(db, ["later", "x"]) as memo:
        assert lookup(db, "later") is None
        run(db, "CREATE TABLE later (a INTEGER)")
        found = lookup(db, "later")
        run(db, "CREATE SCHEMA t")
        target = resolve_target(db, "t.x")
    assert found is not None and found[1] == "table"
    assert target.ref.schema == "t"
    assert memo.reads == 3


OUT = ["out", "OUT", "main.out", "s.out_levels", "out_levels", "trips", "v"]


def test_what_a_block_created_is_carried_over(db: duckdb.DuckDBPyConnection) -> None:
    """A block that says what it creates (the write's output and view, in its transaction)
    leaves what was read, with those objects added, answering every question as a fresh read
    of the catalog answers it, without reading it again."""
    run(db, "BEGIN TRANSACTION")
    try:
        with remember(db, ["out", "OUT", "out_levels", "trips", "v"]) as memo:
            assert lookup(db, "out") is None
            made = [("memory", "main", "out", "table"), ("memory", "s", "out_levels", "view")]
            with memo.created(made):
                run(db, "CREATE TABLE memory.main.out AS SELECT 1 AS a")
                run(db, "CREATE VIEW memory.s.out_levels AS SELECT a FROM memory.main.out")
            carried = {name: lookup(db, name) for name in OUT}
            targets = [resolve_target(db, name) for name in ("out", "s.out_levels")]
            assert memo.reads == 1
        assert carried == {name: lookup(db, name) for name in OUT}  # read anew, no memo
        assert targets == [resolve_target(db, name) for name in ("out", "s.out_levels")]
        assert carried["out"] is not None and carried["out"][1] == "table"
    finally:
        run(db, "ROLLBACK")


def test_an_object_created_under_a_name_not_asked_about_is_read_again(
    db: duckdb.DuckDBPyConnection,
) -> None:
    with remember(db, ["trips"]) as memo:
        lookup(db, "trips")
        with memo.created([("memory", "main", "other", "table")]):
            run(db, "CREATE TABLE other (a INTEGER)")
        lookup(db, "trips")  # how DuckDB lower-cases 'other' is not known: read again
        assert memo.reads == 2


def test_what_was_derived_about_another_object_is_kept(db: duckdb.DuckDBPyConnection) -> None:
    """What a caller derived about one object (the ledger's columns) holds over a block that
    drops or creates others, not over one that touches it."""
    calls: list[str] = []

    def columns(name: str) -> Callable[[], str]:
        return lambda: calls.append(name) or name

    run(db, "BEGIN TRANSACTION")
    try:
        with remember(db, ["trips", "v", "MixedCase"]) as memo:
            memo.derived("columns of MixedCase", columns("MixedCase"), about="MixedCase")
            memo.derived("columns of v", columns("v"), about="v")
            memo.derived("anything", columns("anything"))
            with memo.dropped("memory", "main", "v"):
                run(db, "DROP VIEW v")
            with memo.created([("memory", "main", "v", "table")]):
                run(db, "CREATE TABLE v (a INTEGER)")
            for key, name in [("columns of MixedCase", "MixedCase"), ("columns of v", "v")]:
                memo.derived(key, columns(name), about=name)
            memo.derived("anything", columns("anything"))
            assert memo.reads == 1
    finally:
        run(db, "ROLLBACK")
    assert calls == ["MixedCase", "v", "anything", "v", "anything"]


def test_another_cursor_is_not_answered_from_the_memo(db: duckdb.DuckDBPyConnection) -> None:
    other = db.cursor()
    with remember(db, ["trips"]):
        assert active(db) is not None and active(other) is None


def test_a_registered_frame_is_seen(db: duckdb.DuckDBPyConnection) -> None:
    with remember(db, ["__frame"]) as memo:
        assert lookup(db, "__frame") is None
        resolve_source(db, pa.table({"a": [1]}), role="input", temp_name="__frame")
        assert lookup(db, "__frame") is not None
    assert memo.reads == 2


def test_explain_output_is_set_once_and_restored(db: duckdb.DuckDBPyConnection) -> None:
    db.execute("SET explain_output = 'optimized_only'").fetchall()
    with remember(db, explain=True):
        assert [str(r) for r in base_tables(db, "v")[0]] == ["memory.s.geo"]
        assert [str(r) for r in base_tables(db, "memory.main.trips")[0]] == ["memory.main.trips"]
    assert db.execute("SELECT current_setting('explain_output')").fetchall() == [
        ("optimized_only",)
    ]


def test_explain_output_is_restored_when_resolution_fails(db: duckdb.DuckDBPyConnection) -> None:
    with pytest.raises(duckdb.Error), remember(db, explain=True):
        base_tables(db, "v")
        base_tables(db, "no_such_table")
    assert db.execute("SELECT current_setting('explain_output')").fetchall() == [("physical_only",)]


@pytest.mark.parametrize("memo", [False, True])
def test_reads_view_binds_every_source_at_once(db: duckdb.DuckDBPyConnection, memo: bool) -> None:
    """Several sources are bound together without the view: it is read if any of them reads
    it, whichever; the probe is rolled back, and what the memo read still holds."""
    db.execute("CREATE VIEW vv AS SELECT * FROM v").fetchall()
    view = TableRef("memory", "main", "v")
    table, reader = '"memory"."main"."MixedCase"', '"memory"."main"."vv"'
    with remember(db, ["v"]) if memo else contextlib.nullcontext() as held:
        assert reads_view(db, view, [table, reader])
        assert reads_view(db, view, [reader, table])
        assert not reads_view(db, view, [table, '"memory"."s"."geo"'])
        assert not reads_view(db, view, [])
        assert object_kind(db, "v") == "view"  # rolled back
        assert held is None or held.reads == 1


def test_a_levels_view_the_input_reads_is_not_replaced(con: duckdb.DuckDBPyConnection) -> None:
    """End to end: the view a release would replace is refused while the input reads it, and
    replaced when the input reads only the table it reads, or once it is the release's own."""
    con.execute(
        "CREATE TABLE trips AS SELECT range % 100 AS mun FROM range(1000);"
        "CREATE TABLE geo AS SELECT range // 10 AS province, range AS mun FROM range(100);"
        "CREATE VIEW out_levels AS SELECT mun FROM trips;"
        "CREATE VIEW star AS SELECT * FROM out_levels"
    ).fetchall()
    kw: dict[str, Any] = {"hierarchy": ["province", "mun"], "domain": "geo", "rho": 1.0}
    kw |= {"output": "out", "overwrite": True}
    with pytest.raises(inftda_sql.SpecError, match="is a view that the input or a domain reads"):
        inftda_sql.release(con, "star", **kw)
    inftda_sql.release(con, "trips", **kw)  # reads trips, as the view does, but not the view
    inftda_sql.release(con, "trips", **kw)  # the levels view of the first release, replaced
    assert object_kind(con, "out_levels") == "view"


def _statements(con: duckdb.DuckDBPyConnection, action: Callable[[], object]) -> int:
    """The SQL statements DuckDB runs for ``action()`` (its query log)."""
    con.execute("CALL enable_logging('QueryLog')").fetchall()
    before = con.execute("SELECT count(*) FROM duckdb_logs WHERE type = 'QueryLog'").fetchall()
    action()
    after = con.execute("SELECT count(*) FROM duckdb_logs WHERE type = 'QueryLog'").fetchall()
    con.execute("CALL disable_logging()").fetchall()
    return int(after[0][0]) - int(before[0][0]) - 1  # not the first count


def test_a_release_of_a_small_table_runs_few_statements(con: duckdb.DuckDBPyConnection) -> None:
    """The fixed cost of a release is its round trips to DuckDB: a warm release of a small
    star-schema input (a temporary view, a domain table, an output and a levels view replaced)
    ran 77 statements before the catalog was read once per stage, 37 after, 33 since the
    write carries its read over the objects it creates and asks its settings at once, 32
    since those settings come from the prepare stage's catalog read; it must stay so."""
    con.execute(
        "CREATE TABLE trips AS SELECT range % 100 AS mun FROM range(1000);"
        "CREATE TABLE geo AS SELECT range // 10 AS province, range AS mun FROM range(100);"
        "CREATE TEMP VIEW star AS SELECT mun FROM trips"
    ).fetchall()
    kw: dict[str, Any] = {
        "hierarchy": ["province", "mun"],
        "domain": "geo",
        "epsilon": 1.0,
        "delta": 1e-8,
    }
    kw |= {"output": "out", "overwrite": True}
    inftda_sql.release(con, "star", **kw)  # the first: the ledger table is created
    count = _statements(con, lambda: inftda_sql.release(con, "star", **kw))
    assert count <= 32, count


@pytest.mark.parametrize("ordered", [True, False])
def test_the_catalog_read_says_what_the_write_asks_first(
    con: duckdb.DuckDBPyConnection, tmp_path: Path, ordered: bool
) -> None:
    """The write's settings (insertion order, the current database's file) as the memo's one
    read says them are what write_settings() asks on its own, in memory and in a file, and
    what the read after a USE of another database says; None before any read."""
    file = tmp_path / "f.db"
    con.execute(f"SET preserve_insertion_order = {str(ordered).lower()}").fetchall()
    with remember(con) as memo:
        assert memo.write_settings() is None  # nothing read yet, and asking reads nothing
        assert memo.reads == 0
        home_database(con)
        assert memo.write_settings() == write_settings(con) == (ordered, None)
    con.execute(f"ATTACH '{file}' AS f; USE f").fetchall()
    with remember(con) as memo:
        home_database(con)
        found = memo.write_settings()
        assert found == write_settings(con)
        assert found is not None and found[1] is not None
        assert Path(found[1]).resolve() == file.resolve()


@pytest.mark.parametrize(
    ("sql", "changes"),
    [
        ("SELECT 1", False),
        ("-- a comment; with a semicolon\nSELECT 1;", False),
        ("DESCRIBE SELECT 1", False),
        ("EXPLAIN (FORMAT json) SELECT 1", False),
        ("SET explain_output = 'all'", False),
        ("EXPLAIN ANALYZE CREATE TABLE x AS SELECT 1", True),  # runs the statement
        ("SELECT 1; DROP TABLE x", True),
        ("SET search_path = 's'", True),
        ("CREATE TABLE x (a INTEGER)", True),
        ("BEGIN TRANSACTION", True),
        ("ROLLBACK", True),
        ("ATTACH ':memory:' AS other", True),
        ("USE other", True),
    ],
)
def test_which_statements_end_what_was_read(sql: str, changes: bool) -> None:
    before = catalog_epoch()
    with _noted(sql):
        pass
    assert (catalog_epoch() != before) is changes


def test_a_domain_read_through_a_view_costs_no_statement_more(
    con: duckdb.DuckDBPyConnection,
) -> None:
    """A domain that is a view runs one statement more than a domain table: the plan that
    names the base tables it reads (a domain must not read the input). The view definitions
    that key the domain cache are read only when the key is needed (a large domain stored out
    of code order, or ``check_ancestors="cached"``), not on every release: they were one
    statement more per view."""
    con.execute(
        "CREATE TABLE trips AS SELECT range % 100 AS mun FROM range(1000);"
        "CREATE TABLE geo AS SELECT range // 10 AS province, range AS mun FROM range(100);"
        "CREATE VIEW geo_view AS SELECT * FROM geo;"
        "CREATE TEMP VIEW star AS SELECT mun FROM trips"
    ).fetchall()
    kw: dict[str, Any] = {"hierarchy": ["province", "mun"], "epsilon": 1.0, "delta": 1e-8}
    kw |= {"output": "out", "overwrite": True}
    inftda_sql.release(con, "star", domain="geo", **kw)  # the ledger table is created
    counts = {
        domain: _statements(con, lambda d=domain: inftda_sql.release(con, "star", domain=d, **kw))
        for domain in ("geo", "geo_view", "geo")
    }
    assert counts["geo_view"] == counts["geo"] + 1, counts
