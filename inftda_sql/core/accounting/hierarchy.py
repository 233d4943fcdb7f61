"""Hierarchy releases: per-level L2 sensitivities, the per-level split of ``rho``, the discrete
Gaussian scales, and the :class:`Accounting` that records them (:func:`account`).
"""

from __future__ import annotations

import html
import math
import numbers
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..._errors import Arg, BudgetError, SpecError
from ..._tables import Column, html_table, text_table
from ._common import DETERMINED_NOTE, NOISES, PrivacyModel, _as_list, _fmt, _json_number, _number
from .budget import Budget
from .conversions import pure_rho, zcdp_compose


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
        if self.noise != self.budget.noise:
            raise BudgetError(
                f"{self.noise} noise does not go with a {self.budget.label} "
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
