"""Data frames in and out (issue 14): pandas and polars DataFrames and Arrow tables as inputs and
domains of release() and evaluate(), released tables returned in memory, and the temporary
registrations behind them (temporary, always dropped, refused from another database)."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest

import inftda_sql
from inftda_sql import BudgetError, DomainError, InputDataError, SpecError
from tests.system.helpers import PERSONS, make_geo, make_persons

pd = pytest.importorskip("pandas", reason="pandas is not installed (the optional [pandas] extra)")
try:  # polars is optional too: only the tests that need it skip without it
    import polars as pl
except ImportError:  # pragma: no cover - the test extra installs it
    pl = None
needs_polars = pytest.mark.skipif(
    pl is None, reason="polars is not installed (the optional [polars] extra)"
)

GEO = ["region", "province", "mun"]
#: the exact release (rho = inf) of PERSONS: its positive leaf cells, in the written order
EXACT = [
    ("North", "N1", "n1a", 5),
    ("North", "N2", "n2a", 3),
    ("South", "S1", "s1a", 1),
    ("South", "S1", "s1c", 7),
]
INF = float("inf")


def _persons_frame() -> Any:
    return pd.DataFrame(PERSONS, columns=GEO)


def _geo_frame(con: duckdb.DuckDBPyConnection) -> Any:
    return con.table("geo").df()


def _rows(table: Any) -> list[tuple[Any, ...]]:
    if isinstance(table, pa.Table):
        return [tuple(r.values()) for r in table.to_pylist()]
    if pl is not None and isinstance(table, pl.DataFrame):
        return [tuple(r) for r in table.iter_rows()]
    return [tuple(r) for r in table.itertuples(index=False)]


def _leftovers(con: duckdb.DuckDBPyConnection) -> list[tuple[Any, ...]]:
    """Every table or view a release left behind (temporary or not)."""
    return con.execute(
        "SELECT database_name, view_name, temporary FROM duckdb_views() "
        "WHERE view_name LIKE '\\_\\_inftda%' ESCAPE '\\' "
        "UNION ALL SELECT database_name, table_name, temporary FROM duckdb_tables() "
        "WHERE table_name LIKE '\\_\\_inftda%' ESCAPE '\\'"
    ).fetchall()


@pytest.fixture
def db(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    make_geo(con)
    make_persons(con)
    return con


@pytest.mark.parametrize(
    ("make", "kind", "cls"),
    [
        (lambda: _persons_frame(), "pandas", "DataFrame"),
        pytest.param(
            lambda: pl.from_pandas(_persons_frame()), "polars", "DataFrame", marks=needs_polars
        ),
        (lambda: pa.Table.from_pandas(_persons_frame(), preserve_index=False), "arrow", "Table"),
    ],
)
def test_a_frame_in_is_the_same_kind_of_frame_out(
    db: duckdb.DuckDBPyConnection, make: Any, kind: str, cls: str
) -> None:
    before = db.execute("SELECT count(*) FROM duckdb_tables()").fetchall()
    r = inftda_sql.release(db, make(), hierarchy=GEO, domain="geo", rho=INF)
    assert r.output is None and r.levels_view is None and r.return_as == kind
    assert type(r.data).__name__ == cls
    assert _rows(r.data) == EXACT
    assert list(r.data.columns if kind != "arrow" else r.data.column_names) == [*GEO, "count"]
    assert _rows(r.to_arrow()) == _rows(r.to_pandas()) == EXACT
    assert r.data is r.data  # converted once
    # nothing written but the ledger row, which says what the release was
    assert db.execute("SELECT count(*) FROM duckdb_tables()").fetchall()[0][0] == (
        before[0][0] + 1  # inftda_releases
    )
    row = db.execute(
        "SELECT input_table, output_table, base_tables FROM inftda_releases"
    ).fetchall()
    label = {"pandas": "pandas DataFrame", "polars": "polars DataFrame", "arrow": "Arrow table"}
    assert row == [(f"<{label[kind]}>", f"(not written: returned as {kind})", [])]
    assert _leftovers(db) == []
    assert f"(in memory, {kind})" in str(r)


@needs_polars
def test_every_form_converts_to_polars(db: duckdb.DuckDBPyConnection) -> None:
    for kind in ("arrow", "pandas", "polars"):
        r = inftda_sql.release(db, "persons", hierarchy=GEO, domain="geo", rho=INF, return_as=kind)
        assert isinstance(r.to_polars(), pl.DataFrame) and _rows(r.to_polars()) == EXACT


def test_a_frame_can_be_written_and_returned(db: duckdb.DuckDBPyConnection) -> None:
    frame = _persons_frame()
    written = inftda_sql.release(db, frame, hierarchy=GEO, domain="geo", rho=INF, output="out")
    assert written.output == "out" and written.data is None
    assert db.execute("SELECT * FROM out ORDER BY ALL").fetchall() == EXACT
    with pytest.raises(SpecError, match=r"written to 'out', not returned in memory") as err:
        written.to_arrow()
    assert err.value.param == "return_as"
    both = inftda_sql.release(
        db, frame, hierarchy=GEO, domain="geo", rho=INF, output="out2", return_as="arrow"
    )
    assert isinstance(both.data, pa.Table) and _rows(both.data) == EXACT
    assert db.execute("SELECT * FROM out2").fetchall() == EXACT  # same rows, same order
    assert both.relation(db).fetchall() == EXACT


def test_a_named_table_returned_in_memory_writes_no_table_but_spends_budget(
    db: duckdb.DuckDBPyConnection,
) -> None:
    inftda_sql.set_budget(db, "persons", rho=0.75)
    r = inftda_sql.release(db, "persons", hierarchy=GEO, domain="geo", rho=0.5, return_as="arrow")
    assert r.output is None and isinstance(r.data, pa.Table)
    assert db.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'persons_private'"
    ).fetchall() == [(0,)]
    assert db.execute("SELECT base_tables, rho FROM inftda_releases").fetchall() == [
        (["main.persons"], 0.5)
    ]
    with pytest.raises(BudgetError, match=r"only rho=0\.25"):  # the budget saw the first
        inftda_sql.release(db, "persons", hierarchy=GEO, domain="geo", rho=0.5, return_as="arrow")
    # every released cell is positive, consistent with the (public) total
    assert sum(r.data.column("count").to_pylist()) == len(PERSONS)


@pytest.mark.parametrize(
    "form",
    ["pandas", pytest.param("polars", marks=needs_polars), "arrow"],
)
def test_domains_may_be_frames(db: duckdb.DuckDBPyConnection, form: str) -> None:
    geo = _geo_frame(db)
    domains = {
        "pandas": lambda: geo,
        "polars": lambda: pl.from_pandas(geo),
        "arrow": lambda: pa.Table.from_pandas(geo, preserve_index=False),
    }
    for domain in (domains[form](),):
        r = inftda_sql.release(db, "persons", hierarchy=GEO, domain=domain, rho=INF, output="o",
                               overwrite=True)  # fmt: skip
        assert db.execute("SELECT * FROM o").fetchall() == EXACT
        source = db.execute(
            "SELECT domain_source FROM inftda_releases WHERE release_id = $id", {"id": r.release_id}
        ).fetchall()[0][0]
        assert "DataFrame" in source or "Arrow table" in source
    missing = geo[geo["mun"] != "n1a"]  # a leaf of the data the domain does not list
    with pytest.raises(DomainError, match="n1a"):
        inftda_sql.release(db, "persons", hierarchy=GEO, domain=missing, rho=INF, output="o2")
    assert _leftovers(db) == []


def _copy_on_write() -> Any:
    if int(pd.__version__.split(".")[0]) >= 3:  # always on
        return contextlib.nullcontext()
    return pd.option_context("mode.copy_on_write", True)


def _refused_before_anything(db: duckdb.DuckDBPyConnection, source: Any, domain: Any) -> None:
    """The release of ``source`` with ``domain`` is refused as the input's data, and leaves
    nothing: no output, no ledger row, no registration."""
    with pytest.raises(DomainError, match="which the input reads too") as info:
        inftda_sql.release(db, source, hierarchy=GEO, domain=domain, rho=1.0, output="o")
    assert "domain_from_data=True" in str(info.value)
    assert db.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'o'").fetchall() == [
        (0,)
    ]
    assert _leftovers(db) == []
    ledger = db.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'inftda_releases'"
    ).fetchall()
    if ledger == [(1,)]:
        assert db.execute("SELECT count(*) FROM inftda_releases").fetchall() == [(0,)]


@pytest.mark.parametrize(
    "form",
    ["pandas", pytest.param("polars", marks=needs_polars), "arrow"],
)
def test_a_domain_made_of_the_input_frame_is_refused(
    db: duckdb.DuckDBPyConnection, form: str
) -> None:
    """The input frame itself, or a frame made from it without a copy (a selection of its
    columns), as the domain: its categories would be the private data's. Refused before
    anything is read or written; a frame of the public geography serves, exact."""
    with _copy_on_write():
        persons = {
            "pandas": _persons_frame,
            "polars": lambda: pl.from_pandas(_persons_frame()),
            "arrow": lambda: pa.Table.from_pandas(_persons_frame(), preserve_index=False),
        }[form]()
        selected = {
            "pandas": lambda: persons[GEO[::-1]],
            "polars": lambda: persons.select(GEO[::-1]),
            "arrow": lambda: persons.select(GEO[::-1]),
        }[form]()
        for domain in (persons, selected):
            _refused_before_anything(db, persons, domain)
    geo = _geo_frame(db)
    public = {"pandas": geo, "polars": pl.from_pandas(geo) if pl else None,
              "arrow": pa.Table.from_pandas(geo, preserve_index=False)}[form]  # fmt: skip
    inftda_sql.release(db, persons, hierarchy=GEO, domain=public, rho=INF, output="o")
    assert db.execute("SELECT * FROM o").fetchall() == EXACT


def test_a_relation_or_view_over_the_input_frame_is_no_domain(
    db: duckdb.DuckDBPyConnection,
) -> None:
    """DuckDB names a registered frame by its scan: a relation made from the input relation,
    and a view over the registered input, read the input's rows and are refused as its
    domain (and the other way round); a relation of the public geography serves."""
    persons = _persons_frame()
    rel = db.from_df(persons)
    _refused_before_anything(db, rel, rel.project(", ".join(GEO)).distinct())
    db.register("persons_v", persons)
    db.execute("CREATE TEMP VIEW places AS SELECT DISTINCT region, province, mun FROM persons_v")
    _refused_before_anything(db, "persons_v", "places")
    _refused_before_anything(db, "places", "persons_v")
    inftda_sql.release(db, rel, hierarchy=GEO, domain=db.table("geo"), rho=INF, output="o")
    assert db.execute("SELECT * FROM o").fetchall() == EXACT


def test_evaluate_takes_frames(db: duckdb.DuckDBPyConnection) -> None:
    r = inftda_sql.release(db, _persons_frame(), hierarchy=GEO, domain="geo", rho=INF)
    ev = inftda_sql.evaluate(db, _persons_frame(), r.data, hierarchy=GEO)
    assert [row[4] for row in ev.fetchall()] == [0, 0, 0, 0]  # exact: no error at any level
    arrow = pa.Table.from_pandas(_persons_frame(), preserve_index=False)
    arrow_ev = inftda_sql.evaluate(db, arrow, r.to_arrow(), hierarchy=GEO)
    assert arrow_ev.fetchall() == ev.fetchall()
    assert _leftovers(db) == []


@needs_polars
def test_evaluate_takes_polars_frames(db: duckdb.DuckDBPyConnection) -> None:
    r = inftda_sql.release(db, _persons_frame(), hierarchy=GEO, domain="geo", rho=INF)
    ev = inftda_sql.evaluate(db, _persons_frame(), r.data, hierarchy=GEO)
    polars_ev = inftda_sql.evaluate(db, pl.from_pandas(_persons_frame()), r.to_polars(),
                                    hierarchy=GEO)  # fmt: skip
    assert polars_ev.fetchall() == ev.fetchall()
    assert _leftovers(db) == []


def test_registrations_are_temporary_and_dropped(db: duckdb.DuckDBPyConnection) -> None:
    """While a release runs, its relation and frame inputs are TEMPORARY views of the connection
    (nothing in the database's catalog); afterwards, and after a failure, nothing is left."""
    seen: list[list[tuple[Any, ...]]] = []

    def look(_: object) -> None:
        seen.append(_leftovers(db))

    rel = db.table("persons").filter("region <> 'East'")
    inftda_sql.release(db, rel, hierarchy=GEO, domain=_geo_frame(db), rho=0.5, output="o",
                       progress=look)  # fmt: skip
    during = {name.rsplit("_", 1)[-1]: (database, temp) for database, name, temp in seen[0]}
    assert during["input"] == ("temp", True) and during["0"] == ("temp", True)  # domain_0
    assert all(temp for _, _, temp in seen[0])
    assert _leftovers(db) == []
    bad = _persons_frame().assign(n=-1)
    with pytest.raises(InputDataError, match="negative"):
        inftda_sql.release(db, bad, hierarchy=GEO, domain="geo", rho=0.5, count="n")
    assert _leftovers(db) == []


def test_a_relation_of_a_file_database_writes_no_view_into_the_file(tmp_path: Path) -> None:
    path = tmp_path / "f.duckdb"
    con = duckdb.connect(str(path))
    make_geo(con)
    make_persons(con)
    kinds: list[list[tuple[Any, ...]]] = []
    rel = con.sql("SELECT * FROM persons WHERE mun <> $m", params={"m": "zzz"})
    r = inftda_sql.release(con, rel, hierarchy=GEO, domain="geo", rho=INF, return_as="arrow",
                           progress=lambda _: kinds.append(_leftovers(con)))  # fmt: skip
    assert _rows(r.data) == EXACT
    assert kinds[0] and all(database == "temp" for database, _, _ in kinds[0])
    assert con.execute("SELECT base_tables FROM inftda_releases").fetchall() == [
        (["main.persons"],)
    ]
    con.close()
    ro = duckdb.connect(str(path), read_only=True)
    assert _leftovers(ro) == []
    with pytest.raises(InputDataError, match="read-only, so the ledger row") as err:
        inftda_sql.release(ro, "persons", hierarchy=GEO, domain="geo", rho=0.5,
                           return_as="arrow")  # fmt: skip
    assert err.value.param == "return_as"
    ro.close()


def test_a_relation_of_another_database_is_refused_clearly(
    db: duckdb.DuckDBPyConnection,
) -> None:
    other = duckdb.connect()
    make_geo(other)
    make_persons(other)
    with pytest.raises(InputDataError, match="made on a connection to another database") as err:
        inftda_sql.release(db, other.table("persons"), hierarchy=GEO, domain="geo", rho=0.5,
                           output="o")  # fmt: skip
    assert err.value.param == "table" and "relation.arrow()" in str(err.value)
    with pytest.raises(DomainError, match="another database") as derr:
        inftda_sql.release(db, "persons", hierarchy=GEO, domain=other.table("geo"), rho=0.5)
    assert derr.value.param == "domain"
    with pytest.raises(InputDataError, match="another database"):
        inftda_sql.evaluate(db, other.table("persons"), "persons", hierarchy=GEO)
    assert _leftovers(db) == [] and _leftovers(other) == []
    assert db.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = "
                      "'inftda_releases'").fetchall() == [(0,)]  # fmt: skip
    other.close()
    # a cursor is another connection to the SAME database: its relations are fine
    r = inftda_sql.release(db, db.cursor().table("persons"), hierarchy=GEO, domain="geo",
                           rho=INF, return_as="arrow")  # fmt: skip
    assert _rows(r.data) == EXACT


def test_a_frame_is_refused_while_budgets_are_stored(db: duckdb.DuckDBPyConnection) -> None:
    """A frame may hold rows of a budgeted table (con.table(...).df()): it cannot be charged,
    so while any budget is stored it needs an override, recorded as not private."""
    inftda_sql.set_budget(db, "persons", rho=2.0)
    frame = db.table("persons").df()
    with pytest.raises(BudgetError, match="the input is a pandas DataFrame, not a table") as err:
        inftda_sql.release(db, frame, hierarchy=GEO, domain="geo", rho=0.5)
    assert "set_budget()" in str(err.value) and err.value.param == "budget_override"
    r = inftda_sql.release(db, frame, hierarchy=GEO, domain="geo", rho=0.5, budget_override=True)
    assert not r.is_private
    assert any("a pandas DataFrame, not charged" in reason for reason in r.non_private)


@pytest.mark.parametrize(
    ("obj", "hint"),
    [
        pytest.param(
            lambda: pl.from_pandas(_persons_frame()).lazy(), "collect it first", marks=needs_polars
        ),
        (lambda: pa.Table.from_pandas(_persons_frame()).to_reader(), "read only once"),
        (lambda: _persons_frame()["mun"], "inftda_sql.pandas.inf_tda"),
        (lambda: [1, 2], None),
    ],
)
def test_near_frames_are_refused_with_what_to_pass(
    db: duckdb.DuckDBPyConnection, obj: Any, hint: str | None
) -> None:
    with pytest.raises(InputDataError, match="a pandas or polars DataFrame, an Arrow table") as e:
        inftda_sql.release(db, obj(), hierarchy=GEO, domain="geo", rho=0.5, output="o")
    if hint:
        assert hint in str(e.value)


def test_missing_optional_packages_name_the_extra(
    db: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "polars", None)  # import polars now raises ImportError
    with pytest.raises(SpecError, match=r"pip install 'inftda-sql\[polars\]'") as err:
        inftda_sql.release(db, "persons", hierarchy=GEO, domain="geo", rho=0.5,
                           return_as="polars")  # fmt: skip
    assert err.value.param == "return_as" and "return_as='arrow'" in str(err.value)
    assert db.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = "
                      "'inftda_releases'").fetchall() == [(0,)]  # refused before any work  # fmt: skip
    # an input frame of a module that is not loaded is never mistaken for one
    r = inftda_sql.release(db, _persons_frame(), hierarchy=GEO, domain="geo", rho=INF)
    with pytest.raises(SpecError, match=r"inftda-sql\[polars\]"):
        r.to_polars()


def test_plan_reads_a_frame_domain(db: duckdb.DuckDBPyConnection) -> None:
    kw: dict[str, Any] = {"hierarchy": GEO, "rho": 0.5, "simulations": 0}
    by_name = inftda_sql.plan(con=db, domain="geo", **kw)
    by_frame = inftda_sql.plan(con=db, domain=_geo_frame(db), **kw)
    assert [lv.nodes for lv in by_frame.levels] == [lv.nodes for lv in by_name.levels] == [3, 4, 7]
    assert _leftovers(db) == []


def test_a_feature_release_returns_the_table_it_writes(con: duckdb.DuckDBPyConnection) -> None:
    """A feature release (CBDP) is returned by reading back its output table; without an
    output (a frame in) it says to pass one, before any work."""
    make_persons(con)
    make_geo(con)
    features = {"total": [], "region": ["region"], "leaf": ["region", "province", "mun"]}
    r = inftda_sql.release(con, "persons", mechanism="cbdp", features=features, domain="geo",
                           rho=INF, return_as="pandas")  # fmt: skip
    assert r.output == "persons_private" and isinstance(r.data, pd.DataFrame)
    assert _rows(r.data) == con.execute("SELECT * FROM persons_private").fetchall()
    assert sum(r.data["count"]) == len(PERSONS)
    with pytest.raises(SpecError, match="a feature release is returned by reading back") as err:
        inftda_sql.release(con, _persons_frame(), mechanism="cbdp", features=features,
                           domain="geo", rho=INF)  # fmt: skip
    assert err.value.param == "output"
