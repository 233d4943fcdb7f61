"""The discrete Gaussian N_Z(0, sigma^2): draws (table, convolution or rejection) and its pmf."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from ..._errors import SpecError
from ..rng import RandomSource, as_source
from .composed import _draw_composed, _gauss_plan
from .rejection import _draw_rejection
from .tables import _check_sigma, _check_size, _draw_table, _table

SIGMA_TABLE_MAX: float = 65536.0
"""Largest sigma served by one table (2^16: K = 655,361, built in about 0.7 s, 43 MB).

Larger sigmas, up to ``SIGMA_CONV_MAX``, are sums of draws from small tables (the convolution
method, docs/proofs/noise.md)."""

SIGMA_CONV_MAX: float = 2.0**56
"""Largest sigma served by the convolution method (about 7.2e16; every draw stays below 2^62).

Larger sigmas use the exact (slow) rejection sampler of Canonne, Kamath & Steinke."""

SCALE_MAX: float = 2.0**57
"""Largest sigma (and discrete Laplace scale) drawn from: about 1.4e17. The draws are int64;
at this scale one falls outside it with probability below exp(-64) (Laplace; far less for the
Gaussian), and noise this large already hides any count."""

# ---------------------------------------------------------------------------------------------
# Public functions
# ---------------------------------------------------------------------------------------------


def _too_large(name: str, value: float) -> SpecError:
    return SpecError(
        f"{name} must be at most 2**57 (about 1.4e17) so that every draw fits int64, got "
        f"{value!r}; noise that large hides any count: check the budget it was computed from",
        param=name,
    )


def _draw(sigma: float, out: npt.NDArray[np.int64], source: RandomSource) -> None:
    if sigma > SCALE_MAX:
        raise _too_large("sigma", sigma)
    if out.size == 0 or sigma == 0.0:
        out[:] = 0
    elif sigma <= SIGMA_TABLE_MAX:
        _draw_table(_table(sigma), out, source)
    elif sigma <= SIGMA_CONV_MAX:
        _draw_composed(_gauss_plan(sigma), out, source)
    else:
        _draw_rejection(sigma, out, source)


def draw_discrete_gaussian(
    sigma: float, size: int, *, source: RandomSource
) -> npt.NDArray[np.int64]:
    """``size`` draws of N_Z(0, sigma^2) from ``source``: the library's own entry point.

    The mechanisms hold a :class:`~inftda_sql.core.rng.RandomSource` built once per release
    from the user's ``seed=`` (:func:`~inftda_sql.core.rng.as_source`, which accepts only None,
    an int or a numpy Generator); they pass it here, never through the user-facing ``rng=`` of
    :func:`sample_discrete_gaussian`. ``sigma`` is checked as there.
    """
    arr = _check_sigma(sigma)
    if arr.ndim != 0:
        raise SpecError(f"sigma must be one number here, got shape {arr.shape}")
    out = np.empty(math.prod(_check_size(size)), dtype=np.int64)
    _draw(float(arr), out, source)
    return out


@overload
def sample_discrete_gaussian(
    sigma: float | np.floating[Any] | np.integer[Any], size: None = None, *, rng: object = None
) -> np.int64: ...
@overload
def sample_discrete_gaussian(
    sigma: float | np.floating[Any] | np.integer[Any],
    size: int | tuple[int, ...],
    *,
    rng: object = None,
) -> npt.NDArray[np.int64]: ...
@overload
def sample_discrete_gaussian(
    sigma: npt.NDArray[Any] | Sequence[Any],
    size: int | tuple[int, ...] | None = None,
    *,
    rng: object = None,
) -> npt.NDArray[np.int64]: ...


def sample_discrete_gaussian(
    sigma: npt.ArrayLike, size: int | tuple[int, ...] | None = None, *, rng: object = None
) -> npt.NDArray[np.int64] | np.int64:
    """Draw exact discrete Gaussian noise N_Z(0, sigma^2).

    P(X = x) is proportional to exp(-x^2 / (2 sigma^2)) over all integers, with sigma^2 the
    exact square of the float64 ``sigma``. Up to ``SIGMA_TABLE_MAX`` the draws come from a
    128-bit inversion table within statistical distance 2^-73 of that law; up to
    ``SIGMA_CONV_MAX`` (about 7.2e16) from sums k X1 + X2 of draws from small tables, within
    2^-102; above that from the exact rejection sampler of Canonne, Kamath & Steinke (slow).
    All of them are vectorised except the last. See docs/proofs/noise.md.

    Args:
        sigma: The scale, a finite number >= 0, or an array of them (one per draw). 0 gives 0.
        size: Output shape for a scalar ``sigma`` (None: a single ``np.int64``; a 0-d array
            ``sigma`` gives a 0-d array). For an array ``sigma`` it must be None or equal to
            ``sigma``'s shape.
        rng: None (default) for the CSPRNG (:func:`~inftda_sql.core.rng.csprng_bytes`); an
            int seed or a ``numpy.random.Generator`` for reproducible, non-cryptographic draws
            (tests only).

    Returns:
        An ``np.int64`` (scalar ``sigma``, ``size=None``) or an int64 array.

    Raises:
        SpecError: sigma negative, NaN, infinite or not numeric; bad ``size``; bad ``rng``.

    Example:
        >>> sample_discrete_gaussian(0.0)
        np.int64(0)
        >>> sample_discrete_gaussian([0.0, 0.0, 0.0]).tolist()
        [0, 0, 0]
        >>> sample_discrete_gaussian(3.0, size=4, rng=7).dtype
        dtype('int64')
    """
    arr = _check_sigma(sigma)
    if arr.ndim == 0:
        if size is not None:
            shape: tuple[int, ...] | None = _check_size(size)
        else:  # a number gives a number; a 0-d array gives a 0-d array
            shape = () if isinstance(sigma, np.ndarray) else None
        source = as_source(rng)
        out = np.empty(1 if shape is None else math.prod(shape), dtype=np.int64)
        _draw(float(arr), out, source)
        return out[0] if shape is None else out.reshape(shape)
    if size is not None and (dims := _check_size(size)) != arr.shape:
        raise SpecError(
            f"size {dims} does not match the shape {arr.shape} of the sigma array; "
            "pass size=None to draw one value per sigma"
        )
    source = as_source(rng)
    out = np.empty(arr.size, dtype=np.int64)
    _draw_grouped(arr.ravel(), out, source)
    return out.reshape(arr.shape)


_PEEL_MAX = 8  # distinct sigmas split off by masking before falling back to sorting


def _draw_grouped(
    sigmas: npt.NDArray[np.float64],
    out: npt.NDArray[np.int64],
    source: RandomSource,
    draw: Callable[[float, npt.NDArray[np.int64], RandomSource], None] | None = None,
) -> None:
    """One draw per sigma, each group of equal sigmas sampled in one vectorised call of
    ``draw`` (the discrete Gaussian's ``_draw`` by default, ``_draw_laplace`` for Laplace
    scales).

    The first few distinct values are split off with one comparison pass each (cheap for the
    usual handful of levels); any further ones are grouped with ``np.unique`` and a sort.
    """
    if draw is None:
        draw = _draw
    todo: npt.NDArray[np.intp] | None = None  # positions still to draw; None means all
    for _ in range(_PEEL_MAX):
        rest = sigmas if todo is None else sigmas[todo]
        if rest.size == 0:
            return
        value = float(rest[0])
        same = rest == value
        if todo is None and bool(same.all()):
            draw(value, out, source)
            return
        where = np.flatnonzero(same) if todo is None else todo[same]
        draws = np.empty(where.size, dtype=np.int64)
        draw(value, draws, source)
        out[where] = draws
        np.logical_not(same, out=same)
        todo = np.flatnonzero(same) if todo is None else todo[same]
    if todo is None or todo.size == 0:
        return
    values, inverse = np.unique(sigmas[todo], return_inverse=True)
    order = todo[np.argsort(inverse.ravel(), kind="stable")]
    ends = np.cumsum(np.bincount(inverse.ravel(), minlength=values.size))
    draws = np.empty(order.size, dtype=np.int64)
    start = 0
    for value, end in zip(values.tolist(), ends.tolist(), strict=True):
        draw(value, draws[start:end], source)
        start = end
    out[order] = draws


def _normaliser(sigma: float) -> float:
    """Z = sum_x exp(-x^2/(2 sigma^2)) in float64 (relative error ~1e-16)."""
    if sigma >= 1.0:  # Poisson summation: Z = sigma sqrt(2 pi) sum_k exp(-2 pi^2 sigma^2 k^2)
        c = 2.0 * math.pi**2 * sigma * sigma
        theta = 1.0 + 2.0 * sum(math.exp(-c * j * j) for j in (1, 2, 3))
        return sigma * math.sqrt(2.0 * math.pi) * theta
    xs = np.arange(1, 64, dtype=np.float64)
    return 1.0 + 2.0 * float(np.exp(-(xs * xs) / (2.0 * sigma * sigma)).sum())


def _integer_points(x: npt.ArrayLike) -> tuple[npt.NDArray[np.float64], bool]:
    """``x`` as float64 (checked to hold only integers) and whether it was a scalar int."""
    scalar = isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))
    xa = np.asarray(x)
    if xa.dtype.kind not in "iuf" or not bool(np.all(np.isfinite(xa) & (xa == np.round(xa)))):
        raise SpecError(f"x must be an integer or an array of integers, got {x!r}")
    return xa.astype(np.float64), scalar


@overload
def discrete_gaussian_pmf(x: int, sigma: float) -> float: ...
@overload
def discrete_gaussian_pmf(x: npt.ArrayLike, sigma: float) -> npt.NDArray[np.float64]: ...


def discrete_gaussian_pmf(x: npt.ArrayLike, sigma: float) -> npt.NDArray[np.float64] | float:
    """The probability mass function of N_Z(0, sigma^2) in float64.

    Accurate to a few units in the last place (the normaliser uses Poisson summation for
    sigma >= 1 and a direct sum below), for checking samples and for users' error estimates.

    Args:
        x: An integer or an array of integers.
        sigma: The scale, a finite number >= 0 (0 is the point mass at 0).

    Returns:
        A float for an int ``x``, otherwise a float64 array of ``x``'s shape.

    Raises:
        SpecError: bad ``sigma``, or ``x`` not integral.

    Example:
        >>> round(discrete_gaussian_pmf(0, 1.0), 6)
        0.398942
        >>> discrete_gaussian_pmf([-1, 0, 1], 0.0).tolist()
        [0.0, 1.0, 0.0]
    """
    s = _check_sigma(sigma)
    if s.ndim != 0:
        raise SpecError(f"sigma must be a single number here, got an array of shape {s.shape}")
    sig = float(s)
    xf, scalar = _integer_points(x)
    if sig == 0.0:
        res = (xf == 0.0).astype(np.float64)
    else:
        res = np.exp(-(xf * xf) / (2.0 * sig * sig)) / _normaliser(sig)
    return float(res) if scalar else res
