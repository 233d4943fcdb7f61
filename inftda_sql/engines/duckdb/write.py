"""Write stage: the released table, its levels view and the ledger row, in one transaction.

Either all of them appear or none does. Inside one DuckDB transaction (DDL is transactional):
the input's budget is checked again against the ledger as this transaction sees it, the old
output and view are dropped (with ``overwrite=True``), the output is created from the released
codes, the levels view created, their content fingerprint taken (:mod:`.fingerprint`, which
``publish()`` checks) and the ledger row inserted, then COMMIT; any failure rolls
everything back, so no reader ever sees a half-written release.

**Check and record are one transaction.** Two releases that run at the same time (threads with
cursors on one database) both take the next ``release_id`` of the ledger as they see it; the
primary key makes the second COMMIT fail, so the one that commits saw every release committed
before it, and the budget it checked is the budget that holds. (The ids are dense: a transaction
that missed any committed release takes the id of the first one it missed.) The loser's
transaction is rolled back whole.

**Writers take turns, and a loser retries** (:func:`retrying`). With a timeout
(``release(timeout=...)``, default :data:`DEFAULT_TIMEOUT`), the writes of one process into one
database file take turns (a lock per file), so its threads do not collide at all. A write
that still collides (with SQL on another cursor, or a release with no timeout) runs the same
transaction again, with the same released cells (the noise was drawn before the write and is
kept in memory: a retry never draws new noise) and the budget checked again as the new
transaction sees it, so a retry never overspends. It pauses between attempts (exponential,
jittered, at most a second) for at most ``timeout`` seconds in all; then, or at once with
``timeout`` None or 0, it raises :class:`~inftda_sql.ConcurrentWriteError`, which says what
to do. Each retry is logged (logger ``inftda_sql.engines.duckdb.write``, level
DEBUG). Another process cannot write the same file at all: DuckDB lets one read-write process
open a file (``inftda_sql.connect(path, timeout=...)`` waits for it or says so).

**Ctrl-C** (:mod:`inftda_sql._interrupts`) cancels the work until COMMIT. BEGIN, COMMIT and
ROLLBACK themselves run with Ctrl-C deferred, so the transaction is never left open on the
connection and the commit either happens or not; after it, the work is recorded and Ctrl-C waits
for the end of ``release()`` (or of the command).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import os
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from types import EllipsisType
from typing import TypeVar

import duckdb
import pyarrow as pa

from ..._errors import Arg, ConcurrentWriteError, InftdaError, OutputExistsError, SpecError
from ..._interrupts import committed, critical
from ...core.accounting import Budget
from ...core.arrays import I64, take_sorted
from ...core.bounds import view_bounds
from ...core.measurements import Collector
from ...core.sorting import lex_order
from ...core.spec import TreeSpec
from ...core.tree import ChainTree, TopDownResult
from . import compile as _compile
from . import fingerprint
from .catalog import Resolved, TableRef, Target, active, existing, remember
from .ledger import (
    LEDGER_TABLE,
    LIBRARY_TABLES,
    ReleaseRecord,
    check_budget,
    ensure_tables,
    insert_release,
    next_release_id,
)
from .sql import ident, render, rows, run, scalar

__all__ = [
    "DEFAULT_TIMEOUT",
    "atomic",
    "begin_transaction",
    "check_timeout",
    "record_release",
    "released_table",
    "retrying",
    "write_release",
    "write_settings",
    "write_timeout",
]

#: what DuckDB says when two transactions wrote the same rows or catalog entries
_CONFLICT_MARKS = ("conflict", "duplicate key")

#: seconds a release's write keeps retrying a conflict with other writers, by default
DEFAULT_TIMEOUT = 30.0
#: the pause after the first conflict (seconds); it doubles after each one, up to _MAX_PAUSE,
#: and is drawn between half and all of that (jitter: writers that collided do not collide
#: again in step)
_FIRST_PAUSE = 0.01
_MAX_PAUSE = 1.0
#: the retry budget of the writes in this context (see :func:`write_timeout`)
_timeout: ContextVar[float | None] = ContextVar("inftda_sql_write_timeout", default=DEFAULT_TIMEOUT)
#: the pauses' jitter (not noise: nothing private depends on it)
_jitter = random.Random()
#: one lock per database file: the writes of this process into it take turns (see retrying())
_gates: dict[str, threading.RLock] = {}
_gates_lock = threading.Lock()
_DATABASE_PATH = "SELECT path FROM duckdb_databases() WHERE database_name = current_database()"
logger = logging.getLogger(__name__)

T = TypeVar("T")


def begin_transaction(con: duckdb.DuckDBPyConnection) -> None:
    """BEGIN, or a clear error if the caller left a transaction open on ``con``."""
    try:
        run(con, "BEGIN TRANSACTION")
    except duckdb.Error as exc:
        raise InftdaError(
            "the connection has an open transaction; a release commits its output and ledger row "
            f"atomically in its own transaction, so COMMIT or ROLLBACK first ({exc})"
        ) from exc


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _is_conflict(exc: BaseException) -> bool:
    return isinstance(exc, (duckdb.TransactionException, duckdb.ConstraintException)) and any(
        mark in str(exc).lower() for mark in _CONFLICT_MARKS
    )


def _rollback(con: duckdb.DuckDBPyConnection) -> str | None:
    """ROLLBACK (Ctrl-C waits for it); never raises. Returns why it failed, if it did and that
    matters (a failed COMMIT has already ended the transaction: nothing is left to roll back)."""
    with critical():
        try:
            run(con, "ROLLBACK")
        except duckdb.Error as failure:
            if "no transaction is active" not in str(failure).lower():
                return _first_line(failure)
    return None


@contextlib.contextmanager
def atomic(con: duckdb.DuckDBPyConnection, what: str) -> Iterator[None]:
    """One transaction around the block: COMMIT at its end, ROLLBACK on any error.

    A write-write conflict with another writer becomes a :class:`ConcurrentWriteError` that
    says to retry. The error that made the transaction fail (a failing COMMIT included) is the
    one raised; a ROLLBACK that fails after it is added to it as a note, never raised instead.

    Ctrl-C raises KeyboardInterrupt inside the block (and rolls it back); BEGIN and COMMIT wait
    for it, so the transaction is opened and closed whole, and after COMMIT the work counts as
    recorded (:func:`~inftda_sql._interrupts.committed`).
    """
    opened = False
    try:
        with critical():
            begin_transaction(con)
            opened = True
        yield
        with critical():
            run(con, "COMMIT")
            opened = False
            committed()
    except BaseException as exc:
        if not opened:  # BEGIN refused (the caller's transaction), or COMMIT done
            raise
        rollback_failure = _rollback(con)
        error: BaseException = exc
        if _is_conflict(exc):
            error = ConcurrentWriteError(
                f"another writer changed this database at the same time ({_first_line(exc)}); "
                f"{what} was rolled back and nothing of it is recorded: run it again"
            )
        if rollback_failure:
            error.add_note(f"the ROLLBACK after this error failed too: {rollback_failure}")
        if error is exc:
            raise
        raise error from exc


def check_timeout(value: object) -> float | None:
    """``timeout=`` of a release: seconds >= 0 to keep retrying a write that collided with
    another writer, or None (as 0: fail at once).

    Example:
        >>> check_timeout(5), check_timeout(None), check_timeout(0)
        (5.0, None, 0.0)
        >>> check_timeout(-1)
        Traceback (most recent call last):
        ...
        inftda_sql._errors.SpecError: timeout must be a number of seconds from 0 to 1e9 (or \
None: do not wait), got -1; pass e.g. timeout=60
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1e9:
        raise SpecError(
            "timeout must be a number of seconds from 0 to 1e9 (or None: do not wait), got "
            f"{value!r}; pass e.g. ",
            Arg("timeout", 60),
            param="timeout",
        )
    return float(value)


@contextlib.contextmanager
def write_timeout(seconds: float | None) -> Iterator[None]:
    """The writes inside the block retry conflicts for at most ``seconds`` (see
    :func:`retrying`); a public release function wraps its work in this with its ``timeout=``
    (checked with :func:`check_timeout`)."""
    token = _timeout.set(seconds)
    try:
        yield
    finally:
        _timeout.reset(token)


def _pause(conflicts: int) -> float:
    """Seconds to wait after the ``conflicts``-th conflict in a row."""
    return min(_MAX_PAUSE, _FIRST_PAUSE * 2.0 ** min(conflicts - 1, 30)) * _jitter.uniform(0.5, 1)


def _gate(
    con: duckdb.DuckDBPyConnection, path: str | EllipsisType | None = ...
) -> threading.RLock | None:
    """The lock the writes of this process into ``con``'s database file take in turn (one
    per file; None for an in-memory database, which has no name to share it by). ``path``:
    that file (None: in memory) if the caller has just read it, else it is asked here."""
    if path is ...:
        path = scalar(con, _DATABASE_PATH)
    if not path:
        return None
    with _gates_lock:
        return _gates.setdefault(os.path.realpath(str(path)), threading.RLock())


def retrying(
    attempt: Callable[[], T],
    what: str,
    con: duckdb.DuckDBPyConnection,
    *,
    path: str | EllipsisType | None = ...,
) -> T:
    """Run ``attempt`` (one whole transaction on ``con``: it rolls back and raises
    :class:`~inftda_sql.ConcurrentWriteError` on a conflict) until it succeeds, for at most
    the seconds of :func:`write_timeout`; any other error ends it at once. ``path``: the file
    of ``con``'s current database (None: in memory), when the caller has just read it
    (:func:`write_settings`); else it is asked.

    With a timeout, the writes of this process into one database file take turns (a lock per
    file, waited for within the timeout): its threads then do not collide at all; a collision
    with a writer that does not take turns (SQL of the caller's on another cursor) pauses,
    exponentially and jittered, and retries. Without one (None or 0) the attempt runs once,
    as soon as called. Past the timeout, the error says how long it tried and what to do.
    """
    timeout = _timeout.get()
    if not timeout:
        return attempt()
    gate = _gate(con, path)
    started = time.monotonic()
    conflicts = 0
    while True:
        left = timeout - (time.monotonic() - started)
        error: ConcurrentWriteError | None = None
        if left > 0 and (gate is None or gate.acquire(timeout=left)):
            try:
                return attempt()
            except ConcurrentWriteError as conflict:
                error = conflict
                conflicts += 1
            finally:
                if gate is not None:
                    gate.release()
        waited = time.monotonic() - started
        pause = _pause(max(conflicts, 1))
        if error is None or waited + pause > timeout:
            raise ConcurrentWriteError(
                f"other writers kept this database busy: {what} waited {waited:.1f} s for "
                f"them (tried {conflicts} time(s), rolled back each time: nothing of it is "
                "recorded); run it again when they are done, or let it wait longer with ",
                Arg("timeout", max(60, 2 * math.ceil(timeout))),
                param="timeout",
            ) from error
        logger.debug("%s: write conflict %d, retry in %.3f s", what, conflicts, pause)
        time.sleep(pause)


def record_release(
    con: duckdb.DuckDBPyConnection,
    *,
    registered: Sequence[tuple[str, pa.Table]],
    targets: Sequence[Target | None],
    statements: Sequence[str],
    overwrite: bool,
    record: ReleaseRecord,
    source: Resolved,
    budget: Budget,
    guarantee: str,
    budget_override: bool,
    creates: Sequence[tuple[TableRef, str]] | None = None,
    path: str | EllipsisType | None = ...,
) -> ReleaseRecord:
    """The one write of every kind of release, in one transaction: check the budget again,
    replace (with ``overwrite``) or refuse what exists at ``targets``, run ``statements`` (the
    output and its view, reading the ``registered`` Arrow tables) and insert the ledger row;
    return the row as written (its ``release_id`` is assigned here, inside the transaction).

    ``creates``: what ``statements`` create, exactly (each place with its kind, ``"table"`` or
    ``"view"``, and nothing else); given, the catalog as read before them is carried over them
    (:meth:`.catalog.Memo.created`) instead of read again for the fingerprint and the ledger.
    ``path``: the current database's file, if just read (see :func:`retrying`).

    A conflict with another writer retries the whole transaction (:func:`retrying`) with the
    same registered tables: the released cells are those drawn once, before the write.
    The registered tables are unregistered afterwards whatever happened, with Ctrl-C deferred.
    """

    def attempt() -> ReleaseRecord:
        written = record
        with atomic(con, "the release"):
            for name, table in registered:
                con.register(name, table)
            made = [target.ref for target in targets if target is not None]
            # the catalog as this transaction sees it, read once (and again after a change)
            with remember(con, [*(ref.name for ref in made), *LIBRARY_TABLES]):
                ensure_tables(con, LEDGER_TABLE)
                note = check_budget(con, source, budget, guarantee, override=budget_override)
                if note and note not in written.non_private:
                    written = dataclasses.replace(written, non_private=[*written.non_private, note])
                for target in targets:
                    if target is not None:
                        _make_room(con, target, overwrite=overwrite)
                memo = active(con)
                carried = [(r.database, r.schema, r.name, kind) for r, kind in creates or ()]
                with (
                    contextlib.nullcontext()
                    if memo is None or creates is None
                    else memo.created(carried)
                ):
                    for statement in statements:
                        run(con, statement)
                written = dataclasses.replace(
                    written, release_id=next_release_id(con), base_tables=list(source.keys)
                )
                written = dataclasses.replace(written, fingerprint=fingerprint.take(con, made))
                insert_release(con, written)
        return written

    try:
        return retrying(attempt, "the release", con, path=path)
    finally:  # never hides the error that got us here, and Ctrl-C waits for it
        with critical():
            for name, _ in registered:
                with contextlib.suppress(duckdb.Error):
                    con.unregister(name)


def _make_room(con: duckdb.DuckDBPyConnection, target: Target, *, overwrite: bool) -> None:
    """Drop what exists at ``target`` (with ``overwrite``), or refuse to replace it."""
    kind = existing(con, target.ref)
    if kind is None:
        return
    if not overwrite:
        raise OutputExistsError(
            f"{target.spelling!r} already exists; pass ",
            Arg("overwrite", True),
            " or choose another ",
            Arg("output"),
            param="output",
        )
    memo = active(con)
    ref = target.ref
    with contextlib.nullcontext() if memo is None else memo.dropped(*ref.folded):
        run(con, _compile.drop_object(kind, ref.sql))


def write_release(
    con: duckdb.DuckDBPyConnection,
    names: _compile.TempNames,
    spec: TreeSpec,
    result: TopDownResult,
    *,
    output: Target | None,
    view: Target | None,
    overwrite: bool,
    record: ReleaseRecord,
    source: Resolved,
    budget: Budget,
    guarantee: str,
    budget_override: bool,
    paths: Sequence[pa.Table],
    measured: tuple[Target, Collector, Sequence[ChainTree]] | None = None,
    settings: tuple[bool, str | None] | None = None,
) -> ReleaseRecord:
    """Write a hierarchy release and its ledger row atomically (:func:`record_release`);
    return the ledger row as written.

    ``measured``: the table of noisy measurements to write with it (``measurements=True``), the
    values the mechanism drew and the public domain that decodes their cells.

    Without ``output`` (a release returned in memory only) no table is written, but the budget
    check and the ledger row are the same: every release spends budget. ``paths``: every chain's
    coded domain (its columns, row ``i`` the leaf of code ``i``), from which the released leaf
    codes are decoded. ``settings``: what :func:`write_settings` says, when the caller has read
    it already (the engine's prepare stage, in its one catalog read: see
    :meth:`.catalog.Memo.write_settings`); else it is asked here, one statement.
    """
    statements: list[str] = []
    registered: list[tuple[str, pa.Table]] = []
    creates: list[tuple[TableRef, str]] = []
    path: str | EllipsisType | None = ...
    if output is not None:
        ordered, path = write_settings(con) if settings is None else settings
        registered.append((names.released, released_table(spec, result, paths)))
        statements.append(
            _compile.write_output(spec, output.ref.sql, names.released, ordered=ordered)
        )
        creates.append((output.ref, "table"))
        if view is not None:
            bounds = view_bounds(record.details)  # public constants from the ledger row
            statements.append(_compile.levels_view(spec, view.ref.sql, output.ref.sql, bounds))
            creates.append((view.ref, "view"))
        if measured is not None:
            target, collector, chains = measured
            registered.append((names.measurements, collector.table(spec, chains, paths)))
            statements.append(_compile.copy_table(target.ref.sql, ident(names.measurements)))
            creates.append((target.ref, "table"))
    return record_release(
        con,
        registered=registered,
        targets=(output, view, None if measured is None else measured[0]),
        statements=statements,
        overwrite=overwrite,
        record=record,
        source=source,
        budget=budget,
        guarantee=guarantee,
        budget_override=budget_override,
        creates=creates,
        path=path,
    )


def write_settings(con: duckdb.DuckDBPyConnection) -> tuple[bool, str | None]:
    """What a write asks before its transaction, in one statement: whether DuckDB keeps the
    order rows are read in (``preserve_insertion_order``) and the file of the current
    database (None in memory: see :func:`retrying`)."""
    ordered, path = rows(con, render("write_output.settings"))[0]
    return str(ordered).lower() == "true", None if path is None else str(path)


def released_table(spec: TreeSpec, result: TopDownResult, paths: Sequence[pa.Table]) -> pa.Table:
    """The released cells decoded: every hierarchy column (from the coded domain) and the
    count, in the order of the leaf codes, chain after chain, which is the order of the
    hierarchy columns (the domain is coded in sorted order).

    Example:
        >>> import numpy as np, pyarrow as pa
        >>> from inftda_sql.core.spec import parse_hierarchy
        >>> from inftda_sql.core.tree import TopDownResult
        >>> spec = parse_hierarchy(["region", "city"])
        >>> geo = pa.table({"region": ["N", "N", "S"], "city": ["a", "b", "c"]})
        >>> result = TopDownResult((np.array([2, 0]),), np.array([4, 1]), ())
        >>> released_table(spec, result, [geo]).to_pylist()
        [{'region': 'N', 'city': 'a', 'count': 1}, {'region': 'S', 'city': 'c', 'count': 4}]
    """
    order = lex_order(result.codes, [table.num_rows for table in paths])
    columns: dict[str, pa.Array | pa.ChunkedArray] = {}
    for c, chain in enumerate(spec.chains):
        codes = result.codes[c] if order is None else result.codes[c][order]
        for col in chain:
            columns[col] = _decoded(paths[c].column(col), codes, ordered=c == 0)
    columns["count"] = pa.array(result.counts if order is None else result.counts[order])
    return pa.table(columns)


def _decoded(
    column: pa.Array | pa.ChunkedArray, codes: I64, *, ordered: bool
) -> pa.Array | pa.ChunkedArray:
    """``column[codes]``: a string column, when the released cells are at least as many as
    its rows, as a dictionary over it (no string is copied; DuckDB reads it as VARCHAR, the
    written table is the same), else gathered (from the domain's chunks as they lie when
    ``codes`` increase, ``ordered``)."""
    kind = column.type
    if (pa.types.is_string(kind) or pa.types.is_large_string(kind)) and codes.size >= len(column):
        values = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        index_type = pa.int32() if len(values) < 2**31 else pa.int64()
        return pa.DictionaryArray.from_arrays(pa.array(codes, index_type), values)
    if ordered:
        return take_sorted(column, codes)
    return column.take(pa.array(codes))
