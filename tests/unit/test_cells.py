"""core/cells.py: every level's true counts from the leaf cells, against a brute force."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inftda_sql import InternalError
from inftda_sql.core import cells as cells_module
from inftda_sql.core.cells import LeafCells, exact_sum
from inftda_sql.core.spec import parse_hierarchy
from inftda_sql.core.tree import ChainTree, key_strides


def _chain(fanouts: list[list[int]]) -> ChainTree:
    """A chain whose depth-d node i has fanouts[d][i] children."""
    parents = [np.repeat(np.arange(len(f), dtype=np.int64), f) for f in fanouts]
    return ChainTree.from_parents(parents)


def _brute(
    cells: LeafCells, spec_levels: tuple[int, ...], strides: tuple[int, ...]
) -> tuple[list[int], list[int]]:
    total: Counter[int] = Counter()
    for i in range(cells.counts.size):
        key = 0
        for c, (depth, stride) in enumerate(zip(spec_levels, strides, strict=True)):
            code = int(cells.codes[c][i])
            tree = cells.chains[c]
            for d in range(len(tree.sizes) - 1, depth, -1):  # walk up to the level's depth
                code = int(tree.parents(d)[code])
            key += (code if depth else 0) * stride
        total[key] += int(cells.counts[i])
    keys = sorted(total)
    return keys, [total[k] for k in keys]


@st.composite
def worlds(draw: st.DrawFn) -> tuple[str, list[ChainTree], LeafCells]:
    tree_kind = draw(st.sampled_from(["chain", "sequential", "destination"]))
    n_chains = 1 if tree_kind == "chain" else 2
    chains = []
    for _ in range(n_chains):
        depth = draw(st.integers(1, 3))
        fanouts: list[list[int]] = [[draw(st.integers(1, 4))]]
        for _ in range(depth - 1):
            fanouts.append([draw(st.integers(1, 4)) for _ in range(sum(fanouts[-1]))])
        chains.append(_chain(fanouts))
    leaves = [t.sizes[-1] for t in chains]
    n_cells = draw(st.integers(0, int(np.prod(leaves))))
    flat = draw(
        st.lists(
            st.integers(0, int(np.prod(leaves)) - 1),
            min_size=n_cells,
            max_size=n_cells,
            unique=True,
        )
    )
    codes = np.unravel_index(np.asarray(flat, dtype=np.int64), leaves)
    counts = draw(st.lists(st.integers(1, 10**6), min_size=n_cells, max_size=n_cells))
    cells = LeafCells(
        tuple(np.asarray(c, dtype=np.int64) for c in codes),
        np.asarray(counts, dtype=np.int64),
        tuple(chains),
    )
    return tree_kind, chains, cells


def _other_strides(spec_levels: tuple[int, ...], sizes: Sequence[Sequence[int]]) -> tuple[int, ...]:
    """A mixed radix of the level's cells other than :func:`key_strides`' (chain 0 least
    significant)."""
    strides, stride = [], 1
    for c, depth in enumerate(spec_levels):
        strides.append(stride)
        stride *= sizes[c][depth]
    return tuple(strides)


@pytest.mark.parametrize("dense_ratio", [0, 4, 10**9])  # always sorted, default, always dense
@settings(max_examples=40, deadline=None)
@given(world=worlds(), data=st.data())
def test_every_level_equals_a_brute_force(
    world: tuple[str, list[ChainTree], LeafCells], dense_ratio: int, data: st.DataObject
) -> None:
    """Each level is summed from the level below it and kept: asked in any order (top-down
    as TopDown asks, the leaves first, repeated) and in other strides, every level is still
    the brute force's."""
    tree_kind, chains, cells = world
    names = [[f"c{c}d{d}" for d in range(len(t.sizes) - 1)] for c, t in enumerate(chains)]
    spec = parse_hierarchy(names[0] if tree_kind == "chain" else names, tree_kind)
    sizes = [t.sizes for t in chains]
    levels = list(range(1, spec.n_levels + 1))
    asked = data.draw(st.permutations(levels + levels[: data.draw(st.integers(0, 2))]))
    saved = cells_module.DENSE_RATIO, cells_module._DENSE_MIN
    cells_module.DENSE_RATIO, cells_module._DENSE_MIN = dense_ratio, 0 if dense_ratio == 0 else 16
    try:
        for level in asked:
            for strides in (
                key_strides(spec, level, sizes),
                _other_strides(spec.levels[level], sizes),
            ):
                keys, counts = cells.level(spec, level, strides)
                assert keys.dtype == np.int64 and counts.dtype == np.int64
                expected = _brute(cells, spec.levels[level], strides)
                assert (keys.tolist(), counts.tolist()) == expected
    finally:
        cells_module.DENSE_RATIO, cells_module._DENSE_MIN = saved


def test_many_cells_in_no_order() -> None:
    """60,000 leaf cells of a two-chain level in random order come back sorted, one per cell,
    with exact sums; the leaf level is the cells themselves, the coarser ones summed."""
    rng = np.random.default_rng(3)
    a, b = _chain([[10], [10] * 10]), _chain([[30], [10] * 30])  # 100 x 300 leaves
    flat = rng.permutation(100 * 300)[:20_000]
    codes = (flat // 300, flat % 300)
    counts = rng.integers(1, 2**40, flat.size)
    cells = LeafCells(codes, counts, (a, b))
    spec = parse_hierarchy([["a1", "a2"], ["b1", "b2"]], "sequential")
    for level in range(1, spec.n_levels + 1):
        strides = key_strides(spec, level, [a.sizes, b.sizes])
        keys, got = cells.level(spec, level, strides)
        assert bool((keys[1:] > keys[:-1]).all())
        assert exact_sum(got) == exact_sum(counts)
        assert (keys.tolist(), got.tolist()) == _brute(cells, spec.levels[level], strides)


def test_counts_beyond_float_precision_are_summed_exactly() -> None:
    """A dense level adds in float64, exact only below 2**53: larger totals are sorted."""
    tree = _chain([[2], [2, 2]])
    counts = np.array([2**52, 2**52 + 1, 3, 2**50], dtype=np.int64)
    cells = LeafCells((np.arange(4, dtype=np.int64),), counts, (tree,))
    spec = parse_hierarchy(["r", "c"])
    keys, got = cells.level(spec, 1, key_strides(spec, 1, [tree.sizes]))
    assert keys.tolist() == [0, 1]
    assert got.tolist() == [2**53 + 1, 2**50 + 3]


def test_no_cells() -> None:
    tree = _chain([[2], [1, 1]])
    cells = LeafCells((np.zeros(0, dtype=np.int64),), np.zeros(0, dtype=np.int64), (tree,))
    keys, counts = cells.level(parse_hierarchy(["r", "c"]), 1, (1,))
    assert keys.size == 0 and counts.size == 0 and cells.total == 0


def test_codes_must_align_with_counts() -> None:
    tree = _chain([[2]])
    with pytest.raises(InternalError, match="one code array per chain"):
        LeafCells((np.zeros(2, dtype=np.int64),), np.ones(3, dtype=np.int64), (tree,))


def test_exact_sum_does_not_overflow() -> None:
    values = np.full(8, 2**60, dtype=np.int64)
    assert exact_sum(values) == 2**63
    assert exact_sum(np.array([], dtype=np.int64)) == 0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 2**62 - 1), max_size=40))
def test_exact_sum_is_the_sum_of_python_integers(values: list[int]) -> None:
    # small values take a one-pass sum, large ones the split sum: both exact
    for case in (values, [v >> 40 for v in values]):
        assert exact_sum(np.array(case, dtype=np.int64)) == sum(case)
