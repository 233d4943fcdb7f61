"""Command line: ``inftda-sql`` (also ``python -m inftda_sql``).

Exit codes: 0 success, 2 usage error, 1 anything else. Errors print one line; ``--debug`` shows
the traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb

from ._errors import InftdaError, SpecError
from ._release import MECHANISMS, release
from ._topdown import LevelStats
from ._version import __version__

__all__ = ["main"]


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise _UsageError(f"{self.prog}: {message} (see --help)")


def _progress(enabled: bool) -> Any:
    if not enabled or not sys.stderr.isatty():
        return None
    start = time.perf_counter()

    def show(stats: LevelStats) -> None:
        sys.stderr.write(
            f"\r  level {stats.level}: {stats.name[:40]:<40} "
            f"{stats.noised_cells:>12,} cells noised, "
            f"{stats.surviving_cells:>12,} kept  [{time.perf_counter() - start:6.1f} s]\n"
        )
        sys.stderr.flush()

    return show


def _open(path: str, *, must_exist: bool) -> duckdb.DuckDBPyConnection:
    p = Path(path)
    if must_exist and not p.exists():
        raise InftdaError(
            f"database file {path!r} does not exist; check the path (or run "
            "`inftda-sql demo` to create demo.duckdb)"
        )
    try:
        return duckdb.connect(path)
    except duckdb.Error as exc:
        raise InftdaError(f"{path!r} cannot be opened as a DuckDB database: {exc}") from exc


def _scalar(con: duckdb.DuckDBPyConnection, sql: str) -> Any:
    return con.execute(sql).fetchall()[0][0]


def _chains(values: Sequence[str]) -> list[list[str]] | list[str]:
    chains = [[c.strip() for c in v.split(",") if c.strip()] for v in values]
    return chains[0] if len(chains) == 1 else chains


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
    con = duckdb.connect(str(db))
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
    r = release(
        con,
        data.trips,
        hierarchy=data.hierarchy,
        domain=[data.geo_origin, data.geo_destination],
        tree="destination",
        epsilon=args.epsilon,
        delta=args.delta,
        output="trips_private",
        progress=_progress(not args.quiet),
    )
    print(r)
    o_mun, d_mun = con.execute(
        "SELECT o_mun, d_mun FROM trips_private WHERE o_mun <> d_mun "
        "ORDER BY count DESC, o_mun, d_mun LIMIT 1"
    ).fetchall()[0]
    con.close()
    print(f"""
Try it (duckdb {db}):
  -- a leaf lookup: trips from municipality {o_mun} to {d_mun}
  SELECT * FROM trips_private WHERE o_mun = {o_mun} AND d_mun = {d_mun};
  -- a join with the geography table: the 10 largest flows with their names
  SELECT g.name AS origin, h.name AS destination, p.count FROM trips_private p
    JOIN geo g ON g.municipality = p.o_mun JOIN geo h ON h.municipality = p.d_mun
    ORDER BY p.count DESC LIMIT 10;
  -- a regional total (any level is the sum of its leaves)
  SELECT o_region, d_region, sum(count) AS trips FROM trips_private
    GROUP BY ALL ORDER BY trips DESC LIMIT 5;""")
    return 0


_RELEASE_KEYS = {
    "hierarchy", "domain", "tree", "rho", "epsilon", "delta", "conversion", "privacy",
    "contribution", "distinct", "split", "count", "output", "overwrite", "mechanism", "seed",
    "domain_from_data",
}  # fmt: skip


def _release(args: argparse.Namespace) -> int:
    options: dict[str, Any] = {}
    if args.config:
        try:
            options.update(tomllib.loads(Path(args.config).read_text(encoding="utf-8")))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise SpecError(f"cannot read config {args.config!r}: {exc}") from exc
        unknown = set(options) - _RELEASE_KEYS
        if unknown:
            raise SpecError(
                f"unknown key(s) in {args.config!r}: {', '.join(sorted(unknown))}; "
                f"allowed: {', '.join(sorted(_RELEASE_KEYS))}"
            )
    if args.hierarchy:
        options["hierarchy"] = _chains(args.hierarchy)
    if args.domain:
        options["domain"] = args.domain[0] if len(args.domain) == 1 else args.domain
    for key in (
        "tree",
        "rho",
        "epsilon",
        "delta",
        "conversion",
        "privacy",
        "contribution",
        "count",
        "output",
        "mechanism",
        "seed",
    ):
        value = getattr(args, key)
        if value is not None:
            options[key] = value
    if args.overwrite:
        options["overwrite"] = True
    if args.distinct:
        options["distinct"] = True
    if args.domain_from_data:
        options["domain_from_data"] = True
    if "hierarchy" not in options:
        raise _UsageError("release: --hierarchy is required (e.g. --hierarchy region,province,mun)")
    con = _open(args.db, must_exist=True)
    try:
        r = release(con, args.table, progress=_progress(not args.quiet), **options)
    finally:
        con.close()
    print(r)
    return 0


def _ledger(args: argparse.Namespace) -> int:
    con = _open(args.db, must_exist=True)
    try:
        exists = con.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'inftda_releases'"
        ).fetchall()[0][0]
        if not exists:
            print(f"no releases recorded in {args.db}")
            return 0
        rows = con.execute(
            "SELECT release_id, strftime(created_at, '%Y-%m-%d %H:%M'), input_table, output_table, "
            "mechanism, rho, epsilon, delta, array_to_string(non_private, '; ') "
            "FROM inftda_releases ORDER BY release_id"
        ).fetchall()
        totals = con.execute(
            "SELECT input_table, count(*), sum(rho) FILTER (WHERE NOT seeded) "
            "FROM inftda_releases GROUP BY 1 ORDER BY 1"
        ).fetchall()
    finally:
        con.close()
    print(
        f"{'id':>4}  {'created (UTC)':16}  {'input':16} {'output':20} {'mechanism':10} "
        f"{'rho':>10} {'epsilon':>9} {'delta':>8}  flags"
    )
    for rid, created, inp, out, mech, rho, eps, delta, flags in rows:
        print(
            f"{rid:>4}  {created:16}  {inp[:16]:16} {out[:20]:20} {mech:10} {rho:>10.4g} "
            f"{eps:>9.4g} {delta:>8.2g}  {flags or ''}"
        )
    print("\nspent per input (zCDP composes by adding rho; seeded test releases excluded):")
    for inp, n, rho in totals:
        print(f"  {inp}: {n} release(s), rho = {rho if rho is not None else 0:.6g}")
    return 0


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="inftda-sql",
        description="Differentially private hierarchical counts (InfTDA) on DuckDB.",
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
        "--overwrite", action="store_true", help="replace an existing file that no demo made"
    )
    d.add_argument("--quiet", action="store_true", help="no progress output")
    d.set_defaults(func=_demo)

    r = sub.add_parser("release", help="release a table of a DuckDB file")
    r.add_argument("db", help="DuckDB database file")
    r.add_argument("table", help="input table or view")
    r.add_argument("--config", help="TOML file with release options (flags override it)")
    r.add_argument(
        "--hierarchy",
        action="append",
        help="one chain, comma-separated coarse to fine; repeat for several chains",
    )
    r.add_argument("--domain", action="append", help="public domain table; one per chain")
    r.add_argument("--tree", choices=["chain", "sequential", "destination", "origin"])
    r.add_argument("--rho", type=float)
    r.add_argument("--epsilon", type=float)
    r.add_argument("--delta", type=float)
    r.add_argument("--conversion", choices=["tight", "simple"])
    r.add_argument("--privacy", choices=["bounded", "unbounded"])
    r.add_argument("--contribution", type=int)
    r.add_argument("--distinct", action="store_true")
    r.add_argument("--count", help="count column of a pre-aggregated input")
    r.add_argument("--output", help="output table (default <table>_private)")
    r.add_argument("--overwrite", action="store_true")
    r.add_argument("--mechanism", choices=list(MECHANISMS))
    r.add_argument("--seed", type=int, help="TESTS ONLY: reproducible, non-private noise")
    r.add_argument(
        "--domain-from-data",
        action="store_true",
        help="NOT PRIVATE: take categories from the data (recorded in the ledger)",
    )
    r.add_argument("--quiet", action="store_true")
    r.set_defaults(func=_release)

    lg = sub.add_parser("ledger", help="releases recorded in a database and the budget spent")
    lg.add_argument("db")
    lg.set_defaults(func=_ledger)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``inftda-sql`` command."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    try:
        args = _parser().parse_args(argv)
        return int(args.func(args))
    except BrokenPipeError:  # output piped into `head` and closed: not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except _UsageError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    except (InftdaError, duckdb.Error, OSError) as exc:
        if debug:
            raise
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 1
