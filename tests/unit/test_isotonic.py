"""Segmented isotonic regression: both backends against SciPy's PAV, in any chunking."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import isotonic_regression

from inftda_sql._errors import SpecError
from inftda_sql.core import isotonic as isotonic_module
from inftda_sql.core.isotonic import SegmentedIsotonic, isotonic_blocks


def _reference(y: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    parts = [
        isotonic_regression(y[a:b]).x if b > a else np.zeros(0)
        for a, b in itertools.pairwise(offsets)
    ]
    return np.concatenate(parts) if parts else np.zeros(0)


segments = st.lists(st.lists(st.integers(-30, 30), min_size=0, max_size=25), min_size=1, max_size=6)


@settings(max_examples=150, deadline=None)
@given(segments, st.sampled_from(["numpy", "scipy"]), st.integers(1, 40), st.booleans())
def test_matches_scipy_in_any_chunking(
    segs: list[list[int]], backend: str, chunk: int, walk: bool
) -> None:
    arrays = [np.cumsum(s) if walk else np.array(s) for s in segs]
    y = np.concatenate([np.asarray(a, dtype=float) for a in arrays])
    offsets = np.concatenate(([0], np.cumsum([len(s) for s in segs])))
    fit = isotonic_blocks(y, offsets, backend=backend, chunk=chunk)
    np.testing.assert_allclose(fit.dense(offsets), _reference(y, offsets), atol=1e-9)
    for k, s in enumerate(segs):  # blocks tile their segment, values increase
        mine = fit.segment == k
        assert fit.length[mine].sum() == len(s)
        starts = np.cumsum(fit.length[mine]) - fit.length[mine]
        np.testing.assert_array_equal(fit.start[mine], starts)
        assert np.all(np.diff(fit.value[mine]) > 0)


def test_long_noisy_sequences_agree() -> None:
    rng = np.random.default_rng(3)
    offsets = np.arange(6) * 20_000
    truth = np.cumsum(rng.integers(0, 2, offsets[-1]) * (rng.random(offsets[-1]) < 0.01))
    y = (truth + rng.laplace(0, 3, truth.size).round()).astype(float)
    a = isotonic_blocks(y, offsets, backend="numpy", chunk=7_001)
    b = isotonic_blocks(y, offsets, backend="scipy", chunk=1 << 20)
    np.testing.assert_allclose(a.dense(offsets), b.dense(offsets), atol=1e-7)
    np.testing.assert_allclose(b.dense(offsets), _reference(y, offsets), atol=1e-7)


def test_feeding_too_much_or_too_little_is_an_internal_error() -> None:
    stream = SegmentedIsotonic(np.array([0, 3]))
    stream.feed(np.array([1.0, 2.0]))
    with pytest.raises(Exception, match="fed 2 of 3"):
        stream.blocks()
    with pytest.raises(Exception, match="more entries"):
        stream.feed(np.array([1.0, 2.0]))


def test_unknown_backend() -> None:
    with pytest.raises(SpecError, match="backend must be one of"):
        isotonic_blocks([1.0], [0, 1], backend="fortran")


def _per_segment(y: np.ndarray, offsets: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each segment's fit on its own (SciPy), as its canonical blocks: the maximal runs of one
    fitted value (start within the segment, exact integer sum of the block's entries)."""
    out = []
    for a, b in itertools.pairwise(offsets):
        if b == a:
            out.append((np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)))
            continue
        x = isotonic_regression(y[a:b].astype(float)).x
        new = np.ones(b - a, dtype=bool)
        new[1:] = ~np.isclose(x[1:], x[:-1], rtol=0, atol=1e-9)
        starts = np.flatnonzero(new)
        out.append((starts, np.add.reduceat(y[a:b], starts)))
    return out


integer_segments = st.lists(
    st.lists(st.integers(-6, 6), min_size=0, max_size=30), min_size=1, max_size=8
)


@settings(max_examples=300, deadline=None)
@given(integer_segments, st.sampled_from(["numpy", "scipy"]), st.integers(1, 50), st.booleans())
def test_integer_path_is_the_per_segment_fit_exactly(
    segs: list[list[int]], backend: str, chunk: int, stall: bool
) -> None:
    """The segment-wise fit of integer entries (all segments of a chunk at once, carried
    across chunks) is each segment's own fit: the same blocks, maximal (equal neighbours
    pooled), each valued at its exact integer sum over its length. With ``stall`` the backend
    takes over after the first pass, as it does when a pass merges too little."""
    y = np.concatenate([np.asarray(s, dtype=np.int64) for s in segs])
    offsets = np.concatenate(([0], np.cumsum([len(s) for s in segs])))
    with pytest.MonkeyPatch.context() as mp:
        if stall:
            mp.setattr(isotonic_module, "_STALL_MIN", 0)
            mp.setattr(isotonic_module, "_STALL_FRACTION", 1.0)
        fit = isotonic_blocks(y, offsets, backend=backend, chunk=chunk)
    for k, (starts, sums) in enumerate(_per_segment(y, offsets)):
        mine = fit.segment == k
        np.testing.assert_array_equal(fit.start[mine], starts)
        np.testing.assert_array_equal(fit.value[mine], sums / fit.length[mine])
        assert np.all(np.diff(fit.value[mine]) > 0)


def test_equal_neighbouring_means_are_one_block() -> None:
    """A long noisy sequence (SciPy's PAV leaves some neighbouring blocks of equal value
    apart, and its running means drift from the exact ones by ~1e-10): the stream's blocks
    are the maximal runs of the exact fit."""
    rng = np.random.default_rng(5)
    offsets = np.arange(8) * 150_000
    truth = np.cumsum(rng.random(offsets[-1]) < 0.002)
    y = truth + rng.integers(-4, 5, truth.size)
    fit = isotonic_blocks(y, offsets, chunk=1 << 18)
    for k, (starts, sums) in enumerate(_per_segment(y, offsets)):
        mine = fit.segment == k
        np.testing.assert_array_equal(fit.start[mine], starts)
        np.testing.assert_array_equal(fit.value[mine], sums / fit.length[mine])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(["small", "fraction", "huge"]), min_size=1, max_size=6))
def test_integer_and_float_chunks_mix_within_a_segment(kinds: list[str]) -> None:
    """Chunks of one long segment switch path (integers; non-integral values; integers whose
    products could overflow int64 go to the backend): the fit is still the segment's."""
    rng = np.random.default_rng(len(kinds))
    parts = []
    for kind in kinds:
        v = rng.integers(-20, 20, 40).astype(float)
        if kind == "fraction":
            v += 0.5
        elif kind == "huge":
            v *= 2.0**46
        parts.append(v)
    y = np.concatenate(parts)
    offsets = np.array([0, 25, y.size])
    stream = SegmentedIsotonic(offsets)
    for part in parts:
        stream.feed(part)
    np.testing.assert_allclose(
        stream.blocks().dense(offsets), _reference(y, offsets), rtol=1e-12, atol=1e-6
    )


def test_a_long_increasing_segment_carries_its_blocks_across_pieces() -> None:
    """An increasing segment longer than a piece keeps nearly every entry as a block: the
    pieces after it grow with the blocks carried; a drop at the end pools across all of them."""
    y = np.append(np.arange(400_000) // 3, [50_000, -(10**7)])
    offsets = np.array([0, y.size])
    fit = isotonic_blocks(y, offsets, chunk=y.size)
    np.testing.assert_allclose(fit.dense(offsets), _reference(y, offsets), rtol=0, atol=1e-6)
