"""One read of the catalog for many questions: the fixed cost of a release (issue 26).

A release asks the catalog the same few things many times: where an unqualified name is looked
up (the current database and schema, the search path), which databases are attached and
writable, which schemas exist, and what each of its names (input, domains, outputs, the
ledger's tables) denotes. Asked one by one, that was some forty statements per release. Inside
a :func:`remember` block, :mod:`.names` asks a :class:`Memo` instead, which reads all of it in
ONE statement (``catalog.snapshot``) and answers from that read while it holds.

**It holds only while nothing changed.** Every statement run through :mod:`..sql` that is not
read-only (DDL, ``BEGIN``/``COMMIT``/``ROLLBACK``, ``SET``, ``ATTACH``, ``USE``; see
:func:`..sql.catalog_epoch`) and every registration of a relation or data frame moves the
catalog epoch, and the next question reads the catalog again. Nothing is kept after the block:
a user's statement between two releases (or between a release's stages, which run outside any
block) is always seen. Only what the block's owner knows for sure is carried over a change:
:meth:`Memo.dropped` (an object the write just dropped, inside its transaction),
:meth:`Memo.created` (the objects the write just created there) and :meth:`Memo.unchanged` (a
probe transaction that was rolled back).

The names are still resolved exactly as before, in the catalog, by the same rules
(:func:`.names.lookup`): only the number of round trips changes.

``explain_output``: :func:`.names.base_tables` needs ``'all'`` for its ``EXPLAIN``; inside a
block it is set once and the caller's value restored when the block ends.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextvars import ContextVar
from typing import Any, TypeVar

import duckdb

from .. import compile as _compile
from ..compile import string_literal
from ..sql import catalog_epoch, render, rows, run

__all__ = ["Memo", "active", "remember"]

T = TypeVar("T")


class Memo:
    """What one read of the catalog said (see the module docstring); ask it only through
    :func:`active`, which gives it for its own connection only."""

    def __init__(
        self, con: duckdb.DuckDBPyConnection, names: Iterable[str], *, explain: bool = False
    ) -> None:
        self.con = con
        self.keep_explain = explain  # base_tables may leave explain_output 'all' till the end
        self._names: set[str] = set(names)
        self._epoch: int | None = None  # the epoch of the last read (None: none yet)
        self._context: tuple[str, str, str] = ("", "", "")
        self._explain = ""
        self._databases: list[tuple[str, bool]] = []
        self._native: set[str] = set()  # DuckDB's own databases (not a SQLite, Postgres ...)
        self._schemas: list[tuple[str, str]] = []
        self._objects: dict[str, list[tuple[str, str, str, str]]] = {}
        self._folded: dict[str, str] = {}  # a name asked about -> lower-cased as DuckDB does
        # what callers computed from this read: key -> (the name it is about, or None; value)
        self._derived: dict[str, tuple[str | None, Any]] = {}
        self._settings: tuple[bool, str | None] | None = None  # see write_settings()
        self.restore_explain: str | None = None  # explain_output to set back at the end
        self.reads = 0  # how many times the catalog was read (for tests)

    @property
    def valid(self) -> bool:
        return self._epoch is not None and self._epoch == catalog_epoch()

    def _fresh(self, name: str | None = None) -> None:
        if self.valid and (name is None or name in self._folded):
            return
        if name is not None:
            self._names.add(name)
        epoch = catalog_epoch()  # before the read: a change while it runs is not missed
        names = ", ".join(string_literal(n) for n in sorted(self._names))
        found = rows(self.con, render("catalog.snapshot", names=names))
        self.reads += 1
        objects: dict[str, list[tuple[str, str, str, str]]] = {}
        self._databases, self._schemas, self._folded, self._native = [], [], {}, set()
        ordered, files = True, {}
        for what, a, b, c, d, flag in found:
            if what == "context":
                self._context = (str(a), str(b), str(c or ""))
                self._explain = str(d).lower()
                ordered = bool(flag)
            elif what == "database":
                self._databases.append((str(a), bool(flag)))
                files[str(a)] = None if c is None else str(c)
                if str(b).lower() == "duckdb":
                    self._native.add(str(a).lower())
            elif what == "schema":
                self._schemas.append((str(a), str(b)))
            elif what == "name":
                self._folded[str(a)] = str(d)
            else:
                objects.setdefault(str(d), []).append((str(a), str(b), str(c), str(what)))
        # the order of the one-name query: tables first, then views
        self._objects = {k: sorted(v, key=lambda o: o[3] != "table") for k, v in objects.items()}
        self._derived = {}
        self._settings = (ordered, files.get(self._context[0]))
        self._epoch = epoch

    def context(self) -> tuple[str, str, str]:
        """The current database, the current schema and the search path."""
        self._fresh()
        return self._context

    def explain_output(self) -> str:
        """The connection's ``explain_output`` (lower case), as the caller left it."""
        self._fresh()
        return self.restore_explain or self._explain

    def write_settings(self) -> tuple[bool, str | None] | None:
        """What :func:`..write.write_settings` asks, as the last read of this block said it
        (None before any read; never a read of its own): whether DuckDB keeps the insertion
        order, and the file of the current database (None in memory). A release's own
        statements change neither (it never sets ``preserve_insertion_order``, never runs
        ``USE``), so its prepare stage hands them to its write."""
        return self._settings

    def databases(self) -> list[tuple[str, bool]]:
        """(name, read-only) of every attached database."""
        self._fresh()
        return list(self._databases)

    def native(self, database: str) -> bool:
        """Whether ``database`` is a DuckDB database (not one attached through an extension)."""
        self._fresh()
        return database.lower() in self._native

    def schemas(self) -> list[tuple[str, str]]:
        """(database, schema) of every schema."""
        self._fresh()
        return list(self._schemas)

    def objects(self, name: str) -> list[tuple[str, str, str, str]]:
        """(database, schema, name, kind) of every table and view whose name is ``name`` in
        any case (DuckDB's ``lower`` on both sides), tables first."""
        self._fresh(name)
        return list(self._objects.get(self._folded[name], ()))

    def derived(self, key: str, compute: Callable[[], T], *, about: str | None = None) -> T:
        """``compute()``, remembered while this read holds (e.g. the columns of a ledger
        table, which only a statement can change). ``about``: the name of the one object it
        depends on; then it is kept over a :meth:`dropped` or :meth:`created` block that
        touches other objects only (without it, such a block forgets it)."""
        self._fresh()
        if key not in self._derived:
            value = compute()
            if not self.valid:  # compute() itself changed something: nothing to keep
                return value
            self._derived[key] = (None if about is None else about.lower(), value)
        found: T = self._derived[key][1]
        return found

    def _forget_about(self, names: Iterable[str]) -> None:
        """Forget what was derived about any of ``names`` (or about nothing in particular)."""
        touched = {name.lower() for name in names}
        self._derived = {
            k: v for k, v in self._derived.items() if v[0] is not None and v[0] not in touched
        }

    @contextlib.contextmanager
    def unchanged(self) -> Iterator[None]:
        """A block that leaves the catalog as it found it (a probe transaction rolled back):
        what was read before it still holds after it."""
        held = self.valid
        yield
        if held:
            self._epoch = catalog_epoch()

    @contextlib.contextmanager
    def dropped(self, database: str, schema: str, name: str) -> Iterator[None]:
        """A block that drops exactly this object (inside the caller's transaction, where no
        other writer's change is seen): the rest of what was read still holds after it."""
        held = self.valid
        yield
        if not held:
            return
        key = (database.lower(), schema.lower(), name.lower())
        for entries in self._objects.values():
            entries[:] = [o for o in entries if (o[0].lower(), o[1].lower(), o[2].lower()) != key]
        self._forget_about([name])
        self._epoch = catalog_epoch()

    @contextlib.contextmanager
    def created(self, objects: Sequence[tuple[str, str, str, str]]) -> Iterator[None]:
        """A block that creates exactly ``objects`` ((database, schema, name, kind) as the
        catalog will spell them, kind ``"table"`` or ``"view"``) where nothing was, inside the
        caller's transaction (where no other writer's change is seen), and changes nothing
        else: what was read before it, with these objects added, still holds after it. An
        object whose name was not among the names asked about (its lower-casing by DuckDB is
        then unknown) makes the next question read the catalog again."""
        held = self.valid
        yield
        if not held or any(name not in self._folded for _, _, name, _ in objects):
            return
        for database, schema, name, kind in objects:
            entries = self._objects.setdefault(self._folded[name], [])
            entries.append((database, schema, name, kind))
            entries.sort(key=lambda o: o[3] != "table")
        self._forget_about(name for _, _, name, _ in objects)
        self._epoch = catalog_epoch()


_active: ContextVar[Memo | None] = ContextVar("inftda_sql_catalog_memo", default=None)


def active(con: duckdb.DuckDBPyConnection) -> Memo | None:
    """The memo of the innermost :func:`remember` block for ``con`` (this very connection
    object), or None: then every question is a statement of its own."""
    memo = _active.get()
    return memo if memo is not None and memo.con is con else None


@contextlib.contextmanager
def remember(
    con: duckdb.DuckDBPyConnection, names: Iterable[str] = (), *, explain: bool = False
) -> Iterator[Memo]:
    """Answer the catalog questions asked on ``con`` inside the block from one read
    (``names``: the names that will be asked about, read at once; others are read when asked).

    ``explain``: :func:`.names.base_tables` sets ``explain_output`` once for the whole block
    and it is set back at the end (only for a block outside any transaction, where a failed
    statement cannot keep the setting from being restored)."""
    memo = Memo(con, names, explain=explain)
    token = _active.set(memo)
    try:
        yield memo
    finally:
        _active.reset(token)
        if memo.restore_explain is not None:
            with contextlib.suppress(duckdb.Error):
                run(con, _compile.set_explain_output(memo.restore_explain))
