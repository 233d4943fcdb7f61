"""Error bounds of a release from public parameters only: how far a released count may be from
the truth, per level, before or after the data is read.

Everything here takes the accounting's per-level sigma, the public domain's number of cells per
level (and, for leaf sums, leaves per cell) and ``beta``; nothing reads private data, so the
numbers are free in privacy and are published with the table (the levels view, the ledger row).

**What a bound says.** ``bound[l]``: with probability at least ``1 - beta``, *every* released
count of *every* level ``l`` is within ``bound[l]`` of its true count, whatever the data (one
event for all levels and cells at once).

**The noise of one level.** ``T_j(p)`` is the smallest integer ``t`` with
``P(|Z| > t) <= p`` for the discrete Gaussian ``Z`` of sigma ``s_j``, from its exact tail (the
sum of its pmf beyond ``t``; for a very large sigma the continuous Gaussian tail, which bounds the
discrete one from above: ``sum_{k > t} exp(-k^2 / 2s^2) <= integral_t^inf`` and the normaliser
is at least ``s sqrt(2 pi)``). With ``n_j`` the public domain's cells of level ``j`` (an upper
bound on the cells actually noised, which depends on the data in InfTDA), a union bound gives
``max |noise of level j| <= T_j = T(beta / (k n_j))`` for the ``k`` noised levels together,
with probability at least ``1 - beta``.

**TopDown with an exact Chebyshev projection** (``linf``: InfTDA's IntOpt, the MILP solver).
For a parent released with error ``e_p``, the true children shifted by at most ``|e_p|`` each are
feasible, so the optimum is within ``|e_p| + max|eta|`` of the noisy children and every child
within ``|e_p| + 2 max|eta|`` of its truth (a pruned parent's children are 0, off by at most
its error; an only child is its parent). Hence ``bound[l] = T_0 + 2 (T_1 + ... + T_l)``
(``T_0`` only when the root is noised, unbounded DP), the InfTDA paper's Theorem 4 with the
exact tail instead of the sub-Gaussian one. The worst case is reached when IntOpt takes a large
excess from the children with the lowest noisy counts (many true zeros beside equal counts),
so it is not loose by much there; on typical data the error is about half of it (see the
typical error below and ``benchmarks/PAPER.md``).

**TopDown with a Euclidean projection then rounding** (``l2_rounded``: TDA-L2). The projection
``max(y - theta, 0)`` has ``|theta| <= |e_p| + max|eta|`` by the same argument, and the
rounding (nearest, then the sum fixed by one unit on some children) moves a child by less than
1.5, so an integer child is within ``|e_p| + 2 max|eta| + 1``: one more per level.

**Leaf noise, coarser levels as sums** (``leaf_sums``: vanilla Gaussian). A leaf is off by its
own noise (exact tail, union over the domain's leaves); a cell of ``k`` leaves by the sum of
``k`` independent discrete Gaussians, which is sub-Gaussian with variance ``k s^2`` (its moment
generating function is at most the continuous Gaussian's, Canonne, Kamath & Steinke 2020):
``s sqrt(2 k ln(2 n / beta))`` with ``k`` the most leaves under one cell of the level.

**No bound** for the other mechanisms: Hay's hierarchical estimate (a least-squares combination
of every level's noise, then rounding; its per-node variance depends on the whole tree and is not
derived here), the Stability Histogram (a dropped cell is off by up to its threshold, and a
coarse cell sums the thresholds of all its leaves: a bound too loose to help), CBDP (weighted
least squares over a lattice, then rounding) and count-of-counts (an estimate of a histogram of
group sizes, not counts of cells). Their releases carry ``NULL`` bounds, never a wrong one.

**Typical error** (:func:`simulate`): the real TopDown engine on a random tree with the same
number of cells per level and synthetic heavy-tailed counts; per level the median and 90th
percentile over runs of the level's largest error, and of the error of one cell. It reads no
private data; it depends on the synthetic data, so it describes, it does not guarantee.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .._errors import SpecError
from .arrays import I64
from .noise import discrete_gaussian_pmf
from .rng import SeededSource
from .spec import TreeSpec, parse_hierarchy
from .topdown import Optimizer, topdown
from .tree import ChainTree

__all__ = [
    "DEFAULT_BETA",
    "Analysis",
    "ErrorBounds",
    "Typical",
    "error_bounds",
    "for_release",
    "noise_quantile",
    "noise_tail",
    "simulate",
    "sql_constant",
    "view_bounds",
]

#: the failure probability of a bound unless said otherwise
DEFAULT_BETA = 0.05

Analysis = Literal["linf", "l2_rounded", "leaf_sums"]
"""Which argument bounds a mechanism's error (see the module docstring); None: no bound."""

# sigmas up to this sum the pmf exactly (an array of ~40 sigma); beyond, the continuous tail
_EXACT_SIGMA = 50_000.0


def noise_tail(t: int, sigma: float) -> float:
    """``P(|Z| > t)`` for the discrete Gaussian of ``sigma`` (an upper bound within a relative
    1e-12 of it, or the continuous Gaussian tail above it for sigma > 50,000).

    Example:
        >>> round(noise_tail(0, 1.0), 4)  # 1 - pmf(0)
        0.6011
        >>> noise_tail(3, 0.0)
        0.0
    """
    if sigma <= 0:
        return 0.0
    if t < 0:
        return 1.0
    if sigma > _EXACT_SIGMA:
        return math.erfc(t / (sigma * math.sqrt(2.0)))
    ks = np.arange(t + 1, t + 2 + math.ceil(40 * sigma), dtype=np.int64)
    tail = 2.0 * float(discrete_gaussian_pmf(ks, sigma)[::-1].sum())
    return min(1.0, tail * (1 + 1e-12))


def noise_quantile(sigma: float, p: float) -> int:
    """The smallest integer ``t >= 0`` with ``P(|Z| > t) <= p``: with probability at least
    ``1 - p`` one discrete Gaussian draw of ``sigma`` is within ``+-t``.

    Example:
        >>> noise_quantile(10.0, 0.05)  # about 1.96 sigma
        20
        >>> noise_quantile(0.0, 0.05)
        0
    """
    if not (0 < p <= 1):
        raise SpecError(f"a tail probability must be in (0, 1], got {p!r}")
    if sigma <= 0:
        return 0
    hi = math.ceil(sigma * math.sqrt(2 * math.log(2 / p))) + 1  # sub-Gaussian: tail(hi) <= p
    lo = -1  # tail(-1) = 1 > p
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if noise_tail(mid, sigma) <= p:
            hi = mid
        else:
            lo = mid
    return hi


@dataclass(frozen=True)
class Typical:
    """Simulated errors per level (root excluded): medians and 90th percentiles over runs of the
    level's largest absolute error (``max_*``) and of one cell's absolute error (``cell_*``)."""

    runs: int
    max_median: tuple[float, ...]
    max_p90: tuple[float, ...]
    cell_median: tuple[float, ...]
    cell_p90: tuple[float, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "runs": self.runs,
            "max_median": list(self.max_median),
            "max_p90": list(self.max_p90),
            "cell_median": list(self.cell_median),
            "cell_p90": list(self.cell_p90),
        }


@dataclass(frozen=True)
class ErrorBounds:
    """Per level (root first when it is a released level of its own), the bound of every
    released count, from public parameters only; ``bound`` is None for every level when the
    mechanism's analysis gives none (``analysis`` None, ``reason`` says why)."""

    analysis: str | None
    beta: float
    names: tuple[str, ...]
    cells: tuple[int, ...]
    sigma: tuple[float, ...]
    noise: tuple[int, ...]  # T_l: the largest noise of level l (0 when not noised)
    bound: tuple[float | None, ...]
    reason: str = ""
    typical: Typical | None = None

    def as_dict(self) -> dict[str, Any]:
        """The ledger's form (JSON): what the levels view and ``publish()`` read back."""
        return {
            "analysis": self.analysis,
            "beta": self.beta,
            "levels": list(self.names),
            "cells": list(self.cells),
            "sigma": list(self.sigma),
            "noise": list(self.noise),
            "bound": list(self.bound),
            "reason": self.reason,
            "typical": None if self.typical is None else self.typical.as_dict(),
        }


_NO_BOUND = (
    "this mechanism's analysis gives no per-cell bound that is both proved and useful (see "
    "inftda_sql.core.bounds)"
)


def error_bounds(
    analysis: Analysis | None,
    names: Sequence[str],
    cells: Sequence[int],
    sigmas: Sequence[float],
    *,
    beta: float = DEFAULT_BETA,
    root_noised: bool = False,
    leaves_per_cell: Sequence[int] | None = None,
) -> ErrorBounds:
    """The bound of every level, from public parameters only.

    Args:
        analysis: the mechanism's (``Mechanism.error_analysis``); None gives no bound.
        names, cells, sigmas: per level below the root, coarse to fine: its name, the public
            domain's number of cells, the accounting's sigma (0 for a determined level).
        beta: the bounds hold for every cell of every level at once with probability
            >= 1 - beta.
        root_noised: the root is released with noise (unbounded DP): ``sigmas`` then start
            with the root's (and ``names`` with ``"root"``, ``cells`` with 1).
        leaves_per_cell: for ``leaf_sums``, the most leaves under one cell of each level.

    Example:
        >>> b = error_bounds("linf", ["region", "city"], [4, 100], [10.0, 10.0])
        >>> b.noise, b.bound  # T_1 at 0.05 / (2 x 4), T_2 at 0.05 / (2 x 100); 2 T_1, 2 (T_1 + T_2)
        ((27, 37), (54.0, 128.0))
    """
    if not (0 < beta < 1):
        raise SpecError(f"beta must be in (0, 1), got {beta!r}", param="beta")
    n = len(names)
    if not (len(cells) == len(sigmas) == n):
        raise SpecError(
            f"names, cells and sigmas differ in length: {n}, {len(cells)}, {len(sigmas)}"
        )
    common = dict(
        analysis=analysis,
        beta=float(beta),
        names=tuple(names),
        cells=tuple(int(c) for c in cells),
        sigma=tuple(float(s) for s in sigmas),
    )
    if analysis is None:
        return ErrorBounds(noise=(0,) * n, bound=(None,) * n, reason=_NO_BOUND, **common)  # type: ignore[arg-type]
    if analysis == "leaf_sums":
        if leaves_per_cell is None or len(leaves_per_cell) != n:
            raise SpecError("leaf_sums bounds need the leaves per cell of every level")
        leaf_sigma = float(sigmas[-1])
        bound_ls: list[float | None] = []
        for k, c in zip(leaves_per_cell, cells, strict=True):
            if k == 1:
                bound_ls.append(float(noise_quantile(leaf_sigma, beta / c)))
            else:
                sub = leaf_sigma * math.sqrt(2 * k * math.log(2 * c / beta))
                bound_ls.append(float(math.floor(sub)))
        noise = (0,) * (n - 1) + (noise_quantile(leaf_sigma, beta / cells[-1]),)
        return ErrorBounds(noise=noise, bound=tuple(bound_ls), **common)  # type: ignore[arg-type]
    if analysis not in ("linf", "l2_rounded"):
        raise SpecError(f"unknown error analysis {analysis!r}")
    step = 1.0 if analysis == "l2_rounded" else 0.0
    k = sum(s > 0 for s in sigmas)  # the noised levels: beta is split evenly among them
    own = [
        noise_quantile(float(s), beta / (k * max(int(c), 1))) if s > 0 else 0
        for s, c in zip(sigmas, cells, strict=True)
    ]
    bounds: list[float | None] = []
    total = 0.0
    for j, t in enumerate(own):
        if t or sigmas[j] > 0:
            total += t if (root_noised and j == 0) else 2 * t + step
        bounds.append(total)
    return ErrorBounds(noise=tuple(own), bound=tuple(bounds), **common)  # type: ignore[arg-type]


def _random_chain(nodes: Sequence[int], rng: np.random.Generator) -> tuple[list[I64], ChainTree]:
    if any(b < a for a, b in zip([1, *nodes[:-1]], nodes, strict=True)):
        raise SpecError(f"simulation needs non-decreasing node counts per level, got {list(nodes)}")
    parents: list[I64] = []
    for above, here in zip([1, *nodes[:-1]], nodes, strict=True):
        extra = rng.multinomial(here - above, np.full(above, 1.0 / above))
        parents.append(np.repeat(np.arange(above, dtype=np.int64), 1 + extra))
    return parents, ChainTree.from_parents(parents)


def _sums_up(leaf: I64, parents: Sequence[I64]) -> list[I64]:
    out = [leaf]
    for par in reversed(parents[1:]):
        out.insert(0, np.bincount(par, weights=out[0], minlength=par.max() + 1).astype(np.int64))
    return out


def simulate(
    nodes: Sequence[int],
    sigmas: Sequence[float],
    total: int,
    runs: int,
    seed: int,
    *,
    optimizer: Optimizer | None = None,
    max_cells: int = 2_000_000,
) -> tuple[Typical, np.ndarray] | None:
    """The typical error of a TopDown release of this shape (synthetic data, no private data).

    ``nodes``: cells per level below the root; ``sigmas``: per level below the root, or with the
    root's first (unbounded DP). A random tree with those node counts carries a heavy-tailed
    synthetic count per leaf (Dirichlet 0.3 shares of ``total``); each run releases it with the
    real TopDown engine (``optimizer``: IntOpt by default) under its own seed. Returns the
    :class:`Typical` errors and the per-run maxima (runs x levels), or None when the shape has
    more than ``max_cells`` leaves (too slow to simulate inside a release) or decreasing counts.
    """
    if not nodes or nodes[-1] > max_cells or runs < 1:
        return None
    if any(b < a for a, b in zip([1, *nodes[:-1]], nodes, strict=True)):
        return None
    rng = np.random.default_rng(seed)  # synthetic data only: no private data, no release
    parents, chain = _random_chain(nodes, rng)
    spec = parse_hierarchy([f"level{i}" for i in range(1, len(nodes) + 1)])
    leaf = rng.multinomial(total, rng.dirichlet(np.full(nodes[-1], 0.3))).astype(np.int64)
    truth = _sums_up(leaf, parents)

    def true_level(level: int, strides: tuple[int, ...]) -> tuple[I64, I64]:
        counts = truth[level - 1]
        keys = np.flatnonzero(counts).astype(np.int64)
        return keys, counts[keys]

    full = [0.0, *sigmas] if len(sigmas) == len(nodes) else list(sigmas)
    maxima = np.zeros((runs, len(nodes)))
    cells: list[list[np.ndarray]] = [[] for _ in nodes]
    draw: Callable[[int], SeededSource] = lambda r: SeededSource(seed + 1 + r)  # noqa: E731
    for r in range(runs):
        res = topdown(
            spec, [chain], true_level, full, total, source=draw(r), optimizer=optimizer, threads=1
        )
        released = np.zeros(nodes[-1], dtype=np.int64)
        released[res.codes[0]] = res.counts
        for i, (a, b) in enumerate(zip(_sums_up(released, parents), truth, strict=True)):
            err = np.abs(a - b)
            maxima[r, i] = err.max()
            cells[i].append(err)

    def q(x: np.ndarray, p: float) -> tuple[float, ...]:
        return tuple(float(v) for v in np.quantile(x, p, axis=0))

    pooled = [np.concatenate(c) for c in cells]  # every cell of every run
    typical = Typical(
        runs=runs,
        max_median=q(maxima, 0.5),
        max_p90=q(maxima, 0.9),
        cell_median=tuple(float(np.quantile(c, 0.5)) for c in pooled),
        cell_p90=tuple(float(np.quantile(c, 0.9)) for c in pooled),
    )
    return typical, maxima


def _leaves_per_node(chain: ChainTree) -> list[int]:
    """Per depth of a chain (root first), the most leaves under one node."""
    counts = np.ones(chain.sizes[-1], dtype=np.int64)
    out = [1]
    for depth in range(len(chain.sizes) - 1, 0, -1):
        off = chain.child_offsets[depth]
        counts = np.add.reduceat(counts, off[:-1]) if counts.size else counts
        out.insert(0, int(counts.max()) if counts.size else 1)
    return out


def for_release(
    analysis: Analysis | None,
    spec: TreeSpec,
    chains: Sequence[ChainTree],
    level_names: Sequence[str],
    level_sigma: Sequence[float],
    *,
    total: int,
    beta: float = DEFAULT_BETA,
    optimizer: Optimizer | None = None,
    runs: int = 5,
    max_simulated_cells: int = 200_000,
) -> ErrorBounds:
    """The bounds of a hierarchy release from its public parameters: the public domain
    (``chains``), the accounting's per-level names and sigma, the released total (a released
    value) and ``beta``. Every level of the tree is covered, root first (the root of bounded DP
    is exact: bound 0). A TopDown mechanism also gets its typical error (:func:`simulate`, with
    its own per-level step) when the leaf level has at most ``max_simulated_cells`` cells.
    """
    n = spec.n_levels
    sizes = [chain.sizes for chain in chains]
    names = ["root", *(spec.level_name(lv) for lv in range(1, n + 1))]
    cells = [
        math.prod(size[d] for size, d in zip(sizes, spec.levels[lv], strict=True))
        for lv in range(n + 1)
    ]
    sigma_of = dict(zip(level_names, level_sigma, strict=True))
    sigmas = [float(sigma_of.get(name, 0.0)) for name in names]
    root_noised = sigmas[0] > 0
    if analysis == "leaf_sums":
        per_chain = [_leaves_per_node(chain) for chain in chains]
        leaves = [
            math.prod(pc[d] for pc, d in zip(per_chain, spec.levels[lv], strict=True))
            for lv in range(n + 1)
        ]
        sig = [sigmas[-1]] * (n + 1)  # every level's error is a sum of leaf noise
        return error_bounds(analysis, names, cells, sig, beta=beta, leaves_per_cell=leaves)
    if analysis is None:
        return error_bounds(None, names, cells, sigmas, beta=beta)
    if root_noised:
        bounds = error_bounds(analysis, names, cells, sigmas, beta=beta, root_noised=True)
    else:
        below = error_bounds(analysis, names[1:], cells[1:], sigmas[1:], beta=beta)
        bounds = ErrorBounds(
            analysis=below.analysis,
            beta=below.beta,
            names=tuple(names),
            cells=tuple(cells),
            sigma=(0.0, *below.sigma),
            noise=(0, *below.noise),
            bound=(0.0, *below.bound),
        )
    typical = _typical(
        tuple(cells[1:]),
        tuple(sigmas if root_noised else sigmas[1:]),
        max(int(total), 1),
        runs,
        optimizer,
        max_simulated_cells,
    )
    if typical is None:
        return bounds
    return dataclasses.replace(bounds, typical=typical)


def _typical(
    nodes: tuple[int, ...],
    sigmas: tuple[float, ...],
    total: int,
    runs: int,
    optimizer: Optimizer | None,
    max_cells: int,
) -> Typical | None:
    """:func:`simulate`'s typical errors (seed 0) of a release: remembered for the package's own
    optimizers, since they depend on public parameters only (a repeated release of one table, a
    bounded-DP total, pays the simulation once per process); a caller's optimizer is run."""
    own = optimizer is None or getattr(optimizer, "__module__", "").startswith("inftda_sql.")
    return (_typical_remembered if own else _simulated)(
        nodes, sigmas, total, runs, optimizer, max_cells
    )


def _simulated(
    nodes: tuple[int, ...],
    sigmas: tuple[float, ...],
    total: int,
    runs: int,
    optimizer: Optimizer | None,
    max_cells: int,
) -> Typical | None:
    found = simulate(nodes, sigmas, total, runs, seed=0, optimizer=optimizer, max_cells=max_cells)
    return None if found is None else found[0]


_typical_remembered = functools.lru_cache(maxsize=16)(_simulated)


def view_bounds(
    details: str | dict[str, Any] | None,
) -> dict[str, tuple[float | None, float | None]] | None:
    """Per level name, ``(bound, typical max error)`` read back from a ledger row's details (its
    JSON text or parsed form), as the levels view shows them; None when the row has none (a
    release made before bounds were recorded, or a feature release)."""
    if details is None:
        return None
    parsed = json.loads(details) if isinstance(details, str) else details
    stored = parsed.get("error_bounds") if isinstance(parsed, dict) else None
    if not isinstance(stored, dict):
        return None
    typical = stored.get("typical") or {}
    medians = list(typical.get("max_median") or [])
    names = list(stored.get("levels") or [])
    bound = list(stored.get("bound") or [None] * len(names))
    pad = len(names) - len(medians)
    return {
        name: (bound[i], medians[i - pad] if medians and i >= pad else None)
        for i, name in enumerate(names)
    }


def sql_constant(value: float | None) -> str:
    """A bound as the SQL literal both engines' levels views write (DuckDB and Spark SQL read
    it alike): NULL for None or a non-finite value, else the float's exact ``repr``.

    Example:
        >>> sql_constant(12.5), sql_constant(None), sql_constant(float("inf"))
        ('12.5', 'NULL', 'NULL')
    """
    if value is None or not math.isfinite(value):
        return "NULL"
    return repr(float(value))


def bound_text(bounds: ErrorBounds | None, name: str) -> str:
    """A level's bound as a summary shows it: ``+-12`` (``beta`` in the summary's note), ``0``
    for an exact level, ``-`` where there is none."""
    if bounds is None or name not in bounds.names:
        return "-"
    value = bounds.bound[bounds.names.index(name)]
    if value is None:
        return "-"
    return f"+-{value:,.0f}" if value else "0"


def bounds_note(bounds: ErrorBounds | None) -> list[str]:
    """The line under a summary's table that says how to read its error bounds."""
    if bounds is None:
        return []
    if bounds.analysis is None:
        return [f"error bound: none for this mechanism ({bounds.reason})"]
    return [
        f"error bound: with probability >= {1 - bounds.beta:g}, every count of a level is within "
        "this of the truth, for any data (public parameters only; column error_bound of the "
        "levels view)"
    ]
