"""Constants and argument checks shared by the accounting modules."""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from typing import Any, Literal

from ..._errors import Arg, BudgetError, Code, InftdaError

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
