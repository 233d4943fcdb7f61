"""The guarantee a release gives: :class:`Guarantee`, the string written to the ledger."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Protocol


class _Stated(Protocol):
    """What a budget states (every :class:`~.budget.Budget` has it): the numbers a summary
    prints."""

    @property
    def rho(self) -> float: ...

    @property
    def epsilon(self) -> float: ...

    @property
    def delta(self) -> float: ...

    @property
    def conversion(self) -> str: ...


class Guarantee(StrEnum):
    """The privacy guarantee of a release, as recorded in the ledger's ``guarantee`` column.

    A member is its ledger string (``Guarantee.ZCDP == "zCDP"``), so rows written before this
    type existed read back as members: ``Guarantee("pureDP") is Guarantee.PURE_DP``.

    * ``ZCDP``: rho-zCDP (a budget given as rho, or as (epsilon, delta) converted to rho).
    * ``PURE_DP``: epsilon-DP, which is also ``epsilon^2 / 2``-zCDP and composes as such.
    * ``APPROX_DP``: an (epsilon, delta)-DP guarantee only (the Stability Histogram), which does
      not add up in rho.

    Example:
        >>> Guarantee("approxDP").composes_in_rho, Guarantee.PURE_DP.charged_rho(0.125)
        (False, 0.125)
    """

    ZCDP = "zCDP"
    APPROX_DP = "approxDP"
    PURE_DP = "pureDP"

    @property
    def composes_in_rho(self) -> bool:
        """True when releases with this guarantee compose by adding rho (zCDP, pure DP)."""
        return self is not Guarantee.APPROX_DP

    def charged_rho(self, rho: float | None) -> float | None:
        """What a release that spent ``rho`` charges to a stored zCDP budget: ``rho``, or
        None when the guarantee does not add up in rho (then it is counted apart)."""
        return rho if self.composes_in_rho else None

    def budget_line(self, budget: _Stated, params: dict[str, Any]) -> str:
        """The budget of a release with this guarantee, in one line of its summary (without the
        ``budget:`` prefix); ``params`` are the mechanism's recorded parameters (the
        Stability Histogram's ``scale`` and ``threshold``).

        Example:
            >>> from inftda_sql.core.accounting import Budget
            >>> Guarantee.ZCDP.budget_line(Budget.from_args(rho=0.5, delta=1e-6), {})
            'rho=0.5 ~ (epsilon=5.22153, delta=1e-06) [tight conversion]'
        """
        if self is Guarantee.PURE_DP:
            return (
                f"epsilon={budget.epsilon:.6g} pure DP, discrete Laplace noise "
                f"(rho={budget.rho:.6g} when composed with zCDP releases)"
            )
        if self is Guarantee.APPROX_DP:
            scale, threshold = params.get("scale", float("nan")), params.get("threshold")
            return (
                f"(epsilon={budget.epsilon:.6g}, delta={budget.delta:.3g})-DP; discrete Laplace "
                f"scale {scale:.4g}, threshold {threshold}"
            )
        return (
            f"rho={budget.rho:.6g} ~ (epsilon={budget.epsilon:.6g}, delta={budget.delta:.3g}) "
            f"[{budget.conversion} conversion]"
        )
