"""core/leaf_index.py: a domain's leaf codes as a function of integer leaf values."""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from inftda_sql.core.leaf_index import LeafIndex

TYPES = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint32(), pa.uint64()]


@st.composite
def leaves_and_probes(draw: st.DrawFn) -> tuple[pa.DataType, list[int], list[int]]:
    """Strictly increasing leaves of one integer type (contiguous, dense with gaps or sparse)
    and values to code: leaves, values between and beyond them, the type's extremes."""
    kind = draw(st.sampled_from(TYPES))
    info = np.iinfo(kind.to_pandas_dtype())
    gap = draw(st.sampled_from([1, 2, 5, 1000]))
    n = draw(st.integers(1, 60))
    first = draw(st.integers(int(info.min), max(int(info.min), int(info.max) - gap * n)))
    steps = draw(st.lists(st.integers(1, gap), min_size=n - 1, max_size=n - 1))
    leaves = [first]
    for step in steps:
        if leaves[-1] + step > info.max:
            break
        leaves.append(leaves[-1] + step)
    near = [v + d for v in leaves for d in (-1, 0, 1) if info.min <= v + d <= info.max]
    probes = draw(st.lists(st.sampled_from([*near, int(info.min), int(info.max)]), max_size=80))
    return kind, leaves, probes


@settings(max_examples=200, deadline=None)
@given(leaves_and_probes())
# a narrow type whose span overflows it: the lookup table must be built in int64
@example((pa.int8(), [-128, -100, 0, 42, 45], [42, -128, 41, 45, 127]))
def test_codes_are_the_ranks_of_the_listed_values(
    case: tuple[pa.DataType, list[int], list[int]],
) -> None:
    kind, leaves, probes = case
    index = LeafIndex.of(pa.array(leaves, type=kind))
    assert index is not None and index.accepts(kind)
    values = pa.array(probes, type=kind).to_numpy(zero_copy_only=False)
    code, missing = index.codes(values)
    rank = {v: i for i, v in enumerate(leaves)}
    assert missing.tolist() == [v not in rank for v in probes]
    assert code.tolist() == [rank.get(v, 0) for v in probes]
    assert code.dtype == np.int64


@pytest.mark.parametrize(
    "leaves",
    [
        pa.array([1, 3, 2]),  # not in code order
        pa.array([1, 1, 2]),  # a repeated leaf value
        pa.array(["a", "b"]),  # not integers: the engine joins
        pa.array([1.0, 2.0]),
        pa.array([1, None], type=pa.int64()),
        pa.array([], type=pa.int64()),
    ],
)
def test_only_increasing_integers_are_indexed(leaves: pa.Array) -> None:
    assert LeafIndex.of(leaves) is None


def test_another_type_is_not_accepted() -> None:
    index = LeafIndex.of(pa.chunked_array([[1, 2], [3]], type=pa.int32()))
    assert index is not None and index.accepts(pa.int32()) and not index.accepts(pa.int64())


@settings(max_examples=200, deadline=None)
@given(leaves_and_probes(), st.lists(st.integers(0, 40), max_size=4))
def test_chunked_leaves_code_as_the_combined_leaves(
    case: tuple[pa.DataType, list[int], list[int]], cuts: list[int]
) -> None:
    # the fetched leaf column is indexed in its chunks, without combining them first
    kind, leaves, probes = case
    bounds = [0, *sorted(min(c, len(leaves)) for c in cuts), len(leaves)]
    chunked = pa.chunked_array(
        [pa.array(leaves[a:b], type=kind) for a, b in itertools.pairwise(bounds)],
        type=kind,
    )
    whole, parts = LeafIndex.of(pa.array(leaves, type=kind)), LeafIndex.of(chunked)
    assert whole is not None and parts is not None
    values = np.array(probes, dtype=kind.to_pandas_dtype())
    for got, expected in zip(parts.codes(values), whole.codes(values), strict=True):
        assert got.tolist() == expected.tolist()


def test_contiguous_and_looked_up_leaves_keep_no_copy_of_the_column() -> None:
    # coded from the first leaf (and the lookup table): the 2M-leaf column is not copied
    contiguous = pa.chunked_array([np.arange(0, 5), np.arange(5, 9)])
    dense = pa.chunked_array([[10, 12], [13, 15]], type=pa.int32())
    sparse = pa.chunked_array([[1, 1000], [10**6]])
    indexes = [LeafIndex.of(c) for c in (contiguous, dense, sparse)]
    assert [i is not None and i.leaves is None for i in indexes] == [True, True, False]
    assert indexes[1] is not None and indexes[1].lookup is not None


def test_dense_uint64_leaves_beyond_int64_are_hashed() -> None:
    # no int64 offset exists for them: the index hashes them (it raised OverflowError before)
    index = LeafIndex.of(pa.array([2**63, 2**63 + 2], pa.uint64()))
    assert index is not None and index.lookup is None
    codes, missing = index.codes(np.array([2**63 + 2, 2**63 + 1, 5], dtype=np.uint64))
    assert codes.tolist() == [1, 0, 0] and missing.tolist() == [False, True, True]


@settings(max_examples=200, deadline=None)
@given(st.integers(-(2**40), 2**40), st.integers(1, 50), st.data())
def test_contiguous_leaves_code_values_all_listed_by_their_offset(
    first: int, size: int, data: st.DataObject
) -> None:
    # the common case (every value listed) takes a shortcut: the same codes, nothing missing
    index = LeafIndex.of(pa.array(np.arange(first, first + size)))
    assert index is not None and index.leaves is None and index.lookup is None
    offsets = data.draw(st.lists(st.integers(0, size - 1), max_size=20))
    codes, missing = index.codes(np.array([first + k for k in offsets], dtype=np.int64))
    assert codes.tolist() == offsets and not missing.any()
