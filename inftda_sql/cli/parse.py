"""The command line's grammar: the parser and its flags, the TOML config of ``release``, and
the translation of flags into the library's keyword arguments.

A malformed command line raises :class:`UsageError` (exit code 2); everything here runs before
any file is opened.
"""

from __future__ import annotations

import argparse
import tomllib
from pathlib import Path
from typing import Any

from .._compat import COMPATIBLE_STORAGE_VERSION
from .._errors import SpecError
from .._options import RELEASE_OPTIONS, Option
from .._request import CHECK_ANCESTORS
from .._version import __version__
from ..core.domains import Domain
from ..core.features import STRUCTURES, WEIGHTINGS
from ..core.names import file_spelling
from ..core.spec import TREE_KINDS
from ..mechanisms import REGISTRY

__all__ = [
    "CONFIG_ONLY_KEYS",
    "RELEASE_KEYS",
    "UsageError",
    "build_parser",
    "chains",
    "column_pairs",
    "count_of_counts_options",
    "features",
    "plan_domain",
    "plan_options",
    "read_config",
    "release_options",
]


class UsageError(Exception):
    """A malformed command line: exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message} (see --help)")


# ----------------------------------------------------------------------------------------------
# values of flags


def chains(values: list[str]) -> list[list[str]] | list[str]:
    """``--hierarchy`` values: one chain (a list of columns), or a list of chains.

    Example:
        >>> chains(["region,province"]), chains(["o_reg,o_mun", "d_reg,d_mun"])
        (['region', 'province'], [['o_reg', 'o_mun'], ['d_reg', 'd_mun']])
    """
    found = [[c.strip() for c in v.split(",") if c.strip()] for v in values]
    return found[0] if len(found) == 1 else found


def column_pairs(text: str) -> dict[str, str]:
    """``--domain-columns`` values: ``chain_column=domain_column`` pairs, comma-separated.

    Example:
        >>> column_pairs("o_region=region, o_lad=lad")
        {'o_region': 'region', 'o_lad': 'lad'}
    """
    pairs: dict[str, str] = {}
    for item in (x.strip() for x in text.split(",")):
        name, sep, column = item.partition("=")
        if not item:
            continue
        if not sep or not name.strip() or not column.strip():
            raise argparse.ArgumentTypeError(
                f"expected chain_column=domain_column pairs, comma-separated (e.g. "
                f"o_region=region,o_lad=lad), got {item!r}"
            )
        pairs[name.strip()] = column.strip()
    return pairs


def _with_columns(domain: Any, columns: dict[str, str]) -> Any:
    """The domain option with an explicit column mapping: every domain given reads it."""
    if not columns:
        return domain
    if isinstance(domain, list):
        return [Domain(d, columns=columns) for d in domain]
    return Domain(domain, columns=columns)


def features(values: list[str]) -> dict[str, list[str]]:
    """``--features`` values, one per feature, coarse to fine: ``NAME:COLUMN,COLUMN`` (nothing
    after the colon for the total).

    Example:
        >>> features(["total:", "period:period", "trip:o_stop,d_stop,period"])
        {'total': [], 'period': ['period'], 'trip': ['o_stop', 'd_stop', 'period']}
    """
    out: dict[str, list[str]] = {}
    for value in values:
        name, colon, cols = value.partition(":")
        if not colon or not name.strip():
            raise UsageError(
                f"inftda-sql release: --features takes NAME:COLUMN,COLUMN (e.g. --features "
                f"period:period, or --features total: for the total), got {value!r}"
            )
        if name.strip() in out:
            raise UsageError(f"inftda-sql release: --features names {name.strip()!r} twice")
        out[name.strip()] = [c.strip() for c in cols.split(",") if c.strip()]
    return out


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


# ----------------------------------------------------------------------------------------------
# release: flags and the TOML config

#: the keys a release config may hold: the keyword arguments of release(), but those that only
#: make sense in Python (progress: a callback; return_as: the released table as a Python object)
RELEASE_KEYS = frozenset(o.name for o in RELEASE_OPTIONS if o.toml)
#: keys of a release config that are no keyword of release(): the file's own spelling of flags
CONFIG_ONLY_KEYS = frozenset({"domain_columns"})


def read_config(path: str) -> dict[str, Any]:
    """The release options of a TOML file (keys as :data:`RELEASE_KEYS`)."""
    try:
        options = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise SpecError(f"cannot read config {path!r}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"config {path!r} is not valid TOML: {exc}") from None
    unknown = set(options) - RELEASE_KEYS - CONFIG_ONLY_KEYS
    if unknown:
        raise SpecError(
            f"unknown key(s) in {path!r}: {', '.join(sorted(unknown))}; "
            f"allowed: {', '.join(sorted(RELEASE_KEYS | CONFIG_ONLY_KEYS))}"
        )
    columns = options.get("domain_columns", {})
    if not isinstance(columns, dict) or not all(isinstance(v, str) for v in columns.values()):
        raise SpecError(
            f'domain_columns in {path!r} must be a table of chain column = "domain column" '
            f'(e.g. domain_columns = {{ o_region = "region" }}), got {columns!r}'
        )
    return options


def release_options(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments of release(): the config file's, overridden by the flags given."""
    options: dict[str, Any] = read_config(args.config) if args.config else {}
    columns: dict[str, str] = dict(options.pop("domain_columns", {}))
    for pairs in args.domain_columns or ():
        columns.update(pairs)
    if args.hierarchy:
        options["hierarchy"] = chains(args.hierarchy)
    if args.features:
        options["features"] = features(args.features)
    if args.domain:
        options["domain"] = args.domain[0] if len(args.domain) == 1 else args.domain
    if columns:
        if "domain" not in options:
            raise UsageError("inftda-sql release: --domain-columns goes with --domain")
        options["domain"] = _with_columns(options["domain"], columns)
    for opt in RELEASE_OPTIONS:
        if opt.flag is None or opt.cli == "append":  # Python-only, or read above
            continue
        value = getattr(args, _dest(opt))
        if opt.cli == "value" and value is not None:
            options[opt.name] = value
        elif opt.cli == "true" and value:
            options[opt.name] = True
        elif opt.cli == "false" and value:
            options[opt.name] = False
    if "hierarchy" not in options and "features" not in options:
        raise UsageError(
            "inftda-sql release: --hierarchy is required (e.g. --hierarchy region,province,mun), "
            "or --features with --mechanism cbdp (e.g. --features period:period --features "
            "trip:o_stop,d_stop,period)"
        )
    return options


def count_of_counts_options(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments of release_count_of_counts() from the flags.

    Example:
        >>> p = build_parser()
        >>> args = p.parse_args(["count-of-counts", "db", "persons", "--group", "hh",
        ...     "--hierarchy", "state,county", "--groups", "hh_per_county", "--epsilon", "1"])
        >>> sorted(count_of_counts_options(args))  # doctest: +NORMALIZE_WHITESPACE
        ['consistency', 'epsilon', 'group', 'groups', 'hierarchy', 'merge', 'method',
         'min_size']
    """
    hierarchy = chains(args.hierarchy)
    if hierarchy and isinstance(hierarchy[0], list):
        raise UsageError(
            "inftda-sql count-of-counts: give --hierarchy once (one chain, e.g. state,county)"
        )
    options: dict[str, Any] = {
        "group": args.group,
        "hierarchy": hierarchy,
        "groups": args.groups,
        "epsilon": args.epsilon,
        "method": args.method,
        "consistency": args.consistency,
        "merge": args.merge,
        "min_size": args.min_size,
    }
    for key in (
        "groups_column", "max_size", "output", "seed", "split", "max_size_share", "timeout",
    ):  # fmt: skip
        value = getattr(args, key)
        if value is not None:
            options[key] = value
    for key in ("overwrite", "budget_override", "microdata"):
        if getattr(args, key):
            options[key] = True
    if args.no_levels_view:
        options["levels_view"] = False
    return options


def plan_options(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments of plan() but the shape or the domain, from the flags."""
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
    if args.levels is not None:
        if args.db is not None or args.hierarchy or args.domain or args.tree:
            raise UsageError(
                "inftda-sql plan: give --levels, or --hierarchy and --domain (a table of a "
                "database file, or a parquet/CSV file), not both"
            )
    elif not args.hierarchy or not args.domain:
        raise UsageError(
            "inftda-sql plan: give --levels (nodes per level, e.g. --levels 20,107,7900), or "
            "--hierarchy and --domain (e.g. plan demo.duckdb --hierarchy "
            "region,province,municipality --domain geo, or plan --hierarchy region,lad "
            "--domain geo.parquet)"
        )
    if args.domain_columns and not args.domain:
        raise UsageError("inftda-sql plan: --domain-columns goes with --domain")
    tables = [d for d in args.domain or () if file_spelling(d) is None]
    if args.db is None and tables:
        raise UsageError(
            f"inftda-sql plan: --domain {tables[0]} is a table: give the database file that "
            f"holds it (plan DB --hierarchy ... --domain {tables[0]}), or a parquet/CSV file"
        )
    return kw


def plan_domain(args: argparse.Namespace) -> Any:
    """The ``domain=`` of plan() from ``--domain`` and ``--domain-columns``."""
    domain: Any = args.domain[0] if len(args.domain) == 1 else list(args.domain)
    columns: dict[str, str] = {}
    for pairs in args.domain_columns or ():
        columns.update(pairs)
    return _with_columns(domain, columns)


# ----------------------------------------------------------------------------------------------
# the parser


#: the release options by name
_OPTION = {o.name: o for o in RELEASE_OPTIONS}
_BUDGET_OPTIONS = ("rho", "epsilon", "delta", "conversion", "privacy", "contribution", "distinct")


def _add_budget(p: argparse.ArgumentParser) -> None:
    """plan's budget flags: the release's, and a split that may be 'optimal'."""
    g = p.add_argument_group(_OPTION["rho"].group)
    for name in _BUDGET_OPTIONS:
        _add_option(g, _OPTION[name])
    _add_option(
        g, _OPTION["split"], _OPTION["split"].doc + " (plan: or 'optimal' for the --target-levels)"
    )


def _add_hierarchy(p: argparse.ArgumentParser, help_suffix: str = "") -> None:
    _add_option(p, _OPTION["hierarchy"], _OPTION["hierarchy"].doc + help_suffix)
    _add_option(p, _OPTION["tree"])


def _add_domain(p: argparse.ArgumentParser) -> None:
    _add_option(p, _OPTION["domain"])
    _add_domain_columns(p)


def _add_domain_columns(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--domain-columns",
        action="append",
        type=column_pairs,
        metavar="CHAIN_COL=DOMAIN_COL,...",
        help="which domain column each chain column reads, when the names differ otherwise "
        "(e.g. home_region=region,home_lad=lad)",
    )


#: where a choice flag finds its choices (the registries, read when the parser is built)
_CHOICES = {
    "mechanisms": lambda: list(REGISTRY),
    "trees": lambda: list(TREE_KINDS),
    "structures": lambda: list(STRUCTURES),
    "weightings": lambda: list(WEIGHTINGS),
    "check_ancestors": lambda: list(CHECK_ANCESTORS),
}
_TYPES: dict[str, Any] = {"str": str, "int": int, "float": float, "split": _split}


def _dest(opt: Option) -> str:
    """The attribute argparse stores a flag under (``--no-levels-view``: no_levels_view)."""
    assert opt.flag is not None
    return opt.flag.lstrip("-").replace("-", "_")


def _add_option(p: Any, opt: Option, help_text: str | None = None) -> None:
    """One flag of :data:`~inftda_sql._options.RELEASE_OPTIONS` on a parser or group."""
    assert opt.flag is not None
    kw: dict[str, Any] = {"help": help_text or opt.doc}
    if opt.metavar:
        kw["metavar"] = opt.metavar
    if opt.cli in ("true", "false"):
        kw["action"] = "store_true"
    elif opt.cli == "append":
        kw["action"] = "append"
    elif opt.value_type == "choice":
        kw["choices"] = list(opt.choices) if opt.choices else _CHOICES[str(opt.choices_from)]()
    else:
        kw["type"] = _TYPES[opt.value_type]
    p.add_argument(opt.flag, **kw)


def _add_release_options(p: argparse.ArgumentParser) -> None:
    """Every release option that has a flag, in its argument group."""
    groups: dict[str, Any] = {"": p}
    for opt in RELEASE_OPTIONS:
        if opt.flag is None or "duckdb" not in opt.engines:
            continue
        if opt.group not in groups:
            groups[opt.group] = p.add_argument_group(opt.group)
        _add_option(groups[opt.group], opt)
        if opt.name == "domain":
            _add_domain_columns(p)


def build_parser() -> argparse.ArgumentParser:
    """The ``inftda-sql`` parser; the chosen command is ``args.command``."""
    p = _Parser(
        prog="inftda-sql",
        description="Differentially private hierarchical counts (InfTDA) on DuckDB.",
        epilog="Exit codes: 0 success, 2 usage error, 1 any other error, 130 interrupted (Ctrl-C) "
        "before anything was recorded.",
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

    r = sub.add_parser("release", help="release a table (or a parquet/CSV file) into a DuckDB file")
    r.add_argument(
        "db", help="DuckDB database file (created when the input is a file and it does not exist)"
    )
    r.add_argument(
        "table",
        help="input table or view, or a parquet/CSV file (path or glob; charged to its "
        "resolved path)",
    )
    r.add_argument("--config", help="TOML file with release options (flags override it)")
    _add_release_options(r)
    r.add_argument(
        "--storage-version",
        help="refuse a file older DuckDB versions cannot read (e.g. v1.0.0)",
    )
    r.add_argument("--quiet", action="store_true", help="no progress bar")

    c = sub.add_parser(
        "count-of-counts",
        help="release private count-of-counts histograms (groups of each size per region)",
        description="For every region of a hierarchy and every size j, the number of groups "
        "(households) of j persons: pure epsilon-DP, consistent, non-negative integers, every "
        "region summing to its public number of groups (Kuo et al., VLDB 2018).",
    )
    c.add_argument("db", help="DuckDB database file")
    c.add_argument("table", help="the persons table (one row per person)")
    c.add_argument("--group", required=True, help="the column of a person's group id")
    c.add_argument(
        "--hierarchy", action="append", required=True, help="region columns, coarse to fine"
    )
    c.add_argument(
        "--groups", required=True, help="the PUBLIC table of leaf regions and their groups"
    )
    c.add_argument("--groups-column", help="its column holding the number of groups")
    c.add_argument("--epsilon", type=float, required=True, help="pure DP budget")
    c.add_argument(
        "--max-size",
        type=int,
        help="public largest group size (default: estimated with --max-size-share of epsilon)",
    )
    c.add_argument("--max-size-share", type=float, help="default 0.05")
    c.add_argument(
        "--min-size", type=int, default=1, choices=[0, 1], help="0 if groups may be empty"
    )
    c.add_argument(
        "--method", choices=["cumulative", "unattributed", "naive"], default="cumulative"
    )
    c.add_argument("--consistency", choices=["topdown", "leaves"], default="topdown")
    c.add_argument("--merge", choices=["weighted", "average"], default="weighted")
    c.add_argument("--split", type=_split, help="per-level weights of epsilon, e.g. 1,1,2")
    c.add_argument("--output", help="output table (default <table>_count_of_counts)")
    c.add_argument("--overwrite", action="store_true", help="replace the output table")
    c.add_argument("--seed", type=int, help="TESTS ONLY: reproducible, non-private noise")
    c.add_argument(
        "--budget-override",
        action="store_true",
        help="release even if the input's stored budget would be exceeded (recorded)",
    )
    c.add_argument("--no-levels-view", action="store_true", help="no <output>_levels view")
    _add_option(c, _OPTION["timeout"])
    c.add_argument(
        "--microdata",
        action="store_true",
        help="every row is one person, although a numeric column is named like a count",
    )

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

    lg = sub.add_parser("ledger", help="releases recorded in a database and the budget spent")
    lg.add_argument("db")
    lg.add_argument("--format", choices=["table", "csv", "json"], default="table")
    lg.add_argument(
        "--include-diagnostics",
        action="store_true",
        help="keep each release's diagnostics (facts about the private input, times) in its "
        "details: NOT private, for the data owner only",
    )

    pb = sub.add_parser(
        "publish", help="copy a release (and nothing private) into a new file to share"
    )
    pb.add_argument("db", help="the working database holding the release")
    pb.add_argument("output", help="the released table")
    pb.add_argument("path", help="the new file to write")
    pb.add_argument(
        "--public-table",
        action="append",
        help="a public table, or a parquet/CSV file, to copy along (e.g. the geography); "
        "repeat for more",
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

    b = sub.add_parser("budget", help="store the total privacy budget of an input table")
    b.add_argument("db", help="DuckDB database file")
    b.add_argument("table", help="input table (or parquet/CSV file) whose releases the budget caps")
    for name in ("rho", "epsilon", "delta", "conversion"):
        _add_option(b, _OPTION[name])

    q = sub.add_parser(
        "sql",
        help="a SQL shell with the building blocks as functions (dp_sigma, "
        "dp_discrete_gaussian, intopt, ...)",
        description="DuckDB statements, ending in ';', on a database with inftda_sql's SQL "
        "functions registered: from the terminal, from a script on stdin, or with -c.",
    )
    q.add_argument(
        "db", nargs="?", default=":memory:", help="DuckDB database file (default: in memory)"
    )
    q.add_argument("-c", "--command", dest="sql", metavar="SQL", help="run SQL and exit")
    q.add_argument("--read-only", action="store_true", help="open the file read-only")
    q.add_argument(
        "--max-rows", type=int, default=100, help="rows shown per result (default 100; 0: all)"
    )

    pl = sub.add_parser(
        "plan",
        help="noise and expected max error per level, before touching any data",
        description="Either --levels (nodes per level), or --hierarchy and --domain: a table of "
        "the database file given, or a parquet/CSV file (only the public domain is read).",
    )
    pl.add_argument(
        "db", nargs="?", help="DuckDB file holding the public domain (none for a file domain)"
    )
    pl.add_argument(
        "--levels", type=_counts, help="nodes per level below the root, e.g. 20,107,7900"
    )
    _add_hierarchy(pl)
    _add_domain(pl)
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
    return p
