"""Command line: ``inftda-sql`` (also ``python -m inftda_sql``).

Commands: ``demo`` (build a demo database and release it), ``release`` (every option of
:func:`inftda_sql.release` from flags or a TOML file), ``evaluate`` (per-level error of a
release against the truth, plots to PNG), ``plan`` (noise and expected error per level before
touching any data), ``budget`` (cap the releases of an input) and ``ledger`` (releases made and
budget spent).

Exit codes: 0 success, 2 usage error, 1 anything else. Errors print one line on stderr, in the
command line's spelling (``--overwrite``, not ``overwrite=True``); ``--debug`` shows the
traceback instead. A release that takes more than a moment draws a progress bar on stderr when
stderr is a terminal (``--quiet`` silences it).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import csv
import importlib
import json
import math
import os
import re
import shutil
import sys
import threading
import time
import tomllib
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, TextIO

import duckdb

from ._compat import COMPATIBLE_STORAGE_VERSION, connect, storage_version
from ._errors import InftdaError, SpecError
from ._release import MECHANISMS, release
from ._version import __version__
from .core.spec import TREE_KINDS, parse_hierarchy
from .core.tree import LevelStats
from .engines.duckdb.ledger import read_releases

__all__ = ["main"]


class _UsageError(Exception):
    """A malformed command line: exit code 2."""


class _Unavailable(InftdaError):
    """A command whose implementation is not part of this installation."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise _UsageError(f"{self.prog}: {message} (see --help)")


# ----------------------------------------------------------------------------------------------
# messages in the command line's spelling


_OPTIONS = (
    "hierarchy", "domain_from_data", "domain", "tree", "rho", "epsilon", "delta", "conversion",
    "privacy", "contribution", "distinct", "split", "count", "output", "overwrite", "mechanism",
    "seed", "levels_view", "max_cells", "storage_version", "privacy_unit", "budget_override",
    "target_levels",
)  # fmt: skip
_LITERAL = "|".join(  # the Python value after ``name=`` in a library message
    [
        r"\[\[.*?\]\]",
        r"\[[^\]]*\]",
        r"'[^']*'",
        r'"[^"]*"',
        r"float\('inf'\)",
        r"\.\.\.",
        "True",
        "False",
        r"[-+]?\d[\w.+-]*",
    ]
)
_KEYWORD = re.compile(rf"(?<![\w.'\"-])({'|'.join(_OPTIONS)})=({_LITERAL})?")
_MAPPING = re.compile(r" or domain=\{[^{}]*\}")
_DOMAIN_LIST = re.compile(r"so domain must be a list of (\d+) domains")
_SET_BUDGET = re.compile(r"\bset_budget\(\)")


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _items(text: str) -> str:
    """``['a', 'b']`` -> ``a,b`` (placeholders such as ``origin columns...`` become ``<...>``)."""
    parts = [p.strip().strip("'\"") for p in text.strip("[]").split(",") if p.strip()]
    if any(" " in p for p in parts):
        return "<" + ", ".join(p.rstrip(".") for p in parts) + ">"
    return ",".join(parts)


def _keyword(m: re.Match[str]) -> str:
    name, value = m[1], m[2]
    flag = _flag(name)
    if value is None or value == "True":
        return flag
    if value == "False":
        return "--no-" + flag[2:]
    if value == "...":
        return f"{flag} ..."
    if value == "float('inf')":
        return f"{flag} inf"
    if value.startswith("[["):
        return " ".join(f"{flag} {_items(inner)}" for inner in re.findall(r"\[([^\[\]]*)\]", value))
    if value.startswith("["):
        return f"{flag} {_items(value)}"
    if value[0] in "'\"":
        try:
            return f"{flag} {ast.literal_eval(value)}"
        except (ValueError, SyntaxError):
            return f"{flag} {value.strip(chr(39) + chr(34))}"
    trail = "." if value.endswith(".") else ""
    return f"{flag} {value.rstrip('.')}{trail}"


def cli_spelling(message: str) -> str:
    """Rewrite a library message for the command line: ``overwrite=True`` -> ``--overwrite``.

    Example:
        >>> cli_spelling("pass overwrite=True to replace it or choose another output= name")
        'pass --overwrite to replace it or choose another --output name'
        >>> cli_spelling("epsilon=1 needs a delta: pass delta=... as well (e.g. delta=1e-8)")
        '--epsilon 1 needs a delta: pass --delta ... as well (e.g. --delta 1e-8)'
    """
    message = _MAPPING.sub("", message)
    message = _DOMAIN_LIST.sub(r"so --domain must be given \1 times", message)
    message = _SET_BUDGET.sub("`inftda-sql budget`", message)
    return _KEYWORD.sub(_keyword, message)


def _one_line(text: str) -> str:
    return " ".join(line.strip() for line in str(text).splitlines() if line.strip())


# ----------------------------------------------------------------------------------------------
# progress bar

_PROGRESS_DELAY = 0.5  # seconds before anything is drawn: quick releases stay silent
_PROGRESS_TICK = 0.2


class _Progress:
    """A per-level progress bar on a terminal, drawn only once a release takes a moment.

    Each completed level leaves one line (parents, cells noised, cells kept, seconds); a bar
    under them shows the levels done and what runs now. Nothing is drawn when disabled, when
    the stream is not a terminal, or when the release ends within ``delay`` seconds.
    """

    def __init__(
        self,
        level_names: Sequence[str],
        *,
        enabled: bool = True,
        stream: TextIO | None = None,
        delay: float | None = None,
    ) -> None:
        self.stream = sys.stderr if stream is None else stream
        self.enabled = enabled and _isatty(self.stream)
        self.names = list(level_names)
        self.delay = _PROGRESS_DELAY if delay is None else delay
        self.start = time.perf_counter()
        self.done = 0
        self.pending: list[str] = []
        self.visible = False
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None

    # the callback given to release(progress=...)
    def __call__(self, stats: LevelStats) -> None:
        if not self.enabled:
            return
        with self.lock:
            self.done = max(self.done, stats.level)
            if stats.level > 0 or stats.noised_cells:
                total = max(len(self.names), stats.level)
                self.pending.append(
                    f"  level {stats.level}/{total} {stats.name}: {stats.parents:,} parents, "
                    f"{stats.noised_cells:,} cells noised, {stats.surviving_cells:,} kept "
                    f"({stats.seconds:.1f} s)"
                )
            self._draw()

    def __enter__(self) -> _Progress:
        self.start = time.perf_counter()
        if self.enabled:
            self.thread = threading.Thread(target=self._tick, name="inftda-progress", daemon=True)
            self.thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop.set()
        if self.thread is not None:
            self.thread.join()
        with self.lock:
            if self.visible:  # keep the lines of the levels done, remove the bar
                lines = "".join(f"\r\033[K{line}\n" for line in self.pending)
                self.stream.write(f"{lines}\r\033[K")
                self.stream.flush()

    def _tick(self) -> None:
        while not self.stop.wait(_PROGRESS_TICK):
            with self.lock:
                self._draw()

    def _now(self) -> str:
        n = len(self.names)
        if self.done == 0 and not self.pending:
            return "reading the input and the domain"
        if self.done < n:
            return f"level {self.done + 1}: {self.names[self.done]}"
        return "writing the output"

    def _draw(self) -> None:
        elapsed = time.perf_counter() - self.start
        if self.stop.is_set() or elapsed < self.delay:
            return
        self.visible = True
        width = _width(self.stream)
        out = [f"\r\033[K{line}\n" for line in self.pending]
        self.pending.clear()
        n = max(len(self.names), 1)
        filled = round(20 * min(self.done, n) / n)
        bar = f"[{'#' * filled}{'-' * (20 - filled)}] {min(self.done, n)}/{n} levels"
        status = f"{bar}  {self._now()}  {elapsed:.1f} s"
        out.append(f"\r\033[K{status[: width - 1]}")
        self.stream.write("".join(out))
        self.stream.flush()


def _width(stream: TextIO) -> int:
    """Columns of the terminal ``stream`` writes to (80 if unknown)."""
    try:
        return os.get_terminal_size(stream.fileno()).columns or 80
    except (AttributeError, ValueError, OSError):
        return shutil.get_terminal_size((80, 24)).columns


def _isatty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _level_names(hierarchy: object, tree: object) -> list[str]:
    """Names of levels 1..n (for the progress bar); empty if the hierarchy is malformed."""
    try:
        spec = parse_hierarchy(hierarchy, tree if isinstance(tree, str) else None)
    except InftdaError:
        return []
    return [spec.level_name(lv) for lv in range(1, spec.n_levels + 1)]


# ----------------------------------------------------------------------------------------------
# helpers


def _open(
    path: str, *, read_only: bool = False, storage: str | None = None
) -> duckdb.DuckDBPyConnection:
    """Open an existing database file (``connect`` explains paths that are not one)."""
    if not Path(path).exists():
        raise InftdaError(
            f"database file {path!r} does not exist; check the path (or run "
            "`inftda-sql demo` to create demo.duckdb)"
        )
    return connect(path, read_only=read_only, storage_version=storage)


def _scalar(con: duckdb.DuckDBPyConnection, sql: str) -> Any:
    return con.execute(sql).fetchall()[0][0]


def _chains(values: Sequence[str]) -> list[list[str]] | list[str]:
    chains = [[c.strip() for c in v.split(",") if c.strip()] for v in values]
    return chains[0] if len(chains) == 1 else chains


def _split(text: str) -> list[float] | str:
    if text.strip() == "optimal":
        return "optimal"
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated weights (e.g. 1,1,2) or 'optimal', got {text!r}"
        ) from None


def _counts(text: str) -> list[int]:
    try:
        values = [int(x.replace("_", "")) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated node counts per level (e.g. 20,107,7900), got {text!r}"
        ) from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"node counts must be positive integers, got {text!r}")
    return values


def _optional(module: str, attr: str, feature: str) -> Any:
    """``inftda_sql.<module>.<attr>``, or a clear error if this installation lacks it."""
    try:
        mod = importlib.import_module(f"inftda_sql.{module}")
    except ModuleNotFoundError as exc:
        if exc.name == f"inftda_sql.{module}":
            raise _Unavailable(
                f"{feature} is not available in this version of inftda-sql ({__version__})"
            ) from None
        if exc.name and exc.name.split(".")[0] == "matplotlib":
            raise _Unavailable(
                f"{feature} needs matplotlib: pip install 'inftda-sql[plot]'"
            ) from None
        raise
    try:
        return getattr(mod, attr)
    except AttributeError:
        raise _Unavailable(
            f"{feature} is not available in this version of inftda-sql ({__version__})"
        ) from None


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        if value.is_integer() and abs(value) >= 1e4:
            return f"{value:,.0f}"
        return f"{value:.4g}"
    return str(value)


def _table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain-text table: numbers right-aligned, text left-aligned."""
    cells = [[_cell(v) for v in r] for r in rows]
    numeric = [
        all(isinstance(r[i], (int, float)) or r[i] is None for r in rows) and bool(rows)
        for i in range(len(columns))
    ]
    widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(columns)]

    def line(values: Sequence[str]) -> str:
        return "  ".join(
            v.rjust(w) if num else v.ljust(w)
            for v, w, num in zip(values, widths, numeric, strict=True)
        ).rstrip()

    return "\n".join([line(list(columns)), *(line(r) for r in cells)])


def _emit(columns: Sequence[str], rows: Sequence[Sequence[Any]], fmt: str) -> None:
    if fmt == "csv":
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(rows)
    elif fmt == "json":
        print(json.dumps([dict(zip(columns, r, strict=True)) for r in rows], default=str, indent=1))
    else:
        print(_table(columns, rows))


def _storage_note(con: duckdb.DuckDBPyConnection, db: str) -> str | None:
    version = storage_version(con)
    if version is None or version.split(".")[0] in ("v0", "v1"):
        return None
    return (
        f"note: {db} is in DuckDB's {version} storage format, which DuckDB 1.x clients (the "
        "driver of SQL IDEs such as DBeaver, the Node client) cannot open; create files with "
        f"--storage-version {COMPATIBLE_STORAGE_VERSION} (see README)"
    )


# ----------------------------------------------------------------------------------------------
# demo

_DEMO_MARKER = "inftda_demo"


def _is_demo_file(path: Path) -> bool:
    """True if ``path`` is a DuckDB file an earlier demo made (safe to rebuild)."""
    try:
        with duckdb.connect(str(path), read_only=True) as con:
            return bool(
                con.execute(
                    "SELECT count(*) FROM information_schema.tables WHERE table_name = $t",
                    {"t": _DEMO_MARKER},
                ).fetchall()[0][0]
            )
    except duckdb.Error:
        return False


def _demo(args: argparse.Namespace) -> int:
    from .synthetic import italy_like

    db = Path(args.db)
    if db.exists():
        if not (args.overwrite or _is_demo_file(db)):
            raise InftdaError(
                f"{str(db)!r} exists and was not made by `inftda-sql demo`; pass "
                "--overwrite to replace it or --db to choose another file"
            )
        db.unlink()
        Path(str(db) + ".wal").unlink(missing_ok=True)
    con = connect(db, storage_version=args.storage_version)
    try:
        t0 = time.perf_counter()
        data = italy_like(con, scale=args.scale, seed=args.data_seed)
        con.execute(
            f"CREATE TABLE {_DEMO_MARKER} AS SELECT 'made by inftda-sql demo' AS note"
        ).fetchall()
        print(
            f"created {db}: geography '{data.geo}' (20 regions, "
            f"{_scalar(con, f'SELECT count(DISTINCT province) FROM {data.geo}')} provinces, "
            f"{_scalar(con, f'SELECT count(*) FROM {data.geo}'):,} municipalities) and "
            f"'{data.trips}' ({data.trips_total:,} trips over {data.pairs:,} O/D pairs) "
            f"in {time.perf_counter() - t0:.1f} s"
        )
        with _Progress(
            _level_names(data.hierarchy, "destination"), enabled=not args.quiet
        ) as progress:
            r = release(
                con,
                data.trips,
                hierarchy=data.hierarchy,
                domain=[data.geo_origin, data.geo_destination],
                tree="destination",
                epsilon=args.epsilon,
                delta=args.delta,
                output="trips_private",
                progress=progress,
            )
        print(r)
        o_mun, d_mun = con.execute(
            "SELECT o_mun, d_mun FROM trips_private WHERE o_mun <> d_mun "
            "ORDER BY count DESC, o_mun, d_mun LIMIT 1"
        ).fetchall()[0]
        version = storage_version(con)
    finally:
        con.close()
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


# ----------------------------------------------------------------------------------------------
# release

_RELEASE_KEYS = {
    "hierarchy", "domain", "tree", "rho", "epsilon", "delta", "conversion", "privacy",
    "contribution", "distinct", "split", "count", "output", "overwrite", "mechanism", "seed",
    "domain_from_data", "levels_view", "max_cells", "privacy_unit", "budget_override",
}  # fmt: skip
_BUDGET_FLAGS = ("rho", "epsilon", "delta", "conversion", "privacy", "contribution", "split")


def _read_config(path: str) -> dict[str, Any]:
    try:
        options = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise SpecError(f"cannot read config {path!r}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"config {path!r} is not valid TOML: {exc}") from None
    unknown = set(options) - _RELEASE_KEYS
    if unknown:
        raise SpecError(
            f"unknown key(s) in {path!r}: {', '.join(sorted(unknown))}; "
            f"allowed: {', '.join(sorted(_RELEASE_KEYS))}"
        )
    return options


def _release(args: argparse.Namespace) -> int:
    options: dict[str, Any] = _read_config(args.config) if args.config else {}
    if args.hierarchy:
        options["hierarchy"] = _chains(args.hierarchy)
    if args.domain:
        options["domain"] = args.domain[0] if len(args.domain) == 1 else args.domain
    for key in (
        *_BUDGET_FLAGS, "tree", "count", "output", "mechanism", "seed", "max_cells", "privacy_unit"
    ):  # fmt: skip
        value = getattr(args, key)
        if value is not None:
            options[key] = value
    for key in ("overwrite", "distinct", "domain_from_data", "budget_override"):
        if getattr(args, key):
            options[key] = True
    if args.no_levels_view:
        options["levels_view"] = False
    if "hierarchy" not in options:
        raise _UsageError(
            "inftda-sql release: --hierarchy is required (e.g. --hierarchy region,province,mun)"
        )
    con = _open(args.db, storage=args.storage_version)
    try:
        names = _level_names(options["hierarchy"], options.get("tree"))
        with _Progress(names, enabled=not args.quiet) as progress:
            r = release(con, args.table, progress=progress, **options)
        note = _storage_note(con, args.db)
    finally:
        con.close()
    print(r)
    if note:
        print(note)
    return 0


# ----------------------------------------------------------------------------------------------
# evaluate


def _from_ledger(con: duckdb.DuckDBPyConnection, released: str) -> tuple[Any, str | None] | None:
    """Hierarchy and tree of the latest release written to ``released``, from the ledger."""
    found = read_releases(con, output=released, latest=True)
    if not found:
        return None
    chains = json.loads(found[0].hierarchy)["chains"]
    return (chains[0] if len(chains) == 1 else chains), found[0].tree


def _evaluate(args: argparse.Namespace) -> int:
    evaluate = _optional("_evaluate", "evaluate", "evaluate")
    plot_evaluation = plot_zoom = None
    if args.plot:
        plot_evaluation = _optional("_plot", "plot_evaluation", "evaluate --plot")
    if args.zoom:
        plot_zoom = _optional("_plot", "plot_zoom", "evaluate --zoom")
    written: list[Path] = []
    con = _open(args.db, read_only=True)  # evaluation never writes
    try:
        hierarchy: Any = _chains(args.hierarchy) if args.hierarchy else None
        tree = args.tree
        if hierarchy is None:
            found = _from_ledger(con, args.released)
            if found is None:
                raise _UsageError(
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
        rel = evaluate(con, args.truth, args.released, **kw)
        columns = list(rel.columns)
        rows = rel.fetchall()
        _emit(columns, rows, args.format)
        if plot_evaluation is not None:
            written.append(
                plot_evaluation(rel, Path(args.plot), title=args.title, label=args.label)
            )
        if plot_zoom is not None:
            written.append(
                plot_zoom(con, args.truth, args.released, Path(args.zoom), title=args.title, **kw)
            )
    finally:
        con.close()
    for path in written:
        print(f"wrote {path}", file=sys.stderr if args.format != "table" else sys.stdout)
    return 0


# ----------------------------------------------------------------------------------------------
# ledger


def _ledger(args: argparse.Namespace) -> int:
    ledger = _optional("_budget", "ledger", "ledger")
    con = _open(args.db, read_only=True)
    try:
        result = ledger(con)
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
    _emit(columns, [[r[c] for c in columns] for r in result.releases], "csv")
    return 0


def _budget(args: argparse.Namespace) -> int:
    set_budget = _optional("_budget", "set_budget", "budget")
    ledger = _optional("_budget", "ledger", "budget")
    con = _open(args.db)
    try:
        budget = set_budget(
            con,
            args.table,
            rho=args.rho,
            epsilon=args.epsilon,
            delta=args.delta,
            conversion=args.conversion or "tight",
        )
        entry = next(
            (i for i in ledger(con).inputs if i["input_table"].lower() == args.table.lower()), None
        )
    finally:
        con.close()
    print(
        f"budget of {args.table!r}: rho={budget.rho:.6g} ~ (epsilon={budget.epsilon:.4g}, "
        f"delta={budget.delta:.3g}) [{budget.conversion} conversion]"
    )
    if entry is not None:
        print(
            f"spent so far: rho={entry['spent_rho']:.6g} in {entry['releases']} release(s); "
            f"remaining rho={entry['remaining_rho']:.6g}"
        )
    return 0


# ----------------------------------------------------------------------------------------------
# plan


def _publish(args: argparse.Namespace) -> int:
    from ._publish import publish

    # read-write only because DuckDB cannot attach a new file from a read-only connection;
    # publish() writes nothing to the working database
    con = _open(args.db)
    try:
        out = publish(
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


def _plan(args: argparse.Namespace) -> int:
    plan = _optional("_planning", "plan", "plan")
    kw: dict[str, Any] = {
        "conversion": args.conversion or "tight",
        "privacy": args.privacy or "bounded",
        "contribution": 1 if args.contribution is None else args.contribution,
        "distinct": args.distinct,
        "beta": args.beta,
        "simulations": args.simulations,
        "total": args.total,
        "seed": args.seed,
    }
    for key in ("rho", "epsilon", "delta", "split"):
        value = getattr(args, key)
        if value is not None:
            kw[key] = value
    if args.target_levels:
        targets = [t.strip() for arg in args.target_levels for t in arg.split(",") if t.strip()]
        kw["target_levels"] = [int(t) if t.isdigit() else t for t in targets]
        kw.setdefault("split", "optimal")  # target levels only mean something to that split
    if args.db is None:
        if args.levels is None:
            raise _UsageError(
                "inftda-sql plan: give --levels (nodes per level, e.g. --levels 20,107,7900) "
                "or a database with --hierarchy and --domain"
            )
        if args.hierarchy or args.domain or args.tree:
            raise _UsageError(
                "inftda-sql plan: --hierarchy, --domain and --tree need a database file"
            )
        result = plan(args.levels, **kw)
    else:
        if args.levels is not None:
            raise _UsageError("inftda-sql plan: give --levels or a database, not both")
        if not args.hierarchy or not args.domain:
            raise _UsageError(
                "inftda-sql plan: with a database, --hierarchy and --domain are required "
                "(e.g. plan demo.duckdb --hierarchy region,province,municipality --domain geo)"
            )
        con = _open(args.db, read_only=True)  # only the public domain is read
        try:
            result = plan(
                con=con,
                hierarchy=_chains(args.hierarchy),
                domain=args.domain[0] if len(args.domain) == 1 else args.domain,
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
# parser


def _add_budget(p: argparse.ArgumentParser, *, privacy_unit: bool = False) -> None:
    g = p.add_argument_group("privacy budget")
    g.add_argument("--rho", type=float, help="zCDP budget (or --epsilon with --delta)")
    g.add_argument("--epsilon", type=float)
    g.add_argument("--delta", type=float)
    g.add_argument("--conversion", choices=["tight", "simple"], help="rho <-> (epsilon, delta)")
    g.add_argument("--privacy", choices=["bounded", "unbounded"], help="default bounded")
    g.add_argument("--contribution", type=int, help="records per person (default 1)")
    if privacy_unit:
        g.add_argument(
            "--privacy-unit",
            metavar="COLUMN",
            help="column identifying a person: each keeps at most --contribution records",
        )
    g.add_argument(
        "--distinct", action="store_true", help="a person's records fall in distinct leaf cells"
    )
    g.add_argument(
        "--split",
        type=_split,
        help="per-level weights of rho, e.g. 1,1,2"
        + (" (plan: or 'optimal' for the --target-levels)" if not privacy_unit else ""),
    )


def _add_hierarchy(p: argparse.ArgumentParser, help_suffix: str = "") -> None:
    p.add_argument(
        "--hierarchy",
        action="append",
        help="one chain, comma-separated coarse to fine; repeat for several chains" + help_suffix,
    )
    p.add_argument("--tree", choices=list(TREE_KINDS), help="how several chains are refined")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="inftda-sql",
        description="Differentially private hierarchical counts (InfTDA) on DuckDB.",
        epilog="Exit codes: 0 success, 2 usage error, 1 any other error.",
    )
    p.add_argument("--version", action="version", version=f"inftda-sql {__version__}")
    p.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    d = sub.add_parser("demo", help="build demo.duckdb (Italy-like O/D trips) and release it")
    d.add_argument("--db", default="demo.duckdb", help="database file to create (demo.duckdb)")
    d.add_argument(
        "--scale", type=float, default=0.25, help="1.0 = 28.8M trips over ~500K pairs; default 0.25"
    )
    d.add_argument("--epsilon", type=float, default=1.0)
    d.add_argument("--delta", type=float, default=1e-8)
    d.add_argument("--data-seed", type=int, default=0, help="seed of the synthetic data")
    d.add_argument(
        "--storage-version",
        default=COMPATIBLE_STORAGE_VERSION,
        help=f"DuckDB storage format of the file (default {COMPATIBLE_STORAGE_VERSION}: readable "
        "by DuckDB 1.0 and later, e.g. DBeaver's driver; 'latest' for this DuckDB's own)",
    )
    d.add_argument(
        "--overwrite", action="store_true", help="replace an existing file that no demo made"
    )
    d.add_argument("--quiet", action="store_true", help="no progress bar")
    d.set_defaults(func=_demo)

    r = sub.add_parser("release", help="release a table of a DuckDB file")
    r.add_argument("db", help="DuckDB database file")
    r.add_argument("table", help="input table or view")
    r.add_argument("--config", help="TOML file with release options (flags override it)")
    _add_hierarchy(r)
    r.add_argument("--domain", action="append", help="public domain table; one per chain")
    _add_budget(r, privacy_unit=True)
    r.add_argument("--count", help="count column of a pre-aggregated input")
    r.add_argument("--output", help="output table (default <table>_private)")
    r.add_argument("--overwrite", action="store_true", help="replace the output table")
    r.add_argument("--mechanism", choices=list(MECHANISMS))
    r.add_argument("--seed", type=int, help="TESTS ONLY: reproducible, non-private noise")
    r.add_argument(
        "--domain-from-data",
        action="store_true",
        help="NOT PRIVATE: take categories from the data (recorded in the ledger)",
    )
    r.add_argument(
        "--budget-override",
        action="store_true",
        help="release even if the input's stored budget would be exceeded (recorded)",
    )
    r.add_argument("--no-levels-view", action="store_true", help="no <output>_levels view")
    r.add_argument("--max-cells", type=int, help="limit of full-domain mechanisms")
    r.add_argument(
        "--storage-version",
        help="refuse a file older DuckDB versions cannot read (e.g. v1.0.0)",
    )
    r.add_argument("--quiet", action="store_true", help="no progress bar")
    r.set_defaults(func=_release)

    e = sub.add_parser(
        "evaluate", help="per-level error of a release against the true counts, plots to PNG"
    )
    e.add_argument("db", help="DuckDB database file")
    e.add_argument("truth", help="the private input table (or a table of true counts)")
    e.add_argument("released", help="the released table")
    _add_hierarchy(e, " (default: from the ledger row of the release)")
    e.add_argument("--count", help="count column of a pre-aggregated truth")
    e.add_argument("--released-count", default="count", help="count column of the release")
    e.add_argument("--plot", metavar="PNG", help="write per-level error and FDR to this file")
    e.add_argument(
        "--zoom", metavar="PNG", help="write true vs released totals at each level to this file"
    )
    e.add_argument("--title", help="plot title")
    e.add_argument("--label", help="legend label of the release")
    e.add_argument("--format", choices=["table", "csv", "json"], default="table")
    e.set_defaults(func=_evaluate)

    lg = sub.add_parser("ledger", help="releases recorded in a database and the budget spent")
    lg.add_argument("db")
    lg.add_argument("--format", choices=["table", "csv", "json"], default="table")
    lg.set_defaults(func=_ledger)

    pb = sub.add_parser(
        "publish", help="copy a release (and nothing private) into a new file to share"
    )
    pb.add_argument("db", help="the working database holding the release")
    pb.add_argument("output", help="the released table")
    pb.add_argument("path", help="the new file to write")
    pb.add_argument(
        "--public-table",
        action="append",
        help="a public table to copy along (e.g. the geography); repeat for more",
    )
    pb.add_argument(
        "--storage-version",
        default="v1.0.0",
        help="storage format of the new file (default v1.0.0: DuckDB 1.x clients "
        "such as DBeaver open it; 'latest' for this DuckDB's own)",
    )
    pb.add_argument("--overwrite", action="store_true", help="replace an existing file")
    pb.add_argument(
        "--allow-non-private",
        action="store_true",
        help="publish a seeded / infinite-budget release (test data only)",
    )
    pb.set_defaults(func=_publish)

    b = sub.add_parser("budget", help="store the total privacy budget of an input table")
    b.add_argument("db", help="DuckDB database file")
    b.add_argument("table", help="input table whose releases the budget caps")
    b.add_argument("--rho", type=float, help="zCDP budget (or --epsilon with --delta)")
    b.add_argument("--epsilon", type=float)
    b.add_argument("--delta", type=float)
    b.add_argument("--conversion", choices=["tight", "simple"], help="rho <-> (epsilon, delta)")
    b.set_defaults(func=_budget)

    pl = sub.add_parser(
        "plan",
        help="noise and expected max error per level, before touching any data",
        description="Either --levels (nodes per level) or a database file with --hierarchy and "
        "--domain (only the public domain is read).",
    )
    pl.add_argument("db", nargs="?", help="DuckDB file holding the public domain (optional)")
    pl.add_argument(
        "--levels", type=_counts, help="nodes per level below the root, e.g. 20,107,7900"
    )
    _add_hierarchy(pl)
    pl.add_argument("--domain", action="append", help="public domain table; one per chain")
    _add_budget(pl)
    pl.add_argument(
        "--target-levels",
        action="append",
        metavar="LEVELS",
        help="levels (numbers from 1, or names) whose accuracy matters most, comma-separated; "
        "implies --split optimal",
    )
    pl.add_argument("--beta", type=float, default=0.05, help="error bounds hold w.p. 1 - beta")
    pl.add_argument("--simulations", type=int, default=20, help="simulated releases per level")
    pl.add_argument("--total", type=int, default=1_000_000, help="records in the simulations")
    pl.add_argument("--seed", type=int, default=0, help="seed of the simulations")
    pl.add_argument("--json", action="store_true", help="print the plan as JSON")
    pl.set_defaults(func=_plan)
    return p


# ----------------------------------------------------------------------------------------------
# entry point


@contextlib.contextmanager
def _warnings_as_lines() -> Iterator[None]:
    """Show library warnings (e.g. a large epsilon) as one ``warning:`` line each."""

    def show(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        print(f"warning: {cli_spelling(_one_line(str(message)))}", file=sys.stderr)

    with warnings.catch_warnings():
        warnings.simplefilter("always", UserWarning)
        warnings.showwarning = show
        yield


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``inftda-sql`` command; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv  # accepted anywhere on the line, before or after the command
    try:
        args = _parser().parse_args([a for a in argv if a != "--debug"])
        with _warnings_as_lines():
            func: Callable[[argparse.Namespace], int] = args.func
            return int(func(args))
    except SystemExit as exc:  # --help, --version
        return exc.code if isinstance(exc.code, int) else 0
    except BrokenPipeError:  # output piped into `head` and closed: not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except _UsageError as exc:
        print(_one_line(str(exc)), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 1
    except (InftdaError, duckdb.Error, OSError, ImportError) as exc:
        if debug:
            raise
        print(f"error: {cli_spelling(_one_line(str(exc)))}", file=sys.stderr)
        return 1
    except Exception as exc:
        if debug:
            raise
        print(
            f"error: {type(exc).__name__}: {_one_line(str(exc))} (unexpected: run again with "
            "--debug for the traceback and please report it)",
            file=sys.stderr,
        )
        return 1
