"""Names resolved against the DuckDB catalog: :func:`lookup`, :func:`base_tables`,
:func:`resolve`, :func:`resolve_target` and the checks of an output's place (see the package
docstring for how a name binds).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import duckdb

from ...._errors import Arg, InputDataError, InternalError, SpecError
from ....core.names import (
    split_name,
)
from .. import compile as _compile
from ..compile import describe
from ..sql import ident, render, rows, run, scalar
from .memo import active
from .view_files import files_read, in_memory, reads_files

#: plan leaves that read no data (constants, generators, references to a CTE planned elsewhere)
_DATA_FREE = frozenset(
    {"DUMMY_SCAN", "EXPRESSION_GET", "RANGE", "GENERATE_SERIES", "CTE_SCAN", "DELIM_GET"}
    | {"EMPTY_RESULT"}
)


def _spell(part: str) -> str:
    plain = part.isascii() and part.replace("_", "a").isalnum() and not part[0].isdigit()
    return part if plain else ident(part)


@dataclass(frozen=True)
class TableRef:
    """A table or view of the catalog: its database, schema and name as the catalog spells
    them. Compare with :meth:`same` (DuckDB names are case-insensitive)."""

    database: str
    schema: str
    name: str

    @property
    def sql(self) -> str:
        """The fully qualified, quoted name."""
        return ".".join(ident(p) for p in (self.database, self.schema, self.name))

    @property
    def folded(self) -> tuple[str, str, str]:
        return (self.database.lower(), self.schema.lower(), self.name.lower())

    def same(self, other: TableRef) -> bool:
        return self.folded == other.folded

    def key(self, home: str) -> str:
        """The name budgets and the ledger use: ``schema.name`` for a table of ``home`` (the
        database holding the ledger, whatever its file is called), else
        ``database.schema.name``.

        Example:
            >>> TableRef("work", "main", "trips").key("work")
            'main.trips'
            >>> TableRef("temp", "main", "my trips").key("work")
            'temp.main."my trips"'
        """
        parts: tuple[str, ...] = (self.schema, self.name)
        if self.database.lower() != home.lower():
            parts = (self.database, *parts)
        return ".".join(_spell(p) for p in parts)

    def __str__(self) -> str:
        return ".".join(_spell(p) for p in (self.database, self.schema, self.name))


@dataclass(frozen=True)
class Resolved:
    """What a name or relation is in the catalog and which base tables it reads.

    ``kind`` is ``"table"``, ``"view"``, ``"temp table"``, ``"temp view"``, ``"relation"``
    (a relation or declared values: ``ref`` is None), ``"parquet file"`` or ``"CSV file"``
    (``spelling`` is then the absolute path or glob, ``files`` the files it names), or a data
    frame's label (``"pandas DataFrame"``, ``"polars DataFrame"``, ``"Arrow table"``; ``ref`` is
    None). ``reads`` are the base tables read (through views), ``outside`` what is read from
    outside the catalog (files read through a view or relation, Arrow tables, data frames), by
    plan operator. ``home`` is the database that holds the ledger. ``files`` are also the files
    a view or relation reads (:func:`.view_files.files_read`), and ``files_complete`` says
    whether they are known to be all it reads (False: a file read by a computed path, a table
    function not known). ``memory`` identifies the data held by the process that it reads (the
    registrations DuckDB scans, a data frame's object and column buffers:
    :func:`~inftda_sql._frames.held_data`), to tell a domain made from the input's data frame.
    """

    spelling: str
    ref: TableRef | None
    kind: str
    reads: tuple[TableRef, ...]
    outside: tuple[str, ...]
    home: str
    files: tuple[str, ...] = ()
    files_complete: bool = True
    memory: tuple[str, ...] = ()

    @property
    def keys(self) -> tuple[str, ...]:
        """The budget keys of the base tables read (see :meth:`TableRef.key`), then the
        absolute paths of the files read."""
        return tuple(r.key(self.home) for r in self.reads) + self.files

    @property
    def reads_files(self) -> bool:
        """Whether it reads files: by their paths, or through a view or relation (named in
        ``files`` or not: see ``files_complete``)."""
        return bool(self.files) or reads_files(self.outside)

    @property
    def named_in_full(self) -> bool:
        """Whether :attr:`keys` name everything it reads: catalog tables, and files whose list
        is complete (a view or relation over named files); not a data frame or Arrow table, not
        a file read by a computed path or an unknown table function. Budgets charge such a
        source, and ``publish()`` checks it, by its keys alone."""
        if not self.outside:
            return True
        frames = any(in_memory(op) for op in self.outside)
        return bool(self.files) and self.files_complete and not frames


@dataclass(frozen=True)
class Target:
    """Where an output goes: its place in the catalog and what is there now (``existing``:
    ``"table"``, ``"view"`` or None)."""

    spelling: str
    ref: TableRef
    existing: str | None


@dataclass(frozen=True)
class _Context:
    database: str
    schema: str
    search: tuple[tuple[str, str], ...]


def _context(con: duckdb.DuckDBPyConnection) -> _Context:
    memo = active(con)
    if memo is not None:
        database, schema, path = memo.context()
    else:
        database, schema, path = rows(con, render("catalog.context"))[0]
    search: list[tuple[str, str]] = []
    for entry in str(path or "").split(","):
        with contextlib.suppress(ValueError):
            parts = split_name(entry.strip())
            if len(parts) == 1:
                search.append((str(database), parts[0]))
            elif len(parts) == 2:
                search.append((parts[0], parts[1]))
    return _Context(str(database), str(schema), tuple(search))


def _parts(name: object, param: str | None, role: str) -> tuple[str, ...]:
    parts: tuple[str, ...] = ()
    if isinstance(name, str):
        with contextlib.suppress(ValueError):
            parts = split_name(name)
    if not 1 <= len(parts) <= 3:
        raise SpecError(
            f"{role} must be a table or view name (table, schema.table or "
            f"database.schema.table), got {name!r}",
            param=param,
        )
    return parts


def _objects(con: duckdb.DuckDBPyConnection, name: str) -> list[tuple[TableRef, str]]:
    memo = active(con)
    if memo is not None:
        found: list[tuple[Any, ...]] = list(memo.objects(name))
    else:
        found = rows(con, render("catalog.objects"), {"name": name})
    return [(TableRef(str(d), str(s), str(n)), str(kind)) for d, s, n, kind in found]


def _databases(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[str, bool]]:
    memo = active(con)
    found = memo.databases() if memo is not None else rows(con, render("catalog.databases"))
    return {str(d).lower(): (str(d), bool(ro)) for d, ro in found}


def _schemas(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str]]:
    memo = active(con)
    if memo is not None:
        return memo.schemas()
    return [(str(d), str(s)) for d, s in rows(con, render("catalog.schemas"))]


def _locations(
    con: duckdb.DuckDBPyConnection, parts: tuple[str, ...], ctx: _Context, param: str | None
) -> list[tuple[str, str]]:
    """The (database, schema) pairs a name's last part is looked up in, in DuckDB's order."""
    if len(parts) == 3:
        return [(parts[0], parts[1])]
    if len(parts) == 2:
        first = parts[0].lower()
        is_schema = any(
            str(d).lower() == ctx.database.lower() and str(s).lower() == first
            for d, s in _schemas(con)
        )
        is_database = first in _databases(con)
        if is_schema and is_database:
            raise SpecError(
                f"{'.'.join(parts)!r} is ambiguous: {parts[0]!r} is both a schema and a "
                f"database; name it fully, e.g. {ctx.database}.{'.'.join(parts)}",
                param=param,
            )
        return [(parts[0], "main")] if is_database else [(ctx.database, parts[0])]
    return [("temp", "main"), (ctx.database, ctx.schema), *ctx.search]


def lookup(
    con: duckdb.DuckDBPyConnection, name: str, *, param: str | None = None, role: str = "name"
) -> tuple[TableRef, str] | None:
    """The table or view ``name`` denotes and its kind (``"table"``/``"view"``), or None."""
    return find_object(con, _parts(name, param, role), None, param)


def find_object(
    con: duckdb.DuckDBPyConnection,
    parts: tuple[str, ...],
    where: tuple[str, str] | None,
    param: str | None = None,
) -> tuple[TableRef, str] | None:
    """The table or view the name ``parts`` binds to and its kind, or None: in the current
    database and schema, or with ``where`` (database, schema) in those, as the body of a view
    stored there is bound (temporary objects first, then the search path, as DuckDB does)."""
    found = _objects(con, parts[-1])  # first: a name the catalog memo lacks is read with it
    ctx = _context(con)
    if where is not None:
        ctx = _Context(where[0], where[1], ctx.search)
    for database, schema in _locations(con, parts, ctx, param):
        for ref, kind in found:
            if ref.database.lower() == database.lower() and ref.schema.lower() == schema.lower():
                return ref, kind
    return None


def object_kind(con: duckdb.DuckDBPyConnection, name: str) -> str | None:
    """'table' or 'view' if ``name`` (optionally qualified) exists, else None."""
    try:
        found = lookup(con, name)
    except SpecError:
        return None
    return None if found is None else found[1]


def base_tables(
    con: duckdb.DuckDBPyConnection, source_sql: str
) -> tuple[tuple[TableRef, ...], tuple[str, ...]]:
    """The base tables ``SELECT * FROM source_sql`` reads, and the plan operators that read
    from outside the catalog (e.g. ``READ_CSV``, ``PYTHON_ARROW_SCAN``).

    Example:
        >>> import duckdb
        >>> con = duckdb.connect()
        >>> _ = con.execute("CREATE TABLE trips (a INTEGER); CREATE VIEW v AS FROM trips")
        >>> reads, outside = base_tables(con, "(SELECT * FROM v WHERE a IN (SELECT 1))")
        >>> [str(r) for r in reads], outside
        (['memory.main.trips'], ())
    """
    memo = active(con)
    if memo is not None and memo.keep_explain:  # set once for the block, restored at its end
        if memo.restore_explain is None and memo.explain_output() != "all":
            previous = memo.explain_output()
            run(con, _compile.set_explain_output("all"))
            memo.restore_explain = previous
        plans = rows(con, _compile.explain(source_sql))
    else:
        if memo is not None:
            previous = memo.explain_output()
        else:
            previous = str(scalar(con, render("catalog.explain_output"))).lower()
        run(con, _compile.set_explain_output("all"))
        try:
            plans = rows(con, _compile.explain(source_sql))
        finally:
            run(con, _compile.set_explain_output(previous))
    logical = next((text for kind, text in plans if kind == "logical_plan"), None)
    if logical is None:
        raise InternalError("DuckDB's EXPLAIN gave no logical plan to read the tables from")
    reads: dict[tuple[str, str, str], TableRef] = {}
    outside: set[str] = set()
    stack: list[Any] = list(json.loads(logical))
    while stack:
        node = stack.pop()
        children = node.get("children") or []
        table = (node.get("extra_info") or {}).get("Table")
        parts: tuple[str, ...] = ()
        if isinstance(table, str):
            with contextlib.suppress(ValueError):
                parts = split_name(table)
        if len(parts) == 3:
            ref = TableRef(*parts)
            reads.setdefault(ref.folded, ref)
        elif table is not None or (not children and node.get("name") not in _DATA_FREE):
            outside.add(str(node.get("name")))
        stack.extend(children)
    return tuple(sorted(reads.values(), key=lambda r: r.folded)), tuple(sorted(outside))


def home_database(con: duckdb.DuckDBPyConnection) -> str:
    """The database that holds the ledger: the current one."""
    memo = active(con)
    if memo is not None:
        return memo.context()[0]
    return str(scalar(con, render("catalog.current_database")))


def resolve(
    con: duckdb.DuckDBPyConnection, spelling: str, ref: TableRef | None, kind: str, sql: str
) -> Resolved:
    """The :class:`Resolved` identity of a source read by ``sql``.

    A table of a DuckDB database, read by its name, reads itself (its plan is one scan of it):
    inside a :func:`.memo.remember` block it is not planned again to be told so."""
    memo = active(con)
    if (
        memo is not None
        and ref is not None
        and kind == "table"
        and sql == ref.sql
        and memo.native(ref.database)
    ):
        reads: tuple[TableRef, ...] = (ref,)
        outside: tuple[str, ...] = ()
    else:
        reads, outside = base_tables(con, sql)
    files: tuple[str, ...] = ()
    complete = True
    memory: tuple[str, ...] = ()
    if outside:  # a view or relation over files or data frames: which ones, from its SQL
        found = files_read(con, sql)
        memory = found.memory
        if reads_files(outside):
            files, complete = found.files, found.complete
    if ref is not None and ref.database.lower() == "temp":
        kind = f"temp {kind}"
    return Resolved(
        spelling, ref, kind, reads, outside, home_database(con), files, complete, memory
    )


def resolve_target(
    con: duckdb.DuckDBPyConnection, name: object, *, param: str = "output"
) -> Target:
    """Where ``CREATE TABLE name`` puts a table, checked: the database is attached and writable
    and the schema exists; ``existing`` says what is there now."""
    parts = _parts(name, param, "output")
    assert isinstance(name, str)
    ctx = _context(con)
    if len(parts) == 1:
        database, schema = ctx.database, ctx.schema
    else:
        database, schema = _locations(con, parts, ctx, param)[0]
    databases = _databases(con)
    if database.lower() not in databases:
        raise SpecError(
            f"{name!r} names database {database!r}, which is not attached to this connection; "
            "ATTACH it first or choose another ",
            Arg(param),
            param=param,
        )
    database, read_only = databases[database.lower()]
    if database.lower() in ("temp", "system"):
        raise SpecError(
            f"{name!r} would be a {database} table, which vanishes with the connection (or "
            "cannot be written) while its ledger row stays; choose a table of the database: ",
            Arg(param),
            param=param,
        )
    schemas = [
        str(s)
        for d, s in _schemas(con)
        if str(d).lower() == database.lower() and str(s).lower() == schema.lower()
    ]
    if not schemas:
        raise SpecError(
            f"schema {schema!r} does not exist in database {database!r}, so {name!r} cannot be "
            f"created; run CREATE SCHEMA {_spell(schema)} first or choose another ",
            Arg(param),
            param=param,
        )
    if read_only:
        raise InputDataError(
            f"database {database!r} is open read-only, so {name!r} cannot be written; connect "
            "without read_only=True (and close other programs holding the file)",
            param=param,
        )
    existing = [
        (ref, kind)
        for ref, kind in _objects(con, parts[-1])
        if ref.database.lower() == database.lower() and ref.schema.lower() == schemas[0].lower()
    ]
    if existing:
        return Target(name, existing[0][0], existing[0][1])
    return Target(name, TableRef(database, schemas[0], parts[-1]), None)


def check_ledger_writable(con: duckdb.DuckDBPyConnection) -> None:
    """Refuse a release that would write no table when its ledger row cannot be written: every
    release is recorded in the database that holds the ledger (the current one)."""
    home = home_database(con)
    found = _databases(con).get(home.lower())
    if found is not None and found[1]:
        raise InputDataError(
            f"database {home!r} is open read-only, so the ledger row of this release cannot be "
            "recorded (every release is, even one returned in memory only); connect without "
            "read_only=True",
            param="return_as",
        )


def existing(con: duckdb.DuckDBPyConnection, ref: TableRef) -> str | None:
    """What is at exactly ``ref`` now: ``"table"``, ``"view"`` or None."""
    for found, kind in _objects(con, ref.name):
        if found.same(ref):
            return kind
    return None


def reads_view(con: duckdb.DuckDBPyConnection, view: TableRef, sources: Sequence[str]) -> bool:
    """Whether any of ``sources`` (SQL) reads the view ``view``: they are bound without it,
    inside a transaction that is rolled back (views keep no dependency list in DuckDB)."""
    if not sources:
        return False
    memo = active(con)
    with contextlib.nullcontext() if memo is None else memo.unchanged():
        run(con, "BEGIN TRANSACTION")
        try:
            run(con, _compile.drop_object("view", view.sql))
            # bound together: one fails to bind (reads the view) if and only if all together do
            each = ", ".join(f"(SELECT * FROM {sql}) AS s{i}" for i, sql in enumerate(sources))
            try:
                rows(con, describe(f"(SELECT 1 FROM {each})"))
            except duckdb.Error:
                return True
            return False
        finally:
            run(con, "ROLLBACK")
