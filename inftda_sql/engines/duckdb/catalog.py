"""Resolve user-named tables, views and relations against the DuckDB catalog.

DuckDB cannot bind table names as parameters, so every name a user passes is looked up here
first; only names that exist (or, for outputs, that are valid) are quoted into SQL.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import duckdb
import pyarrow as pa

from ..._errors import DomainError, InputDataError, SpecError
from .compile import describe, drop_temp_view
from .sql import ident, qualified, render, rows, run

__all__ = [
    "Source",
    "check_domain_types",
    "count_column",
    "drop_temp",
    "is_wide_number",
    "join_type",
    "object_kind",
    "resolve_source",
    "type_family",
]

_INTEGER_TYPES = {
    "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT",
    "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT",
}  # fmt: skip


@dataclass(frozen=True)
class Source:
    """A readable input or domain: SQL to select from, a description, its columns and types."""

    sql: str
    description: str
    columns: Mapping[str, str]  # lower-case name -> DuckDB type
    names: Mapping[str, str]  # lower-case name -> name as stored
    temp_view: str | None = None

    def column(self, name: str, role: str, error: type[Exception] = InputDataError) -> str:
        """The stored spelling of column ``name``, or a clear error listing what exists."""
        try:
            return self.names[name.lower()]
        except KeyError:
            available = ", ".join(self.names.values())
            raise error(
                f"column {name!r} ({role}) not in {self.description}; available: {available}"
            ) from None


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


def object_kind(con: duckdb.DuckDBPyConnection, name: str) -> str | None:
    """'table' or 'view' if ``name`` (optionally schema-qualified) exists, else None."""
    parts = name.split(".")
    schema, table = (parts[0], parts[1]) if len(parts) == 2 else (None, name)
    found = rows(con, render("catalog.object_kind"), {"table": table, "schema": schema})
    if not found:
        return None
    return "view" if "VIEW" in str(found[0][0]).upper() else "table"


def _describe(con: duckdb.DuckDBPyConnection, sql: str) -> list[tuple[str, str]]:
    return [(r[0], r[1]) for r in rows(con, describe(sql))]


def _temp_source(con: duckdb.DuckDBPyConnection, temp_name: str, description: str) -> Source:
    sql = ident(temp_name)
    cols = _describe(con, sql)
    return Source(
        sql,
        description,
        {n.lower(): t for n, t in cols},
        {n.lower(): n for n, _ in cols},
        temp_view=temp_name,
    )


def resolve_source(
    con: duckdb.DuckDBPyConnection,
    obj: object,
    *,
    role: str,
    temp_name: str,
    error: type[Exception] = InputDataError,
) -> Source:
    """Turn a table/view name, a DuckDB relation or a column mapping into a :class:`Source`.

    ``role`` names the argument in messages (``"input table"``, ``"domain of chain 1"``).
    Relations and mappings become a temporary view or registered Arrow table ``temp_name``,
    which the caller drops.
    """
    if isinstance(obj, str):
        if not obj or len(obj.split(".")) > 2:
            raise SpecError(f"{role} must be a table or view name, got {obj!r}")
        if object_kind(con, obj) is None:
            tables = [r[0] for r in rows(con, render("catalog.some_tables"))]
            hint = ", ".join(tables) if tables else "(none)"
            raise error(f"{role} {obj!r} is not a table or view of this database; existing: {hint}")
        sql = qualified(obj)
        cols = _describe(con, sql)
        return Source(
            sql, f"table {obj!r}", {n.lower(): t for n, t in cols}, {n.lower(): n for n, _ in cols}
        )
    if isinstance(obj, duckdb.DuckDBPyRelation):
        try:
            obj.create_view(temp_name, replace=True)
        except duckdb.Error as exc:
            raise error(f"{role}: the DuckDB relation cannot be used here ({exc})") from exc
        return _temp_source(con, temp_name, f"the {role} relation")
    if isinstance(obj, Mapping):
        data = {}
        for col, values in obj.items():
            if (
                not isinstance(col, str)
                or isinstance(values, (str, bytes))
                or not isinstance(values, Sequence)
            ):
                raise error(
                    f"{role} mapping must be {{column: [values, ...]}}, got {col!r}: {values!r}"
                )
            data[col] = list(values)
        lengths = {len(v) for v in data.values()}
        if len(lengths) != 1 or 0 in lengths:
            raise error(
                f"{role} mapping columns must be non-empty and of equal length, got {obj!r}"
            )
        try:
            table = pa.table(data)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise error(f"{role} mapping has mixed value types: {exc}") from exc
        con.register(temp_name, table)
        return _temp_source(con, temp_name, f"the declared {role}")
    raise error(
        f"{role} must be a table or view name, a DuckDB relation or a mapping "
        f"{{column: [values]}}; got {type(obj).__name__}"
    )


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
    """Input and domain columns of a chain must be joinable (same type family)."""
    for col in chain:
        it = input_src.columns[col.lower()]
        dt = domain_src.columns[col.lower()]
        if type_family(it) != type_family(dt):
            raise DomainError(
                f"column {col!r} is {it} in the input but {dt} in the {role}; cast one of them "
                f"in a view (e.g. SELECT *, CAST({col} AS VARCHAR) ...) so both have the same type"
            )
