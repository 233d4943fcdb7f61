"""Ctrl-C during a release: it cancels the release before the commit and waits after it.

A release either commits its output and its ledger row together or leaves nothing. Ctrl-C
(SIGINT) raises ``KeyboardInterrupt`` anywhere before the commit: the transaction rolls back and
the temporary objects are dropped. Three kinds of moments are protected:

* **critical blocks** (:class:`critical`): BEGIN, COMMIT, ROLLBACK and the cleanup run with
  Ctrl-C *deferred*: the signal is noted and delivered, to the handler that was in place, when
  the block ends. A cleanup is never cut in half, and an interrupt is never lost or turned into
  a database error;
* **after a commit** (:func:`committed`, inside a :class:`Scope`): once the release is recorded,
  Ctrl-C waits for the end of the outermost scope. ``release()`` is a scope: it finishes its
  cleanup, then raises ``KeyboardInterrupt`` (the release is recorded and complete). A command
  of the command line is a scope that does not raise: the work is done, so it exits 0;
* **DuckDB's own reports**: a Ctrl-C that arrives while a query runs comes back from DuckDB as
  ``RuntimeError('Query interrupted')``, and one that arrives while DuckDB runs Python code for
  the query (reading a registered Arrow table) as a DuckDB error whose text names the
  ``KeyboardInterrupt``; :func:`is_interrupt` recognises both, and the SQL helpers
  (:mod:`~inftda_sql.engines.duckdb.sql`) raise them as ``KeyboardInterrupt``.

Signals reach the main thread only: in any other thread all of this does nothing. A SIGINT
handler installed outside Python (``signal.getsignal`` is None) is left alone.

Example:
    >>> import signal
    >>> try:
    ...     with critical():
    ...         signal.raise_signal(signal.SIGINT)  # noted: the block goes on
    ...         print("the block finishes")
    ... except KeyboardInterrupt:
    ...     print("then the interrupt is delivered")
    the block finishes
    then the interrupt is delivered
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any

__all__ = [
    "QUERY_INTERRUPTED",
    "Scope",
    "committed",
    "critical",
    "is_interrupt",
    "settle_imports",
]

#: the text of the RuntimeError DuckDB raises when a Ctrl-C arrives during a query
QUERY_INTERRUPTED = "Query interrupted"
#: what DuckDB's error says when Python code it ran was interrupted (e.g. "reading the schema of
#: the object registered as 'x' failed: KeyboardInterrupt:", or a Python traceback ending so)
_PYTHON_INTERRUPT = "KeyboardInterrupt"

_Handler = Callable[[int, FrameType | None], Any] | int | None


def is_interrupt(exc: BaseException) -> bool:
    """True if ``exc`` is how a Ctrl-C surfaced: ``KeyboardInterrupt``, DuckDB's report of one
    during a query, or an error it caused: a C extension cut by Ctrl-C while it was imported or
    ran (pandas, which pyarrow imports on its first conversion, raises ``SystemError: ...
    returned a result with an exception set`` with the ``KeyboardInterrupt`` as its cause).

    Example:
        >>> is_interrupt(KeyboardInterrupt()), is_interrupt(RuntimeError("Query interrupted"))
        (True, True)
        >>> is_interrupt(RuntimeError("something else")), is_interrupt(ValueError("x"))
        (False, False)
        >>> cut = SystemError("<module> returned a result with an exception set")
        >>> cut.__cause__ = KeyboardInterrupt()
        >>> is_interrupt(cut)
        True
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if _is_interrupt_itself(current):
            return True
        current = current.__cause__ or current.__context__
    return False


def _is_interrupt_itself(exc: BaseException) -> bool:
    if isinstance(exc, KeyboardInterrupt):
        return True
    duckdb = sys.modules.get("duckdb")  # not imported: then exc is none of its errors
    if duckdb is not None and isinstance(exc, duckdb.Error):
        # its own interrupt, or a KeyboardInterrupt raised in Python code it ran for the query
        return isinstance(exc, duckdb.InterruptException) or _PYTHON_INTERRUPT in str(exc)
    return type(exc) is RuntimeError and str(exc) == QUERY_INTERRUPTED


class _State:
    """The process's SIGINT deferral (touched from the main thread only)."""

    def __init__(self) -> None:
        self.blocks = 0  # open critical blocks
        self.scopes: list[Scope] = []  # open scopes, outermost first
        self.held = False  # committed inside the open scopes: defer until the outermost ends
        self.pending = False  # a SIGINT arrived while deferred
        self.installed = False
        self.previous: _Handler = None
        self.settled = False  # settle_imports() has run


_state = _State()


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _note(signum: int, frame: FrameType | None) -> None:
    _state.pending = True


def _defer() -> None:
    """Note SIGINT instead of acting on it (until :func:`_resume`)."""
    if _state.installed or signal.getsignal(signal.SIGINT) is None:
        return
    _state.previous = signal.signal(signal.SIGINT, _note)
    _state.installed = True


def _resume(*, deliver: bool) -> bool:
    """Put the previous handler back; return whether a SIGINT came meanwhile and, if
    ``deliver``, hand it to that handler now (the default one raises KeyboardInterrupt)."""
    if _state.installed:
        signal.signal(signal.SIGINT, _state.previous)
        _state.installed = False
    pending, _state.pending = _state.pending, False
    if pending and deliver:
        signal.raise_signal(signal.SIGINT)
    return pending


def critical() -> _Critical:
    """A block Ctrl-C cannot cut (``with critical(): ...``): a SIGINT inside it is delivered
    when the outermost such block ends, or at the end of the outermost :class:`Scope` once
    :func:`committed` was called."""
    return _Critical()


class _Critical:
    def __enter__(self) -> None:
        if _main_thread():
            _state.blocks += 1
            _defer()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if not _main_thread():
            return
        _state.blocks -= 1
        if _state.blocks == 0 and not _state.held:
            _resume(deliver=True)


def settle_imports() -> None:
    """Finish pyarrow's lazy import of pandas with Ctrl-C deferred (once per process).

    pyarrow imports pandas, when it is installed, on its first conversion of Python or numpy
    values, wherever that happens. A Ctrl-C in the middle of that import leaves a half-built
    pandas behind (``SystemError``, then ``AttributeError: partially initialized module``) rather
    than a ``KeyboardInterrupt``. Done here, in a critical block, the import either completes or
    has not started when the interrupt is delivered. It costs nothing a release would not pay
    anyway.
    """
    if _state.settled:
        return
    with critical():
        import pyarrow as pa

        pa.array([0])  # pyarrow's pandas shim imports pandas here, if it is installed
        _state.settled = True


def committed() -> None:
    """Say that the work of the open scopes is recorded: from now on Ctrl-C waits for the end
    of the outermost :class:`Scope` (outside any scope this does nothing)."""
    if not (_main_thread() and _state.scopes):
        return
    _defer()
    _state.held = True
    for scope in _state.scopes:
        scope.committed = True


class Scope:
    """A span of work that commits at most once (a release; a command of the command line).

    Before :func:`committed`, Ctrl-C interrupts it as usual. After it, Ctrl-C waits for the end
    of the outermost scope, which then, by its options:

    * ``deliver=True``: hands the interrupt on (``KeyboardInterrupt`` after the scope's own
      cleanup: the work is recorded and complete);
    * ``deliver=False``: only sets :attr:`late` (the caller reports it and carries on);
    * ``keep=True``: ignores Ctrl-C for the rest of the process (a program whose result is
      decided: nothing may turn its exit code 0 into a death by SIGINT while Python shuts down).

    Attributes:
        committed: :func:`committed` was called inside this scope.
        late: a Ctrl-C arrived after the commit (and was not delivered).
    """

    def __init__(self, *, deliver: bool = True, keep: bool = False) -> None:
        self.deliver = deliver
        self.keep = keep
        self.committed = False
        self.late = False

    def __enter__(self) -> Scope:
        if _main_thread():
            _state.scopes.append(self)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if not _main_thread() or self not in _state.scopes:
            return
        _state.scopes.remove(self)
        if _state.scopes or not _state.held:
            return
        _state.held = False
        if self.keep:
            self.late = _state.pending
            _state.installed = False  # our handler is replaced for good
            _state.pending = False
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            return
        if _state.blocks:  # still inside a critical block: it delivers when it ends
            self.late = _state.pending
            return
        self.late = _state.pending
        _resume(deliver=self.deliver)
