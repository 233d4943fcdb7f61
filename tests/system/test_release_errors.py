"""Every bad input gives a clear error before noise and leaves the database unchanged."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import duckdb
import pytest

import inftda_sql
from inftda_sql.engines.duckdb import compile as _compile
from tests.system.helpers import make_geo, make_od, make_persons, snapshot

GEO = ["region", "province", "mun"]


def _setup(con: duckdb.DuckDBPyConnection) -> None:
    make_geo(con)
    make_persons(con)
    make_od(con)
    con.execute(
        "CREATE TABLE agg AS SELECT *, count(*)::INTEGER AS n FROM persons GROUP BY ALL"
    ).fetchall()


def _call(**kw: Any) -> Callable[[duckdb.DuckDBPyConnection], Any]:
    table = kw.pop("table", "persons")
    base: dict[str, Any] = {"hierarchy": GEO, "domain": "geo", "rho": 1.0}
    base.update(kw)
    return lambda con: inftda_sql.release(con, table, **base)


CASES = [
    ("missing domain", _call(domain=None), inftda_sql.DomainError, "domain_from_data=True"),
    ("unknown table", _call(table="persns"), inftda_sql.InputDataError, "'persns'"),
    (
        "unknown column",
        _call(hierarchy=["region", "county"]),
        inftda_sql.InputDataError,
        "column 'county'",
    ),
    ("epsilon without delta", _call(rho=None, epsilon=1.0), inftda_sql.BudgetError, "delta"),
    ("rho and epsilon", _call(epsilon=1.0, delta=1e-8), inftda_sql.BudgetError, "not both"),
    ("negative rho", _call(rho=-1.0), inftda_sql.BudgetError, "-1"),
    (
        "duplicate column",
        _call(hierarchy=[["region"], ["region"]], domain=["geo", "geo"]),
        inftda_sql.SpecError,
        "'region'",
    ),
    ("tree needs two chains", _call(tree="destination"), inftda_sql.SpecError, "exactly two"),
    ("unknown domain", _call(domain="geography"), inftda_sql.DomainError, "'geography'"),
    (
        "domain lacks column",
        _call(domain={"region": ["North"]}),
        inftda_sql.DomainError,
        "'province'",
    ),
    ("bad mechanism", _call(mechanism="laplace"), inftda_sql.SpecError, "'laplace'"),
    (
        "count not numeric",
        _call(table="agg", count="mun", hierarchy=["region", "province"], domain="geo"),
        inftda_sql.InputDataError,
        "VARCHAR",
    ),
    (
        "count is hierarchy",
        _call(table="agg", count="region"),
        inftda_sql.InputDataError,
        "not a number",
    ),
    ("contribution zero", _call(contribution=0), inftda_sql.SpecError, "contribution"),
]


@pytest.mark.parametrize("name,call,error,fragment", CASES, ids=[c[0] for c in CASES])
def test_bad_input_rejected_and_nothing_written(
    con: duckdb.DuckDBPyConnection,
    name: str,
    call: Callable[[duckdb.DuckDBPyConnection], Any],
    error: type[Exception],
    fragment: str,
) -> None:
    _setup(con)
    before = snapshot(con)
    with pytest.raises(error, match=None) as info:
        call(con)
    assert fragment in str(info.value), str(info.value)
    assert snapshot(con) == before


DATA_CASES = [
    (
        "null key",
        "UPDATE persons SET province = NULL WHERE mun = 'n2a'",
        {},
        inftda_sql.InputDataError,
        "'province'",
    ),
    (
        "outside domain",
        "INSERT INTO persons VALUES ('North', 'N1', 'zzz')",
        {},
        inftda_sql.DomainError,
        "mun='zzz'",
    ),
    (
        "wrong parent",
        "INSERT INTO persons VALUES ('South', 'N1', 'n1a')",
        {},
        inftda_sql.DomainError,
        "region='South'",
    ),
    (
        "all rows of a leaf under a wrong parent",
        "UPDATE persons SET region = 'East' WHERE mun = 'n2a'",
        {},
        inftda_sql.DomainError,
        "region='East'",
    ),
    (
        "null ancestor in every row of a leaf",
        "UPDATE persons SET region = NULL WHERE mun = 'n1a'",
        {},
        inftda_sql.InputDataError,
        "'region'",
    ),
    (
        "negative count",
        "UPDATE agg SET n = -2 WHERE mun = 'n2a'",
        {"table": "agg", "count": "n"},
        inftda_sql.InputDataError,
        "1 row(s) with a negative value",
    ),
    (
        "null count",
        "UPDATE agg SET n = NULL WHERE mun = 'n2a'",
        {"table": "agg", "count": "n"},
        inftda_sql.InputDataError,
        "NULL",
    ),
    (
        "fractional count",
        "ALTER TABLE agg ALTER n TYPE DOUBLE; UPDATE agg SET n = 1.5 WHERE mun = 'n2a'",
        {"table": "agg", "count": "n"},
        inftda_sql.InputDataError,
        "not whole numbers",
    ),
    (
        "not nested",
        "INSERT INTO geo VALUES ('South', 'S9', 'n1a')",
        {},
        inftda_sql.DomainError,
        "not nested",
    ),
    (
        "null in domain",
        "INSERT INTO geo VALUES ('South', NULL, 'q')",
        {},
        inftda_sql.DomainError,
        "NULL",
    ),
    (
        "type mismatch",
        "CREATE TABLE geo2 AS SELECT region, province, 1 AS mun FROM geo",
        {"domain": "geo2"},
        inftda_sql.DomainError,
        "VARCHAR in the input but INTEGER",
    ),
    (
        "output exists",
        "CREATE TABLE persons_private AS SELECT 1 AS x",
        {},
        inftda_sql.OutputExistsError,
        "overwrite=True",
    ),
]


@pytest.mark.parametrize("name,sql,kw,error,fragment", DATA_CASES, ids=[c[0] for c in DATA_CASES])
def test_bad_data_rejected_and_nothing_written(
    con: duckdb.DuckDBPyConnection,
    name: str,
    sql: str,
    kw: dict[str, Any],
    error: type[Exception],
    fragment: str,
) -> None:
    _setup(con)
    for stmt in sql.split(";"):
        con.execute(stmt).fetchall()
    before = snapshot(con)
    with pytest.raises(error) as info:
        _call(**kw)(con)
    assert fragment in str(info.value), str(info.value)
    assert snapshot(con) == before


def test_failure_while_writing_rolls_back_everything(
    con: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    _setup(con)
    before = snapshot(con)

    def broken_view(*args: Any, **kw: Any) -> str:
        return "CREATE VIEW this is not sql"

    monkeypatch.setattr(_compile, "levels_view", broken_view)
    with pytest.raises(duckdb.Error):
        inftda_sql.release(con, "persons", hierarchy=GEO, domain="geo", rho=1.0)
    assert snapshot(con) == before  # no output, no view, no ledger table


def test_open_transaction_is_reported(con: duckdb.DuckDBPyConnection) -> None:
    _setup(con)
    con.execute("BEGIN TRANSACTION").fetchall()
    with pytest.raises(inftda_sql.InftdaError, match="transaction"):
        inftda_sql.release(con, "persons", hierarchy=GEO, domain="geo", rho=1.0)
    con.execute("ROLLBACK").fetchall()
