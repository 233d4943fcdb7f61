"""Publishing: a separate file that carries nothing but released values.

The database a release writes into also holds the private input and, in the ledger's
``details``, diagnostics about it for the data owner (rows dropped by contribution bounding).
Sharing that file would publish them. :func:`publish` copies one release into a new DuckDB file:
the released table, its levels view, and its ledger row without the diagnostics, in a storage
format older DuckDB clients (SQL IDEs) can open.

What it copies is checked first: the table (and view) must still be what the release wrote (the
ledger row's content fingerprint, :mod:`.engines.duckdb.fingerprint`); a public table must read
no private input, budgeted table or bookkeeping table, resolved down to the base tables it
reads; and the new file must not be a file the working database uses.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import duckdb

from ._compat import COMPATIBLE_STORAGE_VERSION, parse_storage_version
from ._errors import Arg, InftdaError, OutputExistsError, SpecError, Spelling
from .core.bounds import view_bounds
from .core.features import parse_features
from .core.names import is_file_key, key_identity
from .core.spec import parse_hierarchy
from .engines.duckdb import compile as _compile
from .engines.duckdb import fingerprint
from .engines.duckdb.catalog import (
    Resolved,
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
#: where public tables are named: public_tables=[...] in Python, --public-table on the CLI
_PUBLIC = Spelling(python=(Arg("public_tables"),), cli="--public-table")


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

    Raises:
        InftdaError: the table or its view is no longer what the release wrote (replaced,
            edited, dropped), the ledger row is from a version that took no fingerprint, the
            release is not private, or a public table reads private data.
        SpecError: ``path`` is a file the working database uses (its file, its ``.wal``, an
            attached database's, an input's), or another argument is malformed.
    """
    require_open(con, "publish")
    target = _target(con, path)
    ref = _released_table(con, output)
    record = _latest_release(con, ref, output)
    if record.non_private and not allow_non_private:
        raise InftdaError(
            f"release #{record.release_id} ({output!r}) is not private: "
            f"{'; '.join(record.non_private)}; publishing it would disclose the data. Make a "
            "private release, or pass allow_non_private=True (--allow-non-private) for test data"
        )
    _check_unchanged(con, record, ref, output)
    version = _storage_version(storage_version)
    public_files: list[str] = []
    public = _public_tables(con, public_tables, ref, public_files)
    _check_target(
        target, [(Path(f), "a public table named in public_tables") for f in public_files]
    )
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
    view_sql = _view_builder(record.hierarchy, details.get("kind"), view_bounds(details))
    original = rows(con, render("catalog.current_database"))[0][0]
    run(con, _compile.attach(str(target), _ALIAS, version))
    try:
        in_copy = f"{ident(_ALIAS)}.main."
        run(con, _compile.copy_table(in_copy + ident(ref.name), ref.sql))
        measured = _measurements(con, details.get("measurements"))
        if measured is not None:  # the noisy measurements travel with the release
            run(con, _compile.copy_table(in_copy + ident(measured.name), measured.sql))
        for name, source_sql in public:
            run(con, _compile.copy_table(in_copy + ident(name), source_sql))
        run(con, _compile.use(_ALIAS))
        try:
            copied = [TableRef(_ALIAS, "main", ref.name)]
            if measured is not None:
                copied.append(TableRef(_ALIAS, "main", measured.name))
            if view:
                view_name = split_name(view)[-1]
                run(con, view_sql(ident(view_name), ident(ref.name)))
                copied.append(TableRef(_ALIAS, "main", view_name))
            # the fingerprint of the copy, so that the new file can be checked (and published);
            # its table must be what the release wrote (the working table may have changed
            # since it was checked: another connection)
            taken = fingerprint.take(con, copied)
            if taken is None or fingerprint.table_digest(taken) != fingerprint.table_digest(
                str(record.fingerprint)
            ):
                raise InftdaError(
                    f"{output!r} changed while publish() copied it (another connection wrote "
                    f"to it), so the copy is not what release #{record.release_id} wrote; "
                    "nothing was published. Publish again once the writes are done, or ",
                    *_again(),
                    param="output",
                )
            row = dataclasses.replace(row, fingerprint=taken)
            insert_release(con, row)
        finally:
            run(con, _compile.use(original))
    except BaseException:
        run(con, _compile.detach(_ALIAS))
        target.unlink(missing_ok=True)
        raise
    run(con, _compile.detach(_ALIAS))
    return target


def _measurements(con: duckdb.DuckDBPyConnection, name: object) -> TableRef | None:
    """The table of noisy measurements a release wrote (``measurements=True``), or None. The
    fingerprint checked before covers it: a changed or dropped one is refused there."""
    if not isinstance(name, str):
        return None
    found = lookup(con, name)
    return found[0] if found is not None and found[1] == "table" else None


def _released_table(con: duckdb.DuckDBPyConnection, output: object) -> TableRef:
    found = lookup(con, output, param="output", role="output") if isinstance(output, str) else None
    if found is not None and found[1] == "view":
        raise SpecError(
            f"{output!r} is a view ({found[0]}), not the table a release wrote; pass the ",
            Arg("output"),
            " of a release (a view of the same name hides it: drop the view)",
            param="output",
        )
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


def _again() -> tuple[str | Arg, ...]:
    return (
        "release it again into that table (pass ",
        Arg("overwrite", True),
        ") and publish the new release",
    )


def _check_unchanged(
    con: duckdb.DuckDBPyConnection, record: ReleaseRecord, ref: TableRef, output: str
) -> None:
    """Refuse a release whose table ``ref`` or view is no longer what it wrote (or whose
    ledger row has no fingerprint to tell: a row written before fingerprints fails closed)."""
    again = _again()
    if record.fingerprint is None:
        raise InftdaError(
            f"release #{record.release_id} ({output!r}) was recorded by an older version of "
            "inftda_sql, without the fingerprint of what it wrote, so publish() cannot check "
            f"that {output!r} still holds the released values; ",
            *again,
            param="output",
        )
    try:
        found = fingerprint.changes(con, record.fingerprint, table=ref)
    except (ValueError, KeyError, TypeError) as exc:
        raise InftdaError(
            f"release #{record.release_id} ({output!r}) has a fingerprint this version cannot "
            f"check ({exc}); ",
            *again,
            param="output",
        ) from exc
    if found:
        what = "; ".join(f"{c.kind} {c.name} {c.what}" for c in found)
        raise InftdaError(
            f"{output!r} is no longer what release #{record.release_id} wrote: {what}. "
            "Publishing it would share other data under the release's name; ",
            *again,
            param="output",
        )


def _target(con: duckdb.DuckDBPyConnection, path: object) -> Path:
    """The new file's path, refused when it is, or its ``.wal`` would be, a file the working
    database uses: a database file of the connection or its write-ahead log, or a file a
    release read or a budget guards (``overwrite`` would delete it)."""
    if not isinstance(path, (str, os.PathLike)):
        raise SpecError(f"path must be a file path, got {path!r}", param="path")
    target = Path(os.fspath(path))
    if target.is_dir():
        raise SpecError(
            f"{str(target)!r} is a directory; give the path of the new file, e.g. "
            f"{str(target / 'public.duckdb')!r}",
            param="path",
        )
    if not target.parent.is_dir():
        raise SpecError(
            f"the folder of {str(target)!r} does not exist; create it first, or give the new "
            "file a path in an existing folder",
            param="path",
        )
    used: list[tuple[Path, str]] = []
    for name, file in rows(con, render("publish.database_files")):
        db = Path(str(file))
        used += [(db, f"the file of database {name!r}")]
        used += [(Path(f"{db}.wal"), f"the write-ahead log of database {name!r}")]
    inputs = {key for charge in charges(con) for key in charge.keys} | {
        key for key, _ in stored_budgets(con).values()
    }
    private = "a private input (a release read it or a budget guards it)"
    used += [(Path(key), private) for key in inputs if is_file_key(key)]
    _check_target(target, used)
    return target


def _check_target(target: Path, used: Sequence[tuple[Path, str]]) -> None:
    """Refuse ``target`` when it or its ``.wal`` is one of the files ``used`` (path, what)."""
    for candidate in (target, Path(f"{target}.wal")):
        for file, what in used:
            if _same_file(candidate, file):
                which = "is" if candidate is target else f"would write its log {candidate.name} on"
                raise SpecError(
                    f"{str(target)!r} {which} {what}: {file}, which this connection uses; "
                    "publish() writes a new file to share and would overwrite it. Give the new "
                    "file a path of its own",
                    param="path",
                )


def _same_file(a: Path, b: Path) -> bool:
    """Whether two paths name one file, as the filesystem resolves them (relative paths,
    symbolic links, and letter case where the filesystem ignores it); either may not exist yet."""
    with contextlib.suppress(OSError):
        return os.path.samefile(a, b)
    ra, rb = a.resolve(), b.resolve()
    if ra == rb:
        return True
    if ra.name.casefold() != rb.name.casefold():
        return False
    try:
        if not os.path.samefile(ra.parent, rb.parent):
            return False
    except OSError:
        return False
    # one directory, names that differ in case only: one file where the filesystem folds case
    probe = next((p for p in (ra, rb) if p.exists()), None)
    if probe is None:  # neither exists: ask the directory with a name it holds
        entry = next((e for e in ra.parent.iterdir() if e.name != e.name.swapcase()), None)
        if entry is None:
            return False
        probe = entry
    swapped = probe.parent / probe.name.swapcase()
    with contextlib.suppress(OSError):
        return os.path.samefile(probe, swapped)
    return False


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
    con: duckdb.DuckDBPyConnection, names: object, output: TableRef, files_read: list[str]
) -> list[tuple[str, str]]:
    """The public tables to copy, resolved, as (name in the shared file, SQL reading it);
    refused when one is, or reads, a table or file any release read or any budget guards (the
    private inputs), or a name the library owns. The files named are added to ``files_read``."""
    if isinstance(names, str) or not isinstance(names, Sequence):
        raise SpecError(
            f"public_tables must be a list of table names, got {names!r}", param="public_tables"
        )
    home = home_database(con)
    found_charges = charges(con)
    private_keys = [key for charge in found_charges for key in charge.keys]
    private_keys += [stored for stored, _ in stored_budgets(con).values()]
    private = {key_identity(key) for key in private_keys}  # a file under any of its names
    private_files = any(is_file_key(key) for key in private_keys)
    # a release of a file or data frame: a view reading from outside the catalog may read it
    unknown = any(not c.keys or any(is_file_key(k) for k in c.keys) for c in found_charges)
    out: list[tuple[str, str]] = []
    for name in names:
        path = file_spelling(name)
        if path is not None:
            files = resolve_files(path, role="public table", param="public_tables", error=SpecError)
            hit = [f for f in files.files if key_identity(f) in private]
            if hit:
                raise InftdaError(
                    f"{name!r} is {hit[0]}, a private input of a release (or a file with a "
                    "budget); it cannot be published. Name only public data (the geography, "
                    "the domain) in ",
                    _PUBLIC,
                    param="public_tables",
                )
            _add_public(out, file_stem(path), _compile.read_files(files.format, files.files))
            files_read += files.files
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
                _PUBLIC,
                param="public_tables",
            )
        resolved = resolve(con, name, ref, kind, ref.sql)
        _check_reads(name, resolved, unknown=unknown or private_files)
        hit = [k for k in (ref.key(home), *resolved.keys) if key_identity(k) in private]
        if hit:
            raise InftdaError(
                f"{name!r} is or reads {hit[0]}, a private input of a release (or a table with "
                "a budget); it cannot be published. Name only public tables (the geography, "
                "the domain) in ",
                _PUBLIC,
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


def _check_reads(name: str, resolved: Resolved, *, unknown: bool) -> None:
    """Refuse a public table that reads a bookkeeping table (the ledger's diagnostics, the
    budgets) through a view, or reads what the catalog cannot name (a data frame, a file by a
    computed path) while a release read a file or a data frame: which one it reads cannot be
    told. A view over named files is checked by its files, as a file named by its path."""
    library = [r for r in resolved.reads if is_library_name(r.name)]
    if library:
        raise InftdaError(
            f"{name!r} reads {library[0]}, a bookkeeping table of inftda_sql (the ledger keeps "
            "diagnostics for the data owner only); it cannot be published. publish() copies "
            "the release's ledger row itself; name only public tables in ",
            _PUBLIC,
            param="public_tables",
        )
    if not resolved.named_in_full and unknown:
        raise InftdaError(
            f"{name!r} reads data from outside the database's tables "
            f"({', '.join(resolved.outside)}), and a release read a file or a data frame, which "
            "it may be; it cannot be published. Name the public file itself in ",
            _PUBLIC,
            " (checked by its path), or load the public data into a table",
            param="public_tables",
        )


def _add_public(out: list[tuple[str, str]], name: str, source_sql: str) -> None:
    if any(n.lower() == name.lower() for n, _ in out) or is_library_name(name):
        raise SpecError(
            f"two public tables would be named {name!r} in the shared file (or it is a name "
            "publish() writes itself); it holds one table of each name",
            param="public_tables",
        )
    out.append((name, source_sql))


def _view_builder(
    text: str,
    kind: str | None = None,
    bounds: Mapping[str, tuple[float | None, float | None]] | None = None,
) -> Callable[[str, str], str]:
    """The statement that recreates a release's companion view, from the ledger's JSON: the
    levels view of a hierarchy (of a count-of-counts release when ``kind`` says so), or the
    features view of a feature release; ``bounds`` (the ledger row's public error bounds) go
    into the levels view as in the release."""
    h = json.loads(text)
    if "features" in h:
        features = parse_features(h["features"], structure=h["structure"], weights=h["weights"])
        return lambda view, output: _compile.features_view(features, view, output)
    spec = parse_hierarchy(h["chains"], h["tree"])
    if kind == "count_of_counts":
        return lambda view, output: _compile.coc_levels_view(spec.chains[0], view, output)
    return lambda view, output: _compile.levels_view(spec, view, output, bounds)
