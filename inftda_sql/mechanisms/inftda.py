"""InfTDA: TopDown with IntOpt, the integer Chebyshev projection (the package's mechanism).

Non-negative integers, consistent at every level, the total N kept in bounded DP; zero nodes
are pruned with their branch. zCDP. The pass itself is :func:`inftda_sql.core.topdown.topdown`.
"""

from __future__ import annotations

from ..core.arrays import I64
from ..core.intopt import intopt
from ..core.tree import TopDownResult
from .base import Mechanism, MechanismContext

__all__ = ["MECHANISM", "intopt_step", "run_inftda"]


def intopt_step(y: I64, targets: I64, offsets: I64) -> I64:
    """InfTDA's per-level step: :func:`~inftda_sql.core.intopt.intopt` per parent."""
    return intopt(y, targets, offsets)


def run_inftda(ctx: MechanismContext) -> TopDownResult:
    """TopDown with IntOpt at every level."""
    return ctx.topdown(intopt_step)


MECHANISM = Mechanism(
    name="inftda",
    summary="TopDown with IntOpt: consistent non-negative integers (the default)",
    run=run_inftda,
    topdown_step=intopt_step,
    error_analysis="linf",
)
