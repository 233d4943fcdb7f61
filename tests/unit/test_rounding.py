"""Integer rounding of a lattice release (inftda_sql.core.rounding)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from inftda_sql.core.rounding import apportion, longest_chain, round_lattice


@settings(max_examples=300, deadline=None)
@given(
    values=st.lists(st.floats(0, 50, allow_nan=False), min_size=1, max_size=30),
    groups=st.integers(1, 5),
    data=st.data(),
)
def test_apportion_meets_targets_within_one(
    values: list[float], groups: int, data: st.DataObject
) -> None:
    v = np.array(values)
    parent = np.array(
        data.draw(st.lists(st.integers(0, groups - 1), min_size=v.size, max_size=v.size))
    )
    sums = np.bincount(parent, weights=v, minlength=groups)
    up = data.draw(st.lists(st.booleans(), min_size=groups, max_size=groups))
    targets = np.where(up, np.ceil(sums), np.floor(sums)).astype(np.int64)
    out = apportion(v, parent, targets)
    assert out.dtype == np.int64
    assert np.array_equal(np.bincount(parent, weights=out, minlength=groups), targets)
    assert np.all((out == np.floor(v)) | (out == np.ceil(v)))
    assert np.all(out[v == 0] == 0)  # zeros stay zero: no false positives from rounding


def test_apportion_prefers_largest_remainders_then_position() -> None:
    v = np.array([0.5, 0.5, 0.9, 0.2])
    assert apportion(v, np.zeros(4, np.int64), np.array([2])).tolist() == [1, 0, 1, 0]


def test_longest_chain_prefers_the_finer_end() -> None:
    # total < period < {zones (768), mode (576)}: both chains have 3 queries
    r = [
        [True, False, False, False],
        [True, True, False, False],
        [True, True, True, False],
        [True, True, False, True],
    ]
    assert longest_chain([1, 48, 768, 576], r) == [0, 1, 2]
    assert longest_chain([], []) == []


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), exact=st.booleans())
def test_round_lattice_chain_levels_within_one(seed: int, exact: bool) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 200))
    x = rng.exponential(1.0, n) * (rng.random(n) < 0.5)
    fine = rng.integers(0, 20, n)
    coarse = fine // 5  # a chain: coarse < fine < leaves
    _, fine = np.unique(fine, return_inverse=True)
    _, coarse = np.unique(coarse, return_inverse=True)
    total = round(float(x.sum())) if exact else None
    out = round_lattice(x, [coarse, fine], total=total)
    assert out.dtype == np.int64 and out.min() >= 0
    assert np.all((out == np.floor(x)) | (out == np.ceil(x))) and np.all(out[x == 0] == 0)
    for m in (coarse, fine):
        assert np.all(np.abs(np.bincount(m, weights=out) - np.bincount(m, weights=x)) < 1)
    assert abs(out.sum() - x.sum()) < 1
    if total is not None:
        assert out.sum() == total
