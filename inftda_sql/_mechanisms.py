"""Mechanisms a release can run: InfTDA and the baselines users compare it with.

Every mechanism receives the same :class:`MechanismContext` (the validated spec, the public
domain as code ranges, a way to read the true counts of any level, the accounting and the random
source) and returns a :class:`~inftda_sql.core.topdown.TopDownResult`: leaf codes per chain, counts,
per-level statistics. The accounting module decides sensitivities and sigmas; a mechanism only
says which levels it noises (:func:`noised_levels`) and what guarantee it gives
(:data:`GUARANTEES`).

What each mechanism releases (the baselines are in :mod:`._baselines`):

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
* ``hierarchical``: Hay et al. on the full domain tree. Real estimates ROUNDED to the nearest
  integer for storage, NEGATIVE COUNTS POSSIBLE; consistent before rounding, NOT after (the
  stored leaves do not sum exactly to the estimates of their ancestors, nor to N). zCDP.
  Refuses trees above ``max_cells`` nodes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from . import _baselines
from ._errors import SpecError
from .core.accounting import Accounting, Budget
from .core.rng import RandomSource
from .core.spec import TreeSpec
from .core.tree import ChainTree, LevelStats, TopDownResult

__all__ = [
    "DEFAULT_MAX_CELLS",
    "GUARANTEES",
    "MECHANISMS",
    "RELEASES_ROOT",
    "MechanismContext",
    "check_mechanism",
    "noised_levels",
    "run_mechanism",
]

I64 = npt.NDArray[np.int64]

MECHANISMS = (
    "inftda",
    "vanilla_gauss",
    "stability_histogram",
    "tda_l2",
    "tda_linf_solver",
    "hierarchical",
)
#: the privacy guarantee of each mechanism, as recorded in the ledger
GUARANTEES = {
    "inftda": "zCDP",
    "vanilla_gauss": "zCDP",
    "stability_histogram": "approxDP",
    "tda_l2": "zCDP",
    "tda_linf_solver": "zCDP",
    "hierarchical": "zCDP",
}
#: whether a mechanism releases the root count by itself (TopDown does; the leaf-only
#: mechanisms publish the total only as a sum of noised leaves, so a root share is wasted)
RELEASES_ROOT = {
    "inftda": True,
    "vanilla_gauss": False,
    "stability_histogram": False,
    "tda_l2": True,
    "tda_linf_solver": True,
    "hierarchical": True,
}
#: mechanisms that materialise every cell of the full domain refuse above this many cells
DEFAULT_MAX_CELLS = 50_000_000


@dataclass(frozen=True)
class MechanismContext:
    """Everything a mechanism may use. Nothing in it but ``true_level``/``total`` is private."""

    spec: TreeSpec
    chains: Sequence[ChainTree]
    true_level: Callable[[int, tuple[int, ...]], tuple[I64, I64]]
    """``(level, strides) -> (sorted keys, counts)``: true non-zero counts of a level (>= 1)."""
    total: int
    accounting: Accounting
    source: RandomSource
    progress: Callable[[LevelStats], None] | None = None
    max_cells: int = DEFAULT_MAX_CELLS
    threads: int = 2

    @property
    def tree_sigmas(self) -> list[float]:
        """Sigma of every level of the tree, root first (0 where a level is not noised)."""
        acct = self.accounting
        if acct.level_names and acct.level_names[0] == "root":
            return list(acct.level_sigma)
        return [0.0, *acct.level_sigma]


def noised_levels(mechanism: str, spec: TreeSpec) -> list[str]:
    """Names of the levels below the root whose noise ``mechanism`` pays for."""
    _check(mechanism)
    levels = [spec.level_name(lv) for lv in range(1, spec.n_levels + 1)]
    if mechanism in ("vanilla_gauss", "stability_histogram"):
        return levels[-1:]
    return levels


def _check(mechanism: str) -> None:
    if mechanism not in MECHANISMS:
        raise SpecError(f"mechanism must be one of {', '.join(MECHANISMS)}; got {mechanism!r}")


def _inftda(ctx: MechanismContext) -> TopDownResult:
    return _baselines.run_topdown(ctx)


def check_mechanism(mechanism: str, budget: Budget) -> None:
    """Refuse, before any work, a mechanism that cannot run with this budget or installation.

    ``stability_histogram`` needs an ``(epsilon, delta)`` budget; ``tda_linf_solver`` needs
    scipy. (The full-domain size checks need the domain: :func:`run_mechanism` makes them
    before drawing any noise.)
    """
    _check(mechanism)
    if mechanism == "stability_histogram":
        _baselines.require_epsilon_delta(budget)
    if mechanism == "tda_linf_solver":
        _baselines.require_solver()


_RUNNERS: dict[str, Callable[[MechanismContext], TopDownResult]] = {
    "inftda": _inftda,
    "vanilla_gauss": _baselines.run_vanilla_gauss,
    "stability_histogram": _baselines.run_stability_histogram,
    "tda_l2": _baselines.run_tda_l2,
    "tda_linf_solver": _baselines.run_tda_linf_solver,
    "hierarchical": _baselines.run_hierarchical,
}


def run_mechanism(mechanism: str, ctx: MechanismContext) -> TopDownResult:
    """Run ``mechanism`` on ``ctx`` (after :func:`check_mechanism`)."""
    check_mechanism(mechanism, ctx.accounting.budget)
    return _RUNNERS[mechanism](ctx)
