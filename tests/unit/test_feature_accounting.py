"""Accounting of feature releases (CBDP): pure budgets, sensitivities, splits, noise scales."""

from __future__ import annotations

import itertools
import json
import math
from fractions import Fraction

import numpy as np
import pytest

from inftda_sql import BudgetError, SpecError
from inftda_sql.core.accounting import (
    Accounting,
    Budget,
    account_features,
    budget_verdict,
    feature_sensitivities,
    pure_rho,
)

NAMES = ["total", "coarse", "leaf"]
TOTALS = [True, False, False]


# ------------------------------------------------------------------------------------------------
# pure epsilon-DP budgets


def test_pure_budget() -> None:
    b = Budget.from_args(epsilon=0.5, pure=True)
    assert (b.pure, b.epsilon, b.delta, b.rho, b.given) == (True, 0.5, 0.0, 0.125, "epsilon")
    assert str(b).startswith("epsilon = 0.5 pure DP (delta = 0; rho = 0.125 zCDP")
    assert json.loads(json.dumps(b.as_dict()))["pure"] is True
    # with a delta, epsilon is an (epsilon, delta) budget converted to zCDP, as before
    assert not Budget.from_args(epsilon=0.5, delta=1e-8, pure=True).pure
    with pytest.raises(BudgetError, match="needs a delta"):
        Budget.from_args(epsilon=0.5)
    assert Budget.from_args(epsilon=math.inf, pure=True).non_private


def test_pure_budget_is_validated() -> None:
    with pytest.raises(BudgetError, match="costs rho = epsilon\\^2 / 2"):
        Budget(rho=0.2, epsilon=0.5, delta=0.0, given="epsilon")
    with pytest.raises(BudgetError, match="a pure epsilon-DP budget has delta = 0"):
        Budget(rho=0.125, epsilon=0.5, delta=1e-9, given="epsilon")


def test_pure_rho_never_understates() -> None:
    for eps in np.random.default_rng(0).uniform(1e-3, 30, 1000):
        assert Fraction(pure_rho(float(eps))) >= Fraction(float(eps)) ** 2 / 2


def test_pure_releases_compose_in_rho() -> None:
    stored = Budget.from_args(rho=0.5)  # a stored budget is zCDP (set_budget)
    half = Budget.from_args(epsilon=math.sqrt(0.5), pure=True)  # rho 0.25 (rounded up)
    assert budget_verdict("t", stored, 0.25, 1, half, "pureDP", override=False) is None
    with pytest.raises(BudgetError, match="would spend"):
        budget_verdict("t", stored, 0.3, 1, half, "pureDP", override=False)


# ------------------------------------------------------------------------------------------------
# sensitivities, by formula and by brute force


@pytest.mark.parametrize(
    ("privacy", "m", "distinct", "expected"),
    [
        ("unbounded", 1, False, [(1, 1), (1, 1), (1, 1)]),
        ("bounded", 1, False, [(0, 0), (2, math.sqrt(2)), (2, math.sqrt(2))]),
        ("unbounded", 3, False, [(3, 3), (3, 3), (3, 3)]),
        ("unbounded", 3, True, [(3, 3), (3, 3), (3, math.sqrt(3))]),
        ("bounded", 3, False, [(2, 2), (6, 3 * math.sqrt(2)), (6, 3 * math.sqrt(2))]),
        ("bounded", 3, True, [(2, 2), (6, 3 * math.sqrt(2)), (6, math.sqrt(6))]),
    ],
)
def test_feature_sensitivities(
    privacy: str, m: int, distinct: bool, expected: list[tuple[float, float]]
) -> None:
    got = feature_sensitivities(TOTALS, leaf=2, privacy=privacy, contribution=m, distinct=distinct)
    assert np.allclose(np.array(got), np.array(expected, dtype=float))


def _units(m: int, distinct: bool, leaves: int) -> list[tuple[int, ...]]:
    """Every possible set of records of one unit (1..m records, leaf cells)."""
    out = []
    for k in range(1, m + 1):
        pick = itertools.combinations if distinct else itertools.combinations_with_replacement
        out += list(pick(range(leaves), k))
    return out


@pytest.mark.parametrize("privacy", ["bounded", "unbounded"])
@pytest.mark.parametrize(("m", "distinct"), [(1, False), (2, False), (2, True), (3, True)])
def test_sensitivities_are_the_brute_force_maxima(privacy: str, m: int, distinct: bool) -> None:
    """Over every unit a neighbour can add, remove or replace, the largest change of each
    feature's histogram equals the formula (an upper bound, and attained once the cells are
    large enough to hold a unit's records apart)."""
    leaves = 8
    partitions = [np.zeros(leaves, int), np.repeat([0, 1], 4), np.arange(leaves)]
    units = _units(m, distinct, leaves)
    worst = np.zeros((3, 2))
    for r in units:
        for s in units if privacy == "bounded" else [()]:
            for f, part in enumerate(partitions):
                diff = np.bincount(part[list(r)], minlength=leaves) - np.bincount(
                    part[list(s)], minlength=leaves
                )
                worst[f] = np.maximum(worst[f], [np.abs(diff).sum(), np.sqrt((diff**2).sum())])
    got = feature_sensitivities(TOTALS, leaf=2, privacy=privacy, contribution=m, distinct=distinct)
    assert np.allclose(worst, np.array(got))


# ------------------------------------------------------------------------------------------------
# the per-feature split and noise scales


def test_laplace_accounting() -> None:
    acct = account_features(
        Budget.from_args(epsilon=0.9, pure=True), NAMES, totals=TOTALS, leaf=2, privacy="unbounded"
    )
    assert acct.noise == "laplace" and acct.exact_levels == ()
    assert math.fsum(acct.level_epsilon) <= 0.9
    for d, e, b, r in zip(
        acct.level_sensitivity, acct.level_epsilon, acct.level_sigma, acct.level_rho, strict=True
    ):
        assert d == 1.0 and e == pytest.approx(0.3) and b == pytest.approx(1 / 0.3)
        assert Fraction(d) / Fraction(b) <= Fraction(e)  # the scale never undershoots
        assert r == pure_rho(e)
    assert "L1 sensitivity" in str(acct) and "Laplace scale" in str(acct)


def test_bounded_total_is_exact_and_free() -> None:
    acct = account_features(Budget.from_args(epsilon=1.0, pure=True), NAMES, totals=TOTALS, leaf=2)
    assert acct.exact_levels == ("total",) and acct.level_names == ("coarse", "leaf")
    assert acct.level_epsilon == pytest.approx((0.5, 0.5))
    assert acct.level_sigma == pytest.approx((4.0, 4.0))  # L1 = 2 (a record moves), eps 1/2
    two = account_features(
        Budget.from_args(epsilon=1.0, pure=True), NAMES, totals=TOTALS, leaf=2, contribution=2
    )
    assert two.exact_levels == () and two.level_sensitivity == (1.0, 4.0, 4.0)


def test_gaussian_accounting_and_split() -> None:
    acct = account_features(
        Budget.from_args(rho=0.3), NAMES, totals=TOTALS, leaf=2, split={"coarse": 1, "leaf": 2}
    )
    assert acct.noise == "gaussian"
    assert acct.level_rho == pytest.approx((0.1, 0.2))
    assert acct.level_sigma == pytest.approx([math.sqrt(2) / math.sqrt(2 * r) for r in (0.1, 0.2)])
    seq = account_features(Budget.from_args(rho=0.3), NAMES, totals=TOTALS, leaf=2, split=[1, 2])
    assert seq.level_rho == acct.level_rho


def test_split_errors_name_the_queries() -> None:
    b = Budget.from_args(epsilon=1.0, pure=True)
    with pytest.raises(BudgetError) as info:
        account_features(b, NAMES, totals=TOTALS, leaf=2, split={"coarse": 1, "tot": 1})
    msg = str(info.value)
    assert "every noised query (coarse, leaf)" in msg and "unknown: tot" in msg
    assert "missing: leaf" in msg and "released exactly, without budget: total" in msg
    with pytest.raises(BudgetError, match="got 3 split weights"):
        account_features(b, NAMES, totals=TOTALS, leaf=2, split=[1, 1, 1])
    with pytest.raises(SpecError, match="unique names"):
        account_features(b, ["a", "a"], totals=[False, False], leaf=1)


def test_accounting_refuses_inconsistent_laplace() -> None:
    good = account_features(
        Budget.from_args(epsilon=1.0, pure=True), NAMES, totals=TOTALS, leaf=2, privacy="unbounded"
    )
    fields = {f: getattr(good, f) for f in good.__dataclass_fields__}
    with pytest.raises(BudgetError, match="gives more than epsilon"):
        Accounting(**{**fields, "level_sigma": (1.0, 3.0, 3.0)})  # scale too small for eps 1/3
    with pytest.raises(BudgetError, match="sum to more than"):
        Accounting(**{**fields, "level_epsilon": (0.5, 0.5, 0.5)})
    with pytest.raises(BudgetError, match="laplace noise does not go with a zCDP budget"):
        Accounting(**{**fields, "budget": Budget.from_args(rho=1.0)})
