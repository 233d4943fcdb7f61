"""IntOpt: reference vectors, a scalar oracle, an optimal-distance oracle, and bad input."""

from __future__ import annotations

import doctest
import json
from collections.abc import Sequence
from functools import cache
from typing import Literal

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inftda_sql._errors import SpecError
from inftda_sql.core import intopt as _intopt
from inftda_sql.core.intopt import intopt
from tests.conftest import shared_path

Case = tuple[list[int], int]

# --------------------------------------------------------------------------- oracles


def reference_intopt(y: Sequence[int], c: int, *, descending: bool = False) -> list[int]:
    """Straight transcription of ALGORITHMS.md section 4 (Python ints, stable sort).

    ``descending`` sorts by value descending, equal values by position (first child first).
    """
    d = len(y)
    if c == 0:
        return [0] * d
    big_d = c - sum(y)
    a = -(-big_d // d)  # ceil
    z = [max(a, -v) for v in y]
    tau = max(abs(v) for v in z)
    order = sorted(range(d), key=lambda i: (-y[i] if descending else y[i], i))
    order = [i for i in order if z[i] > -y[i]]
    big_z = sum(z)
    k = 0
    while big_z > big_d:
        j = order[k]
        new = max(z[j] - (big_z - big_d), -y[j], -tau)
        big_z -= z[j] - new
        z[j] = new
        k += 1
        if k == len(order):
            order = [i for i in order if z[i] > -y[i]]
            tau += max(1, (big_z - big_d) // len(order))
            k = 0
    return [v + w for v, w in zip(y, z, strict=True)]


def optimal_linf(y: Sequence[int], c: int) -> int:
    """Smallest integer t >= max(0, -min y) such that integers x_i in [max(0, y_i - t), y_i + t]
    can sum to c, i.e. sum max(0, y_i - t) <= c <= sum (y_i + t). Independent of IntOpt."""

    def feasible(t: int) -> bool:
        return sum(max(0, v - t) for v in y) <= c <= sum(v + t for v in y)

    lo = max(0, -min(y))
    hi = max(lo, max(abs(v) for v in y) + c)
    while lo < hi:
        mid = (lo + hi) // 2
        if feasible(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def order_of(descending: bool) -> Literal["ascending", "descending"]:
    return "descending" if descending else "ascending"


def flatten(cases: Sequence[Case]) -> tuple[npt.NDArray[np.int64], list[int], list[int]]:
    y = np.array([v for values, _ in cases for v in values], dtype=np.int64)
    offsets = np.cumsum([0] + [len(values) for values, _ in cases[:-1]]).tolist()
    return y, [c for _, c in cases], offsets


def split(x: npt.NDArray[np.int64], cases: Sequence[Case]) -> list[list[int]]:
    out, start = [], 0
    for values, _ in cases:
        out.append(x[start : start + len(values)].tolist())
        start += len(values)
    return out


def check_solution(values: Sequence[int], c: int, x: Sequence[int]) -> None:
    """Non-negative integers summing to c at the optimal Chebyshev distance."""
    assert len(x) == len(values)
    assert min(x) >= 0
    assert sum(x) == c
    assert max(abs(a - b) for a, b in zip(x, values, strict=True)) == optimal_linf(values, c)


# --------------------------------------------------------------------------- reference vectors


@cache
def reference_cases() -> list[dict[str, list[int] | int]]:
    path = shared_path("reference", "intopt_cases.jsonl")
    with path.open() as fh:
        return [json.loads(line) for line in fh]


def as_case(row: dict[str, list[int] | int]) -> Case:
    y, s = row["y"], row["s"]
    assert isinstance(y, list)
    assert isinstance(s, int)
    return y, s


@pytest.mark.shared
def test_reference_vectors_one_by_one() -> None:
    rows = reference_cases()
    assert len(rows) == 2000
    wrong = [
        i for i, row in enumerate(rows) if intopt(np.array(row["y"]), row["s"]).tolist() != row["x"]
    ]
    assert wrong == []


@pytest.mark.shared
@pytest.mark.parametrize("chunk", [1, 5, 64, 1 << 16])
def test_reference_vectors_in_one_batch(chunk: int) -> None:
    rows = reference_cases()
    cases = [as_case(row) for row in rows]
    y, targets, offsets = flatten(cases)
    validated = _intopt._validate(y, targets, offsets, "ascending")
    x, passes = _intopt._solve(*validated, chunk=chunk)
    assert split(x, cases) == [row["x"] for row in rows]
    assert 1 <= passes <= 6  # measured: at most 6 passes on these vectors
    if chunk == 1 << 16:
        assert np.array_equal(intopt(y, targets, offsets), x)


@pytest.mark.shared
def test_reference_vectors_match_the_oracles() -> None:
    for row in reference_cases():
        y, s = as_case(row)
        assert reference_intopt(y, s) == row["x"]
        assert optimal_linf(y, s) == row["linf"]
        check_solution(y, s, reference_intopt(y, s, descending=True))


# --------------------------------------------------------------------------- examples and edges


def test_docstring_examples() -> None:
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(_intopt.intopt, "intopt", globs={"intopt": intopt}):
        runner.run(test)
    assert runner.failures == 0
    assert runner.tries >= 3


def test_example_from_algorithms_md() -> None:
    x = intopt([-20, 5, 5], 10)
    assert x.dtype == np.int64
    assert x.tolist() == [0, 0, 10]
    # Descending: the two 5s tie and are taken by position, the first one first.
    assert intopt([-20, 5, 5], 10, order="descending").tolist() == [0, 0, 10]
    assert intopt([-20, 5, 6], 10).tolist() == [0, 0, 10]
    assert intopt([-20, 5, 6], 10, order="descending").tolist() == [0, 10, 0]


def test_target_zero_gives_zeros() -> None:
    y = np.array([5, -3, 7, 0, 2, 9, -1], dtype=np.int64)
    x = intopt(y, [0, 4, 0], offsets=[0, 2, 5])
    assert x[:2].tolist() == [0, 0]
    assert x[5:].tolist() == [0, 0]
    assert x[2:5].sum() == 4


def test_one_child_takes_the_target() -> None:
    y = np.array([-7, 3, 10**12, -(10**12), 0], dtype=np.int64)
    targets = [5, 0, 1, 10**12, 0]
    assert intopt(y, targets, offsets=np.arange(5)).tolist() == targets


def test_scalar_target_broadcasts_to_all_segments() -> None:
    x = intopt([1, 2, 3, 4, 5, 6], 3, offsets=[0, 2, 4])
    assert [int(v) for v in np.add.reduceat(x, [0, 2, 4])] == [3, 3, 3]


def test_no_segments_gives_an_empty_result() -> None:
    x = intopt(np.zeros(0, dtype=np.int64), [], offsets=[])
    assert x.dtype == np.int64
    assert x.shape == (0,)


def test_float_and_narrow_integer_inputs_are_accepted() -> None:
    expected = intopt([-20, 5, 5], 10).tolist()
    assert intopt(np.array([-20.0, 5.0, 5.0]), 10.0).tolist() == expected
    assert intopt(np.array([-20, 5, 5], dtype=np.int8), np.uint16(10)).tolist() == expected
    assert intopt([-20, 5, 5], [10], offsets=np.array([0], dtype=np.uint32)).tolist() == expected
    assert intopt(np.array([-20, 5, 5], dtype=object), 10).tolist() == expected
    assert intopt(np.array([-20, 0, 5, 0, 5])[::2], 10).tolist() == expected  # strided view


def test_input_is_not_modified() -> None:
    y = np.array([4, -2, 9, 1], dtype=np.int64)
    intopt(y, 3)
    assert y.tolist() == [4, -2, 9, 1]


def test_many_passes_adversarial() -> None:
    # Staircases with a small target need many passes; compare with the oracle.
    cases: list[Case] = [(list(range(1, n + 1)), c) for n, c in [(60, 1), (200, 7), (500, 3)]]
    cases.append(([3**k for k in range(25)], 2))
    cases.append(([10**12 - k * 10**9 for k in range(100)], 5))
    y, targets, offsets = flatten(cases)
    validated = _intopt._validate(y, targets, offsets, "ascending")
    x, passes = _intopt._solve(*validated)
    assert split(x, cases) == [reference_intopt(v, c) for v, c in cases]
    assert passes > 6


# --------------------------------------------------------------------------- property tests

small_values = st.integers(-60, 60)
wide_values = st.integers(-5_000, 50_000)
segment = st.one_of(
    st.lists(small_values, min_size=1, max_size=25),
    st.lists(wide_values, min_size=1, max_size=25),
    st.lists(st.integers(-3, 3), min_size=1, max_size=40),  # many ties
)


@st.composite
def cases_strategy(draw: st.DrawFn, values: st.SearchStrategy[list[int]] = segment) -> list[Case]:
    """Segments with targets below, near and above the noisy sum."""
    out = []
    for ys in draw(st.lists(values, min_size=1, max_size=12)):
        positive = sum(max(0, v) for v in ys)
        c = draw(
            st.one_of(
                st.just(0),
                st.integers(0, 10),
                st.integers(0, max(10, 2 * positive)),
                st.integers(0, 10**6),
            )
        )
        out.append((ys, c))
    return out


property_settings = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@property_settings
@given(cases=cases_strategy(), descending=st.booleans())
def test_batch_equals_the_scalar_oracle(cases: list[Case], descending: bool) -> None:
    y, targets, offsets = flatten(cases)
    order = order_of(descending)
    x = intopt(y, targets, offsets, order=order)
    assert x.dtype == np.int64
    for (values, c), got in zip(cases, split(x, cases), strict=True):
        assert got == reference_intopt(values, c, descending=descending)
        check_solution(values, c, got)


@property_settings
@given(cases=cases_strategy(), chunk=st.integers(1, 40))
def test_chunking_does_not_change_the_result(cases: list[Case], chunk: int) -> None:
    y, targets, offsets = flatten(cases)
    validated = _intopt._validate(y, targets, offsets, "ascending")
    x, _ = _intopt._solve(*validated, chunk=chunk)
    assert np.array_equal(x, intopt(y, targets, offsets))


huge = st.integers(-(10**12), 10**12)
huge_segment = st.one_of(
    st.lists(huge, min_size=1, max_size=20),
    st.lists(st.integers(10**12 - 50, 10**12), min_size=1, max_size=20),
    st.lists(st.sampled_from([-(10**12), 0, 10**12]), min_size=1, max_size=20),
)


@settings(max_examples=150, deadline=None)
@given(cases=cases_strategy(huge_segment), descending=st.booleans())
def test_huge_values(cases: list[Case], descending: bool) -> None:
    y, targets, offsets = flatten(cases)
    order = order_of(descending)
    x = intopt(y, targets, offsets, order=order)
    for (values, c), got in zip(cases, split(x, cases), strict=True):
        assert got == reference_intopt(values, c, descending=descending)
        check_solution(values, c, got)


extreme = st.integers(-_intopt.VALUE_LIMIT, _intopt.VALUE_LIMIT)


@settings(max_examples=100, deadline=None)
@given(
    cases=st.lists(
        st.tuples(st.lists(extreme, min_size=1, max_size=6), st.integers(0, _intopt.VALUE_LIMIT)),
        min_size=1,
        max_size=8,
    ),
    descending=st.booleans(),
)
def test_values_at_the_limit(cases: list[Case], descending: bool) -> None:
    """Near +-2**60: the split sum of y and the lexsort fallback are used."""
    y, targets, offsets = flatten(cases)
    order = order_of(descending)
    x = intopt(y, targets, offsets, order=order)
    for (values, c), got in zip(cases, split(x, cases), strict=True):
        assert got == reference_intopt(values, c, descending=descending)


@settings(max_examples=200, deadline=None)
@given(
    cases=cases_strategy(st.lists(st.integers(-(10**9), 10**9), min_size=1, max_size=30)),
    descending=st.booleans(),
)
def test_the_three_sort_strategies_agree(cases: list[Case], descending: bool) -> None:
    y, _, offsets = flatten(cases)
    ends = [*offsets[1:], len(y)]
    ymin = np.minimum.reduceat(y, offsets)
    ymax = np.maximum.reduceat(y, offsets)
    rng = np.random.default_rng(len(y))
    keep = rng.random(len(y)) < 0.7
    keep[offsets] = True  # at least one candidate per segment
    idx = np.flatnonzero(keep)
    count = np.array([keep[a:b].sum() for a, b in zip(offsets, ends, strict=True)])
    seg = np.repeat(np.arange(len(offsets)), count)
    values = -y[idx] if descending else y[idx]
    expected = idx[np.lexsort((idx, values, seg))]
    for method in ("stable", "lexsort"):
        got = _intopt._candidate_order(y, idx, count, ymin, ymax, descending, method)
        assert np.array_equal(got, expected), method
    for row in (0, 1, 2, 3, 4, 16, 256):
        got = _intopt._candidate_order(y, idx, count, ymin, ymax, descending, "packed", row)
        assert np.array_equal(got, expected), row


@settings(max_examples=200, deadline=None)
@given(
    ys=st.lists(st.integers(-_intopt.VALUE_LIMIT, _intopt.VALUE_LIMIT), min_size=1, max_size=30),
    c=st.integers(0, _intopt.VALUE_LIMIT),
)
def test_split_sum_ceiling_is_exact(ys: list[int], c: int) -> None:
    y = np.array(ys, dtype=np.int64)
    offs = np.zeros(1, dtype=np.int64)
    d = np.array([len(ys)], dtype=np.int64)
    a = _intopt._shift_split(y, offs, d, np.array([c], dtype=np.int64))
    assert int(a[0]) == -(-(c - sum(ys)) // len(ys))


def test_realistic_level_many_segments() -> None:
    """Sparse heavy-tailed counts plus noise, many skewed segments, vectorised checks."""
    rng = np.random.default_rng(7)
    sizes = 1 + rng.zipf(1.6, 3_000).clip(max=2_000)
    offsets = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    true = rng.zipf(1.8, int(sizes.sum())).clip(max=10**5)
    true[rng.random(true.size) < 0.6] = 0
    y = true + np.rint(rng.normal(0, 5, true.size)).astype(np.int64)
    targets = np.add.reduceat(true, offsets) + np.rint(rng.normal(0, 5, sizes.size)).astype(int)
    targets = np.maximum(targets, 0)
    for descending in (False, True):
        x = intopt(y, targets, offsets, order=order_of(descending))
        assert x.min() >= 0
        assert np.array_equal(np.add.reduceat(x, offsets), targets)
        linf = np.maximum.reduceat(np.abs(x - y), offsets)
        for k in rng.choice(sizes.size, 200, replace=False):
            values = y[offsets[k] : offsets[k] + sizes[k]].tolist()
            assert linf[k] == optimal_linf(values, int(targets[k]))
            if not descending:
                got = x[offsets[k] : offsets[k] + sizes[k]].tolist()
                assert got == reference_intopt(values, int(targets[k]))


def exact_sum(a: npt.NDArray[np.int64]) -> int:
    """Sum of an int64 array as a Python int, without overflow."""
    return int(np.sum(a >> 32)) * (1 << 32) + int(np.sum(a & ((1 << 32) - 1)))


@pytest.mark.slow
@pytest.mark.parametrize("c", [1, 10**12, 10**18])
def test_ten_million_children_of_size_1e12(c: int) -> None:
    """sum y (~9.5e18) is beyond int64 and the clipped sum near 5e18: no overflow allowed."""
    n = 10**7
    rng = np.random.default_rng(c)
    y = rng.integers(-(10**12), 10**12, n, endpoint=True)
    y[: n * 19 // 20] = 10**12  # push sum y beyond the int64 range
    assert exact_sum(y) > np.iinfo(np.int64).max
    x = intopt(y, c)
    assert x.min() >= 0
    assert exact_sum(x) == c
    t = int(np.abs(x - y).max())
    assert t >= max(0, -int(y.min()))

    def feasible(t: int) -> bool:
        low = exact_sum(np.maximum(y - t, 0))
        return low <= c <= exact_sum(y) + t * n

    assert feasible(t)
    assert t == max(0, -int(y.min())) or not feasible(t - 1)


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"y": [1, 2], "target": -1}, r"target must be >= 0, got -1 for segment 0"),
        (
            {"y": [1, 2, 3], "target": [1, -2], "offsets": [0, 1]},
            r"target must be >= 0, got -2 for segment 1",
        ),
        ({"y": [1.5, 2.0], "target": 1}, r"y must hold integers, got 1\.5"),
        ({"y": [1, 2], "target": 1.25}, r"target must hold integers, got 1\.25"),
        ({"y": [1, 2], "target": float("nan")}, r"target must hold integers, got nan"),
        ({"y": [1, 2], "target": 1, "offsets": [0.5]}, r"offsets must hold integers"),
        ({"y": ["a", "b"], "target": 1}, r"y must be an array of integers, got dtype <U1"),
        ({"y": [True, False], "target": 1}, r"y must be an array of integers, got dtype bool"),
        ({"y": [2**70, 1], "target": 1}, r"y has values beyond the int64 range"),
        ({"y": np.array([1, 2.5], dtype=object), "target": 1}, r"y must be an array of integers"),
        ({"y": [1, 2], "target": None}, r"target must be an array of integers, got dtype object"),
        ({"y": [[1, 2], [3, 4]], "target": 1}, r"y must be 1-D .* got shape \(2, 2\)"),
        ({"y": [], "target": 0}, r"y is empty"),
        ({"y": [1, 2], "target": 1, "offsets": [1]}, r"offsets must start at 0, got 1"),
        (
            {"y": [1, 2, 3], "target": 1, "offsets": [0, 2, 2]},
            r"strictly increasing .* offsets\[1\] = 2 then offsets\[2\] = 2",
        ),
        (
            {"y": [1, 2, 3], "target": 1, "offsets": [0, 2, 1]},
            r"strictly increasing",
        ),
        (
            {"y": [1, 2, 3], "target": 1, "offsets": [0, 3]},
            r"offsets must be below len\(y\) = 3 .* got 3",
        ),
        ({"y": [1, 2, 3], "target": 1, "offsets": []}, r"offsets is empty but y has 3 values"),
        ({"y": [1, 2, 3], "target": 1, "offsets": [[0]]}, r"offsets must be 1-D"),
        (
            {"y": [1, 2, 3], "target": [1, 2, 3], "offsets": [0, 1]},
            r"one value per segment \(2\), got shape \(3,\)",
        ),
        ({"y": [1, 2, 3], "target": [[1]]}, r"one value per segment \(1\), got shape \(1, 1\)"),
        ({"y": [1, 2], "target": 1, "order": "desc"}, r"order must be .* got 'desc'"),
        ({"y": [1, 2**61], "target": 1}, r"y must lie within \+-2\*\*60, got 2305843009213693952"),
        ({"y": [1, -(2**61)], "target": 1}, r"within \+-2\*\*60, got -2305843009213693952"),
        ({"y": [1, 2], "target": 2**61}, r"target must be at most 2\*\*60"),
        (
            {"y": [-(2**60), 2**60] * 8, "target": 1},
            r"segment 0 \(16 children .*\) could overflow int64 sums",
        ),
    ],
)
def test_bad_input_raises_spec_error(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(SpecError, match=message):
        intopt(**kwargs)  # type: ignore[arg-type]


def test_unsigned_beyond_int64_is_rejected() -> None:
    with pytest.raises(SpecError, match="beyond the int64 range"):
        intopt(np.array([2**63, 1], dtype=np.uint64), 1)


def test_spec_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="target must be >= 0"):
        intopt([1], -3)
