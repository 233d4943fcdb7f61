"""Sums of table draws: the convolution method (discrete Gaussian, ``X = k X1 + X2``) and the
decomposition (discrete Laplace, ``X = m D + E``), for scales above one table's limit.

Both are within ``DISTANCE_BOUND`` of the exact law; proofs in ``docs/proofs/noise.md``
("Convolution method", "Decomposition").
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from ..._errors import InternalError
from ..rng import RandomSource
from .tables import (
    _CHUNK,
    _FRAC_BITS,
    LAPLACE_TAIL_BITS,
    _cached,
    _fill_chunk,
    _fixed_exp_neg,
    _gauss_boundaries,
    _laplace_boundaries,
    _sqrt_ceil,
    _symmetric_words,
    _Table,
    _table_from_boundaries,
    _Work,
)

CONV_TAIL_T: int = 12
"""Tables of the convolution method cover [-K, K] with K = ceil(CONV_TAIL_T * s) + 1."""

CONV_R_MAX: int = 8192
"""Largest scale of a table of the convolution method (K = 98,305, 2.8 MB with its guide)."""

# ---------------------------------------------------------------------------------------------
# Sums of table draws: the convolution method (Gaussian) and the decomposition (Laplace)
# ---------------------------------------------------------------------------------------------

_INT_BOUND = 1 << 62  # every composed draw stays below this in absolute value
_TAU_SQ_MIN = 4  # tau^2 >= 4: eta < 2^-112 (docs/proofs/noise.md)
_LAPLACE_M_MAX = 1 << 16  # largest modulus m of a Laplace decomposition level
_LAPLACE_BOTTOM_MAX = 4096  # decompose the quotient again while its scale exceeds this
_component_cache: OrderedDict[tuple[str, Fraction, int], _Table] = OrderedDict()


@dataclass(frozen=True, eq=False)
class _Level:
    """One level of a composed draw: x <- mult * x + (a draw from ``table``)."""

    mult: int
    table: _Table


@dataclass(frozen=True, eq=False)
class _Composed:
    """A draw is ``bottom``, then each level from the last to the first applied to it."""

    bottom: _Table
    levels: tuple[_Level, ...]  # outermost first
    bound: int  # largest possible |draw|


def _gauss_component(sq: Fraction) -> _Table:
    """The table (tail CONV_TAIL_T) of N_Z(0, sq) for an exact rational variance ``sq``."""

    def build() -> _Table:
        k_max, hi, lo = _gauss_boundaries(sq, CONV_TAIL_T)
        return _table_from_boundaries(
            math.sqrt(sq), k_max, hi, lo, kind="discrete Gaussian component", label="sigma^2"
        )

    return _cached(_component_cache, ("gauss", sq, CONV_TAIL_T), build)


def _conv_split(sq: Fraction) -> tuple[int, Fraction, Fraction]:
    """(k, s2^2, s1^2) with k^2 s1^2 + s2^2 = sq and tau^2 = s1^2 s2^2 / sq >= 4.

    Balanced (s1 = s2, one shared table) while that scale is at most CONV_R_MAX; otherwise
    s2 = CONV_R_MAX and s1 takes the rest (docs/proofs/noise.md).
    """
    r_sq = CONV_R_MAX * CONV_R_MAX
    k = math.isqrt(math.isqrt(sq.numerator // (9 * sq.denominator)))  # floor(sqrt(S / 3))
    if k >= 1 and sq <= (k * k + 1) * r_sq:
        sq1 = sq2 = sq / (k * k + 1)
    else:
        k = CONV_R_MAX // 3
        sq2 = Fraction(r_sq)
        sq1 = (sq - sq2) / (k * k)
    if k < 1 or sq1 <= 0 or sq1 * sq2 < _TAU_SQ_MIN * sq:
        raise InternalError(
            f"convolution split of sigma^2={float(sq)!r} fails tau^2 >= {_TAU_SQ_MIN} "
            f"(k={k}, s2^2={float(sq2)!r}); this is a bug, please report it"
        )
    return k, sq2, sq1


def _gauss_splits(sigma: float) -> tuple[list[tuple[int, Fraction]], Fraction]:
    """The (k, s2^2) of each level, outermost first, and the innermost variance s1^2.

    Split once, then again while the inner scale exceeds CONV_R_MAX.
    """
    sq = Fraction(sigma) ** 2
    splits: list[tuple[int, Fraction]] = []
    while not splits or sq > CONV_R_MAX * CONV_R_MAX:
        k, sq2, sq = _conv_split(sq)
        splits.append((k, sq2))
    return splits, sq


def _gauss_plan(sigma: float) -> _Composed:
    """The convolution plan of ``sigma`` (docs/proofs/noise.md), its tables built or cached."""
    splits, sq = _gauss_splits(sigma)
    levels = [_Level(k, _gauss_component(sq2)) for k, sq2 in splits]
    return _composed(_gauss_component(sq), levels, f"sigma={sigma!r}")


def _laplace_component(scale: Fraction, m: int) -> _Table:
    """The table of E = R1 - R2 on [-(m-1), m-1]: P(E = e) proportional to a^|e| - a^(2m-|e|).

    R1, R2 independent with P(R = r) proportional to a^r on {0, ..., m-1}, a = exp(-1/scale).
    """

    def build() -> _Table:
        f = _FRAC_BITS
        q = _fixed_exp_neg(1 / scale)  # a = exp(-1/scale)
        p = 1 << f
        powers = [p]  # powers[j] = a^j, j = 0 .. 2m
        for _ in range(2 * m):
            p = (p * q) >> f
            powers.append(p)
        probs = [powers[j] - powers[2 * m - j] for j in range(1, m)]
        hi, lo = _symmetric_words(probs, center=powers[0] - powers[2 * m])
        return _table_from_boundaries(
            float(scale), m - 1, hi, lo, kind="difference of truncated geometrics", label="scale"
        )

    return _cached(_component_cache, ("geometric difference", scale, m), build)


def _laplace_bottom(scale: Fraction) -> _Table:
    """The symmetric discrete Laplace table of an exact rational ``scale``."""

    def build() -> _Table:
        k_max, hi, lo = _laplace_boundaries(scale)
        return _table_from_boundaries(
            float(scale), k_max, hi, lo, kind="discrete Laplace", label="scale"
        )

    return _cached(_component_cache, ("laplace", scale, LAPLACE_TAIL_BITS), build)


def _laplace_splits(scale: float) -> list[tuple[Fraction, int]]:
    """The (scale, m) of each decomposition level, outermost first.

    X = m D + R1 - R2 with D of scale b/m, decomposed again while its scale exceeds 4096; the
    innermost D has scale b_d / m_d.
    """
    b = Fraction(scale)
    splits: list[tuple[Fraction, int]] = []
    while not splits or b > _LAPLACE_BOTTOM_MAX:
        m = max(2, min(_sqrt_ceil(52 * b), _LAPLACE_M_MAX))
        splits.append((b, m))
        b = b / m
    return splits


def _laplace_plan(scale: float) -> _Composed:
    """The decomposition plan of ``scale`` (docs/proofs/noise.md), its tables built or cached."""
    splits = _laplace_splits(scale)
    levels = [_Level(m, _laplace_component(b, m)) for b, m in splits]
    b, m = splits[-1]
    return _composed(_laplace_bottom(b / m), levels, f"scale={scale!r}")


def _composed(bottom: _Table, levels: Sequence[_Level], what: str) -> _Composed:
    bound = bottom.k
    for lev in reversed(levels):
        bound = bound * lev.mult + lev.table.k
    if bound >= _INT_BOUND:
        raise InternalError(f"composed draws for {what} could exceed 2^62; this is a bug")
    return _Composed(bottom=bottom, levels=tuple(levels), bound=bound)


def _draw_composed(plan: _Composed, out: npt.NDArray[np.int64], source: RandomSource) -> None:
    """Fill ``out`` with composed draws, chunk by chunk (bounded memory)."""
    n = out.size
    c = min(n, _CHUNK)
    work = _Work(c)
    tmp = np.empty(c, dtype=np.int64)
    for start in range(0, n, c):
        m = min(c, n - start)
        o, t = out[start : start + m], tmp[:m]
        _fill_chunk(plan.bottom, o, source, work)
        for lev in reversed(plan.levels):
            np.multiply(o, lev.mult, out=o)
            _fill_chunk(lev.table, t, source, work)
            np.add(o, t, out=o)
