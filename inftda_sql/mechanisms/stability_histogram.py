"""The Stability Histogram: discrete Laplace noise on the positive leaf counts, then a threshold.

Noise on the POSITIVE leaf counts only, then noisy counts below a threshold are dropped: no false
positives, non-negative integers, biased (small counts vanish), no consistency with the total.
``(epsilon, delta)``-DP, not zCDP: scale and threshold come from
:func:`~inftda_sql.core.accounting.stability_histogram` (its docstring has the proof), so the
budget must be given as ``epsilon`` and ``delta``.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from .._errors import Arg, BudgetError
from ..core.accounting import (
    Accounting,
    ApproxDPBudget,
    Budget,
    Guarantee,
    stability_histogram,
)
from ..core.noise import draw_discrete_laplace
from ..core.tree import TopDownResult
from ._shared import CHUNK_CELLS, decode, leaf_only_stats, level_strides
from .base import Mechanism, MechanismContext, level_cells, level_sizes

__all__ = ["MECHANISM", "require_epsilon_delta", "run_stability_histogram"]


def require_epsilon_delta(budget: Budget) -> None:
    """The Stability Histogram is calibrated to an ``(epsilon, delta)`` the user gave: an
    :class:`ApproxDPBudget`."""
    if not isinstance(budget, ApproxDPBudget):
        raise BudgetError(
            "mechanism 'stability_histogram' is (epsilon, delta)-DP, not zCDP: its threshold "
            "is set for a delta; pass ",
            Arg("epsilon"),
            " and ",
            Arg("delta"),
            " instead of ",
            Arg("rho", budget.rho, "!r"),
            param="rho",
        )


def run_stability_histogram(ctx: MechanismContext) -> TopDownResult:
    """Discrete Laplace noise on the positive leaf counts; drop noisy counts below the
    threshold (see :func:`~inftda_sql.core.accounting.stability_histogram`)."""
    acct = ctx.accounting
    budget = acct.budget
    require_epsilon_delta(budget)
    params = stability_histogram(
        budget.epsilon,
        budget.delta,
        privacy=acct.privacy,
        contribution=acct.contribution,
        distinct=acct.distinct,
    )
    spec, chains = ctx.spec, ctx.chains
    t0 = time.perf_counter()
    cells = [level_cells(spec, chains, lv) for lv in range(spec.n_levels + 1)]
    level = spec.n_levels
    strides = level_strides(spec, chains, level)
    sizes = level_sizes(spec, chains, level)
    keys_true, counts_true = ctx.true_level(level, strides)
    n_pos = int(keys_true.size)
    sources = ctx.source.spawn(max(1, -(-n_pos // CHUNK_CELLS)))
    kept_keys, kept_values = [], []
    for i, lo in enumerate(range(0, n_pos, CHUNK_CELLS)):
        hi = min(lo + CHUNK_CELLS, n_pos)
        noisy = counts_true[lo:hi] + draw_discrete_laplace(params.scale, hi - lo, source=sources[i])
        keep = noisy >= params.threshold
        kept_keys.append(keys_true[lo:hi][keep])
        kept_values.append(noisy[keep])
    keys = np.concatenate(kept_keys) if kept_keys else np.zeros(0, np.int64)
    values = np.concatenate(kept_values) if kept_values else np.zeros(0, np.int64)
    codes = decode(keys, strides, sizes)
    seconds = time.perf_counter() - t0
    # the standard deviation of the discrete Laplace: sqrt(2a) / (1 - a), a = exp(-1/scale)
    std = 0.0
    if params.scale > 0:
        std = math.sqrt(2.0 * math.exp(-1.0 / params.scale)) / -math.expm1(-1.0 / params.scale)
    stats = leaf_only_stats(ctx, cells, codes, values, 0, std, seconds)
    return TopDownResult(codes=tuple(codes), counts=values, levels=stats)


def parameters(acct: Accounting) -> dict[str, Any]:
    """The scale and threshold of the release, recorded in the ledger."""
    budget = acct.budget
    return stability_histogram(
        budget.epsilon,
        budget.delta,
        privacy=acct.privacy,
        contribution=acct.contribution,
        distinct=acct.distinct,
    ).as_dict()


MECHANISM = Mechanism(
    name="stability_histogram",
    summary=(
        "discrete Laplace on the positive leaf counts, small counts dropped; (epsilon, delta)-DP"
    ),
    run=run_stability_histogram,
    guarantee=Guarantee.APPROX_DP,
    noises="leaves",
    requires=require_epsilon_delta,
    parameters=parameters,
)
