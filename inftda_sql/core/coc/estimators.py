"""The per-node estimators of a count-of-counts level (cumulative, unattributed, naive): noisy
counts made non-negative, monotone and summing to each node's public number of groups, streamed
in chunks (:func:`estimate_level`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from queue import Empty, SimpleQueue

import numpy as np

from ..._errors import InternalError, SpecError
from ..accounting import COC_METHODS
from ..arrays import F64, I64
from ..isotonic import SegmentedIsotonic
from ..noise import draw_discrete_laplace
from ..rng import RandomSource
from .histograms import DEFAULT_CHUNK, CocLevel, Histograms, Runs, T


def _noise(scale: float, n: int, source: RandomSource, out: I64 | None = None) -> I64:
    if scale == 0.0:
        if out is None:
            return np.zeros(n, dtype=np.int64)
        out.fill(0)
        return out
    return draw_discrete_laplace(scale, n, source=source, out=out)


class _Buffers:
    """int64 work arrays passed from the noise threads to the fit and back: a level's chunks
    reuse a few arrays instead of faulting fresh pages in for every chunk (a fresh page costs
    about as much as the arithmetic on the entries it holds). Thread-safe."""

    def __init__(self) -> None:
        self._free: SimpleQueue[I64] = SimpleQueue()

    def take(self, n: int) -> I64:
        """An array of ``n`` entries (uninitialised)."""
        try:
            buf = self._free.get_nowait()
        except Empty:
            buf = np.empty(0, dtype=np.int64)
        if buf.size < n:
            buf = np.empty(n, dtype=np.int64)
        return buf[:n]

    def give(self, arr: I64) -> None:
        """Return an array from :meth:`take` (a view of it: its whole buffer is reused)."""
        base = arr.base if isinstance(arr.base, np.ndarray) else arr
        self._free.put(base)


#: threads drawing the noisy chunks ahead of the fit (each chunk has its own random source, so
#: the chunks drawn in parallel are the same draws as drawn one after the other)
NOISE_WORKERS = 2


def _prefetched(
    make: Callable[[T], I64], items: Sequence[T], workers: int | None = None
) -> Iterator[I64]:
    """``make(item)`` for every item, in order, the next ``workers`` ones computed in as many
    threads while the caller works on the current one (the noise, the larger part of the work,
    is drawn on every core while the isotonic fit runs; at most ``workers + 1`` chunks are held).
    """
    if not items:
        return
    workers = NOISE_WORKERS if workers is None else workers
    with ThreadPoolExecutor(max_workers=workers) as pool:
        pending = deque(pool.submit(make, item) for item in items[:workers])
        for nxt in items[workers:]:
            ready = pending.popleft().result()
            pending.append(pool.submit(make, nxt))
            yield ready
        while pending:
            yield pending.popleft().result()


def _node_chunks(n_nodes: int, per_node: int, chunk: int) -> list[tuple[int, int]]:
    """Ranges of whole nodes holding about ``chunk`` entries each (at least one node)."""
    step = max(1, chunk // max(per_node, 1))
    return [(v, min(v + step, n_nodes)) for v in range(0, n_nodes, step)]


def _dense(truth: Histograms, v0: int, v1: int, lo: int, width: int, out: I64 | None = None) -> I64:
    """The true ``H[lo .. lo + width - 1]`` of nodes ``v0 .. v1 - 1`` as a (nodes, width) array
    (written into ``out``, of that shape, when given)."""
    a = int(np.searchsorted(truth.node, v0))
    b = int(np.searchsorted(truth.node, v1))
    node, size, count = truth.node[a:b], truth.size[a:b], truth.count[a:b]
    inside = (size >= lo) & (size < lo + width)
    if out is None:
        out = np.zeros((v1 - v0, width), dtype=np.int64)
    else:
        out.fill(0)
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

    buffers = _Buffers()

    def noisy(item: tuple[tuple[int, int], RandomSource]) -> I64:
        (v0, v1), src = item
        y = buffers.take((v1 - v0) * width)
        hc = _dense(level.truth, v0, v1, min_size, width, out=y.reshape(v1 - v0, width))
        np.cumsum(hc, axis=1, out=hc)
        z = _noise(scale, y.size, src, out=buffers.take(y.size))
        y += z
        buffers.give(z)
        return y

    for y in _prefetched(noisy, list(zip(ranges, sources, strict=True))):
        stream.feed(y)
        buffers.give(y)
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
        z = _noise(scale, y.size, src, out=buffers.take(y.size))
        y += z
        buffers.give(z)
        return y

    buffers = _Buffers()
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
