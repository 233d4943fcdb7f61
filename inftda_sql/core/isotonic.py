"""Segmented isotonic regression (least squares, pool-adjacent-violators), streamed in chunks.

The count-of-counts estimators fit a non-decreasing sequence to the noisy values of every node
of a level at once: the nodes are *segments* of one long stream of entries, and the fit of each
segment is independent of the others. :class:`SegmentedIsotonic` takes that stream in chunks of
any size (a chunk may hold many small segments or a piece of a huge one) and returns the fit as
*blocks*: runs of entries of one segment sharing one fitted value, the mean of their noisy
values. Memory is bounded by the chunk plus the blocks of the one segment still open.

**Why chunks are exact.** The least-squares isotonic fit of a sequence is unchanged when a run of
entries that lies inside one block of the final fit is replaced by a single entry holding its
mean with its length as weight (pooling is associative). Every block of the fit of a prefix lies
inside a block of the fit of the whole sequence (appending entries only merges blocks, from the
right), so a chunk is fitted after the blocks carried over from the segment's earlier chunks,
each as one weighted entry.

**Two interchangeable backends**, chosen by ``backend=``:

* ``"scipy"``: :func:`scipy.optimize.isotonic_regression` (SciPy >= 1.12, C++ PAV), once per
  chunk for all its segments together: segment ``k``'s values are shifted above everything of
  segment ``k - 1`` (by the ranges of the earlier segments plus one), so the constraints across
  segments never bind and the one fit is the segments' fits side by side (the fit of each
  segment lies within the range of its values).
* ``"numpy"``: our own vectorised PAV, for installations without SciPy. The fit of a segment is
  the vector of slopes of the greatest convex minorant of its cumulative sums (the points
  ``(x_k, W_k)``, ``x_k`` the total weight and ``W_k`` the total of the first ``k`` entries).
  Every pass removes, in all segments at once, each point lying on or above the chord between its
  two neighbours (such a point is not a vertex of the minorant of the remaining points, hence not
  of the original ones); when no point can be removed the remaining points are exactly the
  minorant's vertices and the blocks are the spans between them. Removing a point merges its two
  neighbouring blocks, so a pass pools all adjacent violators at once. A random walk of 100,000
  steps converges in about 20 passes.

``"auto"`` (the default) uses SciPy when it is installed. The unit tests check both backends
against each other and against SciPy on random and adversarial sequences.

**Integer entries** (the noisy counts of the count-of-counts estimators) take neither backend
whole: the numpy backend's passes run in exact int64 arithmetic on the chunk (all its segments
at once), with the blocks kept as their boundaries (stream position, sum of the entries before),
so a pass only drops boundaries. The first pass is on the raw entries (every maximal
non-increasing run of a segment is one block: about half the entries of noisy data); the later
ones compare block means exactly, ``s_i w_j >= s_j w_i``; the blocks are the maximal runs of the
fit's value and a value is a block's exact sum divided by its length. The passes shrink the
blocks geometrically on noisy data (about 0.92 entries more are visited per entry fed); where
a pass stalls (a long increasing run ending in a drop merges one block per pass) the backend
fits the remaining blocks once. Entries whose sums could overflow int64 go to the backend.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .._errors import InternalError, SpecError
from .arrays import F64, I64

__all__ = ["BACKENDS", "Blocks", "SegmentedIsotonic", "isotonic_blocks"]

#: the implementations of the fit (``"auto"``: SciPy when installed, else our numpy PAV)
BACKENDS = ("auto", "scipy", "numpy")


@dataclass(frozen=True)
class Blocks:
    """A segmented isotonic fit as blocks, sorted by (segment, start).

    Block ``i`` covers entries ``start[i] .. start[i] + length[i] - 1`` of segment
    ``segment[i]`` (positions counted from the segment's first entry), all fitted to
    ``value[i]``; the blocks of one segment tile it and their values increase.
    """

    segment: I64
    start: I64
    length: I64
    value: F64

    def dense(self, offsets: I64) -> F64:
        """The fitted values, one per entry (for tests and small inputs).

        Example:
            >>> fit = isotonic_blocks([3, 1, 2, 5, 4], [0, 3, 5])
            >>> fit.dense(np.array([0, 3, 5])).tolist()
            [2.0, 2.0, 2.0, 4.5, 4.5]
        """
        return np.repeat(self.value, self.length)


def _scipy_available() -> bool:
    return importlib.util.find_spec("scipy") is not None


def _backend(name: str) -> str:
    if name not in BACKENDS:
        raise SpecError(f"backend must be one of {', '.join(BACKENDS)}; got {name!r}")
    if name == "auto":
        return "scipy" if _scipy_available() else "numpy"
    if name == "scipy" and not _scipy_available():
        raise SpecError(
            "backend 'scipy' needs SciPy >= 1.12 (pip install scipy); use backend='numpy'"
        )
    return name


# ---------------------------------------------------------------------------------------------
# one chunk: weighted entries of several segments -> the segments' blocks


def _fit_scipy(values: F64, weights: F64, seg_start: I64) -> tuple[I64, F64]:
    """Block starts (indices into ``values``) and block means of the segmented fit."""
    from scipy.optimize import isotonic_regression  # type: ignore[import-untyped, unused-ignore]

    n = values.size
    if seg_start.size > 1:
        lo = np.minimum.reduceat(values, seg_start)
        hi = np.maximum.reduceat(values, seg_start)
        base = np.concatenate(([0.0], np.cumsum(hi - lo + 1.0)[:-1])) - lo
        shift = np.repeat(base, np.diff(np.append(seg_start, n)))
        shifted = values + shift
    else:
        shift, shifted = np.zeros(1), values
    unit = bool(np.all(weights == 1.0))
    result = isotonic_regression(shifted, weights=None if unit else weights, increasing=True)
    starts = np.union1d(np.asarray(result.blocks[:-1], dtype=np.int64), seg_start)
    fitted = np.asarray(result.x, dtype=np.float64)[starts]
    return starts, fitted - (shift[starts] if seg_start.size > 1 else 0.0)


def _fit_numpy(values: F64, weights: F64, seg_start: I64) -> tuple[I64, F64]:
    """The same as :func:`_fit_scipy`, by convex-minorant passes (module docstring)."""
    n, n_seg = values.size, seg_start.size
    seg_of = np.zeros(n, dtype=np.int64)
    seg_of[seg_start[1:]] = 1
    np.cumsum(seg_of, out=seg_of)
    sums = values * weights
    csum_w = np.cumsum(weights)
    csum_s = np.cumsum(sums)
    base_w = (csum_w - weights)[seg_start]
    base_s = (csum_s - sums)[seg_start]
    # the points of segment k: its start point (0, 0), then one after each of its entries
    m = n + n_seg
    x = np.zeros(m)
    w = np.zeros(m)
    kind = np.zeros(m, dtype=np.int8)  # 0 interior, 1 a segment's start, 2 a segment's end
    nxt = np.empty(m, dtype=np.int64)  # the entry a block opened at this point starts with
    after = np.arange(n) + seg_of + 1
    starts_at = seg_start + np.arange(n_seg)
    x[after] = csum_w - base_w[seg_of]
    w[after] = csum_s - base_s[seg_of]
    nxt[after] = np.arange(1, n + 1)
    nxt[starts_at] = seg_start
    kind[starts_at] = 1
    kind[np.append(starts_at[1:] - 1, m - 1)] = 2
    while x.size > 2:
        xl, xi, xr = x[:-2], x[1:-1], x[2:]
        wl, wi, wr = w[:-2], w[1:-1], w[2:]
        drop = (wi - wl) * (xr - xl) >= (wr - wl) * (xi - xl)
        drop &= kind[1:-1] == 0
        if not drop.any():
            break
        keep = np.ones(x.size, dtype=bool)
        keep[1:-1] = ~drop
        x, w, kind, nxt = x[keep], w[keep], kind[keep], nxt[keep]
    # a block from every remaining point but a segment's end to the next remaining point
    opens = np.flatnonzero(kind != 2)
    means = (w[opens + 1] - w[opens]) / (x[opens + 1] - x[opens])
    return nxt[opens], means


_Fit = Callable[[F64, F64, I64], tuple[I64, F64]]

_FITS: dict[str, _Fit] = {
    "scipy": _fit_scipy,
    "numpy": _fit_numpy,
}


# ---------------------------------------------------------------------------------------------
# integer entries: exact pooling rounds

#: a pooling round that removes fewer than this fraction of the blocks left hands them to the
#: backend (a long increasing run ending in a drop merges one block per round otherwise) ...
_STALL_FRACTION = 0.125
#: ... when more than this many are left (below it, a few more rounds cost less than a call)
_STALL_MIN = 4096
#: entries fitted at a time: a chunk fed is fitted in pieces (exact: the open segment's blocks
#: carry over), whose work arrays stay in the cache and are reused, not faulted in afresh
_PIECE = 1 << 17
#: products of sums and weights stay below this in int64 (checked before the integer path)
_INT_LIMIT = 1 << 62


def _descents(
    y: I64, seg_start: I64, lo: int, scratch: I64
) -> tuple[I64, I64, npt.NDArray[np.bool_]]:
    """The first pass, on unit-weight entries: every maximal non-increasing run of a segment
    becomes one block (an entry at least as large as the next one shares its block of the
    fit). Returns the blocks as boundaries (:func:`_pool_rounds`), the chunk starting at
    stream position ``lo``; ``scratch`` holds at least ``y.size`` int64 (reused across chunks:
    no fresh pages per chunk)."""
    n = y.size
    brk = scratch.view(np.bool_)[:n]
    brk[0] = True
    np.greater(y[1:], y[:-1], out=brk[1:])
    brk[seg_start] = True
    starts = np.flatnonzero(brk)
    m = starts.size
    before = scratch[:n]  # the sum of the entries before each one
    before[0] = 0
    np.cumsum(y[:-1], out=before[1:])
    pos = np.empty(m + 1, dtype=np.int64)
    np.add(starts, lo, out=pos[:m])
    pos[m] = lo + n
    cum = np.empty(m + 1, dtype=np.int64)
    np.take(before, starts, out=cum[:m], mode="clip")
    cum[m] = before[-1] + y[-1]
    first = np.zeros(m + 1, dtype=bool)
    first[np.searchsorted(starts, seg_start)] = True
    first[m] = True
    return pos, cum, first


def _pool_rounds(
    pos: I64, cum: I64, first: npt.NDArray[np.bool_], fit: _Fit
) -> tuple[I64, I64, npt.NDArray[np.bool_]]:
    """Pool adjacent violators of integer blocks until their means strictly increase within
    every segment: the blocks of the exact least-squares fit.

    Block ``i`` is the stream positions ``pos[i] .. pos[i+1] - 1``, the entries before it sum to
    ``cum[i]`` and ``first[i]`` marks a segment's first block; the last element of each array
    closes the last block (its ``first`` is True). A round pools every maximal chain of blocks
    whose mean is at least the next one's (compared exactly, ``s_i w_j >= s_j w_i`` in int64):
    such neighbours share a block of the fit (in a block of the fit every suffix has a mean at
    most its value and every prefix at least, so two blocks of the fit with increasing values
    cannot hold them). Pooling only drops boundaries: no sums are recomputed. When a round
    stalls on many blocks, the backend's fit of the blocks (as means with weights) pools them
    instead, once; the rounds then finish exactly.
    """
    backend_used = False
    while pos.size > 2:
        s = np.subtract(cum[1:], cum[:-1])
        w = np.subtract(pos[1:], pos[:-1])
        keep = np.empty(pos.size, dtype=bool)
        keep[0] = keep[-1] = True
        np.less(s[:-1] * w[1:], s[1:] * w[:-1], out=keep[1:-1])  # boundary i kept
        keep |= first
        idx = np.flatnonzero(keep)
        if idx.size == pos.size:
            break
        stalled = (
            not backend_used
            and idx.size > _STALL_MIN
            and idx.size > (1.0 - _STALL_FRACTION) * pos.size
        )
        pos, cum, first = pos[idx], cum[idx], first[idx]
        if stalled:
            backend_used = True
            w = np.diff(pos)
            starts, _ = fit(np.diff(cum) / w, w.astype(np.float64), np.flatnonzero(first[:-1]))
            idx = np.append(starts, pos.size - 1)
            pos, cum, first = pos[idx], cum[idx], first[idx]
    return pos, cum, first


def _as_integers(values: npt.NDArray[Any]) -> I64 | None:
    """``values`` as int64 when they are integers (of any dtype) below 2^53, else None."""
    if values.dtype.kind in "iub":
        return values.astype(np.int64, copy=False)
    if values.dtype.kind != "f" or not np.all(np.isfinite(values)):
        return None
    if np.any(np.abs(values) >= 2.0**53) or np.any(values != np.floor(values)):
        return None
    return values.astype(np.int64)


# ---------------------------------------------------------------------------------------------
# the stream


class SegmentedIsotonic:
    """The isotonic fit of every segment of a stream of entries, fed in order, in chunks.

    Args:
        offsets: segment boundaries in the stream: segment ``k`` is entries
            ``offsets[k] .. offsets[k+1] - 1`` (``offsets[0] == 0``; empty segments allowed).
        backend: ``"auto"``, ``"scipy"`` or ``"numpy"`` (module docstring).

    Feed the entries with :meth:`feed` (consecutive chunks covering the whole stream), then
    read :meth:`blocks`. Integer entries (the noisy counts of the estimators) take the exact
    integer path: the chunk's non-increasing runs pooled, then pooling rounds in int64
    (:func:`_pool_rounds`), the backend only where the rounds stall; a block's value is its
    exact integer sum divided by its length. Other entries (or sums that could overflow) go to
    the backend whole.
    """

    def __init__(self, offsets: I64, *, backend: str = "auto") -> None:
        self.offsets = np.asarray(offsets, dtype=np.int64)
        if self.offsets.size < 1 or self.offsets[0] != 0 or np.any(np.diff(self.offsets) < 0):
            raise InternalError("segment offsets must start at 0 and not decrease")
        self._fit = _FITS[_backend(backend)]
        self._next = 0  # the next entry expected
        self._max_abs = 0  # the largest |entry| fed so far (bounds the integer sums)
        # the blocks of the segment still open: its index, and the blocks as weighted entries
        self._open = -1
        self._carry_start = np.zeros(0, dtype=np.int64)
        self._carry_len = np.zeros(0, dtype=np.int64)
        self._carry_value = np.zeros(0, dtype=np.float64)
        self._carry_sum: I64 | None = np.zeros(0, dtype=np.int64)  # None: not integers
        self._done: list[tuple[I64, I64, I64, F64]] = []
        self._scratch = np.zeros(0, dtype=np.int64)  # the first pass's work space

    @property
    def total(self) -> int:
        """Entries in the stream."""
        return int(self.offsets[-1])

    def feed(self, values: F64 | I64) -> None:
        """Fit the next ``len(values)`` entries of the stream (after the ones fed before)."""
        y = np.asarray(values)
        if self._next + y.size > self.total:
            raise InternalError("more entries fed than the segments hold")
        start = 0
        while start < y.size:
            # the open segment's blocks are fitted again with every piece: a piece at least 8
            # times their number keeps that a small part of the work (a long increasing
            # sequence carries most of its entries as blocks)
            piece = max(_PIECE, 8 * self._carry_len.size)
            self._feed(y[start : start + piece])
            start += piece

    def _feed(self, y: npt.NDArray[Any]) -> None:
        """Fit one piece of the entries fed (:meth:`feed` cuts them)."""
        lo, hi = self._next, self._next + y.size
        self._next = hi
        off = self.offsets
        # segments that have entries in [lo, hi): from the one holding lo to the one holding hi-1
        s0 = int(np.searchsorted(off, lo, side="right")) - 1
        s1 = int(np.searchsorted(off, hi - 1, side="right")) - 1
        segs = np.arange(s0, s1 + 1)
        seg_lo = np.maximum(off[segs], lo)
        seg_hi = np.minimum(off[segs + 1], hi)
        nonempty = seg_hi > seg_lo
        segs, seg_lo = segs[nonempty], seg_lo[nonempty]
        carried = self._carry_len.size if segs[0] == self._open else 0
        if segs[0] != self._open and self._carry_len.size:
            raise InternalError("a segment was left open")  # pragma: no cover
        seg_start = (seg_lo - lo).astype(np.int64)
        ints = _as_integers(y) if self._carry_sum is not None else None
        if ints is not None:
            self._max_abs = max(self._max_abs, int(ints.max()), -int(ints.min()))
            weight = int(self._carry_len[:carried].sum()) + y.size
            if self._max_abs * weight * weight >= _INT_LIMIT:
                ints = None
        sums: I64 | None = None
        if ints is not None:
            pos, length, sums, block_seg = self._fit_integers(ints, seg_start, lo, carried, segs)
            value = sums / length
        else:
            pos, length, value, block_seg = self._fit_floats(y, seg_start, lo, carried, segs)
        last = int(segs[-1])
        still_open = int(off[last + 1]) > hi
        n_open = int(np.count_nonzero(block_seg == last)) if still_open else 0
        n_done = block_seg.size - n_open
        if n_done:
            self._done.append(
                (
                    block_seg[:n_done],
                    pos[:n_done] - off[block_seg[:n_done]],
                    length[:n_done],
                    value[:n_done],
                )
            )
        self._open = last if still_open else -1
        self._carry_start = pos[n_done:]
        self._carry_len = length[n_done:]
        self._carry_value = value[n_done:]
        # integer sums while the open segment has taken the integer path only
        if not n_open:
            self._carry_sum = np.zeros(0, dtype=np.int64)
        else:
            self._carry_sum = None if sums is None else sums[n_done:]

    def _fit_integers(
        self, y: I64, seg_start: I64, lo: int, carried: int, segs: I64
    ) -> tuple[I64, I64, I64, I64]:
        """Blocks (stream position, length, integer sum, segment) of the carried blocks and an
        integer chunk, by exact pooling rounds."""
        if self._scratch.size < y.size:
            self._scratch = np.empty(y.size, dtype=np.int64)
        pos, cum, first = _descents(y, seg_start, lo, self._scratch)
        if carried:
            assert self._carry_sum is not None
            first[0] = False  # the chunk continues the open segment
            head = np.zeros(carried, dtype=bool)
            head[0] = True
            carry_cum = np.cumsum(self._carry_sum[:carried])
            cum += carry_cum[-1]
            cum = np.concatenate(([0], carry_cum[:-1], cum))
            first = np.concatenate((head, first))
            pos = np.concatenate((self._carry_start[:carried], pos))
        pos, cum, first = _pool_rounds(pos, cum, first, self._fit)
        return pos[:-1], np.diff(pos), np.diff(cum), segs[np.cumsum(first[:-1]) - 1]

    def _fit_floats(
        self, y: npt.NDArray[Any], seg_start: I64, lo: int, carried: int, segs: I64
    ) -> tuple[I64, I64, F64, I64]:
        """Blocks (stream position, length, mean, segment) by the backend on float entries."""
        y = y.astype(np.float64, copy=False)
        if carried:
            vals = np.concatenate((self._carry_value[:carried], y))
            wts = np.concatenate((self._carry_len[:carried].astype(np.float64), np.ones(y.size)))
        else:
            vals, wts = y, np.ones(y.size)
        seg_start = seg_start + carried
        seg_start[0] = 0
        starts, means = self._fit(vals, wts, seg_start)
        # entries before each input index, and the stream position of each block's first entry
        cw = np.concatenate(([0], np.cumsum(self._carry_len[:carried])))
        ends = np.append(starts[1:], vals.size)

        def before(idx: I64) -> I64:
            return np.where(idx <= carried, cw[np.minimum(idx, carried)], cw[-1] + idx - carried)

        length = (before(ends) - before(starts)).astype(np.int64)
        pos = np.where(
            starts < carried,
            self._carry_start[np.minimum(starts, max(carried - 1, 0))] if carried else 0,
            lo + starts - carried,
        ).astype(np.int64)
        block_seg = segs[np.searchsorted(seg_start, starts, side="right") - 1]
        return pos, length, means, block_seg

    def blocks(self) -> Blocks:
        """The fit of every non-empty segment (all entries must have been fed)."""
        if self._next != self.total:
            raise InternalError(f"fed {self._next} of {self.total} entries")
        if not self._done:
            empty = np.zeros(0, dtype=np.int64)
            return Blocks(empty, empty, empty, np.zeros(0, dtype=np.float64))
        seg, start, length, value = (
            np.concatenate(parts) for parts in zip(*self._done, strict=True)
        )
        return Blocks(seg, start, length, value)


def isotonic_blocks(
    values: object, offsets: object, *, backend: str = "auto", chunk: int = 1 << 22
) -> Blocks:
    """The least-squares isotonic (non-decreasing) fit of every segment of ``values``.

    Args:
        values: the entries of all segments, concatenated.
        offsets: segment ``k`` is ``values[offsets[k]:offsets[k+1]]``.
        backend: ``"auto"``, ``"scipy"`` or ``"numpy"``.
        chunk: entries fitted at a time (the memory bound).

    Returns:
        The fit as :class:`Blocks`.

    Example:
        >>> fit = isotonic_blocks([3, 1, 2, 5, 4, 0, 1], [0, 3, 5, 7], backend="numpy")
        >>> fit.segment.tolist(), fit.start.tolist(), fit.length.tolist(), fit.value.tolist()
        ([0, 1, 2, 2], [0, 0, 0, 1], [3, 2, 1, 1], [2.0, 4.5, 0.0, 1.0])
    """
    y = np.asarray(values, dtype=np.float64)
    off = np.asarray(offsets, dtype=np.int64)
    stream = SegmentedIsotonic(off, backend=backend)
    for lo in range(0, y.size, max(1, int(chunk))):
        stream.feed(y[lo : lo + chunk])
    return stream.blocks()
