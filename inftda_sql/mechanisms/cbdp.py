"""CBDP: Constraint-Based Differential Privacy (Fioretto, Lee & Van Hentenryck, AAMAS 2018).

Noise on every cell of every feature query (zero cells included), then one optimisation that
finds non-negative leaf counts whose feature sums are as close as possible to the noisy ones in
weighted least squares, then integer rounding:

1. **Measure.** Each noised query gets its share of the budget from
   :func:`~inftda_sql.core.accounting.account_features`: discrete Laplace noise for a pure
   ``epsilon`` (the paper: ``epsilon / k`` per feature, sensitivity 1 per partition in its
   add/remove model), discrete Gaussian noise for a zCDP budget. A query no neighbour can
   change (the total in bounded DP with one record per unit) is released exactly.
2. **Optimise** (:mod:`inftda_sql.core.lsq`): ``min sum_f w_f ||A_f x - noisy_f||^2`` over
   ``x >= 0`` with the leaves as the only variables, so every comparable pair of features is
   consistent by construction; ``w_f = 1 / cells`` (``weights="cells"``, the paper's) or 1
   (``"uniform"``); an exact query is a constraint.
3. **Round** (:mod:`inftda_sql.core.rounding`): coarse to fine along the longest chain of the
   lattice, with largest remainders.

Everything after the noise reads noisy values only. The output is the leaf table (positive
counts) with every feature column; the features view sums it per feature.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from ..core.arrays import F64, I64
from ..core.lsq import LatticeProblem, solve
from ..core.noise import draw_discrete_gaussian, draw_discrete_laplace
from ..core.rng import RandomSource
from ..core.rounding import longest_chain, round_lattice
from ..core.tree import LevelStats
from .base import FeatureContext, FeatureMechanism, FeatureResult

__all__ = ["MECHANISM", "noise_std", "run_cbdp"]

#: draws per chunk (each chunk its own spawned random stream)
_CHUNK = 1 << 20


def noise_std(noise: str, scale: float) -> float:
    """Standard deviation of the discrete Laplace (``scale`` b) or Gaussian (``scale`` sigma,
    about sigma) noise of a query.

    Example:
        >>> round(noise_std("laplace", 5.0), 4)
        7.0593
    """
    if scale == 0.0:
        return 0.0
    if noise == "laplace":
        a = math.exp(-1.0 / scale)
        return math.sqrt(2.0 * a) / -math.expm1(-1.0 / scale)
    return scale


def _noisy(true: I64, noise: str, scale: float, source: RandomSource) -> F64:
    """``true`` plus discrete noise of ``scale`` on every cell, as float64."""
    out = true.astype(np.float64)
    if scale == 0.0:
        return out
    chunks = [(a, min(a + _CHUNK, true.size)) for a in range(0, true.size, _CHUNK)]
    for (a, b), src in zip(chunks, source.spawn(len(chunks)), strict=True):
        if noise == "laplace":
            out[a:b] += draw_discrete_laplace(scale, b - a, source=src)
        else:
            out[a:b] += draw_discrete_gaussian(scale, b - a, source=src)
    return out


def _function_of(a: I64 | None, n_a: int, b: I64 | None) -> bool:
    """Whether ``b`` is a function of ``a`` over the atoms (query ``a`` refines ``b``)."""
    if a is None or b is None:  # pragma: no cover - coarse queries always have cells
        return False
    image = np.zeros(n_a, dtype=np.int64)
    image[a] = b
    return bool(np.array_equal(image[a], b))


def _deviation(x: F64, rounded: I64, maps: list[I64 | None], sizes: tuple[int, ...]) -> list[float]:
    """Per query, the largest ``|released - optimum|`` over its cells."""
    out = []
    for m, n in zip(maps, sizes, strict=True):
        if m is None:
            out.append(float(np.max(np.abs(rounded - x), initial=0.0)))
            continue
        released = np.bincount(m, weights=rounded, minlength=n)
        optimum = np.bincount(m, weights=x, minlength=n)
        out.append(float(np.max(np.abs(released - optimum), initial=0.0)))
    return out


def run_cbdp(ctx: FeatureContext) -> FeatureResult:
    """Measure every query, optimise, round (see the module docstring)."""
    lattice, acct = ctx.lattice, ctx.accounting
    queries = lattice.queries
    sizes = lattice.sizes
    leaf = lattice.leaf
    t0 = time.perf_counter()
    maps: list[I64 | None] = [
        None if q == leaf else lattice.cell_map(q) for q in range(len(queries))
    ]
    sources = ctx.source.spawn(len(queries))
    noised = dict(zip(acct.level_names, acct.level_sigma, strict=True))
    targets: list[F64] = []
    seconds = [0.0] * len(queries)
    for q, query in enumerate(queries):
        t = time.perf_counter()
        true = np.asarray(ctx.true_counts[q], dtype=np.int64)
        scale = noised.get(query.name, 0.0)
        targets.append(_noisy(true, acct.noise, scale, sources[q]))
        seconds[q] += time.perf_counter() - t
    exact = tuple(q.name in acct.exact_levels for q in queries)
    uniform = lattice.spec.weights == "uniform"
    weights = tuple(1.0 if uniform else 1.0 / n for n in sizes)
    t_measure = time.perf_counter() - t0
    t = time.perf_counter()
    solution = solve(
        LatticeProblem(
            maps=tuple(maps),
            sizes=sizes,
            targets=tuple(targets),
            weights=weights,
            exact=exact,
            leaf=leaf,
        )
    )
    t_solve = time.perf_counter() - t
    t = time.perf_counter()
    # the chain of the lattice the rounding follows, then the atoms, then the leaves
    coarse = [q for q in range(len(queries)) if q != leaf]
    atom_cells = [solution.atom_cells[q] for q in coarse]
    within = [
        [_function_of(a, sizes[coarse[i]], b) for b in atom_cells] for i, a in enumerate(atom_cells)
    ]
    chain = [coarse[i] for i in longest_chain([sizes[q] for q in coarse], within)]
    levels = [m for m in (maps[q] for q in chain) if m is not None]
    if solution.atoms not in (sizes[q] for q in chain) and coarse:
        levels.append(solution.atom)
    total = next((int(targets[q][0]) for q in coarse if exact[q]), None)
    rounded = round_lattice(solution.x, levels, total=total)
    deviation = _deviation(solution.x, rounded, maps, sizes)
    t_round = time.perf_counter() - t
    leaves = np.flatnonzero(rounded)
    counts = rounded[leaves]
    stats = []
    for q, query in enumerate(queries):
        m = maps[q]
        released = (
            counts if m is None else np.bincount(m[leaves], weights=counts, minlength=sizes[q])
        )
        scale = noised.get(query.name, 0.0)
        stats.append(
            LevelStats(
                level=q,
                name=query.name,
                parents=0,
                noised_cells=sizes[q] if query.name in noised else 0,
                surviving_cells=int(np.count_nonzero(released)),
                sigma=noise_std(acct.noise, scale),
                seconds=seconds[q],
            )
        )
        if ctx.progress:
            ctx.progress(stats[-1])
    parameters: dict[str, Any] = {
        "noise": acct.noise,
        "structure": lattice.spec.structure,
        "weights": {q.name: w for q, w in zip(queries, weights, strict=True)},
        "exact": [q.name for q, e in zip(queries, exact, strict=True) if e],
        "atoms": solution.atoms,
        "newton_steps": solution.newton_steps,
        # the Newton system's solver: structural and direct, or conjugate gradients (lsq)
        "newton_solver": solution.solver,
        "cg_iterations": solution.cg_iterations,
        "rounding_chain": [queries[q].name for q in chain],
        "rounding_max_deviation": {
            q.name: round(d, 6) for q, d in zip(queries, deviation, strict=True)
        },
    }
    return FeatureResult(
        leaves=leaves.astype(np.int64),
        counts=counts,
        levels=tuple(stats),
        parameters=parameters,
        timings={"measure": t_measure, "optimise": t_solve, "round": t_round},
    )


#: working memory per leaf cell: true counts, noisy counts, the maps of the coarse features,
#: the atom keys and sorted copies of the optimisation, the optimum and the rounding
BYTES_PER_CELL = 200

MECHANISM = FeatureMechanism(
    name="cbdp",
    summary=(
        "CBDP: noise on every feature, weighted least squares over the leaves, rounding "
        "(consistent non-negative integers over a lattice of features)"
    ),
    run=run_cbdp,
    bytes_per_cell=BYTES_PER_CELL,
)
