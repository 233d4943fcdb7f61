"""engines/duckdb/sql.py: identifier quoting, templates and the small query helpers."""

from __future__ import annotations

import duckdb
import pytest

from inftda_sql.engines.duckdb.sql import (
    arrow,
    ident,
    qualified,
    render,
    rows,
    run,
    scalar,
    template,
)


def test_ident_quotes_and_doubles_embedded_quotes(con: duckdb.DuckDBPyConnection) -> None:
    assert ident("region") == '"region"'
    assert ident('we"ird') == '"we""ird"'
    name = 'a "b"; DROP TABLE x; --'
    run(con, f"CREATE TABLE {ident(name)} ({ident('c d')} INTEGER)")
    assert rows(con, "SELECT table_name FROM information_schema.tables") == [(name,)]
    assert rows(con, "SELECT column_name FROM information_schema.columns") == [("c d",)]


def test_qualified() -> None:
    assert qualified("t") == '"t"'
    assert qualified("s.t") == '"s"."t"'
    assert qualified('s."t') == '"s"."""t"'


def test_templates_and_named_statements() -> None:
    assert template("leaf_codes").startswith("-- The leaf cells with the public domain's")
    # a named statement: the text after its "-- name:" line, up to the next one, stripped
    assert template("checks.row_count") == "SELECT count(*) FROM $input\n"
    assert template("ledger.next_release_id") == (
        "SELECT coalesce(max(release_id), 0) + 1 FROM $table\n"
    )
    with pytest.raises(KeyError):
        template("checks.no_such_statement")
    with pytest.raises(FileNotFoundError):
        template("no_such_file")


def test_render_fills_placeholders_and_keeps_bound_parameters() -> None:
    assert render("checks.leaf_of_code", leaf_col='"m"', codes='"c"', code="__d2") == (
        'SELECT "m" FROM "c" WHERE __d2 = $code\n'  # $$code stays a bound parameter
    )
    with pytest.raises(KeyError, match="input"):
        render("checks.row_count")  # a placeholder left unfilled is an error, never empty SQL


def test_query_helpers_fetch_everything(con: duckdb.DuckDBPyConnection) -> None:
    run(con, "CREATE TABLE t AS SELECT range AS x FROM range(5)")
    run(con, "INSERT INTO t VALUES ($v)", {"v": 10})
    assert scalar(con, "SELECT sum(x) FROM t WHERE x > $m", {"m": 2}) == 17
    assert scalar(con, "SELECT x FROM t WHERE x < 0") is None
    assert rows(con, "SELECT x FROM t ORDER BY x DESC LIMIT 2") == [(10,), (4,)]
    table = arrow(con, "SELECT x FROM t ORDER BY x")
    assert table.column("x").to_pylist() == [0, 1, 2, 3, 4, 10]
    # every result was fetched: a transaction can start and end on this connection right away
    run(con, "BEGIN TRANSACTION")
    run(con, "ROLLBACK")
