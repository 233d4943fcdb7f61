"""Stored budgets: does a release fit the budget stored for its input?"""

from __future__ import annotations

from ..._errors import Arg, BudgetExceededError, Func
from .budget import Budget
from .conversions import rho_to_epsilon
from .guarantee import Guarantee


def budget_verdict(
    table: str,
    budget: Budget,
    spent_rho: float,
    n_releases: int,
    requested: Budget,
    guarantee: str,
    *,
    override: bool,
) -> str | None:
    """Whether a release of ``table`` fits the budget stored for it, after ``n_releases``
    releases that spent ``spent_rho`` (zCDP: rho adds up).

    Returns None when it fits, or the note to record in the ledger when ``override`` lets an
    exceeding release through; otherwise raises :class:`BudgetExceededError` naming what is
    requested, what remains and the difference. An (epsilon, delta)-DP release does not add up
    in rho: on a zCDP-budgeted input it needs the override.

    Example:
        >>> b = Budget.from_args(rho=0.5)
        >>> budget_verdict("t", b, 0.25, 1, Budget.from_args(rho=0.25), "zCDP", override=False)
        >>> budget_verdict("t", b, 0.5, 2, Budget.from_args(rho=0.25), "zCDP", override=True)
        "budget override: spent rho 0.75 exceeds the budget rho 0.5 of 't'"
    """
    remaining = budget.rho - spent_rho
    if not Guarantee(guarantee).composes_in_rho:
        if override:
            return "budget override: (epsilon, delta)-DP release on a zCDP-budgeted input"
        raise BudgetExceededError(
            f"{table!r} has a zCDP budget (",
            Arg("rho", budget.rho, ".6g"),
            ") and this mechanism gives (epsilon, delta)-DP, which does not add up in rho; pass ",
            Arg("budget_override", True),
            " to release anyway (recorded in the ledger) or use a zCDP mechanism",
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
        f"this release of {table!r} would spend ",
        Arg("rho", requested.rho, ".6g"),
        " (",
        Arg("epsilon", requested.epsilon, ".4g"),
        " at ",
        Arg("delta", requested.delta, ".3g"),
        "), but only ",
        Arg("rho", max(remaining, 0.0), ".6g"),
        " (",
        Arg("epsilon", eps_remaining, ".4g"),
        " at ",
        Arg("delta", budget.delta, ".3g"),
        ") remains of its budget ",
        Arg("rho", budget.rho, ".6g"),
        f" after {n_releases} release(s); requested - remaining = "
        f"{requested.rho - remaining:.6g}. Spend less, raise the budget with ",
        Func("set_budget", command="budget"),
        ", or pass ",
        Arg("budget_override", True),
        " (recorded in the ledger)",
    )
