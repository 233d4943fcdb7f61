"""Budget management in the database: a total budget per input table, and what was spent.

Releases on the same input compose: under zCDP their rho add up (the ledger table
``inftda_releases`` has one row per release). :func:`set_budget` stores a total for an input;
:func:`check_budget` (called by ``release()`` before any noise) refuses a release that would
spend more than what remains, unless the caller overrides it, which the ledger records. Every
release counts, seeded and infinite-budget ones included: they were run on the data.
(epsilon, delta)-DP releases (the Stability Histogram) do not compose in rho; on a budgeted input
they need an explicit override.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import duckdb

from ._errors import BudgetExceededError, SpecError
from ._ledger import (
    BudgetRecord,
    budget_record,
    read_budgets,
    read_releases,
    spent,
    upsert_budget,
)
from .core.accounting import Budget, rho_to_epsilon
from .engines.duckdb.catalog import object_kind

__all__ = ["Ledger", "budget_of", "check_budget", "ledger", "set_budget"]


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

    Later releases of ``table`` are refused when they would spend more than what remains.

    Example:
        >>> import duckdb
        >>> con = duckdb.connect()
        >>> _ = con.execute("CREATE TABLE trips (a INTEGER)")
        >>> round(set_budget(con, "trips", epsilon=2.0, delta=1e-8).rho, 4)
        0.0639
    """
    if not isinstance(table, str) or not table:
        raise SpecError(f"set_budget needs the input table's name, got {table!r}")
    if object_kind(con, table) is None:
        raise SpecError(
            f"{table!r} is not a table or view of this database; a budget belongs to an input table"
        )
    budget = Budget.from_args(rho=rho, epsilon=epsilon, delta=delta, conversion=conversion)
    upsert_budget(
        con,
        BudgetRecord(
            input_table=table,
            rho=budget.rho,
            epsilon=budget.epsilon,
            delta=budget.delta,
            conversion=budget.conversion,
            set_at=dt.datetime.now(dt.UTC).replace(tzinfo=None),
        ),
    )
    return budget


def budget_of(con: duckdb.DuckDBPyConnection, table: str) -> Budget | None:
    """The stored budget of ``table``, or None."""
    found = budget_record(con, table)
    if found is None:
        return None
    return Budget(
        rho=found.rho,
        epsilon=found.epsilon,
        delta=found.delta,
        conversion=found.conversion,
        given="rho",
    )


def check_budget(
    con: duckdb.DuckDBPyConnection,
    table: str,
    requested: Budget,
    guarantee: str,
    *,
    override: bool,
) -> str | None:
    """Refuse a release of ``table`` that would exceed its stored budget.

    Returns None when the release fits (or no budget is stored), or the note to record in the
    ledger when ``override`` lets an exceeding release through.
    """
    budget = budget_of(con, table)
    if budget is None:
        return None
    spent_rho, n_releases, _ = spent(con, table)
    remaining = budget.rho - spent_rho
    if guarantee != "zCDP":
        if override:
            return "budget override: (epsilon, delta)-DP release on a zCDP-budgeted input"
        raise BudgetExceededError(
            f"{table!r} has a zCDP budget (rho={budget.rho:.6g}) and this mechanism gives "
            "(epsilon, delta)-DP, which does not add up in rho; pass budget_override=True to "
            "release anyway (recorded in the ledger) or use a zCDP mechanism"
        )
    if requested.rho <= remaining * (1 + 1e-12) + 1e-15:
        return None
    if override:
        return (
            f"budget override: spent rho {spent_rho + requested.rho:.6g} exceeds the budget "
            f"rho {budget.rho:.6g} of {table!r}"
        )
    eps_remaining = (
        rho_to_epsilon(remaining, budget.delta, budget.conversion) if remaining > 0 else 0.0
    )
    raise BudgetExceededError(
        f"this release of {table!r} would spend rho={requested.rho:.6g} "
        f"(epsilon={requested.epsilon:.4g} at delta={requested.delta:.3g}), but only "
        f"rho={max(remaining, 0.0):.6g} (epsilon={eps_remaining:.4g} at delta="
        f"{budget.delta:.3g}) remains of its budget rho={budget.rho:.6g} after {n_releases} "
        f"release(s); requested - remaining = {requested.rho - remaining:.6g}. Spend less, "
        "raise the budget with set_budget(), or pass budget_override=True (recorded in the "
        "ledger)"
    )


@dataclass(frozen=True)
class Ledger:
    """Releases made on a database and the budget spent and remaining per input table."""

    releases: list[dict[str, Any]]
    inputs: list[dict[str, Any]]

    def __str__(self) -> str:
        if not self.releases and not self.inputs:
            return "no releases recorded"
        lines = [
            f"{'id':>4}  {'created (UTC)':16}  {'input':16} {'output':20} {'mechanism':19} "
            f"{'rho':>9} {'epsilon':>8} {'delta':>8}  flags"
        ]
        for r in self.releases:
            rho = "-" if r["rho"] is None else f"{r['rho']:.4g}"
            lines.append(
                f"{r['release_id']:>4}  {r['created_at']:%Y-%m-%d %H:%M}  "
                f"{r['input_table'][:16]:16} "
                f"{r['output_table'][:20]:20} {r['mechanism'][:19]:19} {rho:>9} "
                f"{r['epsilon']:>8.4g} {r['delta']:>8.2g}  {'; '.join(r['non_private'])}"
            )
        lines.append("")
        lines.append("per input (zCDP: rho adds up over releases):")
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


def ledger(con: duckdb.DuckDBPyConnection) -> Ledger:
    """The releases recorded in ``con`` and, per input table, the budget spent and remaining.

    Reads only: nothing is created in the database.

    Example:
        >>> import duckdb
        >>> print(ledger(duckdb.connect()))
        no releases recorded
    """
    releases = [r.values() for r in read_releases(con)]
    budgets: dict[str, tuple[str, float, float, float]] = {
        b.input_table.lower(): (b.input_table, b.rho, b.epsilon, b.delta) for b in read_budgets(con)
    }
    per_input: dict[str, dict[str, Any]] = {}
    for r in releases:
        key = r["input_table"].lower()
        entry = per_input.setdefault(
            key,
            {
                "input_table": r["input_table"],
                "releases": 0,
                "spent_rho": 0.0,
                "approx_dp_releases": 0,
            },
        )
        entry["releases"] += 1
        if r["guarantee"] == "zCDP":
            entry["spent_rho"] += r["rho"]
        else:
            entry["approx_dp_releases"] += 1
    for key, (t, *_) in budgets.items():
        per_input.setdefault(
            key, {"input_table": t, "releases": 0, "spent_rho": 0.0, "approx_dp_releases": 0}
        )
    inputs = []
    for key in sorted(per_input):
        entry = per_input[key]
        _, b_rho, b_eps, b_delta = budgets.get(key, (None, None, None, None))
        entry.update(
            budget_rho=b_rho,
            budget_epsilon=b_eps,
            budget_delta=b_delta,
            remaining_rho=None if b_rho is None else b_rho - entry["spent_rho"],
        )
        inputs.append(entry)
    return Ledger(releases=releases, inputs=inputs)
