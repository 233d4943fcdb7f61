"""The :class:`Budget`: a validated zCDP ``rho`` and the ``(epsilon, delta)``-DP it implies."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

from ..._errors import Arg, BudgetError, Code, InftdaWarning
from ._common import (
    DEFAULT_REPORT_DELTA,
    EPSILON_WARN_THRESHOLD,
    _check_conversion,
    _check_delta,
    _fmt,
    _json_number,
    _number,
)
from .conversions import epsilon_to_rho, pure_rho, rho_to_delta, rho_to_epsilon


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
