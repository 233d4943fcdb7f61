"""Hay et al.'s hierarchical mechanism (VLDB 2010), for irregular trees and unequal variances.

Discrete Gaussian noise (per-level sigma) on every node of the FULL domain tree, then a
bottom-up pass (inverse-variance weighting of a node's own noisy count and its children's
estimates) and a top-down pass (the parent's final value minus the sum of its children's
estimates, shared in proportion to their variances). The estimates are real-valued and may be
negative. **Storage rounding**: the final leaf estimates are rounded to the nearest integer (half
to even) and the non-zero ones stored, negative ones included. The real-valued estimates are
exactly consistent; after rounding they are NOT: the sum of the rounded leaves under a node
(which the levels view shows) generally differs from that node's own real-valued estimate, and in
bounded DP from the public total N. Refuses trees above ``max_cells`` nodes in total (all
levels). zCDP.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

import numpy as np

from .._errors import InternalError
from ..core.arrays import F64, I64
from ..core.noise import draw_discrete_gaussian
from ..core.rng import RandomSource
from ..core.spec import TreeSpec
from ..core.tree import ChainTree, LevelStats, TopDownResult
from ._shared import CHUNK_CELLS, decode, dense_true, level_strides
from .base import Mechanism, MechanismContext, level_sizes

__all__ = ["MECHANISM", "run_hierarchical"]


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
    """
    spec, chains = ctx.spec, ctx.chains
    cells = MECHANISM.full_domain_cells(spec, chains, ctx.max_cells)
    n_levels = spec.n_levels
    sigmas = ctx.tree_sigmas
    seconds = [0.0] * (n_levels + 1)
    level_sources = ctx.source.spawn(n_levels + 1)

    # bottom-up: z (estimates) and v (variances) of every level; the leaf variance is uniform
    t0 = time.perf_counter()
    leaf_var = float(sigmas[n_levels]) ** 2
    z: list[F64] = [np.zeros(0)] * (n_levels + 1)
    v: list[F64] = [np.zeros(0)] * (n_levels + 1)
    s_z: list[F64] = [np.zeros(0)] * (n_levels + 1)  # per level l: sums over each parent's kids
    s_v: list[F64] = [np.zeros(0)] * (n_levels + 1)
    refine: list[_Refinement | None] = [None] * (n_levels + 1)
    z[n_levels] = _noisy_level(ctx, n_levels, cells[n_levels], sigmas[n_levels], level_sources[-1])
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
        y_up = _noisy_level(ctx, level - 1, n_up, sigmas[level - 1], level_sources[level - 1])
        z[level - 1], v[level - 1] = _combine(y_up, float(sigmas[level - 1]) ** 2, sz, sv)
        del y_up
        seconds[level - 1] += time.perf_counter() - t0

    # top-down: final values level by level; the leaves are rounded and kept if non-zero
    t0 = time.perf_counter()
    final = z[0]
    stats = [
        LevelStats(
            0,
            "root",
            0,
            int(sigmas[0] > 0),
            int(np.count_nonzero(np.rint(final))),
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
        gap = final - s_z[level]  # per parent (key order of the level above)
        sv = s_v[level]
        exact = sv == 0.0
        share = np.where(exact, 0.0, gap / np.where(exact, 1.0, sv))
        even = np.zeros_like(gap)  # with exact children, spread any gap evenly
        counts_up = np.empty_like(gap)
        counts_up[step.parent] = step.lengths
        even[exact] = gap[exact] / counts_up[exact]
        per_seg_share = share[step.parent]
        per_seg_even = even[step.parent]
        if level < n_levels:
            var = v[level]
            final = z[level] + np.repeat(per_seg_share, step.lengths) * var
            final += np.repeat(per_seg_even, step.lengths)
            kept = int(np.count_nonzero(np.rint(final)))
        else:
            leaf_codes, leaf_values = _hay_leaves(
                ctx, step, z[level], per_seg_share * leaf_var + per_seg_even
            )
            kept = int(leaf_values.size)
        z[level] = np.zeros(0)
        stats.append(
            LevelStats(
                level,
                spec.level_name(level),
                cells[level - 1],
                cells[level],
                kept,
                float(sigmas[level]),
                seconds[level] + time.perf_counter() - t0,
            )
        )
        if ctx.progress:
            ctx.progress(stats[-1])
    return TopDownResult(codes=tuple(leaf_codes), counts=leaf_values, levels=tuple(stats))


def _hay_leaves(
    ctx: MechanismContext, ref: _Refinement, z_leaf: F64, adjust: F64
) -> tuple[list[I64], I64]:
    """Final leaf values ``z + adjust[segment]``, rounded; the non-zero ones, decoded."""
    spec, chains = ctx.spec, ctx.chains
    level = spec.n_levels
    strides = level_strides(spec, chains, level)
    sizes = level_sizes(spec, chains, level)
    seg_end = np.cumsum(ref.lengths)
    codes: list[list[I64]] = [[] for _ in chains]
    values: list[I64] = []
    for a in range(0, ref.n, CHUNK_CELLS):
        b = min(a + CHUNK_CELLS, ref.n)
        seg = np.searchsorted(seg_end, np.arange(a, b, dtype=np.int64), side="right")
        x = np.rint(z_leaf[a:b] + adjust[seg]).astype(np.int64)
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
