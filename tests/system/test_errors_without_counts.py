"""Errors raised after the input is read never print a private count.

An error message may end up in a log, a ticket or a terminal someone else sees. It names the
column, how many rows (or cells) are wrong and a query the data owner can run to see them, but
no count of the private data and nothing derived from counts (a sum, a minimum). Categories are
not counts and may be named. Every count below is a distinctive number that must not show up in
any message (nor in anything chained to it).
"""

from __future__ import annotations

import re

import duckdb
import pytest

import inftda_sql

SECRET = 987654  # a count that must never be printed
BIG = 2**62  # fits BIGINT, but cells or totals above 2**60 are refused


@pytest.fixture
def geo(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    con.execute(
        "CREATE TABLE geo AS SELECT * FROM (VALUES ('N','a'),('N','b'),('S','c')) g(r, c)"
    ).fetchall()
    return con


def _chain_text(exc: BaseException) -> str:
    parts = []
    seen: BaseException | None = exc
    while seen is not None:
        parts.append(str(seen))
        seen = seen.__cause__ or seen.__context__
    return "\n".join(parts)


def _fail(con: duckdb.DuckDBPyConnection, table: object, **kw: object) -> str:
    with pytest.raises(inftda_sql.InputDataError) as info:
        inftda_sql.release(con, table, hierarchy=["r", "c"], domain="geo", rho=1.0, count="n", **kw)
    return _chain_text(info.value)


def _numbers(text: str) -> set[int]:
    return {int(x) for x in re.findall(r"\d+", text.replace(",", ""))}


def _query(message: str) -> str:
    found = re.search(r"see them with: (SELECT .*)$", message)
    assert found, message
    return found.group(1)


# (rows as SQL VALUES, the secrets that must not be printed, what the message says, rows wrong)
CASES = {
    "negative": (
        f"('N','a',-{SECRET}),('N','b',-{SECRET + 1}),('S','c',{SECRET + 2})",
        {SECRET, SECRET + 1, SECRET + 2, 2 * SECRET + 1},
        "2 row(s) with a negative value",
    ),
    "fractional": (
        f"('N','a',{SECRET}.5),('N','a',{SECRET}),('S','c',1.25)",
        {SECRET, 2 * SECRET},
        "2 row(s) that are not whole numbers",
    ),
    "nan": ("('N','a','nan'::DOUBLE),('S','c',12345.0)", {12345}, "1 row(s) that are not whole"),
    "infinite": ("('N','a','inf'::DOUBLE),('S','c',12345.0)", {12345}, "not whole numbers"),
    "null": (f"('N','a',NULL),('S','c',{SECRET})", {SECRET}, "1 row(s) with NULL"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_counts_name_rows_and_a_query_not_values(
    geo: duckdb.DuckDBPyConnection, case: str
) -> None:
    values, secrets, says = CASES[case]
    geo.execute(f"CREATE TABLE t AS SELECT * FROM (VALUES {values}) v(r, c, n)").fetchall()
    message = _fail(geo, "t")
    assert "'n'" in message and says in message, message
    assert not secrets & _numbers(message), message
    # the query lists exactly the offending rows
    bad = geo.execute(_query(message)).fetchall()
    expected = int(says.split(" ")[0]) if says[0].isdigit() else len(bad)
    assert len(bad) == expected >= 1


def test_relation_input_gets_a_filter_to_run(geo: duckdb.DuckDBPyConnection) -> None:
    rel = geo.sql(f"SELECT * FROM (VALUES ('N','a',-{SECRET})) v(r, c, n)")
    message = _fail(geo, rel, output="o")
    assert ".filter(" in message and str(SECRET) not in message, message
    condition = re.search(r"\.filter\('(.*)'\)", message)
    assert condition is not None
    assert len(rel.filter(condition.group(1)).fetchall()) == 1


@pytest.mark.parametrize(
    ("values", "column_type", "says"),
    [
        # one cell above 2**60: summing it would overflow nothing yet, but IntOpt cannot take it
        (f"('N','a',{BIG}),('N','a',{BIG + 7})", "BIGINT", "leaf cell(s) hold more than 2**60"),
        # cells each below 2**63 whose sums overflow BIGINT (DuckDB's raw error printed the sum)
        (f"('N','a',{2**63 - 9}),('N','a',{SECRET})", "BIGINT", "leaf cell(s)"),
        # every cell fits, the total does not
        (f"('N','a',{2**59}),('N','b',{2**59}),('S','c',{2**59})", "BIGINT", "2**60"),
        # values beyond int64 in a 128-bit column (DuckDB's overflow error printed them)
        (f"('N','a',{2**100 + SECRET}),('N','a',{2**126})", "HUGEINT", "beyond the 64-bit"),
        (f"('N','a',{2**100}),('S','c',{SECRET})", "DECIMAL(38,0)", "beyond the 64-bit"),
        (f"('N','a',1.5e30),('S','c',{SECRET})", "DOUBLE", "2**60"),
    ],
)
def test_counts_too_large_are_refused_without_values(
    geo: duckdb.DuckDBPyConnection, values: str, column_type: str, says: str
) -> None:
    geo.execute(
        f"CREATE TABLE t AS SELECT r, c, n::{column_type} AS n FROM (VALUES {values}) v(r, c, n)"
    ).fetchall()
    message = _fail(geo, "t")
    assert says in message, message
    secrets = {v for v in _numbers(values) if v > 100}
    assert not secrets & _numbers(message), message
    assert "1.5e" not in message.lower() and "e+30" not in message, message


def test_intopt_overflow_is_reported_without_the_total(geo: duckdb.DuckDBPyConnection) -> None:
    """A total IntOpt accepts as a target but whose parent's children sums could overflow: its
    own message names the exact root total, the release's does not."""
    geo.execute(
        "CREATE TABLE wide AS SELECT 'R' AS r, 'c' || i AS c FROM range(40) t(i)"
    ).fetchall()
    n = 2**60 - SECRET
    geo.execute(f"CREATE TABLE t AS SELECT 'R' AS r, 'c0' AS c, {n}::BIGINT AS n").fetchall()
    for rho in (1.0, float("inf")):
        with pytest.raises(inftda_sql.InputDataError) as info:
            inftda_sql.release(geo, "t", hierarchy=["r", "c"], domain="wide", rho=rho, count="n")
        text = _chain_text(info.value)
        assert "IntOpt" in text and str(n) not in text and str(SECRET) not in text, text


def test_categories_may_be_named(geo: duckdb.DuckDBPyConnection) -> None:
    """A category value is not a count: messages about the domain still show it."""
    geo.execute(f"CREATE TABLE t AS SELECT 'N' AS r, 'zz' AS c, {SECRET} AS n").fetchall()
    with pytest.raises(inftda_sql.DomainError) as info:
        inftda_sql.release(geo, "t", hierarchy=["r", "c"], domain="geo", rho=1.0, count="n")
    assert "'zz'" in str(info.value) and str(SECRET) not in str(info.value)
    geo.execute(f"CREATE OR REPLACE TABLE t AS SELECT 'S' AS r, 'a' AS c, {SECRET} AS n").fetchall()
    with pytest.raises(inftda_sql.DomainError) as info:
        inftda_sql.release(geo, "t", hierarchy=["r", "c"], domain="geo", rho=1.0, count="n")
    assert "'S'" in str(info.value) and str(SECRET) not in str(info.value)
