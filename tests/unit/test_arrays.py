"""core/arrays.py: integer columns read chunk by chunk, in place."""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from inftda_sql.core.arrays import increasing, integer_views, take_sorted


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.integers(-5, 5), max_size=4), min_size=1, max_size=5), st.booleans())
def test_increasing_reads_the_chunks_as_one_column(chunks: list[list[int]], strict: bool) -> None:
    column = pa.chunked_array(chunks, type=pa.int64())
    views = integer_views(column)
    assert views is not None
    assert [v for view in views for v in view.tolist()] == [v for c in chunks for v in c]
    flat = [v for c in chunks for v in c]
    expected = all((p < q) if strict else (p <= q) for p, q in itertools.pairwise(flat))
    assert increasing(views, strict=strict) is expected


def test_integer_views_are_the_fetched_buffers_not_copies() -> None:
    column = pa.chunked_array([np.arange(4), np.arange(4, 6)])
    views = integer_views(column)
    assert views is not None
    for view, chunk in zip(views, column.chunks, strict=True):
        assert view.ctypes.data == chunk.buffers()[1].address


def test_only_integer_columns_without_nulls_have_views() -> None:
    assert integer_views(pa.array([1.0, 2.0])) is None
    assert integer_views(pa.chunked_array([[1], [None]], type=pa.int32())) is None
    assert integer_views(pa.chunked_array([], type=pa.int64())) == []


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.lists(st.integers(-5, 5), max_size=4), min_size=1, max_size=5),
    st.data(),
)
def test_take_sorted_gathers_as_arrow_take(chunks: list[list[int]], data: st.DataObject) -> None:
    # released cells decoded from the domain's chunks where they lie: Arrow's take's values
    column = pa.chunked_array(chunks, type=pa.int32())
    n = len(column)
    index = np.array(
        sorted(data.draw(st.lists(st.integers(0, max(n - 1, 0)), max_size=12))) if n else [],
        dtype=np.int64,
    )
    got = take_sorted(column, index)
    assert isinstance(got, pa.Array) and got.type == pa.int32()
    assert got.to_pylist() == column.take(pa.array(index, pa.int64())).to_pylist()
    strings = pa.chunked_array([["a", "b"], ["c"]])
    assert take_sorted(strings, np.array([0, 2])).to_pylist() == ["a", "c"]
