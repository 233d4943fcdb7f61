"""Tests of the baseline mechanisms' algorithms (inftda_sql.mechanisms)."""

from __future__ import annotations

import itertools
import math
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inftda_sql._errors import BudgetError, InternalError, SpecError
from inftda_sql.core.accounting import Budget, account
from inftda_sql.core.intopt import intopt
from inftda_sql.core.rng import as_source
from inftda_sql.core.spec import TreeSpec, parse_hierarchy
from inftda_sql.core.tree import ChainTree, LevelStats, determined_levels, key_strides
from inftda_sql.mechanisms import MechanismContext, check_full_domain, run_mechanism
from inftda_sql.mechanisms import hierarchical as _baselines
from inftda_sql.mechanisms.tda_l2 import l2_optimizer, round_to_targets, simplex_projection
from inftda_sql.mechanisms.tda_linf_solver import linf_milp_optimizer

I64 = npt.NDArray[np.int64]


# ------------------------------------------------------------------------------------------------
# strategies: segmented problems (children of several parents)
# ------------------------------------------------------------------------------------------------


@st.composite
def segmented(
    draw: st.DrawFn, max_segments: int = 6, max_len: int = 8, lo: int = -30, hi: int = 60
) -> tuple[I64, I64, I64]:
    lengths = draw(st.lists(st.integers(1, max_len), min_size=1, max_size=max_segments))
    y = np.array(draw(st.lists(st.integers(lo, hi), min_size=sum(lengths), max_size=sum(lengths))))
    targets = np.array(draw(st.lists(st.integers(0, 80), min_size=len(lengths))))[: len(lengths)]
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    return y.astype(np.int64), targets.astype(np.int64), offsets


def _split(a: npt.NDArray[Any], offsets: I64) -> list[npt.NDArray[Any]]:
    return np.split(a, offsets[1:])


# ------------------------------------------------------------------------------------------------
# TDA-L2: Euclidean projection
# ------------------------------------------------------------------------------------------------


def _projection_by_bisection(y: I64, c: int) -> npt.NDArray[np.float64]:
    """An independent solver: theta with sum max(y - theta, 0) = c, found by bisection."""
    if c == 0:
        return np.zeros(y.size)
    lo, hi = float(y.min()) - c, float(y.max())
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if np.maximum(y - mid, 0).sum() > c:
            lo = mid
        else:
            hi = mid
    return np.maximum(y - 0.5 * (lo + hi), 0)


@settings(max_examples=300, deadline=None)
@given(segmented())
def test_projection_is_optimal(problem: tuple[I64, I64, I64]) -> None:
    y, targets, offsets = problem
    x = simplex_projection(y, targets, offsets)
    for ys, xs, c in zip(_split(y, offsets), _split(x, offsets), targets.tolist(), strict=True):
        assert (xs >= 0).all()
        assert xs.sum() == pytest.approx(c, abs=1e-9)
        np.testing.assert_allclose(xs, _projection_by_bisection(ys, c), atol=1e-7)
        if c > 0:  # KKT: x = max(y - theta, 0) with one theta for the whole segment
            pos = xs > 0
            theta = ys[pos] - xs[pos]
            assert np.ptp(theta) < 1e-9
            assert (ys[~pos] <= theta[0] + 1e-9).all()


def test_projection_against_a_qp_solver() -> None:
    """scipy's SLSQP on the quadratic program itself, on a few random segments."""
    optimize = pytest.importorskip("scipy.optimize")
    rng = np.random.default_rng(3)
    for _ in range(20):
        d = int(rng.integers(2, 7))
        y = rng.integers(-20, 40, size=d)
        c = int(rng.integers(1, 60))
        res = optimize.minimize(
            lambda x, y=y: float(((x - y) ** 2).sum()),
            np.full(d, c / d),
            jac=lambda x, y=y: 2 * (x - y),
            bounds=[(0, None)] * d,
            constraints=[{"type": "eq", "fun": lambda x, c=c: x.sum() - c}],
            method="SLSQP",
            options={"ftol": 1e-12, "maxiter": 500},
        )
        np.testing.assert_allclose(simplex_projection(y, [c], [0]), res.x, atol=1e-5)


def test_projection_edge_cases() -> None:
    assert (
        simplex_projection(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)).size
        == 0
    )
    assert simplex_projection([7], [3], [0]).tolist() == [3.0]
    assert simplex_projection([5, -2, 9], [0], [0]).tolist() == [0.0, 0.0, 0.0]
    assert simplex_projection([-5, -5, -5], [6], [0]).tolist() == [2.0, 2.0, 2.0]
    # consistent non-negative input is a fixed point
    assert simplex_projection([3, 0, 4, 2, 2], [7, 4], [0, 3]).tolist() == [3, 0, 4, 2, 2]
    big = np.array([10**12, -(10**12), 5], dtype=np.int64)
    assert simplex_projection(big, [10**12], [0]).tolist() == [1e12 - 2.5, 0.0, 2.5]


# ------------------------------------------------------------------------------------------------
# TDA-L2: rounding with the +-1 sum fix
# ------------------------------------------------------------------------------------------------


def _reference_rounding(x: npt.NDArray[np.float64], c: int) -> I64:
    """The authors' rounding (optimize_int_vector, p=2) with stable sorts, one segment."""
    r = np.rint(x).astype(np.int64)
    diff = c - int(r.sum())
    if diff > 0:
        idx = np.argsort(-r, kind="stable")[:diff]
        r[idx] += 1
    elif diff < 0:
        nz = np.nonzero(r)[0]
        idx = np.argsort(r[nz], kind="stable")[:-diff]
        r[nz[idx]] -= 1
    return r


@settings(max_examples=300, deadline=None)
@given(segmented())
def test_l2_optimizer_invariants_and_reference(problem: tuple[I64, I64, I64]) -> None:
    y, targets, offsets = problem
    x = simplex_projection(y, targets, offsets)
    r = l2_optimizer(y, targets, offsets)
    assert r.dtype == np.int64 and (r >= 0).all()
    sums = np.add.reduceat(r, offsets)
    assert (sums == targets).all()
    assert np.abs(r - x).max(initial=0.0) <= 1.5 + 1e-9
    for xs, rs, c in zip(_split(x, offsets), _split(r, offsets), targets.tolist(), strict=True):
        assert rs.tolist() == _reference_rounding(xs, c).tolist()


def test_rounding_takes_from_the_smallest_positive_and_adds_to_the_largest() -> None:
    # rint gives [0, 2, 2, 0, 4] (half to even): an excess of 2 leaves the two smallest
    # positive entries (equal ones by position)
    assert round_to_targets([0.0, 1.5, 2.5, 0.5, 3.5], [6], [0]).tolist() == [0, 1, 1, 0, 4]
    # rint gives [0, 2, 2, 1, 0]: a deficit of 2 goes to the two largest entries
    assert round_to_targets([0.4, 2.4, 2.4, 1.4, 0.4], [7], [0]).tolist() == [0, 3, 3, 1, 0]
    # per segment
    r = round_to_targets([0.4, 2.4, 0.4, 2.4, 0.4], [3, 3], [0, 3])
    assert r.tolist() == [0, 3, 0, 3, 0]
    assert round_to_targets([], [], []).size == 0


def test_l2_optimizer_is_exact_on_consistent_input() -> None:
    y = np.array([3, 0, 4, 2, 2, 0], dtype=np.int64)
    assert l2_optimizer(y, np.array([7, 4, 0]), np.array([0, 3, 5])).tolist() == y.tolist()


# ------------------------------------------------------------------------------------------------
# TDA-Linf with a MILP solver
# ------------------------------------------------------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(segmented(max_segments=4, max_len=7))
def test_milp_reaches_intopt_optimum(problem: tuple[I64, I64, I64]) -> None:
    y, targets, offsets = problem
    x = linf_milp_optimizer(y, targets, offsets)
    ref = intopt(y, targets, offsets)
    assert x.dtype == np.int64 and (x >= 0).all()
    assert (np.add.reduceat(x, offsets) == targets).all()
    for ys, xs, rs in zip(
        _split(y, offsets), _split(x, offsets), _split(ref, offsets), strict=True
    ):
        assert np.abs(xs - ys).max() == np.abs(rs - ys).max()


def test_milp_on_larger_values_and_trivial_parents() -> None:
    rng = np.random.default_rng(8)
    y = rng.integers(-5_000, 200_000, size=60).astype(np.int64)
    offsets = np.array([0, 1, 2, 25, 59], dtype=np.int64)
    targets = np.array([9, 0, 1_000_000, 3, 17], dtype=np.int64)
    x = linf_milp_optimizer(y, targets, offsets)
    ref = intopt(y, targets, offsets)
    assert x[0] == 9 and x[1] == 0 and x[59] == 17  # single children: set directly
    for ys, xs, rs in zip(
        _split(y, offsets), _split(x, offsets), _split(ref, offsets), strict=True
    ):
        assert np.abs(xs - ys).max() == np.abs(rs - ys).max()
    assert (np.add.reduceat(x, offsets) == targets).all()


def test_missing_solver_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "scipy", None)
    with pytest.raises(SpecError, match=r"pip install 'inftda-sql\[solver\]'"):
        linf_milp_optimizer(np.array([1, 2]), np.array([3]), np.array([0]))


# ------------------------------------------------------------------------------------------------
# a tiny world: chains given by parent lists, true leaf counts, and a hand-made context
# ------------------------------------------------------------------------------------------------


class World:
    """Chains as parent lists (``parents[c][d-1][code]`` = depth d-1 parent of a depth-d code),
    true counts of leaf cells, and the independent (loop-based) ancestry the tests rely on."""

    def __init__(
        self,
        parents: Sequence[Sequence[Sequence[int]]],
        tree: str | None,
        leaf_counts: dict[tuple[int, ...], int],
    ) -> None:
        names = [[f"c{c}d{d}" for d in range(1, len(p) + 1)] for c, p in enumerate(parents)]
        self.spec: TreeSpec = parse_hierarchy(names[0] if len(names) == 1 else names, tree)
        self.parents = parents
        self.chains = [
            ChainTree.from_parents([np.array(p, dtype=np.int64) for p in chain])
            for chain in parents
        ]
        self.sizes = [ch.sizes for ch in self.chains]
        self.leaf_counts = leaf_counts
        self.total = sum(leaf_counts.values())
        self.calls: list[int] = []

    def ancestor(self, c: int, code: int, depth: int) -> int:
        for d in range(len(self.parents[c]), depth, -1):
            code = self.parents[c][d - 1][code]
        return code

    def nodes(self, level: int) -> dict[int, tuple[int, ...]]:
        """key -> codes of every cell of ``level`` (full domain)."""
        depths = self.spec.levels[level]
        strides = key_strides(self.spec, level, self.sizes)
        ranges = [range(self.sizes[c][d]) for c, d in enumerate(depths)]
        return {
            sum(x * s for x, s in zip(codes, strides, strict=True)): codes
            for codes in itertools.product(*ranges)
        }

    def key_of_leaf(self, leaf: tuple[int, ...], level: int) -> int:
        strides = key_strides(self.spec, level, self.sizes)
        return sum(
            self.ancestor(c, code, d) * s
            for c, (code, d, s) in enumerate(
                zip(leaf, self.spec.levels[level], strides, strict=True)
            )
        )

    def true_level(self, level: int, strides: tuple[int, ...]) -> tuple[I64, I64]:
        self.calls.append(level)
        assert strides == key_strides(self.spec, level, self.sizes)
        acc: dict[int, int] = {}
        for leaf, n in self.leaf_counts.items():
            k = self.key_of_leaf(leaf, level)
            acc[k] = acc.get(k, 0) + n
        keys = sorted(k for k, v in acc.items() if v > 0)
        return np.array(keys, dtype=np.int64), np.array([acc[k] for k in keys], dtype=np.int64)

    def ctx(
        self, budget: Budget, mechanism: str, *, domain: bool = False, **kwargs: Any
    ) -> MechanismContext:
        """A context for ``mechanism``; with ``domain=True`` its accounting knows the public
        domain (the levels it determines spend nothing), as in a release."""
        from inftda_sql.mechanisms import get, noised_levels

        privacy = kwargs.pop("privacy", "bounded")
        contribution = kwargs.pop("contribution", 1)
        if domain:
            acct = get(mechanism).account(
                budget, self.spec, privacy=privacy, contribution=contribution, chains=self.chains
            )
        else:
            acct = account(
                budget,
                noised_levels(mechanism, self.spec),
                privacy=privacy,
                contribution=contribution,
            )
        return MechanismContext(
            spec=self.spec,
            chains=self.chains,
            true_level=self.true_level,
            total=self.total,
            accounting=acct,
            source=as_source(kwargs.pop("seed", 1)),
            **kwargs,
        )


def _od_world() -> World:
    # origin: 2 regions > 3 municipalities; destination: 2 regions > 3 provinces > 4 towns
    return World(
        [[[0, 0], [0, 0, 1]], [[0, 0], [0, 0, 1], [0, 1, 1, 2]]],
        "destination",
        {(0, 0): 4, (0, 3): 2, (1, 2): 9, (2, 1): 1, (2, 3): 7},
    )


# ------------------------------------------------------------------------------------------------
# hierarchical mechanism: equal to generalised least squares on the whole tree
# ------------------------------------------------------------------------------------------------


def _gls(world: World, noisy: dict[int, npt.NDArray[np.float64]], var: list[float]) -> list[Any]:
    """Minimum-variance consistent estimates of every node, by dense linear algebra: leaves
    x minimise sum over nodes (A x - y)^2 / var, with exact (var 0) levels as constraints."""
    spec = world.spec
    n_levels = spec.n_levels
    leaves = world.nodes(n_levels)
    leaf_keys = sorted(leaves)
    col = {k: i for i, k in enumerate(leaf_keys)}
    rows: list[tuple[npt.NDArray[np.float64], float, float]] = []
    for level in range(n_levels + 1):
        keys = sorted(world.nodes(level))
        for j, k in enumerate(keys):
            a = np.zeros(len(leaf_keys))
            for lk, codes in leaves.items():
                if world.key_of_leaf(codes, level) == k:
                    a[col[lk]] = 1.0
            rows.append((a, float(noisy[level][j]), var[level]))
    soft = [(a, y, v) for a, y, v in rows if v > 0]
    hard = [(a, y) for a, y, v in rows if v == 0]
    amat = np.array([a / math.sqrt(v) for a, _, v in soft])
    yvec = np.array([y / math.sqrt(v) for _, y, v in soft])
    h = amat.T @ amat
    g = amat.T @ yvec
    if hard:
        c = np.array([a for a, _ in hard])
        kkt = np.block([[h, c.T], [c, np.zeros((len(hard), len(hard)))]])
        x = np.linalg.solve(kkt, np.concatenate([g, [y for _, y in hard]]))[: len(leaf_keys)]
    else:
        x = np.linalg.solve(h, g)
    out = []
    for level in range(n_levels + 1):
        keys = sorted(world.nodes(level))
        est = np.zeros(len(keys))
        for lk, codes in leaves.items():
            est[keys.index(world.key_of_leaf(codes, level))] += x[col[lk]]
        out.append(est)
    return out


def _run_hierarchical_recording(
    world: World, budget: Budget, **kwargs: Any
) -> tuple[Any, dict[int, npt.NDArray[np.float64]], list[float]]:
    """Run the mechanism with recorded seeded noise; return (result, noisy counts, variances)."""
    ctx = world.ctx(budget, "hierarchical", **kwargs)
    sigmas = ctx.tree_sigmas
    draws: list[I64] = []
    gen = np.random.default_rng(11)

    def fake(sigma: float, size: int, *, source: object) -> I64:
        noise = np.rint(gen.normal(0, sigma, size)).astype(np.int64)
        draws.append(noise)
        return noise

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_baselines, "draw_discrete_gaussian", fake)
        result = run_mechanism("hierarchical", ctx)
    # noise is drawn leaf level first, then upwards (the root only when it is noised)
    noisy: dict[int, npt.NDArray[np.float64]] = {}
    order = [lv for lv in range(world.spec.n_levels, -1, -1) if sigmas[lv] > 0]
    assert len(draws) == len(order)
    for level in range(world.spec.n_levels + 1):
        keys = sorted(world.nodes(level))
        true_keys, true_counts = world.true_level(
            level, key_strides(world.spec, level, world.sizes)
        )
        y = np.zeros(len(keys))
        for k, n in zip(true_keys.tolist(), true_counts.tolist(), strict=True):
            y[keys.index(k)] = n
        if level in order:
            y += draws[order.index(level)]
        noisy[level] = y
    # a level determined by its parents is not measured at all: no information (variance inf)
    var = [math.inf if det else s * s for s, det in zip(sigmas, ctx.tree_determined, strict=True)]
    return result, noisy, var


def _released(world: World, result: Any) -> dict[tuple[int, ...], int]:
    return {
        codes: int(v)
        for codes, v in zip(
            zip(*(c.tolist() for c in result.codes), strict=True),
            result.counts.tolist(),
            strict=True,
        )
    }


def _assert_rounds(world: World, result: Any, est: list[Any]) -> list[npt.NDArray[np.int64]]:
    """The released leaves are the GLS estimates rounded top-down: the root to the nearest
    integer, then every parent's children to the parent's stored integer by largest remainder.

    Checked independently of the mechanism's code, level by level, on the stored values
    (sums of the released leaves): every stored node is the floor or the ceiling of its estimate,
    the root its nearest integer, and within one parent no child rounded down has a larger
    fractional part than a child rounded up. (Values within 1e-6 of a tie may go either way:
    the two computations differ in the last bits.) Returns the stored values per level."""
    tol = 1e-6
    n_levels = world.spec.n_levels
    leaves = world.nodes(n_levels)
    got = _released(world, result)
    assert set(got) <= set(leaves.values())  # nothing outside the domain
    stored: list[npt.NDArray[np.int64]] = []
    parent_of: list[dict[int, int]] = []
    for level in range(n_levels + 1):
        keys = sorted(world.nodes(level))
        sums = dict.fromkeys(keys, 0)
        up: dict[int, int] = {}
        for codes in leaves.values():
            k = world.key_of_leaf(codes, level)
            sums[k] += got.get(codes, 0)
            if level:
                up[k] = world.key_of_leaf(codes, level - 1)
        stored.append(np.array([sums[k] for k in keys], dtype=np.int64))
        parent_of.append(up)
    root = float(est[0][0])
    if abs(abs(root - math.floor(root)) - 0.5) > tol:
        assert stored[0][0] == round(root)
    for level in range(1, n_levels + 1):
        keys = sorted(world.nodes(level))
        values, x = est[level], stored[level]
        assert np.all(np.abs(x - values) < 1 + tol), (level, x, values)
        frac = values - np.floor(values)
        rounded_up = x > np.floor(values) + 0.5
        clear = (frac > tol) & (frac < 1 - tol)
        by_parent: dict[int, list[int]] = {}
        for j, k in enumerate(keys):
            by_parent.setdefault(parent_of[level][k], []).append(j)
        for kids in by_parent.values():
            ids = [j for j in kids if clear[j]]
            ups = [frac[j] for j in ids if rounded_up[j]]
            downs = [frac[j] for j in ids if not rounded_up[j]]
            if ups and downs:
                assert min(ups) >= max(downs) - tol, (level, kids, values, x)
    return stored


@pytest.mark.parametrize(
    ("privacy", "contribution"), [("bounded", 1), ("unbounded", 1), ("bounded", 2)]
)
def test_hierarchical_equals_generalised_least_squares(privacy: str, contribution: int) -> None:
    world = _od_world()
    result, noisy, var = _run_hierarchical_recording(
        world, Budget.from_args(rho=0.3), privacy=privacy, contribution=contribution
    )
    est = _gls(world, noisy, var)
    stored = _assert_rounds(world, result, est)
    for level, stats in enumerate(result.levels):  # the statistics describe what is stored
        assert stats.surviving_cells == int(np.count_nonzero(stored[level]))
    if privacy == "bounded" and contribution == 1:  # exact root: the estimates sum to N
        assert est[-1].sum() == pytest.approx(world.total)
        assert int(result.counts.sum()) == world.total  # and so do the stored leaves


@st.composite
def worlds(draw: st.DrawFn, repeats: bool = False) -> World:
    """Random small worlds; with ``repeats``, some depths give every node one child (a level
    the public domain determines)."""
    n_chains = draw(st.integers(1, 2))
    parents: list[list[list[int]]] = []
    for _ in range(n_chains):
        depth = draw(st.integers(1, 3 if n_chains == 1 else 2))
        chain: list[list[int]] = []
        width = 1
        for _ in range(depth):
            one = repeats and draw(st.booleans())
            fan = (
                [1] * width
                if one
                else draw(st.lists(st.integers(1, 3), min_size=width, max_size=width))
            )
            chain.append([p for p, f in enumerate(fan) for _ in range(f)])
            width = sum(fan)
        parents.append(chain)
    leaf_sizes = [len(p[-1]) for p in parents]
    cells = list(itertools.product(*(range(s) for s in leaf_sizes)))
    counts = draw(st.lists(st.integers(0, 30), min_size=len(cells), max_size=len(cells)))
    tree = draw(st.sampled_from(["destination", "origin", "sequential"])) if n_chains == 2 else None
    return World(parents, tree, {c: n for c, n in zip(cells, counts, strict=True) if n})


@settings(max_examples=40, deadline=None)
@given(worlds(), st.sampled_from(["bounded", "unbounded"]))
def test_hierarchical_gls_on_random_trees(world: World, privacy: str) -> None:
    result, noisy, var = _run_hierarchical_recording(
        world, Budget.from_args(rho=0.5), privacy=privacy
    )
    _assert_rounds(world, result, _gls(world, noisy, var))


@st.composite
def rounding_problems(draw: st.DrawFn) -> tuple[npt.NDArray[np.float64], I64, I64]:
    lengths = draw(st.lists(st.integers(1, 8), min_size=1, max_size=6))
    values = draw(
        st.lists(
            st.floats(-50, 50, allow_nan=False, allow_infinity=False),
            min_size=sum(lengths),
            max_size=sum(lengths),
        )
    )
    shifts = draw(st.lists(st.integers(-20, 20), min_size=len(lengths), max_size=len(lengths)))
    return np.array(values), np.array(shifts, dtype=np.int64), np.array(lengths, dtype=np.int64)


@settings(max_examples=300, deadline=None)
@given(rounding_problems(), st.booleans())
def test_round_to_parents_keeps_every_sum(
    problem: tuple[npt.NDArray[np.float64], I64, I64], near: bool
) -> None:
    """Any targets are met exactly; targets within 1 of the segment sums (Hay's case) give
    floors and ceilings only, the ceilings on the largest fractional parts."""
    values, shifts, lengths = problem
    starts = np.cumsum(lengths) - lengths
    sums = np.add.reduceat(values, starts)
    targets = np.rint(sums).astype(np.int64) if near else shifts + np.rint(sums).astype(np.int64)
    x = _baselines.round_to_parents(values, targets, lengths)
    assert x.dtype == np.int64
    assert (np.add.reduceat(x, starts) == targets).all()
    if near:
        lo = np.floor(values)
        assert ((x == lo) | (x == lo + 1)).all()
        frac = values - lo
        for a, d in zip(starts.tolist(), lengths.tolist(), strict=True):
            seg_x, seg_lo, seg_f = x[a : a + d], lo[a : a + d], frac[a : a + d]
            ups, downs = seg_f[seg_x > seg_lo], seg_f[seg_x == seg_lo]
            if ups.size and downs.size:
                assert ups.min() >= downs.max()


def test_round_to_parents_ties_by_position_and_negative_values() -> None:
    # three equal fractions, two units to give: the first two get them
    assert _baselines.round_to_parents([0.5, 0.5, 0.5], [2], [3]).tolist() == [1, 1, 0]
    # negative estimates round like positive ones: floor, then the largest fractions up
    assert _baselines.round_to_parents([-0.2, -0.7, -1.1], [-2], [3]).tolist() == [0, -1, -1]
    assert _baselines.round_to_parents([], [], []).size == 0


def _one_parent_world(parents: int, leaves: int) -> World:
    """``parents`` nodes under the root, each with ``leaves`` leaves of count 1."""
    return World(
        [[[0] * parents, [p for p in range(parents) for _ in range(leaves)]]],
        None,
        {(i,): 1 for i in range(parents * leaves)},
    )


def test_hierarchical_total_is_n_exactly() -> None:
    """The issue's case: one parent with 1,000 leaves of count 1, rho 0.01, bounded DP. Every
    child used to round the same way (Hay's adjustment is one constant per parent and the noisy
    leaves are integers), so the stored total drifted by 261 on average over 20 seeds; rounded
    top-down it is N exactly."""
    world = _one_parent_world(1, 1000)
    for seed in range(20):
        ctx = world.ctx(Budget.from_args(rho=0.01), "hierarchical", seed=seed)
        result = run_mechanism("hierarchical", ctx)
        assert int(result.counts.sum()) == 1000
        assert result.levels[1].surviving_cells == 1


@pytest.mark.slow
def test_hierarchical_stored_parent_error_is_the_estimates() -> None:
    """Two parents with 1,000 leaves of count 1 each, rho 0.01, bounded DP: the stored total of
    a parent (the sum of its stored leaves) is off by the error of its real-valued estimate only
    (Hay's variance v/2, with v = 1 / (1/s1^2 + 1/(1000 s2^2)) from the two measurements of the
    parent, about 10^2 here, so a mean |error| near 8, not the 261 of independent children that
    all round the same way), plus at most one unit of rounding. Chi-square over 20 seeds, p-value
    floor 1e-4."""
    stats = pytest.importorskip("scipy.stats")
    world = _one_parent_world(2, 1000)
    errors = []
    var = 0.0
    for seed in range(20):
        ctx = world.ctx(Budget.from_args(rho=0.01), "hierarchical", seed=100 + seed)
        s1, s2 = ctx.tree_sigmas[1], ctx.tree_sigmas[2]
        var = 0.5 / (1 / s1**2 + 1 / (1000 * s2**2)) + 1 / 12  # estimate, then rounding
        result = run_mechanism("hierarchical", ctx)
        first = int(result.counts[result.codes[0] < 1000].sum())
        assert int(result.counts.sum()) == 2000
        errors.append(first - 1000)
    err = np.array(errors, dtype=np.float64)
    p_value = stats.chi2.sf(float((err**2).sum() / var), df=err.size)
    assert p_value > 1e-4, (errors, var)
    assert np.abs(err).mean() < 30  # the figure for the old rounding was 261


@settings(max_examples=40, deadline=None)
@given(worlds(repeats=True), st.sampled_from(["bounded", "unbounded"]))
def test_hierarchical_gls_without_the_determined_levels(world: World, privacy: str) -> None:
    """Levels of one child per parent are not measured: the result is GLS on the other levels'
    measurements, rounded top-down as before."""
    result, noisy, var = _run_hierarchical_recording(
        world, Budget.from_args(rho=0.5), privacy=privacy, domain=True
    )
    _assert_rounds(world, result, _gls(world, noisy, var))


TREE_MECHANISMS = ("inftda", "tda_l2", "tda_linf_solver", "hierarchical")


@settings(max_examples=40, deadline=None)
@given(worlds(repeats=True), st.sampled_from(TREE_MECHANISMS), st.booleans())
def test_determined_levels_are_neither_read_nor_noised(
    world: World, mechanism: str, private: bool
) -> None:
    """A level where every parent has one child in the public domain gets rho 0 and sigma 0: its
    true counts are never read (so they cannot leak unnoised), no noise is counted for it, and
    at rho = inf every tree mechanism still returns the true table."""
    budget = Budget.from_args(rho=0.5 if private else math.inf)
    determined = determined_levels(world.spec, world.sizes)
    ctx = world.ctx(budget, mechanism, domain=True, privacy="unbounded" if private else "bounded")
    result = run_mechanism(mechanism, ctx)
    assert ctx.tree_determined[1:] == list(determined)
    for level, det in enumerate(determined, start=1):
        if det:
            assert level not in world.calls, (mechanism, level, world.calls)
            assert result.levels[level].noised_cells == 0 and result.levels[level].sigma == 0
    if not private:
        assert _released(world, result) == {k: v for k, v in world.leaf_counts.items() if v}


def test_only_children_are_not_noised() -> None:
    """In a level with a budget, a parent with one child passes its value on: the optimiser
    sees the parent's value for that child (neither its true count nor noise), and only the
    children of parents with several children count as noised."""
    # one chain: root > 2 regions; region 0 has 3 towns, region 1 has one (with a true 900)
    world = World([[[0, 0], [0, 0, 0, 1]]], None, {(0,): 40, (1,): 20, (3,): 900})
    seen: list[tuple[I64, I64, I64]] = []

    def recording(y: I64, targets: I64, offsets: I64) -> I64:
        seen.append((y.copy(), targets.copy(), offsets.copy()))
        return intopt(y, targets, offsets)

    for seed in range(10):
        seen.clear()
        ctx = world.ctx(Budget.from_args(rho=0.5), "inftda", seed=seed)
        result = ctx.topdown(recording)
        y, targets, offsets = seen[-1]  # the towns of the surviving regions
        lengths = np.diff(np.append(offsets, y.size))
        for start, length, target in zip(offsets, lengths, targets, strict=True):
            if length == 1:
                assert y[start] == target  # the region's released value, not 900 + noise
        assert result.levels[2].noised_cells == int(lengths[lengths > 1].sum())


def test_an_accounting_that_skips_a_noisy_level_is_refused() -> None:
    world = _od_world()  # no level is determined: every level has a parent with two children
    acct = account(
        Budget.from_args(rho=1.0),
        [world.spec.level_name(lv) for lv in range(1, world.spec.n_levels + 1)],
        determined=[True] + [False] * (world.spec.n_levels - 1),
    )
    with pytest.raises(InternalError, match="does not determine"):
        MechanismContext(
            spec=world.spec,
            chains=world.chains,
            true_level=world.true_level,
            total=world.total,
            accounting=acct,
            source=as_source(1),
        )


@settings(max_examples=40, deadline=None)
@given(worlds())
def test_exactness_at_infinite_budget(world: World) -> None:
    """rho = inf: every full-domain and TopDown baseline returns the true leaf table."""
    truth = {k: v for k, v in world.leaf_counts.items() if v}
    for mechanism in ("vanilla_gauss", "hierarchical", "tda_l2", "tda_linf_solver"):
        result = run_mechanism(mechanism, world.ctx(Budget.from_args(rho=math.inf), mechanism))
        assert _released(world, result) == truth, mechanism
        assert result.counts.dtype == np.int64
        assert len(result.levels) == world.spec.n_levels + 1


# ------------------------------------------------------------------------------------------------
# full-domain refusal, budgets, statistics
# ------------------------------------------------------------------------------------------------


def test_full_domain_refusal_before_any_work() -> None:
    world = _od_world()  # 3 x 4 = 12 leaves, 1 + 2 + 4 + 6 + 9 + 12 = 34 nodes
    assert check_full_domain("hierarchical", world.spec, world.chains, 34) == [1, 2, 4, 6, 9, 12]
    with pytest.raises(SpecError) as err:
        run_mechanism(
            "vanilla_gauss", world.ctx(Budget.from_args(rho=1.0), "vanilla_gauss", max_cells=11)
        )
    assert str(err.value) == (
        "mechanism 'vanilla_gauss' noises every cell of the full domain: 12 leaf cells (the "
        "full domain) exceed max_cells=11; raise max_cells= or use mechanism='inftda'"
    )
    with pytest.raises(SpecError, match=r"34 nodes .* exceed max_cells=33"):
        run_mechanism(
            "hierarchical", world.ctx(Budget.from_args(rho=1.0), "hierarchical", max_cells=33)
        )
    assert world.calls == []  # refused before reading any true count
    run_mechanism(
        "vanilla_gauss", world.ctx(Budget.from_args(rho=1.0), "vanilla_gauss", max_cells=12)
    )


def test_refusal_message_formats_large_numbers() -> None:
    n = 7264
    world = World([[[0] * n], [[0] * n]], "destination", {})
    with pytest.raises(SpecError, match=r"52,765,696 leaf cells .* max_cells=50,000,000;"):
        check_full_domain("vanilla_gauss", world.spec, world.chains, 50_000_000)


def test_stability_histogram_needs_epsilon_and_delta() -> None:
    world = _od_world()
    with pytest.raises(BudgetError, match=r"\(epsilon, delta\)-DP, not zCDP.*epsilon= and delta="):
        run_mechanism(
            "stability_histogram", world.ctx(Budget.from_args(rho=1.0), "stability_histogram")
        )
    assert world.calls == []


def test_stability_histogram_counts_and_threshold() -> None:
    world = _od_world()
    # epsilon = inf: no noise, threshold m + 1 = 2: the count of 1 is dropped
    ctx = world.ctx(Budget.from_args(epsilon=math.inf, delta=1e-6), "stability_histogram")
    got = _released(world, run_mechanism("stability_histogram", ctx))
    assert got == {k: v for k, v in world.leaf_counts.items() if v >= 2}
    # finite: only positive true cells, never below the threshold
    budget = Budget.from_args(epsilon=2.0, delta=0.05)
    for seed in range(20):
        res = run_mechanism(
            "stability_histogram", world.ctx(budget, "stability_histogram", seed=seed)
        )
        out = _released(world, res)
        assert set(out) <= set(world.leaf_counts)
        assert all(v >= 3 for v in out.values())  # threshold at (2, 0.05), bounded m = 1
        assert res.levels[-1].noised_cells == 0  # the number of positive cells is private


def test_vanilla_gauss_noises_every_cell() -> None:
    world = _od_world()
    budget = Budget.from_args(rho=0.05)
    seen: set[tuple[int, ...]] = set()
    negative = False
    for seed in range(10):
        res = run_mechanism("vanilla_gauss", world.ctx(budget, "vanilla_gauss", seed=seed))
        out = _released(world, res)
        seen |= set(out)
        negative |= any(v < 0 for v in out.values())
        assert 0 not in out.values()
        assert res.levels[-1].noised_cells == 12 and res.levels[-1].parents == 9
        assert res.levels[-1].surviving_cells == len(out)
    assert len(seen) == 12  # every cell of the domain, empty ones included
    assert negative


def test_progress_and_level_stats() -> None:
    world = _od_world()
    for mechanism, budget in [
        ("vanilla_gauss", Budget.from_args(rho=1.0)),
        ("stability_histogram", Budget.from_args(epsilon=1.0, delta=1e-3)),
        ("tda_l2", Budget.from_args(rho=1.0)),
        ("tda_linf_solver", Budget.from_args(rho=1.0)),
        ("hierarchical", Budget.from_args(rho=1.0)),
    ]:
        seen: list[LevelStats] = []
        res = run_mechanism(mechanism, world.ctx(budget, mechanism, progress=seen.append))
        assert tuple(seen) == res.levels, mechanism
        assert [s.level for s in seen] == list(range(world.spec.n_levels + 1))
        assert seen[-1].surviving_cells == res.counts.size
        assert all(s.seconds >= 0 for s in seen)
        # levels the mechanism does not release are sums of the released leaves
        if mechanism in ("vanilla_gauss", "stability_histogram"):
            assert seen[0].surviving_cells == int(res.counts.sum() != 0)


def test_optimizers_plug_into_topdown_consistently() -> None:
    world = _od_world()
    for mechanism in ("tda_l2", "tda_linf_solver"):
        for seed in range(3):
            res = run_mechanism(
                mechanism, world.ctx(Budget.from_args(rho=0.2), mechanism, seed=seed)
            )
            assert (res.counts > 0).all() and res.counts.sum() == world.total


def test_public_names() -> None:
    assert sorted(_baselines.__all__) == _baselines.__all__
    assert all(hasattr(_baselines, name) for name in _baselines.__all__)
