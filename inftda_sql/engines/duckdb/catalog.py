"""Resolve user-named tables, views and relations against the DuckDB catalog: ONE step.

Every name the package is given (a release's input, domains and output, ``set_budget()``'s table,
``publish()``'s public tables, ``evaluate()``'s and ``plan()``'s sources) goes through here:

* :func:`lookup` finds what a name (``table``, ``schema.table`` or ``database.schema.table``, any
  case, double quotes for odd names) denotes, the way DuckDB binds it: an unqualified name is
  searched in the temporary objects first, then in the current schema, then the search path.
  It becomes a :class:`TableRef` (database, schema, name), and the SQL that reads it names it
  fully, so what is read is what was resolved.
* :func:`base_tables` asks DuckDB's binder which base tables a source reads: the logical plan of
  ``SELECT * FROM source`` as bound, before the optimizer prunes anything, lists every table
  scanned, through views (bound in their own schema, as DuckDB does), relations, subqueries and
  CTEs. A source that reads anything else (a file, an Arrow table, a data frame, a catalog
  function) reports it in ``outside``, so budgets can refuse what they cannot charge.
  (``duckdb.get_table_names`` is not used: it reports the names as spelled inside view bodies,
  which DuckDB resolves in the view's schema, so ``trips`` there may be ``s.trips``.)
* :func:`resolve_target` places an output: the database and schema ``CREATE TABLE`` would use,
  which must exist and be writable, and the object already there, if any.
* :func:`resolve_source` turns a name, a file, a relation, a data frame (pandas, polars, Arrow)
  or a ``{column: [values]}`` mapping into a :class:`Source`: SQL to read, columns, and its
  :class:`Resolved` identity. Relations, data frames and mappings are registered as a TEMPORARY
  view of the connection (never a view of the database), dropped when the caller is done.

**Files are base tables too.** A parquet or CSV file named by its path (:func:`file_spelling`:
a ``pathlib.Path``, or a string with a path separator, a glob character or a ``.parquet``,
``.csv`` or ``.tsv`` ending, optionally ``.gz``/``.zst``) is resolved by :func:`resolve_files`
to the absolute paths of the files it names (symbolic links followed; a glob to the files it
matches when the release starts, sorted), and read by exactly that list. Each resolved path is
a budget key, like ``schema.table`` for a table: a release of a glob is charged to every file it
read, as a join is charged to every table. (A view or relation that reads a file is still
"outside" the catalog: DuckDB's plan does not say which file it reads.) To name a table whose
name ends in ``.csv`` (schema ``s``, table ``csv``), quote it: ``s."csv"``.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from ..._errors import Arg, DomainError, InftdaError, InputDataError, InternalError, SpecError
from ..._frames import frame_kind, frame_label, mapping_table, not_a_frame_hint
from ...core.names import (
    FILE_FORMATS,
    GLOB_CHARS,
    file_format,
    file_spelling,
    file_stem,
    is_file_key,
    split_name,
)
from . import compile as _compile
from .compile import describe, drop_temp_view
from .csv_errors import check_csv_fields
from .sql import ident, render, rows, run, scalar

__all__ = [
    "FILE_FORMATS",
    "LIBRARY_PREFIX",
    "FileInput",
    "Resolved",
    "Source",
    "TableRef",
    "Target",
    "base_tables",
    "check_domain_types",
    "check_ledger_writable",
    "check_scalar_type",
    "count_column",
    "drop_temp",
    "existing",
    "file_spelling",
    "file_stem",
    "home_database",
    "is_file_key",
    "is_wide_number",
    "join_type",
    "lookup",
    "object_kind",
    "reads_view",
    "resolve",
    "resolve_files",
    "resolve_source",
    "resolve_target",
    "split_name",
    "type_family",
]

_INTEGER_TYPES = {
    "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT",
    "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT",
}  # fmt: skip

#: the prefix of every temporary object a release creates (reserved, like the library's tables)
LIBRARY_PREFIX = "__inftda"

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
    plan operator. ``home`` is the database that holds the ledger.
    """

    spelling: str
    ref: TableRef | None
    kind: str
    reads: tuple[TableRef, ...]
    outside: tuple[str, ...]
    home: str
    files: tuple[str, ...] = ()

    @property
    def keys(self) -> tuple[str, ...]:
        """The budget keys of the base tables read (see :meth:`TableRef.key`), then the
        absolute paths of the files read."""
        return tuple(r.key(self.home) for r in self.reads) + self.files


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
    found = rows(con, render("catalog.objects"), {"name": name})
    return [(TableRef(str(d), str(s), str(n)), str(kind)) for d, s, n, kind in found]


def _databases(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[str, bool]]:
    return {str(d).lower(): (str(d), bool(ro)) for d, ro in rows(con, render("catalog.databases"))}


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
            for d, s in rows(con, render("catalog.schemas"))
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
    parts = _parts(name, param, role)
    found = _objects(con, parts[-1])
    for database, schema in _locations(con, parts, _context(con), param):
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
    return str(scalar(con, render("catalog.current_database")))


def resolve(
    con: duckdb.DuckDBPyConnection, spelling: str, ref: TableRef | None, kind: str, sql: str
) -> Resolved:
    """The :class:`Resolved` identity of a source read by ``sql``."""
    reads, outside = base_tables(con, sql)
    if ref is not None and ref.database.lower() == "temp":
        kind = f"temp {kind}"
    return Resolved(spelling, ref, kind, reads, outside, home_database(con))


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
        for d, s in rows(con, render("catalog.schemas"))
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
    run(con, "BEGIN TRANSACTION")
    try:
        run(con, _compile.drop_object("view", view.sql))
        for sql in sources:
            try:
                rows(con, describe(sql))
            except duckdb.Error:
                return True
        return False
    finally:
        run(con, "ROLLBACK")


# ----------------------------------------------------------------------------------------------
# files named by their path

_KIND = {"parquet": "parquet file", "csv": "CSV file"}


@dataclass(frozen=True)
class FileInput:
    """Files named by a path or glob: ``pattern`` absolute (folders resolved, the glob part as
    typed), ``files`` the absolute paths read (symbolic links followed, sorted), ``format``
    ``"parquet"`` or ``"csv"``."""

    pattern: str
    files: tuple[str, ...]
    format: str

    @property
    def kind(self) -> str:
        return _KIND[self.format]


def _absolute_pattern(text: str) -> str:
    """A glob made absolute: the folders before the first glob character resolved."""
    absolute = os.path.abspath(os.path.expanduser(text))
    parts = Path(absolute).parts
    fixed = next(i for i, part in enumerate(parts) if GLOB_CHARS & set(part))
    head = Path(*parts[:fixed]).resolve()
    return str(head.joinpath(*parts[fixed:]))


def resolve_files(
    name: str | os.PathLike[str],
    *,
    role: str,
    param: str | None = None,
    error: type[InftdaError] = InputDataError,
) -> FileInput:
    """The files a path or glob names, resolved (see :class:`FileInput`); a clear error when
    it names none, a folder, or a format this package does not read."""
    text = os.fspath(name)
    if "://" in text:
        raise error(
            f"{role} {text!r} is a URL; download the file first and name its local path",
            param=param,
        )
    if GLOB_CHARS & set(text):
        pattern = _absolute_pattern(text)
        found = sorted(
            {
                str(Path(f).resolve())
                for f in glob.glob(pattern, recursive=True)
                if Path(f).is_file()
            }
        )
        if not found:
            raise error(f"{role} {text!r}: no file matches {pattern!r}", param=param)
    else:
        path = Path(os.path.expanduser(text)).resolve()
        pattern = str(path)
        if path.is_dir():
            raise error(
                f"{role} {text!r} is a folder; name a file, or its files with a glob such as "
                f"{os.path.join(text, '*.parquet')!r}",
                param=param,
            )
        if not path.is_file():
            raise error(
                f"{role} {text!r}: no such file ({pattern!r}); check the path, or name a table "
                "of the database",
                param=param,
            )
        found = [pattern]
    formats = (
        {file_format(f) for f in found} if file_format(pattern) is None else {file_format(pattern)}
    )
    if None in formats or len(formats) != 1:
        endings = ", ".join(sorted(FILE_FORMATS))
        raise error(
            f"{role} {text!r}: cannot tell one file format from the name"
            f"{'s of the files it matches' if len(found) > 1 else ''}; files ending in "
            f"{endings} (optionally .gz or .zst) are read directly, anything else: load it into "
            "a table first (CREATE TABLE t AS SELECT ...) and name the table",
            param=param,
        )
    (fmt,) = formats
    assert fmt is not None
    return FileInput(pattern, tuple(found), fmt)


def _file_source(
    con: duckdb.DuckDBPyConnection,
    text: str,
    *,
    role: str,
    error: type[InftdaError],
    param: str | None,
) -> Source:
    """A file input: read by the exact list of files resolved, charged to each of them."""
    files = resolve_files(text, role=role, param=param, error=error)
    sql = _compile.read_files(files.format, files.files)
    resolved = Resolved(
        files.pattern, None, files.kind, (), (), home_database(con), files=files.files
    )
    description = f"{files.kind} {files.pattern!r}"
    try:
        source = _source(con, sql, description, resolved)
    except duckdb.Error as exc:
        raise error(
            f"{role} {text!r} cannot be read as a {files.kind} ({_first_line(exc)})", param=param
        ) from None
    if files.format == "csv":
        try:
            check_csv_fields(con, files.pattern, files.files, source.names.values())
        except InputDataError as exc:
            raise error(f"{role}: ", *exc.parts, param=param) from None
    return source


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


@dataclass(frozen=True)
class Source:
    """A readable input or domain: SQL to select from, a description, its columns and types,
    and what it is in the catalog."""

    sql: str
    description: str
    columns: Mapping[str, str]  # lower-case name -> DuckDB type
    names: Mapping[str, str]  # lower-case name -> name as stored
    resolved: Resolved
    temp_view: str | None = None

    def column(self, name: str, role: str, error: type[Exception] = InputDataError) -> str:
        """The stored spelling of column ``name``, or a clear error listing what exists."""
        try:
            stored = self.names[name.lower()]
        except KeyError:
            available = ", ".join(self.names.values())
            raise error(
                f"column {name!r} ({role}) not in {self.description}; available: {available}"
            ) from None
        if not _same_for_duckdb(stored, name):
            raise error(
                f"column {name!r} ({role}) is spelled {stored!r} in {self.description}; DuckDB "
                f"ignores the case of ASCII letters only: write {stored!r}"
            )
        return stored


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _same_for_duckdb(a: str, b: str) -> bool:
    """Whether DuckDB binds identifier ``b`` to ``a``: it folds the case of ASCII letters only
    (``"MÜÑ"`` does not bind ``müñ``)."""
    return a.translate(_ASCII_LOWER) == b.translate(_ASCII_LOWER)


def type_family(duck_type: str) -> str:
    """Coarse type class used to check that input and domain columns can be joined."""
    t = duck_type.upper()
    if t in _INTEGER_TYPES:
        return "integer"
    if t.startswith("DECIMAL") and t.endswith(",0)"):
        return "integer"
    if t in ("FLOAT", "DOUBLE", "REAL") or t.startswith("DECIMAL"):
        return "fractional"
    if t in ("VARCHAR", "TEXT", "STRING") or t.startswith("ENUM") or t.startswith("VARCHAR"):
        return "string"
    return t


def is_wide_number(duck_type: str) -> bool:
    """Whether a numeric type can hold values whose sums overflow DuckDB's 128-bit integer
    arithmetic (HUGEINT, UHUGEINT, DECIMAL wider than 18 digits): such counts are summed so that
    no overflow error (which would print the values) can occur."""
    t = duck_type.upper().replace(" ", "")
    if t in ("HUGEINT", "UHUGEINT"):
        return True
    if t.startswith("DECIMAL(") and t.endswith(")"):
        width = t[len("DECIMAL(") :].split(",")[0]
        return width.isdigit() and int(width) > 18
    return False


def join_type(duck_type: str) -> str:
    """The type domain values are cast to: the input's, but ENUMs compare as VARCHAR."""
    return "VARCHAR" if duck_type.upper().startswith("ENUM") else duck_type


def count_column(src: Source, name: object, role: str = "count column") -> tuple[str, bool]:
    """The stored name of a count column of ``src`` and whether it holds integers."""
    if not isinstance(name, str) or not name:
        raise SpecError(f"{role} must be a column name, got {name!r}")
    stored = src.column(name, role)
    duck_type = src.columns[name.lower()]
    family = type_family(duck_type)
    if family not in ("integer", "fractional"):
        raise InputDataError(
            f"{role} {stored!r} has type {duck_type}, not a number (in {src.description}); pass "
            "the column holding the number of records per row, or CAST it in a view: "
            f"SELECT * REPLACE (CAST({stored} AS BIGINT) AS {stored}) FROM ..."
        )
    return stored, family == "integer"


def check_scalar_type(src: Source, column: str, role: str, error: type[InftdaError]) -> None:
    """Refuse a column of a nested type (LIST, ARRAY, STRUCT, MAP, UNION): a hierarchy level
    or a privacy unit needs one plain value per row."""
    duck_type = src.columns[column.lower()]
    t = duck_type.upper()
    if t.endswith("]") or t.startswith(("STRUCT", "MAP", "UNION")):
        stored = src.names[column.lower()]
        raise error(
            f"{role} {stored!r} of {src.description} has type {duck_type}, a nested type; it "
            "needs one plain value (text, number, date) per row: pick a field or UNNEST it in a "
            f"view first (e.g. SELECT * REPLACE ({stored}[1] AS {stored}) FROM ...)"
        )


def _describe(con: duckdb.DuckDBPyConnection, sql: str) -> list[tuple[str, str]]:
    return [(r[0], r[1]) for r in rows(con, describe(sql))]


def _source(
    con: duckdb.DuckDBPyConnection,
    sql: str,
    description: str,
    resolved: Resolved,
    temp_view: str | None = None,
) -> Source:
    cols = _describe(con, sql)
    return Source(
        sql,
        description,
        {n.lower(): t for n, t in cols},
        {n.lower(): n for n, _ in cols},
        resolved,
        temp_view=temp_view,
    )


def resolve_source(
    con: duckdb.DuckDBPyConnection,
    obj: object,
    *,
    role: str,
    temp_name: str,
    error: type[InftdaError] = InputDataError,
    param: str | None = None,
) -> Source:
    """Turn a table/view name, a file path, a DuckDB relation, a data frame or a column mapping
    into a :class:`Source`.

    ``role`` names the argument in messages (``"input table"``, ``"domain of chain 1"``).
    Files are read by their resolved paths (:func:`resolve_files`); relations, data frames
    (pandas, polars, Arrow) and mappings are registered as the temporary view ``temp_name`` of
    this connection, which the caller drops (:func:`drop_temp`).
    """
    path = file_spelling(obj)
    if path is not None:
        return _file_source(con, path, role=role, error=error, param=param)
    if isinstance(obj, str):
        found = lookup(con, obj, param=param, role=role)
        if found is None:
            tables = [r[0] for r in rows(con, render("catalog.some_tables"))]
            hint = ", ".join(tables) if tables else "(none)"
            raise error(
                f"{role} {obj!r} is not a table or view of this database; existing: {hint}",
                param=param,
            )
        ref, kind = found
        resolved = resolve(con, obj, ref, kind, ref.sql)
        return _source(con, ref.sql, f"{resolved.kind} {obj!r}", resolved)
    if isinstance(obj, duckdb.DuckDBPyRelation):
        _register(con, temp_name, obj, role, error, param)
        sql = ident(temp_name)
        resolved = resolve(con, "<relation>", None, "relation", sql)
        return _source(con, sql, f"the {role} relation", resolved, temp_name)
    frame = frame_kind(obj)
    if frame is not None:
        label = frame_label(frame)
        _register(con, temp_name, obj, role, error, param)
        sql = ident(temp_name)
        resolved = resolve(con, f"<{label}>", None, label, sql)
        return _source(con, sql, f"the {role} ({label})", resolved, temp_name)
    if isinstance(obj, Mapping):
        table = mapping_table(obj, role, error, param)
        con.register(temp_name, table)
        sql = ident(temp_name)
        resolved = resolve(con, "<declared values>", None, "relation", sql)
        return _source(con, sql, f"the declared {role}", resolved, temp_name)
    instead = not_a_frame_hint(obj)
    raise error(
        f"{role} must be a table or view name, a parquet/CSV file, a DuckDB relation, a pandas "
        f"or polars DataFrame, an Arrow table or a mapping {{column: [values]}}; got "
        f"{type(obj).__name__}" + (f": {instead}" if instead else ""),
        param=param,
    )


def _register(
    con: duckdb.DuckDBPyConnection,
    name: str,
    obj: object,
    role: str,
    error: type[InftdaError],
    param: str | None,
) -> None:
    """Register a relation or data frame as the TEMPORARY view ``name`` of this connection (never
    a view of the database: nothing is written to its catalog, and it goes with the connection
    even if the release is interrupted before :func:`drop_temp`)."""
    try:
        con.register(name, obj)
    except duckdb.Error as exc:
        text = str(exc).strip()
        first = (text.splitlines() or [type(exc).__name__])[0]
        if not isinstance(obj, duckdb.DuckDBPyRelation):
            raise error(f"{role}: DuckDB cannot read it ({first})", param=param) from exc
        if "another database" in text:
            raise error(
                f"{role}: the DuckDB relation was made on a connection to another database, so "
                "this connection cannot read it; make it from this connection (con.table(...), "
                "con.sql(...)), or pass its rows (relation.arrow())",
                param=param,
            ) from exc
        raise error(
            f"{role}: the DuckDB relation cannot be used here ({first})", param=param
        ) from exc


def drop_temp(con: duckdb.DuckDBPyConnection, source: Source | None) -> None:
    """Remove the temporary view or registration behind a source, if any."""
    if source is None or source.temp_view is None:
        return
    with contextlib.suppress(duckdb.Error):
        con.unregister(source.temp_view)
    with contextlib.suppress(duckdb.Error):
        run(con, drop_temp_view(source.temp_view))


def check_domain_types(
    input_src: Source, domain_src: Source, chain: Sequence[str], role: str
) -> None:
    """Input and domain columns of a chain must be joinable (same type family); a column the
    input lacks (a star schema) is read from the domain alone."""
    for col in chain:
        if col.lower() not in input_src.columns:
            continue
        it = input_src.columns[col.lower()]
        dt = domain_src.columns[col.lower()]
        if type_family(it) != type_family(dt):
            raise DomainError(
                f"column {col!r} is {it} in the input but {dt} in the {role}; cast one of them "
                f"in a view (e.g. SELECT *, CAST({col} AS VARCHAR) ...) so both have the same type"
            )
