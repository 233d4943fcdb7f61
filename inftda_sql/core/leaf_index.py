"""A chain's leaf codes computed from the leaf values, without a join to the code table.

A coded domain lists its leaves in code order (row ``i`` is the leaf of code ``i``), each leaf
once (a nested domain's paths are distinct and a leaf has one parent), so the code of a value
is the row that lists it: an engine can fetch the leaf cells' values and code them here instead
of joining them to the domain's code table (:func:`leaf_coder` picks how).

* :class:`LeafIndex`: integer leaves increasing along the code order (integer geography codes,
  stored in code order, most often are): the code is the value's rank, found by a direct lookup
  when the values are dense enough (one array read per cell) and by a binary search otherwise.
* :class:`StringLeafIndex`: string leaves (``E02000001``) in any order: a hash lookup of the
  values in the leaf column (``pyarrow.compute.index_in``), which compares bytes as DuckDB's
  default (binary) collation does.

The codes are a function of the PUBLIC domain only; a value the domain does not list, or NULL,
gets no code (the engine names it in its error).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from .arrays import I64

__all__ = ["LeafCoder", "LeafIndex", "StringLeafIndex", "leaf_coder"]


class LeafCoder(Protocol):
    """What an engine codes its fetched leaf values with (:func:`leaf_coder`)."""

    def accepts(self, column: pa.DataType) -> bool:
        """Whether a fetched leaf column of this type can be coded here."""

    def code(self, values: pa.Array | pa.ChunkedArray) -> tuple[I64, npt.NDArray[np.bool_]]:
        """The code of every value (0 where missing) and which values have none (NULL, or not
        listed by the domain)."""


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

    def code(self, values: pa.Array | pa.ChunkedArray) -> tuple[I64, npt.NDArray[np.bool_]]:
        """:meth:`codes` of a fetched leaf column, NULL included (no code: missing)."""
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        nulls = values.is_null().to_numpy(zero_copy_only=False) if values.null_count else None
        if nulls is not None:
            values = values.fill_null(pa.scalar(0, values.type))
        code, missing = self.codes(values.to_numpy(zero_copy_only=False))
        if nulls is not None:
            missing |= nulls
        return code, missing


#: the Arrow types of string leaves coded by :class:`StringLeafIndex`
_STRING_TYPES = (pa.string(), pa.large_string())


@dataclass(frozen=True)
class StringLeafIndex:
    """The string leaf values of a coded domain, in code order (each listed once).

    Example:
        >>> index = StringLeafIndex.of(pa.array(["E02", "E01", "W01"]))
        >>> codes, missing = index.code(pa.array(["W01", "E01", "e01", None]))
        >>> codes.tolist(), missing.tolist()
        ([2, 1, 0, 0], [False, False, True, True])
    """

    leaves: pa.Array

    @classmethod
    def of(cls, leaves: pa.Array | pa.ChunkedArray) -> StringLeafIndex | None:
        """The index of a domain's leaf column (in code order, each leaf once: a nested coded
        domain's), or None when it does not hold strings (then the engine joins)."""
        if isinstance(leaves, pa.ChunkedArray):
            leaves = leaves.combine_chunks()
        if leaves.type not in _STRING_TYPES or leaves.null_count or len(leaves) == 0:
            return None
        return cls(leaves)

    def accepts(self, column: pa.DataType) -> bool:
        """Whether a fetched leaf column of this type can be coded here (the same type)."""
        return bool(column == self.leaves.type)

    def code(self, values: pa.Array | pa.ChunkedArray) -> tuple[I64, npt.NDArray[np.bool_]]:
        """The code of every value (0 where missing) and which values the domain does not
        list (NULL included). ``values`` must have the type of the leaves (:meth:`accepts`);
        in chunks, they are looked up chunk by chunk (no copy into one array)."""
        found = pc.index_in(values, value_set=self.leaves)  # NULL: not listed, or NULL
        missing = found.is_null().to_numpy(zero_copy_only=False)
        if found.null_count:
            found = found.fill_null(0)
        code: I64 = found.to_numpy(zero_copy_only=False).astype(np.int64)
        return code, missing


def leaf_coder(leaves: pa.Array | pa.ChunkedArray) -> LeafIndex | StringLeafIndex | None:
    """How the leaf cells of a coded domain whose leaf column (in code order) is ``leaves`` are
    coded from their values: :class:`LeafIndex` (increasing integers), :class:`StringLeafIndex`
    (strings), or None (any other type, or integers out of order: the engine joins)."""
    return LeafIndex.of(leaves) or StringLeafIndex.of(leaves)
