"""Segmented isotonic regression: both backends against SciPy's PAV, in any chunking."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import isotonic_regression

from inftda_sql._errors import SpecError
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
