"""``publish()`` (``sql/publish.sql``): read files, attach a database, copy a table."""

from __future__ import annotations

from collections.abc import Sequence

from ..sql import ident, render
from ._common import string_literal

#: DuckDB's reader of each file format (resolve_files() decides the format)
_READERS = {"parquet": "read_parquet", "csv": "read_csv"}


def read_files(file_format: str, paths: Sequence[str]) -> str:
    """A table function reading exactly ``paths`` (absolute, resolved) in ``file_format``."""
    files = ", ".join(string_literal(p) for p in paths)
    return render("catalog.read_files", reader=_READERS[file_format], files=files).strip()


def attach(path: str, alias: str, storage_version: str | None) -> str:
    """Attach a new database file under ``alias`` (in an older storage format if asked)."""
    options = (
        "" if storage_version is None else (f" (STORAGE_VERSION {string_literal(storage_version)})")
    )
    return render("publish.attach", path=string_literal(path), alias=ident(alias), options=options)


def copy_table(target_sql: str, source_sql: str) -> str:
    return render("publish.copy_table", target=target_sql, source=source_sql)


def use(database: str) -> str:
    return render("publish.use", database=ident(database))


def detach(alias: str) -> str:
    return render("publish.detach", alias=ident(alias))
