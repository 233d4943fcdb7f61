"""The true counts of every tree level, from the input's leaf cells, in numpy.

An engine scans the private input once into its non-empty leaf cells: one leaf code per chain
(the public domain's codes, see :func:`~inftda_sql.core.tree.code_paths`) and a true count.
Every coarser cell is a sum of leaf cells, and the ancestors of a leaf code are read off the
public domain (:meth:`~inftda_sql.core.tree.ChainTree.parents`), so :meth:`LeafCells.level`
computes any level's sorted keys and counts without going back to the engine: a dense
``bincount`` where the level has few possible cells, one sort otherwise (no sort at all on the
leaf level, whose cells are the leaf cells themselves). Engine-free: nothing here reads a
database.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .._errors import InternalError
from .arrays import I64
from .sorting import sort_keys, sort_order
from .spec import TreeSpec
from .tree import ChainTree, key_strides

__all__ = ["LeafCells", "exact_sum"]

#: A level with at most this many possible cells per leaf cell (or 2**16 in all) is summed
#: densely with ``bincount``; sparser levels are sorted.
DENSE_RATIO = 4
_DENSE_MIN = 1 << 16
#: float64 adds integers exactly below 2**53 (the dense path's sums)
_FLOAT_EXACT = 1 << 53


def exact_sum(values: I64) -> int:
    """The exact sum of non-negative int64 values below 2**62 (no int64 overflow).

    Example:
        >>> exact_sum(np.array([2**61, 2**61, 2**61, 2**61], dtype=np.int64)) == 2**63
        True
    """
    if values.size == 0:
        return 0
    if int(values.max()) <= (2**63 - 1) // values.size:  # no partial sum can overflow
        return int(values.sum())
    high = int(np.sum(values >> 31))
    low = int(np.sum(values & ((1 << 31) - 1)))
    return (high << 31) + low


@dataclass(frozen=True)
class LeafCells:
    """The non-empty leaf cells of a release: one leaf code per chain and a true count each.

    ``codes[c]`` is chain ``c``'s leaf code of every cell (cells distinct), ``counts`` the true
    counts (>= 1), ``chains`` the public domain of every chain.

    Example:
        >>> from inftda_sql.core.spec import parse_hierarchy
        >>> from inftda_sql.core.tree import key_strides
        >>> spec = parse_hierarchy(["region", "city"])  # N: a, b; S: c
        >>> tree = ChainTree.from_parents([np.array([0, 0]), np.array([0, 0, 1])])
        >>> cells = LeafCells((np.array([2, 0]),), np.array([5, 3]), (tree,))
        >>> [k.tolist() for k in cells.level(spec, 1, key_strides(spec, 1, [tree.sizes]))]
        [[0, 1], [3, 5]]
        >>> [k.tolist() for k in cells.level(spec, 2, key_strides(spec, 2, [tree.sizes]))]
        [[0, 2], [3, 5]]
    """

    codes: tuple[I64, ...]
    counts: I64
    chains: tuple[ChainTree, ...]
    _ancestors: dict[tuple[int, int], I64] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    _levels: dict[int, tuple[I64, I64]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        if len(self.codes) != len(self.chains) or any(
            c.shape != self.counts.shape for c in self.codes
        ):
            raise InternalError("leaf cells need one code array per chain, aligned with counts")

    @functools.cached_property
    def total(self) -> int:
        """The exact sum of the counts (N)."""
        return exact_sum(self.counts)

    def ancestor_codes(self, chain: int, depth: int) -> I64:
        """Chain ``chain``'s depth-``depth`` code of every leaf cell (0 at depth 0)."""
        tree = self.chains[chain]
        leaf_depth = len(tree.sizes) - 1
        if depth == leaf_depth:
            return self.codes[chain]
        if depth == 0:
            return np.zeros(self.counts.size, dtype=np.int64)
        found = self._ancestors.get((chain, depth))
        if found is None:
            found = tree.parents(depth + 1)[self.ancestor_codes(chain, depth + 1)]
            self._ancestors[(chain, depth)] = found
        return found

    def level(self, spec: TreeSpec, level: int, strides: Sequence[int]) -> tuple[I64, I64]:
        """The true counts of ``level``: its non-empty cells' mixed-radix keys (``strides``, see
        :func:`~inftda_sql.core.tree.key_strides`), sorted, and their counts.

        A level above the leaves is summed from the level below it, not from the leaf cells
        (:meth:`_summed_level`): a coarse level costs a pass over the few cells of the level
        below, and all the levels above the leaves about one pass over the leaf cells, in any
        order of calls."""
        if self.counts.size == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        depths = spec.levels[level]
        sizes = [tree.sizes for tree in self.chains]
        if level < spec.n_levels:
            keys, counts = self._summed_level(spec, level)
            own = key_strides(spec, level, sizes)
            if tuple(strides) == own:
                return keys, counts
            codes = _decode(keys, depths, own, sizes)
        else:
            codes, counts = list(self.codes), self.counts
        key = _key(codes, depths, strides, counts.size)
        return _sorted_cells(key, counts, _space(self.chains, depths))

    def _summed_level(self, spec: TreeSpec, level: int) -> tuple[I64, I64]:
        """The non-empty cells of ``level`` (above the leaves) as sorted keys in the level's own
        strides and counts: the cells of ``level + 1`` with the chain it refines taken one
        depth up, summed. Kept for later calls (two arrays as long as the level's cells)."""
        found = self._levels.get(level)
        if found is not None:
            return found
        sizes = [tree.sizes for tree in self.chains]
        depths = spec.levels[level]
        if level + 1 < spec.n_levels:
            finer_keys, counts = self._summed_level(spec, level + 1)
            codes = _decode(
                finer_keys, spec.levels[level + 1], key_strides(spec, level + 1, sizes), sizes
            )
        else:
            codes, counts = list(self.codes), self.counts
        c = spec.refined_chain(level + 1)
        codes[c] = self.chains[c].parents(depths[c] + 1)[codes[c]]
        key = _key(codes, depths, key_strides(spec, level, sizes), counts.size)
        found = _summed_cells(key, counts, _space(self.chains, depths), self.total)
        self._levels[level] = found
        return found


def _decode(
    keys: I64, depths: Sequence[int], strides: Sequence[int], sizes: Sequence[Sequence[int]]
) -> list[I64]:
    """Every chain's code in mixed-radix ``keys`` (zeros for a chain at depth 0)."""
    return [
        (keys // stride) % sizes[j][d] if d > 0 else np.zeros(keys.size, dtype=np.int64)
        for j, (d, stride) in enumerate(zip(depths, strides, strict=True))
    ]


def _key(codes: Sequence[I64], depths: Sequence[int], strides: Sequence[int], n: int) -> I64:
    """The mixed-radix key of every cell (a chain at depth 0 adds nothing). One new array for
    two chains: fresh memory costs this machine more than the arithmetic (a page's first
    touch), so the stride-1 digit is added in place, last."""
    digits = sorted(
        ((stride, code) for code, depth, stride in zip(codes, depths, strides, strict=True)
         if depth > 0),
        key=lambda digit: -digit[0],
    )  # fmt: skip
    if not digits:
        return np.zeros(n, dtype=np.int64)
    stride, code = digits[0]
    key: I64 = np.multiply(code, stride, dtype=np.int64)
    for stride, code in digits[1:]:
        key += code if stride == 1 else code * stride
    return key


def _space(chains: Sequence[ChainTree], depths: Sequence[int]) -> int:
    """The number of possible cells of a level (every key is below it)."""
    return math.prod(tree.sizes[d] for tree, d in zip(chains, depths, strict=True))


def _sorted_cells(key: I64, counts: I64, space: int) -> tuple[I64, I64]:
    """``key`` sorted, its ``counts`` carried along: one sort (:func:`.sorting.sort_keys`) of
    the key packed with its count when both fit in 63 bits (no gather afterwards), else by
    :func:`.sorting.sort_order`."""
    bits = max(1, int(counts.max()).bit_length())
    if space <= (1 << (63 - bits)):  # in place: two new arrays, no sorted copy
        packed = np.left_shift(key, bits)
        packed |= counts
        packed = sort_keys(packed)
        sorted_counts = packed & ((1 << bits) - 1)
        packed >>= bits
        return packed, sorted_counts
    order = sort_order(key, space)
    return key[order], counts[order]


def _summed_cells(key: I64, counts: I64, space: int, total: int) -> tuple[I64, I64]:
    """The distinct values of ``key``, sorted, with the sums of their ``counts`` (all >= 1, of
    sum ``total``): a dense ``bincount`` when the keys are few for their number (float64 adds
    exactly below 2**53), else one sort and a sum per run."""
    n = key.size
    if space <= max(DENSE_RATIO * n, _DENSE_MIN) and total < _FLOAT_EXACT:
        dense = np.bincount(key, weights=counts, minlength=space)
        cells = np.flatnonzero(dense)
        return cells.astype(np.int64, copy=False), dense[cells].astype(np.int64)
    key, counts = _sorted_cells(key, counts, space)
    first = np.ones(n, dtype=bool)
    np.not_equal(key[1:], key[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    return key[starts], np.add.reduceat(counts, starts)
