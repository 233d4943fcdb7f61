"""Array type aliases shared by the engine-free code (one spelling each), the integer views of
a fetched Arrow column that let that code read it chunk by chunk, without copying, and the
mixed-radix strides that pack several codes into one key."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pyarrow as pa

__all__ = ["F64", "I64", "increasing", "integer_views", "mixed_radix_strides", "take_sorted"]

I64 = npt.NDArray[np.int64]
"""A numpy array of int64 (codes, keys, counts)."""
F64 = npt.NDArray[np.float64]
"""A numpy array of float64 (real-valued estimates)."""


def integer_views(
    column: pa.Array | pa.ChunkedArray,
) -> list[npt.NDArray[np.integer]] | None:
    """The values of an integer column without NULLs as numpy views, one per non-empty chunk
    (no copy: a fetched domain is read where DuckDB's Arrow result put it, instead of combined
    into one new buffer first); None for any other column.

    Example:
        >>> [v.tolist() for v in integer_views(pa.chunked_array([[1, 2], [], [3]]))]
        [[1, 2], [3]]
        >>> integer_views(pa.array(["a"])) is None, integer_views(pa.array([1, None])) is None
        (True, True)
    """
    if not pa.types.is_integer(column.type) or column.null_count:
        return None
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    return [chunk.to_numpy() for chunk in chunks if len(chunk)]


def mixed_radix_strides(sizes: Sequence[int]) -> tuple[int, ...]:
    """Strides packing codes below ``sizes`` into one key, the first code most significant:
    ``key = sum(code[j] * stride[j])``.

    Example:
        >>> mixed_radix_strides([4, 3, 5])
        (15, 5, 1)
    """
    strides = [1] * len(sizes)
    for j in range(len(sizes) - 2, -1, -1):
        strides[j] = strides[j + 1] * sizes[j + 1]
    return tuple(strides)


def increasing(views: Sequence[npt.NDArray[np.integer]], *, strict: bool) -> bool:
    """Whether the values of ``views`` read one after the other (the chunks of one column)
    increase (``strict``) or never decrease, across the chunks' boundaries too.

    Example:
        >>> increasing([np.array([1, 2]), np.array([2, 3])], strict=False)
        True
        >>> increasing([np.array([1, 2]), np.array([2, 3])], strict=True)
        False
    """
    compare = np.greater if strict else np.greater_equal
    previous: npt.NDArray[np.integer] | None = None
    for values in views:
        if previous is not None and not bool(compare(values[0], previous[-1])):
            return False
        if values.size > 1 and not bool(compare(values[1:], values[:-1]).all()):
            return False
        previous = values
    return True


def take_sorted(column: pa.Array | pa.ChunkedArray, index: npt.NDArray[np.int64]) -> pa.Array:
    """``column[index]`` as one array, for an ``index`` in increasing order (released cells
    come in code order). An integer column fetched in several chunks is gathered chunk by
    chunk in numpy (a chunk's rows are one run of ``index``): Arrow's take over chunks would
    first copy them into one new buffer.

    Example:
        >>> take_sorted(pa.chunked_array([[10, 11], [12, 13]]), np.array([1, 2, 3])).to_pylist()
        [11, 12, 13]
    """
    views = integer_views(column) if isinstance(column, pa.ChunkedArray) else None
    if views is None or len(views) < 2:
        taken = column.take(pa.array(index))
        return taken.combine_chunks() if isinstance(taken, pa.ChunkedArray) else taken
    offsets = np.cumsum([0, *(v.size for v in views)])
    bounds = np.searchsorted(index, offsets)
    out = np.empty(index.size, dtype=views[0].dtype)
    for k, values in enumerate(views):
        a, b = int(bounds[k]), int(bounds[k + 1])
        if b > a:
            out[a:b] = values[index[a:b] - offsets[k]]
    return pa.array(out, type=column.type)
