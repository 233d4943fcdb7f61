"""What a release reads (:func:`resolve_source`): a name, a file, a relation, a data frame or a
mapping as a :class:`Source` (SQL, columns, identity), and the checks of its column types.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

import duckdb

from ...._errors import DomainError, InftdaError, InputDataError, SpecError
from ...._frames import frame_kind, frame_label, held_data, mapping_table, not_a_frame_hint
from ....core.names import file_spelling, sql_spelling_hint
from ...checks import check_domain_files_known, check_domain_not_input
from .. import compile as _compile
from ..compile import describe, drop_temp_view, string_literal
from ..sql import catalog_changed, ident, render, rows, run
from .files import resolve_files
from .names import Resolved, home_database, lookup, resolve

_INTEGER_TYPES = {
    "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT",
    "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT",
}  # fmt: skip


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
            as_sql = sql_spelling_hint(obj)
            if as_sql is not None:
                raise error(f"{role} {obj!r} names no table or file: {as_sql}", param=param)
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
        resolved = replace(resolved, memory=resolved.memory + held_data(obj, frame))
        return _source(con, sql, f"the {role} ({label})", resolved, temp_name)
    if isinstance(obj, Mapping):
        table = mapping_table(obj, role, error, param)
        con.register(temp_name, table)
        catalog_changed()
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
        catalog_changed()
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


_CSV_DELIMITERS = (",", ";", "\t", "|")


def check_csv_fields(
    con: duckdb.DuckDBPyConnection, pattern: str, files: Sequence[str], columns: Iterable[str]
) -> None:
    """DuckDB's sniffer reads a CSV file whose lines have different numbers of fields as one
    column named after the whole header line (``'region,province,mun'``). Read such a file
    again with the delimiter its header shows, so that the first line that does not fit is
    named (the InputDataError of :func:`csv_error`) instead of a missing column."""
    names_read = list(columns)
    if len(names_read) != 1:
        return
    (header,) = names_read
    if all(os.path.getsize(f) == 0 for f in files):
        raise InputDataError(
            f"CSV file {pattern!r} is empty; it needs a header line naming its columns "
            "and a line per row"
        )
    delimiter = next((d for d in _CSV_DELIMITERS if d in header), None)
    if delimiter is None:
        return
    names = [n.strip().strip('"') for n in header.split(delimiter)]
    if not all(names) or len({n.lower() for n in names}) != len(names):
        return
    columns = ", ".join(f"{string_literal(n)}: 'VARCHAR'" for n in names)
    paths = ", ".join(string_literal(f) for f in files)
    sql = (
        f"SELECT count(*) FROM read_csv([{paths}], auto_detect=false, header=true, "
        f"delim={string_literal(delimiter)}, quote='\"', escape='\"', columns={{{columns}}})"
    )
    with contextlib.suppress(duckdb.Error):  # another problem: the columns as DuckDB read them
        rows(con, sql)


def check_domains_not_input(inp: Resolved, domains: Sequence[tuple[str, str, Resolved]]) -> None:
    """Refuse a domain (role, description, what it is) that reads what the input reads: a base
    table or a file, read by name, path or through views and relations, or the data of a data
    frame held by the process (the same object, its columns, a relation made from it); or that
    reads files it cannot name beside an input that reads files (and the other way round)."""
    check_domain_not_input(
        inp.keys + inp.memory,
        [(role, shown, dom.keys + dom.memory) for role, shown, dom in domains],
    )
    check_domain_files_known(
        (inp.reads_files, inp.files_complete),
        [(role, shown, dom.reads_files, dom.files_complete) for role, shown, dom in domains],
    )
