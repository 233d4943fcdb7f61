"""Every privacy number of a release: budgets, conversions, sensitivities, per-level noise.

This is the only module that turns a privacy budget into noise scales. Its pieces:

* :class:`Budget`: a validated zCDP budget ``rho`` together with the ``(epsilon, delta)``-DP
  guarantee it implies, built with :meth:`Budget.from_args` from either ``rho`` or
  ``epsilon`` and ``delta``.
* Conversions between ``rho``-zCDP and ``(epsilon, delta)``-DP: :func:`rho_to_epsilon`,
  :func:`epsilon_to_rho`, :func:`rho_to_delta`. Two conversions exist:

  - ``"simple"`` (Bun & Steinke 2016, Prop. 1.3, used by the InfTDA paper):
    ``epsilon = rho + 2 sqrt(rho ln(1/delta))``.
  - ``"tight"`` (Canonne, Kamath & Steinke 2020, Cor. 13, the default):
    ``delta = inf over a > 1 of exp((a-1)(a rho - epsilon)) / (a-1) * (1 - 1/a)^a``.
    For the same ``(epsilon, delta)`` it allows a larger ``rho``, hence less noise.
    OpenDP's ``make_zCDP_to_approxDP`` is the same bound, implemented independently; the
    unit tests check both directions against it.

* :func:`level_sensitivities`: the L2 sensitivity of every noised level of a hierarchy.
* :func:`split_rho` and :func:`account`: the per-level budget ``rho_l`` and the discrete
  Gaussian scale ``sigma_l = D_l / sqrt(2 rho_l)`` (:func:`sigma_for`), collected in an
  :class:`Accounting`. Sensitivities are rounded up from their exact squares and every sigma
  is rounded up: ``D_l^2 / (2 sigma_l^2) <= rho_l`` holds exactly, as rationals, and the
  ``rho_l`` add up to at most ``rho`` exactly. A level *determined* by the public domain (every
  node of the level above has exactly one child, so the level repeats the released counts of
  its parents) gets no budget and no noise; its share goes to the other levels
  (:data:`DETERMINED_NOTE`).
* :func:`zcdp_compose`: sequential composition (the sum of the ``rho``s).
* :func:`budget_verdict`: whether a release fits the budget stored for its input.
* :func:`count_of_counts_accounting`: the per-level epsilon and discrete Laplace scale of a
  count-of-counts release (pure epsilon-DP; :func:`coc_sensitivity` per estimator), with its
  proof.
* :func:`stability_histogram`: the discrete Laplace scale and the threshold of the Stability
  Histogram baseline, an ``(epsilon, delta)``-DP (not zCDP) mechanism, with its proof.

Every conversion rounds in the private direction: a reported ``epsilon`` or ``delta`` is never
smaller, and a ``rho`` derived from ``(epsilon, delta)`` never larger, than the exact value (up
to floating-point rounding; the bisections stop at a relative width of 1e-13 and return the
conservative end). Only the standard library is used: no numpy, no scipy.

Infinite values (``rho = inf``, ``epsilon = inf``) mean *no noise*: the exact counts, a test
oracle. Such budgets and accountings say ``NON-PRIVATE`` wherever they are printed. In
:meth:`Budget.as_dict` and :meth:`Accounting.as_dict` an infinite number is written as the
string ``"inf"``, so both dictionaries pass ``json.dumps(..., allow_nan=False)``.
"""

from __future__ import annotations

import functools
import html
import math
import numbers
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

from .._errors import (
    Arg,
    BudgetError,
    BudgetExceededError,
    Code,
    Func,
    InftdaError,
    InftdaWarning,
    SpecError,
)
from .._tables import Column, html_table, text_table

__all__ = [
    "COC_METHODS",
    "COMPOSES_IN_RHO",
    "CONVERSIONS",
    "DEFAULT_REPORT_DELTA",
    "DETERMINED_NOTE",
    "EPSILON_WARN_THRESHOLD",
    "NOISES",
    "PRIVACY_MODELS",
    "Accounting",
    "Budget",
    "CountOfCountsAccounting",
    "StabilityHistogram",
    "account",
    "account_features",
    "budget_verdict",
    "check_distinct",
    "check_privacy",
    "coc_sensitivity",
    "count_of_counts_accounting",
    "discrete_laplace_variance",
    "epsilon_to_rho",
    "feature_sensitivities",
    "level_sensitivities",
    "pure_rho",
    "rho_to_delta",
    "rho_to_epsilon",
    "sigma_for",
    "split_epsilon",
    "split_rho",
    "squared_sensitivities",
    "stability_histogram",
    "zcdp_compose",
]

#: The delta at which epsilon is reported when the budget is given as ``rho`` alone.
DEFAULT_REPORT_DELTA = 1e-8

#: A finite epsilon above this value triggers a ``UserWarning`` (OpenDP warns above 5; this
#: library is laxer because hierarchical releases are often calibrated in rho and reported at
#: a tiny delta). Infinite budgets never warn: they are the explicit no-noise test oracle.
EPSILON_WARN_THRESHOLD = 20.0

#: The two rho <-> (epsilon, delta) conversions.
CONVERSIONS: tuple[str, ...] = ("tight", "simple")

#: The two neighbouring relations.
PRIVACY_MODELS: tuple[str, ...] = ("bounded", "unbounded")

#: Why a level spends no budget, as recorded with the accounting (ledger, printed tables).
DETERMINED_NOTE = (
    "determined by its parents (one child each in the public domain): it repeats their "
    "released counts, so no noise and no budget; its share went to the other levels"
)

#: The noise of a feature release: discrete Laplace (pure epsilon-DP) or discrete Gaussian
#: (zCDP); which one follows from the budget (:func:`account_features`).
NOISES: tuple[str, ...] = ("gaussian", "laplace")

#: Guarantees that compose by adding rho (a pure epsilon-DP release counts as
#: ``epsilon^2 / 2``); an ``approxDP`` release does not.
COMPOSES_IN_RHO: tuple[str, ...] = ("zCDP", "pureDP")

Conversion = Literal["tight", "simple"]
PrivacyModel = Literal["bounded", "unbounded"]

# Relative width at which the bisections over epsilon and rho stop.
_REL_TOL = 1e-13
_MAX_BISECTIONS = 400
# The search over the Renyi order a = 1 + exp(u) never goes beyond u = 700 (a ~ 1e304).
_U_MAX = 700.0


# --------------------------------------------------------------------------------------------
# validation helpers


def _number(name: str, value: object, error: type[InftdaError] = BudgetError) -> float:
    """Return ``value`` as a float, rejecting bools, non-numbers and NaN."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise error(
            f"{name} must be a number, got {value!r} ({type(value).__name__}); "
            "pass a float such as ",
            Arg(name, 1.0) if name.isidentifier() else f"{name}=1.0",
            param=name if name.isidentifier() else None,
        )
    number = float(value)
    if math.isnan(number):
        raise error(
            f"{name} must be a number, got NaN; pass a finite positive float",
            param=name if name.isidentifier() else None,
        )
    return number


def _check_conversion(conversion: object) -> Conversion:
    if conversion == "tight":
        return "tight"
    if conversion == "simple":
        return "simple"
    raise BudgetError(
        f"conversion must be 'tight' or 'simple', got {conversion!r}", param="conversion"
    )


def _check_delta(delta: object, name: str = "delta") -> float:
    value = _number(name, delta)
    if not 0.0 < value < 1.0:
        raise BudgetError(
            f"{name} must be strictly between 0 and 1, got {delta!r}; "
            "use a value far below 1/N, e.g. ",
            Arg(name, Code("1e-8")),
            param=name,
        )
    return value


def _check_nonneg(name: str, value: object) -> float:
    number = _number(name, value)
    if number < 0.0:
        raise BudgetError(
            f"{name} must be non-negative, got {value!r}",
            param=name if name.isidentifier() else None,
        )
    return number


def _as_list(values: object, name: str, error: type[Exception]) -> list[Any]:
    """The items of a sequence (list, tuple, numpy array ...), rejecting strings and scalars."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise error(f"{name} must be a sequence, got {values!r}")
    return list(values)


def _fmt(x: float) -> str:
    """Format a privacy number compactly (``inf`` stays ``inf``)."""
    return "inf" if math.isinf(x) else f"{x:.6g}"


def _json_number(x: float) -> float | str:
    """A float for JSON: infinities become the string ``"inf"``."""
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


# --------------------------------------------------------------------------------------------
# conversions


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


def _warn_large(budget: Budget) -> None:
    if math.isfinite(budget.epsilon) and budget.epsilon > EPSILON_WARN_THRESHOLD:
        warnings.warn(
            InftdaWarning(
                Arg("epsilon", budget.epsilon, ".6g"),
                " (at ",
                Arg("delta", budget.delta, "g"),
                f") is above {EPSILON_WARN_THRESHOLD:g}: such a release protects "
                "individuals very little",
                param="epsilon",
            ),
            stacklevel=3,
        )


# --------------------------------------------------------------------------------------------
# Budget


@dataclass(frozen=True)
class Budget:
    """A zCDP budget ``rho`` and the ``(epsilon, delta)``-DP guarantee it implies.

    Build it with :meth:`from_args`. When the budget is given as ``rho`` alone, epsilon is
    reported at ``delta = DEFAULT_REPORT_DELTA = 1e-8``; pass ``delta`` to report it at
    another delta. When it is given as ``(epsilon, delta)``, ``rho`` is the largest zCDP
    budget that implies it under ``conversion``. ``rho = inf`` (or ``epsilon = inf``) means no
    noise at all: a non-private test oracle, marked ``NON-PRIVATE`` when printed.

    Attributes:
        rho: total zCDP budget, ``> 0`` or ``inf``.
        epsilon: epsilon of the implied ``(epsilon, delta)``-DP guarantee (``inf`` when
            ``rho`` is).
        delta: delta of that guarantee, in (0, 1).
        conversion: ``"tight"`` (default) or ``"simple"``.
        given: ``"rho"``, ``"epsilon_delta"`` or ``"epsilon"``: what the user specified.
            ``"epsilon"`` is a **pure** epsilon-DP budget (``delta = 0``), accepted only by
            mechanisms that add Laplace noise (CBDP); it is recorded with ``rho = epsilon^2 / 2``,
            the zCDP cost of any epsilon-DP mechanism (Bun & Steinke 2016, Prop. 1.4), so it
            composes with zCDP releases of the same input.

    Example:
        >>> b = Budget.from_args(epsilon=1.0, delta=1e-6, conversion="simple")
        >>> round(b.rho, 6)
        0.017469
        >>> oracle = Budget.from_args(rho=float("inf"))
        >>> oracle.non_private, oracle.epsilon
        (True, inf)
        >>> print(oracle)
        NON-PRIVATE budget: rho = inf, no noise (exact counts; a test oracle)
    """

    rho: float
    epsilon: float
    delta: float
    conversion: str = "tight"
    given: str = "rho"

    def __post_init__(self) -> None:
        rho = _number("rho", self.rho)
        epsilon = _number("epsilon", self.epsilon)
        conversion = _check_conversion(self.conversion)
        if self.given not in ("rho", "epsilon_delta", "epsilon"):
            raise BudgetError(
                f"given must be 'rho', 'epsilon_delta' or 'epsilon', got {self.given!r}"
            )
        if self.given == "epsilon":
            delta = _number("delta", self.delta)
            if delta != 0.0 or not epsilon > 0.0:
                raise BudgetError(
                    f"a pure epsilon-DP budget has delta = 0 and epsilon > 0, got "
                    f"epsilon={self.epsilon!r}, delta={self.delta!r}; build it with "
                    "Budget.from_args(epsilon=..., pure=True)"
                )
            if rho != pure_rho(epsilon):
                raise BudgetError(
                    f"a pure epsilon-DP budget of epsilon={epsilon!r} costs rho = epsilon^2 / 2 = "
                    f"{pure_rho(epsilon)!r} in zCDP, got rho={self.rho!r}"
                )
            for name, value in (("rho", rho), ("epsilon", epsilon), ("delta", delta)):
                object.__setattr__(self, name, value)
            return
        delta = _check_delta(self.delta)
        if rho <= 0.0:
            raise BudgetError(f"rho must be positive, got {self.rho!r}", param="rho")
        if epsilon < 0.0:
            raise BudgetError(
                f"epsilon must be non-negative, got {self.epsilon!r}", param="epsilon"
            )
        if math.isinf(rho) != math.isinf(epsilon):
            raise BudgetError(
                Arg("rho", self.rho, "!r"),
                " and ",
                Arg("epsilon", self.epsilon, "!r"),
                " are inconsistent: exactly one is infinite; build budgets with Budget.from_args",
            )
        # The guarantee reported must hold: rho-zCDP => (epsilon, delta)-DP.
        if not math.isinf(rho) and rho_to_delta(rho, epsilon, conversion) > delta * (1 + 1e-9):
            raise BudgetError(
                Arg("rho", self.rho, "!r"),
                " does not imply (",
                Arg("epsilon", self.epsilon, "!r"),
                ", ",
                Arg("delta", self.delta, "!r"),
                f")-DP under the {conversion} conversion; build budgets with Budget.from_args",
            )
        for name, value in (("rho", rho), ("epsilon", epsilon), ("delta", delta)):
            object.__setattr__(self, name, value)

    @classmethod
    def from_args(
        cls,
        *,
        rho: float | None = None,
        epsilon: float | None = None,
        delta: float | None = None,
        conversion: str = "tight",
        pure: bool = False,
    ) -> Budget:
        """Validate a user's budget: ``rho``, or ``epsilon`` together with ``delta``.

        Args:
            rho: total zCDP budget, ``> 0``; ``inf`` for no noise. With ``delta``, epsilon is
                reported at that delta, otherwise at ``DEFAULT_REPORT_DELTA = 1e-8``.
            epsilon: ``> 0``, with ``delta``; ``inf`` for no noise.
            delta: in (0, 1).
            conversion: ``"tight"`` (default) or ``"simple"``.
            pure: accept ``epsilon`` without ``delta`` as a pure epsilon-DP budget (for
                mechanisms that add Laplace noise); otherwise such an epsilon needs a delta.

        Returns:
            The budget.

        Raises:
            BudgetError: both ``rho`` and ``epsilon``, neither, ``epsilon`` without ``delta``,
                a non-positive, NaN, boolean or non-numeric value, ``delta`` outside (0, 1),
                or an unknown conversion. The message names the value and the fix.

        Warns:
            UserWarning: a finite epsilon above ``EPSILON_WARN_THRESHOLD = 20``.

        Example:
            >>> b = Budget.from_args(rho=0.5)
            >>> b.given, b.delta, round(b.epsilon, 4)
            ('rho', 1e-08, 6.0862)
            >>> p = Budget.from_args(epsilon=1.0, pure=True)
            >>> p.pure, p.delta, p.rho
            (True, 0.0, 0.5)
        """
        conv = _check_conversion(conversion)
        if rho is not None and epsilon is not None:
            raise BudgetError(
                "got ",
                Arg("rho", rho, "!r"),
                " and ",
                Arg("epsilon", epsilon, "!r"),
                ": pass epsilon (with delta) or rho, not both",
            )
        if rho is None and epsilon is None:
            raise BudgetError(
                "no privacy budget given: pass ",
                Arg("rho", ...),
                " (zCDP), or ",
                Arg("epsilon", ...),
                " with ",
                Arg("delta", ...),
                *((" (got only ", Arg("delta", delta, "!r"), ")") if delta is not None else ()),
                param="rho",
            )
        if rho is not None:
            r = _number("rho", rho)
            if r <= 0.0:
                raise BudgetError(
                    f"rho must be positive, got {rho!r}; pass e.g. ",
                    Arg("rho", 0.5),
                    ", or ",
                    Arg("rho", math.inf),
                    " for exact (non-private) counts",
                    param="rho",
                )
            d = DEFAULT_REPORT_DELTA if delta is None else _check_delta(delta)
            e = rho_to_epsilon(r, d, conv)
            budget = cls(rho=r, epsilon=e, delta=d, conversion=conv, given="rho")
        else:
            e = _number("epsilon", epsilon)
            if e <= 0.0:
                raise BudgetError(
                    f"epsilon must be positive, got {epsilon!r}; pass e.g. ",
                    Arg("epsilon", 1.0),
                    " with ",
                    Arg("delta", Code("1e-8")),
                    ", or ",
                    Arg("epsilon", math.inf),
                    " for exact (non-private) counts",
                    param="epsilon",
                )
            if delta is None and pure:
                budget = cls(
                    rho=pure_rho(e), epsilon=e, delta=0.0, conversion=conv, given="epsilon"
                )
                _warn_large(budget)
                return budget
            if delta is None:
                raise BudgetError(
                    Arg("epsilon", epsilon, "!r"),
                    " needs a delta: pass ",
                    Arg("delta", ...),
                    " as well (far below 1/N, e.g. ",
                    Arg("delta", Code("1e-8")),
                    "), or pass ",
                    Arg("rho", ...),
                    " instead",
                    param="delta",
                )
            d = _check_delta(delta)
            r = epsilon_to_rho(e, d, conv)
            budget = cls(rho=r, epsilon=e, delta=d, conversion=conv, given="epsilon_delta")
        _warn_large(budget)
        return budget

    @property
    def pure(self) -> bool:
        """True for a pure epsilon-DP budget (``delta = 0``, Laplace noise)."""
        return self.given == "epsilon"

    @property
    def non_private(self) -> bool:
        """True when ``rho`` is infinite: no noise is added."""
        return math.isinf(self.rho)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dictionary (infinities as the string ``"inf"``).

        Example:
            >>> Budget.from_args(rho=float("inf")).as_dict()["rho"]
            'inf'
        """
        return {
            "rho": _json_number(self.rho),
            "epsilon": _json_number(self.epsilon),
            "delta": self.delta,
            "conversion": self.conversion,
            "given": self.given,
            **({"pure": True} if self.pure else {}),
            "non_private": self.non_private,
        }

    def __str__(self) -> str:
        if self.non_private:
            return "NON-PRIVATE budget: rho = inf, no noise (exact counts; a test oracle)"
        if self.pure:
            return (
                f"epsilon = {_fmt(self.epsilon)} pure DP (delta = 0; rho = {_fmt(self.rho)} "
                "zCDP when composed with zCDP releases)"
            )
        note = ""
        if self.given == "rho" and self.delta == DEFAULT_REPORT_DELTA:
            note = f"; delta is the default reporting delta {DEFAULT_REPORT_DELTA:g}"
        return (
            f"rho = {_fmt(self.rho)} zCDP => (epsilon = {_fmt(self.epsilon)}, "
            f"delta = {self.delta:g})-DP [{self.conversion} conversion{note}]"
        )


# --------------------------------------------------------------------------------------------
# sensitivity and the per-level split


def check_privacy(privacy: object) -> PrivacyModel:
    """``privacy=`` as one of :data:`PRIVACY_MODELS`, or a SpecError."""
    if privacy == "bounded":
        return "bounded"
    if privacy == "unbounded":
        return "unbounded"
    raise SpecError(
        f"privacy must be 'bounded' (replace one unit, total public) or 'unbounded' "
        f"(add/remove one unit), got {privacy!r}",
        param="privacy",
    )


def _check_positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or int(value) < 1:
        raise SpecError(f"{name} must be a positive integer, got {value!r}", param=name)
    return int(value)


def check_distinct(distinct: object) -> bool:
    """``distinct=`` must be a bool."""
    if not isinstance(distinct, bool):
        raise SpecError(f"distinct must be True or False, got {distinct!r}", param="distinct")
    return distinct


def level_sensitivities(
    n_levels: int,
    *,
    privacy: str = "bounded",
    contribution: int = 1,
    distinct: bool = False,
) -> tuple[float, ...]:
    """L2 sensitivity of every noised level of a hierarchy (root level 0, leaves ``n_levels``).

    A level's query is the histogram of counts of its cells. A privacy unit contributes at
    most ``m = contribution`` records.

    * ``"bounded"`` (neighbours replace one unit; the total N is public, so the root is not
      noised): levels ``1..n_levels``, each ``sqrt(2) * m``: all m records move from one cell
      to another. With ``distinct=True`` (the m records of a unit fall in m distinct *leaf*
      cells) the leaf level gets ``sqrt(2m)``. Coarser levels keep ``sqrt(2) * m``: records
      distinct at the leaves can share a cell above. Releasing the root unnoised is private
      only if N is public, e.g. every unit contributes exactly m records.
    * ``"unbounded"`` (neighbours add or remove one unit; the root is noised): levels
      ``0..n_levels``, each ``m`` (the root holds all m records), the leaf level ``sqrt(m)``
      with ``distinct=True``.

    Args:
        n_levels: number of levels below the root, ``>= 1``.
        privacy: ``"bounded"`` (default) or ``"unbounded"``.
        contribution: m, a positive integer.
        distinct: the m records of a unit are guaranteed to be in distinct leaf cells.

    Returns:
        One sensitivity per noised level, coarsest first: ``n_levels`` values (bounded) or
        ``n_levels + 1`` values starting with the root (unbounded).

    Raises:
        SpecError: a bad ``n_levels``, ``privacy``, ``contribution`` or ``distinct``.

    Example:
        >>> level_sensitivities(2, contribution=2, distinct=True)
        (2.8284271247461903, 2.0)
        >>> level_sensitivities(2, privacy="unbounded", contribution=4, distinct=True)
        (4.0, 4.0, 2.0)
    """
    return tuple(
        _sqrt_up(d2)
        for d2 in squared_sensitivities(
            n_levels, privacy=privacy, contribution=contribution, distinct=distinct
        )
    )


def squared_sensitivities(
    n_levels: int,
    *,
    privacy: str = "bounded",
    contribution: int = 1,
    distinct: bool = False,
) -> tuple[int, ...]:
    """The exact squares of :func:`level_sensitivities` (integers: ``2 m^2``, ``2 m``, ``m^2``,
    ``m``), from which the float sensitivities are rounded up.

    Example:
        >>> squared_sensitivities(2, contribution=3, distinct=True)
        (18, 6)
    """
    n = _check_positive_int("n_levels", n_levels)
    model = check_privacy(privacy)
    m = _check_positive_int("contribution", contribution)
    check_distinct(distinct)
    if model == "bounded":
        general = 2 * m * m
        leaf = 2 * m if distinct else general
        return (general,) * (n - 1) + (leaf,)
    general = m * m
    leaf = m if distinct else general
    return (general,) * n + (leaf,)


def _sqrt_up(square: int) -> float:
    """The smallest float ``d`` with ``d^2 >= square`` exactly: a sensitivity never below the
    exact one."""
    d = math.sqrt(square)
    while Fraction(d) ** 2 < square:
        d = math.nextafter(d, math.inf)
    return d


def sigma_for(sensitivity: float, rho: float) -> float:
    """The discrete Gaussian scale of a ``rho``-zCDP query of L2 ``sensitivity``: the smallest
    float ``sigma`` with ``sensitivity^2 / (2 sigma^2) <= rho`` exactly (as rationals), i.e.
    ``sensitivity / sqrt(2 rho)`` rounded up, never a floating-point unit below it.

    It is the sigma of every level of :func:`account`, and of the SQL function ``dp_sigma``.

    Args:
        sensitivity: the query's L2 sensitivity, ``> 0`` and finite.
        rho: its zCDP budget, ``> 0``; ``inf`` gives 0.0 (no noise, as an infinite budget).

    Raises:
        SpecError: a non-positive, infinite, NaN or non-numeric ``sensitivity``.
        BudgetError: a non-positive, NaN or non-numeric ``rho``.

    Example:
        >>> sigma_for(math.sqrt(2.0), 1.0)
        1.0000000000000002
        >>> sigma_for(1.0, 0.5)
        1.0
        >>> sigma_for(1.0, float("inf"))
        0.0
    """
    d = _number("sensitivity", sensitivity, SpecError)
    if not (d > 0.0 and math.isfinite(d)):
        raise SpecError(
            f"sensitivity must be positive and finite, got {sensitivity!r}", param="sensitivity"
        )
    r = _number("rho", rho)
    if r <= 0.0:
        raise BudgetError(
            f"rho must be positive, got {rho!r}; pass ",
            Arg("rho", math.inf),
            " for exact (non-private) counts",
            param="rho",
        )
    if math.isinf(r):
        return 0.0
    sensitivity, rho = d, r
    d2 = Fraction(sensitivity) ** 2
    two_rho = 2 * Fraction(rho)
    # in this order neither 2 * rho overflows nor a tiny sensitivity underflows first: the
    # loops below then move sigma by a few units in the last place, never from 0
    sigma = sensitivity / math.sqrt(rho) / math.sqrt(2.0)
    while two_rho * Fraction(sigma) ** 2 < d2:
        sigma = math.nextafter(sigma, math.inf)
    while (below := math.nextafter(sigma, 0.0)) > 0.0 and two_rho * Fraction(below) ** 2 >= d2:
        sigma = below
    return sigma


def split_rho(
    rho: float, n_noised_levels: int, weights: Iterable[float] | None = None
) -> tuple[float, ...]:
    """Split a zCDP budget over the noised levels, uniformly or in proportion to ``weights``.

    The last level gets the remainder, nudged down if needed, so the parts never add up to
    more than ``rho`` (exactly, as rationals). An infinite ``rho`` gives infinite parts.

    Args:
        rho: total budget, ``> 0`` or ``inf``.
        n_noised_levels: number of parts, ``>= 1``.
        weights: optional positive finite weights, one per level (normalised here).

    Returns:
        The per-level budgets.

    Raises:
        BudgetError: a bad ``rho`` or weight, or a weight count that differs from
            ``n_noised_levels``.
        SpecError: a bad ``n_noised_levels``.

    Example:
        >>> split_rho(1.0, 4)
        (0.25, 0.25, 0.25, 0.25)
        >>> split_rho(1.0, 2, weights=[1, 3])
        (0.25, 0.75)
    """
    r = _number("rho", rho)
    if r <= 0.0:
        raise BudgetError(f"rho must be positive, got {rho!r}", param="rho")
    n = _check_positive_int("n_noised_levels", n_noised_levels)
    if weights is None:
        w = [1.0] * n
    else:
        given = _as_list(weights, "split weights", BudgetError)
        if len(given) != n:
            raise BudgetError(
                f"got {len(given)} split weights {given!r} for {n} noised levels; "
                "pass one weight per noised level",
                param="split",
            )
        w = [_number(f"split weight {i}", x) for i, x in enumerate(given)]
        for i, x in enumerate(w):
            if not (x > 0.0 and math.isfinite(x)):
                raise BudgetError(
                    f"split weights must be positive and finite, got {given[i]!r} at position {i}",
                    param="split",
                )
    if math.isinf(r):
        return (math.inf,) * n
    total = math.fsum(w)
    parts = [r * x / total for x in w[:-1]]
    last = r - math.fsum(parts)
    exact_rest = Fraction(r) - sum(map(Fraction, parts), Fraction(0))
    while last > 0.0 and Fraction(last) > exact_rest:  # the parts sum to <= rho exactly
        last = math.nextafter(last, 0.0)
    parts.append(last)
    if min(parts) <= 0.0:
        raise BudgetError(
            f"split weights {weights!r} leave a level with no budget; make the weights less "
            "extreme",
            param="split",
        )
    return tuple(parts)


# --------------------------------------------------------------------------------------------
# Accounting


_ACCOUNTING_HEADER = ("level", "sensitivity", "rho", "sigma")


@dataclass(frozen=True)
class Accounting:
    """The privacy numbers of one release: per-level sensitivity, budget and noise scale.

    Build it with :func:`account`. Level ``l`` gets discrete Gaussian noise of scale
    ``sigma_l = D_l / sqrt(2 rho_l)``, which is ``rho_l``-zCDP for a query of L2 sensitivity
    ``D_l``; the levels compose to ``sum(rho_l) = budget.rho``. ``sigma_l`` is 0.0 when the
    budget is infinite (no noise).

    Attributes:
        budget: the total budget.
        privacy: ``"bounded"`` or ``"unbounded"``.
        contribution: records per privacy unit, m.
        distinct: the m records of a unit are in distinct leaf cells.
        level_names: names of the noised levels, coarsest first (``"root"`` first when
            unbounded).
        level_sensitivity: L2 sensitivity per level.
        level_rho: zCDP budget per level (0.0 for a determined level).
        level_sigma: discrete Gaussian scale per level (0.0 for a determined level).
        level_determined: per level, whether it is determined by its parent in the public
            domain (one child per parent): no noise and no budget. Empty means none is.

    Example:
        >>> acc = account(Budget.from_args(rho=float("inf")), ["region", "province"])
        >>> acc.level_sigma
        (0.0, 0.0)
        >>> print(acc)  # doctest: +NORMALIZE_WHITESPACE
        NON-PRIVATE: rho = inf, no noise is added (exact counts; a test oracle)
          bounded DP, contribution m = 1, distinct = False
          level      sensitivity   rho   sigma
          region     1.41421       inf   0
          province   1.41421       inf   0
    """

    budget: Budget
    privacy: str
    contribution: int
    distinct: bool
    level_names: tuple[str, ...]
    level_sensitivity: tuple[float, ...]
    level_rho: tuple[float, ...]
    level_sigma: tuple[float, ...]
    level_determined: tuple[bool, ...] = ()
    noise: str = "gaussian"
    """``"gaussian"`` (zCDP: ``level_sensitivity`` is L2, ``level_sigma`` the discrete Gaussian
    sigma) or ``"laplace"`` (pure epsilon-DP: ``level_sensitivity`` is L1, ``level_sigma`` the
    discrete Laplace scale, ``level_epsilon`` each level's epsilon, ``level_rho`` its zCDP cost
    ``epsilon_l^2 / 2``)."""
    level_epsilon: tuple[float, ...] = ()
    exact_levels: tuple[str, ...] = ()
    """Queries released WITHOUT noise because no neighbour can change them (the total N in
    bounded DP with one record per unit); they cost nothing."""

    def __post_init__(self) -> None:
        check_privacy(self.privacy)
        n = len(self.level_names)
        if not self.level_determined:
            object.__setattr__(self, "level_determined", (False,) * n)
        lengths = (
            len(self.level_sensitivity),
            len(self.level_rho),
            len(self.level_sigma),
            len(self.level_determined),
        )
        if n == 0 or any(k != n for k in lengths):
            raise SpecError(
                "an accounting needs one name, sensitivity, rho and sigma per level (and one "
                f"determined flag); got {n} names and {', '.join(map(str, lengths))} values"
            )
        for name, det, r, s in zip(
            self.level_names, self.level_determined, self.level_rho, self.level_sigma, strict=True
        ):
            if not isinstance(det, bool):
                raise SpecError(f"level {name!r}: determined must be True or False, got {det!r}")
            if det and (r != 0.0 or s != 0.0):
                raise BudgetError(
                    f"level {name!r} is determined by its parent: it spends no budget and has no "
                    f"noise, got rho={r!r}, sigma={s!r}"
                )
        if self.noise not in NOISES:
            raise SpecError(f"noise must be one of {', '.join(NOISES)}, got {self.noise!r}")
        if (self.noise == "laplace") != self.budget.pure:
            raise BudgetError(
                f"{self.noise} noise does not go with a {'pure' if self.budget.pure else 'zCDP'} "
                "budget: Laplace noise needs a pure epsilon budget, Gaussian noise a zCDP one"
            )
        if self.noise == "laplace" and len(self.level_epsilon) != n:
            raise SpecError(f"Laplace noise needs one epsilon per level, got {self.level_epsilon}")
        if self.budget.non_private:
            if any(s != 0.0 for s in self.level_sigma):
                raise BudgetError(f"an infinite budget adds no noise, got {self.level_sigma!r}")
            return
        if self.noise == "laplace":
            self._check_laplace()
            return
        if zcdp_compose(self.level_rho) > self.budget.rho * (1.0 + 1e-12):
            raise BudgetError(
                f"the level budgets {self.level_rho!r} sum to more than ",
                Arg("rho", self.budget.rho, "!r"),
            )
        for name, det, d, r, s in zip(
            self.level_names,
            self.level_determined,
            self.level_sensitivity,
            self.level_rho,
            self.level_sigma,
            strict=True,
        ):
            if det:
                continue
            if (
                not (s > 0.0 and r > 0.0)
                or not math.isclose(d * d / (2.0 * s * s), r, rel_tol=1e-9)
                or Fraction(d) ** 2 > 2 * Fraction(r) * Fraction(s) ** 2
            ):
                raise BudgetError(
                    f"level {name!r}: sigma={s!r} does not give rho={r!r} for sensitivity "
                    f"{d!r} (need D^2 / (2 sigma^2) <= rho exactly, and close to it); build "
                    "accountings with account()"
                )

    def _check_laplace(self) -> None:
        """Every level's scale gives at most its epsilon for its L1 sensitivity, every rho is
        that epsilon's zCDP cost, and the epsilons add up to at most the budget's."""
        if math.fsum(self.level_epsilon) > self.budget.epsilon * (1.0 + 1e-12):
            raise BudgetError(
                f"the level epsilons {self.level_epsilon!r} sum to more than "
                f"epsilon={self.budget.epsilon!r}"
            )
        for name, d, e, r, b in zip(
            self.level_names,
            self.level_sensitivity,
            self.level_epsilon,
            self.level_rho,
            self.level_sigma,
            strict=True,
        ):
            if not (b > 0.0 and e > 0.0) or Fraction(d) / Fraction(b) > Fraction(e):
                raise BudgetError(
                    f"level {name!r}: Laplace scale {b!r} gives more than epsilon={e!r} for L1 "
                    f"sensitivity {d!r} (need sensitivity / scale <= epsilon); build accountings "
                    "with account_features()"
                )
            if r != pure_rho(e):
                raise BudgetError(f"level {name!r}: rho={r!r} is not epsilon^2 / 2 for {e!r}")

    @property
    def non_private(self) -> bool:
        """True when the budget is infinite: no noise is added."""
        return self.budget.non_private

    @property
    def level_notes(self) -> tuple[str, ...]:
        """Per level, why it spends no budget (:data:`DETERMINED_NOTE`), or ``""``."""
        return tuple(DETERMINED_NOTE if det else "" for det in self.level_determined)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dictionary; infinities are written as the string ``"inf"``.

        Example:
            >>> import json
            >>> acc = account(Budget.from_args(rho=1.0), ["a", "b"])
            >>> json.loads(json.dumps(acc.as_dict(), allow_nan=False))["levels"][0]["rho"]
            0.5
        """
        extra: dict[str, Any] = {}
        if self.noise != "gaussian" or self.exact_levels:
            extra = {"noise": self.noise, "exact_levels": list(self.exact_levels)}
        if self.noise == "laplace":
            extra["level_epsilon"] = [_json_number(e) for e in self.level_epsilon]
        return {
            "budget": self.budget.as_dict(),
            "non_private": self.non_private,
            "privacy": self.privacy,
            "contribution": self.contribution,
            "distinct": self.distinct,
            **extra,
            "levels": [
                {
                    "name": name,
                    "sensitivity": d,
                    "rho": _json_number(r),
                    "sigma": s,
                    **({"determined": True, "note": DETERMINED_NOTE} if det else {}),
                }
                for name, d, r, s, det in zip(
                    self.level_names,
                    self.level_sensitivity,
                    self.level_rho,
                    self.level_sigma,
                    self.level_determined,
                    strict=True,
                )
            ],
        }

    def _rows(self) -> list[tuple[str, str, str, str]]:
        spent = self.level_epsilon if self.noise == "laplace" else self.level_rho
        rows = [
            (name, _fmt(d), _fmt(r) + (" (determined)" if det else ""), _fmt(s))
            for name, d, r, s, det in zip(
                self.level_names,
                self.level_sensitivity,
                spent,
                self.level_sigma,
                self.level_determined,
                strict=True,
            )
        ]
        return rows + [(name, "0", "0 (exact)", "0") for name in self.exact_levels]

    def _header(self) -> tuple[str, str, str, str]:
        if self.noise == "laplace":
            return ("query", "L1 sensitivity", "epsilon", "Laplace scale")
        return ("level", "sensitivity", "rho", "sigma")

    def _headline(self) -> str:
        if self.non_private:
            return "NON-PRIVATE: rho = inf, no noise is added (exact counts; a test oracle)"
        return f"Privacy: {self.budget}"

    def _model_line(self) -> str:
        return (
            f"{self.privacy} DP, contribution m = {self.contribution}, distinct = {self.distinct}"
        )

    def __str__(self) -> str:
        columns = [Column(h, "<") for h in self._header()]
        table = text_table(columns, self._rows(), sep="   ", indent="  ")
        notes = [f"  (determined) {DETERMINED_NOTE}"] if any(self.level_determined) else []
        return "\n".join([self._headline(), f"  {self._model_line()}", *table, *notes])

    def _repr_html_(self) -> str:
        esc = html.escape
        style = ' style="color:#b00;font-weight:bold"' if self.non_private else ""
        before = f"<p{style}>{esc(self._headline())}</p><p>{esc(self._model_line())}</p>"
        return f"<div>{html_table(self._header(), self._rows(), before=before)}</div>"


def account(
    budget: Budget,
    level_names: Sequence[str],
    *,
    privacy: str = "bounded",
    contribution: int = 1,
    distinct: bool = False,
    split: Iterable[float] | None = None,
    noise_root: bool | None = None,
    determined: Sequence[bool] | None = None,
) -> Accounting:
    """Compute sensitivity, budget and noise scale of every noised level of a hierarchy.

    The root total N is released without noise only when it is public: bounded DP with one
    record per unit (``contribution == 1``), where N is the number of units. With
    ``contribution = m > 1`` a unit holds 1..m records, so replacing it moves N by up to
    ``m - 1`` and the root is noised with that sensitivity (``noise_root`` defaults to
    ``privacy == "unbounded" or contribution > 1``; pass ``False`` only when every unit holds
    exactly m records).

    Args:
        budget: the total budget.
        level_names: names of the levels below the root, coarsest first (levels 1..n).
            For ``privacy="unbounded"`` a level named ``"root"`` is prepended: the root count
            is noised and gets its own share of rho.
        privacy: ``"bounded"`` (default) or ``"unbounded"``; see :func:`level_sensitivities`.
        contribution: records per privacy unit, m (positive integer).
        distinct: the m records of a unit are guaranteed to be in distinct leaf cells.
        split: optional positive weights for the per-level budgets, one per noised level
            (``n`` without a noised root, ``n + 1`` with it, root first); uniform by default.
        noise_root: whether the root is a noised level (see above).
        determined: optional, one flag per entry of ``level_names``: the level is determined
            by its parent in the PUBLIC domain (every node of the level above has exactly one
            child), so its counts are its parents' released counts. Such a level gets rho 0
            and sigma 0 (a mechanism must not noise it, nor read its true counts) and its
            weight in ``split`` is dropped: the other levels share the whole budget. If every
            level is determined, nothing is spent. The root is never determined.

    Returns:
        The accounting.

    Raises:
        SpecError: empty, non-string or duplicate level names, or a bad privacy model,
            contribution or ``distinct``.
        BudgetError: a ``budget`` that is not a :class:`Budget`, or bad split weights.

    Example:
        >>> acc = account(Budget.from_args(rho=1.0), ["region", "province"])
        >>> acc.level_rho, [round(s, 6) for s in acc.level_sigma]
        ((0.5, 0.5), [1.414214, 1.414214])
        >>> account(Budget.from_args(rho=1.0), ["region"], privacy="unbounded").level_names
        ('root', 'region')
        >>> acc = account(Budget.from_args(rho=1.0), ["nation", "region"], determined=[True, False])
        >>> acc.level_rho, [round(s, 6) for s in acc.level_sigma]
        ((0.0, 1.0), [0.0, 1.0])
    """
    if not isinstance(budget, Budget):
        raise BudgetError(
            f"budget must be a Budget, got {budget!r}; build one with Budget.from_args(...)"
        )
    names = tuple(_as_list(level_names, "level_names", SpecError))
    if not names:
        raise SpecError("level_names is empty: a hierarchy needs at least one level below root")
    for name in names:
        if not isinstance(name, str) or not name:
            raise SpecError(f"level names must be non-empty strings, got {name!r} in {names!r}")
    model = check_privacy(privacy)
    sens = level_sensitivities(
        len(names), privacy=model, contribution=contribution, distinct=distinct
    )
    if noise_root is None:
        noise_root = model == "unbounded" or int(contribution) > 1
    if model == "unbounded":
        if noise_root:
            names = ("root", *names)
        else:
            # only for mechanisms that never release the root count by itself (their total is
            # a sum of noised leaves): the root's budget would be wasted
            sens = sens[1:]
    elif noise_root:
        # bounded: the root moves by at most m - 1 (units hold 1..m records); with m == 1 and
        # an explicit request, use 1 so that sigma stays positive (conservative)
        names = ("root", *names)
        sens = (_sqrt_up(max(int(contribution) - 1, 1) ** 2), *sens)
    if len(set(names)) != len(names):
        dupes = sorted({n for n in names if names.count(n) > 1})
        raise SpecError(f"level names must be unique, got {names!r} (repeated: {dupes!r})")
    flags = _determined_flags(determined, len(level_names), names)
    active = [i for i, det in enumerate(flags) if not det]
    weights = None if split is None else _as_list(split, "split weights", BudgetError)
    split_rho(budget.rho, len(names), weights)  # checks the weights of every level
    shares = (
        split_rho(
            budget.rho, len(active), None if weights is None else [weights[i] for i in active]
        )
        if active
        else ()
    )
    rhos = [0.0] * len(names)
    for i, r in zip(active, shares, strict=True):
        rhos[i] = r
    if budget.non_private:
        sigmas: tuple[float, ...] = (0.0,) * len(names)
    else:
        sigmas = tuple(
            0.0 if det else sigma_for(d, r) for d, r, det in zip(sens, rhos, flags, strict=True)
        )
    return Accounting(
        budget=budget,
        privacy=model,
        contribution=int(contribution),
        distinct=distinct,
        level_names=names,
        level_sensitivity=sens,
        level_rho=tuple(rhos),
        level_sigma=sigmas,
        level_determined=flags,
    )


def _determined_flags(
    determined: Sequence[bool] | None, n_given: int, names: tuple[str, ...]
) -> tuple[bool, ...]:
    """One flag per noised level: ``determined`` (one per given level name) aligned with
    ``names``, which may start with a prepended ``"root"`` (never determined)."""
    if determined is None:
        return (False,) * len(names)
    flags = _as_list(determined, "determined", SpecError)
    if len(flags) != n_given:
        raise SpecError(
            f"got {len(flags)} determined flags {flags!r} for {n_given} levels; pass one per level"
        )
    for f in flags:
        if not isinstance(f, bool):
            raise SpecError(f"determined flags must be True or False, got {f!r}")
    return (False,) * (len(names) - n_given) + tuple(flags)


# --------------------------------------------------------------------------------------------
# feature releases (CBDP): one histogram per feature, each a partition of the records


def feature_sensitivities(
    totals: Sequence[bool],
    *,
    leaf: int,
    privacy: str = "bounded",
    contribution: int = 1,
    distinct: bool = False,
) -> tuple[tuple[float, float], ...]:
    """The L1 and L2 sensitivity of every feature query of a CBDP release.

    A feature query is the histogram of the records over the cells of a partition of the leaf
    cells. A privacy unit holds at most ``m = contribution`` records.

    * **Unbounded** (add or remove one unit): the histogram gains or loses up to m records, one
      cell each: L1 = m. In L2 the worst case puts all m in one cell: L2 = m; with ``distinct``
      (the m records in m distinct LEAF cells) the leaf histogram moves by at most 1 per cell,
      L2 = sqrt(m); a coarser feature may still gather them in one cell (L2 = m). The total
      (one cell) moves by m. This is the paper's model (``|D1 - D2|_1 <= 1``, sensitivity 1 per
      feature for m = 1).
    * **Bounded** (replace one unit by another): up to m records leave their cells and up to m
      enter others: L1 = 2m (m + m'); L2 = sqrt(2) m (all leave one cell, all enter another),
      sqrt(2m) for the leaf with ``distinct`` (at most one record per cell on each side). The
      total moves by ``|m - m'| <= m - 1``: 0 for m = 1, when N is public and the total is
      released exactly (no noise, no budget), as the root of the TopDown mechanisms.

    Args:
        totals: per feature, whether it is the total (a single cell, no columns).
        leaf: index of the leaf feature.
        privacy: ``"bounded"`` (default) or ``"unbounded"``.
        contribution: m, a positive integer.
        distinct: the m records of a unit are guaranteed to be in distinct leaf cells.

    Returns:
        ``(L1, L2)`` per feature, in the order given.

    Example:
        >>> feature_sensitivities([True, False, False], leaf=2)
        ((0.0, 0.0), (2.0, 1.4142135623730951), (2.0, 1.4142135623730951))
        >>> feature_sensitivities([True, False], leaf=1, privacy="unbounded", contribution=4,
        ...                       distinct=True)
        ((4.0, 4.0), (4.0, 2.0))
    """
    model = check_privacy(privacy)
    m = _check_positive_int("contribution", contribution)
    check_distinct(distinct)
    out = []
    for i, total in enumerate(totals):
        # L1 and the exact square of L2 (integers); L2 is rounded up from it
        if total:
            moved = m if model == "unbounded" else m - 1
            l1, square = moved, moved * moved
        elif model == "unbounded":
            l1, square = m, (m if distinct and i == leaf else m * m)
        else:
            l1, square = 2 * m, (2 * m if distinct and i == leaf else 2 * m * m)
        out.append((float(l1), _sqrt_up(square) if square else 0.0))
    return tuple(out)


def _laplace_scale(l1: float, epsilon: float) -> float:
    """The smallest float scale with ``l1 / scale <= epsilon`` exactly (as rationals)."""
    scale = l1 / epsilon
    while Fraction(l1) / Fraction(scale) > Fraction(epsilon):
        scale = math.nextafter(scale, math.inf)
    return scale


def account_features(
    budget: Budget,
    names: Sequence[str],
    *,
    totals: Sequence[bool],
    leaf: int,
    privacy: str = "bounded",
    contribution: int = 1,
    distinct: bool = False,
    split: Iterable[float] | Mapping[str, float] | None = None,
) -> Accounting:
    """Budget, sensitivity and noise scale of every feature query of a CBDP release.

    The queries compose sequentially (each is a histogram over a partition of all records, so
    within one query the cells compose in parallel). A query whose sensitivity is 0 (the total
    in bounded DP with one record per unit) is released exactly and costs nothing; the budget
    is split over the others, uniformly (the paper's ``epsilon / k``) or by ``split``.

    * A **pure** budget (``epsilon`` alone) draws discrete Laplace noise: query ``i`` gets
      ``epsilon_i`` and the scale ``L1_i / epsilon_i`` (rounded up so that the ratio never
      exceeds ``epsilon_i``), which is ``epsilon_i``-DP; the epsilons add up to ``epsilon``.
      Its zCDP cost ``epsilon_i^2 / 2`` is what the ledger composes.
    * A **zCDP** budget (``rho``, or ``epsilon`` with ``delta``) draws discrete Gaussian noise:
      query ``i`` gets ``rho_i`` and ``sigma_i = L2_i / sqrt(2 rho_i)`` rounded up
      (:func:`sigma_for`), with ``L2_i`` rounded up from its exact square.

    Args:
        budget: the total budget.
        names: the query names, coarse to fine.
        totals: per query, whether it is the total (one cell).
        leaf: index of the leaf query.
        privacy, contribution, distinct: see :func:`feature_sensitivities`.
        split: positive weights, one per NOISED query in order (a sequence) or by name (a
            mapping that names every noised query); uniform by default.

    Returns:
        The accounting; ``level_names`` are the noised queries, ``exact_levels`` the others.

    Raises:
        SpecError: bad names or privacy options.
        BudgetError: bad split weights.

    Example:
        >>> acc = account_features(Budget.from_args(epsilon=1.0, pure=True),
        ...                        ["total", "period", "trip"], totals=[True, False, False],
        ...                        leaf=2, privacy="unbounded")
        >>> acc.noise, [round(e, 6) for e in acc.level_epsilon]
        ('laplace', [0.333333, 0.333333, 0.333333])
        >>> [round(b, 6) for b in acc.level_sigma]
        [3.0, 3.0, 3.0]
        >>> acc = account_features(Budget.from_args(rho=1.0), ["total", "period", "trip"],
        ...                        totals=[True, False, False], leaf=2)
        >>> acc.exact_levels, acc.level_names, [round(x, 4) for x in acc.level_sigma]
        (('total',), ('period', 'trip'), [1.4142, 1.4142])
    """
    if not isinstance(budget, Budget):
        raise BudgetError(f"budget must be a Budget, got {budget!r}")
    names = tuple(names)
    if not names or len(set(names)) != len(names) or len(totals) != len(names):
        raise SpecError(f"feature queries need unique names and one total flag each: {names!r}")
    sens = feature_sensitivities(
        totals, leaf=leaf, privacy=privacy, contribution=contribution, distinct=distinct
    )
    noised = [i for i, (l1, _) in enumerate(sens) if l1 > 0.0]
    exact = tuple(names[i] for i in range(len(names)) if i not in noised)
    weights: list[float] | None
    if split is None:
        weights = None
    elif isinstance(split, Mapping):
        unknown = sorted(set(split) - {names[i] for i in noised})
        missing = [names[i] for i in noised if names[i] not in split]
        if unknown or missing:
            raise BudgetError(
                "split must give a weight to every noised query "
                f"({', '.join(names[i] for i in noised)})"
                + (f"; unknown: {', '.join(map(str, unknown))}" if unknown else "")
                + (f"; missing: {', '.join(missing)}" if missing else "")
                + (f" (released exactly, without budget: {', '.join(exact)})" if exact else "")
            )
        weights = [split[names[i]] for i in noised]
    else:
        weights = list(split)
    model = check_privacy(privacy)
    level_names = tuple(names[i] for i in noised)
    m = int(contribution)
    if budget.pure:
        epsilons = split_rho(budget.epsilon, len(noised), weights)
        l1 = tuple(sens[i][0] for i in noised)
        if budget.non_private:
            scales: tuple[float, ...] = (0.0,) * len(noised)
        else:
            scales = tuple(_laplace_scale(d, e) for d, e in zip(l1, epsilons, strict=True))
        return Accounting(
            budget=budget,
            privacy=model,
            contribution=m,
            distinct=distinct,
            level_names=level_names,
            level_sensitivity=l1,
            level_rho=tuple(pure_rho(e) for e in epsilons),
            level_sigma=scales,
            noise="laplace",
            level_epsilon=epsilons,
            exact_levels=exact,
        )
    rhos = split_rho(budget.rho, len(noised), weights)
    l2 = tuple(sens[i][1] for i in noised)
    if budget.non_private:
        sigmas: tuple[float, ...] = (0.0,) * len(noised)
    else:
        sigmas = tuple(sigma_for(d, r) for d, r in zip(l2, rhos, strict=True))
    return Accounting(
        budget=budget,
        privacy=model,
        contribution=m,
        distinct=distinct,
        level_names=level_names,
        level_sensitivity=l2,
        level_rho=rhos,
        level_sigma=sigmas,
        exact_levels=exact,
    )


# --------------------------------------------------------------------------------------------
# Stability Histogram: (epsilon, delta)-DP by discrete Laplace noise and a threshold


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


# --------------------------------------------------------------------------------------------
# Count-of-counts histograms (Kuo et al., VLDB 2018): pure epsilon-DP by discrete Laplace noise


#: the per-node estimators of a count-of-counts release
COC_METHODS: tuple[str, ...] = ("cumulative", "unattributed", "naive")

_COC_SENSITIVITY = {"cumulative": 1.0, "unattributed": 1.0, "naive": 2.0}


def coc_sensitivity(method: str) -> float:
    """The L1 sensitivity of one node's query under the count-of-counts estimator ``method``.

    Neighbours add or remove one person (an Entities row) of a group listed in the PUBLIC
    groups table: exactly one group changes size by one, from ``s`` to ``s + 1``; sizes are
    truncated at the public ``max_size`` K (a group of size ``s >= K`` counts as size K).

    * ``"naive"``: the histogram ``H[j]`` = number of groups of size j, ``j = min_size .. K``.
      ``H[s]`` loses one group and ``H[s + 1]`` gains one (nothing moves when ``s >= K``):
      sensitivity **2**.
    * ``"cumulative"``: ``Hc[j]`` = number of groups of size ``<= j`` for ``j = min_size ..
      K - 1`` (``Hc[K]`` is the public number of groups, so it is not noised). Only
      ``Hc[s]`` changes (it loses the group): sensitivity **1**.
    * ``"unattributed"``: the sorted group sizes ``Hg`` (``Hg[i]`` = the i-th smallest, a
      vector of public length G). Raising one group from ``s`` to ``s + 1`` raises exactly one
      entry of the sorted vector by one (the last entry equal to ``s``): sensitivity **1**.

    Example:
        >>> coc_sensitivity("cumulative"), coc_sensitivity("naive")
        (1.0, 2.0)
    """
    if method not in _COC_SENSITIVITY:
        raise SpecError(
            f"method must be one of {', '.join(COC_METHODS)}; got {method!r}", param="method"
        )
    return _COC_SENSITIVITY[method]


def discrete_laplace_variance(scale: float) -> float:
    """The variance ``2a / (1 - a)^2`` (``a = exp(-1/scale)``) of discrete Laplace noise.

    About ``2 scale^2`` for large scales (the continuous Laplace's), less for small ones; 0 for
    ``scale = 0``.

    Example:
        >>> round(discrete_laplace_variance(1.0), 4), round(discrete_laplace_variance(100.0), 1)
        (1.8413, 19999.8)
    """
    b = _check_nonneg("scale", scale)
    if b == 0.0:
        return 0.0
    if math.isinf(b):
        return math.inf
    a = math.exp(-1.0 / b)
    return 2.0 * a / (-math.expm1(-1.0 / b)) ** 2


def split_epsilon(
    epsilon: float, n_levels: int, weights: Iterable[float] | None = None
) -> tuple[float, ...]:
    """Split a pure-DP ``epsilon`` over levels (sequential composition), like :func:`split_rho`.

    The parts never sum to more than ``epsilon`` (``math.fsum``); ``inf`` gives ``inf`` parts.

    Example:
        >>> split_epsilon(1.0, 4)
        (0.25, 0.25, 0.25, 0.25)
    """
    return split_rho(epsilon, n_levels, weights)


@dataclass(frozen=True)
class CountOfCountsAccounting:
    """The privacy numbers of a count-of-counts release: pure epsilon-DP, per level.

    Build it with :func:`count_of_counts_accounting`, which states the proof.

    Attributes:
        epsilon: the total epsilon (``inf``: no noise, the exactness oracle).
        method: ``"cumulative"``, ``"unattributed"`` or ``"naive"``.
        level_names: the levels that are estimated (noised), coarsest first.
        level_epsilon: epsilon spent on each of them (they sum to at most ``epsilon``).
        sensitivity: L1 sensitivity of one node's query (:func:`coc_sensitivity`).
        level_scale: discrete Laplace scale of each level, ``sensitivity / level_epsilon``
            rounded up (0.0 for an infinite budget).
        max_size_epsilon: epsilon spent on estimating the largest group size (0.0 when the
            maximum size is given).
        max_size_scale: the discrete Laplace scale of that estimate (sensitivity 1).
    """

    epsilon: float
    method: str
    level_names: tuple[str, ...]
    level_epsilon: tuple[float, ...]
    sensitivity: float
    level_scale: tuple[float, ...]
    max_size_epsilon: float = 0.0
    max_size_scale: float = 0.0

    def __post_init__(self) -> None:
        n = len(self.level_names)
        if n == 0 or len(self.level_epsilon) != n or len(self.level_scale) != n:
            raise SpecError(
                "a count-of-counts accounting needs one name, epsilon and scale per level"
            )
        if self.non_private:
            if any(s != 0.0 for s in self.level_scale):
                raise BudgetError(f"an infinite budget adds no noise, got {self.level_scale!r}")
            return
        if math.fsum([*self.level_epsilon, self.max_size_epsilon]) > self.epsilon * (1.0 + 1e-12):
            raise BudgetError(
                f"the level budgets {self.level_epsilon!r} sum to more than ",
                Arg("epsilon", self.epsilon, "!r"),
            )
        if self.max_size_epsilon and (
            not self.max_size_scale > 0.0
            or Fraction(1) / Fraction(self.max_size_scale) > Fraction(self.max_size_epsilon)
        ):
            raise BudgetError(
                f"max_size scale {self.max_size_scale!r} does not give epsilon "
                f"{self.max_size_epsilon!r}; build accountings with count_of_counts_accounting()"
            )
        for name, e, b in zip(self.level_names, self.level_epsilon, self.level_scale, strict=True):
            if not b > 0.0 or Fraction(self.sensitivity) / Fraction(b) > Fraction(e):
                raise BudgetError(
                    f"level {name!r}: scale {b!r} does not give epsilon {e!r} for sensitivity "
                    f"{self.sensitivity!r}; build accountings with count_of_counts_accounting()"
                )

    @property
    def non_private(self) -> bool:
        """True when epsilon is infinite: no noise is added."""
        return math.isinf(self.epsilon)

    @property
    def rho(self) -> float:
        """The zCDP budget this release spends, for composition with a stored budget: each part
        is ``e``-DP, hence ``e^2 / 2``-zCDP (Bun & Steinke 2016, Prop. 1.4), and zCDP adds up:
        ``sum(e^2 / 2)`` over the levels (and the ``max_size`` estimate), at most
        ``epsilon^2 / 2``."""
        if self.non_private:
            return math.inf
        parts = [*self.level_epsilon, self.max_size_epsilon]
        return math.fsum(e * e / 2.0 for e in parts)

    @property
    def level_variance(self) -> tuple[float, ...]:
        """Variance of one noise draw of each level (:func:`discrete_laplace_variance`)."""
        return tuple(discrete_laplace_variance(b) for b in self.level_scale)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dictionary (infinities as the string ``"inf"``)."""
        return {
            "epsilon": _json_number(self.epsilon),
            "rho": _json_number(self.rho),
            "method": self.method,
            "sensitivity": self.sensitivity,
            "max_size_epsilon": self.max_size_epsilon,
            "max_size_scale": self.max_size_scale,
            "levels": [
                {"name": n, "epsilon": _json_number(e), "scale": b}
                for n, e, b in zip(
                    self.level_names, self.level_epsilon, self.level_scale, strict=True
                )
            ],
        }


def count_of_counts_accounting(
    epsilon: float,
    level_names: Sequence[str],
    *,
    method: str = "cumulative",
    split: Iterable[float] | None = None,
    max_size_share: float = 0.0,
) -> CountOfCountsAccounting:
    """Per-level epsilon and discrete Laplace scale of a count-of-counts release.

    **Mechanism.** Every node of every listed level publishes its query (the histogram, the
    cumulative histogram or the sorted group sizes, :func:`coc_sensitivity`) plus independent
    discrete Laplace noise of scale ``b_l = D / epsilon_l`` per entry, ``D`` the query's L1
    sensitivity. Everything after (isotonic regression, matching, merging, rounding) reads only
    the noisy values and the public groups table: post-processing.

    **Proof** that the release is ``epsilon``-DP for neighbours that add or remove one person
    (both databases having the public hierarchy and groups table). The person's group is fixed
    and sits in exactly one leaf, so at every level exactly one node (the one holding that
    group) sees its query change, by at most ``D`` in L1; the other nodes' queries are
    identical. The discrete Laplace mechanism with ``D / b_l <= epsilon_l`` (rounded so,
    exactly) is ``epsilon_l``-DP for that node, and the nodes of a level are disjoint, so the
    whole level is ``epsilon_l``-DP (parallel composition). Levels compose sequentially:
    ``sum(epsilon_l) <= epsilon``. The sampler's table is within statistical distance 2^-73
    of the exact law per draw (:mod:`inftda_sql.core.noise`), which adds at most
    ``n (1 + e^epsilon) 2^-73`` to delta for ``n`` draws: negligible. For composition with a
    stored zCDP budget the release counts as ``rho = sum(epsilon_l^2 / 2) <= epsilon^2 / 2``
    (:attr:`CountOfCountsAccounting.rho`).

    **The largest group size**, when it is not given (the paper's Section 4.3): a share
    ``max_size_share`` of epsilon buys one discrete Laplace draw of scale
    ``1 / (share * epsilon)`` on the size of the largest group (adding or removing one person
    moves it by at most 1: sensitivity 1); the levels share the rest.

    **The paper's variance estimates** used by the top-down merge are post-processing and live
    with the estimators (:mod:`inftda_sql.core.coc`); they read the per-draw variance
    :attr:`CountOfCountsAccounting.level_variance`.

    Args:
        epsilon: ``> 0``, or ``inf`` for no noise (a non-private test oracle).
        level_names: the levels that get an estimate, coarsest first (the root included; only
            the leaves for the "estimate leaves, then add up" baseline).
        method: ``"cumulative"`` (default), ``"unattributed"`` or ``"naive"``.
        split: optional positive weights of epsilon, one per level (uniform by default).
        max_size_share: the share of epsilon spent on estimating the largest group size
            (0: the maximum size is public, nothing is spent), in [0, 1).

    Returns:
        The accounting.

    Raises:
        BudgetError: a bad ``epsilon`` or split.
        SpecError: a bad method or empty level names.

    Example:
        >>> acct = count_of_counts_accounting(1.0, ["root", "state", "county"])
        >>> [round(e, 4) for e in acct.level_epsilon], [round(b, 4) for b in acct.level_scale]
        ([0.3333, 0.3333, 0.3333], [3.0, 3.0, 3.0])
        >>> count_of_counts_accounting(1.0, ["county"], method="naive").level_scale
        (2.0,)
    """
    eps = _number("epsilon", epsilon)
    if not eps > 0.0:
        raise BudgetError(
            f"epsilon must be positive, got {epsilon!r}; pass e.g. ",
            Arg("epsilon", 1.0),
            ", or ",
            Arg("epsilon", math.inf),
            " for exact (non-private) counts",
            param="epsilon",
        )
    names = tuple(_as_list(level_names, "level_names", SpecError))
    if not names or not all(isinstance(n, str) and n for n in names):
        raise SpecError(f"level_names must be non-empty strings, got {names!r}")
    sens = coc_sensitivity(method)
    share = _number("max_size_share", max_size_share, SpecError)
    if not 0.0 <= share < 1.0:
        raise SpecError(
            f"max_size_share must be in [0, 1), got {max_size_share!r}", param="max_size_share"
        )
    eps_max = 0.0
    if share > 0.0:
        eps_max = eps * share if math.isfinite(eps) else math.inf
    rest = eps if not share else eps - eps_max if math.isfinite(eps) else math.inf
    while math.isfinite(eps) and rest + eps_max > eps:
        rest = math.nextafter(rest, 0.0)
    parts = split_epsilon(rest, len(names), split)
    if math.isinf(eps):
        scales: tuple[float, ...] = (0.0,) * len(names)
        max_scale = 0.0
    else:
        scales = tuple(_laplace_scale(sens, e) for e in parts)
        max_scale = _laplace_scale(1.0, eps_max) if eps_max else 0.0
    if math.isfinite(eps) and eps > EPSILON_WARN_THRESHOLD:
        warnings.warn(
            InftdaWarning(
                Arg("epsilon", eps, ".6g"),
                f" is above {EPSILON_WARN_THRESHOLD:g}: such a release protects individuals "
                "very little",
                param="epsilon",
            ),
            stacklevel=2,
        )
    return CountOfCountsAccounting(
        epsilon=eps,
        method=method,
        level_names=names,
        level_epsilon=parts,
        sensitivity=sens,
        level_scale=scales,
        max_size_epsilon=0.0 if math.isinf(eps_max) else eps_max,
        max_size_scale=max_scale,
    )


# --------------------------------------------------------------------------------------------
# stored budgets: does a release fit?


def budget_verdict(
    table: str,
    budget: Budget,
    spent_rho: float,
    n_releases: int,
    requested: Budget,
    guarantee: str,
    *,
    override: bool,
) -> str | None:
    """Whether a release of ``table`` fits the budget stored for it, after ``n_releases``
    releases that spent ``spent_rho`` (zCDP: rho adds up).

    Returns None when it fits, or the note to record in the ledger when ``override`` lets an
    exceeding release through; otherwise raises :class:`BudgetExceededError` naming what is
    requested, what remains and the difference. An (epsilon, delta)-DP release does not add up
    in rho: on a zCDP-budgeted input it needs the override.

    Example:
        >>> b = Budget.from_args(rho=0.5)
        >>> budget_verdict("t", b, 0.25, 1, Budget.from_args(rho=0.25), "zCDP", override=False)
        >>> budget_verdict("t", b, 0.5, 2, Budget.from_args(rho=0.25), "zCDP", override=True)
        "budget override: spent rho 0.75 exceeds the budget rho 0.5 of 't'"
    """
    remaining = budget.rho - spent_rho
    if guarantee not in COMPOSES_IN_RHO:
        if override:
            return "budget override: (epsilon, delta)-DP release on a zCDP-budgeted input"
        raise BudgetExceededError(
            f"{table!r} has a zCDP budget (",
            Arg("rho", budget.rho, ".6g"),
            ") and this mechanism gives (epsilon, delta)-DP, which does not add up in rho; pass ",
            Arg("budget_override", True),
            " to release anyway (recorded in the ledger) or use a zCDP mechanism",
        )
    if requested.rho <= remaining * (1 + 1e-12) + 1e-15:
        return None
    if override:
        return (
            f"budget override: spent rho {spent_rho + requested.rho:.6g} exceeds the budget "
            f"rho {budget.rho:.6g} of {table!r}"
        )
    eps_remaining = (
        rho_to_epsilon(remaining, budget.delta, budget.conversion) if remaining > 0 else 0.0
    )
    raise BudgetExceededError(
        f"this release of {table!r} would spend ",
        Arg("rho", requested.rho, ".6g"),
        " (",
        Arg("epsilon", requested.epsilon, ".4g"),
        " at ",
        Arg("delta", requested.delta, ".3g"),
        "), but only ",
        Arg("rho", max(remaining, 0.0), ".6g"),
        " (",
        Arg("epsilon", eps_remaining, ".4g"),
        " at ",
        Arg("delta", budget.delta, ".3g"),
        ") remains of its budget ",
        Arg("rho", budget.rho, ".6g"),
        f" after {n_releases} release(s); requested - remaining = "
        f"{requested.rho - remaining:.6g}. Spend less, raise the budget with ",
        Func("set_budget", command="budget"),
        ", or pass ",
        Arg("budget_override", True),
        " (recorded in the ledger)",
    )
