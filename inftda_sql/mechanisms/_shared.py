"""Helpers the baseline mechanisms share: segments, mixed-radix keys, per-level statistics.

Segments: the children of one parent are one contiguous segment of a level's arrays, given by
its start offset. Full-domain mechanisms (VanillaGauss, the Stability Histogram, Hay et al.)
walk level keys (:func:`~inftda_sql.core.tree.key_strides`) and work in chunks of
``CHUNK_CELLS`` cells, each with its own spawned random stream.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import numpy.typing as npt

from .._errors import InternalError
from ..core.arrays import F64, I64
from ..core.rng import RandomSource
from ..core.spec import TreeSpec
from ..core.tree import ChainTree, LevelStats, key_strides
from .base import MechanismContext, level_cells

__all__ = [
    "CHUNK_CELLS",
    "check_segments",
    "decode",
    "dense_true",
    "leaf_only_stats",
    "level_strides",
    "map_chunks",
    "segments",
]


#: cells per chunk of the full-domain mechanisms (noise drawn and filtered chunk by chunk)
CHUNK_CELLS = 1 << 20


def segments(n: int, offsets: I64) -> tuple[I64, I64]:
    """Length of every segment and the segment of every position."""
    lengths = np.diff(np.append(offsets, n))
    return lengths, np.repeat(np.arange(offsets.size, dtype=np.int64), lengths)


def check_segments(y: npt.NDArray[Any], targets: I64, offsets: I64) -> None:
    if offsets.size != targets.size or (offsets.size and offsets[0] != 0):
        raise InternalError("segment offsets and targets do not match")
    if offsets.size and (np.any(np.diff(offsets) <= 0) or offsets[-1] >= y.size):
        raise InternalError("segments must be non-empty and in order")
    if np.any(targets < 0):
        raise InternalError("negative parent value")


# ---------------------------------------------------------------------------------------------
# TDA-L2: Euclidean projection per parent, then rounding with a +-1 sum fix
# ---------------------------------------------------------------------------------------------


def level_strides(spec: TreeSpec, chains: Sequence[ChainTree], level: int) -> tuple[int, ...]:
    return key_strides(spec, level, [ch.sizes for ch in chains])


def decode(keys: I64, strides: Sequence[int], sizes: Sequence[int]) -> list[I64]:
    """The code of every chain from mixed-radix keys."""
    return [(keys // st) % sz for st, sz in zip(strides, sizes, strict=True)]


def dense_true(ctx: MechanismContext, level: int, strides: tuple[int, ...], n: int) -> F64:
    """The true counts of every cell of ``level`` (zeros included), in key order."""
    keys, counts = ctx.true_level(level, strides)
    y = np.zeros(n, dtype=np.float64)
    y[keys] = counts
    return y


def _nonzero_per_level(
    spec: TreeSpec, chains: Sequence[ChainTree], codes: Sequence[I64], counts: I64
) -> list[int]:
    """Per level (root first), the cells whose sum of the released (distinct) leaves is
    non-zero. Levels are visited leaves first, so one ancestor array per chain suffices."""
    n_levels = spec.n_levels
    out = [0] * (n_levels + 1)
    if counts.size == 0:
        return out
    out[n_levels] = int(np.count_nonzero(counts))
    current = list(codes)  # per chain: the ancestor at depth spec.levels[level][c]
    depth = list(spec.levels[n_levels])
    for level in range(n_levels - 1, -1, -1):
        for c, target in enumerate(spec.levels[level]):
            while depth[c] > target:  # one step up: the parent of every code
                off = chains[c].child_offsets[depth[c]]
                current[c] = np.searchsorted(off, current[c], side="right") - 1
                depth[c] -= 1
        strides = level_strides(spec, chains, level)
        key = np.zeros(counts.size, dtype=np.int64)
        for c, code in enumerate(current):
            key += code * strides[c]
        n = level_cells(spec, chains, level)
        if n <= max(1 << 22, 2 * counts.size):
            sums = np.bincount(key, weights=counts, minlength=n)
        else:
            _, inv = np.unique(key, return_inverse=True)
            sums = np.bincount(inv.ravel(), weights=counts)
        out[level] = int(np.count_nonzero(sums))
    return out


def _report(ctx: MechanismContext, stats: list[LevelStats]) -> tuple[LevelStats, ...]:
    if ctx.progress:
        for s in stats:
            ctx.progress(s)
    return tuple(stats)


def leaf_only_stats(
    ctx: MechanismContext,
    cells: Sequence[int],
    result_codes: Sequence[I64],
    counts: I64,
    leaf_noised: int,
    leaf_sigma: float,
    seconds: float,
) -> tuple[LevelStats, ...]:
    """Statistics of a mechanism that noises the leaf level only and releases the leaves."""
    spec = ctx.spec
    t0 = time.perf_counter()
    nonzero = _nonzero_per_level(spec, ctx.chains, result_codes, counts)
    extra = time.perf_counter() - t0
    n = spec.n_levels
    stats = [
        LevelStats(
            lv,
            spec.level_name(lv),
            cells[lv - 1] if lv else 0,
            leaf_noised if lv == n else 0,
            nonzero[lv],
            leaf_sigma if lv == n else 0.0,
            seconds if lv == n else (extra / n if lv else 0.0),
        )
        for lv in range(n + 1)
    ]
    return _report(ctx, stats)


def map_chunks(
    ctx: MechanismContext,
    n: int,
    work: Callable[[int, int, RandomSource], tuple[list[I64], I64]],
) -> tuple[list[I64], I64]:
    """Run ``work(a, b, source)`` over cell chunks, each with its own spawned stream, in
    ``ctx.threads`` threads; concatenate the (codes per chain, values) it returns."""
    bounds = [(a, min(a + CHUNK_CELLS, n)) for a in range(0, n, CHUNK_CELLS)]
    sources = ctx.source.spawn(len(bounds))
    jobs = [(a, b, s) for (a, b), s in zip(bounds, sources, strict=True)]
    if len(jobs) > 1 and ctx.threads > 1:
        with ThreadPoolExecutor(min(ctx.threads, len(jobs))) as pool:
            parts = list(pool.map(lambda j: work(*j), jobs))
    else:
        parts = [work(*j) for j in jobs]
    k = len(ctx.chains)
    if not parts:
        return [np.zeros(0, np.int64) for _ in range(k)], np.zeros(0, np.int64)
    codes = [np.concatenate([p[0][c] for p in parts]) for c in range(k)]
    return codes, np.concatenate([p[1] for p in parts])
