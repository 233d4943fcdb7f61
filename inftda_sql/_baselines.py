"""The baselines InfTDA is compared with (the PETS 2025 paper's experiments, and Hay et al.).

Each ``run_*`` function takes the :class:`~inftda_sql._mechanisms.MechanismContext` of a
release and returns a :class:`~inftda_sql.core.topdown.TopDownResult` (leaf codes per chain,
counts, per-level statistics), like InfTDA. Cells always come from the public domain
(``ctx.chains``), noise only from the exact samplers of :mod:`._noise` with ``ctx.source``,
scales only from :mod:`._accounting`, and everything after the noise uses noisy values only.

* ``vanilla_gauss`` (:func:`run_vanilla_gauss`): discrete Gaussian noise on every leaf cell of
  the full domain, zero cells included, with all the leaf level's budget. The released counts
  are integers and unbiased but unconstrained: they CAN BE NEGATIVE, and almost every empty
  cell comes out non-zero (a false positive). Cells whose noisy count is 0 are not stored.
  Coarser levels are sums of the leaves. Refuses domains above ``ctx.max_cells`` leaf cells.
* ``stability_histogram`` (:func:`run_stability_histogram`): discrete Laplace noise on the
  POSITIVE leaf counts only, then noisy counts below a threshold are dropped: no false
  positives, non-negative integers, biased (small counts vanish), no consistency with the
  total. ``(epsilon, delta)``-DP, not zCDP: scale and threshold come from
  :func:`~inftda_sql.core.accounting.stability_histogram` (its docstring has the proof), so the
  budget must be given as ``epsilon`` and ``delta``.
* ``tda_l2`` (:func:`run_tda_l2`): TopDown with a Euclidean projection per parent
  (:func:`l2_optimizer`): the continuous projection onto ``{x >= 0, sum x = target}``
  (:func:`simplex_projection`), rounded to the nearest integers, and the sum fixed by +-1:
  a deficit is added to the largest entries, an excess removed from the smallest positive
  entries first (:func:`round_to_targets`), as in the authors' experiment code. Consistent,
  non-negative integers.
* ``tda_linf_solver`` (:func:`run_tda_linf_solver`): TopDown solving IntOpt's integer
  Chebyshev problem per parent with a black-box MILP solver (:func:`linf_milp_optimizer`,
  ``scipy.optimize.milp``/HiGHS; the optional extra ``inftda-sql[solver]``). Same optimal
  distance as IntOpt, ties broken however the solver does. A Python loop per parent.
* ``hierarchical`` (:func:`run_hierarchical`), Hay et al. (VLDB 2010) for irregular trees with
  unequal variances: discrete Gaussian noise (per-level sigma) on every node of the FULL
  domain tree, then a bottom-up pass (inverse-variance weighting of a node's own noisy count
  and its children's estimates) and a top-down pass (the parent's final value minus the sum
  of its children's estimates, shared in proportion to their variances). The estimates are
  real-valued and may be negative. **Storage rounding**: the final leaf estimates are rounded
  to the nearest integer (half to even) and the non-zero ones stored, negative ones
  included. The real-valued estimates are exactly consistent; after rounding they are NOT:
  the sum of the rounded leaves under a node (which the levels view shows) generally differs
  from that node's own real-valued estimate, and in bounded DP from the public total N.
  Refuses trees above ``ctx.max_cells`` nodes in total (all levels).

Every runner fills one :class:`~inftda_sql.core.topdown.LevelStats` per level (root first):
``parents`` = cells of the level above that the level refines (all of the domain for the
full-domain mechanisms, the surviving ones for TopDown); ``noised_cells`` = cells that went
through the noise step, counted as TopDown counts them (the Stability Histogram reports 0:
how many leaf cells are positive is private); ``surviving_cells`` = cells with a non-zero
released value (for the levels a mechanism does not release itself, the cells whose sum of
released leaves is non-zero); ``sigma`` = the standard deviation of that level's noise (0
where none was drawn).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ._errors import BudgetError, InternalError, SpecError
from .core.accounting import Budget, stability_histogram
from .core.noise import sample_discrete_gaussian, sample_discrete_laplace
from .core.rng import RandomSource
from .core.spec import TreeSpec
from .core.topdown import topdown
from .core.tree import ChainTree, LevelStats, TopDownResult, key_strides

if TYPE_CHECKING:
    from ._mechanisms import MechanismContext

__all__ = [
    "SOLVER_HINT",
    "check_full_domain",
    "l2_optimizer",
    "linf_milp_optimizer",
    "require_epsilon_delta",
    "require_solver",
    "round_to_targets",
    "run_hierarchical",
    "run_stability_histogram",
    "run_tda_l2",
    "run_tda_linf_solver",
    "run_vanilla_gauss",
    "simplex_projection",
]

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]

#: cells per chunk of the full-domain mechanisms (noise drawn and filtered chunk by chunk)
CHUNK_CELLS = 1 << 20
#: how to install the optional MILP solver
SOLVER_HINT = "pip install 'inftda-sql[solver]'"


# ---------------------------------------------------------------------------------------------
# segments (the children of one parent are one contiguous segment)
# ---------------------------------------------------------------------------------------------


def _segments(n: int, offsets: I64) -> tuple[I64, I64]:
    """Length of every segment and the segment of every position."""
    lengths = np.diff(np.append(offsets, n))
    return lengths, np.repeat(np.arange(offsets.size, dtype=np.int64), lengths)


def _check_segments(y: npt.NDArray[Any], targets: I64, offsets: I64) -> None:
    if offsets.size != targets.size or (offsets.size and offsets[0] != 0):
        raise InternalError("segment offsets and targets do not match")
    if offsets.size and (np.any(np.diff(offsets) <= 0) or offsets[-1] >= y.size):
        raise InternalError("segments must be non-empty and in order")
    if np.any(targets < 0):
        raise InternalError("negative parent value")


# ---------------------------------------------------------------------------------------------
# TDA-L2: Euclidean projection per parent, then rounding with a +-1 sum fix
# ---------------------------------------------------------------------------------------------


def simplex_projection(y: npt.ArrayLike, targets: npt.ArrayLike, offsets: npt.ArrayLike) -> F64:
    """Euclidean projection of every segment of ``y`` onto ``{x >= 0, sum x = target}``.

    All segments at once: one stable sort by (segment, value descending), segmented cumulative
    sums, and per segment the largest ``j`` with ``y_(j) - (S_j - c) / j > 0`` (``S_j`` the sum
    of the ``j`` largest values), which gives ``theta = (S_j - c) / j`` and
    ``x = max(y - theta, 0)`` (Held, Wolfe & Crowder 1974; Duchi et al. 2008). The test is
    done in exact integer arithmetic (in float64 if ``|y| * segment length`` could come near
    2^63); only ``theta`` is a float.

    Args:
        y: integers (the noisy children of all parents, concatenated).
        targets: the parents' values, non-negative integers, one per segment.
        offsets: the start of each segment (first 0, strictly increasing).

    Returns:
        The float64 projection, aligned with ``y``.

    Example:
        >>> simplex_projection([5, 1, -3, 4, 4], [4, 9], [0, 3]).tolist()
        [4.0, 0.0, 0.0, 4.5, 4.5]
    """
    yv = np.asarray(y, dtype=np.int64)
    tv = np.asarray(targets, dtype=np.int64)
    ov = np.asarray(offsets, dtype=np.int64)
    n = yv.size
    if n == 0:
        return np.zeros(0, dtype=np.float64)
    _check_segments(yv, tv, ov)
    lengths, seg = _segments(n, ov)
    order = np.lexsort((-yv, seg))  # stable: by segment, then value descending
    # exact int64 arithmetic while |y| * (longest segment) + target stays far below 2^63
    bound = (float(np.abs(yv).max()) + float(tv.max())) * float(lengths.max())
    ys = yv[order] if bound < 2.0**61 else yv[order].astype(np.float64)
    cs = np.cumsum(ys)
    base = cs[ov] - ys[ov]  # sum before each segment
    cs -= np.repeat(base, lengths)
    j = np.arange(1, n + 1, dtype=np.int64) - np.repeat(ov, lengths)
    t = np.repeat(tv, lengths)
    ok = ys * j - (cs - t) > 0  # y_(j) - (S_j - c) / j > 0, times j > 0
    rho = np.maximum.reduceat(np.where(ok, j, 0), ov)
    rho_safe = np.maximum(rho, 1)
    theta = (cs[ov + rho_safe - 1] - tv) / rho_safe
    x = np.maximum(yv - np.repeat(theta, lengths), 0.0)
    x[np.repeat(tv == 0, lengths)] = 0.0
    return x


def _ranks(key_seg: I64, order: I64) -> I64:
    """Rank of every sorted position within its segment (``key_seg`` sorted by ``order``)."""
    s = key_seg[order]
    first = np.searchsorted(s, s, side="left")
    return np.arange(s.size, dtype=np.int64) - first


def round_to_targets(x: npt.ArrayLike, targets: npt.ArrayLike, offsets: npt.ArrayLike) -> I64:
    """Round non-negative reals to integers keeping every segment's sum equal to its target.

    Nearest-integer rounding (half to even), then the difference ``target - sum`` of a segment
    is fixed by +-1 steps: a deficit is added to the largest rounded entries, an excess is
    removed from the smallest POSITIVE rounded entries first (the elimination of small values
    the paper describes); equal entries by position, first first. For ``x`` summing to the
    target the deficit is at most half the segment and the excess at most half its rounded-up
    (hence positive) entries, so one step per entry suffices.

    Example:
        >>> round_to_targets([0.5, 0.5, 2.0, 1.5, 1.5], [3, 3], [0, 3]).tolist()
        [0, 0, 3, 1, 2]
        >>> round_to_targets([1.5, 1.5, 1.0, 0.0], [4], [0]).tolist()
        [2, 2, 0, 0]
    """
    xv = np.asarray(x, dtype=np.float64)
    tv = np.asarray(targets, dtype=np.int64)
    ov = np.asarray(offsets, dtype=np.int64)
    n = xv.size
    r = np.rint(xv).astype(np.int64)
    if n == 0:
        return r
    _check_segments(xv, tv, ov)
    lengths, seg = _segments(n, ov)
    diff = tv - np.add.reduceat(r, ov)
    if not diff.any():
        return r
    pos = np.arange(n, dtype=np.int64)
    d_each = np.repeat(diff, lengths)
    up = np.flatnonzero(d_each > 0)
    if up.size:  # deficit: +1 on the largest entries
        order = np.lexsort((up, -r[up], seg[up]))
        chosen = up[order][_ranks(seg[up], order) < d_each[up][order]]
        r[chosen] += 1
    down = np.flatnonzero((d_each < 0) & (r > 0))
    if down.size:  # excess: -1 on the smallest positive entries
        order = np.lexsort((pos[down], r[down], seg[down]))
        chosen = down[order][_ranks(seg[down], order) < -d_each[down][order]]
        r[chosen] -= 1
    if np.any(np.add.reduceat(r, ov) != tv) or np.any(r < 0):
        raise InternalError("TDA-L2 rounding did not reach the parent values")
    return r


def l2_optimizer(y: I64, targets: I64, offsets: I64) -> I64:
    """TDA-L2's per-level step: :func:`simplex_projection`, then :func:`round_to_targets`."""
    return round_to_targets(simplex_projection(y, targets, offsets), targets, offsets)


# ---------------------------------------------------------------------------------------------
# TDA-Linf with a black-box MILP solver
# ---------------------------------------------------------------------------------------------


def require_solver() -> tuple[Any, Any]:
    """``(scipy.optimize, scipy.sparse)``, or a SpecError naming the extra that provides them."""
    try:
        from scipy import optimize, sparse  # type: ignore[import-untyped, unused-ignore]
    except ImportError as exc:
        raise SpecError(
            "mechanism 'tda_linf_solver' needs scipy (scipy.optimize.milp with HiGHS), which is "
            f"not installed: {SOLVER_HINT}, or use mechanism='inftda' (the same problem solved "
            "by IntOpt, no solver needed)"
        ) from exc
    return optimize, sparse


def _milp_one(scipy: tuple[Any, Any], y: I64, c: int) -> I64:
    """min t s.t. |x_i - y_i| <= t, sum x = c, x >= 0 integer: one parent, by the solver."""
    opt, sp = scipy
    d = y.size
    eye = sp.eye_array(d, format="csr")
    col = sp.csr_array(np.ones((d, 1)))
    a = sp.vstack(
        [
            sp.hstack([eye, -col]),  # x_i - t <= y_i
            sp.hstack([eye, col]),  # x_i + t >= y_i
            sp.csr_array(np.append(np.ones(d), 0.0)[None, :]),  # sum x = c
        ],
        format="csr",
    )
    yf = y.astype(np.float64)
    lb = np.concatenate([np.full(d, -np.inf), yf, [c]])
    ub = np.concatenate([yf, np.full(d, np.inf), [c]])
    res = opt.milp(
        np.append(np.zeros(d), 1.0),
        integrality=np.append(np.ones(d), 0.0),
        bounds=opt.Bounds(np.zeros(d + 1), np.append(np.full(d, float(c)), np.inf)),
        constraints=opt.LinearConstraint(a, lb, ub),
        options={"mip_rel_gap": 0.0},
    )
    if res.x is None or not res.success:
        raise InternalError(f"the MILP solver failed on a parent ({res.status}: {res.message})")
    x: I64 = np.rint(res.x[:d]).astype(np.int64)
    if int(x.sum()) != c or np.any(x < 0):
        raise InternalError("the MILP solver's rounded solution does not sum to the parent")
    return x


def linf_milp_optimizer(y: I64, targets: I64, offsets: I64) -> I64:
    """TDA-Linf's per-level step: the integer Chebyshev problem per parent, by HiGHS.

    ``min max |x_i - y_i|`` over non-negative integers ``x`` with ``sum x = target``, posed as
    a MILP (``t`` continuous, ``x`` integer, relative gap 0) and solved parent by parent;
    parents with value 0 or a single child are set directly.
    """
    scipy = require_solver()
    yv = np.asarray(y, dtype=np.int64)
    tv = np.asarray(targets, dtype=np.int64)
    ov = np.asarray(offsets, dtype=np.int64)
    out = np.zeros(yv.size, dtype=np.int64)
    if yv.size == 0:
        return out
    _check_segments(yv, tv, ov)
    ends = np.append(ov[1:], yv.size)
    for a, b, c in zip(ov.tolist(), ends.tolist(), tv.tolist(), strict=True):
        if c == 0:
            continue
        if b - a == 1:
            out[a] = c
        else:
            out[a:b] = _milp_one(scipy, yv[a:b], c)
    return out


# ---------------------------------------------------------------------------------------------
# the full domain, level by level
# ---------------------------------------------------------------------------------------------


def _level_sizes(spec: TreeSpec, chains: Sequence[ChainTree], level: int) -> tuple[int, ...]:
    """Nodes of every chain at ``level``'s depth."""
    return tuple(ch.sizes[d] for ch, d in zip(chains, spec.levels[level], strict=True))


def _level_cells(spec: TreeSpec, chains: Sequence[ChainTree], level: int) -> int:
    """Cells of ``level`` in the full domain (a Python int: never overflows)."""
    return math.prod(_level_sizes(spec, chains, level))


def check_full_domain(
    mechanism: str, spec: TreeSpec, chains: Sequence[ChainTree], max_cells: int
) -> list[int]:
    """Cells per level of the full domain; a SpecError if ``mechanism`` would exceed
    ``max_cells`` (leaf cells for ``vanilla_gauss``, all nodes for ``hierarchical``)."""
    cells = [_level_cells(spec, chains, lv) for lv in range(spec.n_levels + 1)]
    if mechanism == "hierarchical":
        n, what = sum(cells), "nodes (all levels of the full domain tree)"
    else:
        n, what = cells[-1], "leaf cells (the full domain)"
    if n > max_cells:
        raise SpecError(
            f"mechanism {mechanism!r} noises every cell of the full domain: {n:,} {what} "
            f"exceed max_cells={max_cells:,}; raise max_cells= or use mechanism='inftda'"
        )
    return cells


def _strides(spec: TreeSpec, chains: Sequence[ChainTree], level: int) -> tuple[int, ...]:
    return key_strides(spec, level, [ch.sizes for ch in chains])


def _decode(keys: I64, strides: Sequence[int], sizes: Sequence[int]) -> list[I64]:
    """The code of every chain from mixed-radix keys."""
    return [(keys // st) % sz for st, sz in zip(strides, sizes, strict=True)]


def _dense_true(ctx: MechanismContext, level: int, strides: tuple[int, ...], n: int) -> F64:
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
        strides = _strides(spec, chains, level)
        key = np.zeros(counts.size, dtype=np.int64)
        for c, code in enumerate(current):
            key += code * strides[c]
        n = _level_cells(spec, chains, level)
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


def _leaf_only_stats(
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


def _map_chunks(
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


# ---------------------------------------------------------------------------------------------
# VanillaGauss
# ---------------------------------------------------------------------------------------------


def run_vanilla_gauss(ctx: MechanismContext) -> TopDownResult:
    """Discrete Gaussian noise on every leaf cell of the full domain; keep the non-zero ones.

    The sigma is the leaf level's (``ctx.accounting.level_sigma[-1]``): release() gives this
    mechanism no root level (``RELEASES_ROOT``), so all of rho goes to the leaves, whose sum
    stands for the root.
    """
    spec, chains = ctx.spec, ctx.chains
    cells = check_full_domain("vanilla_gauss", spec, chains, ctx.max_cells)
    t0 = time.perf_counter()
    n_leaf = cells[-1]
    level = spec.n_levels
    sigma = float(ctx.accounting.level_sigma[-1])
    strides = _strides(spec, chains, level)
    sizes = _level_sizes(spec, chains, level)
    keys_true, counts_true = ctx.true_level(level, strides)

    def work(a: int, b: int, source: RandomSource) -> tuple[list[I64], I64]:
        y = np.zeros(b - a, dtype=np.int64)
        lo, hi = np.searchsorted(keys_true, [a, b])
        y[keys_true[lo:hi] - a] = counts_true[lo:hi]
        if sigma > 0:
            y += sample_discrete_gaussian(sigma, b - a, rng=source)
        kept = np.flatnonzero(y)
        return _decode(kept + a, strides, sizes), y[kept]

    codes, values = _map_chunks(ctx, n_leaf, work)
    seconds = time.perf_counter() - t0
    stats = _leaf_only_stats(ctx, cells, codes, values, n_leaf, sigma, seconds)
    return TopDownResult(codes=tuple(codes), counts=values, levels=stats)


# ---------------------------------------------------------------------------------------------
# Stability Histogram
# ---------------------------------------------------------------------------------------------


def require_epsilon_delta(budget: Budget) -> None:
    """The Stability Histogram is calibrated to an ``(epsilon, delta)`` the user gave."""
    if budget.given != "epsilon_delta":
        raise BudgetError(
            "mechanism 'stability_histogram' is (epsilon, delta)-DP, not zCDP: its threshold "
            f"is set for a delta; pass epsilon= and delta= instead of rho={budget.rho!r}"
        )


def run_stability_histogram(ctx: MechanismContext) -> TopDownResult:
    """Discrete Laplace noise on the positive leaf counts; drop noisy counts below the
    threshold (see :func:`~inftda_sql.core.accounting.stability_histogram`)."""
    acct = ctx.accounting
    budget = acct.budget
    require_epsilon_delta(budget)
    params = stability_histogram(
        budget.epsilon,
        budget.delta,
        privacy=acct.privacy,
        contribution=acct.contribution,
        distinct=acct.distinct,
    )
    spec, chains = ctx.spec, ctx.chains
    t0 = time.perf_counter()
    cells = [_level_cells(spec, chains, lv) for lv in range(spec.n_levels + 1)]
    level = spec.n_levels
    strides = _strides(spec, chains, level)
    sizes = _level_sizes(spec, chains, level)
    keys_true, counts_true = ctx.true_level(level, strides)
    n_pos = int(keys_true.size)
    sources = ctx.source.spawn(max(1, -(-n_pos // CHUNK_CELLS)))
    kept_keys, kept_values = [], []
    for i, lo in enumerate(range(0, n_pos, CHUNK_CELLS)):
        hi = min(lo + CHUNK_CELLS, n_pos)
        noisy = counts_true[lo:hi] + sample_discrete_laplace(params.scale, hi - lo, rng=sources[i])
        keep = noisy >= params.threshold
        kept_keys.append(keys_true[lo:hi][keep])
        kept_values.append(noisy[keep])
    keys = np.concatenate(kept_keys) if kept_keys else np.zeros(0, np.int64)
    values = np.concatenate(kept_values) if kept_values else np.zeros(0, np.int64)
    codes = _decode(keys, strides, sizes)
    seconds = time.perf_counter() - t0
    # the standard deviation of the discrete Laplace: sqrt(2a) / (1 - a), a = exp(-1/scale)
    std = 0.0
    if params.scale > 0:
        std = math.sqrt(2.0 * math.exp(-1.0 / params.scale)) / -math.expm1(-1.0 / params.scale)
    stats = _leaf_only_stats(ctx, cells, codes, values, 0, std, seconds)
    return TopDownResult(codes=tuple(codes), counts=values, levels=stats)


# ---------------------------------------------------------------------------------------------
# TDA-L2 and TDA-Linf (black-box solver)
# ---------------------------------------------------------------------------------------------


def run_topdown(
    ctx: MechanismContext, optimizer: Callable[[I64, I64, I64], I64] | None = None
) -> TopDownResult:
    """TopDown over ``ctx`` with ``optimizer`` per level (IntOpt, i.e. InfTDA, when None)."""
    return topdown(
        ctx.spec,
        ctx.chains,
        ctx.true_level,
        ctx.tree_sigmas,
        ctx.total,
        source=ctx.source,
        optimizer=optimizer,
        progress=ctx.progress,
        threads=ctx.threads,
    )


def run_tda_l2(ctx: MechanismContext) -> TopDownResult:
    """TopDown with :func:`l2_optimizer` in place of IntOpt."""
    return run_topdown(ctx, l2_optimizer)


def run_tda_linf_solver(ctx: MechanismContext) -> TopDownResult:
    """TopDown with :func:`linf_milp_optimizer` (HiGHS per parent) in place of IntOpt."""
    require_solver()
    return run_topdown(ctx, linf_milp_optimizer)


# ---------------------------------------------------------------------------------------------
# Hierarchical mechanism (Hay et al. 2010) on the full domain tree
# ---------------------------------------------------------------------------------------------


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
        sizes = _level_sizes(spec, chains, level)
        strides = _strides(spec, chains, level)
        up = _strides(spec, chains, level - 1)
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
        y = _dense_true(ctx, level, _strides(ctx.spec, ctx.chains, level), n)
    if sigma > 0:
        chunks = [(a, min(a + CHUNK_CELLS, n)) for a in range(0, n, CHUNK_CELLS)]
        for (a, b), src in zip(chunks, source.spawn(len(chunks)), strict=True):
            y[a:b] += sample_discrete_gaussian(sigma, b - a, rng=src)
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
    cells = check_full_domain("hierarchical", spec, chains, ctx.max_cells)
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
    strides = _strides(spec, chains, level)
    sizes = _level_sizes(spec, chains, level)
    seg_end = np.cumsum(ref.lengths)
    codes: list[list[I64]] = [[] for _ in chains]
    values: list[I64] = []
    for a in range(0, ref.n, CHUNK_CELLS):
        b = min(a + CHUNK_CELLS, ref.n)
        seg = np.searchsorted(seg_end, np.arange(a, b, dtype=np.int64), side="right")
        x = np.rint(z_leaf[a:b] + adjust[seg]).astype(np.int64)
        kept = np.flatnonzero(x)
        for c, code in enumerate(_decode(kept + a, strides, sizes)):
            codes[c].append(code)
        values.append(x[kept])
    if not values:
        return [np.zeros(0, np.int64) for _ in chains], np.zeros(0, np.int64)
    return [np.concatenate(c) for c in codes], np.concatenate(values)
