"""The TopDown pass: noise and IntOpt level by level, vectorised over all parents of a level.

Nodes are identified by one integer code per chain (the public domain's codes, see
:func:`~inftda_sql.core.tree.code_paths`). Because the children of a node form a contiguous
code range of the next depth, the children of every surviving parent are generated with
``np.repeat`` and ``cumsum`` from the public domain alone; the true count of each child is found
by a sorted lookup into the level's true counts (computed by the engine), zero where absent.
Then, for all parents at once: ``y = true + discrete Gaussian noise`` and
``x = IntOpt(y, parent value)``; children with ``x > 0`` survive, zeros prune their branch.
Everything after the noise uses only ``y`` and released values (post-processing). A level is
processed in blocks of whole parents cut by their keys (:mod:`.blocks`), to keep memory (and this
machine's slow first touch of fresh pages) in check; under a test seed each block draws from its
own stream keyed by (seed, level, block), so the result does not depend on threads or engine.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import itertools
import math
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from .._errors import InputDataError, SpecError
from .arrays import I64
from .blocks import bucket_width, first_child_keys, parent_blocks, runs
from .intopt import intopt
from .noise import draw_discrete_gaussian
from .rng import RandomSource
from .sorting import sort_order
from .spec import TreeSpec
from .tree import ChainTree, LevelStats, TopDownResult, determined_levels, key_strides

__all__ = [
    "LevelJob",
    "Measure",
    "Optimizer",
    "level_blocks",
    "noisy_root",
    "pass_source",
    "run_level",
    "topdown",
]

# Children per block of parents (:mod:`.blocks`), the unit of work and, under a seed, of a
# random stream: ~1M keeps the working set of a chunk near 50 MB and gives the thread pool
# enough chunks to balance. Changing it changes which stream a child's noise comes from.
CHUNK_CHILDREN = 1 << 20
# Children per part of a block run end to end after the block's noise is drawn (true counts,
# optimizer, survivors): ~2 MB arrays, near a core's L2, so a block's temporaries are not
# streamed through memory (benchmarks/RESULTS.md, "Ninth pass"). Parts change nothing drawn.
PART_CHILDREN = 1 << 18

Optimizer = Callable[[I64, I64, I64], I64]
"""``(y, targets, offsets) -> x``: the per-level post-processing (IntOpt for InfTDA)."""

Measure = Callable[[int, float, Sequence[I64], I64, I64], None]
"""``(level, sigma, codes per chain, noisy values, parents' released values)``: called with
every noisy value a pass draws, before any post-processing (the noisy measurements, see
:mod:`inftda_sql.core.measurements`); from several threads at once."""


def _true_counts(
    keys_sorted: I64, values: I64, first: I64, counts: I64, seg: I64, total: int
) -> I64:
    """True counts of the children of many parents, zero where absent.

    Parent ``p``'s children have the contiguous keys ``first[p] .. first[p] + counts[p] - 1``
    and sit at ``seg[p] ..`` in the output (see :func:`_add_true_counts`).
    """
    y = np.zeros(total, dtype=np.int64)
    _add_true_counts(y, keys_sorted, values, first, counts, seg)
    return y


def _add_true_counts(
    y: I64, keys_sorted: I64, values: I64, first: I64, counts: I64, seg: I64
) -> None:
    """Add the true counts of the children of many parents into ``y`` in place.

    Parent ``p``'s children have the contiguous keys ``first[p] .. first[p] + counts[p] - 1``
    and sit at ``seg[p] ..`` in ``y``: two binary searches per parent find the non-zero ones,
    which are added at their places (no search per child, no pass over the zero children).
    """
    if keys_sorted.size == 0:
        return
    lo = np.searchsorted(keys_sorted, first)
    hi = np.searchsorted(keys_sorted, first + counts)
    m = hi - lo
    n_hits = int(m.sum())
    if n_hits:
        m_start = np.zeros(m.size, dtype=np.int64)
        np.cumsum(m[:-1], out=m_start[1:])
        idx = np.repeat(lo - m_start, m) + np.arange(n_hits, dtype=np.int64)
        pos = keys_sorted[idx] + np.repeat(seg - first, m)
        y[pos] += values[idx]  # the positions are distinct


#: Holes up to this many are skipped slice by slice (:func:`_spread`); more go through a mask.
_SLICED_HOLES = 64


def _spread(noise: I64, total: int, holes: I64) -> I64:
    """``noise`` laid out over ``total`` places in order, skipping the sorted distinct places
    ``holes`` (zero there): the plain ``y = zeros(total); y[mask] = noise`` with ``mask``
    false at ``holes``, without a mask pass when the holes are few and with no copy at all
    when there are none (``noise`` itself is returned)."""
    if holes.size == 0:
        return noise
    y = np.empty(total, dtype=np.int64)
    if holes.size <= _SLICED_HOLES:
        src = 0
        prev = 0
        for h in holes.tolist():
            y[prev:h] = noise[src : src + h - prev]
            src += h - prev
            prev = h + 1
        y[prev:] = noise[src:]
        y[holes] = 0
    else:
        keep = np.ones(total, dtype=bool)
        keep[holes] = False
        y[keep] = noise
        y[holes] = 0
    return y


def pass_source(source: RandomSource) -> RandomSource:
    """The source of one TopDown pass: the next child of ``source`` (itself for the CSPRNG);
    its :meth:`~inftda_sql.core.rng.RandomSource.derive` keys the blocks' streams."""
    return source.spawn(1)[0]


def noisy_root(
    root_total: int, sigma: float, source: RandomSource, measure: Measure | None = None
) -> I64:
    """The root's released value (one entry, none when it came out 0): the true total N, with
    noise from the stream of (level 0, block 0) when ``sigma > 0`` (unbounded DP); ``measure``
    sees the noisy total before it is clamped at 0."""
    root = np.array([root_total], dtype=np.int64)
    if sigma > 0:
        root = root + draw_discrete_gaussian(float(sigma), 1, source=source.derive(0, 0))
        if measure is not None:
            zero = np.zeros(1, dtype=np.int64)
            measure(0, float(sigma), [zero], root.copy(), np.full(1, -1, dtype=np.int64))
        root = np.maximum(root, 0)
    out: I64 = root[root > 0]
    return out


def level_blocks(
    codes: Sequence[I64],
    chain: int,
    child_starts: I64,
    child_counts: I64,
    strides: Sequence[int],
    cells: int,
) -> tuple[I64 | None, list[tuple[int, int, int]]]:
    """Cut a level's parents into blocks (:mod:`.blocks`): the permutation that sorts them by
    key (None when they already are) and the ``(start, stop, block id)`` of every block in
    sorted order. Blocks depend on the parents' keys only, never on chunks or threads."""
    first = first_child_keys(codes, chain, child_starts, strides)
    order: I64 | None = None
    if first.size > 1 and not bool((first[1:] > first[:-1]).all()):
        order = sort_order(first, cells)  # keys below the level's cells, distinct
        first, child_counts = first[order], child_counts[order]
    block = parent_blocks(first, child_counts, bucket_width(cells), CHUNK_CHILDREN)
    return order, runs(block)


@dataclass(frozen=True)
class LevelJob:
    """One level's work, split into chunks of whole parents that run independently (public:
    an engine that runs blocks in its own tasks runs this kernel there,
    :mod:`inftda_sql.engines.spark.topdown`)."""

    chain: int  # the chain this level refines (stride 1 in the level key)
    codes: Sequence[I64]  # per chain, the codes of the surviving parents
    values: I64  # the released values of the surviving parents
    child_starts: I64  # per parent, its first child's code in the refined chain
    child_counts: I64  # per parent, its number of children in the public domain
    strides: tuple[int, ...]
    keys_true: I64
    counts_true: I64
    sigma: float
    optimizer: Optimizer
    measure: Callable[[Sequence[I64], I64, I64], None] | None = None
    """Sees every noisy child before post-processing: codes per chain, noisy values, the
    parents' released values (the level and sigma are bound by :func:`topdown`)."""

    def run(self, chunk: tuple[int, int], source: RandomSource) -> tuple[list[I64], I64, int]:
        """Noise and optimise the children of parents ``chunk[0]:chunk[1]``.

        Returns the codes (per chain) and values of the surviving children, and how many
        children were noised. An only child needs no noise: it is its parent's released value
        whatever it is measured as, so none is drawn for it and its true count is not used.
        The block's noise is drawn in one call (its stream's order); the rest runs over parts
        of whole parents of about ``PART_CHILDREN`` children, whose arrays stay in a core's
        cache (:meth:`_part`): the parts' results are the block's, parent by parent.
        """
        a, b = chunk
        counts = self.child_counts[a:b]
        total = int(counts.sum())
        seg = np.zeros(counts.size, dtype=np.int64)
        np.cumsum(counts[:-1], out=seg[1:])
        lone = np.flatnonzero(counts == 1)  # parents with an only child
        if lone.size == counts.size:  # every child is its parent: no true count, no noise
            return *self._survivors(self.values[a:b].copy(), seg, a, b), 0
        holes = seg[lone]  # the only children's places: no noise drawn for them
        noised = total - int(lone.size)
        noise = None
        if self.sigma > 0:
            noise = draw_discrete_gaussian(self.sigma, noised, source=source)
        cuts = np.unique(np.searchsorted(seg, np.arange(0, total, PART_CHILDREN)))
        bounds = itertools.pairwise([*cuts[cuts < counts.size].tolist(), counts.size])
        parts = [self._part(a, p0, p1, seg, lone, holes, noise) for p0, p1 in bounds]
        if len(parts) == 1:
            codes, values = parts[0]
            return codes, values, noised
        k = len(self.codes)
        out = [np.concatenate([part[0][j] for part in parts]) for j in range(k)]
        return out, np.concatenate([part[1] for part in parts]), noised

    def _part(
        self, a: int, p0: int, p1: int, seg: I64, lone: I64, holes: I64, noise: I64 | None
    ) -> tuple[list[I64], I64]:
        """The surviving children (codes per chain, values) of the block's parents ``p0:p1``
        (``a`` + ``p0:p1`` of the level); ``seg``, ``lone`` and ``holes`` are the block's
        (first child of every parent, parents with an only child, those children's places),
        ``noise`` the block's draws for every other child, in order (None without noise)."""
        lo, hi = a + p0, a + p1
        counts = self.child_counts[lo:hi]
        starts = self.child_starts[lo:hi]
        values = self.values[lo:hi]
        c0 = int(seg[p0])
        total = int(counts.sum())
        part_seg = seg[p0:p1] - c0
        h0, h1 = (int(h) for h in np.searchsorted(holes, [c0, c0 + total]))
        part_holes = holes[h0:h1] - c0
        if noise is not None:  # the noise of children c0.. skips the h0 only children before them
            y = _spread(noise[c0 - h0 : c0 + total - h1], total, part_holes)
        else:
            y = np.zeros(total, dtype=np.int64)
        # the refined chain has stride 1: a parent's children are keys first .. first+count-1
        first = first_child_keys(
            [code[lo:hi] for code in self.codes], self.chain, starts, self.strides
        )
        _add_true_counts(y, self.keys_true, self.counts_true, first, counts, part_seg)
        if self.measure is not None and y.size > part_holes.size:
            self._measure(y, part_holes, starts, part_seg, lo, hi)
        # an only child is its parent: its true count is not used
        l0, l1 = (int(i) for i in np.searchsorted(lone, [p0, p1]))
        y[part_holes] = values[lone[l0:l1] - p0]
        x: I64 | None = None
        # a SpecError is replaced below, outside any handler: not even chained to its message
        with contextlib.suppress(SpecError):
            x = self.optimizer(y, values, part_seg)
        del y
        if x is None:
            # IntOpt names the offending values, and they include true counts (the root total
            # of bounded DP is exact): say what is wrong without them
            raise InputDataError(
                "the counts are too large for IntOpt's exact 64-bit arithmetic (noisy values "
                "beyond +-2**60, or a parent whose children's sums could reach 2**63); count in "
                "larger units (e.g. thousands) or split the input"
            )
        return self._survivors(x, part_seg, lo, hi)

    def _survivors(self, x: I64, seg: I64, lo: int, hi: int) -> tuple[list[I64], I64]:
        """The children above zero of parents ``lo:hi`` of the level, whose released values are
        ``x`` (parent ``p``'s children from ``seg[p]``): their codes per chain and values."""
        kept = np.flatnonzero(x > 0)
        parent = np.searchsorted(seg, kept, side="right") - 1
        starts = self.child_starts[lo:hi]
        out = [
            starts[parent] + (kept - seg[parent]) if j == self.chain else codes[lo:hi][parent]
            for j, codes in enumerate(self.codes)
        ]
        return out, x[kept]

    def _measure(self, y: I64, holes: I64, starts: I64, seg: I64, a: int, b: int) -> None:
        """Hand the noisy children of parents ``a:b`` of the level (the only children, at
        ``holes``, are not measured) to ``measure``."""
        assert self.measure is not None
        if holes.size == 0:
            pos = np.arange(y.size, dtype=np.int64)
        else:
            many = np.ones(y.size, dtype=bool)
            many[holes] = False
            pos = np.flatnonzero(many)
        parent = np.searchsorted(seg, pos, side="right") - 1
        codes = [
            starts[parent] + (pos - seg[parent]) if j == self.chain else codes[a:b][parent]
            for j, codes in enumerate(self.codes)
        ]
        self.measure(codes, y[pos].copy(), self.values[a:b][parent])


def run_level(
    job: LevelJob,
    level: int,
    cells: int,
    source: RandomSource,
    pool: ThreadPoolExecutor | None,
) -> tuple[list[I64], I64, int]:
    """Run one level's ``job`` (its parents in any order) over its blocks: the codes per chain
    and released values of the surviving children, and how many children were noised.

    The parents are put in key order and cut into blocks (:func:`level_blocks`); block ``b``
    draws from ``source.derive(level, b)``, on ``pool``'s threads when there are several, so
    the result depends on neither threads nor engine (the Spark engine's driver-side levels
    run here too, :mod:`inftda_sql.engines.spark.driver`)."""
    c, codes, values = job.chain, job.codes, job.values
    starts, counts = job.child_starts, job.child_counts
    order, blocks = level_blocks(codes, c, starts, counts, job.strides, cells)
    if order is not None:  # parents in key order: blocks are runs of them
        job = dataclasses.replace(
            job,
            codes=[code[order] for code in codes],
            values=values[order],
            child_starts=starts[order],
            child_counts=counts[order],
        )
    chunks = [(a, b) for a, b, _ in blocks]
    sources = [source.derive(level, block) for _, _, block in blocks]
    if len(chunks) > 1 and pool is not None:
        parts = list(pool.map(job.run, chunks, sources))
    else:
        parts = [job.run(chunk, src) for chunk, src in zip(chunks, sources, strict=True)]
    k = len(job.codes)
    out = [
        np.concatenate([p[0][j] for p in parts]) if parts else np.zeros(0, np.int64)
        for j in range(k)
    ]
    released = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0, np.int64)
    return out, released, sum(p[2] for p in parts)


def topdown(
    spec: TreeSpec,
    chains: Sequence[ChainTree],
    true_level: Callable[[int, tuple[int, ...]], tuple[I64, I64]],
    sigmas: Sequence[float],
    root_total: int,
    *,
    source: RandomSource,
    optimizer: Optimizer | None = None,
    progress: Callable[[LevelStats], None] | None = None,
    threads: int = 2,
    measure: Measure | None = None,
) -> TopDownResult:
    """Run TopDown over ``spec``'s levels.

    Args:
        spec: the hierarchy and its levels.
        chains: the public domain of each chain as code ranges.
        true_level: ``(level, strides) -> (sorted keys, counts)``: the true counts of a level.
        sigmas: per level (index 0 = root), the discrete Gaussian sigma; 0 means no noise. The
            root is noised only when ``sigmas[0] > 0`` (unbounded DP). A parent with one child
            in the public domain passes its value to it without noise, so a level determined
            by its parents (which the accounting gives sigma 0) reads no true count at all.
        root_total: the true total N.
        source: the random source of the noise.
        optimizer: ``(y, targets, offsets) -> x`` per level; IntOpt by default.
        progress: called after each level with its statistics.
        threads: blocks of a level processed in parallel (numpy and the CSPRNG release the
            GIL), by one pool for all levels; the next level's true counts are fetched by
            another thread meanwhile. Blocks are cut by the parents' keys (:func:`level_blocks`)
            and, under a seed, each draws from the stream keyed by (seed, level, block), so a
            seeded run gives the same result whatever the thread count, and on any engine that
            forms the same blocks (:mod:`inftda_sql.spark`).
        measure: called with every noisy value drawn, before post-processing (the root's too
            when it is noised); None draws and releases exactly the same.
    """
    opt: Optimizer = optimizer or (lambda y, t, o: intopt(y, t, o))
    # every pass over one source is a fresh child of it: a seeded source reused for several
    # passes (an audit's runs) draws independent noise each time, while a pass on a fresh
    # source (every release) keys its blocks' streams alike on every engine
    source = pass_source(source)
    k = len(spec.chains)
    stats: list[LevelStats] = []

    t0 = time.perf_counter()
    values: I64 = noisy_root(root_total, float(sigmas[0]), source, measure)
    codes: list[I64] = [np.zeros(values.size, dtype=np.int64) for _ in range(k)]
    stats.append(
        LevelStats(
            0,
            "root",
            0,
            int(sigmas[0] > 0),
            int(values.size),
            float(sigmas[0]),
            time.perf_counter() - t0,
        )
    )
    if progress:
        progress(stats[-1])

    sizes = [chain.sizes for chain in chains]

    determined = determined_levels(spec, sizes)
    empty: tuple[I64, I64] = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))

    def level_counts(level: int) -> tuple[I64, I64]:
        if determined[level - 1]:  # every parent passes its value to its lone child
            return empty
        return true_level(level, key_strides(spec, level, sizes))

    with contextlib.ExitStack() as stack:
        # one pool for every level; two more threads fetch the true counts: the next level's
        # while this level's chunks run (they do not depend on what this level releases), and
        # from the start the leaf level's, the costliest, while the levels above are summed
        pool = stack.enter_context(ThreadPoolExecutor(threads)) if threads > 1 else None
        fetcher = stack.enter_context(ThreadPoolExecutor(2))
        last = spec.n_levels
        pending = {level: fetcher.submit(level_counts, level) for level in {1, last} if level}
        for level in range(1, last + 1):
            t0 = time.perf_counter()
            c = spec.refined_chain(level)
            depth = spec.levels[level][c]
            strides = key_strides(spec, level, sizes)
            keys_true, counts_true = pending.pop(level).result()
            if level + 1 < last:
                pending[level + 1] = fetcher.submit(level_counts, level + 1)
            off = chains[c].child_offsets[depth]
            sigma = float(sigmas[level])
            child_counts = off[codes[c] + 1] - off[codes[c]]
            if np.all(child_counts == 1):  # the level repeats its parents: no true count needed
                keys_true, counts_true = empty

            n_parents = int(values.size)
            cells = math.prod(size[d] for size, d in zip(sizes, spec.levels[level], strict=True))
            sink = None
            if measure is not None:
                sink = functools.partial(measure, level, sigma)
            codes, values, noised = run_level(
                LevelJob(
                    c,
                    codes,
                    values,
                    off[codes[c]],
                    child_counts,
                    strides,
                    keys_true,
                    counts_true,
                    sigma,
                    opt,
                    sink,
                ),
                level,
                cells,
                source,
                pool,
            )
            stats.append(
                LevelStats(
                    level,
                    spec.level_name(level),
                    n_parents,
                    noised,
                    int(values.size),
                    sigma,
                    time.perf_counter() - t0,
                )
            )
            if progress:
                progress(stats[-1])
    return TopDownResult(codes=tuple(codes), counts=values, levels=tuple(stats))


#: the per-block kernel under a public name, for engines that run blocks in their own tasks
#: (:mod:`inftda_sql.engines.spark.topdown`)
