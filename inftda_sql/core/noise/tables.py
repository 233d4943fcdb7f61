"""Discrete Gaussian and discrete Laplace tables: built in exact integer arithmetic, drawn from
with vectorised guide-table look-ups; the argument checks shared by the samplers.

The construction and its error bound (every stored boundary within ``1 + 2^-63`` of ``2^128``
times the truncated CDF, a draw within ``DISTANCE_BOUND`` of the exact law) are proved in
``docs/proofs/noise.md`` ("Table method").
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal, localcontext
from fractions import Fraction
from itertools import accumulate
from typing import Any

import numpy as np
import numpy.typing as npt

from ..._errors import InternalError, SpecError
from ..rng import RandomSource

TAIL_T: int = 10
"""The table covers [-K, K] with K = ceil(TAIL_T * sigma) + 1."""

TAIL_BOUND: float = 2.0**-74
"""Proven upper bound on the probability mass outside [-K, K]: (2/t) exp(-t^2/2) < 2^-74."""

DISTANCE_BOUND: float = 2.0**-73
"""Proven bound on the statistical distance between a table draw and the exact law."""

_FRAC_BITS = 256  # fixed-point precision of the table computation (u = 2^-256)
_DECIMAL_DIGITS = 100  # decimal precision of q = exp(-1/(2 sigma^2)) (error 1e-99 << 2^-256)
_GUIDE_BITS_MAX = 22  # guide tables of at most 2^22 uint32 entries (16 MiB)
_WIDE = np.uint32(1 << 31)  # guide flag: the bucket holds two or more boundaries
_DIRECT_BITS = 16  # the direct guide: one int64 per bucket of the top 16 bits of V (512 KiB)
_DIRECT_SHARE = 1 / 16  # built when at most this share of its buckets holds a boundary
_CHUNK = 1 << 18  # draws per vectorised chunk (work arrays stay cache-sized)
_CACHE_MAX_BYTES = 256 << 20  # tables kept for reuse, least recently used evicted first
_M64 = (1 << 64) - 1


@dataclass(frozen=True, eq=False)
class _Table:
    """Inversion table of one sigma: 2K boundaries of 128 bits and a guide over their top bits.

    The discrete Laplace tables have the same layout; their ``sigma`` holds the Laplace scale.
    """

    sigma: float
    k: int  # support is [-k, k]
    hi: npt.NDArray[np.uint64]  # high words of the boundaries T[-k .. k-1], non-decreasing
    lo: npt.NDArray[np.uint64]  # low words
    top: npt.NDArray[np.uint32]  # top 32 bits of each boundary (hi >> 32)
    guide: npt.NDArray[np.uint32]  # per bucket: WIDE flag | count below << shift | bits
    shift: int  # 32 - g: bucket of a 32-bit prefix v is v >> shift
    # per bucket of the top _DIRECT_BITS bits of v: the draw (count below - k) when the bucket
    # holds no boundary, k + 1 when it holds one or more (the guide decides); None where too
    # many buckets hold one for it to pay (large tables)
    direct: npt.NDArray[np.int64] | None

    @property
    def nbytes(self) -> int:
        arrays = (self.hi, self.lo, self.top, self.guide, self.direct)
        return sum(a.nbytes for a in arrays if a is not None)


# ---------------------------------------------------------------------------------------------
# Argument checking
# ---------------------------------------------------------------------------------------------


def _check_sigma(sigma: object, name: str = "sigma") -> npt.NDArray[np.float64]:
    """Return ``sigma`` (or the Laplace ``scale``, per ``name``) as a float64 array (0-d for a
    scalar), or raise SpecError naming the value."""
    if isinstance(sigma, (bool, np.bool_)):
        raise SpecError(f"{name} must be a non-negative finite number, got {sigma!r}")
    try:
        raw = np.asarray(sigma)
    except (TypeError, ValueError) as exc:  # ragged nested sequences
        raise SpecError(f"{name} must be a number or an array of numbers, got {sigma!r}") from exc
    if raw.dtype.kind not in "iuf":
        raise SpecError(
            f"{name} must be a non-negative finite number or an array of them, got {sigma!r} "
            f"(dtype {raw.dtype})"
        )
    arr = raw.astype(np.float64)
    bad = ~(np.isfinite(arr) & (arr >= 0.0))
    if bad.any():
        if arr.ndim == 0:
            raise SpecError(f"{name} must be a non-negative finite number, got {float(arr)!r}")
        pos = tuple(int(i) for i in np.argwhere(bad)[0])
        raise SpecError(
            f"{name} must be non-negative and finite everywhere, got {float(arr[pos])!r} "
            f"at index {pos if len(pos) > 1 else pos[0]} ({int(bad.sum())} bad values)"
        )
    return arr


def _check_size(size: object) -> tuple[int, ...]:
    if isinstance(size, (bool, np.bool_)):
        raise SpecError(f"size must be None, an int or a tuple of ints, got {size!r}")
    if isinstance(size, (int, np.integer)):
        dims: tuple[object, ...] = (size,)
    elif isinstance(size, tuple):
        dims = size
    else:
        raise SpecError(f"size must be None, an int or a tuple of ints, got {size!r}")
    out = []
    for d in dims:
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)) or d < 0:
            raise SpecError(f"size must contain non-negative ints, got {size!r}")
        out.append(int(d))
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# Table construction (exact integer arithmetic)
# ---------------------------------------------------------------------------------------------


def _support_k(sigma: float) -> int:
    """K = ceil(TAIL_T * sigma) + 1, computed exactly."""
    return math.ceil(TAIL_T * Fraction(sigma)) + 1


def _sqrt_ceil(x: Fraction) -> int:
    """ceil(sqrt(x)) for a rational x >= 0, exactly."""
    c = math.isqrt(x.numerator // x.denominator)  # floor(sqrt(x)) = isqrt(floor(x))
    return c if c * c == x else c + 1


def _support_k_sq(sq: Fraction, t: int) -> int:
    """K = ceil(t * s) + 1 for s = sqrt(sq), computed exactly (equals ``_support_k`` for t = 10)."""
    return _sqrt_ceil(t * t * sq) + 1


def _fixed_exp_neg(a: Fraction) -> int:
    """floor(2^F exp(-a)) up to one unit (error <= 2 * 2^-F in value), for rational a >= 0."""
    if a > 1000:  # exp(-1000) < 2^-1442: zero is within 2^-F
        return 0
    with localcontext() as ctx:
        ctx.prec = _DECIMAL_DIGITS
        value = (-(Decimal(a.numerator) / Decimal(a.denominator))).exp()
        return int(value * (Decimal(2) ** _FRAC_BITS))


def _boundaries(sigma: float) -> tuple[int, npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
    """Return K and the high and low words of T[-K .. K-1] (docs/proofs/noise.md)."""
    return _gauss_boundaries(Fraction(sigma) ** 2, TAIL_T)


def _gauss_boundaries(
    sq: Fraction, t: int
) -> tuple[int, npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
    """K and the words of T[-K .. K-1] for the exact rational variance ``sq`` and tail ``t``."""
    f = _FRAC_BITS
    k_max = _support_k_sq(sq, t)
    a = 1 / (2 * sq)
    q = _fixed_exp_neg(a)  # q = exp(-1/(2 sigma^2))
    q2 = _fixed_exp_neg(2 * a)  # q^2
    p = 1 << f
    r = q
    probs = [0] * k_max  # probs[j] = p_{j+1} = q^((j+1)^2)
    for j in range(k_max):
        p = (p * r) >> f
        r = (r * q2) >> f
        probs[j] = p
    return k_max, *_symmetric_words(probs)


def _symmetric_words(
    probs: Sequence[int], center: int | None = None
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
    """High and low words of T[-K .. K-1] for a symmetric law on [-K, K].

    ``probs[j]`` is the fixed-point (F bits) unnormalised mass of ``j + 1`` (and of
    ``-(j + 1)``); the mass of 0 is ``center``, ``2^F`` by default. See docs/proofs/noise.md
    for the error analysis.
    """
    f = _FRAC_BITS
    # tails[i] = R_{K-1-i} = sum_{j >= K-i} p_j, i.e. the mass below -(K-1-i) - 1 = i - K.
    tails = list(accumulate(reversed(probs)))
    z = (1 << f if center is None else center) + 2 * tails[-1]
    s = z.bit_length() + 64
    w = (1 << (s + 128)) // z
    neg = [(x * w) >> s for x in tails]  # T[-K .. -1], non-decreasing
    hi_neg = np.array([y >> 64 for y in neg], dtype=np.uint64)
    lo_neg = np.array([y & _M64 for y in neg], dtype=np.uint64)
    m64 = np.uint64(_M64)
    # T[k] = 2^128 - 1 - T[-k-1] for k = 0 .. K-1: in words, (M - hi, M - lo).
    hi = np.concatenate([hi_neg, (m64 - hi_neg)[::-1]])
    lo = np.concatenate([lo_neg, (m64 - lo_neg)[::-1]])
    return hi, lo


def _build_table(sigma: float) -> _Table:
    k_max, hi, lo = _boundaries(sigma)
    return _table_from_boundaries(sigma, k_max, hi, lo, kind="discrete Gaussian", label="sigma")


def _table_from_boundaries(
    param: float,
    k_max: int,
    hi: npt.NDArray[np.uint64],
    lo: npt.NDArray[np.uint64],
    *,
    kind: str,
    label: str,
) -> _Table:
    """The sampling table (guide included) of a symmetric law on [-k_max, k_max].

    ``hi``/``lo`` are the words of the 2 k_max boundaries; ``param`` is the law's scale
    (``sigma`` of the discrete Gaussian, ``scale`` of the discrete Laplace), named ``label``
    in error messages.
    """
    n = hi.size
    # Lexicographic (hi, lo) order must be non-decreasing: the count formula relies on it.
    up = (hi[1:] > hi[:-1]) | ((hi[1:] == hi[:-1]) & (lo[1:] >= lo[:-1]))
    if n != 2 * k_max or n == 0 or not bool(up.all()):
        raise InternalError(f"{kind} table for {label}={param!r} is not sorted")
    g = min(_GUIDE_BITS_MAX, n.bit_length() + 2)
    if n.bit_length() > g - 1:  # counts must fit below the WIDE flag
        raise InternalError(f"guide table too small for {label}={param!r} ({n} boundaries)")
    shift = 32 - g
    mask = np.uint32((1 << shift) - 1)
    top = (hi >> np.uint64(32)).astype(np.uint32)
    counts = np.bincount((top >> np.uint32(shift)).astype(np.intp), minlength=1 << g)
    below = np.zeros(1 << g, dtype=np.int64)
    np.cumsum(counts[:-1], out=below[1:])
    bits = np.full(1 << g, mask, dtype=np.uint32)  # empty bucket: v & mask is never below
    single = counts == 1
    bits[single] = top[below[single]] & mask
    guide = (below.astype(np.uint32) << np.uint32(shift)) | bits
    guide[counts >= 2] |= _WIDE
    direct = _direct_guide(top, k_max)
    for arr in (hi, lo, top, guide, direct):
        if arr is not None:
            arr.flags.writeable = False
    return _Table(
        sigma=param, k=k_max, hi=hi, lo=lo, top=top, guide=guide, shift=shift, direct=direct
    )


def _direct_guide(
    top: npt.NDArray[np.uint32], k: int, share: float = _DIRECT_SHARE
) -> npt.NDArray[np.int64] | None:
    """The direct guide of a table whose boundaries' top 32 bits are ``top`` (see
    :class:`_Table`), or None when more than ``share`` of its buckets hold a boundary: a
    draw in such a bucket is looked up again in the guide, which would then cost more than
    the direct look-up saves (``benchmarks/bench_sampler.py`` times both)."""
    bucket = (top >> np.uint32(32 - _DIRECT_BITS)).astype(np.intp)
    counts = np.bincount(bucket, minlength=1 << _DIRECT_BITS)
    holding = counts > 0
    if int(holding.sum()) > share * holding.size:
        return None
    direct = np.empty(1 << _DIRECT_BITS, dtype=np.int64)
    direct[0] = -k
    np.cumsum(counts[:-1], out=direct[1:])
    direct[1:] -= k
    direct[holding] = k + 1
    return direct


_cache: OrderedDict[float, _Table] = OrderedDict()
_cache_lock = threading.Lock()


def _cached(cache: OrderedDict[Any, _Table], key: object, build: Callable[[], _Table]) -> _Table:
    """``cache[key]``, built on a miss; the cache is least-recently-used, bounded in bytes."""
    with _cache_lock:
        tab = cache.get(key)
        if tab is not None:
            cache.move_to_end(key)
            return tab
    tab = build()
    with _cache_lock:
        cache[key] = tab
        cache.move_to_end(key)
        total = sum(t.nbytes for t in cache.values())
        while total > _CACHE_MAX_BYTES and len(cache) > 1:
            _, old = cache.popitem(last=False)
            total -= old.nbytes
    return tab


def _table(sigma: float) -> _Table:
    """The table of ``sigma``, from a small least-recently-used cache bounded in bytes."""
    return _cached(_cache, sigma, lambda: _build_table(sigma))


# ---------------------------------------------------------------------------------------------
# Table sampling (vectorised)
# ---------------------------------------------------------------------------------------------


def _words(source: RandomSource, n: int) -> npt.NDArray[np.uint64]:
    """``n`` words of the source as a contiguous native uint64 array (a no-op for ours)."""
    return np.ascontiguousarray(source.words(n), dtype=np.uint64)


def _count_exact(
    tab: _Table, v: npt.NDArray[np.uint32], source: RandomSource
) -> npt.NDArray[np.int64]:
    """#{j : T[j] <= U} for U = v 2^96 + 96 fresh bits: the full 128-bit comparison."""
    m = v.size
    w = _words(source, 2 * m).reshape(m, 2)
    u_hi = (v.astype(np.uint64) << np.uint64(32)) | (w[:, 0] >> np.uint64(32))
    u_lo = (w[:, 0] << np.uint64(32)) | (w[:, 1] >> np.uint64(32))
    left = np.searchsorted(tab.hi, u_hi, side="left").astype(np.int64)
    right = np.searchsorted(tab.hi, u_hi, side="right")
    # Boundaries whose high word equals u_hi: compare the low words (probability <= 2K 2^-64).
    for j in np.flatnonzero(right > left).tolist():
        a, b = int(left[j]), int(right[j])
        left[j] = a + int(np.searchsorted(tab.lo[a:b], u_lo[j], side="right"))
    return left


class _Work:
    """Scratch arrays of one chunk, reused across chunks and tables (fresh memory is slow)."""

    def __init__(self, c: int) -> None:
        self.idx = np.empty(c, dtype=np.intp)
        self.cell = np.empty(c, dtype=np.uint32)
        self.a = np.empty(c, dtype=np.uint32)
        self.b = np.empty(c, dtype=np.uint32)
        self.below = np.empty(c, dtype=np.bool_)
        self.check = np.empty(c, dtype=np.bool_)
        self.flag = np.empty(c, dtype=np.bool_)


def _draw_table(tab: _Table, out: npt.NDArray[np.int64], source: RandomSource) -> None:
    """Fill the 1-d array ``out`` with draws from the table (docs/proofs/noise.md)."""
    n = out.size
    c = min(n, _CHUNK)
    work = _Work(c)
    for start in range(0, n, c):
        _fill_chunk(tab, out[start : start + min(c, n - start)], source, work)


def _fill_chunk(tab: _Table, o: npt.NDArray[np.int64], source: RandomSource, work: _Work) -> None:
    """Fill ``o`` (at most the size of ``work``) with draws from the table."""
    m = o.size
    v = _words(source, (m + 1) // 2).view(np.uint32)[:m]  # top 32 bits of each U
    if tab.direct is None:
        _look_up(tab, v, o, source, work)
        return
    # a bucket of the top bits of v without a boundary decides the draw in one gather; the
    # few draws in buckets holding one are looked up in the guide, in order (so a tie draws
    # its 96 more bits just as it would there)
    ix, flag = work.idx[:m], work.flag[:m]
    np.right_shift(v, np.uint32(32 - _DIRECT_BITS), out=ix, casting="unsafe")
    np.take(tab.direct, ix, out=o, mode="clip")
    np.greater(o, tab.k, out=flag)
    sel = np.flatnonzero(flag)
    if sel.size:
        finer = np.empty(sel.size, dtype=np.int64)
        _look_up(tab, v[sel], finer, source, work)
        o[sel] = finer


def _look_up(
    tab: _Table,
    v: npt.NDArray[np.uint32],
    o: npt.NDArray[np.int64],
    source: RandomSource,
    work: _Work,
) -> None:
    """Write into ``o`` the draws whose top 32 bits are ``v`` (at most the size of ``work``),
    by the guide; a tie with a boundary's top bits draws 96 more bits from ``source``."""
    m = o.size
    shift = np.uint32(tab.shift)
    mask = np.uint32((1 << tab.shift) - 1)
    k = np.int64(tab.k)
    ix, ce, aa, bb = work.idx[:m], work.cell[:m], work.a[:m], work.b[:m]
    bl, ch, fl = work.below[:m], work.check[:m], work.flag[:m]
    np.right_shift(v, shift, out=ix, casting="unsafe")
    np.take(tab.guide, ix, out=ce, mode="clip")
    np.bitwise_and(ce, mask, out=aa)  # remaining bits of the bucket's single boundary
    np.bitwise_and(v, mask, out=bb)  # remaining bits of v
    np.less(aa, bb, out=bl)  # that boundary lies below U
    np.equal(aa, bb, out=ch)  # undecided on 32 bits (or a false alarm, resolved below)
    np.greater_equal(ce, _WIDE, out=fl)
    np.logical_or(ch, fl, out=ch)
    np.right_shift(ce, shift, out=aa)  # boundaries below the bucket
    np.subtract(aa, k, out=o)
    np.add(o, bl, out=o, casting="unsafe")
    sel = np.flatnonzero(ch)
    if sel.size:
        vs = v[sel]
        left = np.searchsorted(tab.top, vs, side="left")
        right = np.searchsorted(tab.top, vs, side="right")
        o[sel] = left - k
        tie = right > left
        if tie.any():
            o[sel[tie]] = _count_exact(tab, vs[tie], source) - k


LAPLACE_TAIL_BITS: int = 75
"""The Laplace table covers [-K, K] with alpha^(K+1) < 2^-LAPLACE_TAIL_BITS."""

_laplace_cache: OrderedDict[float, _Table] = OrderedDict()


def _laplace_support_k(scale: float | Fraction) -> int:
    """K = ceil(75 ln(2) scale) + 1, so (K + 1) / scale > 75 ln 2: alpha^(K+1) < 2^-75.

    The product is computed in 60-digit decimal arithmetic; the ``+ 1`` absorbs its rounding.
    """
    fr = Fraction(scale)
    with localcontext() as ctx:
        ctx.prec = 60
        value = Decimal(fr.numerator) / Decimal(fr.denominator) * LAPLACE_TAIL_BITS
        value *= Decimal(2).ln()
        return int(value.to_integral_value(rounding="ROUND_CEILING")) + 1


def _laplace_boundaries(
    scale: float | Fraction,
) -> tuple[int, npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
    """K and the words of T[-K .. K-1], discrete Laplace of ``scale`` (docs/proofs/noise.md)."""
    f = _FRAC_BITS
    k_max = _laplace_support_k(scale)
    q = _fixed_exp_neg(1 / Fraction(scale))  # alpha = exp(-1/scale)
    p = 1 << f
    probs = [0] * k_max  # probs[j] = alpha^(j+1)
    for j in range(k_max):
        p = (p * q) >> f
        probs[j] = p
    return k_max, *_symmetric_words(probs)


def _build_laplace_table(scale: float) -> _Table:
    k_max, hi, lo = _laplace_boundaries(scale)
    return _table_from_boundaries(scale, k_max, hi, lo, kind="discrete Laplace", label="scale")


def _laplace_table(scale: float) -> _Table:
    """The table of ``scale``, from its own least-recently-used cache bounded in bytes."""
    return _cached(_laplace_cache, scale, lambda: _build_laplace_table(scale))
