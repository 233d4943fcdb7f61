"""Feature releases (CBDP): one histogram per feature, each a partition of the records."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction

from ..._errors import BudgetError, SpecError
from .budget import Budget
from .conversions import pure_rho
from .hierarchy import (
    Accounting,
    _check_positive_int,
    _sqrt_up,
    check_distinct,
    check_privacy,
    sigma_for,
    split_rho,
)


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

    The budget's kind says which noise (:attr:`Budget.noise`):

    * A **pure** budget (``epsilon`` alone, :class:`PureDPBudget`) draws discrete Laplace
      noise: query ``i`` gets ``epsilon_i`` and the scale ``L1_i / epsilon_i`` (rounded up
      so that the ratio never exceeds ``epsilon_i``), which is ``epsilon_i``-DP; the epsilons
      add up to ``epsilon``. Its zCDP cost ``epsilon_i^2 / 2`` is what the ledger composes.
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
    if budget.noise == "laplace":
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
