"""A chain's leaf codes computed from the leaf values, without a join to the code table.

A coded domain lists its leaves in code order (row ``i`` is the leaf of code ``i``). When its
leaf values are integers that increase along that order (integer geography codes, stored in
code order, most often are), the code of a value is its rank among the leaves: an engine can
fetch the leaf cells' values and code them here instead of joining them to the domain's code
table. :class:`LeafIndex` does that by a direct lookup when the values are dense enough (one
array read per cell) and by a hash lookup (Arrow's ``index_in``) otherwise. The codes are a
function of the PUBLIC domain only; a value the domain does not list gets no code (the engine
names it in its error).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from .arrays import I64, increasing, integer_views

__all__ = ["LeafIndex"]

#: a lookup table is used when the leaf values span at most this many slots per leaf
_DENSE_SLOTS_PER_LEAF = 4


@dataclass(frozen=True)
class LeafIndex:
    """The leaf values of a coded domain, in code order, strictly increasing integers: the
    first and last of them and their number, and where they have gaps but are dense, a lookup
    table from ``value - first`` to the code (-1 for no leaf); the values themselves
    (``leaves``) only where a hash lookup needs them (contiguous or looked-up leaves are
    coded from ``first`` alone, and their column is never copied).

    Example:
        >>> index = LeafIndex.of(pa.array([10, 20, 30]))
        >>> codes, missing = index.codes(np.array([30, 10, 15, 99]))
        >>> codes.tolist(), missing.tolist()
        ([2, 0, 0, 0], [False, False, True, True])
    """

    first: int
    last: int
    size: int
    type: pa.DataType
    lookup: npt.NDArray[np.int32] | None
    leaves: pa.Array | None

    @classmethod
    def of(cls, leaves: pa.Array | pa.ChunkedArray) -> LeafIndex | None:
        """The index of a domain's leaf column (in code order), or None when its values are
        not integers strictly increasing in code order (then the engine joins). A fetched
        column is read chunk by chunk where it lies."""
        views = integer_views(leaves)
        if not views or not increasing(views, strict=True):
            return None
        first, last, size = int(views[0][0]), int(views[-1][-1]), len(leaves)
        span = last - first + 1
        lookup = None
        # leaves at or beyond 2**63 (uint64) have no int64 offset: they are hashed instead
        if size < span <= _DENSE_SLOTS_PER_LEAF * size < 2**31 and last < 2**63:  # == size: no gaps
            lookup = np.full(span, -1, dtype=np.int32)
            pos = 0
            for values in views:
                # in int64: the leaves' own type (int8, int16 ...) would wrap values - first
                lookup[values.astype(np.int64) - first] = np.arange(
                    pos, pos + values.size, dtype=np.int32
                )
                pos += values.size
        by_offset = (lookup is not None or span == size) and last < 2**63
        stored = None
        if not by_offset:
            stored = pa.array(views[0] if len(views) == 1 else np.concatenate(views), leaves.type)
        return cls(first, last, size, leaves.type, lookup, stored)

    def codes(self, values: npt.NDArray[np.integer]) -> tuple[I64, npt.NDArray[np.bool_]]:
        """The code of every value (0 where missing) and which values the domain does not
        list. ``values`` must have the type of the leaves (:meth:`accepts`)."""
        if self.leaves is None:
            first, span = self.first, self.last - self.first + 1
            if self.lookup is None and values.size:
                low, high = int(values.min()), int(values.max())
                if first <= low and high <= self.last:  # all listed: the offsets, no masks
                    code = values.astype(np.int64)
                    code -= first
                    return code, np.zeros(values.size, dtype=bool)
            # in int64 (a uint64 value above 2**63 wraps: then it is outside the span anyway)
            offset = values.astype(np.int64) - first
            inside = (values >= first) & (offset >= 0) & (offset < span)
            if self.lookup is None:  # the leaves are first, first + 1, ...: the offset is the code
                code = offset
            else:
                code = np.zeros(values.size, dtype=np.int64)
                code[inside] = self.lookup[offset[inside]]
                inside[inside] = code[inside] >= 0
            code[~inside] = 0
            return code, ~inside
        # a hash lookup: 3-7x a binary search's speed on 500K cells among 7,900 leaves (the
        # leaves' row in code order is their code; they are distinct, the domain is nested)
        pos = pc.index_in(pa.array(values, self.type), value_set=self.leaves)
        missing = pos.is_null().to_numpy(zero_copy_only=False)
        code = pos.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        return code, missing

    def accepts(self, column: pa.DataType) -> bool:
        """Whether a fetched leaf column of this type can be coded here (the same type)."""
        return bool(column == self.type)
