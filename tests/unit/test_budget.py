"""_budget.py: set_budget, budget_of and ledger(), on ledger rows written without a release."""

from __future__ import annotations

import datetime as dt

import duckdb
import pytest

from inftda_sql import BudgetError, SpecError
from inftda_sql._budget import Ledger, budget_of, ledger, set_budget
from inftda_sql.core.accounting import Budget, epsilon_to_rho
from inftda_sql.engines.duckdb.ledger import insert_release, read_budgets
from tests.unit.helpers import release_record


@pytest.fixture
def db(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    con.execute("CREATE TABLE persons (a INTEGER)").fetchall()
    con.execute("CREATE TABLE visits (a INTEGER)").fetchall()
    con.execute("CREATE VIEW trips AS SELECT * FROM visits").fetchall()
    return con


def test_set_budget_stores_a_row(db: duckdb.DuckDBPyConnection) -> None:
    before = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    budget = set_budget(db, "persons", epsilon=1.0, delta=1e-8)
    assert budget.rho == pytest.approx(epsilon_to_rho(1.0, 1e-8))
    (row,) = read_budgets(db)
    assert (row.input_table, row.rho, row.epsilon, row.delta, row.conversion) == (
        "main.persons",  # the base table, resolved in the catalog
        budget.rho,
        1.0,
        1e-8,
        "tight",
    )
    assert before <= row.set_at <= dt.datetime.now(dt.UTC).replace(tzinfo=None)  # naive UTC


def test_set_budget_replaces_and_accepts_views(db: duckdb.DuckDBPyConnection) -> None:
    set_budget(db, "persons", rho=1.0)
    set_budget(db, "PERSONS", rho=0.5, conversion="simple")
    set_budget(db, "trips", rho=2.0)  # a view over one table: that table's budget
    assert [(b.input_table, b.rho, b.conversion) for b in read_budgets(db)] == [
        ("main.persons", 0.5, "simple"),
        ("main.visits", 2.0, "tight"),
    ]
    db.execute("CREATE VIEW constant AS SELECT 1 AS a").fetchall()
    with pytest.raises(SpecError, match="reads no table of this database"):
        set_budget(db, "constant", rho=1.0)


@pytest.mark.parametrize(
    ("table", "error", "message"),
    [
        ("", SpecError, "set_budget needs the input table's name, got ''"),
        (None, SpecError, "set_budget needs the input table's name, got None"),
        (
            "nope",
            SpecError,
            "'nope' is not a table or view of this database; a budget belongs to an input table",
        ),
    ],
)
def test_set_budget_refuses_unknown_tables(
    db: duckdb.DuckDBPyConnection, table: object, error: type, message: str
) -> None:
    with pytest.raises(error) as info:
        set_budget(db, table, rho=1.0)  # type: ignore[arg-type]
    assert str(info.value) == message
    assert read_budgets(db) == []


def test_set_budget_checks_the_budget_before_writing(db: duckdb.DuckDBPyConnection) -> None:
    with pytest.raises(BudgetError, match="pass epsilon \\(with delta\\) or rho, not both"):
        set_budget(db, "persons", rho=1.0, epsilon=1.0)
    assert db.execute("SELECT count(*) FROM information_schema.tables").fetchall() == [(3,)]


def test_budget_of(db: duckdb.DuckDBPyConnection) -> None:
    assert budget_of(db, "persons") is None
    set_budget(db, "persons", rho=0.25)
    stored = budget_of(db, "PERSONS")
    assert stored is not None and stored.rho == 0.25
    assert budget_of(db, "trips") is None


def test_ledger_of_an_empty_database_creates_nothing(con: duckdb.DuckDBPyConnection) -> None:
    status = ledger(con)
    assert status == Ledger(releases=[], inputs=[])
    assert str(status) == "no releases recorded"
    assert con.execute("SELECT count(*) FROM information_schema.tables").fetchall() == [(0,)]


def test_ledger_adds_up_per_input(db: duckdb.DuckDBPyConnection) -> None:
    set_budget(db, "persons", rho=1.0)
    set_budget(db, "trips", rho=2.0)
    insert_release(db, release_record(release_id=1, rho=0.25))
    insert_release(db, release_record(release_id=2, rho=0.5, input_table="Persons"))
    insert_release(db, release_record(release_id=3, rho=None, guarantee="approxDP"))
    insert_release(db, release_record(release_id=4, rho=0.125, input_table="other"))
    status = ledger(db)
    assert [r["release_id"] for r in status.releases] == [1, 2, 3, 4]
    by_input = {i["input_table"]: i for i in status.inputs}
    # per base table, resolved in the catalog (rows without base_tables by their spelling)
    assert list(by_input) == ["main.persons", "main.visits", "other"]
    assert by_input["main.persons"] == {
        "input_table": "main.persons",
        "releases": 3,
        "spent_rho": 0.75,
        "approx_dp_releases": 1,
        "budget_rho": 1.0,
        "budget_epsilon": Budget.from_args(rho=1.0).epsilon,
        "budget_delta": 1e-8,
        "remaining_rho": 0.25,
    }
    assert by_input["main.visits"]["releases"] == 0
    assert by_input["main.visits"]["remaining_rho"] == 2.0
    assert by_input["other"]["budget_rho"] is None and by_input["other"]["remaining_rho"] is None
    text = str(status)
    assert (
        "main.persons: 3 release(s), spent rho 0.75, 1 (epsilon, delta)-DP release(s) not in rho"
        in text
    )
    assert "remaining rho 0.25" in text
    assert "other: 1 release(s), spent rho 0.125; no budget set" in text
    assert "main.visits: 0 release(s), spent rho 0; budget rho 2" in text
    assert text.splitlines()[0].split()[:4] == ["id", "created", "(UTC)", "input"]
