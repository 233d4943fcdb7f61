"""SQL plumbing: identifier quoting, template loading and small query helpers.

Static SQL lives in ``sql/*.sql`` at the top of the repository; the wheel ships it as
``inftda_sql/sql`` (hatch ``force-include``) and it is read with :mod:`importlib.resources`.
Identifiers are quoted through :func:`ident` only after they were checked against the catalog;
values are always bound as parameters. DuckDB 2.0 keeps an unfinished ``execute()`` result
open on the connection, so every helper here fetches its result completely. A Ctrl-C that
DuckDB reports as ``RuntimeError('Query interrupted')`` leaves them as ``KeyboardInterrupt``
(see :mod:`inftda_sql._interrupts`).
"""

from __future__ import annotations

import contextlib
import functools
import re
import string
import threading
from collections.abc import Iterator, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from ..._interrupts import is_interrupt
from .csv_errors import csv_error

__all__ = [
    "arrow",
    "catalog_changed",
    "catalog_epoch",
    "ident",
    "qualified",
    "render",
    "rows",
    "run",
    "scalar",
    "template",
]


def ident(name: str) -> str:
    """Quote an identifier for DuckDB, doubling embedded double quotes."""
    return '"' + name.replace('"', '""') + '"'


def qualified(name: str) -> str:
    """Quote a possibly schema-qualified name given as ``schema.table`` or ``table``."""
    return ".".join(ident(part) for part in name.split("."))


def _sql_dir() -> Path:
    package = Path(str(resources.files("inftda_sql")))
    if (package / "sql").is_dir():
        return package / "sql"
    # Source checkout or editable install: the templates sit beside the package.
    return package.parent / "sql"


_NAME_MARK = "-- name: "


@functools.cache
def _sections(file: str) -> dict[str, str]:
    """The statements of ``sql/<file>.sql``: the text before the first ``-- name: <stmt>``
    line under the key ``""``, and each named statement under its name."""
    sections: dict[str, list[str]] = {"": []}
    current = sections[""]
    for line in (_sql_dir() / f"{file}.sql").read_text(encoding="utf-8").splitlines():
        if line.startswith(_NAME_MARK):
            current = sections.setdefault(line[len(_NAME_MARK) :].strip(), [])
        else:
            current.append(line)
    return {name: "\n".join(lines).strip("\n").rstrip() + "\n" for name, lines in sections.items()}


def template(name: str) -> str:
    """The SQL text ``name`` names: ``<file>`` is ``sql/<file>.sql`` (up to its first named
    statement), ``<file>.<stmt>`` the statement that a ``-- name: <stmt>`` line opens there."""
    file, _, statement = name.partition(".")
    return _sections(file)[statement]


def render(name: str, /, **parts: str) -> str:
    """Fill a template's ``$placeholders`` with already-quoted SQL fragments.

    ``name`` is a file of ``sql/`` or ``<file>.<statement>`` for one of its named statements.
    Only identifiers quoted by :func:`ident` and SQL built by this package go in here; user
    values are bound as parameters by the caller.
    """
    return string.Template(template(name)).substitute(parts)


@contextlib.contextmanager
def _interruptible() -> Iterator[None]:
    """DuckDB's reports of a Ctrl-C during a query, raised as the KeyboardInterrupt they were
    (so that no ``except duckdb.Error`` of a caller takes one for a database error); a CSV
    file that cannot be parsed, as the InputDataError of :func:`.csv_errors.csv_error`."""
    try:
        yield
    except (RuntimeError, duckdb.Error) as exc:
        if is_interrupt(exc):
            raise KeyboardInterrupt from exc
        translated = csv_error(exc)
        if translated is not None:
            raise translated from None
        raise


#: statements that read and change nothing (one statement: no ';' but in a comment line) leave
#: the catalog as it was; every other statement (DDL, BEGIN/COMMIT/ROLLBACK, SET, ATTACH, ...)
#: may change it, and ends what :mod:`.catalog.memo` remembers
_READ_ONLY = re.compile(
    r"(?:SELECT|DESCRIBE|EXPLAIN(?!\s+ANALY[SZ]E)|FROM|VALUES|SHOW|SUMMARIZE"
    r"|SET\s+explain_output\b)",
    re.IGNORECASE,
)
_epoch = 0
_epoch_lock = threading.Lock()


def catalog_epoch() -> int:
    """A number that changes whenever a statement run through this module (in any thread) may
    have changed the catalog, the search path or the transaction (see :func:`catalog_changed`):
    what was read from the catalog at one epoch holds while it is the same."""
    return _epoch


def catalog_changed() -> None:
    """Say that the catalog may have changed (a statement that is not read-only ran, or a
    relation or Arrow table was registered on a connection)."""
    global _epoch
    with _epoch_lock:
        _epoch += 1


@contextlib.contextmanager
def _noted(sql: str) -> Iterator[None]:
    """Around a statement that may change the catalog: the epoch moves before it and after it
    (so that nothing read while it ran counts as read after it)."""
    lines = (line for line in sql.splitlines() if not line.lstrip().startswith("--"))
    body = "\n".join(lines).strip().rstrip(";")
    if ";" not in body and _READ_ONLY.match(body) is not None:
        yield
        return
    catalog_changed()
    try:
        yield
    finally:
        catalog_changed()


def run(con: duckdb.DuckDBPyConnection, sql: str, params: Mapping[str, Any] | None = None) -> None:
    """Execute a statement (or several, separated by ';') and finish its result."""
    with _noted(sql), _interruptible():
        if params:
            con.execute(sql, dict(params)).fetchall()
        else:
            con.execute(sql).fetchall()


def rows(
    con: duckdb.DuckDBPyConnection, sql: str, params: Mapping[str, Any] | None = None
) -> list[tuple[Any, ...]]:
    """Run a query and return all its rows (small results only)."""
    with _noted(sql), _interruptible():
        return con.execute(sql, dict(params) if params else None).fetchall()


def scalar(
    con: duckdb.DuckDBPyConnection, sql: str, params: Mapping[str, Any] | None = None
) -> Any:
    """Run a query that returns one row of one value and return that value."""
    result = rows(con, sql, params)
    return result[0][0] if result else None


#: rows per Arrow batch of a fetched result: as many as DuckDB gives at once, so that a result
#: comes in few chunks (DuckDB's default cuts results into 131,072-row batches)
ONE_BATCH = 1 << 40


def arrow(
    con: duckdb.DuckDBPyConnection, sql: str, params: Mapping[str, Any] | None = None
) -> pa.Table:
    """Run a query and return its result as an Arrow table (zero-copy columnar, few chunks)."""
    with _noted(sql), _interruptible():
        if params:
            return con.sql(sql, params=dict(params)).to_arrow_table(batch_size=ONE_BATCH)
        return con.sql(sql).to_arrow_table(batch_size=ONE_BATCH)
