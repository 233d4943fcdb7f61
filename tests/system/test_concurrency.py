"""Concurrent releases into one database never overspend a budget (issue 10, items 3 and 13).

The budget check and the ledger insert are one transaction: two releases that collide there
cannot both commit (the ledger's release_id primary key), and the loser gets a typed
ConcurrentWriteError that says to retry. Threads share one database through cursors; separate
processes cannot open a file for writing at the same time at all (DuckDB's file lock), and get
a clear error until the other closes it.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import duckdb
import pytest

import inftda_sql
from inftda_sql.engines.duckdb import write as write_module
from tests.system.helpers import make_geo, make_persons, snapshot

GEO = ["region", "province", "mun"]
BUDGET = 1.0
EACH = 0.3  # 8 releases would spend 2.4; 3 fit
REPO = Path(__file__).resolve().parents[2]


def _spent(con: duckdb.DuckDBPyConnection) -> tuple[float, int]:
    rho, n = con.execute("SELECT coalesce(sum(rho), 0), count(*) FROM inftda_releases").fetchall()[
        0
    ]
    return float(rho), int(n)


@pytest.mark.parametrize("one_writer_at_a_time", [False, True], ids=["racing", "in-turn"])
def test_eight_threads_never_overspend(tmp_path: Path, one_writer_at_a_time: bool) -> None:
    """Every thread passes the early budget check before any of them writes, so the check that
    holds is the one inside the write transaction. Racing, the writers collide on the ledger
    (retry); in turn (each write after the previous one committed), only the check inside the
    transaction stops the fourth."""
    con = duckdb.connect(str(tmp_path / "threads.duckdb"))
    make_geo(con)
    make_persons(con)
    inftda_sql.set_budget(con, "persons", rho=BUDGET)
    barrier = threading.Barrier(8, timeout=60)
    turn = threading.Lock()
    outcomes: list[str] = []
    unexpected: list[BaseException] = []
    lock = threading.Lock()

    def worker(i: int) -> None:
        cur = con.cursor()
        waited = False

        def progress(_: object) -> None:
            nonlocal waited
            if not waited:
                waited = True
                barrier.wait()
                if one_writer_at_a_time:
                    turn.acquire()  # released when this release has returned

        try:
            for _ in range(20):
                try:
                    inftda_sql.release(
                        cur, "persons", hierarchy=GEO, domain="geo", rho=EACH,
                        output=f"out_{i}", overwrite=True, progress=progress,
                    )  # fmt: skip
                    outcome = "released"
                except inftda_sql.ConcurrentWriteError as exc:
                    assert "run it again" in str(exc)
                    with lock:
                        outcomes.append("conflict")
                    continue
                except inftda_sql.BudgetExceededError:
                    outcome = "refused"
                with lock:
                    outcomes.append(outcome)
                return
        except BaseException as exc:
            with lock:
                unexpected.append(exc)
        finally:
            if one_writer_at_a_time and turn.locked() and waited:
                turn.release()
            cur.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not unexpected, unexpected
    rho, n = _spent(con)
    assert rho <= BUDGET + 1e-12
    assert n == int(BUDGET // EACH) == outcomes.count("released")
    assert outcomes.count("refused") == 8 - n
    # the outputs of refused threads were never written; the released ones are whole
    written = {r[0] for r in con.execute("SELECT output_table FROM inftda_releases").fetchall()}
    tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    assert {t for t in tables if t.startswith("out_")} == written
    con.close()


_CHILD = textwrap.dedent(
    """
    import sys, time
    import inftda_sql
    path, name = sys.argv[1], sys.argv[2]
    released = locked = 0
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            con = inftda_sql.connect(path)
        except inftda_sql.InputDataError as exc:
            assert "open in another program" in str(exc), exc
            if not locked:
                print("locked", flush=True)  # the parent lets go of the file after this
            locked += 1
            time.sleep(0.02)
            continue
        try:
            inftda_sql.release(con, "persons", hierarchy=["region", "province", "mun"],
                               domain="geo", rho=0.3, output=f"{name}_{released}")
            released += 1
        except inftda_sql.BudgetExceededError:
            break
        finally:
            con.close()
    print(released, locked)
    """
)


def test_two_processes_on_one_file_never_overspend(tmp_path: Path) -> None:
    path = tmp_path / "procs.duckdb"
    with duckdb.connect(str(path)) as con:
        make_geo(con)
        make_persons(con)
        inftda_sql.set_budget(con, "persons", rho=BUDGET)
    holder = duckdb.connect(str(path))  # held open: the children must wait, not write
    children = [
        subprocess.Popen(
            [sys.executable, "-c", _CHILD, str(path), name],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("a", "b")
    ]
    try:
        for child in children:  # each has met the lock (however slowly it started)
            assert child.stdout is not None
            assert child.stdout.readline().strip() == "locked"
    finally:
        holder.close()
    results = []
    for child in children:
        out, err = child.communicate(timeout=180)
        assert child.returncode == 0, err
        results.append(tuple(int(x) for x in out.split()))
    assert all(locked > 0 for _, locked in results)  # each met the lock and waited
    with duckdb.connect(str(path), read_only=True) as con:
        rho, n = _spent(con)
    assert rho <= BUDGET + 1e-12
    assert n == sum(released for released, _ in results) == int(BUDGET // EACH)


# ------------------------------------------------------------------- item 13: typed errors


@pytest.fixture
def db(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    make_geo(con)
    make_persons(con)
    return con


def _failing_run(commit: BaseException, rollback: BaseException) -> Any:
    real = write_module.run

    def run(con: duckdb.DuckDBPyConnection, sql: str, params: Any = None) -> None:
        if sql == "COMMIT":
            raise commit
        if sql == "ROLLBACK":
            real(con, "ROLLBACK")  # really undo, then report a failure
            raise rollback
        real(con, sql, params)

    return run


def test_a_conflicting_commit_is_a_typed_retry_error_even_if_rollback_fails(
    db: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = snapshot(db)
    conflict = duckdb.TransactionException(
        "TransactionContext Error: Failed to commit: PRIMARY KEY or UNIQUE constraint "
        'violation: duplicate key "2"'
    )
    monkeypatch.setattr(
        write_module, "run", _failing_run(conflict, duckdb.IOException("disk gone"))
    )
    with pytest.raises(inftda_sql.ConcurrentWriteError) as info:
        inftda_sql.release(db, "persons", hierarchy=GEO, domain="geo", rho=1.0)
    assert "run it again" in str(info.value) and "duplicate key" not in str(info.value)[:30]
    assert info.value.__cause__ is conflict
    assert any("ROLLBACK" in note and "disk gone" in note for note in info.value.__notes__)
    monkeypatch.undo()
    assert snapshot(db) == before  # nothing recorded


def test_a_failing_commit_is_never_hidden_by_a_failing_rollback(
    db: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = snapshot(db)
    commit_failure = duckdb.IOException("could not fsync the write-ahead log")
    monkeypatch.setattr(
        write_module,
        "run",
        _failing_run(commit_failure, duckdb.TransactionException("cannot rollback: closed")),
    )
    with pytest.raises(duckdb.IOException) as info:
        inftda_sql.release(db, "persons", hierarchy=GEO, domain="geo", rho=1.0)
    assert info.value is commit_failure
    assert any("cannot rollback" in note for note in info.value.__notes__)
    monkeypatch.undo()
    assert snapshot(db) == before


def test_real_write_conflicts_become_typed_errors(
    db: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another cursor commits a ledger row while the release's transaction is open: the
    release's COMMIT fails on the duplicate release_id, and it says to retry instead of
    DuckDB's raw duplicate-key message; nothing of it is recorded."""
    inftda_sql.release(db, "persons", hierarchy=GEO, domain="geo", rho=1.0, output="first")
    other = db.cursor()
    other.execute("BEGIN").fetchall()
    other.execute(
        "INSERT INTO inftda_releases SELECT * REPLACE (2 AS release_id) FROM inftda_releases"
    ).fetchall()
    real_insert = write_module.insert_release

    def insert_then_the_other_commits(con: duckdb.DuckDBPyConnection, record: Any) -> None:
        real_insert(con, record)
        other.execute("COMMIT").fetchall()

    monkeypatch.setattr(write_module, "insert_release", insert_then_the_other_commits)
    with pytest.raises(inftda_sql.ConcurrentWriteError, match="run it again") as info:
        inftda_sql.release(db, "persons", hierarchy=GEO, domain="geo", rho=1.0, output="x")
    assert "duplicate key" in str(info.value.__cause__)
    assert not getattr(info.value, "__notes__", [])  # the ended transaction needs no ROLLBACK
    assert db.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'x'").fetchall() == [
        (0,)
    ]
    assert db.execute("SELECT count(*) FROM inftda_releases").fetchall() == [(2,)]
