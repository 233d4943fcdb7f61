"""Budgets stored in the database: composition in rho, refusal, override, ledger view."""

from __future__ import annotations

import duckdb
import pytest

import inftda_sql
from inftda_sql._budget import budget_of, ledger, set_budget
from inftda_sql.core.accounting import epsilon_to_rho
from tests.system.helpers import make_geo, make_persons, snapshot

GEO = ["region", "province", "mun"]


@pytest.fixture
def db(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    make_geo(con)
    make_persons(con)
    return con


def _release(con: duckdb.DuckDBPyConnection, **kw: object) -> inftda_sql.Release:
    base: dict[str, object] = {"hierarchy": GEO, "domain": "geo", "overwrite": True}
    base.update(kw)
    return inftda_sql.release(con, "persons", **base)  # type: ignore[arg-type]


def test_releases_compose_until_the_budget_is_spent(db: duckdb.DuckDBPyConnection) -> None:
    set_budget(db, "persons", rho=0.25)
    _release(db, rho=0.1)
    _release(db, rho=0.1)
    before = snapshot(db)
    with pytest.raises(inftda_sql.BudgetExceededError) as info:
        _release(db, rho=0.1)
    msg = str(info.value)
    assert "rho=0.1" in msg and "rho=0.05" in msg and "requested - remaining = 0.05" in msg
    assert "budget_override=True" in msg
    assert snapshot(db) == before  # refused before any work: nothing written
    _release(db, rho=0.05)  # exactly what remains fits
    status = ledger(db).inputs[0]
    assert status["releases"] == 3
    assert status["spent_rho"] == pytest.approx(0.25)
    assert status["remaining_rho"] == pytest.approx(0.0, abs=1e-12)


def test_override_is_recorded(db: duckdb.DuckDBPyConnection) -> None:
    set_budget(db, "persons", rho=0.05)
    r = _release(db, rho=0.1, budget_override=True)
    assert any("budget override" in reason for reason in r.non_private)
    flags = db.execute("SELECT non_private FROM inftda_releases").fetchall()[0][0]
    assert any("budget override" in f for f in flags)


def test_budget_in_epsilon_delta_converts_once(db: duckdb.DuckDBPyConnection) -> None:
    b = set_budget(db, "persons", epsilon=1.0, delta=1e-8)
    assert b.rho == pytest.approx(epsilon_to_rho(1.0, 1e-8))
    assert budget_of(db, "PERSONS").rho == b.rho  # names are case-insensitive
    # zCDP composes in rho, which grows like epsilon**2: about four epsilon=0.5 releases fit
    # in an epsilon=1 budget (basic composition would allow only two)
    fits = int(b.rho // epsilon_to_rho(0.5, 1e-8))
    assert fits >= 3
    for _ in range(fits):
        _release(db, epsilon=0.5, delta=1e-8)
    with pytest.raises(inftda_sql.BudgetExceededError):
        _release(db, epsilon=0.5, delta=1e-8)


def test_infinite_budget_release_exhausts_a_budget(db: duckdb.DuckDBPyConnection) -> None:
    set_budget(db, "persons", rho=1.0)
    with pytest.raises(inftda_sql.BudgetExceededError):
        _release(db, rho=float("inf"))


def test_ledger_text_shows_releases_and_remaining(db: duckdb.DuckDBPyConnection) -> None:
    set_budget(db, "persons", rho=1.0)
    _release(db, rho=0.25, seed=1)
    text = str(ledger(db))
    assert "persons_private" in text and "spent rho 0.25" in text and "remaining rho 0.75" in text
    assert "seeded" in text


def test_ledger_reads_without_writing(con: duckdb.DuckDBPyConnection) -> None:
    before = snapshot(con)
    assert str(ledger(con)) == "no releases recorded"
    assert snapshot(con) == before


def test_set_budget_validates(db: duckdb.DuckDBPyConnection) -> None:
    with pytest.raises(inftda_sql.SpecError, match="not a table"):
        set_budget(db, "nope", rho=1.0)
    with pytest.raises(inftda_sql.BudgetError, match="delta"):
        set_budget(db, "persons", epsilon=1.0)
