"""core/sorting.py: every sort against numpy's one np.sort or np.lexsort."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inftda_sql.core import sorting
from inftda_sql.core.sorting import SEGMENT_ROW, lex_order, sort_keys, sort_order, sort_segments


@settings(max_examples=300, deadline=None)
@given(
    count=st.lists(st.integers(1, 70), min_size=1, max_size=60),
    row=st.integers(-1, 100),
    seed=st.integers(0, 2**32 - 1),
)
def test_sort_segments_equals_one_sort(count: list[int], row: int, seed: int) -> None:
    """Rows of any size, segments shorter and longer than half a row, at every offset."""
    rng = np.random.default_rng(seed)
    lengths = np.array(count, dtype=np.int64)
    seg = np.repeat(np.arange(lengths.size, dtype=np.int64), lengths)
    key = (seg << 40) | rng.integers(0, 1 << 8, seg.size)  # ordered between segments, ties
    expected = np.sort(key)
    sort_segments(key, lengths, row)
    assert np.array_equal(key, expected)


def test_sort_segments_at_the_default_row() -> None:
    """The default row of 256 keys on a level's worth of segments: short ones (sorted by the
    two grids of rows only) and long ones (sorted one by one), reversed within each."""
    rng = np.random.default_rng(3)
    lengths = rng.choice([1, 5, 60, 127, 128, 129, 200, 700], 3_000)
    seg = np.repeat(np.arange(lengths.size, dtype=np.int64), lengths)
    key = (seg << 32) | rng.permutation(seg.size)
    expected = np.sort(key)
    key = np.concatenate([np.sort(part)[::-1] for part in np.split(key, np.cumsum(lengths)[:-1])])
    sort_segments(key, lengths, SEGMENT_ROW)
    assert np.array_equal(key, expected)


@settings(max_examples=40, deadline=None)
@given(
    n=st.sampled_from([0, 1, 1000, sorting._RADIX_MIN - 1, sorting._RADIX_MIN, 100_000]),
    bits=st.sampled_from([1, 8, 16, 17, 26, 40, 62]),
    shape=st.sampled_from(["uniform", "clustered", "one value", "few values"]),
    seed=st.integers(0, 2**32 - 1),
)
def test_sort_keys_equals_one_sort(n: int, bits: int, shape: str, seed: int) -> None:
    """Below and above the radix pass's size, keys of every width (top bits shorter than 16
    too), runs of equal top bits short and long (clustered keys), duplicates."""
    rng = np.random.default_rng(seed)
    high = 1 << bits
    if shape == "uniform":
        values = rng.integers(0, high, n)
    elif shape == "clustered":  # most keys in a few narrow ranges: long runs of equal top bits
        centers = rng.integers(0, high, 5)
        values = np.clip(
            rng.choice(centers, n) + rng.integers(0, 1 << max(0, bits - 12), n), 0, high - 1
        )
    elif shape == "one value":
        values = np.full(n, high - 1)
    else:
        values = rng.choice(rng.integers(0, high, 7), n)
    values = values.astype(np.int64)
    expected = np.sort(values)
    assert np.array_equal(sort_keys(values.copy()), expected)


@pytest.mark.parametrize("space", [10, 2**40, 2**62])  # packed np.sort, and argsort
def test_sort_order(space: int) -> None:
    rng = np.random.default_rng(space % 1000)
    key = rng.integers(0, space, 5000, dtype=np.int64)
    order = sort_order(key, space)
    assert bool((np.diff(key[order]) >= 0).all())
    assert sorted(order.tolist()) == list(range(5000))


#: chain sizes at the edges of lex_order's strategies: 8-bit, 16-bit, wider, a key beyond 62 bits
SIZES = [1, 3, 256, 257, 1 << 16, (1 << 16) + 1, 1 << 40]


@settings(max_examples=300, deadline=None)
@given(
    sizes=st.lists(st.sampled_from(SIZES), min_size=1, max_size=3),
    n=st.integers(0, 300),
    order=st.sampled_from(["random", "sorted", "by last chain", "reversed"]),
    seed=st.integers(0, 2**32 - 1),
)
def test_lex_order_sorts_by_the_codes_chain_0_first(
    sizes: list[int], n: int, order: str, seed: int
) -> None:
    """Radix (codes of 8 and 16 bits), the packed key, and np.lexsort beyond 62 bits of key:
    the cells sorted by their codes, chain 0 first, with ties kept in place; None exactly
    when they are sorted already."""
    rng = np.random.default_rng(seed)
    # a few values per chain, its largest among them (the dtype's edge), ties likely
    codes = [rng.choice(np.r_[0, size - 1, rng.integers(0, size, 4)], n) for size in sizes]
    if order != "random":
        keys = codes[::-1] if order == "by last chain" else codes
        perm = np.lexsort(tuple(reversed(keys)))
        codes = [c[perm[::-1] if order == "reversed" else perm] for c in codes]
    expected = np.lexsort(tuple(reversed(codes)))
    got = lex_order(codes, sizes)
    if got is None:
        assert np.array_equal(expected, np.arange(n))
    else:
        assert not np.array_equal(expected, np.arange(n))
        assert got.dtype == np.int64
        assert np.array_equal(got, expected)


@pytest.mark.parametrize("spread", [1 << 4, 1 << 10, 1 << 14])
def test_sort_keys_runs_long_and_short(spread: int) -> None:
    """O/D-like keys (26 bits): a uniform background (runs of a few keys, sorted by the rows
    of sort_segments) and dense clusters (runs of thousands of equal top bits, sorted one by
    one), in random order."""
    rng = np.random.default_rng(spread)
    background = rng.integers(0, 1 << 26, 60_000)
    clusters = rng.choice(rng.integers(0, 1 << 26, 4), 140_000) + rng.integers(0, spread, 140_000)
    values = rng.permutation(np.concatenate([background, clusters])).astype(np.int64)
    top = values >> (int(values.max()).bit_length() - 16)
    runs = np.bincount(top)
    assert runs.max() > SEGMENT_ROW and (runs[runs > 0] <= 3).mean() > 0.5  # both kinds
    assert np.array_equal(sort_keys(values.copy()), np.sort(values))


def test_sort_keys_beyond_its_size_sorts_in_place(monkeypatch: pytest.MonkeyPatch) -> None:
    """The radix pass holds about 18 more bytes a key while it runs; beyond _RADIX_MAX keys
    the array is sorted in place instead (traced by numpy's allocations)."""
    import tracemalloc

    values = np.random.default_rng(5).integers(0, 1 << 40, 200_000)

    def extra_bytes() -> int:
        data = values.copy()
        tracemalloc.start()
        try:
            got = sort_keys(data)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert np.array_equal(got, np.sort(values))
        return peak

    assert extra_bytes() > 16 * values.size  # the radix pass
    monkeypatch.setattr(sorting, "_RADIX_MAX", values.size - 1)
    assert extra_bytes() < values.size  # np.sort in place
