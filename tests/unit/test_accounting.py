"""Tests of inftda_sql.core.accounting: budgets, conversions, sensitivities, per-level split."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import re
import warnings
from collections.abc import Iterator, Sequence
from decimal import Decimal, localcontext
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from inftda_sql._errors import BudgetError, SpecError
from inftda_sql.core.accounting import (
    DEFAULT_REPORT_DELTA,
    EPSILON_WARN_THRESHOLD,
    Accounting,
    Budget,
    account,
    epsilon_to_rho,
    level_sensitivities,
    rho_to_delta,
    rho_to_epsilon,
    sigma_for,
    split_rho,
    stability_histogram,
    zcdp_compose,
)

INF = math.inf
NAN = math.nan

# log-uniform strategies over the documented range of the conversions
rhos = st.floats(-8.0, 3.0).map(lambda x: 10.0**x)
deltas = st.floats(-15.0, math.log10(0.5)).map(lambda x: 10.0**x)
epsilons = st.floats(-3.0, 2.5).map(lambda x: 10.0**x)
conversions = st.sampled_from(["tight", "simple"])


# --------------------------------------------------------------------------------------------
# Budget.from_args: bad input


@pytest.mark.parametrize(
    ("kwargs", "fragments"),
    [
        ({"rho": 1.0, "epsilon": 1.0, "delta": 1e-6}, ["rho=1.0", "epsilon=1.0", "not both"]),
        ({"rho": INF, "epsilon": INF}, ["rho=inf", "not both"]),
        ({}, ["no privacy budget", "rho=", "epsilon="]),
        ({"delta": 1e-6}, ["no privacy budget", "delta=1e-06"]),
        ({"epsilon": 1.0}, ["epsilon=1.0", "needs a delta", "delta="]),
        ({"rho": 0.0}, ["rho must be positive", "0.0", "rho=0.5"]),
        ({"rho": -1}, ["rho must be positive", "-1"]),
        ({"rho": -INF}, ["rho must be positive", "-inf"]),
        ({"rho": NAN}, ["rho", "NaN"]),
        ({"epsilon": 0.0, "delta": 1e-6}, ["epsilon must be positive", "0.0"]),
        ({"epsilon": -0.5, "delta": 1e-6}, ["epsilon must be positive", "-0.5"]),
        ({"epsilon": NAN, "delta": 1e-6}, ["epsilon", "NaN"]),
        ({"epsilon": 1.0, "delta": 0.0}, ["delta must be strictly between 0 and 1", "0.0"]),
        ({"epsilon": 1.0, "delta": 1.0}, ["delta", "1.0", "delta=1e-8"]),
        ({"epsilon": 1.0, "delta": -1e-9}, ["delta", "-1e-09"]),
        ({"epsilon": 1.0, "delta": 1.5}, ["delta", "1.5"]),
        ({"epsilon": 1.0, "delta": INF}, ["delta", "inf"]),
        ({"epsilon": 1.0, "delta": NAN}, ["delta", "NaN"]),
        ({"rho": 1.0, "delta": 0.0}, ["delta", "0.0"]),
        ({"rho": 1.0, "delta": 2.0}, ["delta", "2.0"]),
        ({"rho": "0.5"}, ["rho must be a number", "'0.5'", "str"]),
        ({"rho": True}, ["rho must be a number", "True", "bool"]),
        ({"rho": [0.5]}, ["rho must be a number", "[0.5]"]),
        ({"rho": 1 + 0j}, ["rho must be a number", "(1+0j)"]),
        ({"epsilon": False, "delta": 1e-6}, ["epsilon must be a number", "False"]),
        ({"epsilon": "1", "delta": 1e-6}, ["epsilon must be a number", "'1'"]),
        ({"epsilon": 1.0, "delta": True}, ["delta must be a number", "True"]),
        ({"epsilon": 1.0, "delta": "1e-6"}, ["delta must be a number", "'1e-6'"]),
        ({"rho": 1.0, "conversion": "exact"}, ["conversion", "'exact'", "'tight'"]),
        ({"rho": 1.0, "conversion": None}, ["conversion", "None"]),
    ],
)
def test_from_args_rejects_bad_input(kwargs: dict[str, Any], fragments: list[str]) -> None:
    with pytest.raises(BudgetError) as info:
        Budget.from_args(**kwargs)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    assert isinstance(info.value, ValueError)


def test_from_args_is_keyword_only() -> None:
    with pytest.raises(TypeError):
        Budget.from_args(1.0)  # type: ignore[call-arg]


@pytest.mark.parametrize(
    "fields",
    [
        {"rho": 0.5, "epsilon": 0.1, "delta": 1e-8},  # claims more than rho implies
        {"rho": INF, "epsilon": 1.0, "delta": 1e-8},
        {"rho": 0.5, "epsilon": INF, "delta": 1e-8},
        {"rho": -0.5, "epsilon": 1.0, "delta": 1e-8},
        {"rho": 0.5, "epsilon": 10.0, "delta": 1e-8, "given": "sigma"},
        {"rho": 0.5, "epsilon": 10.0, "delta": 1e-8, "conversion": "loose"},
    ],
)
def test_direct_construction_is_validated(fields: dict[str, Any]) -> None:
    with pytest.raises(BudgetError):
        Budget(**fields)


# --------------------------------------------------------------------------------------------
# Budget.from_args: good input


def test_rho_alone_reports_at_default_delta() -> None:
    b = Budget.from_args(rho=0.5)
    assert b.given == "rho"
    assert b.rho == 0.5
    assert b.delta == DEFAULT_REPORT_DELTA == 1e-8
    assert b.conversion == "tight"
    assert b.epsilon == rho_to_epsilon(0.5, 1e-8)
    assert not b.non_private
    text = str(b)
    assert "rho = 0.5" in text
    assert f"epsilon = {b.epsilon:.6g}" in text
    assert "1e-08" in text
    assert "default reporting delta" in text
    assert "tight" in text


def test_rho_with_delta_reports_at_that_delta() -> None:
    b = Budget.from_args(rho=0.5, delta=1e-6, conversion="simple")
    assert (b.given, b.rho, b.delta, b.conversion) == ("rho", 0.5, 1e-6, "simple")
    assert b.epsilon == pytest.approx(0.5 + 2 * math.sqrt(0.5 * math.log(1e6)), rel=1e-15)
    assert "default" not in str(b)
    assert "simple" in str(b)


def test_epsilon_delta_budget() -> None:
    b = Budget.from_args(epsilon=1.0, delta=1e-6)
    assert (b.given, b.epsilon, b.delta) == ("epsilon_delta", 1.0, 1e-6)
    assert b.rho == epsilon_to_rho(1.0, 1e-6)
    assert b.rho > Budget.from_args(epsilon=1.0, delta=1e-6, conversion="simple").rho
    assert "epsilon = 1," in str(b)


@pytest.mark.parametrize("value", [1, np.float64(0.25), np.float32(0.25), Fraction(1, 4)])
def test_numeric_types_are_accepted(value: Any) -> None:
    b = Budget.from_args(rho=value)
    assert b.rho == float(value)
    assert type(b.rho) is float
    e = Budget.from_args(epsilon=value, delta=np.float64(1e-9))
    assert type(e.epsilon) is float and type(e.delta) is float


@pytest.mark.parametrize(
    "kwargs",
    [
        {"rho": INF},
        {"rho": INF, "delta": 1e-5},
        {"epsilon": INF, "delta": 1e-8},
        {"epsilon": INF, "delta": 1e-8, "conversion": "simple"},
    ],
)
def test_infinite_budget_is_non_private_and_silent(kwargs: dict[str, Any]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        b = Budget.from_args(**kwargs)
    assert b.non_private
    assert b.rho == INF and b.epsilon == INF
    assert "NON-PRIVATE" in str(b)
    d = b.as_dict()
    assert d["rho"] == "inf" and d["epsilon"] == "inf" and d["non_private"] is True
    json.dumps(d, allow_nan=False)


def test_large_epsilon_warns() -> None:
    assert EPSILON_WARN_THRESHOLD == 20.0
    with pytest.warns(UserWarning, match=r"epsilon=25 .* above 20"):
        Budget.from_args(epsilon=25.0, delta=1e-8)
    with pytest.warns(UserWarning, match="above 20"):
        Budget.from_args(rho=10.0)  # epsilon ~ 30 at delta 1e-8


def test_epsilon_at_threshold_does_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Budget.from_args(epsilon=20.0, delta=1e-8)
        Budget.from_args(rho=1.0)


def test_budget_as_dict_is_json() -> None:
    b = Budget.from_args(epsilon=1.0, delta=1e-6)
    d = json.loads(json.dumps(b.as_dict(), allow_nan=False))
    assert d == {
        "rho": b.rho,
        "epsilon": 1.0,
        "delta": 1e-6,
        "conversion": "tight",
        "given": "epsilon_delta",
        "non_private": False,
    }


def test_budget_is_frozen() -> None:
    b = Budget.from_args(rho=1.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        b.rho = 2.0  # type: ignore[misc]


def test_tiny_rho_gives_zero_epsilon_at_large_delta() -> None:
    b = Budget.from_args(rho=1e-8, delta=0.5)
    assert b.epsilon == 0.0
    assert rho_to_delta(1e-8, 0.0) <= 0.5


# --------------------------------------------------------------------------------------------
# conversions


def test_simple_conversion_reference_value() -> None:
    # ALGORITHMS.md section 1: epsilon = 1, delta = 1e-6 gives rho = 0.017469.
    assert round(epsilon_to_rho(1.0, 1e-6, conversion="simple"), 6) == 0.017469
    rho = epsilon_to_rho(1.0, 1e-6, conversion="simple")
    assert rho_to_epsilon(rho, 1e-6, conversion="simple") == pytest.approx(1.0, rel=1e-14)
    expected = math.log(1e6) * (math.sqrt(1 + 1 / math.log(1e6)) - 1) ** 2
    assert rho == pytest.approx(expected, rel=1e-14)


def test_conversion_edge_values() -> None:
    for conversion in ("tight", "simple"):
        assert rho_to_epsilon(0.0, 1e-6, conversion) == 0.0
        assert rho_to_epsilon(INF, 1e-6, conversion) == INF
        assert epsilon_to_rho(INF, 1e-6, conversion) == INF
        assert rho_to_delta(0.0, 1.0, conversion) == 0.0
        assert rho_to_delta(INF, 1.0, conversion) == 1.0
        assert rho_to_delta(1.0, INF, conversion) == 0.0
    assert epsilon_to_rho(0.0, 1e-6, "simple") == 0.0
    # rho-zCDP with a tiny rho already implies (0, delta)-DP for a moderate delta.
    assert epsilon_to_rho(0.0, 0.1) > 0.0
    assert rho_to_delta(epsilon_to_rho(0.0, 0.1), 0.0) <= 0.1


@pytest.mark.parametrize(
    ("func", "args", "fragment"),
    [
        (rho_to_epsilon, (-1.0, 1e-6), "rho must be non-negative"),
        (rho_to_epsilon, (NAN, 1e-6), "NaN"),
        (rho_to_epsilon, (1.0, 0.0), "delta"),
        (rho_to_epsilon, (1.0, 1.0), "delta"),
        (rho_to_epsilon, (1.0, 1e-6, "exact"), "'exact'"),
        (epsilon_to_rho, (-1.0, 1e-6), "epsilon must be non-negative"),
        (epsilon_to_rho, (1.0, -1e-6), "delta"),
        (epsilon_to_rho, ("1", 1e-6), "'1'"),
        (rho_to_delta, (1.0, -0.5), "epsilon must be non-negative"),
        (rho_to_delta, (True, 1.0), "True"),
        (rho_to_delta, (1.0, 1.0, "Simple"), "'Simple'"),
    ],
)
def test_conversions_reject_bad_input(func: Any, args: tuple[Any, ...], fragment: str) -> None:
    with pytest.raises(BudgetError) as info:
        func(*args)
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    ("rho", "delta"),
    [(1e-300, 1e-300), (1e-20, 1e-15), (1e-8, 0.5), (1e6, 1e-300), (1e12, 0.999), (1e300, 0.5)],
)
def test_extreme_values_do_not_overflow(rho: float, delta: float) -> None:
    eps = rho_to_epsilon(rho, delta)
    assert math.isfinite(eps) and eps >= 0.0
    assert rho_to_delta(rho, eps) <= delta * (1 + 1e-9)
    assert eps <= rho_to_epsilon(rho, delta, conversion="simple") * (1 + 1e-12)
    if eps > 0.0:
        assert epsilon_to_rho(eps, delta) == pytest.approx(rho, rel=1e-9)


# OpenDP is an independent implementation of the same tight (CKS20) bound.

RHO_GRID = [1e-8, 1e-6, 1e-4, 1e-3, 1e-2, 0.1, 0.5, 1.0, 10.0, 100.0, 1000.0]
DELTA_GRID = [1e-15, 1e-10, 1e-8, 1e-6, 1e-3, 0.1, 0.5]
EPS_GRID = [0.01, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 200.0, 2000.0]


def _opendp_profile(rho: float) -> Any:
    """OpenDP's privacy profile (epsilon <-> delta) of a rho-zCDP measurement."""
    dp = pytest.importorskip("opendp.prelude")
    dp.enable_features("contrib", "honest-but-curious")
    meas = dp.m.make_user_measurement(
        dp.atom_domain(T=int),
        dp.absolute_distance(T=int),
        dp.zero_concentrated_divergence(),
        lambda x: x,
        lambda d_in: rho,
    )
    return dp.c.make_zCDP_to_approxDP(meas).map(1)


def _close(ours: float, theirs: float, rel: float = 1e-6) -> bool:
    return ours == theirs or math.isclose(ours, theirs, rel_tol=rel, abs_tol=1e-300)


def test_rho_to_epsilon_matches_opendp() -> None:
    checked = 0
    for rho in RHO_GRID:
        profile = _opendp_profile(rho)
        for delta in DELTA_GRID:
            ours, theirs = rho_to_epsilon(rho, delta), profile.epsilon(delta)
            assert _close(ours, theirs), (rho, delta, ours, theirs)
            checked += 1
    assert checked >= 50


def test_rho_to_delta_matches_opendp() -> None:
    checked = 0
    for rho in RHO_GRID:
        profile = _opendp_profile(rho)
        # epsilon = rho + c * 2 sqrt(rho): delta from about 0.5 down to about 1e-28
        for c in (0.5, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0):
            eps = rho + c * 2.0 * math.sqrt(rho)
            ours, theirs = rho_to_delta(rho, eps), profile.delta(eps)
            if theirs < 1e-300:  # both underflow
                assert ours < 1e-290
            elif theirs > 0.5:
                # OpenDP searches the order a above 1.01 only, which matters when epsilon is
                # at most about rho (delta near 1): there we are tighter, never looser.
                assert ours <= theirs * (1 + 1e-9), (rho, eps, ours, theirs)
            else:
                assert _close(ours, theirs), (rho, eps, ours, theirs)
                checked += 1
    assert checked >= 50


def test_epsilon_to_rho_matches_opendp() -> None:
    """The rho we derive from (epsilon, delta) gives back (epsilon, delta) in OpenDP."""
    checked = 0
    for eps in EPS_GRID:
        for delta in DELTA_GRID:
            rho = epsilon_to_rho(eps, delta)
            profile = _opendp_profile(rho)
            assert _close(profile.epsilon(delta), eps), (eps, delta, rho)
            # never overstated: OpenDP certifies (epsilon, delta) for our rho
            assert profile.delta(eps) <= delta * (1 + 1e-9), (eps, delta, rho)
            assert _close(profile.delta(eps), delta), (eps, delta, rho)
            checked += 1
    assert checked >= 50


@settings(max_examples=60, deadline=None)
@given(rho=rhos, delta=deltas, conversion=conversions)
def test_round_trip_rho_epsilon_rho(rho: float, delta: float, conversion: str) -> None:
    eps = rho_to_epsilon(rho, delta, conversion)
    if eps == 0.0:  # (0, delta)-DP already holds: no inverse to test
        assert rho_to_delta(rho, 0.0) <= delta
        return
    assert epsilon_to_rho(eps, delta, conversion) == pytest.approx(rho, rel=1e-9)
    assert rho_to_delta(rho, eps, conversion) <= delta * (1 + 1e-9)
    assert rho_to_delta(rho, eps, conversion) == pytest.approx(delta, rel=1e-6)


@settings(max_examples=60, deadline=None)
@given(eps=epsilons, delta=deltas, conversion=conversions)
def test_round_trip_epsilon_rho_epsilon(eps: float, delta: float, conversion: str) -> None:
    rho = epsilon_to_rho(eps, delta, conversion)
    assert rho > 0.0
    assert rho_to_epsilon(rho, delta, conversion) == pytest.approx(eps, rel=1e-9)
    # conservative: the derived rho never claims more than (eps, delta)
    assert rho_to_delta(rho, eps, conversion) <= delta * (1 + 1e-9)


@settings(max_examples=60, deadline=None)
@given(eps=epsilons, delta=deltas)
def test_tight_allows_more_rho_than_simple(eps: float, delta: float) -> None:
    tight, simple = epsilon_to_rho(eps, delta), epsilon_to_rho(eps, delta, "simple")
    assert tight >= simple
    assert rho_to_epsilon(simple, delta) <= eps * (1 + 1e-12)
    assert rho_to_delta(simple, eps) <= rho_to_delta(simple, eps, "simple") * (1 + 1e-12)


@settings(max_examples=40, deadline=None)
@given(rho=rhos, delta=deltas, factor=st.floats(1.01, 100.0), conversion=conversions)
@example(rho=1.0, delta=0.49999999999999994, factor=1.01, conversion="tight")
def test_monotonicity(rho: float, delta: float, factor: float, conversion: str) -> None:
    eps = rho_to_epsilon(rho, delta, conversion)
    # epsilon grows with rho and shrinks with delta
    assert rho_to_epsilon(rho * factor, delta, conversion) >= eps
    assert rho_to_epsilon(rho, delta / factor, conversion) >= eps
    # delta grows with rho and shrinks with epsilon
    e = max(eps, 1e-3)
    d = rho_to_delta(rho, e, conversion)
    assert rho_to_delta(rho * factor, e, conversion) >= d
    assert rho_to_delta(rho, e * factor, conversion) <= d
    # the allowed rho grows with epsilon and delta, up to the bisection's documented relative
    # width (1e-13): for deltas one float apart (0.49999999999999994 vs 0.5) the two searches may
    # stop 4e-16 apart, the smaller for the larger delta (both are conservative)
    r = epsilon_to_rho(e, delta, conversion)
    assert epsilon_to_rho(e * factor, delta, conversion) >= r * (1 - 1e-13)
    assert epsilon_to_rho(e, min(0.5, delta * factor), conversion) >= r * (1 - 1e-13)


# --------------------------------------------------------------------------------------------
# sensitivity


def test_bounded_sensitivities() -> None:
    r2 = math.sqrt(2.0)
    assert level_sensitivities(3) == (r2, r2, r2)
    assert level_sensitivities(3, distinct=True) == (r2, r2, r2)
    assert level_sensitivities(2, contribution=3) == (3 * r2, 3 * r2)
    # distinct at the leaves only: coarser levels keep the general bound
    assert level_sensitivities(3, contribution=4, distinct=True) == (4 * r2, 4 * r2, math.sqrt(8))
    assert level_sensitivities(1, contribution=2, distinct=True) == (2.0,)


def test_unbounded_sensitivities() -> None:
    assert level_sensitivities(2, privacy="unbounded") == (1.0, 1.0, 1.0)
    assert level_sensitivities(2, privacy="unbounded", contribution=3) == (3.0, 3.0, 3.0)
    assert level_sensitivities(2, privacy="unbounded", contribution=4, distinct=True) == (
        4.0,
        4.0,
        2.0,
    )


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"n_levels": 0}, "n_levels must be a positive integer, got 0"),
        ({"n_levels": -2}, "got -2"),
        ({"n_levels": 1.5}, "got 1.5"),
        ({"n_levels": True}, "got True"),
        ({"n_levels": "2"}, "got '2'"),
        ({"n_levels": 2, "privacy": "add-remove"}, "'add-remove'"),
        ({"n_levels": 2, "contribution": 0}, "contribution must be a positive integer, got 0"),
        ({"n_levels": 2, "contribution": 2.0}, "got 2.0"),
        ({"n_levels": 2, "contribution": False}, "got False"),
        ({"n_levels": 2, "distinct": "yes"}, "distinct must be True or False, got 'yes'"),
    ],
)
def test_level_sensitivities_rejects_bad_input(kwargs: dict[str, Any], fragment: str) -> None:
    with pytest.raises(SpecError) as info:
        level_sensitivities(**kwargs)
    assert fragment in str(info.value)


def test_numpy_integers_are_accepted() -> None:
    n, m = np.int64(2), np.int32(2)
    assert level_sensitivities(n, contribution=m) == (2 * math.sqrt(2),) * 2  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# split


def test_uniform_split() -> None:
    assert split_rho(1.0, 4) == (0.25, 0.25, 0.25, 0.25)
    parts = split_rho(1.0, 3)
    assert len(parts) == 3 and math.fsum(parts) <= 1.0
    assert parts == pytest.approx((1 / 3,) * 3, rel=1e-15)
    assert split_rho(INF, 2) == (INF, INF)


def test_weighted_split() -> None:
    assert split_rho(2.0, 3, weights=[1, 1, 2]) == (0.5, 0.5, 1.0)
    assert split_rho(1.0, 2, weights=np.array([1.0, 3.0])) == (0.25, 0.75)
    assert split_rho(1.0, 2, weights=(0.2, 0.2)) == (0.5, 0.5)


@pytest.mark.parametrize(
    ("rho", "n", "weights", "error", "fragment"),
    [
        (1.0, 2, [1.0], BudgetError, "got 1 split weights [1.0] for 2 noised levels"),
        (1.0, 2, [1.0, 0.0], BudgetError, "positive and finite, got 0.0 at position 1"),
        (1.0, 2, [-1.0, 1.0], BudgetError, "got -1.0 at position 0"),
        (1.0, 2, [1.0, INF], BudgetError, "got inf"),
        (1.0, 2, [1.0, NAN], BudgetError, "NaN"),
        (1.0, 2, [1.0, "a"], BudgetError, "'a'"),
        (1.0, 2, "ab", BudgetError, "split weights must be a sequence, got 'ab'"),
        (1.0, 2, 3.0, BudgetError, "got 3.0"),
        (0.0, 2, None, BudgetError, "rho must be positive, got 0.0"),
        (NAN, 2, None, BudgetError, "NaN"),
        (1.0, 0, None, SpecError, "n_noised_levels must be a positive integer, got 0"),
    ],
)
def test_split_rejects_bad_input(
    rho: float, n: int, weights: Any, error: type[Exception], fragment: str
) -> None:
    with pytest.raises(error) as info:
        split_rho(rho, n, weights)
    assert fragment in str(info.value)


@settings(max_examples=100, deadline=None)
@given(
    rho=rhos,
    weights=st.lists(st.floats(1e-3, 1e3), min_size=1, max_size=12),
)
def test_split_sums_to_rho_and_is_proportional(rho: float, weights: list[float]) -> None:
    parts = split_rho(rho, len(weights), weights)
    assert math.fsum(parts) <= rho
    assert math.fsum(parts) == pytest.approx(rho, rel=1e-14)
    total = math.fsum(weights)
    for part, w in zip(parts, weights, strict=True):
        assert part > 0.0
        assert part == pytest.approx(rho * w / total, rel=1e-9)


def test_zcdp_compose() -> None:
    assert zcdp_compose([]) == 0.0
    assert zcdp_compose([0.1, 0.2, 0.2]) == 0.5
    assert zcdp_compose(split_rho(0.7, 7)) == pytest.approx(0.7, rel=1e-15)
    assert zcdp_compose([0.1, INF]) == INF
    with pytest.raises(BudgetError, match=r"rhos\[1\] must be non-negative, got -0.1"):
        zcdp_compose([0.1, -0.1])


# --------------------------------------------------------------------------------------------
# account / Accounting


def test_sigma_for_is_the_accountings_formula() -> None:
    """One formula: every level's sigma of account() is sigma_for of its D and rho."""
    assert sigma_for(math.sqrt(2.0), 1.0) == math.nextafter(1.0, 2.0)  # rounded up
    assert sigma_for(1.0, INF) == 0.0
    for privacy, m in (("bounded", 1), ("bounded", 3), ("unbounded", 2)):
        acct = account(
            Budget.from_args(epsilon=1.0, delta=1e-8), ["a", "b", "c"], privacy=privacy,
            contribution=m, split=[1, 2, 3] if m == 1 else None,
        )  # fmt: skip
        for d, r, sigma in zip(
            acct.level_sensitivity, acct.level_rho, acct.level_sigma, strict=True
        ):
            assert sigma_for(d, r) == sigma  # bit for bit


@pytest.mark.parametrize(
    ("rho", "sensitivity", "error", "fragment"),
    [
        (0.0, 1.0, BudgetError, "rho must be positive, got 0.0; pass rho=float('inf')"),
        (-1.0, 1.0, BudgetError, "rho must be positive"),
        (NAN, 1.0, BudgetError, "rho must be a number, got NaN"),
        (1.0, 0.0, SpecError, "sensitivity must be positive and finite, got 0.0"),
        (1.0, INF, SpecError, "sensitivity must be positive and finite, got inf"),
        (1.0, "2", SpecError, "sensitivity must be a number"),
    ],
)
def test_sigma_for_rejects_bad_input(
    rho: Any, sensitivity: Any, error: type[Exception], fragment: str
) -> None:
    with pytest.raises(error, match=re.escape(fragment)) as info:
        sigma_for(sensitivity, rho)
    assert info.value.param in ("rho", "sensitivity")  # type: ignore[attr-defined]


def test_account_bounded() -> None:
    names = ["o_region|d_region", "o_province|d_province", "o_muni|d_muni"]
    # every unit holds exactly m = 2 records here, so N is public and the root stays unnoised
    acc = account(Budget.from_args(rho=0.9), names, contribution=2, distinct=True, noise_root=False)
    assert acc.level_names == tuple(names)
    assert acc.privacy == "bounded" and acc.contribution == 2 and acc.distinct
    assert acc.level_sensitivity == level_sensitivities(3, contribution=2, distinct=True)
    assert acc.level_rho == pytest.approx((0.3, 0.3, 0.3), rel=1e-15)
    assert math.fsum(acc.level_rho) == pytest.approx(0.9, rel=1e-15)
    assert math.fsum(acc.level_rho) <= 0.9
    for d, r, s in zip(acc.level_sensitivity, acc.level_rho, acc.level_sigma, strict=True):
        # d / sqrt(2 r), rounded up (see test_every_sigma_is_rounded_up)
        assert s == pytest.approx(d / math.sqrt(2 * r), rel=1e-15)
        assert Fraction(d) ** 2 <= 2 * Fraction(r) * Fraction(s) ** 2
        assert d**2 / (2 * s**2) == pytest.approx(r, rel=1e-14)
    assert acc.level_sigma[0] == pytest.approx(2 * math.sqrt(2) / math.sqrt(0.6))
    assert acc.level_sigma[2] == pytest.approx(2 / math.sqrt(0.6))


def test_account_unbounded_noises_the_root() -> None:
    acc = account(
        Budget.from_args(rho=1.0), ["region", "province"], privacy="unbounded", split=[2, 1, 1]
    )
    assert acc.level_names == ("root", "region", "province")
    assert acc.level_sensitivity == (1.0, 1.0, 1.0)
    assert acc.level_rho == (0.5, 0.25, 0.25)
    assert acc.level_sigma == pytest.approx((1.0, math.sqrt(2.0), math.sqrt(2.0)), rel=1e-15)
    uniform = account(Budget.from_args(rho=1.0), ["region"], privacy="unbounded")
    assert uniform.level_rho == (0.5, 0.5)


def test_account_split_needs_one_weight_per_noised_level() -> None:
    budget = Budget.from_args(rho=1.0)
    with pytest.raises(BudgetError, match=r"got 2 split weights .* for 3 noised levels"):
        account(budget, ["a", "b"], privacy="unbounded", split=[1, 1])
    assert account(budget, ["a", "b"], split=[1, 3]).level_rho == (0.25, 0.75)


@pytest.mark.parametrize(
    ("names", "kwargs", "fragment"),
    [
        ([], {}, "level_names is empty"),
        ("region", {}, "level_names must be a sequence, got 'region'"),
        (["a", "a"], {}, "unique"),
        (["root", "a"], {"privacy": "unbounded"}, "repeated: ['root']"),
        (["a", 3], {}, "got 3"),
        (["a", ""], {}, "got ''"),
        (["a"], {"privacy": "replace"}, "'replace'"),
        (["a"], {"contribution": 0}, "contribution"),
    ],
)
def test_account_rejects_bad_specs(names: Any, kwargs: dict[str, Any], fragment: str) -> None:
    with pytest.raises(SpecError) as info:
        account(Budget.from_args(rho=1.0), names, **kwargs)
    assert fragment in str(info.value)


def test_account_needs_a_budget() -> None:
    with pytest.raises(BudgetError, match=r"budget must be a Budget, got 0.5; .*from_args"):
        account(0.5, ["a"])  # type: ignore[arg-type]


def test_accounting_non_private() -> None:
    acc = account(Budget.from_args(rho=INF), ["a", "b"], privacy="unbounded")
    assert acc.non_private
    assert acc.level_rho == (INF, INF, INF)
    assert acc.level_sigma == (0.0, 0.0, 0.0)
    assert str(acc).startswith("NON-PRIVATE")
    assert "NON-PRIVATE" in acc._repr_html_()
    d = json.loads(json.dumps(acc.as_dict(), allow_nan=False))
    assert d["non_private"] is True
    assert d["budget"]["rho"] == "inf"
    assert [lvl["rho"] for lvl in d["levels"]] == ["inf"] * 3
    assert [lvl["sigma"] for lvl in d["levels"]] == [0.0] * 3


def test_accounting_as_dict() -> None:
    acc = account(Budget.from_args(epsilon=1.0, delta=1e-6), ["a", "b"], contribution=2)
    d = json.loads(json.dumps(acc.as_dict(), allow_nan=False))
    assert d["budget"] == acc.budget.as_dict()
    assert (d["privacy"], d["contribution"], d["distinct"], d["non_private"]) == (
        "bounded",
        2,
        False,
        False,
    )
    assert d["levels"] == [
        {"name": n, "sensitivity": s, "rho": r, "sigma": g}
        for n, s, r, g in zip(
            acc.level_names, acc.level_sensitivity, acc.level_rho, acc.level_sigma, strict=True
        )
    ]


def test_accounting_str_and_html() -> None:
    acc = account(Budget.from_args(rho=0.5), ["o_region|d_region", "o_muni|d_muni"])
    text = str(acc)
    assert "NON-PRIVATE" not in text
    lines = text.splitlines()
    assert "rho = 0.5 zCDP" in lines[0]
    assert f"epsilon = {acc.budget.epsilon:.6g}" in lines[0]
    assert "delta = 1e-08" in lines[0] and "tight" in lines[0]
    assert "bounded DP" in lines[1] and "m = 1" in lines[1]
    assert lines[2].split() == ["level", "sensitivity", "rho", "sigma"]
    assert lines[3].split() == ["o_region|d_region", "1.41421", "0.25", "2"]
    assert lines[4].split() == ["o_muni|d_muni", "1.41421", "0.25", "2"]
    page = acc._repr_html_()
    assert page.count("<tr>") == 3
    assert "<td>o_region|d_region</td><td>1.41421</td><td>0.25</td><td>2</td>" in page
    escaped = account(Budget.from_args(rho=0.5), ["<b>"])._repr_html_()
    assert "&lt;b&gt;" in escaped and "<b>" not in escaped


def test_accounting_direct_construction_is_checked() -> None:
    acc = account(Budget.from_args(rho=1.0), ["a", "b"])
    with pytest.raises(BudgetError, match="sum to more than"):
        dataclasses.replace(acc, level_rho=(0.6, 0.6))
    with pytest.raises(BudgetError, match="does not give rho"):
        dataclasses.replace(acc, level_sigma=(1.0, 1.0))
    with pytest.raises(SpecError, match="one name, sensitivity, rho and sigma per level"):
        dataclasses.replace(acc, level_names=("a",))
    oracle = account(Budget.from_args(rho=INF), ["a"])
    with pytest.raises(BudgetError, match="no noise"):
        dataclasses.replace(oracle, level_sigma=(1.0,))
    assert isinstance(dataclasses.replace(acc), Accounting)


@settings(max_examples=50, deadline=None)
@given(
    rho=st.floats(-8.0, 0.0).map(lambda x: 10.0**x),  # epsilon stays below the warning
    n=st.integers(1, 8),
    privacy=st.sampled_from(["bounded", "unbounded"]),
    m=st.integers(1, 20),
    distinct=st.booleans(),
)
def test_account_invariants(rho: float, n: int, privacy: str, m: int, distinct: bool) -> None:
    acc = account(
        Budget.from_args(rho=rho),
        [f"level{i}" for i in range(1, n + 1)],
        privacy=privacy,
        contribution=m,
        distinct=distinct,
    )
    # the root is noised unless N is public (bounded DP with one record per unit)
    k = n + (privacy == "unbounded" or m > 1)
    assert len(acc.level_names) == len(acc.level_rho) == len(acc.level_sigma) == k
    assert math.fsum(acc.level_rho) <= rho
    assert math.fsum(acc.level_rho) == pytest.approx(rho, rel=1e-14)
    for d, r, s in zip(acc.level_sensitivity, acc.level_rho, acc.level_sigma, strict=True):
        assert d**2 / (2 * s**2) == pytest.approx(r, rel=1e-12)


def test_bounded_with_several_records_per_unit_noises_the_root() -> None:
    """Replacing a unit holding 1 record by one holding m moves N by m - 1: N is not public."""
    from inftda_sql.core.accounting import account

    acct = account(Budget.from_args(rho=1.0), ["a", "b"], contribution=3)
    assert acct.level_names == ("root", "a", "b")
    assert acct.level_sensitivity[0] == 2.0
    assert account(Budget.from_args(rho=1.0), ["a", "b"]).level_names == ("a", "b")
    exact_m = account(Budget.from_args(rho=1.0), ["a"], contribution=3, noise_root=False)
    assert exact_m.level_names == ("a",)


# --------------------------------------------------------------------------------------------
# Stability Histogram: scale and threshold, checked against the exact privacy curve


def _tail(t: int, a: float) -> float:
    """P(L >= t) for the discrete Laplace with ratio a."""
    return a**t / (1 + a) if t >= 1 else 1.0 - a ** (1 - t) / (1 + a)


def _cell_losses(h: int, h2: int, tau: int, a: float, b: float) -> dict[float, float]:
    """Privacy-loss atoms {log P_h(o) - log P_h2(o): P_h-mass} of one cell's output o.

    o is "dropped" or a released value y >= tau; for y above max(h, h2, tau) the loss is the
    constant (h - h2) / b, so those outcomes are lumped.
    """
    atoms: dict[float, float] = {}

    def add(loss: float, p: float) -> None:
        if p > 0:
            atoms[round(loss, 12)] = atoms.get(round(loss, 12), 0.0) + p

    def dropped(x: int) -> float:
        return 1.0 if x == 0 else 1.0 - _tail(tau - x, a)

    def pmf(k: int) -> float:
        return (1 - a) / (1 + a) * a ** abs(k)

    p_drop, q_drop = dropped(h), dropped(h2)
    if h > 0:
        add(math.log(p_drop) - math.log(q_drop), p_drop)
        top = max(h, h2, tau)
        for y in range(tau, top + 1):
            p = pmf(y - h)
            add(math.inf if h2 == 0 else (abs(y - h2) - abs(y - h)) / b, p)
        add(math.inf if h2 == 0 else (h - h2) / b, _tail(top + 1 - h, a))
    else:  # never released under h
        add(-math.log(q_drop), 1.0)
    return atoms


def _exact_delta(h: tuple[int, ...], h2: tuple[int, ...], eps: float, tau: int, b: float) -> float:
    """sup over output sets S of P[M(h) in S] - e^eps P[M(h2) in S], exactly (float)."""
    a = math.exp(-1 / b)
    joint = {0.0: 1.0}
    for x, y in zip(h, h2, strict=True):
        if x == y:
            continue  # identical cells do not change the privacy curve
        cell = _cell_losses(x, y, tau, a, b)
        nxt: dict[float, float] = {}
        for l1, p1 in joint.items():
            for l2, p2 in cell.items():
                key = l1 + l2
                nxt[key] = nxt.get(key, 0.0) + p1 * p2
        joint = nxt
    return math.fsum(
        p * (1.0 if math.isinf(loss) else max(0.0, -math.expm1(eps - loss)))
        for loss, p in joint.items()
    )


def _units(cells: int, m: int, distinct: bool) -> list[tuple[int, ...]]:
    """Every record vector a unit can hold: 1..m records (in distinct cells if asked)."""
    out = []
    for k in range(1, m + 1):
        combos = (
            itertools.combinations(range(cells), k)
            if distinct
            else itertools.combinations_with_replacement(range(cells), k)
        )
        for combo in combos:
            out.append(tuple(combo.count(i) for i in range(cells)))
    return out


def _neighbours(
    cells: int, counts: Sequence[int], m: int, distinct: bool, privacy: str
) -> Iterator[tuple[tuple[int, ...], tuple[int, ...]]]:
    units = _units(cells, m, distinct)
    for h in itertools.product(counts, repeat=cells):
        for u in units:
            if privacy == "unbounded":
                added = tuple(x + y for x, y in zip(h, u, strict=True))
                yield h, added
                yield added, h
            elif all(x >= y for x, y in zip(h, u, strict=True)):
                for v in units:
                    yield h, tuple(x - y + z for x, y, z in zip(h, u, v, strict=True))


@pytest.mark.parametrize("privacy", ["bounded", "unbounded"])
@pytest.mark.parametrize(("m", "distinct"), [(1, False), (2, False), (2, True), (3, False)])
@pytest.mark.parametrize(("eps", "delta"), [(1.0, 0.05), (0.3, 1e-3), (3.0, 0.2)])
def test_stability_histogram_exact_privacy_curve(
    privacy: str, m: int, distinct: bool, eps: float, delta: float
) -> None:
    """Over every neighbouring pair of small histograms, the exact hockey-stick divergence at
    epsilon is at most the delta the threshold claims, and the claim is not loose."""
    sh = stability_histogram(eps, delta, privacy=privacy, contribution=m, distinct=distinct)
    assert sh.delta_bound <= delta
    cells = 3
    counts = (0, 1, 2, sh.threshold + 1)
    worst = 0.0
    for h, h2 in _neighbours(cells, counts, m, distinct, privacy):
        worst = max(worst, _exact_delta(h, h2, sh.epsilon, sh.threshold, sh.scale))
    assert worst <= sh.delta_bound * (1 + 1e-9)
    # the worst pairs of the proof: the unit's records alone in one cell, or in m cells of
    # their own (bounded: the replacing unit's one record joins a big cell); only a union
    # bound separates their exact divergence from the claim
    big = sh.threshold + 5
    extra = (big,) if privacy == "bounded" else ()
    moved = (big + 1,) if privacy == "bounded" else ()
    pairs = [((1,) * m + extra, (0,) * m + moved)]
    if not distinct:
        pairs.append(((m, *extra), (0, *moved)))
    tight = max(_exact_delta(h, h2, sh.epsilon, sh.threshold, sh.scale) for h, h2 in pairs)
    assert sh.delta_bound * (1 + 1e-9) >= tight >= 0.5 * sh.delta_bound
    # one less would not do (the threshold is the smallest valid one)
    if sh.threshold - 1 > sh.cell_sensitivity:
        a = math.exp(-1 / sh.scale)
        t = sh.threshold - 1
        c = sh.cell_sensitivity
        terms = [m * a ** (t - 1)] + ([a ** (t - m)] if c > 1 else [])
        assert max(terms) / (1 + a) > delta or a ** (t - c) / (1 + a) > 1 - a


def test_stability_histogram_second_condition_binds() -> None:
    """With delta not far below epsilon / D1, a cell only the neighbour has costs epsilon too."""
    sh = stability_histogram(0.02, 0.4, privacy="unbounded")
    a = math.exp(-1 / sh.scale)
    assert a ** (sh.threshold - 1) / (1 + a) <= 1 - a
    for h, h2 in _neighbours(2, (0, 1, sh.threshold), 1, False, "unbounded"):
        assert _exact_delta(h, h2, sh.epsilon, sh.threshold, sh.scale) <= sh.delta_bound * (
            1 + 1e-9
        )


@settings(max_examples=200, deadline=None)
@given(
    eps=epsilons,
    delta=deltas,
    privacy=st.sampled_from(["bounded", "unbounded"]),
    m=st.integers(1, 50),
    distinct=st.booleans(),
)
@example(eps=0.005656835907805707, delta=1e-14, privacy="unbounded", m=27, distinct=False)
def test_stability_histogram_invariants(
    eps: float, delta: float, privacy: str, m: int, distinct: bool
) -> None:
    sh = stability_histogram(eps, delta, privacy=privacy, contribution=m, distinct=distinct)
    d1 = m if privacy == "unbounded" else 2 * m
    c = 1 if distinct else m
    assert sh.sensitivity == d1 and sh.cell_sensitivity == c
    assert Fraction(d1) / Fraction(sh.scale) <= Fraction(eps)  # epsilon holds exactly
    assert sh.scale == pytest.approx(d1 / eps, rel=1e-15)
    assert isinstance(sh.threshold, int) and sh.threshold > c
    # delta(tau) recomputed in 50-digit decimal arithmetic
    with localcontext() as ctx:
        ctx.prec = 50
        b = Decimal(Fraction(sh.scale).numerator) / Decimal(Fraction(sh.scale).denominator)
        a = (-1 / b).exp()

        def bound(t: int) -> Decimal:
            terms = [m * a ** (t - 1)] + ([a ** (t - m)] if c > 1 else [])
            return max(terms) / (1 + a)

        assert bound(sh.threshold) <= Decimal(delta)
        assert a ** (sh.threshold - c) / (1 + a) <= 1 - a
        assert math.isclose(float(bound(sh.threshold)), sh.delta_bound, rel_tol=1e-6)
        t = sh.threshold - 1
        if t > c:  # minimal, up to the implementation's safety margin: 1e-9 relative in the
            # logs (rounding may only make tau larger), i.e. 1e-9 |ln x| relative in x
            one_minus_a = 1 - a

            def slack(x: Decimal) -> Decimal:
                return 1 - Decimal("1.01e-9") * abs(x.ln()) - Decimal("1e-12")

            assert bound(t) > Decimal(delta) * slack(Decimal(delta)) or (
                a ** (t - c) / (1 + a) > one_minus_a * slack(one_minus_a)
            )
    assert json.loads(json.dumps(sh.as_dict(), allow_nan=False))["threshold"] == sh.threshold


def test_stability_histogram_monotone_and_limits() -> None:
    base = stability_histogram(1.0, 1e-6, contribution=4)
    assert stability_histogram(1.0, 1e-9, contribution=4).threshold > base.threshold
    assert stability_histogram(2.0, 1e-6, contribution=4).threshold < base.threshold
    assert stability_histogram(1.0, 1e-6, contribution=4, distinct=True).threshold <= (
        base.threshold
    )
    unb = stability_histogram(1.0, 1e-6, contribution=4, privacy="unbounded")
    assert unb.scale == base.scale / 2 and unb.threshold < base.threshold
    oracle = stability_histogram(INF, 1e-6, contribution=4)
    assert oracle.non_private and oracle.scale == 0.0 and oracle.threshold == 5
    assert oracle.as_dict()["epsilon"] == "inf" and not base.non_private
    # the classic sensitivity-1 figure: Lap(2/eps) with threshold 1 + 2 ln(2/delta)/eps
    # (Vadhan 2017, Prop. 3.5); ours, for the same scale, is a little lower (one cell, exact
    # discrete tail)
    assert base.scale == 8.0
    classic = stability_histogram(1.0, 1e-6)
    assert classic.scale == 2.0 and classic.threshold <= 1 + 2 * math.log(2 / 1e-6)


@pytest.mark.parametrize(
    ("kwargs", "error", "fragment"),
    [
        ({"epsilon": 0.0}, BudgetError, "epsilon must be positive"),
        ({"epsilon": -1.0}, BudgetError, "-1.0"),
        ({"epsilon": NAN}, BudgetError, "NaN"),
        ({"epsilon": "1"}, BudgetError, "'1'"),
        ({"delta": 0.0}, BudgetError, "delta must be strictly between 0 and 1"),
        ({"delta": 1.0}, BudgetError, "delta"),
        ({"privacy": "replace"}, SpecError, "'replace'"),
        ({"contribution": 0}, SpecError, "contribution"),
        ({"contribution": 1.5}, SpecError, "contribution"),
        ({"distinct": 1}, SpecError, "distinct"),
    ],
)
def test_stability_histogram_bad_arguments(
    kwargs: dict[str, Any], error: type[Exception], fragment: str
) -> None:
    args: dict[str, Any] = {"epsilon": 1.0, "delta": 1e-6, **kwargs}
    with pytest.raises(error, match=re.escape(fragment)):
        stability_histogram(args.pop("epsilon"), args.pop("delta"), **args)


# --------------------------------------------------------------------------------------------
# sigma is never below the exact D / sqrt(2 rho_l): checked with rationals


def _exact_squares(n: int, privacy: str, m: int, distinct: bool, root: bool) -> list[int]:
    """The exact squared sensitivities per noised level, spelled out from the model (not from
    the module under test): bounded 2m^2 (leaf 2m if distinct), root (m-1)^2 (1 if m = 1);
    unbounded m^2 (leaf m if distinct), root m^2."""
    if privacy == "bounded":
        levels = [2 * m * m] * (n - 1) + [2 * m if distinct else 2 * m * m]
        return ([max(m - 1, 1) ** 2] if root else []) + levels
    levels = [m * m] * (n - 1) + [m if distinct else m * m]
    return ([m * m] if root else []) + levels


@settings(max_examples=250, deadline=None)
@given(
    rho=st.floats(1e-12, 1e6),
    n=st.integers(1, 7),
    privacy=st.sampled_from(["bounded", "unbounded"]),
    m=st.one_of(st.integers(1, 12), st.integers(1, 10**9)),
    distinct=st.booleans(),
    weights=st.lists(st.floats(1e-3, 1e3), min_size=8, max_size=8),
    use_split=st.booleans(),
)
def test_every_sigma_is_rounded_up(
    rho: float,
    n: int,
    privacy: str,
    m: int,
    distinct: bool,
    weights: list[float],
    use_split: bool,
) -> None:
    """D_l^2 / (2 sigma_l^2) <= rho_l exactly for the EXACT sensitivity D_l, the rho_l add up
    to at most rho exactly, and each sigma_l is the smallest float that does it."""
    names = [f"l{i}" for i in range(n)]
    root = privacy == "unbounded" or m > 1
    split = weights[: n + int(root)] if use_split else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # large rho: epsilon above the warning
        budget = Budget.from_args(rho=rho)
    acc = account(
        budget,
        names,
        privacy=privacy,
        contribution=m,
        distinct=distinct,
        split=split,
    )
    squares = _exact_squares(n, privacy, m, distinct, root)
    assert len(squares) == len(acc.level_sigma)
    assert sum(map(Fraction, acc.level_rho), Fraction(0)) <= Fraction(rho)
    for d2, d, r, s in zip(
        squares, acc.level_sensitivity, acc.level_rho, acc.level_sigma, strict=True
    ):
        assert Fraction(d2) / (2 * Fraction(s) ** 2) <= Fraction(r)
        # the float sensitivity is the exact one rounded up ...
        assert Fraction(math.nextafter(d, 0.0)) ** 2 < d2 <= Fraction(d) ** 2
        # ... and sigma the float one rounded up: one float lower breaks the inequality
        below = math.nextafter(s, 0.0)
        assert Fraction(d) ** 2 > 2 * Fraction(r) * Fraction(below) ** 2


def test_rounding_up_matters() -> None:
    """The naive float formula lands below the exact value on some inputs (so the test above
    can fail); the accounting's sigma never does."""
    naive_below = 0
    for k in range(1, 120):
        r = k / 997.0
        d = math.sqrt(2.0)
        naive = d / math.sqrt(2.0 * r)
        if Fraction(2) > 2 * Fraction(r) * Fraction(naive) ** 2:
            naive_below += 1
        s = account(Budget.from_args(rho=r), ["a"]).level_sigma[0]
        assert Fraction(2) <= 2 * Fraction(r) * Fraction(s) ** 2
    assert naive_below > 0


def test_a_hand_built_accounting_below_the_exact_sigma_is_refused() -> None:
    acc = account(Budget.from_args(rho=0.3), ["a"])
    below = math.nextafter(acc.level_sigma[0], 0.0)
    with pytest.raises(BudgetError, match="exactly"):
        dataclasses.replace(acc, level_sigma=(below,))


# --------------------------------------------------------------------------------------------
# levels determined by the public domain (one child per parent): no noise, no budget


def test_determined_levels_spend_nothing_and_give_their_share_away() -> None:
    names = ["country", "region", "town"]
    plain = account(Budget.from_args(rho=0.3), names)
    acc = account(Budget.from_args(rho=0.3), names, determined=[True, False, False])
    assert acc.level_determined == (True, False, False)
    assert acc.level_rho[0] == 0.0 and acc.level_sigma[0] == 0.0
    assert acc.level_rho[1:] == pytest.approx((0.15, 0.15), rel=1e-15)
    assert math.fsum(acc.level_rho) <= 0.3
    # two shares instead of three: every other sigma shrinks by sqrt(2/3)
    for s_new, s_old in zip(acc.level_sigma[1:], plain.level_sigma[1:], strict=True):
        assert s_new == pytest.approx(s_old * math.sqrt(2 / 3), rel=1e-12)
    assert acc.level_sensitivity == plain.level_sensitivity
    assert acc.level_notes[0].startswith("determined by its parents") and acc.level_notes[1] == ""
    levels = json.loads(json.dumps(acc.as_dict(), allow_nan=False))["levels"]
    assert levels[0]["determined"] is True and levels[0]["rho"] == 0.0
    assert "determined" not in levels[1]
    text = str(acc)
    assert "0 (determined)" in text and "(determined) determined by its parents" in text


def test_determined_levels_drop_their_split_weight() -> None:
    acc = account(
        Budget.from_args(rho=1.0), ["a", "b", "c"], split=[5, 1, 3], determined=[False, True, False]
    )
    assert acc.level_rho == pytest.approx((0.625, 0.0, 0.375), rel=1e-15)
    with pytest.raises(BudgetError, match="positive and finite"):  # still checked
        account(Budget.from_args(rho=1.0), ["a", "b"], split=[1, -1], determined=[False, True])


def test_determined_levels_with_a_noised_root_and_infinite_budgets() -> None:
    acc = account(
        Budget.from_args(rho=1.0), ["a", "b"], privacy="unbounded", determined=[True, False]
    )
    assert acc.level_names == ("root", "a", "b")
    assert acc.level_rho == pytest.approx((0.5, 0.0, 0.5), rel=1e-15)
    assert acc.level_determined == (False, True, False)
    oracle = account(Budget.from_args(rho=INF), ["a", "b"], determined=[True, False])
    assert oracle.level_rho == (0.0, INF) and oracle.level_sigma == (0.0, 0.0)
    # every level determined (bounded: N is public): nothing to noise, nothing spent
    none = account(Budget.from_args(rho=1.0), ["a", "b"], determined=[True, True])
    assert none.level_rho == (0.0, 0.0) and none.level_sigma == (0.0, 0.0)


def test_determined_flags_are_checked() -> None:
    with pytest.raises(SpecError, match="got 1 determined flags"):
        account(Budget.from_args(rho=1.0), ["a", "b"], determined=[True])
    with pytest.raises(SpecError, match="True or False"):
        account(Budget.from_args(rho=1.0), ["a", "b"], determined=[1, 0])  # type: ignore[list-item]
    acc = account(Budget.from_args(rho=1.0), ["a", "b"], determined=[True, False])
    with pytest.raises(BudgetError, match="'a' is determined by its parent"):
        dataclasses.replace(acc, level_rho=(0.5, 0.5), level_sigma=(1.0, 1.0))
    with pytest.raises(SpecError, match="one name, sensitivity, rho and sigma per level"):
        dataclasses.replace(acc, level_determined=(True, False, False))
