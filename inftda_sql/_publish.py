"""Publishing: a separate file that carries nothing but released values.

The database a release writes into also holds the private input and, in the ledger's
``details``, diagnostics about it for the data owner (rows dropped by contribution bounding).
Sharing that file would publish them. :func:`publish` copies one release into a new DuckDB file:
the released table, its levels view, and its ledger row without the diagnostics, in a storage
format older DuckDB clients (SQL IDEs) can open.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import duckdb

from ._compat import COMPATIBLE_STORAGE_VERSION, parse_storage_version
from ._errors import Arg, InftdaError, OutputExistsError, SpecError
from .core.features import parse_features
from .core.spec import parse_hierarchy
from .engines.duckdb import compile as _compile
from .engines.duckdb.catalog import (
    TableRef,
    file_spelling,
    file_stem,
    home_database,
    lookup,
    resolve,
    resolve_files,
    split_name,
)
from .engines.duckdb.connection import require_open
from .engines.duckdb.ledger import (
    ReleaseRecord,
    charges,
    insert_release,
    is_library_name,
    read_releases,
    stored_budgets,
)
from .engines.duckdb.sql import ident, render, rows, run

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
        output: the released table, as written by :func:`release` (or
            :func:`~inftda_sql.release_count_of_counts`).
        path: the file to create.
        public_tables: tables that are public already (the geography, the domain) to copy
            along, so that the shared file joins on its own. Resolved in the catalog; a table
            that is, or reads, a table any release read or any budget guards is refused. A
            parquet or CSV file named by its path is copied as a table named after the file
            (``geo.parquet`` -> ``geo``), refused likewise when a release read it or a budget
            guards it.
        storage_version: storage format of the new file (``"v1.0.0"``: readable by DuckDB 1.x
            clients such as DBeaver's driver; ``"latest"`` for this DuckDB's own); checked to be
            a version before it reaches the ``ATTACH`` statement.
        overwrite: replace an existing file.
        allow_non_private: publish a release the ledger marks as not private (seeded, infinite
            budget, domain from the data, budget override). Refused by default.

    Returns:
        The path of the new file.
    """
    require_open(con, "publish")
    ref = _released_table(con, output)
    record = _latest_release(con, ref, output)
    if record.non_private and not allow_non_private:
        raise InftdaError(
            f"release #{record.release_id} ({output!r}) is not private: "
            f"{'; '.join(record.non_private)}; publishing it would disclose the data. Make a "
            "private release, or pass allow_non_private=True (--allow-non-private) for test data"
        )
    version = _storage_version(storage_version)
    public = _public_tables(con, public_tables, ref)
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
    row = record.public()
    details = json.loads(row.details)
    view = details.get("levels_view")
    view_sql = _view_builder(record.hierarchy, details.get("kind"))
    original = rows(con, render("catalog.current_database"))[0][0]
    run(con, _compile.attach(str(target), _ALIAS, version))
    try:
        in_copy = f"{ident(_ALIAS)}.main."
        run(con, _compile.copy_table(in_copy + ident(ref.name), ref.sql))
        for name, source_sql in public:
            run(con, _compile.copy_table(in_copy + ident(name), source_sql))
        run(con, _compile.use(_ALIAS))
        try:
            if view:
                view_name = split_name(view)[-1]
                run(con, view_sql(ident(view_name), ident(ref.name)))
            insert_release(con, row)
        finally:
            run(con, _compile.use(original))
    except BaseException:
        run(con, _compile.detach(_ALIAS))
        target.unlink(missing_ok=True)
        raise
    run(con, _compile.detach(_ALIAS))
    return target


def _released_table(con: duckdb.DuckDBPyConnection, output: object) -> TableRef:
    found = lookup(con, output, param="output", role="output") if isinstance(output, str) else None
    if found is None or found[1] != "table":
        raise SpecError(
            f"{output!r} is not a table of this database; pass the ",
            Arg("output"),
            " of a release",
            param="output",
        )
    return found[0]


def _latest_release(con: duckdb.DuckDBPyConnection, ref: TableRef, output: str) -> ReleaseRecord:
    """The newest ledger row whose output is the table ``ref`` (by any spelling)."""
    for record in reversed(read_releases(con)):
        with contextlib.suppress(SpecError):
            found = lookup(con, record.output_table)
            if found is not None and found[0].same(ref):
                return record
    raise SpecError(
        f"{output!r} has no ledger row: publish() copies tables written by release()",
        param="output",
    )


def _storage_version(storage_version: object) -> str | None:
    """The storage version to ATTACH with (None: this DuckDB's own), checked before it goes
    anywhere near SQL."""
    if storage_version == "latest":
        return None
    if not isinstance(storage_version, str):
        raise SpecError(
            f"storage_version must be a string such as 'v1.0.0', got {storage_version!r}",
            param="storage_version",
        )
    parse_storage_version(storage_version)
    return storage_version


def _public_tables(
    con: duckdb.DuckDBPyConnection, names: object, output: TableRef
) -> list[tuple[str, str]]:
    """The public tables to copy, resolved, as (name in the shared file, SQL reading it);
    refused when one is, or reads, a table or file any release read or any budget guards (the
    private inputs), or a name the library owns."""
    if isinstance(names, str) or not isinstance(names, Sequence):
        raise SpecError(
            f"public_tables must be a list of table names, got {names!r}", param="public_tables"
        )
    home = home_database(con)
    private = {key.lower() for charge in charges(con) for key in charge.keys}
    private |= set(stored_budgets(con))
    out: list[tuple[str, str]] = []
    for name in names:
        path = file_spelling(name)
        if path is not None:
            files = resolve_files(path, role="public table", param="public_tables", error=SpecError)
            hit = [f for f in files.files if f.lower() in private]
            if hit:
                raise InftdaError(
                    f"{name!r} is {hit[0]}, a private input of a release (or a file with a "
                    "budget); it cannot be published. Name only public data (the geography, "
                    "the domain) in ",
                    Arg("public_tables"),
                    param="public_tables",
                )
            _add_public(out, file_stem(path), _compile.read_files(files.format, files.files))
            continue
        found = lookup(con, name, param="public_tables", role="public table")
        if found is None:
            raise SpecError(
                f"public table {name!r} is not a table or view of this database",
                param="public_tables",
            )
        ref, kind = found
        if is_library_name(ref.name) or ref.same(output):
            raise SpecError(
                f"public table {name!r} is copied by publish() itself (the release or the "
                "ledger); leave it out of ",
                Arg("public_tables"),
                param="public_tables",
            )
        resolved = resolve(con, name, ref, kind, ref.sql)
        hit = [k for k in (ref.key(home), *resolved.keys) if k.lower() in private]
        if hit:
            raise InftdaError(
                f"{name!r} is or reads {hit[0]}, a private input of a release (or a table with "
                "a budget); it cannot be published. Name only public tables (the geography, "
                "the domain) in ",
                Arg("public_tables"),
                param="public_tables",
            )
        _add_public(out, ref.name, ref.sql)
    for n, _ in out:
        if n.lower() == output.name.lower():
            raise SpecError(
                f"public table {n!r} would take the name of the released table in the shared "
                "file; rename one of them",
                param="public_tables",
            )
    return out


def _add_public(out: list[tuple[str, str]], name: str, source_sql: str) -> None:
    if any(n.lower() == name.lower() for n, _ in out) or is_library_name(name):
        raise SpecError(
            f"two public tables would be named {name!r} in the shared file (or it is a name "
            "publish() writes itself); it holds one table of each name",
            param="public_tables",
        )
    out.append((name, source_sql))


def _view_builder(text: str, kind: str | None = None) -> Callable[[str, str], str]:
    """The statement that recreates a release's companion view, from the ledger's JSON: the
    levels view of a hierarchy (of a count-of-counts release when ``kind`` says so), or the
    features view of a feature release."""
    h = json.loads(text)
    if "features" in h:
        features = parse_features(h["features"], structure=h["structure"], weights=h["weights"])
        return lambda view, output: _compile.features_view(features, view, output)
    spec = parse_hierarchy(h["chains"], h["tree"])
    if kind == "count_of_counts":
        return lambda view, output: _compile.coc_levels_view(spec.chains[0], view, output)
    return lambda view, output: _compile.levels_view(spec, view, output)
