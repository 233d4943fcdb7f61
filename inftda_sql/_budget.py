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

from ._errors import SpecError
from ._tables import Column, text_table
from .core.accounting import Budget
from .engines.duckdb.catalog import object_kind
from .engines.duckdb.ledger import (
    BudgetRecord,
    read_budgets,
    read_releases,
    stored_budget,
    upsert_budget,
)

__all__ = ["Ledger", "budget_of", "ledger", "set_budget"]


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


@dataclass(frozen=True)
class Ledger:
    """Releases made on a database and the budget spent and remaining per input table."""

    releases: list[dict[str, Any]]
    inputs: list[dict[str, Any]]

    def __str__(self) -> str:
        if not self.releases and not self.inputs:
            return "no releases recorded"
        rows = [
            (
                str(r["release_id"]),
                f"{r['created_at']:%Y-%m-%d %H:%M}",
                r["input_table"],
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
