"""Coverage of the error bounds (issue 25), verified by repeated seeded releases.

Each configuration releases synthetic data on a public domain with the real TopDown engine (the
mechanism's own per-level step, seeded) many times; a run *fails* when some cell of some level
is farther from its truth than the stated bound (:func:`inftda_sql.core.bounds.for_release`).
The bound promises at most ``beta`` failures, so a one-sided binomial test at a fixed floor
(p-value >= 1e-4) must not reject; with the bound made 30% tighter than the theory allows it
must reject on the data where the analysis is tight (equal counts beside many true zeros, where
IntOpt takes a large excess from the lowest noisy children), so the test can fail. The bound is
also not loose beyond a stated factor: bound / (median over runs of the level's largest error).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest

from inftda_sql.core.arrays import I64
from inftda_sql.core.bounds import ErrorBounds, for_release
from inftda_sql.core.rng import SeededSource
from inftda_sql.core.spec import TreeSpec, parse_hierarchy
from inftda_sql.core.topdown import Optimizer, topdown
from inftda_sql.core.tree import ChainTree, key_strides
from inftda_sql.mechanisms import tda_l2

pytestmark = pytest.mark.slow

BETA = 0.05
FLOOR = 1e-4  # p-value floor of the one-sided binomial test
RUNS = 300
# bound / median observed largest error of a level, measured on these worlds (150-300 runs): 1.4 at
# the tight world's level; 3.8-6.6 at depth 1, 4.5-8.7 at depth 2, 6-12.2 at depth 3, 9.8-12 at
# depth 4 on random data: the analysis lets a parent's whole error reach one child at every
# level, which random data never does
LOOSE = 15.0
TIGHT = 1.6


@dataclass(frozen=True)
class World:
    name: str
    spec: TreeSpec
    chains: list[ChainTree]
    leaf: np.ndarray  # true leaf counts, one axis per chain
    sigmas: list[float]  # per level, root first
    optimizer: Optimizer | None = None
    analysis: str = "linf"


def _chain(fanouts: list[int], rng: np.random.Generator) -> ChainTree:
    parents, above = [], 1
    for f in fanouts:
        here = above * f
        extra = rng.multinomial(here - above, np.full(above, 1 / above))
        parents.append(np.repeat(np.arange(above, dtype=np.int64), 1 + extra))
        above = here
    return ChainTree.from_parents(parents)


def _ancestors(chain: ChainTree) -> list[I64]:
    """Per depth, the depth-d code of every leaf."""
    leaves = chain.sizes[-1]
    out = [np.arange(leaves, dtype=np.int64)]
    for depth in range(len(chain.sizes) - 1, 0, -1):
        out.insert(0, chain.parents(depth)[out[0]])
    return out


def _level_totals(world: World, leaf: np.ndarray) -> list[np.ndarray]:
    """Every level's cells (dense, in key order) as sums of ``leaf``."""
    anc = [_ancestors(ch) for ch in world.chains]
    sizes = [ch.sizes for ch in world.chains]
    out = []
    for level in range(world.spec.n_levels + 1):
        strides = key_strides(world.spec, level, sizes) if level else (0,) * len(anc)
        depths = world.spec.levels[level]
        key = np.zeros(leaf.shape, dtype=np.int64)
        for c, (d, s) in enumerate(zip(depths, strides, strict=True)):
            shape = [1] * leaf.ndim
            shape[c] = -1
            key = key + (anc[c][d] * s).reshape(shape)
        cells = math.prod(size[d] for size, d in zip(sizes, depths, strict=True))
        out.append(np.bincount(key.ravel(), weights=leaf.ravel(), minlength=cells).astype(np.int64))
    return out


def _true_level(truth: list[np.ndarray]) -> Callable[[int, tuple[int, ...]], tuple[I64, I64]]:
    def true_level(level: int, strides: tuple[int, ...]) -> tuple[I64, I64]:
        keys = np.flatnonzero(truth[level]).astype(np.int64)
        return keys, truth[level][keys]

    return true_level


def _bounds(world: World) -> ErrorBounds:
    names = ["root", *(world.spec.level_name(lv) for lv in range(1, world.spec.n_levels + 1))]
    return for_release(
        world.analysis,  # type: ignore[arg-type]
        world.spec,
        world.chains,
        names,
        world.sigmas,
        total=int(world.leaf.sum()),
        beta=BETA,
        runs=0,
    )


def observed_maxima(world: World, runs: int) -> np.ndarray:
    """Per run and level (root first), the largest absolute error of a seeded release."""
    truth = _level_totals(world, world.leaf)
    out = np.zeros((runs, len(truth)))
    for r in range(runs):
        res = topdown(
            world.spec,
            world.chains,
            _true_level(truth),
            world.sigmas,
            int(world.leaf.sum()),
            source=SeededSource(10_000 + r),
            optimizer=world.optimizer,
            threads=1,
        )
        released = np.zeros(world.leaf.shape, dtype=np.int64)
        released[tuple(res.codes)] = res.counts
        for level, (a, b) in enumerate(zip(_level_totals(world, released), truth, strict=True)):
            out[r, level] = np.abs(a - b).max()
    return out


def _worlds() -> list[World]:
    rng = np.random.default_rng(7)
    chain = _chain([5, 10, 10], rng)
    n = chain.sizes[-1]
    dense = rng.poisson(40, n).astype(np.int64)
    sparse = np.where(rng.random(n) < 0.05, rng.pareto(1.2, n).astype(np.int64) * 30 + 1, 0)
    origin, dest = _chain([3, 4], rng), _chain([3, 4], rng)
    od_dense = rng.poisson(25, (origin.sizes[-1], dest.sizes[-1])).astype(np.int64)
    od_sparse = np.where(rng.random(od_dense.shape) < 0.1, rng.poisson(60, od_dense.shape), 0)
    one = ChainTree.from_parents([np.zeros(1000, dtype=np.int64)])
    tight = np.where(np.arange(1000) < 500, 1000, 0).astype(np.int64)
    od = [["o1", "o2"], ["d1", "d2"]]
    return [
        World(
            "chain dense small sigma",
            parse_hierarchy(["a", "b", "c"]),
            [chain],
            dense,
            [0.0, 1.5, 1.5, 1.5],
        ),
        World(
            "chain sparse large sigma",
            parse_hierarchy(["a", "b", "c"]),
            [chain],
            sparse.astype(np.int64),
            [0.0, 20.0, 20.0, 20.0],
        ),
        World(
            "O/D destination dense",
            parse_hierarchy(od, "destination"),
            [origin, dest],
            od_dense,
            [0.0, 4.0, 4.0, 4.0, 4.0],
        ),
        World(
            "O/D origin sparse",
            parse_hierarchy(od, "origin"),
            [origin, dest],
            od_sparse.astype(np.int64),
            [0.0, 15.0, 15.0, 15.0, 15.0],
        ),
        World(
            "chain unbounded (root noised)",
            parse_hierarchy(["a", "b", "c"]),
            [chain],
            dense,
            [6.0, 3.0, 3.0, 3.0],
        ),
        World(
            "chain TDA-L2",
            parse_hierarchy(["a", "b", "c"]),
            [chain],
            dense,
            [0.0, 3.0, 3.0, 3.0],
            tda_l2.l2_optimizer,
            "l2_rounded",
        ),
        World(
            "tight: equal counts beside true zeros",
            parse_hierarchy(["a"]),
            [one],
            tight,
            [0.0, 10.0],
        ),
    ]


WORLDS = _worlds()


def binomial_p_value(failures: int, runs: int, p: float) -> float:
    """One-sided P(Binomial(runs, p) >= failures): small when failures are too many for p."""
    return float(
        sum(math.comb(runs, k) * p**k * (1 - p) ** (runs - k) for k in range(failures, runs + 1))
    )


def coverage(world: World, maxima: np.ndarray) -> tuple[int, float]:
    """Failed runs (some cell of some level beyond its bound) and the binomial p-value."""
    stated = _bounds(world).bound
    bound = np.array([np.inf if b is None else b for b in stated])
    failures = int((maxima > bound).any(axis=1).sum())
    return failures, binomial_p_value(failures, maxima.shape[0], BETA)


@pytest.fixture(scope="module")
def maxima() -> dict[str, np.ndarray]:
    return {w.name: observed_maxima(w, RUNS) for w in WORLDS}


@pytest.mark.parametrize("world", WORLDS, ids=[w.name for w in WORLDS])
def test_the_bound_holds_at_least_1_minus_beta_of_the_time(
    world: World, maxima: dict[str, np.ndarray]
) -> None:
    failures, p_value = coverage(world, maxima[world.name])
    assert p_value >= FLOOR, f"{failures} of {RUNS} releases broke the bound"


def test_a_bound_30_percent_tighter_than_the_theory_is_caught(
    maxima: dict[str, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same test rejects a bound 0.7 times the stated one: where the analysis is tight
    (equal counts beside true zeros) such a bound fails in most releases."""
    from inftda_sql.core import bounds as bounds_module

    real = bounds_module.error_bounds

    def tighter(*args: object, **kw: object) -> ErrorBounds:
        b = real(*args, **kw)  # type: ignore[arg-type]
        scaled = tuple(None if v is None else 0.7 * v for v in b.bound)
        return ErrorBounds(**{**b.__dict__, "bound": scaled})

    monkeypatch.setattr(bounds_module, "error_bounds", tighter)
    tight = next(w for w in WORLDS if w.name.startswith("tight"))
    failures, p_value = coverage(tight, maxima[tight.name])
    assert p_value < FLOOR, f"only {failures} of {RUNS} releases broke a 30% tighter bound"


@pytest.mark.parametrize("world", WORLDS, ids=[w.name for w in WORLDS])
def test_the_bound_is_not_loose_beyond_the_stated_factor(
    world: World, maxima: dict[str, np.ndarray]
) -> None:
    """bound / median largest error, per noised level: at most LOOSE (TIGHT where the
    analysis is nearly reached)."""
    stated = _bounds(world).bound
    observed = np.median(maxima[world.name], axis=0)
    for level, (b, m) in enumerate(zip(stated, observed, strict=True)):
        if not b:
            continue  # an exact level (the root of bounded DP)
        assert m > 0
        assert b / m <= LOOSE, (level, b, m)
    if world.name.startswith("tight"):
        assert stated[-1] / observed[-1] <= TIGHT
