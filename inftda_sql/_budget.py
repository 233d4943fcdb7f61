"""Budget management in the database: a total budget per base table, and what was spent.

Releases that read the same table compose: under zCDP their rho add up (the ledger table
``inftda_releases`` has one row per release, with the base tables it read; a pure epsilon-DP
release, such as the count-of-counts histograms, spends ``rho = epsilon^2 / 2``). A release is
charged to EVERY base table it reads, resolved in the catalog (any spelling, through views,
relations and subqueries). :func:`set_budget` stores a total for a table; ``check_budget``
(called by ``release()`` before any noise, and again in the transaction that records it)
refuses a release that would spend more than what remains of any of them, unless the caller
overrides it, which the ledger records. Every release counts, seeded and infinite-budget ones
included: they were run on the data. (epsilon, delta)-DP releases (the Stability Histogram) do
not compose in rho; on a budgeted input they need an explicit override.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import duckdb

from ._errors import Func, SpecError
from ._tables import Column, text_table
from .core.accounting import Budget, Guarantee
from .core.names import key_identity
from .engines.duckdb.catalog import (
    file_spelling,
    home_database,
    is_file_key,
    lookup,
    resolve,
    resolve_files,
    split_name,
)
from .engines.duckdb.connection import require_open
from .engines.duckdb.ledger import (
    BUDGET_TABLE,
    LIBRARY_TABLES,
    BudgetRecord,
    charges,
    delete_budgets,
    ensure_tables,
    is_library_name,
    legacy_keys,
    read_budgets,
    read_releases,
    stored_budget,
    stored_budgets,
    upsert_budget,
)
from .engines.duckdb.write import atomic

__all__ = [
    "Ledger",
    "budget_key",
    "budget_keys",
    "budget_of",
    "ledger",
    "set_budget",
    "summarize",
]


def set_budget(
    con: duckdb.DuckDBPyConnection,
    table: str,
    /,
    *,
    rho: float | None = None,
    epsilon: float | None = None,
    delta: float | None = None,
    conversion: str = "tight",
) -> Budget:
    """Store (or replace) the total privacy budget of input ``table``.

    ``table`` is resolved in the catalog: ``"trips"``, ``"main.trips"`` and ``"TRIPS"`` are one
    table, and a view that reads exactly one table stands for that table. Every later release
    that reads the table (by any name, through views, relations or subqueries) is charged to
    it, and refused when it would spend more than what remains. A parquet or CSV file is named
    by its path (``"od.parquet"``): the budget belongs to its resolved absolute path; a glob
    stores the budget for each file it matches now.

    Example:
        >>> import duckdb
        >>> con = duckdb.connect()
        >>> _ = con.execute("CREATE TABLE trips (a INTEGER)")
        >>> round(set_budget(con, "trips", epsilon=2.0, delta=1e-8).rho, 4)
        0.0639
    """
    require_open(con, "set_budget")
    keys = budget_keys(con, table)
    budget = Budget.from_args(rho=rho, epsilon=epsilon, delta=delta, conversion=conversion)
    with atomic(con, "the budget change"):
        ensure_tables(con, BUDGET_TABLE)
        home = home_database(con)
        for key in keys:
            stale = [
                r.input_table
                for r in read_budgets(con)
                if key.lower() in (k.lower() for k in legacy_keys(con, r.input_table, home))
            ]
            delete_budgets(con, stale)  # the same table stored under another spelling before
            upsert_budget(
                con,
                BudgetRecord(
                    input_table=key,
                    rho=budget.rho,
                    epsilon=budget.epsilon,
                    delta=budget.delta,
                    conversion=budget.conversion,
                    set_at=dt.datetime.now(dt.UTC).replace(tzinfo=None),
                ),
            )
    return budget


def budget_keys(con: duckdb.DuckDBPyConnection, table: object) -> tuple[str, ...]:
    """The base tables a budget of ``table`` belongs to, as the ledger keys them: one table
    (see :func:`budget_key`), or the resolved paths of the files a path or glob names."""
    path = file_spelling(table)
    if path is not None:
        return resolve_files(
            path, role="the file of a budget", param="table", error=SpecError
        ).files
    return (budget_key(con, table),)


def budget_key(con: duckdb.DuckDBPyConnection, table: object) -> str:
    """The base table a budget of ``table`` belongs to, resolved in the catalog (any case,
    qualified or not; a view that reads exactly one table stands for that table), as the key
    the ledger uses (``schema.table``)."""
    if not isinstance(table, str) or not table:
        raise SpecError(f"set_budget needs the input table's name, got {table!r}", param="table")
    if file_spelling(table) is not None:
        files = budget_keys(con, table)
        if len(files) != 1:
            raise SpecError(
                f"{table!r} names {len(files)} files, each with its own budget; use budget_keys()",
                param="table",
            )
        return files[0]
    last = table
    with contextlib.suppress(ValueError):
        last = split_name(table)[-1]
    if is_library_name(last):
        raise SpecError(
            f"{table!r} is a name inftda_sql keeps for its own bookkeeping "
            f"({', '.join(LIBRARY_TABLES)}); a budget belongs to an input table",
            param="table",
        )
    found = lookup(con, table, param="table", role="the table of a budget")
    if found is None:
        raise SpecError(
            f"{table!r} is not a table or view of this database; a budget belongs to an input "
            "table",
            param="table",
        )
    ref, kind = found
    resolved = resolve(con, table, ref, kind, ref.sql)
    if len(resolved.reads) != 1 or resolved.outside:
        reads = ", ".join(str(r) for r in resolved.reads) or "no table of this database"
        outside = f" and {', '.join(resolved.outside)}" if resolved.outside else ""
        raise SpecError(
            f"{table!r} is a {resolved.kind} that reads {reads}{outside}; a budget belongs to "
            "one base table (releases are charged to every table they read): call ",
            Func("set_budget", command="budget"),
            " with each base table's name",
            param="table",
        )
    return resolved.keys[0]


def budget_of(con: duckdb.DuckDBPyConnection, table: str) -> Budget | None:
    """The stored budget of ``table`` (resolved in the catalog), or None."""
    return stored_budget(con, table)


_LEDGER_COLUMNS = (
    Column("id", ">", width=4),
    Column("created (UTC)", "<", width=16),
    Column("input", "<", width=16, cut=16),
    Column("output", "<", width=20, cut=20, sep=" "),
    Column("mechanism", "<", width=19, cut=19, sep=" "),
    Column("rho", ">", width=9, sep=" "),
    Column("epsilon", ">", width=8, sep=" "),
    Column("delta", ">", width=8, sep=" "),
    Column("flags", "<"),
)


def _short_input(name: str) -> str:
    """A ledger's input for the narrow column of the table: a file by its name (its full path
    is in the lines below the table and in the ledger itself)."""
    if is_file_key(name) and len(name) > 16:
        return ".../" + os.path.basename(name)
    return name


@dataclass(frozen=True)
class Ledger:
    """Releases made on a database and the budget spent and remaining per base table
    (``inputs``: one entry per table, keyed ``schema.table`` in ``input_table``)."""

    releases: list[dict[str, Any]]
    inputs: list[dict[str, Any]]

    def __str__(self) -> str:
        if not self.releases and not self.inputs:
            return "no releases recorded"
        rows = [
            (
                str(r["release_id"]),
                f"{r['created_at']:%Y-%m-%d %H:%M}",
                _short_input(r["input_table"]),
                r["output_table"],
                r["mechanism"],
                "-" if r["rho"] is None else f"{r['rho']:.4g}",
                f"{r['epsilon']:.4g}",
                f"{r['delta']:.2g}",
                "; ".join(r["non_private"]),
            )
            for r in self.releases
        ]
        lines = text_table(_LEDGER_COLUMNS, rows)
        lines.append("")
        lines.append(
            "per base table (a release is charged to every table it reads; zCDP: rho adds up):"
        )
        for i in self.inputs:
            budget = (
                "no budget set"
                if i["budget_rho"] is None
                else f"budget rho {i['budget_rho']:.6g} (epsilon {i['budget_epsilon']:.4g} at "
                f"delta {i['budget_delta']:.3g}), remaining rho {i['remaining_rho']:.6g}"
            )
            extra = (
                f", {i['approx_dp_releases']} (epsilon, delta)-DP release(s) not in rho"
                if i["approx_dp_releases"]
                else ""
            )
            lines.append(
                f"  {i['input_table']}: {i['releases']} release(s), spent rho "
                f"{i['spent_rho']:.6g}{extra}; {budget}"
            )
        return "\n".join(lines)


def ledger(con: duckdb.DuckDBPyConnection, *, include_diagnostics: bool = False) -> Ledger:
    """The releases recorded in ``con`` and, per base table, the budget spent and remaining.

    Reads only: nothing is created in the database. Each release's ``details`` leave out its
    diagnostics (facts about the private input, and times, which depend on the data) unless
    ``include_diagnostics=True``: those are for the data owner's eyes only.

    Example:
        >>> import duckdb
        >>> print(ledger(duckdb.connect()))
        no releases recorded
    """
    require_open(con, "ledger")
    releases = [(r if include_diagnostics else r.public()).values() for r in read_releases(con)]
    found = [(c.keys or (c.input_table,), c.rho, c.guarantee) for c in charges(con)]
    return Ledger(releases=releases, inputs=summarize(found, stored_budgets(con)))


def summarize(
    found: Sequence[tuple[Sequence[str], float | None, str]],
    budgets: Mapping[str, tuple[str, BudgetRecord]],
) -> list[dict[str, Any]]:
    """Per base table (``Ledger.inputs``): releases, rho spent and the budget remaining, from
    each release's charge (its base-table keys, rho, guarantee) and the stored budgets (by
    lower-case key: the key as spelled and the row); a file's names (hard links) are one
    entry. Shared by the engines' ledgers."""
    per_table: dict[Hashable, dict[str, Any]] = {}  # by key_identity: a file under any name

    def entry(key: str) -> dict[str, Any]:
        return per_table.setdefault(
            key_identity(key),
            {"input_table": key, "releases": 0, "spent_rho": 0.0, "approx_dp_releases": 0},
        )

    for key, _ in budgets.values():  # first: a table with a budget is shown by its budget's key
        entry(key)
    for keys, rho, guarantee in found:
        for key in {key_identity(k): k for k in keys}.values():
            e = entry(key)
            e["releases"] += 1
            charged = Guarantee(guarantee).charged_rho(rho)
            if charged is not None:
                e["spent_rho"] += charged
            else:
                e["approx_dp_releases"] += 1
    stored_by = {key_identity(key): record for key, record in budgets.values()}
    inputs = []
    for folded, e in sorted(per_table.items(), key=lambda item: item[1]["input_table"].lower()):
        record = stored_by.get(folded)
        e.update(
            budget_rho=None if record is None else record.rho,
            budget_epsilon=None if record is None else record.epsilon,
            budget_delta=None if record is None else record.delta,
            remaining_rho=None if record is None else record.rho - e["spent_rho"],
        )
        inputs.append(e)
    return inputs
