"""The commands of ``inftda-sql``: one function per command, each taking the parsed flags and
returning the exit code.

A command opens the database it names, calls the library and prints the result through
:mod:`~inftda_sql.cli.console`. The library's modules are imported where a command runs, so a
command needs only what it uses; an optional dependency (matplotlib for ``evaluate --plot``)
is checked before any work, and its absence is an error that names the install command.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import duckdb

from .._compat import COMPATIBLE_STORAGE_VERSION, connect, storage_version
from .._errors import InftdaError
from .._interrupts import committed, critical
from .._release import release
from .._version import __version__
from ..core.domains import Domain
from ..core.names import file_spelling
from ..engines.duckdb.ledger import read_releases
from ..engines.duckdb.sql import ident, render, rows, run, scalar
from ..engines.duckdb.write import DEFAULT_TIMEOUT
from . import console
from .parse import (
    UsageError,
    chains,
    count_of_counts_options,
    plan_domain,
    plan_options,
    release_options,
)

__all__ = [
    "COMMANDS",
    "budget",
    "count_of_counts",
    "demo",
    "evaluate",
    "ledger",
    "plan",
    "publish",
    "release_",
    "sql",
]


class Unavailable(InftdaError):
    """A command (or an option of one) that this installation cannot run."""


@contextlib.contextmanager
def _installed(feature: str) -> Iterator[None]:
    """Turn a failed import of a part of the package into an error naming ``feature``. The
    imports run to their end before a Ctrl-C is delivered (a C extension cut in its start
    fails to load: that is no missing feature)."""
    try:
        with critical():
            yield
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] != "inftda_sql":
            raise
        raise Unavailable(
            f"{feature} is not available in this version of inftda-sql ({__version__})"
        ) from None


def _require_matplotlib(feature: str) -> None:
    """Fail before any work if ``feature`` needs matplotlib and it is not installed."""
    try:
        with critical():  # a Ctrl-C here is not a missing matplotlib
            import matplotlib  # noqa: F401
    except ImportError:
        raise Unavailable(f"{feature} needs matplotlib: pip install 'inftda-sql[plot]'") from None


# ----------------------------------------------------------------------------------------------
# helpers


def _open(
    path: str, *, read_only: bool = False, storage: str | None = None, timeout: float | None = 0
) -> duckdb.DuckDBPyConnection:
    """Open an existing database file (``connect`` explains paths that are not one), waiting
    up to ``timeout`` seconds while another program has it open."""
    if not Path(path).exists():
        raise InftdaError(
            f"database file {path!r} does not exist; check the path (or run "
            "`inftda-sql demo` to create demo.duckdb)"
        )
    return connect(path, read_only=read_only, storage_version=storage, timeout=timeout)


def _timeout(options: dict[str, Any]) -> float | None:
    """The ``timeout`` of a release's options (its default if not given): also how long the
    command waits for the file."""
    return cast("float | None", options.get("timeout", DEFAULT_TIMEOUT))


def _storage_note(con: duckdb.DuckDBPyConnection, db: str) -> str | None:
    version = storage_version(con)
    if version is None or version.split(".")[0] in ("v0", "v1"):
        return None
    return (
        f"note: {db} is in DuckDB's {version} storage format, which DuckDB 1.x clients (the "
        "driver of SQL IDEs such as DBeaver, the Node client) cannot open; create files with "
        f"--storage-version {COMPATIBLE_STORAGE_VERSION} (see docs/how-to/sql-clients.md)"
    )


# ----------------------------------------------------------------------------------------------
# demo

_DEMO_MARKER = "inftda_demo"


def _is_demo_file(path: Path) -> bool:
    """True if ``path`` is a DuckDB file an earlier demo made (safe to rebuild)."""
    try:
        with duckdb.connect(str(path), read_only=True) as con:
            return bool(scalar(con, render("demo.has_marker"), {"marker": _DEMO_MARKER}))
    except duckdb.Error:
        return False


def _remove_database(path: Path) -> None:
    path.unlink(missing_ok=True)
    Path(f"{path}.wal").unlink(missing_ok=True)


def demo(args: argparse.Namespace) -> int:
    """Build a demo database of synthetic Italy-like O/D trips and release it.

    The file is built aside, under a temporary name in the same folder, and renamed over
    ``--db`` at the end: an interrupted demo leaves the target as it was (no empty file that a
    later demo would refuse to replace) and removes its temporary file.
    """
    db = Path(args.db)
    if db.exists() and not (args.overwrite or _is_demo_file(db)):
        raise InftdaError(
            f"{str(db)!r} exists and was not made by `inftda-sql demo`; pass "
            "--overwrite to replace it or --db to choose another file"
        )
    building = db.with_name(f"{db.name}.tmp-{uuid.uuid4().hex[:12]}")
    try:
        (o_mun, d_mun), version = _build_demo(building, args)
        with critical():  # the demo's commit: the new file replaces the target, or nothing does
            Path(f"{db}.wal").unlink(missing_ok=True)  # the old file's log must not replay on it
            os.replace(building, db)
            committed()
    except BaseException:
        with critical():
            _remove_database(building)
        raise
    readable = (
        f"storage format {version}: DuckDB {version[1:]} and later (DBeaver, the DuckDB CLI, "
        "Node, Python) open it"
        if version and version.split(".")[0] in ("v0", "v1")
        else f"storage format {version}: only DuckDB {str(version)[1:]} and later open it"
    )
    print(f"""
{db}: {readable}.
Try it (duckdb {db}):
  -- a leaf lookup: trips from municipality {o_mun} to {d_mun}
  SELECT * FROM trips_private WHERE o_mun = {o_mun} AND d_mun = {d_mun};
  -- a join with the geography table: the 10 largest flows with their names
  SELECT g.name AS origin, h.name AS destination, p.count FROM trips_private p
    JOIN geo g ON g.municipality = p.o_mun JOIN geo h ON h.municipality = p.d_mun
    ORDER BY p.count DESC LIMIT 10;
  -- a regional total (any level is the sum of its leaves)
  SELECT o_region, d_region, sum(count) AS trips FROM trips_private
    GROUP BY ALL ORDER BY trips DESC LIMIT 5;
Then: inftda-sql evaluate {db} trips trips_private --plot errors.png --zoom zoom.png""")
    return 0


def _build_demo(path: Path, args: argparse.Namespace) -> tuple[tuple[Any, Any], str | None]:
    """Generate the data into the new file ``path`` and release it; return the largest flow
    between two municipalities and the file's storage version."""
    from ..synthetic import italy_like

    con = connect(path, storage_version=args.storage_version)
    try:
        t0 = time.perf_counter()
        data = italy_like(con, scale=args.scale, seed=args.data_seed)
        run(con, render("demo.create_marker", marker=ident(_DEMO_MARKER)))
        provinces, municipalities = rows(con, render("demo.geography", geo=ident(data.geo)))[0]
        print(
            f"generated geography '{data.geo}' (20 regions, {provinces} provinces, "
            f"{municipalities:,} municipalities) and '{data.trips}' ({data.trips_total:,} trips "
            f"over {data.pairs:,} O/D pairs) in {time.perf_counter() - t0:.1f} s"
        )
        names = console.level_names(data.hierarchy, "destination")
        with console.Progress(names, enabled=not args.quiet) as progress:
            r = release(
                con,
                data.trips,
                hierarchy=data.hierarchy,
                # one geography for both chains: o_region/d_region read region by their
                # prefix (and so on); the leaves are named otherwise
                domain=Domain(data.geo, columns={"o_mun": "municipality", "d_mun": "municipality"}),
                tree="destination",
                epsilon=args.epsilon,
                delta=args.delta,
                output="trips_private",
                progress=progress,
            )
        print(r)
        o_mun, d_mun = rows(con, render("demo.top_flow", released=ident("trips_private")))[0]
        return (o_mun, d_mun), storage_version(con)
    finally:
        con.close()


# ----------------------------------------------------------------------------------------------
# release


def release_(args: argparse.Namespace) -> int:
    """Release a table of a database file (or a parquet/CSV file into one), with the options
    of flags and a TOML config.

    A file input needs no database yet: a missing ``db`` is created (in the storage format
    DuckDB 1.x clients open, unless ``--storage-version`` says otherwise), and removed again
    when the release fails, so a mistyped command leaves no empty file behind.
    """
    options = release_options(args)
    db = Path(args.db)
    create = file_spelling(args.table) is not None and not db.exists()
    if create:
        con = connect(
            db,
            storage_version=args.storage_version or COMPATIBLE_STORAGE_VERSION,
            timeout=_timeout(options),
        )
    else:
        con = _open(args.db, storage=args.storage_version, timeout=_timeout(options))
    done = False
    try:
        if "features" in options:  # one line per feature query, numbered from 1
            names = console.query_names(options["features"], options.get("structure"))
            with console.Progress(names, enabled=not args.quiet) as bar:
                r = release(
                    con,
                    args.table,
                    progress=lambda s: bar(dataclasses.replace(s, level=s.level + 1)),
                    **options,
                )
        else:
            names = console.level_names(options["hierarchy"], options.get("tree"))
            with console.Progress(names, enabled=not args.quiet) as progress:
                r = release(con, args.table, progress=progress, **options)
        note = _storage_note(con, args.db)
        done = True
    finally:
        con.close()
        if create and not done:
            db.unlink(missing_ok=True)
            Path(f"{db}.wal").unlink(missing_ok=True)
    if create:
        print(f"created {db}")
    print(r)
    if note:
        print(note)
    return 0


# ----------------------------------------------------------------------------------------------
# count-of-counts


def count_of_counts(args: argparse.Namespace) -> int:
    """Release private count-of-counts histograms of a persons table."""
    options = count_of_counts_options(args)
    with _installed("count-of-counts"):
        from .._count_of_counts import release_count_of_counts
    con = _open(args.db, timeout=_timeout(options))
    try:
        r = release_count_of_counts(con, args.table, **options)
    finally:
        con.close()
    print(r)
    return 0


def _coc_params(con: duckdb.DuckDBPyConnection, released: str) -> dict[str, Any] | None:
    """The group column and hierarchy of the latest count-of-counts release to ``released``."""
    found = read_releases(con, output=released, latest=True)
    if not found:
        return None
    details = json.loads(found[0].details or "{}")
    if details.get("kind") != "count_of_counts":
        return None
    return {
        "group": details["mechanism_params"]["group"],
        "hierarchy": json.loads(found[0].hierarchy)["chains"][0],
    }


# ----------------------------------------------------------------------------------------------
# evaluate


def _from_ledger(con: duckdb.DuckDBPyConnection, released: str) -> tuple[Any, str | None] | None:
    """Hierarchy and tree of the latest release written to ``released``, from the ledger."""
    found = read_releases(con, output=released, latest=True)
    if not found:
        return None
    shape = json.loads(found[0].hierarchy)
    if "chains" not in shape:
        raise UsageError(
            f"inftda-sql evaluate: {released!r} is a feature release ({found[0].mechanism}): "
            "evaluate compares the levels of a hierarchy; pass --hierarchy to score it as one, "
            f"or compare each feature of its {released}_features view with the truth in SQL"
        )
    recorded = shape["chains"]
    return (recorded[0] if len(recorded) == 1 else recorded), found[0].tree


def evaluate(args: argparse.Namespace) -> int:
    """Per-level error of a release against the truth; plots to PNG files."""
    with _installed("evaluate"):
        from .._evaluate import evaluate as evaluate_release
    if args.plot:
        _require_matplotlib("evaluate --plot")
        with _installed("evaluate --plot"):
            from .._plot import plot_evaluation
    if args.zoom:
        _require_matplotlib("evaluate --zoom")
        with _installed("evaluate --zoom"):
            from .._plot import plot_zoom
    written: list[Path] = []
    con = _open(args.db, read_only=True)  # evaluation never writes
    try:
        coc = _coc_params(con, args.released)
        if coc is not None:  # a count-of-counts release: earthmover's distance per level
            from .._evaluate import evaluate_count_of_counts

            rel = evaluate_count_of_counts(con, args.truth, args.released, **coc)
            console.emit(list(rel.columns), rel.fetchall(), args.format)
            return 0
        hierarchy: Any = chains(args.hierarchy) if args.hierarchy else None
        tree = args.tree
        if hierarchy is None:
            found = _from_ledger(con, args.released)
            if found is None:
                raise UsageError(
                    f"inftda-sql evaluate: --hierarchy is required ({args.released!r} is not "
                    "the output of a release recorded in this database's ledger)"
                )
            hierarchy, ledger_tree = found
            tree = tree or ledger_tree
        kw: dict[str, Any] = {
            "hierarchy": hierarchy,
            "tree": tree,
            "count": args.count,
            "released_count": args.released_count,
        }
        rel = evaluate_release(con, args.truth, args.released, **kw)
        console.emit(list(rel.columns), rel.fetchall(), args.format)
        if args.plot:
            written.append(
                plot_evaluation(rel, Path(args.plot), title=args.title, label=args.label)
            )
        if args.zoom:
            written.append(
                plot_zoom(con, args.truth, args.released, Path(args.zoom), title=args.title, **kw)
            )
    finally:
        con.close()
    for path in written:
        print(f"wrote {path}", file=sys.stderr if args.format != "table" else sys.stdout)
    return 0


# ----------------------------------------------------------------------------------------------
# ledger and budget


def ledger(args: argparse.Namespace) -> int:
    """The releases recorded in a database and the budget spent per input (the diagnostics in
    each release's details only with ``--include-diagnostics``)."""
    with _installed("ledger"):
        from .._budget import ledger as read_ledger
    con = _open(args.db, read_only=True)
    try:
        result = read_ledger(con, include_diagnostics=args.include_diagnostics)
    finally:
        con.close()
    if args.format == "table":
        text = str(result)
        print(f"no releases recorded in {args.db}" if text == "no releases recorded" else text)
        return 0
    if args.format == "json":
        print(
            json.dumps(
                {"releases": result.releases, "inputs": result.inputs}, default=str, indent=1
            )
        )
        return 0
    columns = list(result.releases[0]) if result.releases else ["release_id"]
    console.emit(columns, [[r[c] for c in columns] for r in result.releases], "csv")
    return 0


def budget(args: argparse.Namespace) -> int:
    """Store the total budget of an input table."""
    with _installed("budget"):
        from .._budget import budget_keys, set_budget
        from .._budget import ledger as read_ledger
    con = _open(args.db)
    try:
        stored = set_budget(
            con,
            args.table,
            rho=args.rho,
            epsilon=args.epsilon,
            delta=args.delta,
            conversion=args.conversion or "tight",
        )
        keys = [k.lower() for k in budget_keys(con, args.table)]
        inputs = {i["input_table"].lower(): i for i in read_ledger(con).inputs}
    finally:
        con.close()
    print(
        f"budget of {args.table!r}: rho={stored.rho:.6g} ~ (epsilon={stored.epsilon:.4g}, "
        f"delta={stored.delta:.3g}) [{stored.conversion} conversion]"
    )
    for key in keys:
        entry = inputs.get(key)
        if entry is None:
            continue
        where = f" of {entry['input_table']}" if len(keys) > 1 else ""
        print(
            f"spent so far{where}: rho={entry['spent_rho']:.6g} in {entry['releases']} "
            f"release(s); remaining rho={entry['remaining_rho']:.6g}"
        )
    return 0


# ----------------------------------------------------------------------------------------------
# publish and plan


def publish(args: argparse.Namespace) -> int:
    """Copy a release, and nothing private, into a new file to share."""
    from .._publish import publish as publish_release

    # read-write only because DuckDB cannot attach a new file from a read-only connection;
    # publish() writes nothing to the working database
    con = _open(args.db)
    try:
        out = publish_release(
            con,
            args.output,
            args.path,
            public_tables=[t for t in (args.public_table or []) if t],
            storage_version=args.storage_version,
            overwrite=args.overwrite,
            allow_non_private=args.allow_non_private,
        )
    finally:
        con.close()
    print(
        f"published {args.output!r} to {out}: the released table, its levels view and its "
        "ledger row (no input, no diagnostics); share this file, not the working database"
    )
    return 0


def plan(args: argparse.Namespace) -> int:
    """Noise and expected error per level, from a shape or a database's public domain."""
    with _installed("plan"):
        from .._planning import plan as make_plan
    kw = plan_options(args)
    if args.levels is not None:
        result = make_plan(args.levels, **kw)
    else:
        # only the public domain is read: from the database file, or from files in memory
        con = duckdb.connect() if args.db is None else _open(args.db, read_only=True)
        try:
            result = make_plan(
                con=con,
                hierarchy=chains(args.hierarchy),
                domain=plan_domain(args),
                tree=args.tree,
                **kw,
            )
        finally:
            con.close()
    if args.json:
        print(json.dumps(result.as_dict(), indent=1, default=str))
    else:
        print(result)
    return 0


# ----------------------------------------------------------------------------------------------
# sql


def sql(args: argparse.Namespace) -> int:
    """A SQL shell on a database, with the SQL functions of inftda_sql registered."""
    from ..engines.duckdb.functions import register
    from .shell import Shell, banner, script_reader, terminal_reader

    memory = args.db == ":memory:"
    con = connect(":memory:") if memory else _open(args.db, read_only=args.read_only)
    try:
        functions = register(con)
        shell = Shell(con, max_rows=args.max_rows)
        if args.sql is not None:
            try:
                return 0 if shell.run(args.sql) else 1
            except EOFError:  # -c .quit
                return 0
        if sys.stdin.isatty():
            print(banner(args.db, functions))
            return shell.loop(terminal_reader(), interactive=True)
        return shell.loop(script_reader(sys.stdin.read()), interactive=False)
    finally:
        con.close()


#: the function of each command
COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "demo": demo,
    "release": release_,
    "count-of-counts": count_of_counts,
    "evaluate": evaluate,
    "plan": plan,
    "ledger": ledger,
    "budget": budget,
    "publish": publish,
    "sql": sql,
}
