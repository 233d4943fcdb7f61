"""The CBDP optimiser (inftda_sql.core.lsq) against a reference solver and the KKT conditions."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inftda_sql import SpecError
from inftda_sql.core import lsq
from inftda_sql.core.lsq import LatticeProblem, combine_codes, solve

scipy_optimize = pytest.importorskip("scipy.optimize", reason="scipy is the reference solver")
scipy_sparse = pytest.importorskip("scipy.sparse")


def lattice(
    rng: np.random.Generator,
    *,
    na: int,
    nb: int,
    nt: int,
    ga: int,
    gb: int,
    scale: float,
    uniform: bool,
    integral: bool = True,
    exact_total: bool = False,
    lam: float = 0.5,
) -> tuple[LatticeProblem, np.ndarray]:
    """The paper's shape in miniature: leaves (a, b, t); features total, t, (zone of a, t),
    (group of b, t) -- the last two incomparable -- and the leaf; Laplace-noised targets."""
    n = na * nb * nt
    a, b, t = (
        x.ravel() for x in np.meshgrid(np.arange(na), np.arange(nb), np.arange(nt), indexing="ij")
    )
    za, zb = rng.integers(0, ga, na), rng.integers(0, gb, nb)
    truth = rng.poisson(lam, n) * rng.integers(0, 5, n)
    maps: list[np.ndarray | None] = []
    sizes = []
    for g in (np.zeros(n, np.int64), t, za[a] * nt + t, zb[b] * nt + t):
        code, k = combine_codes(np.zeros(n, np.int64), 1, g.astype(np.int64), int(g.max()) + 1)
        maps.append(code)
        sizes.append(k)
    maps.append(None)
    sizes.append(n)
    targets = []
    for m, s in zip(maps, sizes, strict=True):
        true = truth.astype(float) if m is None else np.bincount(m, weights=truth, minlength=s)
        noise = rng.laplace(0.0, scale, s)
        targets.append(true + (np.round(noise) if integral else noise))
    exact = (exact_total,) + (False,) * 4
    if exact_total:
        targets[0] = np.array([float(truth.sum())])
    weights = tuple(1.0 if uniform else 1.0 / s for s in sizes)
    problem = LatticeProblem(tuple(maps), tuple(sizes), tuple(targets), weights, exact, 4)
    return problem, truth


def reference(problem: LatticeProblem) -> np.ndarray:
    """The optimum by scipy's bounded-variable least squares on an explicit matrix."""
    n = problem.n
    rows, rhs = [], []
    for f in range(len(problem.sizes)):
        m = problem.maps[f]
        agg = (
            scipy_sparse.identity(n, format="csr")
            if m is None
            else scipy_sparse.csr_matrix(
                (np.ones(n), (m, np.arange(n))), shape=(problem.sizes[f], n)
            )
        )
        w = math.sqrt(problem.weights[f])
        rows.append(w * agg)
        rhs.append(w * problem.targets[f])
    matrix = scipy_sparse.vstack(rows).toarray()
    found = scipy_optimize.lsq_linear(
        matrix, np.concatenate(rhs), bounds=(0, np.inf), method="bvls", tol=1e-14, max_iter=10_000
    )
    return np.asarray(found.x)


def kkt_residual(problem: LatticeProblem, x: np.ndarray, exact: bool = False) -> float:
    """The largest violation of the KKT conditions, relative to the gradient's scale:
    x >= 0, gradient (+ multiplier of an exact total) >= 0, = 0 where x > 0."""
    g = np.zeros(problem.n)
    for f in range(len(problem.sizes)):
        if problem.exact[f]:
            continue
        r = 2 * problem.weights[f] * (problem.aggregate(x, f) - problem.targets[f])
        m = problem.maps[f]
        g += r if m is None else r[m]
    positive = x > 1e-9 * (1 + x.max(initial=0))
    mu = -float(np.mean(g[positive])) if exact and positive.any() else 0.0
    g = g + mu
    scale = 1.0 + float(np.max(np.abs(g)))
    worst = max(
        float(-x.min(initial=0)),
        float(np.max(np.abs(g[positive]), initial=0)) / scale,
        float(-np.min(g[~positive], initial=0)) / scale,
    )
    return worst


SHAPES = st.fixed_dictionaries(
    {
        "na": st.integers(1, 8),
        "nb": st.integers(1, 7),
        "nt": st.integers(1, 4),
        "ga": st.integers(1, 3),
        "gb": st.integers(1, 3),
        "scale": st.sampled_from([0.5, 3.0, 30.0]),
        "uniform": st.booleans(),
        "integral": st.booleans(),
        "lam": st.sampled_from([0.1, 0.5, 3.0]),
    }
)


@settings(max_examples=150, deadline=None)
@given(shape=SHAPES, seed=st.integers(0, 2**32 - 1))
def test_matches_reference_solver(shape: dict[str, object], seed: int) -> None:
    problem, _ = lattice(np.random.default_rng(seed), **shape)  # type: ignore[arg-type]
    x = solve(problem).x
    ours, best = problem.objective(x), problem.objective(reference(problem))
    assert ours <= best * (1 + 1e-6) + 1e-9
    assert kkt_residual(problem, x) < 1e-6


@settings(max_examples=100, deadline=None)
@given(shape=SHAPES, seed=st.integers(0, 2**32 - 1))
def test_exact_total_is_met_and_optimal(shape: dict[str, object], seed: int) -> None:
    problem, truth = lattice(np.random.default_rng(seed), exact_total=True, **shape)  # type: ignore[arg-type]
    x = solve(problem).x
    assert x.min() >= 0
    assert x.sum() == pytest.approx(truth.sum(), rel=1e-9, abs=1e-7)
    if truth.sum() > 0:
        assert kkt_residual(problem, x, exact=True) < 1e-6


def test_noise_free_targets_give_the_truth() -> None:
    rng = np.random.default_rng(3)
    problem, truth = lattice(rng, na=6, nb=5, nt=3, ga=2, gb=2, scale=0.0, uniform=False)
    assert np.allclose(solve(problem).x, truth, atol=1e-7)


def test_leaf_only_is_the_positive_part() -> None:
    c = np.array([3.0, -2.0, 0.5])
    p = LatticeProblem((None,), (3,), (c,), (1.0,), (False,), 0)
    assert solve(p).x.tolist() == [3.0, 0.0, 0.5]


def test_zero_public_total_releases_nothing() -> None:
    problem, _ = lattice(
        np.random.default_rng(4),
        na=3,
        nb=3,
        nt=2,
        ga=2,
        gb=2,
        scale=3.0,
        uniform=False,
        exact_total=True,
    )
    zero = LatticeProblem(
        problem.maps,
        problem.sizes,
        (np.array([0.0]), *problem.targets[1:]),
        problem.weights,
        problem.exact,
        problem.leaf,
    )
    assert not solve(zero).x.any()


def test_combine_codes_both_paths_agree() -> None:
    rng = np.random.default_rng(5)
    a, b = rng.integers(0, 50, 1000), rng.integers(0, 40, 1000)
    small, n_small = combine_codes(a, 50, b, 40)
    big, n_big = combine_codes(a, 10**9, b, 10**9)  # the hash path (span above the bincount one)
    assert n_small == n_big == len({(x, y) for x, y in zip(a.tolist(), b.tolist(), strict=True)})
    # both are bijections of the pairs
    assert len(set(zip(small.tolist(), big.tolist(), strict=True))) == n_small


def test_too_large_a_newton_system_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    problem, _ = lattice(
        np.random.default_rng(6), na=6, nb=5, nt=3, ga=2, gb=2, scale=3.0, uniform=False
    )
    monkeypatch.setattr(lsq, "MAX_COARSE_CELLS", 30)
    with pytest.raises(
        SpecError, match=r"Newton system, more than 30 \(its memory\); coarsen or drop"
    ):
        solve(problem)


# ------------------------------------------------------------------------------------------------
# the iterative path (conjugate gradients on the Schur complement), forced on small instances


@settings(max_examples=150, deadline=None)
@given(shape=SHAPES, seed=st.integers(0, 2**32 - 1))
def test_iterative_path_matches_reference_solver(shape: dict[str, object], seed: int) -> None:
    problem, _ = lattice(np.random.default_rng(seed), **shape)  # type: ignore[arg-type]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(lsq, "MAX_DENSE_CELLS", 0)
        sol = solve(problem)
    assert sol.dense_cells == 0
    ours, best = problem.objective(sol.x), problem.objective(reference(problem))
    assert ours <= best * (1 + 1e-6) + 1e-9
    assert kkt_residual(problem, sol.x) < 1e-6


@settings(max_examples=100, deadline=None)
@given(shape=SHAPES, seed=st.integers(0, 2**32 - 1))
def test_iterative_path_exact_total_is_met_and_optimal(shape: dict[str, object], seed: int) -> None:
    problem, truth = lattice(np.random.default_rng(seed), exact_total=True, **shape)  # type: ignore[arg-type]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(lsq, "MAX_DENSE_CELLS", 0)
        x = solve(problem).x
    assert x.min() >= 0
    assert x.sum() == pytest.approx(truth.sum(), rel=1e-9, abs=1e-7)
    if truth.sum() > 0:
        assert kkt_residual(problem, x, exact=True) < 1e-6


@pytest.mark.parametrize("seed", range(20))
def test_iterative_path_with_several_exact_features(seed: int) -> None:
    """Exact total and exact periods (t): the Newton matrix has zero rows (a period whose
    leaves are all non-positive) and the exact features are linearly dependent (the periods
    sum to the total). Both constraints hold and the objective matches the direct solver's."""
    rng = np.random.default_rng(seed)
    problem, truth = lattice(
        rng, na=5, nb=4, nt=3, ga=2, gb=2, scale=3.0, uniform=bool(seed % 2), lam=0.3
    )
    t_map = problem.maps[1]
    assert t_map is not None
    periods = np.bincount(t_map, weights=truth, minlength=problem.sizes[1])
    exact = LatticeProblem(
        problem.maps,
        problem.sizes,
        (np.array([float(truth.sum())]), periods, *problem.targets[2:]),
        problem.weights,
        (True, True, False, False, False),
        problem.leaf,
    )
    direct = solve(exact)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(lsq, "MAX_DENSE_CELLS", 0)
        iterative = solve(exact)
    assert iterative.dense_cells == 0 and direct.dense_cells > 0
    x = iterative.x
    assert x.min() >= 0
    assert np.allclose(np.bincount(t_map, weights=x, minlength=problem.sizes[1]), periods)
    free = LatticeProblem(
        problem.maps, problem.sizes, exact.targets, problem.weights, (False,) * 5, problem.leaf
    )
    assert free.objective(x) == pytest.approx(free.objective(direct.x), rel=1e-7, abs=1e-9)


def test_iterative_path_when_the_atoms_are_the_leaves() -> None:
    """Two incomparable coarse features that meet in the leaves (every atom one leaf, the
    counting shortcut of the atoms): the reference solver agrees."""
    rng = np.random.default_rng(8)
    na, nb = 9, 8
    a, b = (x.ravel() for x in np.meshgrid(np.arange(na), np.arange(nb), indexing="ij"))
    ta, tb = rng.integers(0, 3, na)[a], rng.integers(0, 3, nb)[b]
    truth = rng.poisson(0.7, a.size) * rng.integers(0, 6, a.size)
    maps: list[np.ndarray | None] = [
        np.zeros(a.size, np.int64),
        ta * 3 + tb,
        a * 3 + tb,
        ta * nb + b,
    ]
    maps = [combine_codes(np.zeros(a.size, np.int64), 1, m, int(m.max()) + 1)[0] for m in maps]  # type: ignore[arg-type]
    sizes = [int(m.max()) + 1 for m in maps] + [a.size]  # type: ignore[union-attr]
    maps.append(None)
    targets = tuple(
        (truth if m is None else np.bincount(m, weights=truth, minlength=s))
        + np.round(rng.laplace(0.0, 2.0, s))
        for m, s in zip(maps, sizes, strict=True)
    )
    problem = LatticeProblem(
        tuple(maps), tuple(sizes), targets, tuple(1 / s for s in sizes), (False,) * 5, 4
    )
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(lsq, "MAX_DENSE_CELLS", 0)
        sol = solve(problem)
    assert sol.atoms == a.size and sol.cg_iterations > 0
    ours, best = problem.objective(sol.x), problem.objective(reference(problem))
    assert ours <= best * (1 + 1e-6) + 1e-9
    assert kkt_residual(problem, sol.x) < 1e-6


def test_paper_sized_instance_converges() -> None:
    """811,200 leaves (130 stops, 48 periods), 5 features, small epsilon: the Newton iteration
    ends and the KKT conditions hold."""
    rng = np.random.default_rng(7)
    stops, periods = 130, 48
    o, d, t = (
        x.ravel()
        for x in np.meshgrid(np.arange(stops), np.arange(stops), np.arange(periods), indexing="ij")
    )
    zone = np.sort(rng.integers(0, 4, stops))
    mode = rng.integers(0, 12, (stops, stops))[o, d]
    truth = np.bincount(rng.integers(0, o.size, 38_000), minlength=o.size).astype(float)
    maps = [
        np.zeros(o.size, np.int64),
        t,
        (zone[o] * 4 + zone[d]) * periods + t,
        mode * periods + t,
        None,
    ]
    sizes = [1, periods, 16 * periods, 12 * periods, o.size]
    targets = [
        (truth if m is None else np.bincount(m, weights=truth, minlength=s))
        + np.round(rng.laplace(0, 500.0, s))
        for m, s in zip(maps, sizes, strict=True)
    ]
    p = LatticeProblem(
        tuple(maps), tuple(sizes), tuple(targets), tuple(1 / s for s in sizes), (False,) * 5, 4
    )
    sol = solve(p)
    assert sol.newton_steps < 100
    assert kkt_residual(p, sol.x) < 1e-6


def test_direct_solver_only_for_small_lapack_systems(monkeypatch: pytest.MonkeyPatch) -> None:
    """The automatic choice: direct while its dense systems fit MAX_LAPACK_CELLS, else CG;
    both reach the same optimum."""
    problem, _ = lattice(
        np.random.default_rng(9), na=8, nb=7, nt=4, ga=3, gb=3, scale=3.0, uniform=False
    )
    direct = solve(problem)
    monkeypatch.setattr(lsq, "MAX_LAPACK_CELLS", 0)
    iterative = solve(problem)
    assert (direct.solver, iterative.solver) == ("direct", "cg")
    assert direct.dense_cells > 0 and iterative.dense_cells == 0
    assert problem.objective(iterative.x) == pytest.approx(problem.objective(direct.x), rel=1e-9)
