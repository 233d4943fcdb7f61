"""Mechanisms a release can run: InfTDA and the baselines users compare it with.

Every mechanism receives the same :class:`MechanismContext` (the validated spec, the public
domain as code ranges, a way to read the true counts of any level, the accounting and the random
source) and returns a :class:`~inftda_sql._topdown.TopDownResult`: leaf codes per chain, counts,
per-level statistics. The accounting module decides sensitivities and sigmas; a mechanism only
says which levels it noises (:func:`noised_levels`) and what guarantee it gives
(:data:`GUARANTEES`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ._accounting import Accounting
from ._errors import SpecError
from ._random import RandomSource
from ._spec import TreeSpec
from ._topdown import ChainTree, LevelStats, TopDownResult, topdown

__all__ = [
    "DEFAULT_MAX_CELLS",
    "GUARANTEES",
    "MECHANISMS",
    "MechanismContext",
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
    return topdown(
        ctx.spec,
        ctx.chains,
        ctx.true_level,
        ctx.tree_sigmas,
        ctx.total,
        source=ctx.source,
        progress=ctx.progress,
        threads=ctx.threads,
    )


def _not_yet(name: str) -> Callable[[MechanismContext], TopDownResult]:
    def run(ctx: MechanismContext) -> TopDownResult:
        raise SpecError(f"mechanism {name!r} is not implemented yet; use mechanism='inftda'")

    return run


_RUNNERS: dict[str, Callable[[MechanismContext], TopDownResult]] = {
    "inftda": _inftda,
    **{name: _not_yet(name) for name in MECHANISMS if name != "inftda"},
}


def run_mechanism(mechanism: str, ctx: MechanismContext) -> TopDownResult:
    """Run ``mechanism`` on ``ctx``."""
    _check(mechanism)
    return _RUNNERS[mechanism](ctx)
