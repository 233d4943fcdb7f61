from __future__ import annotations

import pytest

from inftda_sql import SpecError
from inftda_sql.core.spec import parse_hierarchy


def test_one_chain_levels() -> None:
    spec = parse_hierarchy(["region", "province", "mun"])
    assert spec.tree == "chain"
    assert spec.levels == ((0,), (1,), (2,), (3,))
    assert spec.level_name(0) == "root" and spec.level_name(3) == "mun"
    assert spec.leaf_columns == ("mun",)


def test_destination_tree_alternates_destination_first() -> None:
    spec = parse_hierarchy([["o1", "o2", "o3"], ["d1", "d2", "d3"]], "destination")
    assert spec.levels[1:] == ((0, 1), (1, 1), (1, 2), (2, 2), (2, 3), (3, 3))
    assert [spec.refined_chain(level) for level in range(1, 7)] == [1, 0, 1, 0, 1, 0]


def test_origin_tree_with_unequal_depths_keeps_refining_the_longer_side() -> None:
    spec = parse_hierarchy([["o1", "o2", "o3", "o4"], ["d1"]], "origin")
    assert spec.levels[1:] == ((1, 0), (1, 1), (2, 1), (3, 1), (4, 1))
    assert spec.level_name(5) == "o4 x d1"


def test_sequential_chains() -> None:
    spec = parse_hierarchy([["g1", "g2"], ["age"], ["sex"]])
    assert spec.tree == "sequential"
    assert spec.levels == ((0, 0, 0), (1, 0, 0), (2, 0, 0), (2, 1, 0), (2, 1, 1))
    assert spec.level_columns(3) == ("g2", "age")


@pytest.mark.parametrize(
    ("hierarchy", "tree"),
    [
        (["region", "province", "mun"], None),
        ([["o1", "o2", "o3"], ["d1", "d2"]], "destination"),
        ([["o1", "o2", "o3", "o4"], ["d1"]], "origin"),
        ([["g1", "g2"], ["age"], ["sex"]], None),
    ],
)
def test_grouping_sets_and_masks_of_the_levels_view(hierarchy: object, tree: str | None) -> None:
    spec = parse_hierarchy(hierarchy, tree)
    for level, depths in enumerate(spec.levels):
        grouped = spec.grouped_columns(level)
        want = [c for chain, d in zip(spec.chains, depths, strict=True) for c in chain[:d]]
        assert grouped == tuple(want)
        for order in (spec.columns, spec.columns[::-1]):
            bits = format(spec.grouping_mask(level, order), f"0{len(order)}b")
            assert bits == "".join("0" if c in grouped else "1" for c in order)
    # the view tells levels apart by their mask: one level per mask, in any column order
    for order in (spec.columns, spec.columns[::-1]):
        masks = [spec.grouping_mask(level, order) for level in range(len(spec.levels))]
        assert len(set(masks)) == len(masks)


@pytest.mark.parametrize(
    "hierarchy,tree,fragment",
    [
        ("region", None, "hierarchy=['region']"),
        ([], None, "non-empty"),
        ([[]], None, "chain 1 is empty"),
        (["a", ["b"]], None, "mixes"),
        (["a", "A"], None, "'A' appears twice"),
        ([["a"], ["b", "a"]], None, "in two chains"),
        ([["a"], ["b"]], "chain", "tree='chain' takes one chain"),
        ([["a"], ["b"], ["c"]], "origin", "exactly two"),
        (["a"], "diagonal", "'diagonal'"),
        (["a", 3], None, "3"),
        (["region", "count"], None, "'count'"),
    ],
)
def test_bad_hierarchies(hierarchy: object, tree: str | None, fragment: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_hierarchy(hierarchy, tree)
    assert fragment in str(info.value)
