"""Hierarchical count-of-counts histograms (Kuo, Chiu, Kifer, Hay, Machanavajjhala; VLDB 2018).

Engine-free: the true histograms arrive as numpy arrays, the released ones leave as numpy
arrays. Persons belong to groups (households); every group sits in one leaf region; the number of
groups of every region is PUBLIC. For every node v of the hierarchy and every size j the release
gives ``H_v[j]``, the number of groups of size j in v: non-negative integers, each node's
histogram summing to its public number of groups, children summing to their parent.

**Representation.** A level's histograms are sparse (:class:`Histograms`: node, size, count;
most sizes hold no group). Estimated groups are kept as *runs* (:class:`Runs`): ``count`` groups
of one node with one estimated size and one variance estimate. Nothing is ever materialised per
group or per (node, size) of the full range except inside a bounded chunk of entries.

**Per-node estimators** (noise scales and the budget split come from
:func:`~inftda_sql.core.accounting.count_of_counts_accounting`; sizes are truncated at the
public ``max_size`` K, and ``min_size`` is the smallest size a group may have: 1 when every
listed group holds someone, the engine's check; 0 when groups may be empty):

* ``"naive"``: discrete Laplace noise (sensitivity 2) on ``H[j]``, ``j = min_size .. K``;
  the closest point (least squares) with ``H >= 0`` and ``sum H = G``, then largest-remainder
  rounding. Every empty size is noised, so this is orders of magnitude worse.
* ``"unattributed"``: noise (sensitivity 1) on the sorted group sizes ``Hg`` (length G),
  isotonic regression, clipped to ``[min_size, K]``, rounded to the nearest integer.
* ``"cumulative"`` (the paper's choice): noise (sensitivity 1) on ``Hc[j]``, the number of
  groups of size ``<= j``, for ``j = min_size .. K - 1``; both ends are fixed (``Hc[min_size -
  1] = 0``, ``Hc[K] = G``), so the isotonic fit is clipped to ``[0, G]``, rounded (a rounded
  non-decreasing sequence stays non-decreasing) and differenced.

The isotonic fits run over all nodes of a level at once, streamed in chunks of ``chunk`` entries
(:class:`~inftda_sql.core.isotonic.SegmentedIsotonic`): for 3,000 nodes and K = 100,000 the
level is 3e8 entries, but at most two chunks of them (the one fitted and the next one, whose
noise a second thread draws meanwhile) and the blocks of one open node are in memory. The naive
and cumulative estimators chunk whole nodes, so a chunk holds at least one node's K entries; the
unattributed one cuts anywhere (a root of 240M groups is streamed). The true cumulative
histogram of a node is piecewise constant; a chunk builds it from the sparse histogram by one
scatter and one cumulative sum.

**Variance of an estimated group's size** (the paper's Section 5.1; its formulas were lost in
conversion, re-derived here). ``V`` is the variance of one noise draw of the level
(:func:`~inftda_sql.core.accounting.discrete_laplace_variance`, about ``2 / epsilon_l^2``):

* unattributed: a PAV block of ``s`` entries is the mean of ``s`` noisy values: ``V / s`` for
  each of its groups;
* cumulative: ``Var(Hc[j])`` is at most ``V`` (over-estimated, ignoring the fit), so
  ``Var(H[j]) = Var(Hc[j] - Hc[j-1]) <= 2V``, shared by the ``H[j]`` groups estimated at size
  j: ``2V / H[j]`` each;
* naive: ``Var(H[j]) = V``: ``V / H[j]`` each (the same reasoning; the paper does not give one).

**Top-down consistency** (Algorithm 1). The root keeps its own estimate. For each level below,
the groups of every parent (sorted by estimated size) are matched to the groups of all its
children pooled and sorted by size (Algorithm 2: smallest to smallest, which is the optimal
matching for the cost ``|size difference|``); when the parent's next run of groups covers only
part of the children's groups of one size, it is split among those children in proportion to
what each has left, with largest-remainder rounding. Each matched pair is merged (weighted:
``(s_p / v_p + s_c / v_c) / (1 / v_p + 1 / v_c)``, variance ``1 / (1 / v_p + 1 / v_c)``; or the
naive average), rounded, and becomes the child's group for the next level. The leaves are final;
every other level is the sum of its leaves, so the release is consistent by construction.
``consistency="leaves"`` is the paper's baseline: estimate the leaves only (with the whole
budget) and add them up. Everything is vectorised over nodes and runs; the only Python loops run
over chunks, levels and the rounds of the proportional splits (one per piece of a size class).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from .._errors import InternalError, SpecError
from .accounting import COC_METHODS, CountOfCountsAccounting
from .arrays import F64, I64
from .isotonic import SegmentedIsotonic
from .noise import draw_discrete_laplace
from .rng import RandomSource

__all__ = [
    "CONSISTENCY",
    "MERGES",
    "CocLevel",
    "CocLevelStats",
    "CocResult",
    "Histograms",
    "Runs",
    "count_of_counts",
    "emd_per_node",
    "estimate_level",
    "levels_from_leaves",
    "match_and_merge",
]

#: how the levels are made consistent
CONSISTENCY = ("topdown", "leaves")
#: how a matched parent and child estimate of one group are combined
MERGES = ("weighted", "average")

DEFAULT_CHUNK = 1 << 20
T = TypeVar("T")
_EMPTY_I = np.zeros(0, dtype=np.int64)


@dataclass(frozen=True)
class Histograms:
    """Sparse count-of-counts histograms of the nodes of one level, sorted by (node, size):
    ``count`` groups of size ``size`` in node ``node`` (counts > 0)."""

    node: I64
    size: I64
    count: I64

    @classmethod
    def build(cls, node: object, size: object, count: object) -> Histograms:
        """Sort by (node, size), add up repeated pairs and drop zero counts.

        Example:
            >>> h = Histograms.build([1, 0, 1, 1], [2, 5, 2, 3], [1, 4, 2, 0])
            >>> h.node.tolist(), h.size.tolist(), h.count.tolist()
            ([0, 1], [5, 2], [4, 3])
        """
        n = np.asarray(node, dtype=np.int64)
        s = np.asarray(size, dtype=np.int64)
        c = np.asarray(count, dtype=np.int64)
        if n.size == 0:
            return cls(_EMPTY_I, _EMPTY_I, _EMPTY_I)
        order = np.lexsort((s, n))
        n, s, c = n[order], s[order], c[order]
        new = np.ones(n.size, dtype=bool)
        new[1:] = (n[1:] != n[:-1]) | (s[1:] != s[:-1])
        first = np.flatnonzero(new)
        total = np.add.reduceat(c, first)
        keep = total != 0
        return cls(n[first][keep], s[first][keep], total[keep])

    def totals(self, n_nodes: int) -> I64:
        """Groups per node."""
        return np.bincount(self.node, weights=self.count, minlength=n_nodes).astype(np.int64)

    def persons(self, n_nodes: int) -> I64:
        """Persons per node (sum of size x count)."""
        w = (self.size * self.count).astype(np.float64)
        return np.rint(np.bincount(self.node, weights=w, minlength=n_nodes)).astype(np.int64)

    def aggregate(self, parent: I64) -> Histograms:
        """The histograms of the parents (``parent[node]``): sums of their children's."""
        return Histograms.build(parent[self.node], self.size, self.count)


@dataclass(frozen=True)
class Runs:
    """Estimated groups of the nodes of one level, as runs sorted by (node, size, var):
    ``count`` groups of node ``node`` estimated at size ``size`` with variance ``var``."""

    node: I64
    size: I64
    var: F64
    count: I64

    @classmethod
    def build(cls, node: I64, size: I64, var: F64, count: I64) -> Runs:
        """Sort by (node, size, var), add up runs that agree on all three, drop empty ones."""
        if node.size == 0:
            return cls(_EMPTY_I, _EMPTY_I, np.zeros(0), _EMPTY_I)
        order = np.lexsort((var, size, node))
        node, size, var, count = node[order], size[order], var[order], count[order]
        new = np.ones(node.size, dtype=bool)
        new[1:] = (node[1:] != node[:-1]) | (size[1:] != size[:-1]) | (var[1:] != var[:-1])
        first = np.flatnonzero(new)
        total = np.add.reduceat(count, first)
        keep = total > 0
        return cls(node[first][keep], size[first][keep], var[first][keep], total[keep])

    def histograms(self) -> Histograms:
        """The runs as histograms (variances dropped)."""
        return Histograms.build(self.node, self.size, self.count)


@dataclass(frozen=True)
class CocLevel:
    """One level of the hierarchy: its public facts and its PRIVATE true histograms.

    Attributes:
        name: the level's name (``root``, or its column).
        groups: the public number of groups of every node (from the groups table).
        parent: the node of the previous level each node belongs to (zeros for the root).
        truth: the true histograms, sizes already truncated at ``max_size`` (PRIVATE).
    """

    name: str
    groups: I64
    parent: I64
    truth: Histograms

    @property
    def n_nodes(self) -> int:
        return int(self.groups.size)


@dataclass(frozen=True)
class CocLevelStats:
    """What one level did (public facts only: no true value)."""

    level: int
    name: str
    nodes: int
    noised_entries: int
    scale: float
    runs: int
    seconds: float

    def as_dict(self) -> dict[str, object]:
        return {
            "level": self.level,
            "name": self.name,
            "nodes": self.nodes,
            "noised_entries": self.noised_entries,
            "scale": self.scale,
            "runs": self.runs,
            "seconds": round(self.seconds, 4),
        }


@dataclass(frozen=True)
class CocResult:
    """The released leaf histograms and what each level did."""

    leaves: Histograms
    levels: tuple[CocLevelStats, ...]


# ---------------------------------------------------------------------------------------------
# per-node estimators


def _noise(scale: float, n: int, source: RandomSource) -> I64:
    if scale == 0.0:
        return np.zeros(n, dtype=np.int64)
    return draw_discrete_laplace(scale, n, source=source)


def _prefetched(make: Callable[[T], I64], items: Sequence[T]) -> Iterator[I64]:
    """``make(item)`` for every item, in order, the next one computed in a second thread while
    the caller works on the current one (noise and the isotonic fit overlap on two cores)."""
    if not items:
        return
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(make, items[0])
        for nxt in [*items[1:], None]:
            ready = pending.result()
            if nxt is not None:
                pending = pool.submit(make, nxt)
            yield ready


def _node_chunks(n_nodes: int, per_node: int, chunk: int) -> list[tuple[int, int]]:
    """Ranges of whole nodes holding about ``chunk`` entries each (at least one node)."""
    step = max(1, chunk // max(per_node, 1))
    return [(v, min(v + step, n_nodes)) for v in range(0, n_nodes, step)]


def _dense(truth: Histograms, v0: int, v1: int, lo: int, width: int) -> I64:
    """The true ``H[lo .. lo + width - 1]`` of nodes ``v0 .. v1 - 1`` as a (nodes, width) array."""
    a = int(np.searchsorted(truth.node, v0))
    b = int(np.searchsorted(truth.node, v1))
    node, size, count = truth.node[a:b], truth.size[a:b], truth.count[a:b]
    inside = (size >= lo) & (size < lo + width)
    out = np.zeros((v1 - v0, width), dtype=np.int64)
    out[node[inside] - v0, size[inside] - lo] = count[inside]
    return out


def _estimate_cumulative(
    level: CocLevel,
    scale: float,
    variance: float,
    max_size: int,
    min_size: int,
    source: RandomSource,
    chunk: int,
    backend: str,
) -> tuple[Runs, int]:
    n, width = level.n_nodes, max_size - min_size  # Hc[min_size .. K-1]
    G = level.groups
    if width == 0:  # every group has the one possible size
        nodes = np.arange(n, dtype=np.int64)
        return Runs.build(nodes, np.full(n, max_size), np.zeros(n), G.copy()), 0
    stream = SegmentedIsotonic(np.arange(n + 1, dtype=np.int64) * width, backend=backend)
    ranges = _node_chunks(n, width, chunk)
    sources = source.spawn(len(ranges))

    def noisy(item: tuple[tuple[int, int], RandomSource]) -> I64:
        (v0, v1), src = item
        hc = _dense(level.truth, v0, v1, min_size, width)
        np.cumsum(hc, axis=1, out=hc)
        y = hc.ravel()
        y += _noise(scale, y.size, src)
        return y

    for y in _prefetched(noisy, list(zip(ranges, sources, strict=True))):
        stream.feed(y)
    fit = stream.blocks()
    g = G[fit.segment]
    r = np.clip(np.floor(np.clip(fit.value, 0.0, None) + 0.5), 0, g).astype(np.int64)
    # Hc is r on each block; H[j] = Hc[j] - Hc[j-1] is non-zero only where a block starts
    first = np.ones(r.size, dtype=bool)
    first[1:] = fit.segment[1:] != fit.segment[:-1]
    prev = np.where(first, 0, np.roll(r, 1))
    counts = r - prev
    last = np.ones(r.size, dtype=bool)
    last[:-1] = fit.segment[1:] != fit.segment[:-1]
    node = np.concatenate((fit.segment, fit.segment[last]))
    size = np.concatenate((min_size + fit.start, np.full(int(last.sum()), max_size)))
    count = np.concatenate((counts, g[last] - r[last]))
    keep = count > 0
    node, size, count = node[keep], size[keep], count[keep]
    var = 2.0 * variance / count
    return Runs.build(node, size, var, count), n * width


def _estimate_unattributed(
    level: CocLevel,
    scale: float,
    variance: float,
    max_size: int,
    min_size: int,
    source: RandomSource,
    chunk: int,
    backend: str,
) -> tuple[Runs, int]:
    G = level.groups
    offsets = np.concatenate(([0], np.cumsum(G)))
    total = int(offsets[-1])
    truth = level.truth
    if not np.array_equal(truth.totals(level.n_nodes), G):
        raise InternalError("the true histograms do not sum to the public numbers of groups")
    stream = SegmentedIsotonic(offsets, backend=backend)
    ends = np.cumsum(truth.count)  # the sorted sizes of all nodes, one after the other
    starts = ends - truth.count
    bounds = list(range(0, total, max(1, chunk)))
    sources = source.spawn(len(bounds))

    def noisy(item: tuple[int, RandomSource]) -> I64:
        lo, src = item
        hi = min(lo + chunk, total)
        a = int(np.searchsorted(ends, lo, side="right"))
        b = int(np.searchsorted(starts, hi, side="left"))
        reps = np.minimum(ends[a:b], hi) - np.maximum(starts[a:b], lo)
        y = np.repeat(truth.size[a:b], reps)
        y += _noise(scale, y.size, src)
        return y

    for y in _prefetched(noisy, list(zip(bounds, sources, strict=True))):
        stream.feed(y)
    fit = stream.blocks()
    size = np.floor(np.clip(fit.value, min_size, max_size) + 0.5).astype(np.int64)
    var = variance / fit.length
    return Runs.build(fit.segment, size, var, fit.length), total


def _project_simplex_rows(y: I64, total: I64) -> F64:
    """Row-wise least-squares projection of ``y`` onto ``{x >= 0, sum x = total}``."""
    u = -np.sort(-y.astype(np.float64), axis=1)
    css = np.cumsum(u, axis=1) - total[:, None]
    k = np.arange(1, y.shape[1] + 1)
    cond = u - css / k > 0
    rho = y.shape[1] - np.argmax(cond[:, ::-1], axis=1)  # the last index where cond holds
    tau = css[np.arange(y.shape[0]), rho - 1] / rho
    tau[~cond.any(axis=1)] = np.inf  # only when total == 0: the projection is 0
    out: F64 = np.maximum(y - tau[:, None], 0.0)
    return out


def _largest_remainder_rows(x: F64, total: I64) -> I64:
    """Round each row of ``x`` (summing to ``total``) to integers with the same sum: floors, then
    one more for the largest fractional parts (ties: the smaller size)."""
    fl = np.floor(x)
    deficit = total - fl.sum(axis=1).astype(np.int64)
    order = np.argsort(-(x - fl), axis=1, kind="stable")
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(x.shape[1])[None, :], axis=1)
    out: I64 = (fl + (ranks < deficit[:, None])).astype(np.int64)
    return out


def _estimate_naive(
    level: CocLevel,
    scale: float,
    variance: float,
    max_size: int,
    min_size: int,
    source: RandomSource,
    chunk: int,
    backend: str,
) -> tuple[Runs, int]:
    del backend
    n, width = level.n_nodes, max_size - min_size + 1  # H[min_size .. K]
    ranges = _node_chunks(n, width, chunk)
    sources = source.spawn(len(ranges))
    parts: list[tuple[I64, I64, I64]] = []
    for (v0, v1), src in zip(ranges, sources, strict=True):
        h = _dense(level.truth, v0, v1, min_size, width)
        h += _noise(scale, h.size, src).reshape(h.shape)
        g = level.groups[v0:v1]
        est = _largest_remainder_rows(_project_simplex_rows(h, g), g)
        rows, cols = np.nonzero(est)
        parts.append((rows + v0, cols + min_size, est[rows, cols]))
    node, size, count = (np.concatenate(p) for p in zip(*parts, strict=True))
    return Runs.build(node, size, variance / np.maximum(count, 1), count), n * width


_ESTIMATORS: dict[str, Callable[..., tuple[Runs, int]]] = {
    "cumulative": _estimate_cumulative,
    "unattributed": _estimate_unattributed,
    "naive": _estimate_naive,
}


def estimate_level(
    level: CocLevel,
    *,
    method: str,
    scale: float,
    variance: float,
    max_size: int,
    min_size: int,
    source: RandomSource,
    chunk: int = DEFAULT_CHUNK,
    backend: str = "auto",
) -> tuple[Runs, int]:
    """Estimate every node of ``level`` independently: its groups as runs, and the number of
    noisy entries drawn. ``scale`` is the level's discrete Laplace scale, ``variance`` the
    variance of one draw (both from the accounting)."""
    if method not in _ESTIMATORS:
        raise SpecError(f"method must be one of {', '.join(COC_METHODS)}; got {method!r}")
    if level.truth.size.size and int(level.truth.size.max()) > max_size:
        t = level.truth
        level = CocLevel(
            level.name,
            level.groups,
            level.parent,
            Histograms.build(t.node, np.minimum(t.size, max_size), t.count),
        )
    runs, noised = _ESTIMATORS[method](
        level, scale, variance, max_size, min_size, source, chunk, backend
    )
    if not np.array_equal(
        np.bincount(runs.node, weights=runs.count, minlength=level.n_nodes).astype(np.int64),
        level.groups,
    ):
        raise InternalError("an estimated histogram does not sum to its public number of groups")
    return runs, noised


# ---------------------------------------------------------------------------------------------
# top-down: match, merge


def _ranges(lo: I64, hi: I64) -> tuple[I64, I64]:
    """The concatenation of ``range(lo[i], hi[i])`` and, for each element, its ``i``."""
    lens = hi - lo
    which = np.repeat(np.arange(lo.size), lens)
    within = np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens, lens)
    return lo[which] + within, which


def _match(parent: Runs, child: Runs, child_parent: I64) -> tuple[I64, I64, I64]:
    """Algorithm 2 on every parent at once: matched (parent run, child run, groups) triples.

    Positions: the groups of parent p, sorted by size, and the groups of all its children,
    sorted by size, both fill the same slice of the level (sum of the earlier parents' groups
    up to theirs). A *class* is the children's groups of one size under one parent; a *piece*
    is where a parent run and a class overlap. A class's pieces are split in order among its
    child runs in proportion to what each has left (largest remainder), one round per piece
    rank.
    """
    cpar = child_parent[child.node]
    order = np.lexsort((child.var, child.node, child.size, cpar))
    c_par, c_size, c_cnt = cpar[order], child.size[order], child.count[order]
    n = c_cnt.size
    if n == 0:
        return _EMPTY_I, _EMPTY_I, _EMPTY_I
    c_start = np.cumsum(c_cnt) - c_cnt
    p_start = np.cumsum(parent.count) - parent.count
    total = int(c_cnt.sum())
    if total != int(parent.count.sum()):
        raise InternalError("children and parents hold different numbers of groups")
    new = np.ones(n, dtype=bool)
    new[1:] = (c_par[1:] != c_par[:-1]) | (c_size[1:] != c_size[:-1])
    first = np.flatnonzero(new)
    class_start = c_start[first]
    class_end = np.append(first[1:], n)
    class_rem = np.add.reduceat(c_cnt, first)
    piece_start = np.union1d(class_start, p_start)
    piece_len = np.diff(np.append(piece_start, total))
    piece_prun = np.searchsorted(p_start, piece_start, side="right") - 1
    piece_class = np.searchsorted(class_start, piece_start, side="right") - 1
    if np.any(parent.node[piece_prun] != c_par[first[piece_class]]):
        raise InternalError("a parent's groups and its children's groups do not line up")
    rank = np.arange(piece_start.size) - np.searchsorted(piece_start, class_start)[piece_class]
    rem = c_cnt.copy()
    out_p, out_c, out_n = [], [], []
    by_rank = np.argsort(rank, kind="stable")
    splits = np.searchsorted(rank[by_rank], np.arange(1, int(rank.max()) + 1))
    for act in np.split(by_rank, splits):
        cls = piece_class[act]
        length = piece_len[act]
        left = class_rem[cls]
        ent, which = _ranges(first[cls], class_end[cls])
        num = length[which] * rem[ent]
        floor, frac = np.divmod(num, left[which])
        deficit = length - np.bincount(which, weights=floor, minlength=act.size).astype(np.int64)
        pos = np.lexsort((ent, -frac, which))
        seg_first = np.searchsorted(which[pos], np.arange(act.size))
        rank_in = np.arange(ent.size) - seg_first[which[pos]]
        extra = np.zeros(ent.size, dtype=np.int64)
        extra[pos] = rank_in < deficit[which[pos]]
        alloc = floor + extra
        rem[ent] -= alloc
        class_rem[cls] -= length
        got = alloc > 0
        out_p.append(piece_prun[act][which[got]])
        out_c.append(order[ent[got]])
        out_n.append(alloc[got])
    if np.any(rem != 0):
        raise InternalError("the matching left groups unmatched")
    return np.concatenate(out_p), np.concatenate(out_c), np.concatenate(out_n)


def _merge(sp: F64, vp: F64, sc: F64, vc: F64, merge: str) -> tuple[F64, F64]:
    """Combine a parent's and a child's estimate of the same groups (value, variance)."""
    if merge == "average":
        return (sp + sc) / 2.0, (vp + vc) / 4.0
    with np.errstate(divide="ignore", invalid="ignore"):
        wp, wc = 1.0 / vp, 1.0 / vc
        value = (sp * wp + sc * wc) / (wp + wc)
        var = 1.0 / (wp + wc)
    exact_p, exact_c = vp == 0.0, vc == 0.0
    value = np.where(exact_p & exact_c, (sp + sc) / 2.0, value)
    value = np.where(exact_p & ~exact_c, sp, value)
    value = np.where(exact_c & ~exact_p, sc, value)
    var = np.where(exact_p | exact_c, 0.0, var)
    return value, var


def match_and_merge(
    parent: Runs,
    child: Runs,
    child_parent: I64,
    *,
    merge: str = "weighted",
    min_size: int = 0,
    max_size: int,
) -> Runs:
    """The children's groups after matching them to their parents' (Algorithm 2) and merging
    the two estimates of each matched group (rounded, within ``[min_size, max_size]``).

    Example:
        >>> z = np.zeros
        >>> parent = Runs.build(np.array([0, 0]), np.array([1, 4]), z(2), np.array([2, 1]))
        >>> child = Runs.build(np.array([0, 1]), np.array([2, 3]), np.ones(2), np.array([2, 1]))
        >>> out = match_and_merge(parent, child, np.array([0, 0]), max_size=9)
        >>> out.node.tolist(), out.size.tolist(), out.count.tolist()
        ([0, 1], [1, 4], [2, 1])
    """
    if merge not in MERGES:
        raise SpecError(f"merge must be one of {', '.join(MERGES)}; got {merge!r}")
    p, c, k = _match(parent, child, child_parent)
    value, var = _merge(
        parent.size[p].astype(np.float64),
        parent.var[p],
        child.size[c].astype(np.float64),
        child.var[c],
        merge,
    )
    size = np.clip(np.floor(value + 0.5), min_size, max_size).astype(np.int64)
    return Runs.build(child.node[c], size, var, k)


# ---------------------------------------------------------------------------------------------
# the whole release


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
