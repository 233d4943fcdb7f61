"""The whole count-of-counts release (:func:`count_of_counts`), the leaves-only consistency
(:func:`levels_from_leaves`) and the error measure (:func:`emd_per_node`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

from ..._errors import InternalError, SpecError
from ..accounting import CountOfCountsAccounting
from ..arrays import F64, I64
from ..rng import RandomSource
from .estimators import estimate_level
from .histograms import (
    CONSISTENCY,
    DEFAULT_CHUNK,
    MERGES,
    CocLevel,
    CocLevelStats,
    CocResult,
    Histograms,
    Runs,
)
from .merge import match_and_merge


def count_of_counts(
    levels: Sequence[CocLevel],
    accounting: CountOfCountsAccounting,
    *,
    max_size: int,
    min_size: int = 1,
    consistency: str = "topdown",
    merge: str = "weighted",
    source: RandomSource,
    chunk: int = DEFAULT_CHUNK,
    backend: str = "auto",
    progress: Callable[[CocLevelStats], None] | None = None,
) -> CocResult:
    """Estimate every level's nodes and make them consistent top-down (or estimate the leaves
    only, ``consistency="leaves"``). ``levels`` are root first; the accounting lists the
    levels it pays for (all of them for ``"topdown"``, the leaves for ``"leaves"``).

    Example:
        >>> from inftda_sql.core.accounting import count_of_counts_accounting
        >>> from inftda_sql.core.rng import as_source
        >>> root = CocLevel("root", np.array([3]), np.zeros(1, np.int64),
        ...                 Histograms.build([0, 0], [1, 2], [2, 1]))
        >>> leaf = CocLevel("city", np.array([2, 1]), np.zeros(2, np.int64),
        ...                 Histograms.build([0, 1], [1, 2], [2, 1]))
        >>> acct = count_of_counts_accounting(float("inf"), ["root", "city"])
        >>> out = count_of_counts([root, leaf], acct, max_size=5, source=as_source(0))
        >>> out.leaves.node.tolist(), out.leaves.size.tolist(), out.leaves.count.tolist()
        ([0, 1], [1, 2], [2, 1])
    """
    if consistency not in CONSISTENCY:
        raise SpecError(f"consistency must be one of {', '.join(CONSISTENCY)}; got {consistency!r}")
    if merge not in MERGES:
        raise SpecError(f"merge must be one of {', '.join(MERGES)}; got {merge!r}")
    chosen = list(levels) if consistency == "topdown" else [levels[-1]]
    first_level = len(levels) - len(chosen)
    if len(accounting.level_names) != len(chosen):
        raise InternalError("the accounting does not cover the levels estimated")
    variances = accounting.level_variance
    current: Runs | None = None
    stats = []
    for i, level in enumerate(chosen):
        t0 = time.perf_counter()
        runs, noised = estimate_level(
            level,
            method=accounting.method,
            scale=accounting.level_scale[i],
            variance=variances[i],
            max_size=max_size,
            min_size=min_size,
            source=source,
            chunk=chunk,
            backend=backend,
        )
        if current is not None:
            runs = match_and_merge(
                current, runs, level.parent, merge=merge, min_size=min_size, max_size=max_size
            )
        current = runs
        stat = CocLevelStats(
            level=first_level + i,
            name=level.name,
            nodes=level.n_nodes,
            noised_entries=noised,
            scale=accounting.level_scale[i],
            runs=int(runs.node.size),
            seconds=time.perf_counter() - t0,
        )
        stats.append(stat)
        if progress is not None:
            progress(stat)
    assert current is not None
    return CocResult(leaves=current.histograms(), levels=tuple(stats))


def levels_from_leaves(
    paths: Sequence[tuple[str, ...]], groups: I64, leaves: Histograms, names: Sequence[str]
) -> list[CocLevel]:
    """Every level of a hierarchy (root first) from its sorted leaf paths, the public groups
    per leaf and the true leaf histograms (a path is one value per level, coarse to fine).

    Example:
        >>> lv = levels_from_leaves([("A", "a1"), ("A", "a2"), ("B", "b1")], np.array([2, 1, 1]),
        ...     Histograms.build([0, 0, 1, 2], [1, 2, 1, 3], [1, 1, 1, 1]), ["state", "county"])
        >>> [(x.name, x.groups.tolist(), x.parent.tolist()) for x in lv]
        [('root', [4], [0]), ('state', [3, 1], [0, 0]), ('county', [2, 1, 1], [0, 0, 1])]
    """
    depth = len(names)
    codes: list[I64] = []
    for d in range(1, depth + 1):
        keys = [p[:d] for p in paths]
        change = np.ones(len(keys), dtype=bool)
        change[1:] = [a != b for a, b in zip(keys[1:], keys[:-1], strict=True)]
        codes.append(np.cumsum(change).astype(np.int64) - 1)
    levels = [
        CocLevel(
            names[-1],
            np.asarray(groups, dtype=np.int64),
            codes[-2] if depth > 1 else np.zeros(len(paths), dtype=np.int64),
            leaves,
        )
    ]
    current, hist = codes[-1], leaves
    for d in range(depth - 1, -1, -1):
        up = codes[d - 1] if d > 0 else np.zeros(len(paths), dtype=np.int64)
        n = int(up.max()) + 1
        parent_of = np.zeros(int(current.max()) + 1, dtype=np.int64)
        parent_of[current] = up
        hist = hist.aggregate(parent_of)
        g = np.bincount(up, weights=groups, minlength=n).astype(np.int64)
        grand = codes[d - 2] if d > 1 else np.zeros(len(paths), dtype=np.int64)
        parent = np.zeros(n, dtype=np.int64)
        parent[up] = grand
        levels.insert(0, CocLevel("root" if d == 0 else names[d - 1], g, parent, hist))
        current = up
    return levels


# ---------------------------------------------------------------------------------------------
# error: earthmover's distance


def emd_per_node(true: Histograms, released: Histograms, n_nodes: int) -> F64:
    """Earthmover's distance of every node: ``sum_j |Hc_true[j] - Hc_released[j]|``.

    Both are sparse; the cumulative difference is constant between consecutive sizes present
    on either side, so the sum runs over those only. When the two totals differ the tail beyond
    the largest size is not counted.

    Example:
        >>> t = Histograms.build([0, 0], [1, 3], [2, 1])
        >>> r = Histograms.build([0], [2], [3])
        >>> emd_per_node(t, r, 1).tolist()   # sizes 1,1,3 vs 2,2,2: 1 + 1 + 1
        [3.0]
    """
    node = np.concatenate((true.node, released.node))
    size = np.concatenate((true.size, released.size))
    diff = np.concatenate((true.count, -released.count)).astype(np.float64)
    if node.size == 0:
        return np.zeros(n_nodes)
    order = np.lexsort((size, node))
    node, size, diff = node[order], size[order], diff[order]
    cum = np.cumsum(diff)
    first = np.ones(node.size, dtype=bool)
    first[1:] = node[1:] != node[:-1]
    base = np.maximum.accumulate(np.where(first, np.arange(node.size), 0))
    cum_node = cum - (cum - diff)[base]
    last = np.ones(node.size, dtype=bool)
    last[:-1] = node[1:] != node[:-1]
    width = np.where(last, 0, np.roll(size, -1) - size)
    out: F64 = np.bincount(node, weights=np.abs(cum_node) * width, minlength=n_nodes).astype(
        np.float64
    )
    return out
