"""IntOpt: the integer projection of InfTDA, vectorised over many parents at once.

Each parent's noisy children ``y`` (integers, possibly negative) are replaced by non-negative
integers ``x`` that sum to the parent's value and are as close as possible to ``y`` in
Chebyshev distance (max |x_i - y_i|). Among the many optimal ``x``, the one returned is
exactly the one of the reference algorithm (ALGORITHMS.md section 4, the published ``inf-tda``
0.1 ``int_opt``) with a *stable* sort: the excess is taken from the smallest noisy counts
first, equal counts by position.

How the reference's sequential loop is run for all parents together
--------------------------------------------------------------------
Work in ``x = y + z`` instead of the reference's shift ``z``. Per segment (parent) with
``d`` children and target ``c > 0``::

    a   = ceil((c - sum y) / d)
    x_i = max(y_i + a, 0)                  # sum x >= c; excess E = sum x - c >= 0
    tau = max_i |max(a, -y_i)|
    candidates: x_i > 0, in the order (y ascending, position)

The reference then walks the candidates, lowering each ``x_j`` to
``max(x_j - E_remaining, 0, y_j - tau)``. One walk over all candidates (a *pass*) is a
greedy fill: with ``cap_j = x_j - max(0, y_j - tau)`` and ``P_j`` the inclusive cumulative
sum of ``cap`` in candidate order, the new value is
``max(0, y_j - tau) + min(cap_j, max(0, P_j - E))``, and the segment's excess becomes
``max(0, E - sum cap)``. A segment whose pass did not remove all its excess gets
``tau += max(1, floor(E / g))``, ``g`` the number of its children still above zero, and
another pass over those children. All segments of a chunk do their passes together: the loop
is over passes, never over segments. Passes are few (at most 6 on the reference vectors and
5 on a realistic 20M-children level); after the first one every pass either moves a child to
zero or leaves less excess than children above zero, so ``3 * d + 4`` bounds them (guarded).

The candidate order comes from one packed int64 key per candidate: a per-segment value offset
keeps the segments apart and in order, then the value, then the position in the low bits.
The keys are sorted as the rows of a 2-D array of 256 keys, twice (the second grid shifted by
128 keys), which sorts every segment of at most 129 candidates in two calls of ``np.sort``
(:func:`~inftda_sql.core.sorting.sort_segments`); longer segments are then sorted one by one.
That work is over rows and long segments, never over all segments. When the key bits do not
fit in 63 (huge value ranges) a stable argsort of the key without the position, or as a last resort
``np.lexsort``, is used instead. The input is processed in chunks of whole segments (about
2**17 children each) so that the temporaries stay small and warm in cache; neither the chunks
nor the rows change the result.

Intermediate sums stay in int64: values and targets are limited to +-2**60, ``sum y`` is
computed in two 31-bit halves when it could overflow, cumulative sums may wrap modulo 2**64
but only in-segment differences (which fit) are used, ``tau`` only grows while it is below
``max y`` and never past it, and a segment whose clipped sum could come near 2**63 is
rejected (that sum is at most ``c + d * (1 + (max y - min y) / 4)``). Values up to +-10**12
with 10**7 children in one segment are fine (about 5e18).

The reference package computes the ``tau`` step as ``int((1 / g) * E)`` in floating point;
here it is the exact ``E // g`` of the pseudo-code. They differ only when ``g`` divides ``E``
and the float product rounds down; on the 2,000 reference vectors and on 200,000 random
cases built to hit that (it happened 69 times) the outputs were identical. Its ``a`` is a
float ceiling too, exact while ``|c - sum y| < 2**53``; here it is always exact.
"""

from __future__ import annotations

import itertools
from typing import Literal, NamedTuple

import numpy as np
import numpy.typing as npt

from .._errors import InternalError, SpecError
from .arrays import I64 as Int64Array
from .sorting import SEGMENT_ROW, sort_segments

__all__ = ["intopt"]


#: Largest absolute value accepted for a noisy child or a target (about 1.15e18).
VALUE_LIMIT = 1 << 60
#: Bound on any per-segment sum handled internally.
_SUM_LIMIT = float((1 << 63) - (1 << 59))
#: Children per chunk; chunks are cut at segment boundaries.
_CHUNK = 1 << 17
_ORDERS = ("ascending", "descending")


def intopt(
    y: npt.ArrayLike,
    target: npt.ArrayLike,
    offsets: npt.ArrayLike | None = None,
    *,
    order: Literal["ascending", "descending"] = "ascending",
) -> Int64Array:
    """Project noisy children onto non-negative integers with given parent sums.

    For every segment ``k`` (the children of one parent), the returned ``x`` is
    non-negative, sums to ``target[k]`` and minimises ``max |x_i - y_i|`` over the segment;
    among the optimal solutions it is the one of the reference InfTDA ``int_opt`` with a
    stable sort.

    Args:
        y: The noisy children of all parents, concatenated: a 1-D array of integers (may be
            negative; floats are accepted when they hold whole numbers), each within +-2**60.
        target: The parents' values: one non-negative integer for all segments, or one per
            segment.
        offsets: The start of each segment in ``y``: first 0, strictly increasing (no empty
            segment), all below ``len(y)``. ``None`` means a single segment.
        order: ``"ascending"`` (the reference) takes the excess from the smallest noisy
            counts first; ``"descending"`` from the largest first. In both orders equal noisy
            counts are taken by position, first child first.

    Returns:
        The int64 array ``x``, aligned with ``y``.

    Raises:
        SpecError: An argument is malformed (not integer, negative target, bad offsets,
            wrong number of targets, unknown order, values beyond +-2**60).

    Example:
        >>> intopt([-20, 5, 5], 10)
        array([ 0,  0, 10])
        >>> intopt([3, -1, 4, 7, 2], [6, 9], offsets=[0, 3])
        array([2, 0, 4, 7, 2])
        >>> intopt([3, -1, 4, 7, 2], [6, 9], offsets=[0, 3], order="descending")
        array([3, 0, 3, 7, 2])
    """
    y64, offs, c = _validate(y, target, offsets, order)
    out, _ = _solve(y64, offs, c, descending=order == "descending")
    return out


# --------------------------------------------------------------------------- validation


def _as_int64(name: str, value: npt.ArrayLike) -> Int64Array:
    """Convert to int64, accepting integer dtypes and floats holding whole numbers."""
    arr = np.asarray(value)
    kind = arr.dtype.kind
    if kind == "i":
        return arr.astype(np.int64, copy=False)
    if kind == "u":
        if arr.size and int(arr.max()) > np.iinfo(np.int64).max:
            raise SpecError(f"{name} has values beyond the int64 range; pass smaller integers")
        return arr.astype(np.int64)
    if kind == "f":
        if arr.size:
            bad = ~np.isfinite(arr) | (arr != np.floor(arr))
            if bad.any():
                first = float(arr.flat[int(np.flatnonzero(bad.ravel())[0])])
                raise SpecError(
                    f"{name} must hold integers, got {first!r}; round it (e.g. np.rint) first"
                )
            if np.abs(arr).max() >= 2.0**63:
                raise SpecError(f"{name} has values beyond the int64 range; pass smaller integers")
        return arr.astype(np.int64)
    if kind == "O" and all(
        isinstance(v, int | np.integer) and not isinstance(v, bool) for v in arr.flat
    ):
        try:
            return np.asarray(arr.tolist(), dtype=np.int64)
        except OverflowError:
            raise SpecError(
                f"{name} has values beyond the int64 range; pass smaller integers"
            ) from None
    raise SpecError(
        f"{name} must be an array of integers, got dtype {arr.dtype}; pass int64 values"
    )


def _validate(
    y: npt.ArrayLike, target: npt.ArrayLike, offsets: npt.ArrayLike | None, order: str
) -> tuple[Int64Array, Int64Array, Int64Array]:
    if order not in _ORDERS:
        raise SpecError(f"order must be 'ascending' or 'descending', got {order!r}")
    y64 = np.ascontiguousarray(_as_int64("y", y))
    if y64.ndim != 1:
        raise SpecError(
            f"y must be 1-D (all children concatenated, segments given by offsets), "
            f"got shape {y64.shape}"
        )
    n = y64.shape[0]
    if offsets is None:
        if n == 0:
            raise SpecError("y is empty: a parent needs at least one child")
        offs = np.zeros(1, dtype=np.int64)
    else:
        offs = np.ascontiguousarray(_as_int64("offsets", offsets))
        if offs.ndim != 1:
            raise SpecError(f"offsets must be 1-D, got shape {offs.shape}")
        if offs.shape[0] == 0 and n > 0:
            raise SpecError(f"offsets is empty but y has {n} values; start offsets with 0")
        if offs.shape[0] > 0:
            if offs[0] != 0:
                raise SpecError(f"offsets must start at 0, got {int(offs[0])}")
            steps = np.diff(offs)
            if steps.size and steps.min() <= 0:
                k = int(np.flatnonzero(steps <= 0)[0])
                raise SpecError(
                    f"offsets must be strictly increasing (no empty segment), got "
                    f"offsets[{k}] = {int(offs[k])} then offsets[{k + 1}] = {int(offs[k + 1])}"
                )
            if offs[-1] >= n:
                raise SpecError(
                    f"offsets must be below len(y) = {n} (no empty segment), "
                    f"got {int(offs[-1])} as the last offset"
                )
    m = offs.shape[0]
    c = _as_int64("target", target)
    if c.ndim == 0:
        c = np.full(m, int(c), dtype=np.int64)
    elif c.ndim != 1 or c.shape[0] != m:
        raise SpecError(
            f"target must be a scalar or have one value per segment ({m}), got shape {c.shape}"
        )
    if m:
        low = int(c.min())
        if low < 0:
            k = int(np.argmin(c))
            raise SpecError(f"target must be >= 0, got {low} for segment {k}")
        high = int(c.max())
        if high > VALUE_LIMIT:
            k = int(np.argmax(c))
            raise SpecError(
                f"target must be at most 2**60, got {high} for segment {k}; rescale the counts"
            )
    return y64, offs, np.ascontiguousarray(c)


# --------------------------------------------------------------------------- solver


class _Pending(NamedTuple):
    """Segments with excess left, in candidate order: one row per child still above zero."""

    perm: Int64Array  # positions in ``out``
    xs: Int64Array  # current values
    ys: Int64Array  # noisy values
    sizes: Int64Array  # children per segment (all >= 1)
    tau: Int64Array  # per segment: no child goes below y - tau in the next pass
    excess: Int64Array  # per segment: sum x - target > 0


def _solve(
    y: Int64Array,
    offs: Int64Array,
    c: Int64Array,
    *,
    descending: bool = False,
    chunk: int = _CHUNK,
) -> tuple[Int64Array, int]:
    """Solve all segments of validated input; return ``x`` and the most passes any needed.

    The first pass runs chunk by chunk; the few segments it leaves unfinished are gathered
    from all chunks and finish their passes together.
    """
    n = y.shape[0]
    m = offs.shape[0]
    out = np.empty(n, dtype=np.int64)
    if m == 0:
        return out, 0
    # Chunk boundaries: the first segment starting at or after each multiple of ``chunk``.
    marks = np.arange(0, n, chunk, dtype=np.int64)
    cuts = np.unique(np.append(np.searchsorted(offs, marks, side="left"), m)).tolist()
    pending: list[_Pending] = []
    passes = 0
    for s0, s1 in itertools.pairwise(cuts):
        lo = int(offs[s0])
        hi = int(offs[s1]) if s1 < m else n
        first = _first_pass(
            y[lo:hi], offs[s0:s1] - lo, c[s0:s1], out[lo:hi], descending=descending, seg0=s0
        )
        if first is not None:
            passes = 1
            rest = _one_pass(out[lo:hi], first)
            if rest is not None:
                pending.append(rest._replace(perm=rest.perm + lo))
    if not pending:
        return out, passes
    state: _Pending | None = _Pending(
        *(np.concatenate(parts) for parts in zip(*pending, strict=True))
    )
    limit = 3 * int(np.diff(offs, append=n).max()) + 4
    while state is not None:
        passes += 1
        if passes > limit:
            raise InternalError(f"IntOpt did not converge after {limit} passes")
        state = _one_pass(out, state)
    return out, passes


def _first_pass(
    y: Int64Array,
    offs: Int64Array,
    c: Int64Array,
    out: Int64Array,
    *,
    descending: bool,
    seg0: int,
) -> _Pending | None:
    """Write the shifted and clipped start into ``out``; return the candidates to lower.

    ``None`` when no segment of the chunk has an excess (``out`` is then the answer).
    """
    n = y.shape[0]
    d = np.diff(offs, append=n)
    ymin = np.minimum.reduceat(y, offs)
    ymax = np.maximum.reduceat(y, offs)
    _check_ranges(ymin, ymax, d, c, seg0)

    # a = ceil((c - sum y) / d), without overflowing sum y.
    biggest = max(int(ymax.max()), -int(ymin.min()))
    if biggest * int(d.max()) < (1 << 62):
        a = -((np.add.reduceat(y, offs) - c) // d)
    else:
        a = _shift_split(y, offs, d, c)
    zero = c == 0
    if zero.any():
        a[zero] = -ymax[zero]  # x = max(y - max y, 0) = 0 and no excess
    tau = np.maximum(np.maximum(a, -ymin), -np.maximum(a, -ymax))  # max_i |max(a, -y_i)|

    np.add(y, np.repeat(a, d), out=out)
    np.maximum(out, 0, out=out)
    excess = np.add.reduceat(out, offs) - c
    if int(excess.max()) <= 0:
        return None

    # Candidates: the children above zero, in (segment, value, position) order. Only segments
    # with target 0 have none; segments without excess keep their values in the first pass.
    idx = np.flatnonzero(out > 0)
    count = np.diff(np.searchsorted(idx, offs), append=idx.shape[0])
    some = count > 0
    if not some.all():
        count, ymin, ymax = count[some], ymin[some], ymax[some]
        tau, excess = tau[some], excess[some]
    perm = _candidate_order(y, idx, count, ymin, ymax, descending)
    return _Pending(perm, out[perm], y[perm], count, tau, excess)


def _one_pass(out: Int64Array, state: _Pending) -> _Pending | None:
    """One pass of the reference loop for all pending segments; write the values into ``out``.

    Returns the segments with excess left, their ``tau`` raised, or ``None``.
    """
    perm, xs, ys, count, tau, excess = state
    # floor_j = max(0, y_j - tau); cap_j = x_j - floor_j >= 0
    floor = np.repeat(tau, count)
    np.subtract(ys, floor, out=floor)
    np.maximum(floor, 0, out=floor)
    cap = xs - floor
    cum = np.cumsum(cap)  # may wrap modulo 2**64; only in-segment differences are used
    ends = np.cumsum(count)
    total = cum[ends - 1]
    base = np.empty_like(total)
    base[0] = 0
    base[1:] = total[:-1]
    cum -= np.repeat(base + excess, count)  # in-segment inclusive sum minus the excess
    np.maximum(cum, 0, out=cum)
    np.minimum(cum, cap, out=cum)
    xs = np.add(floor, cum, out=floor)
    del cap, cum
    out[perm] = xs
    excess = excess - (total - base)
    left = excess > 0
    if not left.any():
        return None
    # Next pass: the children still above zero of the segments with excess left.
    starts = ends - count
    if left.all():
        keep = np.flatnonzero(xs > 0)
    else:
        starts, excess, tau = starts[left], excess[left], tau[left]
        keep = _ranges(starts, count[left])
        keep = keep[xs[keep] > 0]
    count = np.diff(np.searchsorted(keep, starts), append=keep.shape[0])
    tau = tau + np.maximum(excess // count, 1)
    return _Pending(perm[keep], xs[keep], ys[keep], count, tau, excess)


def _ranges(starts: Int64Array, lengths: Int64Array) -> Int64Array:
    """The concatenated ranges ``[starts[k], starts[k] + lengths[k])``."""
    shift = starts - (np.cumsum(lengths) - lengths)
    result: Int64Array = np.arange(int(lengths.sum()), dtype=np.int64)
    result += np.repeat(shift, lengths)
    return result


def _check_ranges(
    ymin: Int64Array, ymax: Int64Array, d: Int64Array, c: Int64Array, seg0: int
) -> None:
    """Reject values beyond +-2**60 and segments whose internal sums could overflow."""
    if int(ymin.min()) < -VALUE_LIMIT or int(ymax.max()) > VALUE_LIMIT:
        bad = np.flatnonzero((ymin < -VALUE_LIMIT) | (ymax > VALUE_LIMIT))[0]
        value = int(ymin[bad]) if ymin[bad] < -VALUE_LIMIT else int(ymax[bad])
        raise SpecError(
            f"y must lie within +-2**60, got {value} in segment {seg0 + int(bad)}; "
            "rescale the counts"
        )
    # sum of the clipped x is at most c + d * (1 + (max y - min y) / 4)
    bound = c + d * (1.0 + (ymax - ymin).astype(np.float64) / 4.0)
    if bound.max() > _SUM_LIMIT:
        bad = int(np.argmax(bound))
        raise SpecError(
            f"segment {seg0 + bad} ({int(d[bad])} children from {int(ymin[bad])} to "
            f"{int(ymax[bad])}, target {int(c[bad])}) could overflow int64 sums; "
            "rescale the counts or split the segment"
        )


def _shift_split(y: Int64Array, offs: Int64Array, d: Int64Array, c: Int64Array) -> Int64Array:
    """ceil((c - sum y) / d) per segment for sums that may overflow int64.

    With ``y = hi * 2**31 + lo`` and ``sum hi = q * d + r``:
    ``(c - sum y) / d = (c - r * 2**31 - sum lo) / d - q * 2**31``.
    """
    hi = np.right_shift(y, 31)
    sum_hi = np.add.reduceat(hi, offs)
    np.bitwise_and(y, (1 << 31) - 1, out=hi)
    sum_lo = np.add.reduceat(hi, offs)
    q, r = np.divmod(sum_hi, d)
    rest = c - r * (1 << 31) - sum_lo
    result: Int64Array = -((-rest) // d) - q * (1 << 31)
    return result


def _candidate_order(
    y: Int64Array,
    idx: Int64Array,
    count: Int64Array,
    ymin: Int64Array,
    ymax: Int64Array,
    descending: bool,
    method: Literal["packed", "stable", "lexsort"] | None = None,
    row: int = SEGMENT_ROW,
) -> Int64Array:
    """Sort candidate positions ``idx`` (ascending) by (segment, value, position).

    ``count`` is the number of candidates per segment (all >= 1); ``ymin``/``ymax`` bound
    each segment's values. Descending order reverses the values only: ties stay by position.
    ``method`` forces a strategy (for tests); by default the fastest one that fits is used:
    ``"packed"`` sorts one int64 key (segment value range | value | position),
    ``"stable"`` stable-sorts the key without the position bits, ``"lexsort"`` always fits.
    ``row`` is passed to :func:`~.sorting.sort_segments` by the packed strategy.
    """
    width = ymax - ymin + 1
    pos_bits = max(1, (y.shape[0] - 1).bit_length())
    total_width = float(width.sum(dtype=np.float64))
    if method is None:
        if total_width < float(1 << (63 - pos_bits)):
            method = "packed"
        elif total_width < float(1 << 62):
            method = "stable"
        else:
            method = "lexsort"
    if method == "lexsort":
        seg = np.repeat(np.arange(count.shape[0]), count)
        values = y[idx]
        if descending:
            np.negative(values, out=values)
        by_lexsort: Int64Array = idx[np.lexsort((values, seg))]
        return by_lexsort
    # Disjoint per-segment value ranges [start, start + width) keep the segments in order.
    start = np.cumsum(width) - width
    if descending:
        key = np.repeat(start + ymax, count)
        key -= y[idx]
    else:
        key = np.repeat(start - ymin, count)
        key += y[idx]
    if method == "stable":
        by_stable: Int64Array = idx[np.argsort(key, kind="stable")]
        return by_stable
    key <<= pos_bits
    key |= idx
    sort_segments(key, count, row)
    key &= (1 << pos_bits) - 1
    return key
