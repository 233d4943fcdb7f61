"""The Stability Histogram: ``(epsilon, delta)``-DP by discrete Laplace noise and a threshold."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..._errors import BudgetError
from ._common import _check_delta, _json_number, _number
from .hierarchy import _check_positive_int, check_distinct, check_privacy


@dataclass(frozen=True)
class StabilityHistogram:
    """Discrete Laplace scale and release threshold of the Stability Histogram.

    Build it with :func:`stability_histogram`, which also states the proof.

    Attributes:
        epsilon: epsilon of the ``(epsilon, delta)``-DP guarantee (``inf``: no noise).
        delta: the delta asked for, in (0, 1).
        privacy: ``"bounded"`` or ``"unbounded"``.
        contribution: records per privacy unit, m.
        distinct: the m records of a unit are in distinct leaf cells.
        sensitivity: L1 sensitivity of the leaf histogram (m unbounded, 2m bounded).
        cell_sensitivity: the most one cell can move (m, or 1 with ``distinct``).
        scale: the discrete Laplace scale b, with ``sensitivity / b <= epsilon`` exactly
            (0.0 for ``epsilon = inf``).
        threshold: noisy counts below this integer are dropped.
        delta_bound: the delta the threshold actually guarantees (``<= delta``).
    """

    epsilon: float
    delta: float
    privacy: str
    contribution: int
    distinct: bool
    sensitivity: float
    cell_sensitivity: int
    scale: float
    threshold: int
    delta_bound: float

    @property
    def non_private(self) -> bool:
        """True when epsilon is infinite: no noise is added."""
        return math.isinf(self.epsilon)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dictionary (infinities as the string ``"inf"``)."""
        return {
            "epsilon": _json_number(self.epsilon),
            "delta": self.delta,
            "privacy": self.privacy,
            "contribution": self.contribution,
            "distinct": self.distinct,
            "sensitivity": self.sensitivity,
            "cell_sensitivity": self.cell_sensitivity,
            "scale": self.scale,
            "threshold": self.threshold,
            "delta_bound": self.delta_bound,
        }


def _sh_log_delta(tau: int, log_a: float, log1p_a: float, m: int, c: int) -> float:
    """log of the delta of threshold ``tau`` (see :func:`stability_histogram`); tau > c."""
    if c == 1:
        return math.log(m) + (tau - 1) * log_a - log1p_a
    return max((tau - m) * log_a, math.log(m) + (tau - 1) * log_a) - log1p_a


def _sh_valid(tau: int, log_a: float, log1p_a: float, m: int, c: int, log_delta: float) -> bool:
    """Both conditions of :func:`stability_histogram` hold at ``tau``, with a safety margin."""
    if tau <= c:
        return False
    margin = 1e-9  # relative: float rounding of the logs may only make tau larger
    if _sh_log_delta(tau, log_a, log1p_a, m, c) > log_delta - margin * abs(log_delta):
        return False
    # a cell that only the neighbour has: P(released) = a^(tau-c) / (1+a) <= 1 - a
    log_q = (tau - c) * log_a - log1p_a
    log_one_minus_a = math.log(-math.expm1(log_a))
    return log_q <= log_one_minus_a - margin * abs(log_one_minus_a)


def stability_histogram(
    epsilon: float,
    delta: float,
    *,
    privacy: str = "bounded",
    contribution: int = 1,
    distinct: bool = False,
) -> StabilityHistogram:
    """Noise scale and threshold of the Stability Histogram for ``(epsilon, delta)``-DP.

    **Mechanism.** For every leaf cell with true count ``h_i > 0`` (and no other cell) draw
    ``Y_i = h_i + L_i``, the ``L_i`` independent discrete Laplace of scale ``b``
    (``P(L = k) = (1-a)/(1+a) a^|k|``, ``a = exp(-1/b)``), and release ``(i, Y_i)`` iff
    ``Y_i >= tau``. Empty cells are never released: no false positives, but a bias.

    **Neighbours.** A privacy unit holds at most ``m = contribution`` records. ``"unbounded"``:
    add or remove one unit, so the histogram moves by at most ``m`` in L1. ``"bounded"``:
    replace one unit (remove one, add another), so the L1 sensitivity doubles to ``2m``. Either
    way one cell moves by at most ``c = m``, or ``c = 1`` with ``distinct`` (the unit's
    records are in distinct leaf cells). Here ``D1`` is the L1 sensitivity; ``b = D1 / epsilon``
    (rounded up so that ``D1 / b <= epsilon`` holds exactly).

    **Threshold.** ``tau`` is the smallest integer ``> c`` with

    * ``delta(tau) <= delta``, where ``delta(tau) = max(a^(tau-m), m a^(tau-1)) / (1+a)``
      (``m a^(tau-1) / (1+a)`` with ``distinct``), and
    * ``a^(tau-c) / (1+a) <= 1 - a`` (holds for any sensible budget; it only matters when
      delta is not far below epsilon / D1).

    **Proof** that the mechanism is ``(epsilon, delta(tau))``-DP. Fix neighbours ``h, h'``
    and let ``A`` (``C``) be the cells positive in ``h`` only (in ``h'`` only) and ``B`` the
    cells positive in both. Cells are independent; let ``G`` be the outputs that release no
    cell of ``A``. For an output in ``G`` the ratio ``P[M(h) = o] / P[M(h') = o]`` is a
    product over cells of: 1 for a cell outside ``A, B, C``; at most ``a^-|h_i - h'_i|`` for a
    cell of ``B`` (a released value ``y`` gives ``a^(|y-h_i| - |y-h'_i|)``, a dropped one the
    ratio of two Laplace CDFs shifted by ``h_i - h'_i``, bounded the same way because the pmf
    ratio is, pointwise); ``1 / P[h'_i + L < tau] = 1 / (1 - q(h'_i))`` for a cell of ``C``,
    with ``q(h) = P[h + L >= tau] = a^(tau-h) / (1+a)`` (``tau - h >= 1``), which is at most
    ``1/a <= a^-h'_i`` by the second condition (``q(h) <= q(c) <= 1 - a``); at most 1 for a
    cell of ``A`` (dropped). The exponents add up to at most ``||h - h'||_1 <= D1``, so on
    ``G`` the ratio is at most ``a^-D1 = exp(D1 / b) <= e^epsilon``. For any set ``S`` of
    outputs, ``P[M(h) in S] <= P[M(h) in S and G] + P[not G] <= e^epsilon P[M(h') in S] +
    P[not G]``, and ``P[not G] <= sum over A of q(h_i)``. The cells of ``A`` hold only the
    changed unit's records: ``1 <= h_i <= c`` and ``sum h_i <= m``. ``q`` is convex and
    increasing, so the sum is largest at the most spread-out split, ``k`` cells holding
    ``m-k+1, 1, ..., 1`` records, i.e. ``(a^(tau-m+k-1) + (k-1) a^(tau-1)) / (1+a)``, convex
    in ``k`` and so largest at ``k = 1`` or ``k = m``: ``delta(tau)``. With ``distinct``, at
    most ``m`` cells of one record each: ``m a^(tau-1) / (1+a)``. (Both directions of the
    neighbour relation are covered: swap ``h`` and ``h'``.)

    The analysis assumes exact Laplace noise; the sampler's table is within statistical
    distance 2^-73 per draw (:mod:`inftda_sql.core.noise`), which adds at most
    ``n (1 + e^epsilon) 2^-73`` to delta for ``n`` noised cells: negligible. ``epsilon = inf``
    is the noise-free limit: ``b = 0`` and ``tau = c + 1``.

    Args:
        epsilon: ``> 0``, or ``inf`` for no noise (a non-private test oracle).
        delta: in (0, 1).
        privacy: ``"bounded"`` (default) or ``"unbounded"``.
        contribution: m, a positive integer.
        distinct: the m records of a unit are guaranteed to be in distinct leaf cells.

    Returns:
        The :class:`StabilityHistogram` parameters.

    Raises:
        BudgetError: a bad ``epsilon`` or ``delta``.
        SpecError: a bad ``privacy``, ``contribution`` or ``distinct``.

    Example:
        >>> sh = stability_histogram(1.0, 1e-6)
        >>> sh.sensitivity, sh.scale, sh.threshold
        (2.0, 2.0, 28)
        >>> stability_histogram(1.0, 1e-6, privacy="unbounded").threshold
        15
        >>> stability_histogram(float("inf"), 1e-6, contribution=3).threshold
        4
    """
    eps = _number("epsilon", epsilon)
    if not eps > 0.0:
        raise BudgetError(f"epsilon must be positive, got {epsilon!r}", param="epsilon")
    d = _check_delta(delta)
    model = check_privacy(privacy)
    m = _check_positive_int("contribution", contribution)
    check_distinct(distinct)
    sens = float(m if model == "unbounded" else 2 * m)
    c = 1 if distinct else m

    def result(scale: float, tau: int, delta_bound: float) -> StabilityHistogram:
        return StabilityHistogram(
            epsilon=eps,
            delta=d,
            privacy=model,
            contribution=m,
            distinct=distinct,
            sensitivity=sens,
            cell_sensitivity=c,
            scale=scale,
            threshold=tau,
            delta_bound=delta_bound,
        )

    if math.isinf(eps):
        return result(0.0, c + 1, 0.0)
    scale = sens / eps
    # round in the private direction: sens / scale <= epsilon exactly (as rationals)
    while Fraction(sens) / Fraction(scale) > Fraction(eps):
        scale = math.nextafter(scale, math.inf)
    log_a = -1.0 / scale
    log1p_a = math.log1p(math.exp(log_a))
    log_delta = math.log(d)
    # closed-form start: the smallest real tau of each term of delta(tau)
    need = [1.0 + scale * (math.log(m) - log1p_a - log_delta)]
    if c > 1:
        need.append(m + scale * (-log1p_a - log_delta))
    tau = max(c + 1, math.ceil(max(need)))
    while tau > c + 1 and _sh_valid(tau - 1, log_a, log1p_a, m, c, log_delta):
        tau -= 1
    while not _sh_valid(tau, log_a, log1p_a, m, c, log_delta):
        tau += 1
    return result(scale, tau, math.exp(_sh_log_delta(tau, log_a, log1p_a, m, c)))
