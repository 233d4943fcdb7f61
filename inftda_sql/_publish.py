"""Publishing: a separate file that carries nothing but released values.

The database a release writes into also holds the private input and, in the ledger's
``details``, diagnostics about it for the data owner (rows dropped by contribution bounding).
Sharing that file would publish them. :func:`publish` copies one release into a new DuckDB file:
the released table, its levels view, and its ledger row without the diagnostics, in a storage
format older DuckDB clients (SQL IDEs) can open.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import duckdb

from ._compat import COMPATIBLE_STORAGE_VERSION
from ._errors import Arg, InftdaError, OutputExistsError, SpecError
from .core.spec import parse_hierarchy
from .engines.duckdb import compile as _compile
from .engines.duckdb.catalog import object_kind
from .engines.duckdb.ledger import insert_release, read_releases
from .engines.duckdb.sql import ident, qualified, render, rows, run

__all__ = ["publish"]

_ALIAS = "__inftda_publish"


def publish(
    con: duckdb.DuckDBPyConnection,
    output: str,
    path: str | os.PathLike[str],
    /,
    *,
    public_tables: Sequence[str] = (),
    storage_version: str = COMPATIBLE_STORAGE_VERSION,
    overwrite: bool = False,
    allow_non_private: bool = False,
) -> Path:
    """Copy the release ``output`` into a new DuckDB file safe to share.

    Args:
        con: the connection holding the release (and the private input).
        output: the released table, as written by :func:`release`.
        path: the file to create.
        public_tables: tables that are public already (the geography, the domain) to copy
            along, so that the shared file joins on its own. Never name the private input.
        storage_version: storage format of the new file (``"v1.0.0"``: readable by DuckDB 1.x
            clients such as DBeaver's driver; ``"latest"`` for this DuckDB's own).
        overwrite: replace an existing file.
        allow_non_private: publish a release the ledger marks as not private (seeded, infinite
            budget, domain from the data, budget override). Refused by default.

    Returns:
        The path of the new file.
    """
    if not isinstance(output, str) or object_kind(con, output) != "table":
        raise SpecError(
            f"{output!r} is not a table of this database; pass the ",
            Arg("output"),
            " of a release",
            param="output",
        )
    found = read_releases(con, output=output, latest=True)
    if not found:
        raise SpecError(
            f"{output!r} has no ledger row: publish() copies tables written by release()",
            param="output",
        )
    record = found[0]
    if record.non_private and not allow_non_private:
        raise InftdaError(
            f"release #{record.release_id} ({output!r}) is not private: "
            f"{'; '.join(record.non_private)}; publishing it would disclose the data. Make a "
            "private release, or pass allow_non_private=True (--allow-non-private) for test data"
        )
    for t in public_tables:
        if object_kind(con, t) is None:
            raise SpecError(
                f"public table {t!r} is not a table or view of this database",
                param="public_tables",
            )
        if t.lower() == record.input_table.lower():
            raise InftdaError(
                f"{t!r} is the private input of this release; it cannot be published",
                param="public_tables",
            )
    target = Path(os.fspath(path))
    if target.exists():
        if not overwrite:
            raise OutputExistsError(
                f"{str(target)!r} exists; pass ",
                Arg("overwrite", True),
                " or another path",
                param="path",
            )
        target.unlink()
        Path(str(target) + ".wal").unlink(missing_ok=True)
    public = record.public()
    view = json.loads(public.details).get("levels_view")
    spec = parse_hierarchy(*_hierarchy_args(record.hierarchy))
    version = None if storage_version == "latest" else storage_version
    original = rows(con, render("catalog.current_database"))[0][0]
    run(con, _compile.attach(str(target), _ALIAS, version))
    try:
        in_copy = f"{ident(_ALIAS)}.main."
        run(con, _compile.copy_table(in_copy + ident(output), qualified(output)))
        for t in public_tables:
            run(con, _compile.copy_table(in_copy + ident(t.split(".")[-1]), qualified(t)))
        run(con, _compile.use(_ALIAS))
        try:
            if view:
                run(con, _compile.levels_view(spec, qualified(view), qualified(output)))
            insert_release(con, public)
        finally:
            run(con, _compile.use(original))
    except BaseException:
        run(con, _compile.detach(_ALIAS))
        target.unlink(missing_ok=True)
        raise
    run(con, _compile.detach(_ALIAS))
    return target


def _hierarchy_args(text: str) -> tuple[list[list[str]], str]:
    h = json.loads(text)
    return h["chains"], h["tree"]
