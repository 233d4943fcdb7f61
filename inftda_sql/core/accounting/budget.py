"""The :class:`Budget` and its kinds (rho, (epsilon, delta), pure epsilon): a validated zCDP
``rho`` and the ``(epsilon, delta)``-DP it implies."""

from __future__ import annotations

import math
import sys
import warnings
from abc import ABCMeta, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from ..._errors import Arg, BudgetError, Code, InftdaWarning
from ._common import (
    DEFAULT_REPORT_DELTA,
    EPSILON_WARN_THRESHOLD,
    Conversion,
    _check_conversion,
    _check_delta,
    _fmt,
    _json_number,
    _number,
)
from .conversions import epsilon_to_rho, pure_rho, rho_to_delta, rho_to_epsilon
from .guarantee import Guarantee


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
# Budget and its three kinds


class _BudgetKind(ABCMeta):
    """Lets ``Budget(rho=..., epsilon=..., delta=..., given=...)`` build the kind ``given``
    names (``"rho"`` by default), as it did when the kind was a tag; a kind built by its own
    name refuses a ``given`` that names another."""

    def __call__(cls, *args: Any, given: str | None = None, **kwargs: Any) -> Any:
        if cls is Budget:
            kind = _KINDS.get("rho" if given is None else given)
            if kind is None:
                raise BudgetError(
                    f"given must be 'rho', 'epsilon_delta' or 'epsilon', got {given!r}"
                )
            return kind(*args, **kwargs)
        if given is not None and given != cls.given:  # type: ignore[attr-defined]
            raise BudgetError(
                f"a {cls.__name__} is given as {cls.given!r}, got given={given!r}"  # type: ignore[attr-defined]
            )
        return super().__call__(*args, **kwargs)


@dataclass(frozen=True)
class Budget(metaclass=_BudgetKind):
    """A privacy budget: its zCDP ``rho`` and the ``(epsilon, delta)``-DP guarantee it implies.

    An abstract base with one subclass per way the user gives it (as Tumult Analytics'
    ``RhoZCDPBudget``, ``ApproxDPBudget`` and ``PureDPBudget``):

    * :class:`RhoZCDPBudget`: ``rho`` alone; epsilon is reported at
      ``delta = DEFAULT_REPORT_DELTA = 1e-8``, or at the ``delta`` passed with it.
    * :class:`ApproxDPBudget`: ``(epsilon, delta)``; ``rho`` is the largest zCDP budget that
      implies it under ``conversion``.
    * :class:`PureDPBudget`: a pure epsilon (``delta = 0``), accepted only by mechanisms that
      add Laplace noise (CBDP); it is recorded with ``rho = epsilon^2 / 2``, the zCDP cost of
      any epsilon-DP mechanism (Bun & Steinke 2016, Prop. 1.4), so it composes with zCDP
      releases of the same input.

    Build one with :meth:`from_args`, which returns the right kind. ``rho = inf`` (or
    ``epsilon = inf``) means no noise at all: a non-private test oracle, marked ``NON-PRIVATE``
    when printed. What differs between the kinds is a method or a class attribute of each, never
    a tag to branch on: how it prints (``str``), how it is reported (:meth:`as_dict`), the
    noise a mechanism with a choice draws (:attr:`noise`), the guarantee of a release calibrated
    to it (:attr:`guarantee`), the ``release()`` arguments that ask for it
    (:meth:`release_args`). Every kind costs ``rho`` when composed with stored zCDP budgets.

    Attributes:
        rho: total zCDP budget, ``> 0`` or ``inf``.
        epsilon: epsilon of the implied ``(epsilon, delta)``-DP guarantee (``inf`` when
            ``rho`` is).
        delta: delta of that guarantee, in (0, 1) (``0`` for a pure budget).
        conversion: ``"tight"`` (default) or ``"simple"``.
        given: ``"rho"``, ``"epsilon_delta"`` or ``"epsilon"``: what the user specified (the
            ledger's ``budget_given``), fixed by the kind.
        pure: True for a :class:`PureDPBudget`.
        label: the kind in one word for messages, ``"zCDP"`` or ``"pure"``.
        noise: ``"gaussian"`` or ``"laplace"``: the noise of a mechanism that can add either.
        guarantee: the :class:`Guarantee` of a release whose noise is calibrated to this
            budget (a mechanism may give a weaker one: the Stability Histogram's approxDP).

    Example:
        >>> b = Budget.from_args(epsilon=1.0, delta=1e-6, conversion="simple")
        >>> type(b).__name__, round(b.rho, 6)
        ('ApproxDPBudget', 0.017469)
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

    given: ClassVar[str]
    pure: ClassVar[bool]
    label: ClassVar[str]
    noise: ClassVar[Literal["gaussian", "laplace"]]
    guarantee: ClassVar[Guarantee]

    def __post_init__(self) -> None:
        rho = _number("rho", self.rho)
        epsilon = _number("epsilon", self.epsilon)
        conversion = _check_conversion(self.conversion)
        delta = self._check(rho, epsilon, conversion)
        for name, value in (("rho", rho), ("epsilon", epsilon), ("delta", delta)):
            object.__setattr__(self, name, value)

    @abstractmethod
    def _check(self, rho: float, epsilon: float, conversion: Conversion) -> float:
        """Refuse values this kind cannot hold (``rho``, ``epsilon`` are numbers already);
        return the checked delta."""

    @abstractmethod
    def _describe(self) -> str:
        """The budget in one line, when it is private."""

    @abstractmethod
    def release_args(self) -> dict[str, Any]:
        """The budget arguments of ``release()`` that ask for this budget again."""

    def _marks(self) -> dict[str, Any]:
        """Entries :meth:`as_dict` adds for this kind."""
        return {}

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
            The budget: a :class:`RhoZCDPBudget` for ``rho``, an :class:`ApproxDPBudget` for
            ``epsilon`` with ``delta``, a :class:`PureDPBudget` for a pure ``epsilon``.

        Raises:
            BudgetError: both ``rho`` and ``epsilon``, neither, ``epsilon`` without ``delta``,
                a non-positive, NaN, boolean or non-numeric value, ``delta`` outside (0, 1),
                an unknown conversion, or a finite budget beyond float's range (a ``rho`` whose
                epsilon overflows or that is subnormal, a pure ``epsilon`` whose rho overflows).
                The message names the value and the fix.

        Warns:
            UserWarning: a finite epsilon above ``EPSILON_WARN_THRESHOLD = 20``.

        Example:
            >>> b = Budget.from_args(rho=0.5)
            >>> b.given, b.delta, round(b.epsilon, 4)
            ('rho', 1e-08, 6.0862)
            >>> p = Budget.from_args(epsilon=1.0, pure=True)
            >>> type(p).__name__, p.pure, p.delta, p.rho
            ('PureDPBudget', True, 0.0, 0.5)
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
        budget: Budget
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
            if r < sys.float_info.min:  # subnormal: no level's share of it is exact
                raise BudgetError(
                    f"rho={rho!r} is too small to be a budget: its noise (sigma above 1e150) "
                    "would hide any count; raise ",
                    Arg("rho"),
                    param="rho",
                )
            d = DEFAULT_REPORT_DELTA if delta is None else _check_delta(delta)
            e = rho_to_epsilon(r, d, conv)
            if math.isinf(e) and math.isfinite(r):
                raise BudgetError(
                    f"rho={rho!r} is too large to be a privacy budget: its epsilon (at delta "
                    f"{d:g}) overflows to infinity; pass a plausible rho (e.g. ",
                    Arg("rho", 0.5),
                    "; above about 1 a release protects little), or ",
                    Arg("rho", math.inf),
                    " for exact (non-private) counts",
                    param="rho",
                )
            budget = RhoZCDPBudget(rho=r, epsilon=e, delta=d, conversion=conv)
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
                _check_pure_range(epsilon, e)
                budget = PureDPBudget(rho=pure_rho(e), epsilon=e, delta=0.0, conversion=conv)
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
            budget = ApproxDPBudget(rho=r, epsilon=e, delta=d, conversion=conv)
        _warn_large(budget)
        return budget

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
            **self._marks(),
            "non_private": self.non_private,
        }

    def __str__(self) -> str:
        if self.non_private:
            return "NON-PRIVATE budget: rho = inf, no noise (exact counts; a test oracle)"
        return self._describe()


def _check_pure_range(given: object, epsilon: float) -> None:
    """Refuse a finite pure ``epsilon`` whose zCDP ``rho = epsilon^2 / 2`` overflows: it would
    read as an infinite budget, no noise at all. (A tiny one is the noise range's to refuse.)"""
    if math.isfinite(epsilon) and math.isinf(pure_rho(epsilon)):
        raise BudgetError(
            f"epsilon={given!r} is too large to be a privacy budget: epsilon^2 / 2 overflows; "
            "pass a plausible epsilon (e.g. ",
            Arg("epsilon", 1.0),
            "), or ",
            Arg("epsilon", math.inf),
            " for exact (non-private) counts",
            param="epsilon",
        )


def _check_zcdp(budget: Budget, rho: float, epsilon: float, conversion: Conversion) -> float:
    """The checks of a zCDP budget: ``rho`` must imply the ``(epsilon, delta)`` it reports."""
    delta = _check_delta(budget.delta)
    if rho <= 0.0:
        raise BudgetError(f"rho must be positive, got {budget.rho!r}", param="rho")
    if epsilon < 0.0:
        raise BudgetError(f"epsilon must be non-negative, got {budget.epsilon!r}", param="epsilon")
    if math.isinf(rho) != math.isinf(epsilon):
        raise BudgetError(
            Arg("rho", budget.rho, "!r"),
            " and ",
            Arg("epsilon", budget.epsilon, "!r"),
            " are inconsistent: exactly one is infinite; build budgets with Budget.from_args",
        )
    # The guarantee reported must hold: rho-zCDP => (epsilon, delta)-DP.
    if not math.isinf(rho) and rho_to_delta(rho, epsilon, conversion) > delta * (1 + 1e-9):
        raise BudgetError(
            Arg("rho", budget.rho, "!r"),
            " does not imply (",
            Arg("epsilon", budget.epsilon, "!r"),
            ", ",
            Arg("delta", budget.delta, "!r"),
            f")-DP under the {conversion} conversion; build budgets with Budget.from_args",
        )
    return delta


def _zcdp_text(budget: Budget, note: str = "") -> str:
    return (
        f"rho = {_fmt(budget.rho)} zCDP => (epsilon = {_fmt(budget.epsilon)}, "
        f"delta = {budget.delta:g})-DP [{budget.conversion} conversion{note}]"
    )


@dataclass(frozen=True)
class RhoZCDPBudget(Budget):
    """A budget given as zCDP ``rho`` (``delta`` is where epsilon is reported).

    Example:
        >>> b = Budget.from_args(rho=0.5)
        >>> isinstance(b, RhoZCDPBudget), b.release_args()["rho"], b.guarantee
        (True, 0.5, <Guarantee.ZCDP: 'zCDP'>)
    """

    given: ClassVar[str] = "rho"
    pure: ClassVar[bool] = False
    label: ClassVar[str] = "zCDP"
    noise: ClassVar[Literal["gaussian", "laplace"]] = "gaussian"
    guarantee: ClassVar[Guarantee] = Guarantee.ZCDP

    def _check(self, rho: float, epsilon: float, conversion: Conversion) -> float:
        return _check_zcdp(self, rho, epsilon, conversion)

    def _describe(self) -> str:
        note = ""
        if self.delta == DEFAULT_REPORT_DELTA:
            note = f"; delta is the default reporting delta {DEFAULT_REPORT_DELTA:g}"
        return _zcdp_text(self, note)

    def release_args(self) -> dict[str, Any]:
        return {"rho": self.rho, "delta": self.delta, "conversion": self.conversion}


@dataclass(frozen=True)
class ApproxDPBudget(Budget):
    """A budget given as ``(epsilon, delta)``, spent as the largest ``rho`` that implies it
    (or, by an (epsilon, delta)-DP mechanism such as the Stability Histogram, as given).

    Example:
        >>> b = Budget.from_args(epsilon=1.0, delta=1e-6)
        >>> isinstance(b, ApproxDPBudget), b.given, b.noise
        (True, 'epsilon_delta', 'gaussian')
    """

    given: ClassVar[str] = "epsilon_delta"
    pure: ClassVar[bool] = False
    label: ClassVar[str] = "zCDP"
    noise: ClassVar[Literal["gaussian", "laplace"]] = "gaussian"
    guarantee: ClassVar[Guarantee] = Guarantee.ZCDP

    def _check(self, rho: float, epsilon: float, conversion: Conversion) -> float:
        return _check_zcdp(self, rho, epsilon, conversion)

    def _describe(self) -> str:
        return _zcdp_text(self)

    def release_args(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "delta": self.delta, "conversion": self.conversion}


@dataclass(frozen=True)
class PureDPBudget(Budget):
    """A pure epsilon-DP budget: ``delta = 0``, ``rho = epsilon^2 / 2``, Laplace noise.

    Example:
        >>> p = Budget.from_args(epsilon=1.0, pure=True)
        >>> isinstance(p, PureDPBudget), p.noise, p.guarantee.value, p.as_dict()["pure"]
        (True, 'laplace', 'pureDP', True)
    """

    given: ClassVar[str] = "epsilon"
    pure: ClassVar[bool] = True
    label: ClassVar[str] = "pure"
    noise: ClassVar[Literal["gaussian", "laplace"]] = "laplace"
    guarantee: ClassVar[Guarantee] = Guarantee.PURE_DP

    def _check(self, rho: float, epsilon: float, conversion: Conversion) -> float:
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
        return delta

    def _describe(self) -> str:
        return (
            f"epsilon = {_fmt(self.epsilon)} pure DP (delta = 0; rho = {_fmt(self.rho)} "
            "zCDP when composed with zCDP releases)"
        )

    def _marks(self) -> dict[str, Any]:
        return {"pure": True}

    def release_args(self) -> dict[str, Any]:
        # release() makes an epsilon without delta a pure budget for the mechanisms taking one
        return {"epsilon": self.epsilon, "conversion": self.conversion}


#: the kind of each ``given``
_KINDS: dict[str, type[Budget]] = {
    kind.given: kind for kind in (RhoZCDPBudget, ApproxDPBudget, PureDPBudget)
}
