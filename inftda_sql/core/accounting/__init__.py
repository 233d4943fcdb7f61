"""Every privacy number of a release: budgets, conversions, sensitivities, per-level noise.

This is the only module that turns a privacy budget into noise scales. Its pieces:

* :class:`Budget`: a validated zCDP budget ``rho`` together with the ``(epsilon, delta)``-DP
  guarantee it implies, built with :meth:`Budget.from_args` from either ``rho`` or
  ``epsilon`` and ``delta`` (or a pure ``epsilon``). Each way of giving it is a subclass,
  :class:`RhoZCDPBudget`, :class:`ApproxDPBudget`, :class:`PureDPBudget`, whose methods hold
  what differs between them.
* :class:`Guarantee`: the guarantee of a release, as written to the ledger (``zCDP``,
  ``approxDP``, ``pureDP``), and whether it composes in rho.
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

The modules, one job each: :mod:`._common` (constants, argument checks), :mod:`.conversions`
(rho <-> (epsilon, delta), composition), :mod:`.guarantee` (:class:`Guarantee`),
:mod:`.budget` (:class:`Budget` and its kinds), :mod:`.hierarchy`
(sensitivities, the per-level split, :class:`Accounting`), :mod:`.features` (CBDP),
:mod:`.stability` (Stability Histogram), :mod:`.coc` (count-of-counts), :mod:`.verdict` (stored
budgets). Import the names from this package: it re-exports every one of them.
"""

from __future__ import annotations

from ._common import (
    CONVERSIONS,
    DEFAULT_REPORT_DELTA,
    DETERMINED_NOTE,
    EPSILON_WARN_THRESHOLD,
    NOISES,
    PRIVACY_MODELS,
)
from .budget import ApproxDPBudget, Budget, PureDPBudget, RhoZCDPBudget
from .coc import (
    COC_METHODS,
    CountOfCountsAccounting,
    coc_sensitivity,
    count_of_counts_accounting,
    discrete_laplace_variance,
    split_epsilon,
)
from .conversions import epsilon_to_rho, pure_rho, rho_to_delta, rho_to_epsilon, zcdp_compose
from .features import account_features, feature_sensitivities
from .guarantee import Guarantee
from .hierarchy import (
    Accounting,
    account,
    check_distinct,
    check_privacy,
    level_sensitivities,
    sigma_for,
    split_rho,
    squared_sensitivities,
)
from .stability import StabilityHistogram, stability_histogram
from .verdict import budget_verdict

__all__ = [
    "COC_METHODS",
    "CONVERSIONS",
    "DEFAULT_REPORT_DELTA",
    "DETERMINED_NOTE",
    "EPSILON_WARN_THRESHOLD",
    "NOISES",
    "PRIVACY_MODELS",
    "Accounting",
    "ApproxDPBudget",
    "Budget",
    "CountOfCountsAccounting",
    "Guarantee",
    "PureDPBudget",
    "RhoZCDPBudget",
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
