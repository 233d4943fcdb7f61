"""The count-of-counts privacy stage vectorised across nodes equals it node by node: the
top-down matching of all parents at once against each parent alone, the noise drawn by several
threads against one, the sampler drawing into a reused array against a new one. (The isotonic
fit of all segments at once against each segment alone is in ``test_isotonic.py``.)"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inftda_sql._errors import InternalError
from inftda_sql.core.coc import CocLevel, Histograms, Runs, estimate_level, match_and_merge
from inftda_sql.core.coc import estimators as estimators_module
from inftda_sql.core.noise import draw_discrete_laplace
from inftda_sql.core.rng import as_source

_run = st.tuples(st.integers(1, 9), st.sampled_from([0.0, 0.5, 1.0, 2.0]), st.integers(1, 4))


@st.composite
def families(draw: st.DrawFn) -> tuple[Runs, Runs, np.ndarray]:
    """Parents (1 to 4), each with 1 to 3 children holding a few runs, and runs of the parents
    holding as many groups as their children, in other sizes."""
    n_parents = draw(st.integers(1, 4))
    child_parent: list[int] = []
    c_node, c_size, c_var, c_count = [], [], [], []
    p_node, p_size, p_var, p_count = [], [], [], []
    for p in range(n_parents):
        total = 0
        for _ in range(draw(st.integers(1, 3))):
            child = len(child_parent)
            child_parent.append(p)
            for size, var, count in draw(st.lists(_run, min_size=0, max_size=4)):
                c_node.append(child)
                c_size.append(size)
                c_var.append(var)
                c_count.append(count)
                total += count
        while total > 0:  # the parent's runs: the same number of groups, cut anywhere
            size, var, count = draw(_run)
            count = min(count, total)
            p_node.append(p)
            p_size.append(size)
            p_var.append(var)
            p_count.append(count)
            total -= count

    def runs(node: list[int], size: list[int], var: list[float], count: list[int]) -> Runs:
        return Runs.build(
            np.array(node, dtype=np.int64),
            np.array(size, dtype=np.int64),
            np.array(var, dtype=np.float64),
            np.array(count, dtype=np.int64),
        )

    parents = runs(p_node, p_size, p_var, p_count)
    children = runs(c_node, c_size, c_var, c_count)
    return parents, children, np.array(child_parent, dtype=np.int64)


def _select(runs: Runs, keep: np.ndarray, renumber: np.ndarray) -> Runs:
    mine = keep[runs.node]
    return Runs.build(renumber[runs.node[mine]], runs.size[mine], runs.var[mine], runs.count[mine])


@settings(max_examples=200, deadline=None)
@given(families(), st.sampled_from(["weighted", "average"]))
def test_matching_all_parents_at_once_is_each_parent_alone(
    family: tuple[Runs, Runs, np.ndarray], merge: str
) -> None:
    parents, children, child_parent = family
    together = match_and_merge(parents, children, child_parent, merge=merge, max_size=9)
    n_parents = int(child_parent.max()) + 1
    parts = []
    for p in range(n_parents):
        mine = child_parent == p
        renumber = np.cumsum(mine) - 1  # the parent's children, numbered 0.. in order
        alone = match_and_merge(
            _select(parents, np.arange(n_parents) == p, np.zeros(n_parents, dtype=np.int64)),
            _select(children, mine, renumber),
            np.zeros(int(mine.sum()), dtype=np.int64),
            merge=merge,
            max_size=9,
        )
        back = np.flatnonzero(mine)
        parts.append((back[alone.node], alone.size, alone.var, alone.count))
    node, size, var, count = (np.concatenate(x) for x in zip(*parts, strict=True))
    expected = Runs.build(node, size, var, count)
    np.testing.assert_array_equal(together.node, expected.node)
    np.testing.assert_array_equal(together.size, expected.size)
    np.testing.assert_array_equal(together.var, expected.var)
    np.testing.assert_array_equal(together.count, expected.count)


def _county_level(seed: int) -> CocLevel:
    rng = np.random.default_rng(seed)
    n = 7
    node = np.repeat(np.arange(n), 5)
    size = rng.integers(1, 60, node.size)
    count = rng.integers(0, 9, node.size)
    truth = Histograms.build(node, size, count)
    return CocLevel("county", truth.totals(n), np.zeros(n, dtype=np.int64), truth)


@pytest.mark.parametrize("method", ["cumulative", "unattributed"])
def test_noise_drawn_by_several_threads_is_the_seeded_draws(
    method: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every chunk has its own seeded source: the chunks drawn in parallel, ahead of the fit,
    give the release drawn one chunk after the other."""
    level = _county_level(3)
    out = {}
    for workers in (1, 3):
        monkeypatch.setattr(estimators_module, "NOISE_WORKERS", workers)
        out[workers] = estimate_level(
            level,
            method=method,
            scale=2.0,
            variance=8.0,
            max_size=64,
            min_size=1,
            source=as_source(11),
            chunk=100,  # two nodes a chunk: four chunks
        )[0]
    for field in ("node", "size", "var", "count"):
        np.testing.assert_array_equal(getattr(out[1], field), getattr(out[3], field))


def test_drawing_into_a_reused_array_gives_the_same_draws() -> None:
    buf = np.full(1_000, 7, dtype=np.int64)
    got = draw_discrete_laplace(3.0, 1_000, source=as_source(5), out=buf)
    assert got is buf
    np.testing.assert_array_equal(buf, draw_discrete_laplace(3.0, 1_000, source=as_source(5)))
    with pytest.raises(InternalError, match="contiguous int64 array of 10 entries"):
        draw_discrete_laplace(3.0, 10, source=as_source(5), out=np.zeros(10, dtype=np.int32))
