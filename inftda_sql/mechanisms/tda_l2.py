"""TDA-L2: TopDown with a Euclidean projection per parent, then rounding (a PETS 2025 baseline).

Each level's noisy children are projected onto ``{x >= 0, sum x = parent}``
(:func:`simplex_projection`), rounded to the nearest integers, and the sum fixed by +-1: a
deficit is added to the largest entries, an excess removed from the smallest positive entries
first (:func:`round_to_targets`), as in the authors' experiment code. Consistent, non-negative
integers. zCDP.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from .._errors import InternalError
from ..core.arrays import F64, I64
from ..core.tree import TopDownResult
from ._shared import check_segments, segments
from .base import Mechanism, MechanismContext

__all__ = ["MECHANISM", "l2_optimizer", "round_to_targets", "run_tda_l2", "simplex_projection"]


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
    check_segments(yv, tv, ov)
    lengths, seg = segments(n, ov)
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
    check_segments(xv, tv, ov)
    lengths, seg = segments(n, ov)
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


def run_tda_l2(ctx: MechanismContext) -> TopDownResult:
    """TopDown with :func:`l2_optimizer` in place of IntOpt."""
    return ctx.topdown(l2_optimizer)


MECHANISM = Mechanism(
    name="tda_l2",
    summary="TopDown with a Euclidean projection and rounding per parent",
    run=run_tda_l2,
    topdown_step=l2_optimizer,
    error_analysis="l2_rounded",
)
