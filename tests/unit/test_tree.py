"""core/tree.py: the public domain as code ranges, level keys and the coding of domain paths."""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inftda_sql import InternalError, SpecError
from inftda_sql.core.spec import parse_hierarchy
from inftda_sql.core.tree import ChainTree, LevelStats, code_paths, key_strides, paths_sorted


def _i64(values: list[int]) -> np.ndarray:
    return np.asarray(values, dtype=np.int64)


# ----------------------------------------------------------------------------- ChainTree


def test_from_parents_builds_child_ranges() -> None:
    # root -> 2 regions; region 0 has codes 0, 1; region 1 has code 2
    tree = ChainTree.from_parents([_i64([0, 0]), _i64([0, 0, 1])])
    assert tree.sizes == (1, 2, 3)
    assert [o.tolist() for o in tree.child_offsets] == [[0], [0, 2], [0, 2, 3]]


def test_from_parents_without_levels_is_the_root_alone() -> None:
    tree = ChainTree.from_parents([])
    assert tree.sizes == (1,)
    assert [o.tolist() for o in tree.child_offsets] == [[0]]


@pytest.mark.parametrize(
    ("parents", "fragment"),
    [
        ([_i64([0, 0]), _i64([1, 0, 1])], "not sorted by parent"),
        ([_i64([0, 0]), _i64([0, 0])], "has no children"),  # region 1 is childless
        ([_i64([0, 0]), _i64([0, 1, 2])], "has no children"),  # a parent code out of range
        ([_i64([])], "has no children"),  # the root is childless
    ],
)
def test_from_parents_refuses_broken_domains(parents: list[np.ndarray], fragment: str) -> None:
    with pytest.raises(InternalError, match=fragment) as info:
        ChainTree.from_parents(parents)
    assert "this is a bug in inftda_sql" in str(info.value)


def test_level_stats_as_dict_holds_the_public_facts_only() -> None:
    """The level's time depends on the private data: it is kept out of as_dict()."""
    stats = LevelStats(2, "mun", 3, 7, 5, 1.23456789, 0.123456789)
    assert stats.as_dict() == {
        "level": 2,
        "name": "mun",
        "parents": 3,
        "noised_cells": 7,
        "surviving_cells": 5,
        "sigma": 1.23456789,
    }
    assert stats.seconds == 0.123456789


# ----------------------------------------------------------------------------- key_strides

OD = parse_hierarchy([["o_reg", "o_mun"], ["d_reg", "d_prov", "d_mun"]], "destination")
OD_SIZES = [(1, 2, 3), (1, 2, 3, 4)]


def test_key_strides_of_the_destination_tree() -> None:
    # the refined chain is the least significant digit; the other chain's stride is the size
    # of the refined chain at the level's depth (hand-computed, see tests/golden)
    got = [key_strides(OD, lv, OD_SIZES) for lv in range(OD.n_levels + 1)]
    assert got == [(1, 1), (2, 1), (1, 2), (3, 1), (1, 3), (4, 1)]


def test_key_strides_of_one_chain_are_one() -> None:
    spec = parse_hierarchy(["region", "city"])
    assert [key_strides(spec, lv, [(1, 2, 3)]) for lv in range(3)] == [(1,), (1,), (1,)]


def test_key_strides_overflow_names_the_level() -> None:
    spec = parse_hierarchy([["a"], ["b"], ["c"]])
    assert key_strides(spec, 3, [(1, 2**20), (1, 2**20), (1, 2**20)]) == (2**40, 2**20, 1)
    with pytest.raises(SpecError, match=r"level 'a x b x c' has 9,223,372,036,854,775,808"):
        key_strides(spec, 3, [(1, 2**21), (1, 2**21), (1, 2**21)])


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(["sequential", "destination", "origin"]),
    st.lists(st.integers(1, 4), min_size=2, max_size=3),
    st.lists(st.integers(1, 4), min_size=2, max_size=3),
)
def test_key_is_a_bijection_and_siblings_are_contiguous(
    tree: str, fan0: list[int], fan1: list[int]
) -> None:
    """Every cell of a level gets its own key in [0, cells), and the children of one parent
    (the previous level's cell) are one contiguous key range."""
    spec = parse_hierarchy([["a1", "a2"], ["b1", "b2"]], tree)
    sizes = [(1, fan0[0], fan0[0] * fan0[1]), (1, fan1[0], fan1[0] * fan1[1])]
    for level in range(1, spec.n_levels + 1):
        depths = spec.levels[level]
        strides = key_strides(spec, level, sizes)
        grid = [range(sizes[c][d]) for c, d in enumerate(depths)]
        keys = sorted(
            sum(code * s for code, s in zip(cell, strides, strict=True))
            for cell in itertools.product(*grid)
        )
        assert keys == list(range(len(keys)))
        refined = spec.refined_chain(level)
        assert strides[refined] == 1


# ----------------------------------------------------------------------------- code_paths


def test_code_paths_nested_strings() -> None:
    coded = code_paths(pa.table({"r": ["N", "N", "S"], "c": ["a", "b", "c"]}))
    assert [c.tolist() for c in coded.codes] == [[0, 0, 1], [0, 1, 2]]
    assert coded.tree is not None and coded.tree.sizes == (1, 2, 3)
    assert coded.not_nested is None
    assert coded.paths.num_rows == 3


def test_code_paths_drops_repeated_paths() -> None:
    table = pa.table({"r": ["N", "N", "N", "S", "S"], "c": ["a", "a", "b", "c", "c"]})
    coded = code_paths(table)
    assert coded.paths.to_pylist() == [
        {"r": "N", "c": "a"},
        {"r": "N", "c": "b"},
        {"r": "S", "c": "c"},
    ]
    assert [c.tolist() for c in coded.codes] == [[0, 0, 1], [0, 1, 2]]
    assert coded.tree is not None and coded.tree.sizes == (1, 2, 3)


def test_code_paths_one_column_and_integers() -> None:
    coded = code_paths(pa.table({"sex": [1, 2, 2]}))
    assert [c.tolist() for c in coded.codes] == [[0, 1]]
    assert coded.tree is not None and coded.tree.sizes == (1, 2)


@pytest.mark.parametrize(
    ("columns", "depth"),
    [
        ({"r": ["N", "S"], "c": ["a", "a"]}, 2),  # 'a' under two regions
        ({"r": [1, 2], "c": [7, 7]}, 2),  # the same with integer codes
        ({"r": ["N", "N"], "p": ["x", "y"], "m": ["1", "1"]}, 3),  # deeper: '1' under x and y
        ({"r": ["N", "S"], "p": ["x", "y"], "m": ["1", "1"]}, 3),
    ],
)
def test_code_paths_detects_non_nested_domains(
    columns: dict[str, list[object]], depth: int
) -> None:
    coded = code_paths(pa.table(columns))
    assert coded.tree is None
    assert coded.not_nested == depth
    assert len(coded.codes) == depth - 1  # the depths coded before the repeat was found


@st.composite
def nested_paths(draw: st.DrawFn) -> list[tuple[str, str, str]]:
    """Sorted paths of a random 3-level nested domain, some listed several times."""
    paths = []
    for r in range(draw(st.integers(1, 3))):
        for p in range(draw(st.integers(1, 3))):
            for m in range(draw(st.integers(1, 3))):
                paths += [(f"R{r}", f"R{r}P{p}", f"R{r}P{p}M{m}")] * draw(st.integers(1, 2))
    return sorted(paths)


@settings(max_examples=60, deadline=None)
@given(nested_paths())
def test_codes_are_dense_and_children_are_contiguous_ranges(paths: list[tuple[str, ...]]) -> None:
    table = pa.table({k: [p[i] for p in paths] for i, k in enumerate("rpm")})
    coded = code_paths(table)
    assert coded.tree is not None and coded.not_nested is None
    distinct = sorted(set(paths))
    assert [tuple(r.values()) for r in coded.paths.to_pylist()] == distinct
    for d in range(1, 4):
        code = coded.codes[d - 1]
        prefixes = sorted({p[:d] for p in distinct})
        assert coded.tree.sizes[d] == len(prefixes)
        # dense codes in sorted order of the path prefix
        assert code.tolist() == [prefixes.index(p[:d]) for p in distinct]
        off = coded.tree.child_offsets[d]
        parent = coded.codes[d - 2] if d > 1 else np.zeros(len(distinct), dtype=np.int64)
        assert np.all(off[parent] <= code) and np.all(code < off[parent + 1])


@given(
    st.lists(
        st.tuples(st.integers(-3, 3), st.integers(-3, 3), st.integers(0, 3)),
        max_size=12,
    ),
    st.booleans(),
)
@settings(max_examples=300, deadline=None)
def test_paths_sorted_agrees_with_tuple_order_on_integers(
    rows: list[tuple[int, int, int]], sort: bool
) -> None:
    # integer columns take a one-comparison-per-column path when each column rises on its own;
    # the answer must be the lexicographic order's either way
    if sort:
        rows = sorted(rows)
    table = pa.table({n: pa.array([r[i] for r in rows], pa.int64()) for i, n in enumerate("abc")})
    expected = all(p <= q for p, q in itertools.pairwise(rows))
    assert paths_sorted(table) is expected


def test_paths_sorted_is_false_with_any_null_even_where_earlier_columns_order_the_rows() -> None:
    ordered = pa.table({"a": [0, 0], "b": [0, 1], "c": pa.array([None, None], pa.int64())})
    assert not paths_sorted(ordered)
    assert not paths_sorted(pa.table({"a": pa.array([None], pa.string())}))
    assert paths_sorted(pa.table({"a": ["x", "x"], "b": [1.0, 2.0]}))


def _chunked(table: pa.Table, cuts: list[int]) -> pa.Table:
    """``table`` cut into chunks at the row positions ``cuts`` (empty chunks included), as a
    fetched Arrow result comes: every column with the same chunks."""
    bounds = [0, *sorted(min(c, table.num_rows) for c in cuts), table.num_rows]
    return pa.table(
        {
            name: pa.chunked_array(
                [column.slice(a, b - a).combine_chunks() for a, b in itertools.pairwise(bounds)],
                type=column.type,
            )
            for name, column in zip(table.column_names, table.columns, strict=True)
        }
    )


@st.composite
def integer_paths(draw: st.DrawFn) -> list[tuple[int, int, int]]:
    """Integer paths of three columns, nested or not, sorted or not, repeats allowed."""
    rows = draw(
        st.lists(
            st.tuples(st.integers(0, 3), st.integers(0, 6), st.integers(0, 12)),
            min_size=1,
            max_size=30,
        )
    )
    return sorted(rows) if draw(st.booleans()) else rows


@settings(max_examples=300, deadline=None)
@given(integer_paths(), st.lists(st.integers(0, 30), max_size=5))
def test_chunked_paths_code_and_order_as_the_combined_paths(
    rows: list[tuple[int, int, int]], cuts: list[int]
) -> None:
    # a fetched domain is coded in the chunks DuckDB returned: the same codes, tree, verdicts
    table = pa.table({n: pa.array([r[i] for r in rows], pa.int64()) for i, n in enumerate("abc")})
    chunked = _chunked(table, cuts)
    assert chunked.equals(table) and chunked.column(0).num_chunks == len(cuts) + 1
    assert paths_sorted(chunked) is paths_sorted(table)
    if not paths_sorted(table):
        return  # code_paths takes sorted paths only
    whole, parts = code_paths(table), code_paths(chunked)
    assert parts.not_nested == whole.not_nested
    assert parts.paths.equals(whole.paths)
    assert [c.tolist() for c in parts.codes] == [c.tolist() for c in whole.codes]
    if whole.tree is None:
        assert parts.tree is None
    else:
        assert parts.tree is not None and parts.tree.sizes == whole.tree.sizes
        for a, b in zip(parts.tree.child_offsets, whole.tree.child_offsets, strict=True):
            assert a.tolist() == b.tolist()


def test_code_paths_makes_the_tree_without_the_code_arrays() -> None:
    # the per-row codes (three domain-long arrays for a 3-level chain) are made on first use
    table = pa.table({"a": [0, 0, 1, 1, 1], "b": [0, 1, 2, 3, 3], "c": [0, 1, 2, 3, 4]})
    coded = code_paths(table)
    assert "codes" not in vars(coded)
    assert coded.tree is not None and coded.tree.sizes == (1, 2, 4, 5)
    assert [o.tolist() for o in coded.tree.child_offsets] == [
        [0],
        [0, 2],
        [0, 2, 4],
        [0, 1, 2, 3, 5],
    ]
    assert [c.tolist() for c in coded.codes] == [[0, 0, 1, 1, 1], [0, 1, 2, 3, 3], [0, 1, 2, 3, 4]]
