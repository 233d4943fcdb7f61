"""Mechanisms a release can run: InfTDA and the baselines users compare it with.

One module per mechanism, each defining one frozen :class:`~.base.Mechanism` named
``MECHANISM``; :data:`REGISTRY` lists them, and nothing outside this package looks at a
mechanism's name. Adding a mechanism means adding its module and its entry below.

* ``inftda``: TopDown with IntOpt. Non-negative integers, consistent at every level, total N
  kept in bounded DP. zCDP.
* ``vanilla_gauss``: discrete Gaussian on every leaf cell of the full domain. Integers,
  unbiased, NEGATIVE COUNTS POSSIBLE, empty cells released as noise (non-zero cells stored).
  zCDP. Refuses domains above ``max_cells`` leaf cells.
* ``stability_histogram``: discrete Laplace on the positive leaf counts, small noisy counts
  dropped. Non-negative integers, no false positives, biased. ``(epsilon, delta)``-DP
  ("approxDP"): needs ``epsilon`` and ``delta``, and its ledger row has no rho.
* ``tda_l2``: TopDown with a Euclidean projection and rounding per parent. Non-negative
  integers, consistent. zCDP.
* ``tda_linf_solver``: TopDown with the integer Chebyshev problem solved by a MILP solver
  (``inftda-sql[solver]``). Non-negative integers, consistent. zCDP.
* ``cbdp``: Constraint-Based DP over a lattice of FEATURES (``features=``, not a hierarchy):
  discrete Laplace (pure epsilon) or Gaussian (zCDP) noise on every cell of every feature,
  weighted least squares over the leaves, rounding. Non-negative integers, consistent across
  every feature. Refuses domains above ``max_cells`` leaf cells.
* ``hierarchical``: Hay et al. on the full domain tree. Real estimates rounded top-down for
  storage (the root, then every parent's children to the parent's stored integer, by largest
  remainder), NEGATIVE COUNTS POSSIBLE; consistent (every stored node is the sum of its stored
  leaves; N in bounded DP). zCDP. Refuses trees above ``max_cells`` nodes.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._errors import SpecError
from ..core.spec import TreeSpec
from ..core.tree import ChainTree, TopDownResult
from . import (
    cbdp,
    hierarchical,
    inftda,
    stability_histogram,
    tda_l2,
    tda_linf_solver,
    vanilla_gauss,
)
from .base import (
    DEFAULT_MAX_CELLS,
    FeatureContext,
    FeatureMechanism,
    FeatureResult,
    Mechanism,
    MechanismContext,
)

__all__ = [
    "DEFAULT_MAX_CELLS",
    "MECHANISMS",
    "REGISTRY",
    "FeatureContext",
    "FeatureMechanism",
    "FeatureResult",
    "Mechanism",
    "MechanismContext",
    "check_full_domain",
    "feature_mechanism",
    "feature_mechanisms",
    "get",
    "noised_levels",
    "run_mechanism",
    "tree_mechanism",
]

#: every mechanism, by name (the first is the default)
REGISTRY: dict[str, Mechanism | FeatureMechanism] = {
    m.name: m
    for m in (
        inftda.MECHANISM,
        vanilla_gauss.MECHANISM,
        stability_histogram.MECHANISM,
        tda_l2.MECHANISM,
        tda_linf_solver.MECHANISM,
        hierarchical.MECHANISM,
        cbdp.MECHANISM,
    )
}
#: the names ``mechanism=`` accepts
MECHANISMS: tuple[str, ...] = tuple(REGISTRY)


def get(name: object) -> Mechanism | FeatureMechanism:
    """The mechanism called ``name``, or a SpecError listing the names there are."""
    if not isinstance(name, str) or name not in REGISTRY:
        raise SpecError(
            f"mechanism must be one of {', '.join(REGISTRY)}; got {name!r}", param="mechanism"
        )
    return REGISTRY[name]


def feature_mechanisms() -> list[str]:
    """The names of the mechanisms that release features (``features=``)."""
    return [n for n, m in REGISTRY.items() if isinstance(m, FeatureMechanism)]


def tree_mechanism(name: object) -> Mechanism:
    """The hierarchy mechanism called ``name``; a SpecError for a feature mechanism."""
    mech = get(name)
    if isinstance(mech, FeatureMechanism):
        trees = [n for n in MECHANISMS if n not in feature_mechanisms()]
        raise SpecError(
            f"mechanism {mech.name!r} releases features (features=...), not a hierarchy; "
            f"hierarchy mechanisms: {', '.join(trees)}"
        )
    return mech


def feature_mechanism(name: object) -> FeatureMechanism:
    """The feature mechanism called ``name``; a SpecError for a hierarchy mechanism."""
    mech = get(name)
    if not isinstance(mech, FeatureMechanism):
        raise SpecError(
            f"mechanism {mech.name!r} releases a hierarchy (hierarchy=...), not features; "
            f"feature mechanisms: {', '.join(feature_mechanisms())}"
        )
    return mech


def noised_levels(mechanism: str, spec: TreeSpec) -> list[str]:
    """Names of the levels below the root whose noise ``mechanism`` pays for."""
    return tree_mechanism(mechanism).noised_levels(spec)


def check_full_domain(
    mechanism: str, spec: TreeSpec, chains: Sequence[ChainTree], max_cells: int
) -> list[int]:
    """Cells per level of the full domain; a SpecError if ``mechanism`` would exceed
    ``max_cells`` (leaf cells for ``vanilla_gauss``, all nodes for ``hierarchical``)."""
    return tree_mechanism(mechanism).full_domain_cells(spec, chains, max_cells)


def run_mechanism(mechanism: str, ctx: MechanismContext) -> TopDownResult:
    """Run ``mechanism`` on ``ctx``, after checking it can run with the context's budget."""
    mech = tree_mechanism(mechanism)
    mech.check(ctx.accounting.budget)
    return mech.run(ctx)
