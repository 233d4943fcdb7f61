"""The count-of-counts section of core/accounting.py: sensitivities (by brute force), the
epsilon split, exact scales, the rho a release spends."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inftda_sql._errors import BudgetError, SpecError
from inftda_sql.core.accounting import (
    COC_METHODS,
    CountOfCountsAccounting,
    coc_sensitivity,
    count_of_counts_accounting,
    discrete_laplace_variance,
)
from inftda_sql.core.noise import discrete_laplace_pmf


def _queries(sizes: list[int], k: int, min_size: int) -> dict[str, np.ndarray]:
    s = np.minimum(np.asarray(sizes, dtype=np.int64), k)
    h = np.bincount(s, minlength=k + 1)[min_size:]
    return {
        "naive": h,
        "cumulative": np.cumsum(h)[:-1],  # Hc[min_size .. K-1]; Hc[K] = G is public
        "unattributed": np.sort(s),
    }


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 9), min_size=1, max_size=8),
    st.integers(1, 8),
    st.sampled_from([0, 1]),
)
def test_sensitivity_by_brute_force(sizes: list[int], k: int, min_size: int) -> None:
    """Every neighbour (one person added to or removed from one group, staying in the domain
    of group sizes >= min_size) moves each query by at most its sensitivity in L1."""
    sizes = [max(s, min_size) for s in sizes]
    base = _queries(sizes, k, min_size)
    for i in range(len(sizes)):
        for step in (1, -1):
            moved = list(sizes)
            moved[i] += step
            if moved[i] < min_size:
                continue
            other = _queries(moved, k, min_size)
            for method in COC_METHODS:
                change = int(np.abs(other[method] - base[method]).sum())
                assert change <= coc_sensitivity(method), (method, sizes, moved)


def test_sensitivities_are_attained() -> None:
    base, moved = _queries([1, 2], 5, 1), _queries([1, 3], 5, 1)
    for method in COC_METHODS:
        assert np.abs(moved[method] - base[method]).sum() == coc_sensitivity(method)


@settings(max_examples=100, deadline=None)
@given(
    st.floats(1e-3, 20.0),
    st.integers(1, 5),
    st.sampled_from(COC_METHODS),
    st.sampled_from([0.0, 0.05, 0.3]),
)
def test_scales_give_at_most_epsilon(eps: float, n: int, method: str, share: float) -> None:
    acct = count_of_counts_accounting(
        eps, [f"l{i}" for i in range(n)], method=method, max_size_share=share
    )
    assert math.fsum([*acct.level_epsilon, acct.max_size_epsilon]) <= eps * (1 + 1e-12)
    for e, b in zip(acct.level_epsilon, acct.level_scale, strict=True):
        assert Fraction(acct.sensitivity) / Fraction(b) <= Fraction(e)  # exactly
        assert b == pytest.approx(acct.sensitivity / e, rel=1e-12)
    if share:
        assert Fraction(1) / Fraction(acct.max_size_scale) <= Fraction(acct.max_size_epsilon)
    assert acct.rho <= eps * eps / 2 * (1 + 1e-12)


def test_uniform_split_and_the_paper_scale() -> None:
    acct = count_of_counts_accounting(1.5, ["root", "state", "county"])
    assert acct.level_epsilon == pytest.approx((0.5, 0.5, 0.5))
    assert acct.level_scale == pytest.approx((2.0, 2.0, 2.0))
    assert acct.rho == pytest.approx(3 * 0.5**2 / 2)
    naive = count_of_counts_accounting(1.0, ["county"], method="naive", split=[1])
    assert naive.level_scale == pytest.approx((2.0,))
    weighted = count_of_counts_accounting(1.0, ["a", "b"], split=[1, 3])
    assert weighted.level_epsilon == pytest.approx((0.25, 0.75))


def test_variance_is_the_discrete_laplace_variance() -> None:
    for scale in (0.4, 1.0, 3.0, 25.0):
        x = np.arange(-4000, 4001)
        exact = float((discrete_laplace_pmf(x, scale) * x.astype(float) ** 2).sum())
        assert discrete_laplace_variance(scale) == pytest.approx(exact, rel=1e-9)
    assert discrete_laplace_variance(0.0) == 0.0


def test_infinite_budget_adds_no_noise() -> None:
    acct = count_of_counts_accounting(math.inf, ["root", "county"], max_size_share=0.1)
    assert acct.non_private and acct.level_scale == (0.0, 0.0) and acct.rho == math.inf


def test_bad_arguments() -> None:
    with pytest.raises(BudgetError, match="epsilon must be positive"):
        count_of_counts_accounting(0.0, ["root"])
    with pytest.raises(SpecError, match="method must be one of"):
        count_of_counts_accounting(1.0, ["root"], method="median")
    with pytest.raises(SpecError, match="max_size_share"):
        count_of_counts_accounting(1.0, ["root"], max_size_share=1.0)
    with pytest.raises(BudgetError, match="does not give epsilon"):  # a hand-made, too small scale
        CountOfCountsAccounting(1.0, "cumulative", ("root",), (1.0,), 1.0, (0.5,))
    with pytest.raises(BudgetError, match="sum to more than"):
        CountOfCountsAccounting(1.0, "cumulative", ("a", "b"), (0.6, 0.6), 1.0, (2.0, 2.0))
