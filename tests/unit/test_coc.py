"""The engine-free count-of-counts maths: estimators, matching, merging, top-down, EMD."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inftda_sql._errors import SpecError
from inftda_sql.core.accounting import count_of_counts_accounting, discrete_laplace_variance
from inftda_sql.core.coc import (
    CocLevel,
    Histograms,
    Runs,
    count_of_counts,
    emd_per_node,
    estimate_level,
    match_and_merge,
)
from inftda_sql.core.rng import as_source

METHODS = ("cumulative", "unattributed", "naive")


def _levels(leaf_sizes: list[list[int]], parents: list[int], empty: list[int]) -> list[CocLevel]:
    """root > states > counties from each county's group sizes (and its empty groups)."""
    node, size = [], []
    for v, sizes in enumerate(leaf_sizes):
        node += [v] * (len(sizes) + empty[v])
        size += sizes + [0] * empty[v]
    leaf = Histograms.build(node, size, np.ones(len(node), dtype=np.int64))
    par = np.asarray(parents, dtype=np.int64)
    n_states = int(par.max()) + 1
    g_leaf = leaf.totals(len(leaf_sizes))
    states = leaf.aggregate(par)
    root = states.aggregate(np.zeros(n_states, dtype=np.int64))
    return [
        CocLevel("root", np.array([g_leaf.sum()]), np.zeros(1, dtype=np.int64), root),
        CocLevel("state", states.totals(n_states), np.zeros(n_states, dtype=np.int64), states),
        CocLevel("county", g_leaf, par, leaf),
    ]


@st.composite
def hierarchies(draw: st.DrawFn) -> tuple[list[CocLevel], int, int]:
    n_states = draw(st.integers(1, 3))
    parents = sorted(draw(st.lists(st.integers(0, n_states - 1), min_size=n_states, max_size=6)))
    parents = sorted(parents + list(range(n_states)))  # every state has a county
    min_size = draw(st.sampled_from([0, 1]))
    max_size = draw(st.integers(max(min_size, 1), 12))
    sizes = [
        draw(st.lists(st.integers(max(min_size, 1), max_size + 4), max_size=12)) for _ in parents
    ]
    empty = [draw(st.integers(0, 3)) if min_size == 0 else 0 for _ in parents]
    return _levels(sizes, parents, empty), max_size, min_size


def _released_levels(levels: list[CocLevel], leaves: Histograms) -> list[Histograms]:
    parent = levels[-1].parent
    states = leaves.aggregate(parent)
    return [states.aggregate(np.zeros(levels[1].n_nodes, dtype=np.int64)), states, leaves]


def _truncated(h: Histograms, k: int) -> Histograms:
    return Histograms.build(h.node, np.minimum(h.size, k), h.count)


@settings(max_examples=60, deadline=None)
@given(hierarchies(), st.sampled_from(METHODS), st.sampled_from(["topdown", "leaves"]))
def test_an_infinite_budget_is_exact(
    world: tuple[list[CocLevel], int, int], method: str, consistency: str
) -> None:
    levels, max_size, min_size = world
    names = ["root", "state", "county"] if consistency == "topdown" else ["county"]
    acct = count_of_counts_accounting(float("inf"), names, method=method)
    out = count_of_counts(
        levels,
        acct,
        max_size=max_size,
        min_size=min_size,
        consistency=consistency,
        source=as_source(0),
        chunk=7,
    )
    for level, released in zip(levels, _released_levels(levels, out.leaves), strict=True):
        truth = _truncated(level.truth, max_size)
        np.testing.assert_array_equal(released.node, truth.node)
        np.testing.assert_array_equal(released.size, truth.size)
        np.testing.assert_array_equal(released.count, truth.count)


@settings(max_examples=60, deadline=None)
@given(
    hierarchies(),
    st.sampled_from(METHODS),
    st.sampled_from(["topdown", "leaves"]),
    st.sampled_from(["weighted", "average"]),
    st.sampled_from([0.05, 0.5, 3.0]),
    st.integers(0, 2**32),
)
def test_released_histograms_keep_the_public_facts(
    world: tuple[list[CocLevel], int, int],
    method: str,
    consistency: str,
    merge: str,
    epsilon: float,
    seed: int,
) -> None:
    """Non-negative integers, every node summing to its public number of groups, children
    summing to the parent, sizes within [min_size, max_size]."""
    levels, max_size, min_size = world
    names = ["root", "state", "county"] if consistency == "topdown" else ["county"]
    acct = count_of_counts_accounting(epsilon, names, method=method)
    out = count_of_counts(
        levels,
        acct,
        max_size=max_size,
        min_size=min_size,
        consistency=consistency,
        merge=merge,
        source=as_source(seed),
        chunk=5,
    )
    released = _released_levels(levels, out.leaves)
    for level, hist in zip(levels, released, strict=True):
        assert hist.count.dtype == np.int64 and np.all(hist.count > 0)
        assert np.all((hist.size >= min_size) & (hist.size <= max_size))
        np.testing.assert_array_equal(hist.totals(level.n_nodes), level.groups)
    np.testing.assert_array_equal(  # consistency: the parents are the sums of their children
        released[1].node, out.leaves.aggregate(levels[-1].parent).node
    )


def test_estimators_per_node_sum_to_the_groups_and_order_as_the_paper_says() -> None:
    """On a node with many small groups and a few big ones, noise at scale 1: cumulative is
    far better than naive; every estimate sums to G."""
    rng = np.random.default_rng(0)
    sizes = np.concatenate((rng.geometric(0.4, 5_000), rng.integers(1, 500, 5)))
    u, c = np.unique(np.minimum(sizes, 1_000), return_counts=True)
    level = CocLevel(
        "root", np.array([sizes.size]), np.zeros(1, np.int64), Histograms.build(0 * u, u, c)
    )
    err = {}
    for method in METHODS:
        scale = 2.0 if method == "naive" else 1.0
        runs, noised = estimate_level(
            level,
            method=method,
            scale=scale,
            variance=discrete_laplace_variance(scale),
            max_size=1_000,
            min_size=1,
            source=as_source(1),
        )
        assert int(runs.count.sum()) == sizes.size
        assert noised == {"cumulative": 999, "unattributed": sizes.size, "naive": 1_000}[method]
        err[method] = float(emd_per_node(level.truth, runs.histograms(), 1)[0])
    assert err["cumulative"] < err["naive"] / 10


def test_matching_is_smallest_to_smallest_with_proportional_splits() -> None:
    # one parent with 4 groups of size 1 (exact) and children: child 0 has 2 groups of size 2,
    # child 1 has 2 of size 2 and... all exact -> the children take the parent's sizes
    parent = Runs.build(np.array([0]), np.array([1]), np.zeros(1), np.array([4]))
    child = Runs.build(np.array([0, 1]), np.array([2, 2]), np.ones(2), np.array([3, 1]))
    out = match_and_merge(parent, child, np.array([0, 0]), max_size=9)
    assert out.node.tolist() == [0, 1] and out.size.tolist() == [1, 1]
    assert out.count.tolist() == [3, 1]
    # a parent run covering part of a class: 3 groups of size 1 then 1 of size 5, over a class
    # of 4 groups of size 2 split 2:2 between two children -> 1.5 : 1.5 rounded by remainder
    parent = Runs.build(np.array([0, 0]), np.array([1, 5]), np.zeros(2), np.array([3, 1]))
    child = Runs.build(np.array([0, 1]), np.array([2, 2]), np.ones(2), np.array([2, 2]))
    out = match_and_merge(parent, child, np.array([0, 0]), max_size=9)
    by = {(int(n), int(s)): int(c) for n, s, c in zip(out.node, out.size, out.count, strict=True)}
    assert sum(v for (n, _), v in by.items() if n == 0) == 2
    assert sum(v for (n, _), v in by.items() if n == 1) == 2
    assert sorted(by.values()) == [1, 1, 2]  # the 3 size-1 groups split 2:1, the 5 goes to one
    assert sum(v for (_, s), v in by.items() if s == 5) == 1


def test_weighted_merge_follows_the_smaller_variance() -> None:
    parent = Runs.build(np.array([0]), np.array([10]), np.array([1.0]), np.array([1]))
    child = Runs.build(np.array([0]), np.array([20]), np.array([9.0]), np.array([1]))
    weighted = match_and_merge(parent, child, np.array([0]), max_size=100)
    average = match_and_merge(parent, child, np.array([0]), max_size=100, merge="average")
    assert weighted.size.tolist() == [11] and average.size.tolist() == [15]
    assert weighted.var.tolist() == [pytest.approx(0.9)]


def test_emd_of_known_histograms() -> None:
    t = Histograms.build([0, 0, 1], [1, 3, 2], [2, 1, 5])
    r = Histograms.build([0, 1, 1], [2, 2, 4], [3, 4, 1])
    # node 0: sizes 1,1,3 vs 2,2,2 -> 3; node 1: 2*5 vs 2*4 + 4 -> 2
    assert emd_per_node(t, r, 2).tolist() == [3.0, 2.0]
    assert emd_per_node(t, t, 2).tolist() == [0.0, 0.0]


def test_bad_options() -> None:
    levels = _levels([[1, 2]], [0], [0])
    acct = count_of_counts_accounting(1.0, ["root", "state", "county"])
    with pytest.raises(SpecError, match="consistency"):
        count_of_counts(levels, acct, max_size=5, consistency="bottomup", source=as_source(0))
    with pytest.raises(SpecError, match="merge"):
        count_of_counts(levels, acct, max_size=5, merge="median", source=as_source(0))
