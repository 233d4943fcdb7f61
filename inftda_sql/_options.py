"""The options of a release, declared once.

Every keyword option of :func:`inftda_sql.release` is one :class:`Option` of
:data:`RELEASE_OPTIONS`: its name, default, a one-line doc, its command-line flag, whether a TOML
config may hold it, and which engines take it. From this one table are made: the ``release``
command's flags (:func:`inftda_sql.cli.parse.build_parser`), the keys a TOML config may hold
(:data:`inftda_sql.cli.parse.RELEASE_KEYS`), the turning of flags into keyword arguments
(:func:`inftda_sql.cli.parse.release_options`) and the option table of
``docs/how-to/command-line.md`` (:func:`markdown_table`). The Python signatures of ``release()`` and
``inftda_sql.spark.release()`` stay spelled out for readers and type checkers; a test holds them
equal to this table (names, order and defaults).

Adding an option is one entry here, plus its use where the release reads it
(:class:`~inftda_sql._request.ReleaseRequest`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .mechanisms import DEFAULT_MAX_CELLS

__all__ = ["RELEASE_OPTIONS", "Option", "markdown_table", "options_for"]

#: the engines a front door runs on
ENGINES = ("duckdb", "spark")


@dataclass(frozen=True)
class Option:
    """One keyword option of a release.

    Attributes:
        name: the keyword argument (and TOML key).
        default: its default value.
        doc: what it does, in one line (the CLI's help text and the README's table).
        group: the CLI's argument group (``""``: the command's own options).
        flag: the command-line flag, or None where the option is Python-only (a callback, an
            object returned in memory).
        cli: how the flag reads its value: ``"value"`` (one value, of ``value_type``),
            ``"true"`` (a switch that sets True), ``"false"`` (a switch that sets False, such
            as ``--no-levels-view``) or ``"append"`` (repeatable; the CLI turns the list into
            the keyword's value).
        value_type: the flag's value parser: ``"str"``, ``"int"``, ``"float"``, ``"split"``
            (weights) or ``"choice"`` (one of ``choices``).
        choices: the values a ``"choice"`` flag takes; None where they come from a registry
            the CLI reads (``choices_from``).
        choices_from: where the CLI finds the choices (``"mechanisms"``, ``"trees"``,
            ``"structures"``, ``"weightings"``, ``"check_ancestors"``).
        metavar: the flag's placeholder in the help.
        toml: whether a TOML config may hold it.
        engines: the front doors that take it.
    """

    name: str
    default: Any
    doc: str
    group: str = ""
    flag: str | None = None
    cli: str = "value"
    value_type: str = "str"
    choices: tuple[str, ...] | None = None
    choices_from: str | None = None
    metavar: str | None = None
    toml: bool = True
    engines: tuple[str, ...] = ENGINES

    def __post_init__(self) -> None:
        if self.cli not in ("value", "true", "false", "append"):
            raise ValueError(f"option {self.name}: cli must be value/true/false/append")
        if self.flag is None and self.toml:
            raise ValueError(f"option {self.name}: a Python-only option has no TOML key")


_BUDGET = "privacy budget"
_FEATURES = "features (--mechanism cbdp, instead of --hierarchy)"

#: every keyword option of a release, in the order of ``release()``'s signature
RELEASE_OPTIONS: tuple[Option, ...] = (
    Option("hierarchy", None, "one chain, comma-separated coarse to fine; repeat for several "
           "chains", flag="--hierarchy", cli="append"),
    Option("features", None, "a feature: NAME:COL,COL (NAME: for the total); repeat it, coarse "
           "to fine, the leaf last", group=_FEATURES, flag="--features", cli="append",
           metavar="NAME:COLUMNS"),
    Option("domain", None, "public domain: a table or a parquet/CSV file; once for every chain "
           "(columns matched by name or a common prefix such as o_/d_), or once per chain; for "
           "--features one table of every leaf cell, or once per factor of a product",
           flag="--domain", cli="append"),
    Option("tree", None, "how several chains are refined", flag="--tree", value_type="choice",
           choices_from="trees"),
    Option("structure", None, "default flat", group=_FEATURES, flag="--structure",
           value_type="choice", choices_from="structures"),
    Option("weights", None, "default cells (1/cells)", group=_FEATURES, flag="--weights",
           value_type="choice", choices_from="weightings"),
    Option("rho", None, "zCDP budget (or --epsilon with --delta)", group=_BUDGET, flag="--rho",
           value_type="float"),
    Option("epsilon", None, "(epsilon, delta)-DP budget, with --delta (alone: pure DP, CBDP)",
           group=_BUDGET, flag="--epsilon", value_type="float"),
    Option("delta", None, "the delta of an (epsilon, delta) budget", group=_BUDGET,
           flag="--delta", value_type="float"),
    Option("conversion", "tight", "rho <-> (epsilon, delta)", group=_BUDGET,
           flag="--conversion", value_type="choice", choices=("tight", "simple")),
    Option("privacy", "bounded", "default bounded", group=_BUDGET, flag="--privacy",
           value_type="choice", choices=("bounded", "unbounded")),
    Option("privacy_unit", None, "column identifying a person: each keeps at most "
           "--contribution records", group=_BUDGET, flag="--privacy-unit", metavar="COLUMN"),
    Option("contribution", 1, "records per person (default 1)", group=_BUDGET,
           flag="--contribution", value_type="int"),
    Option("distinct", False, "a person's records fall in distinct leaf cells", group=_BUDGET,
           flag="--distinct", cli="true"),
    Option("split", None, "per-level weights of rho, e.g. 1,1,2", group=_BUDGET,
           flag="--split", value_type="split"),
    Option("count", None, "count column of a pre-aggregated input", flag="--count"),
    Option("microdata", False, "every row is one record, although a numeric column is named "
           "like a count", flag="--microdata", cli="true"),
    Option("output", None, "output table (default <table>_private)", flag="--output"),
    Option("overwrite", False, "replace the output table", flag="--overwrite", cli="true"),
    Option("mechanism", "inftda", "the mechanism (default inftda)", flag="--mechanism",
           value_type="choice", choices_from="mechanisms"),
    Option("seed", None, "TESTS ONLY: reproducible, non-private noise", flag="--seed",
           value_type="int"),
    Option("domain_from_data", False, "NOT PRIVATE: take categories from the data (recorded "
           "in the ledger)", flag="--domain-from-data", cli="true"),
    Option("budget_override", False, "release even if the input's stored budget would be "
           "exceeded (recorded)", flag="--budget-override", cli="true"),
    Option("levels_view", True, "no <output>_levels view", flag="--no-levels-view",
           cli="false"),
    Option("max_cells", DEFAULT_MAX_CELLS, "limit of full-domain mechanisms",
           flag="--max-cells", value_type="int"),
    Option("progress", None, "called with each level's statistics as it completes; True: a "
           "progress bar (tqdm; by itself in Jupyter when tqdm is installed)", toml=False),
    Option("return_as", None, "also return the released table in memory: arrow, pandas or "
           "polars", toml=False, engines=("duckdb",)),
    Option("check_ancestors", "full", "check the input's ancestor columns against the domain "
           "on every release (full, the default), once per input version as the catalog sees "
           "it (cached: an UPDATE in place is not seen) or never (off)",
           flag="--check-ancestors", value_type="choice", choices_from="check_ancestors",
           engines=("duckdb",)),
    Option("timeout", 30.0, "seconds to wait for other writers of the file (another program "
           "that has it open, or releases writing at the same moment) before giving up (default "
           "30; 0: fail at once)", flag="--timeout", value_type="float", engines=("duckdb",)),
    Option("measurements", False, "also write every noisy value the TopDown mechanism drew, "
           "before post-processing, as <output>_measurements (same transaction and ledger row; "
           "no extra budget)", flag="--measurements", cli="true", engines=("duckdb",)),
    Option("scratch", None, "a folder every executor can write, for the survivors of each "
           "level (default: under the warehouse)", toml=False, engines=("spark",)),
    Option("ledger", None, "the folder of the ledger and budgets (default: the conf "
           "spark.inftda.ledger, else inftda_ledger beside the warehouse)", toml=False,
           engines=("spark",)),
)  # fmt: skip


def options_for(engine: str) -> Iterator[Option]:
    """The options the front door of ``engine`` takes, in signature order."""
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    return (o for o in RELEASE_OPTIONS if engine in o.engines)


def markdown_table() -> str:
    """The table of release options of ``docs/how-to/command-line.md`` (regenerate with
    ``python -m inftda_sql._options``).

    Example:
        >>> markdown_table().splitlines()[0]
        '| option | flag | TOML | engines | default | what it does |'
    """
    rows = ["| option | flag | TOML | engines | default | what it does |", "|" + "---|" * 6]
    for o in RELEASE_OPTIONS:
        big = isinstance(o.default, int) and not isinstance(o.default, bool) and o.default > 9999
        default = f"{o.default:_}" if big else repr(o.default)
        flag = f"`{o.flag}`" if o.flag else "Python only"
        rows.append(
            f"| `{o.name}` | {flag} | {'yes' if o.toml else 'no'} | {', '.join(o.engines)} "
            f"| `{default}` | {o.doc} |"
        )
    return "\n".join(rows)


if __name__ == "__main__":  # pragma: no cover - a maintainer's command
    print(markdown_table())
