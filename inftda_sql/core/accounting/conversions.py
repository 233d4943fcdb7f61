"""Conversions between ``rho``-zCDP and ``(epsilon, delta)``-DP, and zCDP composition.

Two conversions exist (:data:`~inftda_sql.core.accounting.CONVERSIONS`): ``"simple"`` (Bun &
Steinke 2016, Prop. 1.3) and ``"tight"`` (Canonne, Kamath & Steinke 2020, Cor. 13, the default).
Every result rounds in the private direction (see :mod:`inftda_sql.core.accounting`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from fractions import Fraction

from ._common import (
    _MAX_BISECTIONS,
    _REL_TOL,
    _U_MAX,
    Conversion,
    _check_conversion,
    _check_delta,
    _check_nonneg,
)


def _simple_log_delta(rho: float, epsilon: float) -> float:
    """log delta of the Bun & Steinke bound: delta = exp(-(epsilon - rho)^2 / (4 rho))."""
    if rho == 0.0 or math.isinf(epsilon):
        return -math.inf
    if math.isinf(rho) or epsilon <= rho:
        return 0.0
    return -((epsilon - rho) ** 2) / (4.0 * rho)


def _log_ratio(u: float) -> float:
    """``log(t / (1 + t))`` for ``t = exp(u)``, without cancellation for large ``t``."""
    if u > 0.0:
        return -math.log1p(math.exp(-u))
    return u - math.log1p(math.exp(u))


def _tight_log_delta(rho: float, epsilon: float) -> float:
    """log delta of Canonne, Kamath & Steinke (2020), Cor. 13, minimised over the order a.

    With ``a = 1 + t``, ``t = exp(u)`` and ``r(u) = log(t / (1 + t)) = log(1 - 1/a)``, the
    bound reads, for any a > 1,

        log delta(a) = t ((rho - epsilon) + t rho + r(u)) - log1p(t),

    which has no cancellation near a = 1 (small t), none for large t (``r`` is computed as
    ``-log1p(1/t)``), and no overflow. Its derivative in a,
    ``(2a - 1) rho - epsilon + log(1 - 1/a) = (rho - epsilon) + 2 t rho + r(u)``, increases
    in u, so the minimiser is found by bisection on the sign of the derivative. Any a gives a
    valid upper bound on delta, so an imprecise minimiser can only overstate delta.
    """
    if rho == 0.0 or math.isinf(epsilon):
        return -math.inf
    if math.isinf(rho):
        return 0.0
    gap = rho - epsilon

    def derivative(u: float) -> float:
        return gap + 2.0 * math.exp(u) * rho + _log_ratio(u)

    # The optimum satisfies a <= (epsilon + 1) / (2 rho) + 2, where the derivative is > 0.
    t_max = (epsilon + 1.0) / (2.0 * rho) + 1.0
    u_hi = min(math.log(t_max), _U_MAX)
    # At u_lo the derivative is about gap + u_lo = -60 < 0 (move further down for huge rho).
    u_lo = min(-60.0, -gap - 60.0)
    while derivative(u_lo) >= 0.0 and u_lo > -1e300:  # pragma: no cover - rho > 1e27
        u_lo *= 2.0
    _, u_hi = _bisect(lambda u: derivative(u) < 0.0, u_lo, u_hi)
    t = math.exp(u_hi)
    log_delta = t * (gap + t * rho + _log_ratio(u_hi)) - math.log1p(t)
    return min(log_delta, 0.0)


def _bisect(
    on_lo_side: Callable[[float], bool], lo: float, hi: float, rel_tol: float = 0.0
) -> tuple[float, float]:
    """Shrink ``[lo, hi]`` around the point where ``on_lo_side`` turns False.

    Stops at a relative width of ``rel_tol`` (0: until the midpoint is a bracket end, i.e. to
    float precision) or after ``_MAX_BISECTIONS`` steps; returns the final bracket.
    """
    for _ in range(_MAX_BISECTIONS):
        if hi - lo <= rel_tol * hi:
            break
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if on_lo_side(mid):
            lo = mid
        else:
            hi = mid
    return lo, hi


def _log_delta(rho: float, epsilon: float, conversion: Conversion) -> float:
    if conversion == "simple":
        return _simple_log_delta(rho, epsilon)
    return _tight_log_delta(rho, epsilon)


def rho_to_delta(rho: float, epsilon: float, conversion: str = "tight") -> float:
    """The delta at which ``rho``-zCDP implies ``(epsilon, delta)``-DP.

    Args:
        rho: zCDP parameter, ``>= 0`` (``inf`` gives ``delta = 1``).
        epsilon: target epsilon, ``>= 0`` (``inf`` gives ``delta = 0``).
        conversion: ``"tight"`` (Canonne, Kamath & Steinke 2020, default) or ``"simple"``
            (Bun & Steinke 2016).

    Returns:
        The smallest delta the conversion certifies (rounded up, never down), in [0, 1].

    Raises:
        BudgetError: a negative, NaN or non-numeric argument, or an unknown conversion.

    Example:
        >>> round(rho_to_delta(0.5, 4.0), 7)
        0.0001958
        >>> rho_to_delta(0.5, 4.0) <= rho_to_delta(0.5, 4.0, conversion="simple")
        True
    """
    conv = _check_conversion(conversion)
    r = _check_nonneg("rho", rho)
    e = _check_nonneg("epsilon", epsilon)
    return min(1.0, math.exp(_log_delta(r, e, conv)))


def rho_to_epsilon(rho: float, delta: float, conversion: str = "tight") -> float:
    """The epsilon at which ``rho``-zCDP implies ``(epsilon, delta)``-DP.

    ``"simple"`` is the closed form ``rho + 2 sqrt(rho ln(1/delta))``. ``"tight"`` finds the
    smallest epsilon whose tight delta is at most ``delta`` by bisection (delta decreases in
    epsilon) to a relative width of 1e-13, and returns the upper end of the final bracket,
    so the result never understates epsilon. It is 0 when ``rho`` is so small that
    ``(0, delta)``-DP already holds.

    Args:
        rho: zCDP parameter, ``>= 0``; ``inf`` gives ``inf``.
        delta: in (0, 1).
        conversion: ``"tight"`` (default) or ``"simple"``.

    Returns:
        epsilon, ``>= 0``.

    Raises:
        BudgetError: a bad ``rho``, ``delta`` or ``conversion``.

    Example:
        >>> round(rho_to_epsilon(0.5, 1e-6, conversion="simple"), 6)
        5.756522
        >>> round(rho_to_epsilon(0.5, 1e-6), 6)
        5.221534
    """
    conv = _check_conversion(conversion)
    r = _check_nonneg("rho", rho)
    d = _check_delta(delta)
    if r == 0.0:
        return 0.0
    if math.isinf(r):
        return math.inf
    log_target = math.log(d)
    simple = r + 2.0 * math.sqrt(r * -log_target)
    if conv == "simple":
        return simple
    if _tight_log_delta(r, 0.0) <= log_target:
        return 0.0
    lo, hi = 0.0, simple
    while _tight_log_delta(r, hi) > log_target:  # pragma: no cover - the simple bound holds
        lo, hi = hi, 2.0 * hi
    _, hi = _bisect(lambda eps: _tight_log_delta(r, eps) > log_target, lo, hi, _REL_TOL)
    return hi


def epsilon_to_rho(epsilon: float, delta: float, conversion: str = "tight") -> float:
    """The largest ``rho`` such that ``rho``-zCDP implies ``(epsilon, delta)``-DP.

    ``"simple"`` inverts Bun & Steinke in closed form:
    ``rho = ln(1/delta) (sqrt(1 + epsilon / ln(1/delta)) - 1)^2``. ``"tight"`` bisects over
    rho (delta increases in rho), starting from the simple value, which it always allows, to
    a relative width of 1e-13 and returns the lower end of the final bracket, so the result
    never overstates rho.

    Args:
        epsilon: ``>= 0``; ``inf`` gives ``inf``.
        delta: in (0, 1).
        conversion: ``"tight"`` (default) or ``"simple"``.

    Returns:
        rho, ``>= 0``.

    Raises:
        BudgetError: a bad ``epsilon``, ``delta`` or ``conversion``.

    Example:
        >>> round(epsilon_to_rho(1.0, 1e-6, conversion="simple"), 6)
        0.017469
        >>> epsilon_to_rho(1.0, 1e-6) > epsilon_to_rho(1.0, 1e-6, conversion="simple")
        True
    """
    conv = _check_conversion(conversion)
    e = _check_nonneg("epsilon", epsilon)
    d = _check_delta(delta)
    if math.isinf(e):
        return math.inf
    log_inv = -math.log(d)
    x = e / log_inv
    # sqrt(1 + x) - 1 written without cancellation.
    simple = log_inv * (x / (math.sqrt(1.0 + x) + 1.0)) ** 2
    if conv == "simple":
        return simple
    return _tight_rho(e, d, simple)


@functools.lru_cache(maxsize=256)
def _tight_rho(e: float, d: float, simple: float) -> float:
    """The tight conversion's bisection (pure: the same budget, the same answer; kept, because
    it costs milliseconds and every release and plan asks for it)."""
    log_target = math.log(d)
    lo = simple
    while lo > 0.0 and _tight_log_delta(lo, e) > log_target:  # pragma: no cover - rounding
        lo *= 0.5
    # Grow hi until it violates the target; everything below the last success is allowed.
    hi = 2.0 * lo if lo > 0.0 else 1e-30
    factor = 2.0 if lo > 0.0 else 10.0
    while _tight_log_delta(hi, e) <= log_target:
        lo, hi = hi, hi * factor
    lo, _ = _bisect(lambda rho: _tight_log_delta(rho, e) <= log_target, lo, hi, _REL_TOL)
    return lo


def zcdp_compose(rhos: Sequence[float]) -> float:
    """Sequential composition under zCDP: the total budget is the sum of the parts.

    Args:
        rhos: the zCDP costs of the releases, each ``>= 0`` (``inf`` allowed).

    Returns:
        Their exact floating-point sum (``math.fsum``), ``0.0`` for no releases.

    Raises:
        BudgetError: a negative, NaN or non-numeric cost.

    Example:
        >>> zcdp_compose([0.1, 0.2, 0.2])
        0.5
        >>> zcdp_compose([0.1, float("inf")])
        inf
    """
    parts = [_check_nonneg(f"rhos[{i}]", r) for i, r in enumerate(rhos)]
    if any(math.isinf(r) for r in parts):
        return math.inf
    return math.fsum(parts)


def pure_rho(epsilon: float) -> float:
    """The zCDP cost ``epsilon^2 / 2`` of a pure epsilon-DP mechanism (Bun & Steinke 2016,
    Prop. 1.4), rounded up so that it never understates the cost.

    Example:
        >>> pure_rho(1.0), pure_rho(float("inf"))
        (0.5, inf)
    """
    rho = 0.5 * epsilon * epsilon
    if math.isfinite(rho) and Fraction(rho) < Fraction(epsilon) ** 2 / 2:
        rho = math.nextafter(rho, math.inf)
    return rho
