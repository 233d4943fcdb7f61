"""Names resolved in the catalog (issue 10, items 2, 11 and 12): budgets follow the base tables
a release reads, whatever the input is called; outputs never destroy what a release reads."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest

import inftda_sql
from inftda_sql._budget import budget_of, ledger, set_budget
from inftda_sql.engines.duckdb import engine as engine_module
from tests.system.helpers import make_geo, make_persons, snapshot

GEO = ["region", "province", "mun"]


@pytest.fixture
def db(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    make_geo(con)
    make_persons(con)
    con.execute("CREATE VIEW v AS SELECT * FROM persons WHERE region <> 'nowhere'").fetchall()
    con.execute("CREATE VIEW vv AS SELECT * FROM v").fetchall()
    return con


@pytest.fixture
def no_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if the private input is scanned: refusals must come before any work."""

    def scanned(*args: object, **kwargs: object) -> None:
        raise AssertionError("the input was scanned before the refusal")

    monkeypatch.setattr(engine_module, "scan", scanned)


def _release(con: duckdb.DuckDBPyConnection, table: Any, **kw: Any) -> inftda_sql.Release:
    base: dict[str, Any] = {"hierarchy": GEO, "domain": "geo", "rho": 0.1, "overwrite": True}
    base.update(kw)
    return inftda_sql.release(con, table, **base)


SPELLINGS: list[tuple[str, Callable[[duckdb.DuckDBPyConnection], Any]]] = [
    ("main.persons", lambda c: "main.persons"),
    ("PERSONS", lambda c: "PERSONS"),
    ("memory.main.persons", lambda c: "memory.main.persons"),
    ("a view", lambda c: "v"),
    ("a view over a view", lambda c: "vv"),
    ("con.table", lambda c: c.table("persons")),
    ("con.sql", lambda c: c.sql("SELECT * FROM persons WHERE mun <> 'zzz'")),
    ("a subquery", lambda c: c.sql("SELECT * FROM (SELECT * FROM v) WHERE region IS NOT NULL")),
]


def test_every_spelling_is_charged_to_the_base_table(db: duckdb.DuckDBPyConnection) -> None:
    """After set_budget(con, "persons"), every way of naming it is charged and, once the budget
    is spent, refused."""
    set_budget(db, "persons", rho=0.1 * len(SPELLINGS))
    for i, (_, spell) in enumerate(SPELLINGS):
        _release(db, spell(db), output=f"out_{i}")
    charged = db.execute("SELECT base_tables FROM inftda_releases").fetchall()
    assert charged == [(["main.persons"],)] * len(SPELLINGS)
    entry = next(e for e in ledger(db).inputs if e["input_table"] == "main.persons")
    assert entry["releases"] == len(SPELLINGS)
    assert entry["remaining_rho"] == pytest.approx(0.0, abs=1e-12)
    before = snapshot(db)
    for what, spell in SPELLINGS:
        with pytest.raises(inftda_sql.BudgetExceededError):
            _release(db, spell(db), output="out_more")
        assert snapshot(db) == before, what


def test_a_join_of_two_budgeted_tables_charges_both(db: duckdb.DuckDBPyConnection) -> None:
    make_persons(db, "visits")
    set_budget(db, "persons", rho=1.0)
    set_budget(db, "visits", rho=0.15)
    join = "SELECT p.* FROM persons p WHERE p.mun IN (SELECT mun FROM visits)"
    _release(db, db.sql(join), output="joined")
    assert db.execute("SELECT base_tables FROM inftda_releases").fetchall() == [
        (["main.persons", "main.visits"],)
    ]
    with pytest.raises(inftda_sql.BudgetExceededError, match=r"main\.visits"):
        _release(db, db.sql(join), output="joined")  # visits has 0.05 left
    _release(db, "persons", output="alone")  # persons alone still fits
    spent = {e["input_table"]: e["spent_rho"] for e in ledger(db).inputs}
    assert spent == {"main.persons": pytest.approx(0.2), "main.visits": pytest.approx(0.1)}


def test_a_view_is_bound_in_its_own_schema(db: duckdb.DuckDBPyConnection) -> None:
    """A view in schema s that says FROM persons reads s.persons (as DuckDB binds it), so it is
    charged to s.persons, not to main.persons."""
    db.execute("CREATE SCHEMA s").fetchall()
    make_persons(db, "s.persons")
    db.execute("CREATE VIEW s.people AS SELECT * FROM persons").fetchall()
    set_budget(db, "main.persons", rho=0.05)
    r = _release(db, "s.people", output="from_s")
    assert r.is_private
    assert db.execute("SELECT base_tables FROM inftda_releases").fetchall() == [(["s.persons"],)]


def test_set_budget_resolves_its_table(db: duckdb.DuckDBPyConnection) -> None:
    set_budget(db, "VV", rho=0.5)  # a view over a view over persons: the budget of persons
    assert db.execute("SELECT input_table FROM inftda_budgets").fetchall() == [("main.persons",)]
    assert budget_of(db, "main.PERSONS") is not None and budget_of(db, "v") is not None
    set_budget(db, "persons", rho=0.3)  # replaces it: one row per table
    assert db.execute("SELECT input_table, rho FROM inftda_budgets").fetchall() == [
        ("main.persons", 0.3)
    ]
    make_persons(db, "visits")
    db.execute("CREATE VIEW both_ AS SELECT * FROM persons UNION ALL SELECT * FROM visits")
    with pytest.raises(inftda_sql.SpecError, match="one base table"):
        set_budget(db, "both_", rho=1.0)
    for reserved in ("inftda_budgets", "inftda_releases"):
        with pytest.raises(inftda_sql.SpecError, match="bookkeeping"):
            set_budget(db, reserved, rho=1.0)


def test_input_from_outside_the_catalog_is_refused_while_budgets_exist(
    db: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    csv = tmp_path / "persons.csv"
    db.execute(f"COPY persons TO '{csv}'").fetchall()
    from_file = f"SELECT * FROM read_csv('{tmp_path}' || '/persons.csv')"  # a computed path
    _release(db, db.sql(from_file), output="from_file")  # no budget anywhere: fine
    set_budget(db, "geo", rho=2.0)  # any budget: what the file holds cannot be charged
    before = snapshot(db)
    with pytest.raises(inftda_sql.BudgetError, match="CREATE TABLE") as info:
        _release(db, db.sql(from_file), output="from_file")
    assert "budget_override=True" in str(info.value)
    assert snapshot(db) == before
    r = _release(db, db.sql(from_file), output="from_file", budget_override=True)
    assert any("READ_CSV" in reason for reason in r.non_private)
    # a path written in the query names the file: charged to it, as the file by its path
    r = _release(db, db.sql(f"SELECT * FROM read_csv('{csv}')"), output="named")
    assert not any("READ_CSV" in reason for reason in r.non_private)
    assert db.execute(
        "SELECT base_tables FROM inftda_releases WHERE release_id = $id", {"id": r.release_id}
    ).fetchall() == [([str(csv.resolve())],)]


def test_budgets_and_rows_of_older_files_are_resolved(db: duckdb.DuckDBPyConnection) -> None:
    """A ledger without base_tables and a budget stored under the spelling a user typed (as
    older versions wrote them) still hold for every spelling."""
    _release(db, "persons", output="first", rho=0.5)
    db.execute("ALTER TABLE inftda_releases DROP COLUMN base_tables").fetchall()
    db.execute("UPDATE inftda_releases SET input_table = 'PERSONS'").fetchall()
    db.execute(
        "CREATE TABLE inftda_budgets (input_table VARCHAR PRIMARY KEY, rho DOUBLE, "
        "epsilon DOUBLE, delta DOUBLE, conversion VARCHAR, set_at TIMESTAMP)"
    ).fetchall()
    old = inftda_sql.Budget.from_args(rho=0.6)
    db.execute(
        "INSERT INTO inftda_budgets VALUES ('Persons', 0.6, ?, ?, 'tight', now())",
        [old.epsilon, old.delta],
    ).fetchall()
    with pytest.raises(inftda_sql.BudgetExceededError):
        _release(db, "v", output="second", rho=0.2)
    _release(db, "main.persons", output="second", rho=0.1)  # the new row gets base_tables
    assert [e["input_table"] for e in ledger(db).inputs] == ["main.persons"]
    assert db.execute("SELECT base_tables FROM inftda_releases ORDER BY 1").fetchall() == [
        (["main.persons"],),
        (None,),
    ]


# ------------------------------------------------------------------------------- outputs


REFUSED_OUTPUTS = [
    ("the input, qualified", "persons", {"output": "main.persons"}),
    ("the input, another case", "persons", {"output": "PERSONS"}),
    ("the table a relation reads", "relation", {"output": "persons"}),
    ("the table a view reads", "vv", {"output": "memory.main.persons"}),
    ("a view the input reads", "vv", {"output": "v"}),
    ("the domain", "persons", {"output": "geo"}),
    ("the ledger", "persons", {"output": "inftda_releases"}),
    ("the budgets", "persons", {"output": "INFTDA_BUDGETS"}),
    ("a temporary name", "persons", {"output": "__inftda_x"}),
    ("the levels view onto the input", "persons_levels", {"output": "persons"}),
]


@pytest.mark.parametrize(
    ("what", "table", "kw"), REFUSED_OUTPUTS, ids=[r[0] for r in REFUSED_OUTPUTS]
)
def test_outputs_that_would_destroy_what_is_read_are_refused_before_any_work(
    db: duckdb.DuckDBPyConnection, no_scan: None, what: str, table: str, kw: dict[str, Any]
) -> None:
    set_budget(db, "persons", rho=2.0)
    _release_ok = db.execute("SELECT count(*) FROM persons").fetchall()
    if table == "persons_levels":
        db.execute("CREATE VIEW persons_levels AS SELECT * FROM persons").fetchall()
    before = snapshot(db)
    source: Any = db.table("persons") if table == "relation" else table
    with pytest.raises(inftda_sql.SpecError) as info:
        _release(db, source, **kw)
    assert info.value.param == "output"
    assert snapshot(db) == before
    assert db.execute("SELECT count(*) FROM persons").fetchall() == _release_ok


def test_a_table_with_a_budget_is_never_replaced_even_with_overwrite(
    db: duckdb.DuckDBPyConnection,
) -> None:
    """A release of another input (a copy) may not write over private data under accounting:
    any spelling of the budgeted table, for every kind of release."""
    db.execute("CREATE TEMP TABLE persons_copy AS SELECT * FROM persons")
    set_budget(db, "persons", rho=2.0)
    before = snapshot(db)
    for output in ("persons", "PERSONS", "main.persons", "memory.main.persons"):
        with pytest.raises(inftda_sql.SpecError, match="privacy budget") as info:
            _release(db, "persons_copy", output=output, overwrite=True)
        assert info.value.param == "output"
        assert snapshot(db) == before
    # without a budget the same overwrite is the user's explicit choice
    db.execute("CREATE TABLE scratch AS SELECT 1 AS x")
    _release(db, "persons_copy", output="scratch", overwrite=True)


def test_a_domain_of_another_chain_and_its_tables_are_protected(
    db: duckdb.DuckDBPyConnection, no_scan: None
) -> None:
    db.execute("CREATE TABLE od AS SELECT p.region AS o, q.region AS d FROM persons p, persons q")
    db.execute("CREATE TABLE regions AS SELECT DISTINCT region FROM geo")
    db.execute("CREATE VIEW o_dom AS SELECT region AS o FROM regions")
    db.execute("CREATE VIEW d_dom AS SELECT region AS d FROM regions")
    for output in ("d_dom", "regions"):
        with pytest.raises(inftda_sql.SpecError, match="domain"):
            inftda_sql.release(
                db, "od", hierarchy=[["o"], ["d"]], domain=["o_dom", "d_dom"], rho=1.0,
                output=output, overwrite=True,
            )  # fmt: skip


# --------------------------------------------------------------- item 12: before any noise


@pytest.fixture
def no_noise(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if any noise is drawn."""
    import inftda_sql.core.topdown as topdown

    def drawn(*args: object, **kwargs: object) -> None:
        raise AssertionError("noise was drawn before the refusal")

    monkeypatch.setattr(topdown, "draw_discrete_gaussian", drawn)


def test_read_only_connection_fails_before_any_work(tmp_path: Path, no_scan: None) -> None:
    path = str(tmp_path / "ro.duckdb")
    with duckdb.connect(path) as con:
        make_geo(con)
        make_persons(con)
    with duckdb.connect(path, read_only=True) as ro:
        with pytest.raises(inftda_sql.InputDataError, match="read-only") as info:
            _release(ro, "persons")
        assert info.value.param == "output"
        with pytest.raises(inftda_sql.InputDataError, match="read-only"):
            _release(ro, ro.table("persons"), output="x")


def test_missing_output_schema_fails_before_any_work(
    db: duckdb.DuckDBPyConnection, no_scan: None
) -> None:
    with pytest.raises(inftda_sql.SpecError, match="CREATE SCHEMA nope") as info:
        _release(db, "persons", output="nope.persons_private")
    assert info.value.param == "output"
    with pytest.raises(inftda_sql.SpecError, match="not attached"):
        _release(db, "persons", output="nodb.main.x")
    with pytest.raises(inftda_sql.SpecError, match="vanishes with the connection"):
        _release(db, "persons", output="temp.x")  # found by the fuzzing module


def test_an_output_in_another_schema(db: duckdb.DuckDBPyConnection) -> None:
    db.execute("CREATE SCHEMA out").fetchall()
    r = _release(db, "persons", output="out.persons_private", rho=float("inf"))
    assert db.execute("SELECT sum(count) FROM out.persons_private").fetchall() == [(16,)]
    assert db.execute("SELECT count(*) FROM out.persons_private_levels").fetchall()[0][0] > 0
    assert r.output == "out.persons_private"


@pytest.mark.parametrize("kind", ["TEMP TABLE", "TEMP VIEW", "VIEW"])
def test_temp_tables_and_views_are_inputs(db: duckdb.DuckDBPyConnection, kind: str) -> None:
    db.execute(f"CREATE {kind} tmp_in AS SELECT * FROM persons").fetchall()
    _release(db, "tmp_in", output="tmp_out", rho=float("inf"))
    exact = db.execute("SELECT sum(count) FROM tmp_out").fetchall()[0][0]
    assert exact == 16
    expected = ["temp.main.tmp_in"] if kind == "TEMP TABLE" else ["main.persons"]
    assert db.execute("SELECT base_tables FROM inftda_releases").fetchall() == [(expected,)]


def test_count_total_above_int64_fails_before_noise(
    con: duckdb.DuckDBPyConnection, no_noise: None
) -> None:
    make_geo(con)
    big = 2**63 - 1
    con.execute(
        f"CREATE TABLE agg AS SELECT * FROM (VALUES ('North', 'N1', 'n1a', {big}), "
        f"('South', 'S1', 's1a', {big})) t(region, province, mun, n)"
    ).fetchall()
    with pytest.raises(inftda_sql.InputDataError, match=r"more than 2\*\*60"):
        _release(con, "agg", count="n")
    con.execute("CREATE TABLE agg2 AS SELECT region, province, mun, 1e300 AS n FROM agg")
    with pytest.raises(inftda_sql.InputDataError, match=r"more than 2\*\*60"):
        _release(con, "agg2", count="n")
    con.execute("CREATE TABLE agg3 AS SELECT region, province, mun, 'nan'::DOUBLE AS n FROM agg")
    with pytest.raises(inftda_sql.InputDataError, match="NaN or infinite"):
        _release(con, "agg3", count="n")


@pytest.mark.parametrize("expr", ["[mun]", "{'m': mun}", "MAP {mun: 1}", "[mun, mun]::VARCHAR[2]"])
def test_nested_hierarchy_types_fail_before_noise(
    db: duckdb.DuckDBPyConnection, no_noise: None, expr: str
) -> None:
    db.execute(f"CREATE TABLE nested AS SELECT region, province, {expr} AS mun FROM persons")
    with pytest.raises(inftda_sql.InputDataError, match="nested type"):
        _release(db, "nested")
    with pytest.raises(inftda_sql.DomainError, match="nested type"):
        _release(db, "persons", domain=db.sql(f"SELECT region, province, {expr} AS mun FROM geo"))


def test_nan_in_domain_or_hierarchy_fails_before_noise(
    con: duckdb.DuckDBPyConnection, no_noise: None
) -> None:
    """A domain [1.0, NaN, NaN] used to double-count (3 rows released as 4)."""
    con.execute("CREATE TABLE t (m DOUBLE)").fetchall()
    con.execute("INSERT INTO t VALUES (1.0), (1.0), (2.0)").fetchall()
    with pytest.raises(inftda_sql.DomainError, match="NaN"):
        inftda_sql.release(
            con, "t", hierarchy=["m"], domain={"m": [1.0, float("nan"), float("nan")]}, rho=1.0
        )
    con.execute("INSERT INTO t VALUES ('nan'::DOUBLE)").fetchall()
    with pytest.raises(inftda_sql.InputDataError, match="NaN"):
        inftda_sql.release(con, "t", hierarchy=["m"], domain={"m": [1.0, 2.0]}, rho=1.0)
