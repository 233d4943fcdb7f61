"""The budget kinds as types (RhoZCDPBudget, ApproxDPBudget, PureDPBudget) and Guarantee."""

from __future__ import annotations

import dataclasses
import json
import math
import pickle

import pytest

from inftda_sql import BudgetError
from inftda_sql.core.accounting import (
    DEFAULT_REPORT_DELTA,
    ApproxDPBudget,
    Budget,
    Guarantee,
    PureDPBudget,
    RhoZCDPBudget,
    account_features,
    budget_verdict,
    pure_rho,
)
from inftda_sql.mechanisms import REGISTRY
from inftda_sql.mechanisms.stability_histogram import require_epsilon_delta

RHO = Budget.from_args(rho=0.5)
APPROX = Budget.from_args(epsilon=1.0, delta=1e-6)
PURE = Budget.from_args(epsilon=0.5, pure=True)


def test_from_args_returns_the_kind() -> None:
    assert type(RHO) is RhoZCDPBudget
    assert type(Budget.from_args(rho=0.5, delta=1e-6)) is RhoZCDPBudget
    assert type(APPROX) is ApproxDPBudget
    assert type(Budget.from_args(epsilon=1.0, delta=1e-6, pure=True)) is ApproxDPBudget
    assert type(PURE) is PureDPBudget
    assert type(Budget.from_args(rho=math.inf)) is RhoZCDPBudget
    assert type(Budget.from_args(epsilon=math.inf, pure=True)) is PureDPBudget
    assert all(isinstance(b, Budget) for b in (RHO, APPROX, PURE))


@pytest.mark.parametrize(
    ("budget", "facts"),
    [
        (RHO, ("rho", False, "zCDP", "gaussian", Guarantee.ZCDP)),
        (APPROX, ("epsilon_delta", False, "zCDP", "gaussian", Guarantee.ZCDP)),
        (PURE, ("epsilon", True, "pure", "laplace", Guarantee.PURE_DP)),
    ],
)
def test_what_each_kind_knows(budget: Budget, facts: tuple[object, ...]) -> None:
    assert (budget.given, budget.pure, budget.label, budget.noise, budget.guarantee) == facts
    # the same facts on the class, and read-only on the instance
    assert type(budget).given == facts[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        budget.given = "rho"  # type: ignore[misc]


def test_each_kind_prints_itself() -> None:
    assert str(RHO).startswith("rho = 0.5 zCDP => (epsilon = ")
    assert f"default reporting delta {DEFAULT_REPORT_DELTA:g}" in str(RHO)
    assert "default" not in str(Budget.from_args(rho=0.5, delta=1e-6))
    # an (epsilon, delta) budget at delta 1e-8 is no "default reporting delta"
    assert "default" not in str(Budget.from_args(epsilon=1.0, delta=DEFAULT_REPORT_DELTA))
    assert str(APPROX).startswith("rho = ") and "delta = 1e-06)-DP [tight conversion]" in str(
        APPROX
    )
    assert str(PURE) == (
        "epsilon = 0.5 pure DP (delta = 0; rho = 0.125 zCDP when composed with zCDP releases)"
    )
    for inf in (Budget.from_args(rho=math.inf), Budget.from_args(epsilon=math.inf, pure=True)):
        assert str(inf).startswith("NON-PRIVATE budget")


def test_each_kind_reports_itself() -> None:
    for budget in (RHO, APPROX, PURE):
        d = json.loads(json.dumps(budget.as_dict(), allow_nan=False))
        assert d["given"] == budget.given
        assert ("pure" in d) is budget.pure
        assert list(d)[-1] == "non_private"
    assert PURE.as_dict()["pure"] is True


@pytest.mark.parametrize("budget", [RHO, APPROX, PURE, Budget.from_args(rho=0.5, delta=1e-6)])
def test_release_args_ask_for_the_same_budget(budget: Budget) -> None:
    assert Budget.from_args(**budget.release_args(), pure=budget.pure) == budget


@pytest.mark.parametrize(
    ("kind", "fields", "match"),
    [
        (PureDPBudget, {"rho": 0.3, "epsilon": 1.0, "delta": 0.0}, "costs rho"),
        (PureDPBudget, {"rho": 0.5, "epsilon": 1.0, "delta": 1e-8}, "has delta = 0"),
        (RhoZCDPBudget, {"rho": 0.5, "epsilon": 0.1, "delta": 1e-8}, "does not imply"),
        (ApproxDPBudget, {"rho": 0.5, "epsilon": 0.1, "delta": 1e-8}, "does not imply"),
        (ApproxDPBudget, {"rho": 0.125, "epsilon": 0.5, "delta": 0.0}, "between 0 and 1"),
        (RhoZCDPBudget, {"rho": math.inf, "epsilon": 1.0, "delta": 1e-8}, "infinite"),
    ],
)
def test_a_hand_built_kind_is_validated(
    kind: type[Budget], fields: dict[str, float], match: str
) -> None:
    with pytest.raises(BudgetError, match=match):
        kind(**fields)


def test_a_hand_built_kind_that_holds() -> None:
    b = PureDPBudget(rho=pure_rho(0.5), epsilon=0.5, delta=0.0)
    assert b == PURE
    assert RhoZCDPBudget(rho=RHO.rho, epsilon=RHO.epsilon, delta=RHO.delta) == RHO


def test_budget_given_builds_the_kind_and_a_kind_refuses_another() -> None:
    assert type(Budget(rho=0.125, epsilon=0.5, delta=0.0, given="epsilon")) is PureDPBudget
    assert type(Budget(rho=RHO.rho, epsilon=RHO.epsilon, delta=RHO.delta)) is RhoZCDPBudget
    with pytest.raises(BudgetError, match="given must be"):
        Budget(rho=0.5, epsilon=10.0, delta=1e-8, given="sigma")
    with pytest.raises(BudgetError, match="a PureDPBudget is given as 'epsilon'"):
        PureDPBudget(rho=0.125, epsilon=0.5, delta=0.0, given="rho")  # type: ignore[call-arg]


def test_pickle_equality_and_hash() -> None:
    for budget in (RHO, APPROX, PURE):
        again = pickle.loads(pickle.dumps(budget))
        assert again == budget and hash(again) == hash(budget) and type(again) is type(budget)
        assert dataclasses.replace(budget) == budget
    # the same numbers given another way are another budget
    same_numbers = ApproxDPBudget(rho=RHO.rho, epsilon=RHO.epsilon, delta=RHO.delta)
    assert same_numbers != RHO
    assert len({RHO, APPROX, PURE, Budget.from_args(rho=0.5)}) == 3


def test_guarantee_strings_and_composition() -> None:
    assert [g.value for g in Guarantee] == ["zCDP", "approxDP", "pureDP"]
    assert Guarantee("pureDP") is Guarantee.PURE_DP and Guarantee.ZCDP == "zCDP"
    assert json.dumps(Guarantee.APPROX_DP) == '"approxDP"'
    assert Guarantee.ZCDP.charged_rho(0.5) == 0.5
    assert Guarantee.PURE_DP.charged_rho(0.125) == 0.125
    assert Guarantee.APPROX_DP.charged_rho(0.5) is None
    assert [g.composes_in_rho for g in Guarantee] == [True, False, True]


def test_composition_cost() -> None:
    # every kind costs its rho against a stored zCDP budget; a pure epsilon costs epsilon^2 / 2
    assert PURE.rho == pure_rho(0.5) >= 0.5**2 / 2
    stored = Budget.from_args(rho=0.5)
    for requested in (RHO, PURE, Budget.from_args(epsilon=0.1, delta=1e-6)):
        spent = 0.5 - requested.rho
        g = requested.guarantee
        assert budget_verdict("t", stored, spent, 1, requested, g, override=False) is None
        with pytest.raises(BudgetError, match="would spend"):
            budget_verdict("t", stored, spent + 1e-3, 1, requested, g, override=False)
    with pytest.raises(BudgetError, match="does not add up in rho"):
        budget_verdict("t", stored, 0.0, 0, APPROX, Guarantee.APPROX_DP, override=False)


def test_mechanisms_ask_the_budget() -> None:
    cbdp, topdown = REGISTRY["cbdp"], REGISTRY["inftda"]
    assert cbdp.guarantee_for(PURE) is Guarantee.PURE_DP
    assert cbdp.guarantee_for(RHO) is Guarantee.ZCDP
    assert cbdp.guarantee_for(APPROX) is Guarantee.ZCDP
    assert topdown.guarantee_for(APPROX) is Guarantee.ZCDP
    assert REGISTRY["stability_histogram"].guarantee_for(APPROX) is Guarantee.APPROX_DP
    require_epsilon_delta(APPROX)
    for refused in (RHO, PURE):
        with pytest.raises(BudgetError, match="is \\(epsilon, delta\\)-DP, not zCDP"):
            require_epsilon_delta(refused)
    # the noise of a feature release follows the budget's kind
    names, totals = ["total", "period"], [True, False]
    for budget in (RHO, APPROX, PURE):
        acct = account_features(budget, names, totals=totals, leaf=1, privacy="unbounded")
        assert acct.noise == budget.noise


def test_old_guarantee_strings_still_work() -> None:
    # tests and old ledgers pass the plain strings
    stored = Budget.from_args(rho=0.5)
    assert budget_verdict("t", stored, 0.0, 0, PURE, "pureDP", override=False) is None
    with pytest.raises(BudgetError, match="does not add up in rho"):
        budget_verdict("t", stored, 0.0, 0, APPROX, "approxDP", override=False)


def test_the_summary_line_of_each_guarantee() -> None:
    assert Guarantee.PURE_DP.budget_line(PURE, {}) == (
        "epsilon=0.5 pure DP, discrete Laplace noise (rho=0.125 when composed with zCDP releases)"
    )
    assert Guarantee.APPROX_DP.budget_line(APPROX, {"scale": 2.5, "threshold": 7}) == (
        "(epsilon=1, delta=1e-06)-DP; discrete Laplace scale 2.5, threshold 7"
    )
    assert Guarantee.APPROX_DP.budget_line(APPROX, {}).endswith("scale nan, threshold None")
    assert Guarantee.ZCDP.budget_line(RHO, {}) == (
        f"rho=0.5 ~ (epsilon={RHO.epsilon:.6g}, delta=1e-08) [tight conversion]"
    )
