"""Count-of-counts histograms (Kuo et al., VLDB 2018): pure epsilon-DP by discrete Laplace noise."""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..._errors import Arg, BudgetError, InftdaWarning, SpecError
from ..noise import SCALE_MAX
from ._common import EPSILON_WARN_THRESHOLD, _as_list, _check_nonneg, _json_number, _number
from .features import _laplace_scale
from .hierarchy import split_rho

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
    if math.isfinite(eps):  # first the whole epsilon: a tiny one cannot even be split
        _check_scales(epsilon, sens, [eps], 0.0)
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
        _check_scales(epsilon, sens, parts, eps_max)
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


def _check_scales(
    epsilon: object, sensitivity: float, parts: Sequence[float], max_size_epsilon: float
) -> None:
    """Refuse, from the accounting alone, an ``epsilon`` whose noise scale (sensitivity over a
    level's part, 1 over the ``max_size`` part) is beyond what the discrete Laplace sampler
    draws (``SCALE_MAX``: the draws must fit int64)."""
    scales = [sensitivity / e if e > 0.0 else math.inf for e in parts]
    if max_size_epsilon:
        scales.append(1.0 / max_size_epsilon)
    largest = max(scales, default=0.0)
    if largest > SCALE_MAX:
        raise BudgetError(
            f"epsilon={epsilon!r} is so small that a level's noise has scale {largest:.3g}, "
            "above the 2**57 (about 1.4e17) that the sampler draws from, and far above any "
            "count; raise ",
            Arg("epsilon"),
            param="epsilon",
        )
