"""engines/duckdb/ledger.py: the bookkeeping tables, spelled once as dataclass fields."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from typing import Any

import duckdb
import pytest

from inftda_sql import BudgetError, BudgetExceededError
from inftda_sql.core.accounting import Budget
from inftda_sql.engines.duckdb.catalog import Resolved, TableRef, resolve
from inftda_sql.engines.duckdb.ledger import (
    BUDGET_TABLE,
    LEDGER_TABLE,
    BudgetRecord,
    ReleaseRecord,
    budget_record,
    check_budget,
    ensure_tables,
    insert_release,
    legacy_keys,
    next_release_id,
    read_budgets,
    read_releases,
    spent,
    stored_budget,
    upsert_budget,
)
from tests.unit.helpers import WHEN, release_record


def _describe(con: duckdb.DuckDBPyConnection, table: str) -> list[tuple[str, str, str]]:
    return [(r[0], r[1], r[2]) for r in con.execute(f"DESCRIBE {table}").fetchall()]


def _expected_columns(record: type) -> list[tuple[str, str, str]]:
    """(name, type, nullable) of every field, from its SQL metadata."""
    out = []
    for f in dataclasses.fields(record):
        sql = f.metadata["sql"]
        out.append(
            (f.name, sql.split()[0], "NO" if "NOT NULL" in sql or "PRIMARY KEY" in sql else "YES")
        )
    return out


def test_ensure_tables_creates_both_from_the_dataclass_fields(
    con: duckdb.DuckDBPyConnection,
) -> None:
    ensure_tables(con)
    assert _describe(con, LEDGER_TABLE) == _expected_columns(ReleaseRecord)
    assert _describe(con, BUDGET_TABLE) == _expected_columns(BudgetRecord)
    assert [c[0] for c in _describe(con, LEDGER_TABLE)] == list(ReleaseRecord.columns())
    ensure_tables(con)  # idempotent
    assert _describe(con, LEDGER_TABLE) == _expected_columns(ReleaseRecord)


def test_ensure_tables_creates_only_what_it_is_asked_for(con: duckdb.DuckDBPyConnection) -> None:
    ensure_tables(con, BUDGET_TABLE)
    tables = con.execute("SELECT table_name FROM information_schema.tables").fetchall()
    assert tables == [(BUDGET_TABLE,)]


OLD_COLUMNS = "release_id INTEGER PRIMARY KEY, created_at TIMESTAMP NOT NULL, input_table VARCHAR NOT NULL, output_table VARCHAR NOT NULL, rho DOUBLE"


@pytest.fixture
def old_file(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """A ledger as an older version of the package wrote it: fewer columns, one row."""
    con.execute(f"CREATE TABLE {LEDGER_TABLE} ({OLD_COLUMNS})").fetchall()
    con.execute(
        f"INSERT INTO {LEDGER_TABLE} VALUES (1, TIMESTAMP '2024-01-02 03:04:05', 'trips', 'trips_private', 0.5)"
    ).fetchall()
    return con


def test_an_old_ledger_reads_back_with_nulls_without_being_changed(
    old_file: duckdb.DuckDBPyConnection,
) -> None:
    (old,) = read_releases(old_file)
    assert (old.release_id, old.input_table, old.output_table, old.rho) == (
        1,
        "trips",
        "trips_private",
        0.5,
    )
    assert old.created_at == dt.datetime(2024, 1, 2, 3, 4, 5)
    assert old.mechanism is None and old.level_names is None and old.details is None
    assert len(_describe(old_file, LEDGER_TABLE)) == 5  # reading adds nothing


def test_ensure_tables_adds_the_missing_columns_as_nullable(
    old_file: duckdb.DuckDBPyConnection,
) -> None:
    ensure_tables(old_file, LEDGER_TABLE)
    columns = _describe(old_file, LEDGER_TABLE)
    names = [c[0] for c in columns]
    # the old columns stay where they were, the new ones are appended
    assert names[:5] == ["release_id", "created_at", "input_table", "output_table", "rho"]
    assert sorted(names) == sorted(ReleaseRecord.columns())
    expected = {name: (kind, null) for name, kind, null in _expected_columns(ReleaseRecord)}
    for name, kind, null in columns:
        assert kind == expected[name][0]
        if name not in names[:5]:
            assert null == "YES"  # old rows hold NULL there
    (old,) = read_releases(old_file)
    assert old.mechanism is None and old.seeded is None and old.rho == 0.5
    insert_release(old_file, release_record(release_id=next_release_id(old_file)))
    assert [r.release_id for r in read_releases(old_file)] == [1, 2]
    assert read_releases(old_file)[1] == release_record(release_id=2)


def test_insert_and_read_round_trip(con: duckdb.DuckDBPyConnection) -> None:
    records = [
        release_record(release_id=1),
        release_record(
            release_id=2,
            rho=None,
            guarantee="approxDP",
            mechanism="stability_histogram",
            level_names=["mun"],
            level_sensitivity=[1.0],
            level_rho=[0.0],
            level_sigma=[0.0],
            non_private=[],
            seeded=False,
            created_at=WHEN + dt.timedelta(seconds=1),
        ),
    ]
    for record in records:
        insert_release(con, record)
    assert read_releases(con) == records
    assert next_release_id(con) == 3


def test_read_releases_by_output_and_latest(con: duckdb.DuckDBPyConnection) -> None:
    outputs = ["a_private", "b_private", "A_PRIVATE", "b_private"]
    for i, out in enumerate(outputs, start=1):
        insert_release(con, release_record(release_id=i, output_table=out))
    assert [r.release_id for r in read_releases(con)] == [1, 2, 3, 4]
    assert [r.release_id for r in read_releases(con, output="a_private")] == [1, 3]
    assert [r.release_id for r in read_releases(con, output="B_Private", latest=True)] == [4]
    assert [r.release_id for r in read_releases(con, latest=True)] == [4]
    assert read_releases(con, output="nothing") == []
    assert read_releases(duckdb.connect()) == []  # no ledger: nothing, and nothing created


def test_public_drops_the_diagnostics_only() -> None:
    record = release_record()
    public = record.public()
    assert json.loads(public.details) == {"levels": []}
    assert dataclasses.replace(public, details=record.details) == record


def test_spent(con: duckdb.DuckDBPyConnection) -> None:
    assert spent(con, "persons") == (0.0, 0, 0)
    insert_release(con, release_record(release_id=1, rho=0.25))
    insert_release(con, release_record(release_id=2, rho=0.125, input_table="PERSONS"))
    insert_release(con, release_record(release_id=3, rho=None, guarantee="approxDP"))
    insert_release(con, release_record(release_id=4, rho=1.0, input_table="other"))
    assert spent(con, "Persons") == (0.375, 3, 1)
    assert spent(con, "nobody") == (0.0, 0, 0)


def _budget(table: str, rho: float, **kw: Any) -> BudgetRecord:
    b = Budget.from_args(rho=rho)
    return BudgetRecord(
        input_table=table,
        rho=b.rho,
        epsilon=b.epsilon,
        delta=b.delta,
        conversion=b.conversion,
        set_at=WHEN,
        **kw,
    )


def test_budgets_upsert_and_read(con: duckdb.DuckDBPyConnection) -> None:
    assert read_budgets(con) == [] and budget_record(con, "persons") is None
    assert stored_budget(con, "persons") is None
    upsert_budget(con, _budget("persons", 1.0))
    upsert_budget(con, _budget("other", 2.0))
    upsert_budget(con, _budget("persons", 0.5))  # replaces
    assert read_budgets(con) == [_budget("other", 2.0), _budget("persons", 0.5)]
    assert budget_record(con, "PERSONS") == _budget("persons", 0.5)
    stored = stored_budget(con, "persons")
    assert stored is not None and stored.rho == 0.5 and stored.given == "rho"


def _persons(con: duckdb.DuckDBPyConnection, outside: tuple[str, ...] = ()) -> Resolved:
    """The resolved input 'persons' (a table of this database)."""
    con.execute("CREATE TABLE IF NOT EXISTS persons (a INTEGER)").fetchall()
    ref = TableRef("memory", "main", "persons")
    found = resolve(con, "persons", ref, "table", ref.sql)
    return dataclasses.replace(found, outside=outside)


def test_check_budget(con: duckdb.DuckDBPyConnection) -> None:
    ask = Budget.from_args(rho=0.25)
    persons = _persons(con)
    assert persons.keys == ("main.persons",)
    assert check_budget(con, persons, ask, "zCDP", override=False) is None  # no budget
    upsert_budget(con, _budget("main.persons", 0.5))
    insert_release(con, release_record(release_id=1, rho=0.25, base_tables=["main.persons"]))
    assert check_budget(con, persons, ask, "zCDP", override=False) is None  # exactly fits
    insert_release(con, release_record(release_id=2, rho=0.125))  # an older row: by spelling
    with pytest.raises(BudgetExceededError, match=r"only rho=0\.125 .* after 2 release\(s\)"):
        check_budget(con, persons, ask, "zCDP", override=False)
    note = check_budget(con, persons, ask, "zCDP", override=True)
    assert note == "budget override: spent rho 0.625 exceeds the budget rho 0.5 of 'main.persons'"
    with pytest.raises(BudgetExceededError, match="does not add up in rho"):
        check_budget(con, persons, ask, "approxDP", override=False)


def test_check_budget_refuses_what_it_cannot_charge(con: duckdb.DuckDBPyConnection) -> None:
    ask = Budget.from_args(rho=0.25)
    from_file = _persons(con, outside=("READ_CSV",))
    assert check_budget(con, from_file, ask, "zCDP", override=False) is None  # no budget at all
    upsert_budget(con, _budget("other", 1.0))
    with pytest.raises(BudgetError, match=r"reads data from outside its tables \(READ_CSV\)"):
        check_budget(con, from_file, ask, "zCDP", override=False)
    note = check_budget(con, from_file, ask, "zCDP", override=True)
    assert note == "budget override: input reads READ_CSV, not charged to a table"


def test_legacy_spellings_resolve_to_base_tables(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("CREATE TABLE persons (a INTEGER)").fetchall()
    con.execute("CREATE VIEW v AS SELECT * FROM persons").fetchall()
    assert legacy_keys(con, "PERSONS", "memory") == ("main.persons",)
    assert legacy_keys(con, "v", "memory") == ("main.persons",)
    assert legacy_keys(con, "<relation>", "memory") == ("<relation>",)
    assert legacy_keys(con, "dropped", "memory") == ("dropped",)
