"""VanillaGauss: discrete Gaussian noise on every leaf cell of the full domain.

Zero cells included, with all the leaf level's budget (no root is paid for: the sum of the
leaves stands for it). The released counts are integers and unbiased but unconstrained: they CAN
BE NEGATIVE, and almost every empty cell comes out non-zero (a false positive). Cells whose noisy
count is 0 are not stored. Coarser levels are sums of the leaves. Refuses domains above
``max_cells`` leaf cells. zCDP.
"""

from __future__ import annotations

import time

import numpy as np

from ..core.arrays import I64
from ..core.noise import draw_discrete_gaussian
from ..core.rng import RandomSource
from ..core.tree import TopDownResult
from ._shared import decode, leaf_only_stats, level_strides, map_chunks
from .base import Mechanism, MechanismContext, level_sizes

__all__ = ["MECHANISM", "run_vanilla_gauss"]


def run_vanilla_gauss(ctx: MechanismContext) -> TopDownResult:
    """Discrete Gaussian noise on every leaf cell of the full domain; keep the non-zero ones.

    The sigma is the leaf level's (``ctx.accounting.level_sigma[-1]``): the mechanism noises
    the leaves only (``noises="leaves"``), so all of rho goes to the leaves, whose sum
    stands for the root.
    """
    spec, chains = ctx.spec, ctx.chains
    cells = MECHANISM.full_domain_cells(spec, chains, ctx.max_cells)
    t0 = time.perf_counter()
    n_leaf = cells[-1]
    level = spec.n_levels
    sigma = float(ctx.accounting.level_sigma[-1])
    strides = level_strides(spec, chains, level)
    sizes = level_sizes(spec, chains, level)
    keys_true, counts_true = ctx.true_level(level, strides)

    def work(a: int, b: int, source: RandomSource) -> tuple[list[I64], I64]:
        y = np.zeros(b - a, dtype=np.int64)
        lo, hi = np.searchsorted(keys_true, [a, b])
        y[keys_true[lo:hi] - a] = counts_true[lo:hi]
        if sigma > 0:
            y += draw_discrete_gaussian(sigma, b - a, source=source)
        kept = np.flatnonzero(y)
        return decode(kept + a, strides, sizes), y[kept]

    codes, values = map_chunks(ctx, n_leaf, work)
    seconds = time.perf_counter() - t0
    stats = leaf_only_stats(ctx, cells, codes, values, n_leaf, sigma, seconds)
    return TopDownResult(codes=tuple(codes), counts=values, levels=stats)


MECHANISM = Mechanism(
    name="vanilla_gauss",
    summary="discrete Gaussian on every leaf cell of the full domain (negative counts possible)",
    run=run_vanilla_gauss,
    noises="leaves",
    full_domain="leaves",
    error_analysis="leaf_sums",
)
