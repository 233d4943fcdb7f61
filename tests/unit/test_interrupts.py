"""Ctrl-C at safe points: critical blocks defer it, a commit holds it to the end of the scope,
DuckDB's "Query interrupted" comes back as KeyboardInterrupt."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator

import duckdb
import pyarrow as pa
import pytest

from inftda_sql import _interrupts
from inftda_sql._interrupts import Scope, committed, critical, is_interrupt
from inftda_sql.engines.duckdb.sql import run


@pytest.fixture(autouse=True)
def _clean_state() -> Iterator[None]:
    """Each test starts and ends with the default handler and no deferral left behind."""
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    yield
    state = _interrupts._state
    assert (state.blocks, state.scopes, state.held, state.installed, state.pending) == (
        0,
        [],
        False,
        False,
        False,
    )
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_critical_block_delivers_ctrl_c_when_it_ends() -> None:
    done = []
    with pytest.raises(KeyboardInterrupt), critical():
        signal.raise_signal(signal.SIGINT)
        done.append("rest of the block")
        with critical():  # nested: only the outermost block delivers
            signal.raise_signal(signal.SIGINT)
            done.append("inner block")
        done.append("after the inner block")
    assert done == ["rest of the block", "inner block", "after the inner block"]


def test_a_critical_block_without_ctrl_c_changes_nothing() -> None:
    with critical():
        assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    with pytest.raises(KeyboardInterrupt):  # Ctrl-C acts at once again
        signal.raise_signal(signal.SIGINT)


def test_after_a_commit_ctrl_c_waits_for_the_end_of_the_outermost_scope() -> None:
    steps = []
    with pytest.raises(KeyboardInterrupt), Scope() as outer:
        with Scope() as inner:
            with critical():
                committed()
            signal.raise_signal(signal.SIGINT)  # after the commit: held
            steps.append("cleanup of the inner scope")
        steps.append("cleanup of the outer scope")
    assert steps == ["cleanup of the inner scope", "cleanup of the outer scope"]
    assert outer.committed and inner.committed and outer.late


def test_a_scope_that_does_not_deliver_reports_a_late_ctrl_c() -> None:
    with Scope(deliver=False) as scope:
        committed()
        signal.raise_signal(signal.SIGINT)
    assert scope.late
    with Scope(deliver=False) as quiet:
        committed()
    assert quiet.committed and not quiet.late


def test_before_a_commit_a_scope_lets_ctrl_c_through() -> None:
    with pytest.raises(KeyboardInterrupt), Scope(deliver=False) as scope:
        signal.raise_signal(signal.SIGINT)
    assert not scope.committed and not scope.late


def test_a_kept_scope_ignores_ctrl_c_for_the_rest_of_the_process() -> None:
    try:
        with Scope(keep=True) as scope:
            committed()
            signal.raise_signal(signal.SIGINT)
        assert scope.late
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        signal.raise_signal(signal.SIGINT)  # ignored
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def test_committed_outside_a_scope_does_nothing() -> None:
    committed()
    with pytest.raises(KeyboardInterrupt):
        signal.raise_signal(signal.SIGINT)


def test_other_threads_are_left_alone() -> None:
    """Signals reach the main thread only: elsewhere the blocks do nothing (and may not touch
    the handler, which only the main thread can set)."""
    errors: list[BaseException] = []

    def work() -> None:
        try:
            with Scope(), critical():
                committed()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert errors == []


def test_is_interrupt() -> None:
    assert is_interrupt(KeyboardInterrupt())
    assert is_interrupt(RuntimeError("Query interrupted"))
    assert is_interrupt(duckdb.InterruptException("INTERRUPT Error: Interrupted!"))
    assert is_interrupt(
        duckdb.InvalidInputException(
            "Invalid Input Error: reading the schema of the object registered as '__geo_arrow' "
            "failed: KeyboardInterrupt: "
        )
    )
    assert not is_interrupt(RuntimeError("Query interrupted, or not"))
    assert not is_interrupt(duckdb.Error("Query interrupted"))


class _Kicker(threading.Thread):
    """Sends SIGINT to this process after ``seconds``; ``sent`` is when."""

    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds
        self.sent = float("inf")

    def run(self) -> None:
        time.sleep(self.seconds)
        self.sent = time.perf_counter()
        os.kill(os.getpid(), signal.SIGINT)


#: about a second of work; DuckDB may notice the signal only when the query ends
SLOW_QUERY = "SELECT count(*) FROM range(300000000) t(x) WHERE x % 7 = 3"


def test_a_query_cut_by_ctrl_c_raises_keyboard_interrupt(con: duckdb.DuckDBPyConnection) -> None:
    """DuckDB turns the signal into RuntimeError('Query interrupted'); the SQL helpers give
    back the KeyboardInterrupt it was, which no `except Exception` can swallow."""
    kicker = _Kicker(0.1)
    kicker.start()
    with pytest.raises(KeyboardInterrupt) as info:
        run(con, SLOW_QUERY)
    kicker.join()
    assert isinstance(info.value.__cause__, RuntimeError)


def test_ctrl_c_in_python_code_duckdb_runs_raises_keyboard_interrupt(
    con: duckdb.DuckDBPyConnection,
) -> None:
    """DuckDB wraps a KeyboardInterrupt raised while it reads a registered Arrow object into
    its own error (an InvalidInputException): the helpers give the interrupt back."""
    schema = pa.schema([("a", pa.int64())])

    def batches() -> Iterator[pa.RecordBatch]:
        yield pa.record_batch([pa.array([1])], schema=schema)
        raise KeyboardInterrupt

    con.register("stream", pa.RecordBatchReader.from_batches(schema, batches()))
    with pytest.raises(KeyboardInterrupt) as info:
        run(con, "SELECT sum(a) FROM stream")
    assert isinstance(info.value.__cause__, duckdb.InvalidInputException)
    con.unregister("stream")


def test_a_query_in_a_critical_block_runs_to_its_end(con: duckdb.DuckDBPyConnection) -> None:
    kicker = _Kicker(0.05)
    rows = 0
    with pytest.raises(KeyboardInterrupt), critical():
        kicker.start()
        rows = con.execute("SELECT count(*) FROM range(100000000) t(x) WHERE x % 7 = 3").fetchall()[
            0
        ][0]
        finished = time.perf_counter()
        kicker.join()
    assert rows == 14_285_714
    assert kicker.sent < finished  # the signal came while the query ran, and did not cut it


def test_an_error_caused_by_ctrl_c_is_an_interrupt() -> None:
    def chained(cause: BaseException, *, implicit: bool = False) -> BaseException:
        err = SystemError("<module> returned a result with an exception set")
        if implicit:
            err.__context__ = cause
        else:
            err.__cause__ = cause
        return err

    assert is_interrupt(chained(KeyboardInterrupt()))
    assert is_interrupt(chained(KeyboardInterrupt(), implicit=True))
    assert is_interrupt(chained(chained(KeyboardInterrupt())))
    assert not is_interrupt(chained(ValueError("x")))
    looped = chained(ValueError("x"))
    assert looped.__cause__ is not None
    looped.__cause__.__context__ = looped  # a cycle ends the walk
    assert not is_interrupt(looped)


def test_pyarrows_import_of_pandas_completes_before_ctrl_c(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """settle_imports() runs pyarrow's first conversion (which imports pandas when installed)
    with Ctrl-C deferred: the import completes, then the interrupt is delivered."""
    monkeypatch.setattr(_interrupts._state, "settled", False)
    real = pa.array
    done: list[bool] = []

    def array(*args: object, **kw: object) -> pa.Array:
        signal.raise_signal(signal.SIGINT)  # Ctrl-C in the middle of the import
        out = real(*args, **kw)
        done.append(True)
        return out

    monkeypatch.setattr(pa, "array", array)
    with pytest.raises(KeyboardInterrupt):
        _interrupts.settle_imports()
    assert done == [True] and _interrupts._state.settled
    _interrupts.settle_imports()  # once per process: no second conversion
    assert done == [True]
