"""engines/duckdb/write.py: the output, its levels view and the ledger row, all or nothing."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from inftda_sql import InftdaError, OutputExistsError
from inftda_sql.core.accounting import Budget
from inftda_sql.core.spec import parse_hierarchy
from inftda_sql.core.tree import TopDownResult
from inftda_sql.engines.duckdb import compile as _compile
from inftda_sql.engines.duckdb import sql as _sql
from inftda_sql.engines.duckdb import write as _write
from inftda_sql.engines.duckdb.catalog import TableRef, resolve, resolve_target
from inftda_sql.engines.duckdb.domain import build_chain
from inftda_sql.engines.duckdb.write import begin_transaction, write_release, write_settings
from tests.system.helpers import make_geo, snapshot
from tests.unit.helpers import release_record

NAMES = _compile.TempNames("__inftda_w_")
GEO = ["region", "province", "mun"]
SPEC = parse_hierarchy(GEO)
# leaf codes of tests.system.helpers.make_geo, sorted: e1a 0, n1a 1, n1b 2, n2a 3, s1a 4 ...
RESULT = TopDownResult(
    codes=(np.array([1, 6], np.int64),), counts=np.array([3, 4], np.int64), levels=()
)


PATHS: list[pa.Table] = []


@pytest.fixture
def db(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    make_geo(con)
    PATHS[:] = [build_chain(con, NAMES, 0, GEO, '"geo"', ["VARCHAR"] * 3, "domain").paths]
    return con


def _write_out(
    con: duckdb.DuckDBPyConnection,
    *,
    overwrite: bool = False,
    result: TopDownResult = RESULT,
    **kw: Any,
) -> int:
    output, view = kw.pop("output", "out"), kw.pop("view", "out_levels")
    geo = TableRef("memory", "main", "geo")
    written = write_release(
        con,
        NAMES,
        SPEC,
        result,
        output=resolve_target(con, output),
        view=None if view is None else resolve_target(con, view),
        overwrite=overwrite,
        record=release_record(**kw),
        source=resolve(con, "geo", geo, "table", geo.sql),
        budget=Budget.from_args(rho=0.5),
        guarantee="zCDP",
        budget_override=False,
        paths=PATHS,
    )
    assert written.base_tables == ["main.geo"]
    return written.release_id


def _rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[tuple[Any, ...]]:
    return con.execute(sql).fetchall()


TABLES = (
    "SELECT table_name FROM information_schema.tables "
    "WHERE table_catalog = current_database() ORDER BY 1"
)


def _views(con: duckdb.DuckDBPyConnection) -> list[str]:
    return [r[0] for r in _rows(con, "SELECT view_name FROM duckdb_views() WHERE NOT internal")]


def test_writes_output_view_and_ledger_row(db: duckdb.DuckDBPyConnection) -> None:
    assert _write_out(db) == 1
    assert _rows(db, "SELECT * FROM out") == [("North", "N1", "n1a", 3), ("South", "S1", "s1c", 4)]
    assert _rows(
        db, "SELECT level, level_name, count FROM out_levels WHERE level < 2 ORDER BY ALL"
    ) == [
        (0, "root", 7),
        (1, "region", 3),
        (1, "region", 4),
    ]
    assert _rows(db, "SELECT release_id, output_table, mechanism FROM inftda_releases") == [
        (1, "persons_private", "inftda")
    ]
    assert NAMES.released not in _views(db)  # the released codes are unregistered
    assert _write_out(db, output="out2", view=None) == 2  # ids follow the ledger
    assert "out2_levels" not in _views(db)


def test_no_view_when_not_asked(db: duckdb.DuckDBPyConnection) -> None:
    _write_out(db, view=None)
    assert [r[0] for r in _rows(db, TABLES)] == [
        "geo",
        "inftda_releases",
        "out",
    ]


@pytest.mark.parametrize("stage", ["view", "ledger row", "interrupt"])
def test_a_failure_after_the_table_rolls_everything_back(
    db: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch, stage: str
) -> None:
    created: list[bool] = []

    broken = "CREATE VIEW out_levels AS SELECT * FROM no_such_table"
    real_run = _sql.run

    def broken_view(*args: object) -> str:
        return broken

    def spying_run(
        con: duckdb.DuckDBPyConnection, sql: str, params: Mapping[str, Any] | None = None
    ) -> None:
        if sql == broken:  # the failing statement runs when the table is there
            created.append(_rows(db, "SELECT count(*) FROM out") == [(2,)])
        real_run(con, sql, params)

    def broken_insert(*args: object) -> None:
        created.append(_rows(db, "SELECT count(*) FROM out_levels") == [(7,)])
        if stage == "interrupt":
            raise KeyboardInterrupt  # BaseException: still rolled back
        raise RuntimeError("injected failure")

    if stage == "view":
        monkeypatch.setattr(_compile, "levels_view", broken_view)
        monkeypatch.setattr(_write, "run", spying_run)
    else:
        monkeypatch.setattr(_write, "insert_release", broken_insert)
    before = snapshot(db)
    with pytest.raises((duckdb.Error, RuntimeError, KeyboardInterrupt)):
        _write_out(db)
    assert created == [True]  # the failure came after the output existed
    assert snapshot(db) == before  # no table, no view, no ledger table or row
    assert NAMES.released not in _views(db)
    monkeypatch.undo()
    assert _write_out(db) == 1  # the connection is usable again, and no id was used up


def test_a_failed_overwrite_keeps_the_old_release(
    db: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write_out(db)
    before = snapshot(db)

    def boom(*args: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(_write, "insert_release", boom)
    new = TopDownResult(codes=(np.array([0], np.int64),), counts=np.array([9], np.int64), levels=())
    with pytest.raises(RuntimeError, match="boom"):
        _write_out(db, overwrite=True, result=new)
    assert snapshot(db) == before
    assert _rows(db, "SELECT mun, count FROM out ORDER BY 1") == [("n1a", 3), ("s1c", 4)]


def test_overwrite(db: duckdb.DuckDBPyConnection) -> None:
    _write_out(db)
    new = TopDownResult(codes=(np.array([0], np.int64),), counts=np.array([9], np.int64), levels=())
    before = snapshot(db)
    with pytest.raises(OutputExistsError) as info:
        _write_out(db, result=new)
    assert str(info.value) == "'out' already exists; pass overwrite=True or choose another output="
    assert snapshot(db) == before
    assert _write_out(db, result=new, overwrite=True) == 2
    assert _rows(db, "SELECT * FROM out") == [("East", "E1", "e1a", 9)]
    assert _rows(db, "SELECT count FROM out_levels WHERE level = 0") == [(9,)]


def test_overwrite_replaces_a_view_or_table_of_either_kind(db: duckdb.DuckDBPyConnection) -> None:
    db.execute("CREATE VIEW out AS SELECT 1 AS x").fetchall()
    db.execute("CREATE TABLE out_levels (x INTEGER)").fetchall()
    _write_out(db, overwrite=True)
    kinds = _rows(
        db,
        "SELECT table_name, table_type FROM information_schema.tables WHERE table_name LIKE 'out%' ORDER BY 1",
    )
    assert kinds == [("out", "BASE TABLE"), ("out_levels", "VIEW")]


def test_an_open_transaction_is_refused(db: duckdb.DuckDBPyConnection) -> None:
    db.execute("BEGIN TRANSACTION").fetchall()
    db.execute("CREATE TABLE mine (x INTEGER)").fetchall()
    with pytest.raises(InftdaError) as info:
        _write_out(db)
    assert str(info.value).startswith(
        "the connection has an open transaction; a release commits its output and ledger row "
        "atomically in its own transaction, so COMMIT or ROLLBACK first ("
    )
    db.execute("ROLLBACK").fetchall()  # the caller's transaction is left to the caller
    assert [r[0] for r in _rows(db, TABLES)] == ["geo"]


def test_begin_transaction(con: duckdb.DuckDBPyConnection) -> None:
    begin_transaction(con)
    with pytest.raises(InftdaError, match="open transaction"):
        begin_transaction(con)
    con.execute("ROLLBACK").fetchall()


def test_the_budget_is_checked_again_inside_the_transaction(db: duckdb.DuckDBPyConnection) -> None:
    """What was spent between the early check and the write counts: the write refuses."""
    from inftda_sql import BudgetExceededError, set_budget

    set_budget(db, "geo", rho=0.75)
    _write_out(db)  # spends 0.5 (the budget asked for in _write_out)
    before = snapshot(db)
    with pytest.raises(BudgetExceededError, match=r"main\.geo"):
        _write_out(db, output="out2", view=None)
    assert snapshot(db) == before


def test_what_the_write_asks_first_is_one_statement(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    """Whether DuckDB keeps the insertion order and the current database's file (the lock the
    writes into it take in turn) come from one statement, as each alone says them."""
    path = "SELECT path FROM duckdb_databases() WHERE database_name = current_database()"
    assert write_settings(con) == (True, None)  # in memory: no file, no lock
    con.execute("SET preserve_insertion_order = false").fetchall()
    assert write_settings(con) == (False, None)
    with duckdb.connect(str(tmp_path / "f.db")) as file:
        ordered, found = write_settings(file)
        assert (ordered, found) == (True, file.execute(path).fetchall()[0][0])
        assert found is not None and Path(found).resolve() == (tmp_path / "f.db").resolve()


@pytest.mark.parametrize("chains", [1, 2])
def test_released_strings_are_written_as_gathered_from_a_dictionary(
    con: duckdb.DuckDBPyConnection, chains: int
) -> None:
    """Released string columns come as a dictionary over the domain's column when the cells
    outnumber its rows (nothing copied): the written table is the one gathered row by row,
    with the same VARCHAR and integer columns, in the same order."""
    geo = pa.table({"region": ["N", "N", "S"], "city": ["a", "b", "c"], "zip": [1, 2, 3]})
    names = [["region", "city", "zip"], ["d_region", "d_city", "d_zip"]][:chains]
    spec = parse_hierarchy(names[0]) if chains == 1 else parse_hierarchy(names, "destination")
    paths = [geo.rename_columns(n) for n in names]
    rng = np.random.default_rng(5)
    flat = np.sort(rng.choice(3**chains, 3**chains, replace=False))  # every cell, > 3 rows
    codes = tuple(np.asarray(c, dtype=np.int64) for c in np.unravel_index(flat, [3] * chains))
    result = TopDownResult(codes, np.arange(1, flat.size + 1, dtype=np.int64), ())
    released = _write.released_table(spec, result, paths)
    assert any(pa.types.is_dictionary(t) for t in released.schema.types)
    gathered = pa.table(
        {
            **{
                col: paths[c].column(col).take(pa.array(codes[c]))
                for c, chain in enumerate(names)
                for col in chain
            },
            "count": pa.array(result.counts),
        }
    )
    tables = []
    for name, table in (("dictionary", released), ("gathered", gathered)):
        con.register(f"{name}_arrow", table)
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM {name}_arrow").fetchall()
        tables.append(
            (
                con.execute(f"DESCRIBE {name}").fetchall(),
                con.execute(f"SELECT * FROM {name}").fetchall(),
            )
        )
    assert tables[0] == tables[1]
    assert ("city", "VARCHAR", "YES", None, None, None) in tables[0][0]
