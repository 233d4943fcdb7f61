"""core/topdown.py: the per-block kernel (LevelJob.run) and its helpers against plain numpy.

The kernel builds a block's noisy children without a child-length mask or a zero-filled array
(issue 26, item 4); each helper is checked against the plain numpy expression it replaces, and
the whole kernel against a plain restatement of it, on random inputs under a seed.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import numpy.typing as npt
from hypothesis import given, settings
from hypothesis import strategies as st

from inftda_sql.core import topdown as _topdown
from inftda_sql.core.intopt import intopt
from inftda_sql.core.noise import draw_discrete_gaussian
from inftda_sql.core.rng import SeededSource

I64 = npt.NDArray[np.int64]


@st.composite
def _holes(draw: st.DrawFn) -> tuple[int, I64]:
    """A length and sorted distinct holes in it: few (sliced) or many (masked)."""
    total = draw(st.integers(1, 400))
    share = draw(st.sampled_from([0.0, 0.01, 0.1, 0.5, 1.0]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    holes = np.flatnonzero(rng.random(total) < share).astype(np.int64)
    return total, holes


@given(_holes(), st.integers(0, 2**32 - 1))
@settings(max_examples=200, deadline=None)
def test_spread_equals_a_masked_assignment(case: tuple[int, I64], seed: int) -> None:
    total, holes = case
    noise = np.random.default_rng(seed).integers(-50, 50, total - holes.size)
    want = np.zeros(total, dtype=np.int64)
    keep = np.ones(total, dtype=bool)
    keep[holes] = False
    want[keep] = noise
    got = _topdown._spread(noise.copy(), total, holes)
    assert got.dtype == np.int64
    assert np.array_equal(got, want)


@given(st.integers(0, 2**32 - 1), st.integers(1, 40), st.sampled_from([0.0, 0.2, 0.9]))
@settings(max_examples=100, deadline=None)
def test_add_true_counts_equals_a_dense_lookup(seed: int, parents: int, density: float) -> None:
    rng = np.random.default_rng(seed)
    counts = rng.integers(1, 9, parents)
    gaps = rng.integers(0, 5, parents)
    first = np.cumsum(counts + gaps) - counts  # disjoint key ranges, ascending
    space = int(first[-1] + counts[-1] + 3)
    keys = np.flatnonzero(rng.random(space) < density).astype(np.int64)
    values = rng.integers(1, 1000, keys.size)
    seg = np.cumsum(counts) - counts
    base = rng.integers(-30, 30, int(counts.sum()))
    dense = np.zeros(space, dtype=np.int64)
    dense[keys] = values
    child_keys = np.concatenate([np.arange(f, f + c) for f, c in zip(first, counts, strict=True)])
    want = base + dense[child_keys]
    got = base.copy()
    _topdown._add_true_counts(got, keys, values, first, counts, seg)
    assert np.array_equal(got, want)
    assert np.array_equal(
        _topdown._true_counts(keys, values, first, counts, seg, int(counts.sum())),
        dense[child_keys],
    )


def _plain_run(job: _topdown.LevelJob, seed: int) -> tuple[list[I64], I64, int, list[I64]]:
    """The kernel restated plainly: zeros, true counts by key, a child mask for the noise.
    What the measure sees is returned as [noisy values, refined codes, other codes, parents]
    (empty when nothing is noised)."""
    counts, starts, values = job.child_counts, job.child_starts, job.values
    total = int(counts.sum())
    seg = np.cumsum(counts) - counts
    parent = np.repeat(np.arange(counts.size), counts)
    key = starts[parent] + (np.arange(total) - seg[parent]) + job.codes[1][parent] * job.strides[1]
    lookup = dict(zip(job.keys_true.tolist(), job.counts_true.tolist(), strict=True))
    y = np.array([lookup.get(k, 0) for k in key.tolist()], dtype=np.int64)
    many = counts[parent] != 1
    noised = int(many.sum())
    if job.sigma > 0 and noised:
        y[many] += draw_discrete_gaussian(job.sigma, noised, source=SeededSource(seed))
    child = starts[parent] + (np.arange(total) - seg[parent])
    measured = [y[many].copy(), child[many], job.codes[1][parent[many]], values[parent[many]]]
    measured = measured if noised else []
    y[~many] = values[parent[~many]]
    x = y if noised == 0 else intopt(y, values, seg)
    kept = np.flatnonzero(x > 0)
    codes = [starts[parent[kept]] + (kept - seg[parent[kept]]), job.codes[1][parent[kept]]]
    return codes, x[kept], noised, measured


@given(
    st.integers(0, 2**32 - 1),
    st.sampled_from([0.0, 0.5, 1.0]),
    st.sampled_from([0.0, 3.0]),
    st.sampled_from([None, 1, 2, 7]),
)
@settings(max_examples=150, deadline=None)
def test_level_job_equals_the_plain_kernel(
    seed: int, lone_share: float, sigma: float, part: int | None
) -> None:
    """A block (any run of the level's parents) noised and optimised by the kernel, in parts
    of ``part`` children (None: the default, one part here), equals the plain kernel over the
    same parents: values, codes, how many were noised and what the measure saw."""
    rng = np.random.default_rng(seed)
    parents = int(rng.integers(1, 30))
    counts = np.where(rng.random(parents) < lone_share, 1, rng.integers(1, 7, parents))
    starts = np.cumsum(counts) - counts  # chain 0 is refined: its children's codes
    other = rng.integers(0, 3, parents)  # chain 1's codes (stride 1000 in the level key)
    keys = np.unique(
        np.concatenate(
            [
                s + rng.integers(0, c, 1) + o * 1000
                for s, c, o in zip(starts, counts, other, strict=True)
            ]
        )
    ).astype(np.int64)
    true = rng.integers(1, 20, keys.size)
    values = rng.integers(0, 40, parents)
    a = int(rng.integers(0, parents))
    b = int(rng.integers(a + 1, parents + 1))
    seen: list[list[I64]] = []
    job = _topdown.LevelJob(
        0,
        [np.zeros(parents, np.int64), other],
        values,
        starts,
        counts,
        (1, 1000),
        keys,
        true,
        sigma,
        lambda y, t, o: intopt(y, t, o),
        lambda codes, y, p: seen.append([y, codes[0], codes[1], p]),
    )
    default = _topdown.PART_CHILDREN
    try:
        _topdown.PART_CHILDREN = part or default
        codes, x, noised = job.run((a, b), SeededSource(seed))
    finally:
        _topdown.PART_CHILDREN = default
    block = dataclasses.replace(
        job,
        codes=[code[a:b] for code in job.codes],
        values=values[a:b],
        child_starts=starts[a:b],
        child_counts=counts[a:b],
    )
    want_codes, want_x, want_noised, want_seen = _plain_run(block, seed)
    assert noised == want_noised
    assert np.array_equal(x, want_x)
    assert all(np.array_equal(u, v) for u, v in zip(codes, want_codes, strict=True))
    assert bool(seen) == bool(want_seen)
    if seen:  # values, codes and parents seen, in order, as one call over the block would
        got = [np.concatenate([call[i] for call in seen]) for i in range(4)]
        assert all(np.array_equal(u, v) for u, v in zip(got, want_seen, strict=True))
    assert (len(seen) > 1) <= (part is not None)  # several measure calls come from parts
