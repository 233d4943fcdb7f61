"""A chain's leaf codes computed from the leaf values, without a join to the code table.

A coded domain lists its leaves in code order (row ``i`` is the leaf of code ``i``). When its
leaf values are integers that increase along that order (integer geography codes, stored in
code order, most often are), the code of a value is its rank among the leaves: an engine can
fetch the leaf cells' values and code them here instead of joining them to the domain's code
table. :class:`LeafIndex` does that by a direct lookup when the values are dense enough (one
array read per cell) and by a binary search otherwise. The codes are a function of the PUBLIC
domain only; a value the domain does not list gets no code (the engine names it in its error).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from .arrays import I64

__all__ = ["LeafIndex"]

#: a lookup table is used when the leaf values span at most this many slots per leaf
_DENSE_SLOTS_PER_LEAF = 4


@dataclass(frozen=True)
class LeafIndex:
    """The leaf values of a coded domain, in code order, strictly increasing integers, and
    where they have gaps but are dense, a lookup table from ``value - leaves[0]`` to the code
    (-1 for no leaf).

    Example:
        >>> index = LeafIndex.of(pa.array([10, 20, 30]))
        >>> codes, missing = index.codes(np.array([30, 10, 15, 99]))
        >>> codes.tolist(), missing.tolist()
        ([2, 0, 0, 0], [False, False, True, True])
    """

    leaves: npt.NDArray[np.integer]
    type: pa.DataType
    lookup: npt.NDArray[np.int32] | None

    @classmethod
    def of(cls, leaves: pa.Array | pa.ChunkedArray) -> LeafIndex | None:
        """The index of a domain's leaf column (in code order), or None when its values are
        not integers strictly increasing in code order (then the engine joins)."""
        if isinstance(leaves, pa.ChunkedArray):
            leaves = leaves.combine_chunks()
        if not pa.types.is_integer(leaves.type) or leaves.null_count or len(leaves) == 0:
            return None
        values = leaves.to_numpy()
        if values.size > 1 and not bool((values[1:] > values[:-1]).all()):
            return None
        span = int(values[-1]) - int(values[0]) + 1
        lookup = None
        if values.size < span <= _DENSE_SLOTS_PER_LEAF * values.size < 2**31:  # == size: no gaps
            lookup = np.full(span, -1, dtype=np.int32)
            # in int64: the leaves' own type (int8, int16 ...) would wrap values - values[0]
            lookup[values.astype(np.int64) - int(values[0])] = np.arange(
                values.size, dtype=np.int32
            )
        return cls(values, leaves.type, lookup)

    def codes(self, values: npt.NDArray[np.integer]) -> tuple[I64, npt.NDArray[np.bool_]]:
        """The code of every value (0 where missing) and which values the domain does not
        list. ``values`` must have the type of the leaves (:meth:`accepts`)."""
        n = self.leaves.size
        first = int(self.leaves[0])
        span = int(self.leaves[-1]) - first + 1
        if (self.lookup is not None or span == n) and int(self.leaves[-1]) < 2**63:
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
        pos = np.searchsorted(self.leaves, values)
        found = pos < n
        found[found] = self.leaves[pos[found]] == values[found]
        code = np.where(found, pos, 0).astype(np.int64, copy=False)
        return code, ~found

    def accepts(self, column: pa.DataType) -> bool:
        """Whether a fetched leaf column of this type can be coded here (the same type)."""
        return bool(column == self.type)
