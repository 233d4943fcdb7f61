"""Hay et al.'s hierarchical mechanism (VLDB 2010), for irregular trees and unequal variances.

Discrete Gaussian noise (per-level sigma) on every node of the FULL domain tree, then a
bottom-up pass (inverse-variance weighting of a node's own noisy count and its children's
estimates) and a top-down pass (the parent's final value minus the sum of its children's
estimates, shared in proportion to their variances). The estimates are real-valued, exactly
consistent, and may be negative.

**Storage rounding**, top-down, so that what is stored is consistent too: the root estimate is
rounded to the nearest integer (in bounded DP it is N itself), then the children of every node
are rounded so that they sum exactly to the node's stored integer, by largest remainder
(:func:`round_to_parents`: each child becomes the floor or the ceiling of its estimate, the
ceilings going to the largest fractional parts; negative estimates are rounded the same way, by
their fractional part, so sums are kept whatever the signs). The non-zero leaves are stored,
negative ones included; every coarser level (the levels view, the level statistics) is the sum
of the stored leaves, which is the node's own rounded estimate. Rounding every leaf on its own
would not do: a parent's adjustment is one constant spread over children whose noisy counts are
integers, so they all round the same way and the errors add up (hundreds of units on a parent
with a thousand children). Refuses trees above ``max_cells`` nodes in total (all levels). zCDP.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from .._errors import InternalError
from ..core.arrays import F64, I64
from ..core.noise import draw_discrete_gaussian
from ..core.rng import RandomSource
from ..core.spec import TreeSpec
from ..core.tree import ChainTree, LevelStats, TopDownResult
from ._shared import CHUNK_CELLS, decode, dense_true, level_strides
from .base import Mechanism, MechanismContext, level_sizes

__all__ = ["MECHANISM", "round_to_parents", "run_hierarchical"]


class _Refinement:
    """How the cells of ``level`` (key order) group into the children of ``level - 1``'s cells.

    The refined chain has stride 1 in the level's key, so the children of one parent are one
    contiguous run of keys: segment ``(o, p)`` (``o`` the other chains' codes, ``p`` the
    parent code in the refined chain) starts at ``o * size + off[p]``. Segments come in key
    order; ``parent[s]`` is segment ``s``'s parent key in the level above.
    """

    def __init__(self, spec: TreeSpec, chains: Sequence[ChainTree], level: int) -> None:
        r = spec.refined_chain(level)
        depth = spec.levels[level][r]
        sizes = level_sizes(spec, chains, level)
        strides = level_strides(spec, chains, level)
        up = level_strides(spec, chains, level - 1)
        off = chains[r].child_offsets[depth]
        size_r = sizes[r]
        n_outer = math.prod(sizes) // size_r
        outer = np.arange(n_outer, dtype=np.int64)
        base = np.zeros(n_outer, dtype=np.int64)
        for c in range(len(sizes)):
            if c != r:
                base += ((outer * size_r) // strides[c]) % sizes[c] * up[c]
        n_par = off.size - 1
        parent_codes = np.arange(n_par, dtype=np.int64)
        self.parent: I64 = (base[:, None] + parent_codes[None, :] * up[r]).ravel()
        self.starts: I64 = (outer[:, None] * size_r + off[None, :-1]).ravel()
        self.lengths: I64 = np.tile(np.diff(off), n_outer)
        self.n = n_outer * size_r


def _noisy_level(
    ctx: MechanismContext, level: int, n: int, sigma: float, source: RandomSource
) -> F64:
    """The true counts of every cell of ``level`` plus discrete Gaussian noise of ``sigma``."""
    if level == 0:
        y = np.array([ctx.total], dtype=np.float64)
    else:
        y = dense_true(ctx, level, level_strides(ctx.spec, ctx.chains, level), n)
    if sigma > 0:
        chunks = [(a, min(a + CHUNK_CELLS, n)) for a in range(0, n, CHUNK_CELLS)]
        for (a, b), src in zip(chunks, source.spawn(len(chunks)), strict=True):
            y[a:b] += draw_discrete_gaussian(sigma, b - a, source=src)
    return y


def _combine(y: F64, var: float, s_z: F64, s_v: F64) -> tuple[F64, F64]:
    """Bottom-up: inverse-variance weighting of a node's noisy count ``y`` (variance ``var``)
    and its children's estimates (sum ``s_z``, variance ``s_v``). Exact inputs (variance 0)
    win outright."""
    if var == 0.0:
        return y.copy(), np.zeros_like(y)
    exact = s_v == 0.0
    w_kids = 1.0 / np.where(exact, 1.0, s_v)
    w_own = 1.0 / var
    z = (y * w_own + s_z * w_kids) / (w_own + w_kids)
    v = 1.0 / (w_own + w_kids)
    z[exact] = s_z[exact]
    v[exact] = 0.0
    return z, v


def run_hierarchical(ctx: MechanismContext) -> TopDownResult:
    """Hay et al.'s hierarchical mechanism on the full domain tree (see the module docstring).

    Bottom-up, for every node: ``z = (y / s^2 + S_z / S_v) / (1 / s^2 + 1 / S_v)`` and
    ``V = 1 / (1 / s^2 + 1 / S_v)``, with ``S_z``/``S_v`` the sums of its children's ``z``/``V``
    (leaves: ``z = y``, ``V = s^2``). Top-down: the root keeps ``z``; a child gets
    ``z_child + (V_child / S_v) (parent final - S_z)``. Level sigmas from the accounting (the
    root is exact, ``s = 0``, when N is public). Vectorised per level with segment sums.

    A level the accounting marks as determined by its parents (one child per parent in the
    public domain) is not measured: no noise and no true count. Bottom-up its nodes take their
    children's estimates (``z = S_z``, ``V = S_v``; no information at all, ``V = inf``, when it
    is the leaf level), top-down each one takes its parent's final and stored values.
    """
    spec, chains = ctx.spec, ctx.chains
    cells = MECHANISM.full_domain_cells(spec, chains, ctx.max_cells)
    n_levels = spec.n_levels
    sigmas = ctx.tree_sigmas
    measured = [not det for det in ctx.tree_determined]
    seconds = [0.0] * (n_levels + 1)
    level_sources = ctx.source.spawn(n_levels + 1)

    # bottom-up: z (estimates) and v (variances) of every level; the leaf variance is uniform
    t0 = time.perf_counter()
    leaf_var = float(sigmas[n_levels]) ** 2 if measured[n_levels] else math.inf
    z: list[F64] = [np.zeros(0)] * (n_levels + 1)
    v: list[F64] = [np.zeros(0)] * (n_levels + 1)
    s_z: list[F64] = [np.zeros(0)] * (n_levels + 1)  # per level l: sums over each parent's kids
    s_v: list[F64] = [np.zeros(0)] * (n_levels + 1)
    refine: list[_Refinement | None] = [None] * (n_levels + 1)
    if measured[n_levels]:
        z[n_levels] = _noisy_level(
            ctx, n_levels, cells[n_levels], sigmas[n_levels], level_sources[-1]
        )
    else:
        z[n_levels] = np.zeros(cells[n_levels], dtype=np.float64)
    seconds[n_levels] += time.perf_counter() - t0
    for level in range(n_levels, 0, -1):
        t0 = time.perf_counter()
        ref = _Refinement(spec, chains, level)
        refine[level] = ref
        n_up = cells[level - 1]
        kids_z = np.add.reduceat(z[level], ref.starts)
        if level == n_levels:
            kids_v = ref.lengths * leaf_var
        else:
            kids_v = np.add.reduceat(v[level], ref.starts)
        sz = np.empty(n_up, dtype=np.float64)
        sv = np.empty(n_up, dtype=np.float64)
        sz[ref.parent] = kids_z
        sv[ref.parent] = kids_v
        s_z[level], s_v[level] = sz, sv
        if measured[level - 1]:
            y_up = _noisy_level(ctx, level - 1, n_up, sigmas[level - 1], level_sources[level - 1])
            z[level - 1], v[level - 1] = _combine(y_up, float(sigmas[level - 1]) ** 2, sz, sv)
            del y_up
        else:  # not measured: the estimate of its children
            z[level - 1], v[level - 1] = sz.copy(), sv.copy()
        seconds[level - 1] += time.perf_counter() - t0

    # top-down: the real-valued final estimates level by level, and the stored integers: the
    # root rounded, then every parent's children rounded to sum to the parent's stored integer
    t0 = time.perf_counter()
    final = z[0]
    stored = np.rint(final).astype(np.int64)
    stats = [
        LevelStats(
            0,
            "root",
            0,
            int(sigmas[0] > 0),
            int(np.count_nonzero(stored)),
            float(sigmas[0]),
            seconds[0] + time.perf_counter() - t0,
        )
    ]
    if ctx.progress:
        ctx.progress(stats[-1])
    leaf_codes: list[I64] = []
    leaf_values: I64 = np.zeros(0, dtype=np.int64)
    for level in range(1, n_levels + 1):
        t0 = time.perf_counter()
        step = refine[level]
        if step is None:  # pragma: no cover - set in the bottom-up pass
            raise InternalError("hierarchical: a level was not refined")
        targets = stored[step.parent]  # per segment: the parent's stored integer
        if measured[level]:
            gap = final - s_z[level]  # per parent (key order of the level above)
            sv = s_v[level]
            exact = sv == 0.0
            share = np.where(exact, 0.0, gap / np.where(exact, 1.0, sv))
            even = np.zeros_like(gap)  # with exact children, spread any gap evenly
            counts_up = np.empty_like(gap)
            counts_up[step.parent] = step.lengths
            even[exact] = gap[exact] / counts_up[exact]
            z_level, seg_share, seg_add = z[level], share[step.parent], even[step.parent]
        else:  # one child per parent: each child is its parent (final and stored values)
            z_level = np.zeros(step.n)
            seg_share, seg_add = np.zeros(step.parent.size), final[step.parent]
        if level < n_levels:
            v_level = v[level] if measured[level] else z_level
            final, stored = _round_level(step, z_level, v_level, seg_share, seg_add, targets)
            kept = int(np.count_nonzero(stored))
        else:
            adjust = seg_share * leaf_var + seg_add if measured[level] else seg_add
            leaf_codes, leaf_values = _hay_leaves(ctx, step, z_level, adjust, targets)
            kept = int(leaf_values.size)
        z[level] = np.zeros(0)
        stats.append(
            LevelStats(
                level,
                spec.level_name(level),
                cells[level - 1],
                cells[level] if measured[level] else 0,
                kept,
                float(sigmas[level]),
                seconds[level] + time.perf_counter() - t0,
            )
        )
        if ctx.progress:
            ctx.progress(stats[-1])
    return TopDownResult(codes=tuple(leaf_codes), counts=leaf_values, levels=tuple(stats))


def round_to_parents(values: npt.ArrayLike, targets: npt.ArrayLike, lengths: npt.ArrayLike) -> I64:
    """Round real values to integers so that every segment sums exactly to its target.

    Largest remainder, per segment: every value is rounded down (``floor``, so ``-0.3``
    becomes ``-1`` and ``2.7`` becomes ``2``), the segment's shortfall
    ``D = target - sum(floor)`` is written ``q * d + r`` (``d`` the segment's length,
    ``0 <= r < d``), every entry gets ``q`` and the ``r`` entries with the largest fractional
    parts ``value - floor(value)`` one more (equal parts by position, first first). Negative
    values are rounded like positive ones: only the fractional part decides, so the sums are
    kept exactly whatever the signs. When the values of a segment sum to within 1 of its target
    (Hay's estimates sum to their parent's estimate, which its own rounding moved by less than
    1), ``q`` is 0 (or ``r`` is 0 and ``q`` is 1) and every entry is the floor or the ceiling of
    its value.

    Args:
        values: the real values, segment after segment.
        targets: one integer per segment.
        lengths: the (positive) length of every segment; they add up to ``len(values)``.

    Example:
        >>> round_to_parents([0.6, 0.6, 0.8, -0.3, -0.6, 3.6], [2, 3], [3, 3]).tolist()
        [1, 0, 1, 0, -1, 4]
    """
    f = np.asarray(values, dtype=np.float64)
    t = np.asarray(targets, dtype=np.int64)
    d = np.asarray(lengths, dtype=np.int64)
    n = f.size
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if int(d.sum()) != n or np.any(d <= 0) or d.size != t.size:
        raise InternalError("round_to_parents: segments do not cover the values")
    base = np.floor(f)
    frac = f - base
    out = base.astype(np.int64)
    starts = np.cumsum(d) - d
    q, r = np.divmod(t - np.add.reduceat(out, starts), d)
    out += np.repeat(q, d)
    if r.any():
        seg = np.repeat(np.arange(d.size, dtype=np.int64), d)
        order = np.lexsort((-frac, seg))  # stable: by segment, then fraction descending
        rank = np.arange(n, dtype=np.int64) - np.repeat(starts, d)
        out[order[rank < np.repeat(r, d)]] += 1
    return out


def _segment_chunks(lengths: I64) -> list[tuple[int, int]]:
    """Runs of whole segments of about ``CHUNK_CELLS`` cells: ``(first segment, end)``."""
    ends = np.cumsum(lengths)
    if ends.size == 0:
        return []
    cuts = np.searchsorted(ends, np.arange(CHUNK_CELLS, int(ends[-1]), CHUNK_CELLS), "left") + 1
    bounds = np.unique(np.concatenate(([0], cuts, [ends.size]))).tolist()
    return list(itertools.pairwise(bounds))


def _round_level(
    ref: _Refinement, z_level: F64, v_level: F64, share: F64, even: F64, targets: I64
) -> tuple[F64, I64]:
    """A level above the leaves: final estimates ``z + share[segment] * v + even[segment]`` and
    their integers rounded to the parents' stored ``targets`` (per segment), chunk by chunk."""
    final = np.empty(ref.n, dtype=np.float64)
    stored = np.empty(ref.n, dtype=np.int64)
    starts = np.append(ref.starts, ref.n)
    for s0, s1 in _segment_chunks(ref.lengths):
        a, b = int(starts[s0]), int(starts[s1])
        lengths = ref.lengths[s0:s1]
        vals = z_level[a:b] + np.repeat(share[s0:s1], lengths) * v_level[a:b]
        vals += np.repeat(even[s0:s1], lengths)
        final[a:b] = vals
        stored[a:b] = round_to_parents(vals, targets[s0:s1], lengths)
    return final, stored


def _hay_leaves(
    ctx: MechanismContext, ref: _Refinement, z_leaf: F64, adjust: F64, targets: I64
) -> tuple[list[I64], I64]:
    """Final leaf values ``z + adjust[segment]`` rounded to sum to their parents' stored
    ``targets``; the non-zero ones, decoded."""
    spec, chains = ctx.spec, ctx.chains
    level = spec.n_levels
    strides = level_strides(spec, chains, level)
    sizes = level_sizes(spec, chains, level)
    starts = np.append(ref.starts, ref.n)
    codes: list[list[I64]] = [[] for _ in chains]
    values: list[I64] = []
    for s0, s1 in _segment_chunks(ref.lengths):
        a, b = int(starts[s0]), int(starts[s1])
        lengths = ref.lengths[s0:s1]
        x = round_to_parents(
            z_leaf[a:b] + np.repeat(adjust[s0:s1], lengths), targets[s0:s1], lengths
        )
        kept = np.flatnonzero(x)
        for c, code in enumerate(decode(kept + a, strides, sizes)):
            codes[c].append(code)
        values.append(x[kept])
    if not values:
        return [np.zeros(0, np.int64) for _ in chains], np.zeros(0, np.int64)
    return [np.concatenate(c) for c in codes], np.concatenate(values)


MECHANISM = Mechanism(
    name="hierarchical",
    summary="Hay et al. on the full domain tree, rounded (negative counts possible)",
    run=run_hierarchical,
    full_domain="tree",
)
