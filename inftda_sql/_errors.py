"""Exceptions raised by inftda_sql.

Every error names the problem, the offending value and the fix. The tree::

    InftdaError                      base of everything raised on purpose
    ├── BudgetError(ValueError)      privacy budget missing, contradictory or out of range
    ├── SpecError(ValueError)        hierarchy / option specification is malformed
    ├── DomainError(ValueError)     the public domain is missing, not nested, or lacks input values
    ├── InputDataError(ValueError)   the private input has NULLs, bad counts, unknown columns ...
    ├── OutputExistsError(ValueError) the output table exists and overwrite=False
    ├── BudgetExceededError(BudgetError) a release would spend more than the stored budget allows
    └── InternalError(RuntimeError)  an invariant of the library failed: a bug, please report it

Messages of errors raised *before* noise may describe the private input to the data owner;
nothing from them is ever written into a published table.
"""

from __future__ import annotations

__all__ = [
    "BudgetError",
    "BudgetExceededError",
    "DomainError",
    "InftdaError",
    "InputDataError",
    "InternalError",
    "OutputExistsError",
    "SpecError",
]


class InftdaError(Exception):
    """Base class of all errors raised by inftda_sql on purpose."""


class BudgetError(InftdaError, ValueError):
    """The privacy budget is missing, contradictory or out of range."""


class BudgetExceededError(BudgetError):
    """A release would spend more than the budget stored for its input table."""


class SpecError(InftdaError, ValueError):
    """A hierarchy or an option of a release is malformed."""


class DomainError(InftdaError, ValueError):
    """The public domain is missing, not nested, or does not cover the input."""


class InputDataError(InftdaError, ValueError):
    """The private input violates a rule (NULL keys, negative counts, unknown columns...)."""


class OutputExistsError(InftdaError, ValueError):
    """The output table already exists and ``overwrite=True`` was not given."""


class InternalError(InftdaError, RuntimeError):
    """An internal invariant failed. This is a bug in inftda_sql: please report it."""

    def __init__(self, message: str) -> None:
        super().__init__(f"{message} (this is a bug in inftda_sql; please report it)")
