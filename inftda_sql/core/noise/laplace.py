"""The discrete Laplace (two-sided geometric) law: draws (table, decomposition or rejection) and
its pmf.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from ..._errors import InternalError, SpecError
from ..rng import RandomSource, as_source
from .composed import _draw_composed, _laplace_plan
from .gaussian import SCALE_MAX, _draw_grouped, _integer_points, _too_large
from .rejection import _Bits
from .tables import _check_sigma, _check_size, _draw_table, _laplace_table

LAPLACE_TABLE_MAX: float = 16384.0
"""Largest discrete Laplace scale served by one table (2^14: K = 851,741, built in about a
second, 48 MB). Larger scales, up to ``LAPLACE_CONV_MAX``, are sums of draws from small tables
(the decomposition, docs/proofs/noise.md)."""

LAPLACE_CONV_MAX: float = 2.0**56
"""Largest discrete Laplace scale served by the decomposition (about 7.2e16). Larger scales use
the exact rejection sampler of Canonne, Kamath & Steinke (Algorithm 2), a Python loop per draw."""


def _laplace_rational(bits: _Bits, t: int, s: int) -> int:
    """An exact draw with P(Y = y) proportional to exp(-|y| s / t) (CKS 2020, Algorithm 2).

    X = U + t V with U uniform on {0 .. t-1} kept with probability exp(-U/t) and V geometric
    (Bernoulli(exp(-1)) trials) is geometric with ratio exp(-1/t); floor(X / s) is geometric
    with ratio exp(-s/t); a fair sign, rejecting "-0", makes it two-sided.
    """
    while True:
        u = bits.below(t)
        if not bits.bernoulli_exp(u, t):
            continue
        v = 0
        while bits.bernoulli_exp(1, 1):
            v += 1
        y = (u + t * v) // s
        negative = bits.bits(1) == 1
        if negative and y == 0:
            continue
        return -y if negative else y


def _draw_laplace(scale: float, out: npt.NDArray[np.int64], source: RandomSource) -> None:
    if scale > SCALE_MAX:
        raise _too_large("scale", scale)
    if out.size == 0 or scale == 0.0:
        out[:] = 0
    elif scale <= LAPLACE_TABLE_MAX:
        _draw_table(_laplace_table(scale), out, source)
    elif scale <= LAPLACE_CONV_MAX:
        _draw_composed(_laplace_plan(scale), out, source)
    else:
        fr = Fraction(scale)
        bits = _Bits(source)
        for i in range(out.size):
            out[i] = _laplace_rational(bits, fr.numerator, fr.denominator)


def _check_scale(scale: object) -> float:
    if isinstance(scale, (bool, np.bool_)) or not isinstance(
        scale, (int, float, np.integer, np.floating)
    ):
        raise SpecError(f"scale must be a non-negative finite number, got {scale!r}")
    value = float(scale)
    if not (math.isfinite(value) and value >= 0.0):
        raise SpecError(f"scale must be a non-negative finite number, got {value!r}")
    return value


def draw_discrete_laplace(
    scale: float,
    size: int,
    *,
    source: RandomSource,
    out: npt.NDArray[np.int64] | None = None,
) -> npt.NDArray[np.int64]:
    """``size`` discrete Laplace draws of ``scale`` from ``source`` (the library's own entry
    point; see :func:`draw_discrete_gaussian`). ``out``, a contiguous 1-d int64 array of
    ``size`` entries, receives the draws instead of a new array (work space reused by a caller
    drawing chunk after chunk); the draws are the same."""
    b = _check_scale(scale)
    n = math.prod(_check_size(size))
    if out is None:
        out = np.empty(n, dtype=np.int64)
    elif out.dtype != np.int64 or out.shape != (n,) or not out.flags.c_contiguous:
        raise InternalError(f"out must be a contiguous int64 array of {n} entries")
    _draw_laplace(b, out, source)
    return out


@overload
def sample_discrete_laplace(
    scale: float | np.floating[Any] | np.integer[Any], size: None = None, *, rng: object = None
) -> np.int64: ...
@overload
def sample_discrete_laplace(
    scale: float | np.floating[Any] | np.integer[Any],
    size: int | tuple[int, ...],
    *,
    rng: object = None,
) -> npt.NDArray[np.int64]: ...
@overload
def sample_discrete_laplace(
    scale: npt.NDArray[Any] | Sequence[Any],
    size: int | tuple[int, ...] | None = None,
    *,
    rng: object = None,
) -> npt.NDArray[np.int64]: ...


def sample_discrete_laplace(
    scale: npt.ArrayLike,
    size: int | tuple[int, ...] | None = None,
    *,
    rng: object = None,
) -> npt.NDArray[np.int64] | np.int64:
    """Draw exact discrete Laplace (two-sided geometric) noise of ``scale``.

    P(X = x) = (1 - a) / (1 + a) * a^|x| with a = exp(-1/scale), over all integers, ``scale``
    read as the exact rational its float denotes. Up to ``LAPLACE_TABLE_MAX`` the draws come
    from a 128-bit inversion table within statistical distance 2^-73 of that law (the same
    construction and bound as the discrete Gaussian's table); up to ``LAPLACE_CONV_MAX``
    (about 7.2e16) from the exact identity X = m D + E with D and E drawn from small tables,
    within the same 2^-73; above that from the exact rejection sampler of Canonne, Kamath &
    Steinke (slow). See docs/proofs/noise.md.

    Args:
        scale: The scale b, a finite number >= 0 (0 gives 0), or an array of them (one per
            draw, each group of equal scales drawn in one vectorised call). The variance is
            2a / (1-a)^2.
        size: Output shape for a scalar ``scale`` (None: a single ``np.int64``). For an array
            ``scale`` it must be None or equal to ``scale``'s shape.
        rng: None (default) for the CSPRNG (:func:`~inftda_sql.core.rng.csprng_bytes`); an
            int seed or a ``numpy.random.Generator`` for reproducible, non-cryptographic draws
            (tests only).

    Returns:
        An ``np.int64`` (scalar ``scale``, ``size=None``) or an int64 array.

    Raises:
        SpecError: scale negative, NaN, infinite or not a number; bad ``size``; bad ``rng``.

    Example:
        >>> sample_discrete_laplace(0.0)
        np.int64(0)
        >>> sample_discrete_laplace(2.0, size=3, rng=7).dtype
        dtype('int64')
        >>> sample_discrete_laplace([0.0, 0.0]).tolist()
        [0, 0]
    """
    if np.ndim(scale) > 0:
        arr = _check_sigma(scale, "scale")
        if size is not None and (dims := _check_size(size)) != arr.shape:
            raise SpecError(
                f"size {dims} does not match the shape {arr.shape} of the scale array; "
                "pass size=None to draw one value per scale"
            )
        source = as_source(rng)
        draws = np.empty(arr.size, dtype=np.int64)
        _draw_grouped(arr.ravel(), draws, source, _draw_laplace)
        return draws.reshape(arr.shape)
    b = _check_scale(scale)
    shape = None if size is None else _check_size(size)
    source = as_source(rng)
    out = np.empty(1 if shape is None else math.prod(shape), dtype=np.int64)
    _draw_laplace(b, out, source)
    return out[0] if shape is None else out.reshape(shape)


@overload
def discrete_laplace_pmf(x: int, scale: float) -> float: ...
@overload
def discrete_laplace_pmf(x: npt.ArrayLike, scale: float) -> npt.NDArray[np.float64]: ...


def discrete_laplace_pmf(x: npt.ArrayLike, scale: float) -> npt.NDArray[np.float64] | float:
    """The probability mass function of the discrete Laplace of ``scale`` in float64.

    Args:
        x: An integer or an array of integers.
        scale: The scale, a finite number >= 0 (0 is the point mass at 0).

    Returns:
        A float for an int ``x``, otherwise a float64 array of ``x``'s shape.

    Raises:
        SpecError: bad ``scale``, or ``x`` not integral.

    Example:
        >>> round(discrete_laplace_pmf(0, 1.0), 6)
        0.462117
        >>> discrete_laplace_pmf([-1, 0, 1], 0.0).tolist()
        [0.0, 1.0, 0.0]
    """
    b = _check_scale(scale)
    xf, is_scalar = _integer_points(x)
    xf = np.abs(xf)
    if b == 0.0:
        res = (xf == 0.0).astype(np.float64)
    else:
        one_minus_a = -math.expm1(-1.0 / b)
        res = one_minus_a / (2.0 - one_minus_a) * np.exp(-xf / b)
    return float(res) if is_scalar else res
