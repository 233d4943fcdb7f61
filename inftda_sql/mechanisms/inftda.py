"""InfTDA: TopDown with IntOpt, the integer Chebyshev projection (the package's mechanism).

Non-negative integers, consistent at every level, the total N kept in bounded DP; zero nodes
are pruned with their branch. zCDP. The pass itself is :func:`inftda_sql.core.topdown.topdown`.
"""

from __future__ import annotations

from ..core.tree import TopDownResult
from .base import Mechanism, MechanismContext

__all__ = ["MECHANISM", "run_inftda"]


def run_inftda(ctx: MechanismContext) -> TopDownResult:
    """TopDown with IntOpt at every level."""
    return ctx.topdown()


MECHANISM = Mechanism(
    name="inftda",
    summary="TopDown with IntOpt: consistent non-negative integers (the default)",
    run=run_inftda,
)
