"""Open DuckDB files so that other DuckDB clients can read them.

DuckDB fixes the storage format of a database file when it creates the file. DuckDB 2.0 writes
format ``v2.0.0`` by default, which DuckDB 1.x refuses to open ("created with a newer version"),
and DuckDB 1.x is the engine inside many clients: the JDBC driver of SQL IDEs such as DBeaver,
the Node client, older Python wheels. A file created with ``storage_version="v1.0.0"`` (DuckDB's
``storage_compatibility_version`` setting, or ``ATTACH ... (STORAGE_VERSION 'v1.0.0')``) is
written in the older format, which every DuckDB from 1.0 on reads and writes. The file keeps its
format when it is reopened and written to later, so every release written into it stays
readable by those clients.

:func:`connect` opens or creates such a file (and explains, in one line, why a path is not a
DuckDB file); :func:`storage_version` tells which format a database has.
"""

from __future__ import annotations

import math
import os
import re
import time
from pathlib import Path
from typing import NoReturn

import duckdb

from ._errors import Arg, InputDataError, SpecError
from .engines.duckdb.connection import require_open
from .engines.duckdb.sql import render, rows
from .engines.duckdb.write import check_timeout

__all__ = ["COMPATIBLE_STORAGE_VERSION", "connect", "parse_storage_version", "storage_version"]

#: The oldest storage format DuckDB 2.0 writes: readable by DuckDB 1.0 and every later version.
COMPATIBLE_STORAGE_VERSION = "v1.0.0"

_VERSION = re.compile(r"^v(\d+)\.(\d+)\.(\d+)$")
_DUCKDB_MAGIC = b"DUCK"  # bytes 8-11 of every DuckDB database file


def parse_storage_version(version: str) -> tuple[int, int, int]:
    """``"v1.0.0"`` -> ``(1, 0, 0)``, or a SpecError: nothing else may name a storage format.

    Example:
        >>> parse_storage_version("v1.0.0")
        (1, 0, 0)
    """
    m = _VERSION.fullmatch(version.rstrip("+"))
    if m is None:
        raise SpecError(
            f"storage_version must be a DuckDB version such as 'v1.0.0' (readable by DuckDB 1.0 "
            f"and later) or 'latest', got {version!r}",
            param="storage_version",
        )
    return int(m[1]), int(m[2]), int(m[3])


def _what_is(path: Path) -> str:
    """A short description of a file that is not a DuckDB database, from its first bytes."""
    with path.open("rb") as f:
        head = f.read(64)
    if not head:
        return "it is empty"
    if head.startswith(b"SQLite format 3"):
        return "it is a SQLite database"
    if head.startswith(b"PAR1"):
        return "it is a Parquet file"
    if head.startswith(b"PK"):
        return "it is a ZIP or spreadsheet file"
    try:
        head.decode("utf-8")
    except UnicodeDecodeError:
        return "it has no DuckDB header"
    return "it is a text file, e.g. CSV"


def _check_file(path: Path, *, read_only: bool) -> bool:
    """Whether ``path`` exists; raise a clear error if it is not a DuckDB database file."""
    if path.is_dir():
        raise InputDataError(
            f"{str(path)!r} is a folder, not a DuckDB database file; pass the path of a "
            ".duckdb file"
        )
    if not path.exists():
        if read_only:
            raise InputDataError(
                f"database file {str(path)!r} does not exist; check the path (or run "
                "`inftda-sql demo` to create demo.duckdb)"
            )
        if not path.parent.is_dir():
            raise InputDataError(
                f"cannot create {str(path)!r}: folder {str(path.parent)!r} does not exist"
            )
        return False
    with path.open("rb") as f:
        head = f.read(16)
    if head[8:12] != _DUCKDB_MAGIC:
        raise InputDataError(
            f"{str(path)!r} is not a DuckDB database file ({_what_is(path)}); pass a .duckdb "
            f"file, or load the data into one first: duckdb data.duckdb -c "
            f"\"CREATE TABLE trips AS FROM '{path}'\""
        )
    return True


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _locked(exc: duckdb.Error) -> bool:
    """DuckDB could not lock the file: another process has it open."""
    return "lock" in str(exc).lower() and "different configuration" not in str(exc)


def _connect_error(
    exc: duckdb.Error, name: str, storage_version: str | None, waited: float | None
) -> NoReturn:
    """Raise the clear error for DuckDB's failure to open ``name`` (``waited``: seconds spent
    waiting for another program's lock, if it was waited for)."""
    message = str(exc)
    if "not a known DuckDB version" in message:
        raise SpecError(
            f"storage_version {storage_version!r} is not a DuckDB version this DuckDB "
            f"({duckdb.__version__}) knows; use e.g. 'v1.0.0' or 'latest'",
            param="storage_version",
        ) from None
    if "different configuration" in message:
        raise InputDataError(
            f"{name!r} is already open in this process with other settings; close those "
            "connections first (con.close()), then connect again"
        ) from None
    if _locked(exc):
        still = "" if waited is None else f", still after waiting {waited:.1f} s"
        raise InputDataError(
            f"{name!r} is open in another program{still} ({_first_line(exc)}); close it there "
            "(DBeaver: Disconnect; DuckDB CLI: .quit) and retry, or wait for it with ",
            Arg("timeout", 60 if waited is None else max(60, 2 * math.ceil(waited))),
            param="timeout",
        ) from None
    raise InputDataError(
        f"{name!r} cannot be opened as a DuckDB database: {_first_line(exc)}"
    ) from None


def connect(
    path: str | os.PathLike[str] = ":memory:",
    *,
    storage_version: str | None = None,
    read_only: bool = False,
    timeout: float | None = 0,
) -> duckdb.DuckDBPyConnection:
    """Open (or create) a DuckDB database, optionally in a storage format older clients read.

    Args:
        path: the database file (created if missing, unless ``read_only``), or ``":memory:"``.
        storage_version: the DuckDB version whose storage format a *new* file is written in,
            e.g. ``"v1.0.0"`` so that DuckDB 1.x clients (DBeaver's JDBC driver, the Node
            client, older Python wheels) can open it; ``None`` or ``"latest"`` for this DuckDB's
            own format. An existing file keeps the format it was created with: asking for an
            older one than it has is an error that says how to copy it.
        read_only: open without writing (the file must exist).
        timeout: seconds to wait while another program (another process) has the file open:
            DuckDB lets one process at a time open a file for writing. 0 or None (default):
            fail at once, saying so.

    Returns:
        A DuckDB connection.

    Raises:
        InputDataError: the path is missing (read-only), a folder, not a DuckDB file, locked by
            another program, or an existing file newer than ``storage_version``.
        SpecError: ``storage_version`` is not a DuckDB version.

    Example:
        >>> import tempfile, pathlib
        >>> from inftda_sql._compat import connect, storage_version
        >>> folder = tempfile.TemporaryDirectory()
        >>> con = connect(pathlib.Path(folder.name) / "shared.duckdb", storage_version="v1.0.0")
        >>> storage_version(con)
        'v1.0.0'
        >>> con.close(); folder.cleanup()
    """
    timeout = check_timeout(timeout)
    wanted: tuple[int, int, int] | None = None
    if storage_version is not None and storage_version != "latest":
        if not isinstance(storage_version, str):
            raise SpecError(
                f"storage_version must be a string such as 'v1.0.0', got {storage_version!r}",
                param="storage_version",
            )
        wanted = parse_storage_version(storage_version)
    name = os.fspath(path)
    if not isinstance(name, str):
        raise SpecError(f"path must be a file name, got {path!r}")
    in_memory = name in ("", ":memory:") or name.startswith(":memory:")
    existed = False if in_memory else _check_file(Path(name), read_only=read_only)
    config: dict[str, str | bool | int | float | list[str]] = {}
    if wanted is not None and storage_version is not None:
        config["storage_compatibility_version"] = storage_version
    started = time.monotonic()
    pause = 0.05
    while True:
        try:
            con = duckdb.connect(name, read_only=read_only, config=config)
            break
        except duckdb.Error as exc:
            waited = time.monotonic() - started
            if _locked(exc) and timeout and waited + pause <= timeout:
                time.sleep(pause)  # the other program may close it meanwhile
                pause = min(1.0, 2 * pause)
                continue
            _connect_error(exc, name, storage_version, waited if timeout else None)
    if wanted is not None and existed:
        has = _read_storage_version(con, None)
        if has is not None and parse_storage_version(has) > max(
            wanted, parse_storage_version(COMPATIBLE_STORAGE_VERSION)
        ):
            con.close()
            raise InputDataError(
                f"{name!r} was created in storage format {has}, which DuckDB older than {has} "
                f"cannot open, and a file keeps its format; write a copy in format "
                f"{storage_version} with the DuckDB CLI: ATTACH '{name}' AS src (READ_ONLY); "
                f"ATTACH 'copy.duckdb' AS dst (STORAGE_VERSION '{storage_version}'); "
                "COPY FROM DATABASE src TO dst;"
            )
    return con


def storage_version(con: duckdb.DuckDBPyConnection, database: str | None = None) -> str | None:
    """The storage format of a database of ``con`` (``None`` for an in-memory database).

    The format is named by the oldest DuckDB version that can read it: ``"v1.0.0"`` for a file
    every DuckDB from 1.0 on opens, ``"v2.0.0"`` for DuckDB 2.0's own format. ``database`` is
    the name of an attached database (default: the current one).
    """
    require_open(con, "storage_version")
    return _read_storage_version(con, database)


def _read_storage_version(con: duckdb.DuckDBPyConnection, database: str | None) -> str | None:
    found = rows(con, render("catalog.storage_version"), {"db": database})
    if not found:
        raise InputDataError(f"no database named {database!r} is attached to this connection")
    tags = found[0][0] or {}
    version = tags.get("storage_version") if isinstance(tags, dict) else None
    return str(version).rstrip("+") if version else None
