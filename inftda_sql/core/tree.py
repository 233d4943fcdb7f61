"""The public domain as a tree of integer codes, and the keys of a level's cells.

Everything here is engine-free: an engine fetches a chain's domain paths sorted by (parent path,
value) and :func:`code_paths` turns them into dense codes per depth and a :class:`ChainTree`
(the children of a node are one contiguous code range of the next depth). A cell of a level is
one code per chain; :func:`key_strides` packs them into one mixed-radix int64 key in which the
children of one parent are one contiguous key range.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from .._errors import InternalError, SpecError
from .arrays import I64, increasing, integer_views, take_sorted
from .spec import TreeSpec

__all__ = [
    "ChainTree",
    "CodedPaths",
    "LevelStats",
    "TopDownResult",
    "code_paths",
    "determined_levels",
    "key_strides",
    "paths_sorted",
]


_INT64_KEY_LIMIT = 2**62


@dataclass(frozen=True)
class ChainTree:
    """The public domain of one chain as nested code ranges.

    ``child_offsets[d]`` (``d >= 1``) has ``sizes[d-1] + 1`` entries: the children of node ``p``
    of depth ``d - 1`` are the depth-``d`` codes ``child_offsets[d][p] .. child_offsets[d][p+1]-1``.
    """

    sizes: tuple[int, ...]
    child_offsets: tuple[I64, ...]

    @classmethod
    def from_parents(cls, parents: Sequence[I64]) -> ChainTree:
        """Build from ``parents[d-1][code]``, the parent of each depth-``d`` code."""
        sizes = [1]
        offsets: list[I64] = [np.zeros(1, dtype=np.int64)]
        for par in parents:
            if par.size and np.any(np.diff(par) < 0):
                raise InternalError("domain codes are not sorted by parent")
            counts = np.bincount(par, minlength=sizes[-1]).astype(np.int64)
            if counts.size != sizes[-1] or np.any(counts == 0):
                raise InternalError("a domain node has no children")
            off = np.zeros(sizes[-1] + 1, dtype=np.int64)
            np.cumsum(counts, out=off[1:])
            offsets.append(off)
            sizes.append(int(par.size))
        return cls(sizes=tuple(sizes), child_offsets=tuple(offsets))

    def parents(self, depth: int) -> I64:
        """The parent code (of depth ``depth - 1``) of every depth-``depth`` node.

        Example:
            >>> ChainTree.from_parents([np.array([0, 0]), np.array([0, 0, 1])]).parents(2)
            array([0, 0, 1])
        """
        off = self.child_offsets[depth]
        out: I64 = np.repeat(np.arange(off.size - 1, dtype=np.int64), np.diff(off))
        return out


@dataclass(frozen=True)
class LevelStats:
    """What one level did.

    All but ``seconds`` are public facts derived from released values only (what
    :meth:`as_dict` returns). ``seconds``, the level's wall time, is NOT private: it grows with
    the number of true non-empty cells, which the release hides. It is for the data owner's
    eyes (the progress bar, the summary, the ledger's diagnostics), never published.
    """

    level: int
    name: str
    parents: int
    noised_cells: int
    surviving_cells: int
    sigma: float
    seconds: float = field(repr=False)  # NOT private: never in the repr

    def as_dict(self) -> dict[str, object]:
        """The public facts of the level (everything but ``seconds``).

        Example:
            >>> LevelStats(1, "region", 1, 3, 2, 13.2, 0.5).as_dict()["surviving_cells"]
            2
            >>> "seconds" in LevelStats(1, "region", 1, 3, 2, 13.2, 0.5).as_dict()
            False
        """
        return {
            "level": self.level,
            "name": self.name,
            "parents": self.parents,
            "noised_cells": self.noised_cells,
            "surviving_cells": self.surviving_cells,
            "sigma": self.sigma,
        }


@dataclass(frozen=True)
class TopDownResult:
    """Leaf cells of the release: one code array per chain and the released counts."""

    codes: tuple[I64, ...]
    counts: I64
    levels: tuple[LevelStats, ...]


def key_strides(spec: TreeSpec, level: int, sizes: Sequence[Sequence[int]]) -> tuple[int, ...]:
    """Mixed-radix strides of a level's cell key: ``key = sum(code[c] * stride[c])``.

    ``sizes[c][d]`` is the number of depth-``d`` nodes of chain ``c`` (``sizes[c][0] == 1``).
    The chain the level refines is the least significant digit (stride 1), so the children of
    one parent occupy one contiguous key range: the engine finds their true counts with two
    binary searches per parent instead of one per child.
    """
    depths = spec.levels[level]
    refined = spec.refined_chain(level) if level > 0 else len(depths) - 1
    order = [c for c in range(len(depths)) if c != refined] + [refined]
    strides = [0] * len(depths)
    stride = 1
    for c in reversed(order):
        strides[c] = stride
        stride *= sizes[c][depths[c]]
    if stride > _INT64_KEY_LIMIT:
        raise SpecError(
            f"level {spec.level_name(level)!r} has {stride:,} possible cells, more than a 64-bit "
            "key can index; split the release into several smaller hierarchies"
        )
    return tuple(strides)


def determined_levels(spec: TreeSpec, sizes: Sequence[Sequence[int]]) -> tuple[bool, ...]:
    """Per level below the root: is it determined by the level above in the public domain?

    A level refines one chain by one depth; it is determined when every node of that chain at
    the depth above has exactly one child, i.e. (every node of a domain having at least one
    child) when the chain has as many nodes at both depths. Its cells then repeat the released
    counts of their parents: the accounting spends nothing on it and no mechanism noises it.
    ``sizes[c][d]`` is the number of depth-``d`` nodes of chain ``c`` (``ChainTree.sizes``).

    Example:
        >>> from inftda_sql.core.spec import parse_hierarchy
        >>> spec = parse_hierarchy([["o_country", "o_mun"], ["d_country", "d_mun"]], "destination")
        >>> determined_levels(spec, [(1, 1, 5), (1, 1, 5)])
        (True, True, False, False)
    """
    out = []
    for level in range(1, spec.n_levels + 1):
        c = spec.refined_chain(level)
        depth = spec.levels[level][c]
        out.append(bool(sizes[c][depth] == sizes[c][depth - 1]))
    return tuple(out)


def _column(table: pa.Table, index: int) -> pa.Array:
    column = table.column(index)
    return column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)


def _not_equal_to_previous(values: pa.Array | pa.ChunkedArray) -> npt.NDArray[np.bool_]:
    """Boolean per row (the first row True): does the value differ from the previous row's?
    An integer column is compared chunk by chunk where it was fetched (no combined copy)."""
    n = len(values)
    out = np.ones(n, dtype=bool)
    views = integer_views(values)
    if views is not None:
        pos = 0
        for i, arr in enumerate(views):
            if i:  # the first row of a chunk against the last row of the one before
                out[pos] = arr[0] != views[i - 1][-1]
            np.not_equal(arr[1:], arr[:-1], out=out[pos + 1 : pos + arr.size])
            pos += arr.size
    elif n > 1:
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        neq = pc.not_equal(values.slice(1), values.slice(0, n - 1))
        out[1:] = neq.fill_null(True).to_numpy(zero_copy_only=False)
    return out


def paths_sorted(paths: pa.Table) -> bool:
    """Whether the rows of ``paths`` are in ascending order of the columns, first column first
    (repeats allowed): the order ``ORDER BY ALL`` gives under DuckDB's default binary collation,
    so a domain read in that order needs no sort. Any NULL makes it False; a NaN does where
    no earlier column already orders its row (the caller refuses NULL and NaN paths anyway).

    Example:
        >>> paths_sorted(pa.table({"r": ["N", "N", "S"], "c": ["b", "b", "a"]}))
        True
        >>> paths_sorted(pa.table({"r": ["N", "N", "S"], "c": ["b", "a", "a"]}))
        False
    """
    n = paths.num_rows
    if any(paths.column(i).null_count for i in range(paths.num_columns)):
        return False
    if n < 2:
        return True
    if _each_column_nondecreasing(paths):
        return True
    before = np.zeros(n - 1, dtype=bool)  # row i-1 < row i on the columns so far
    equal = np.ones(n - 1, dtype=bool)  # row i-1 == row i on the columns so far
    for i in range(paths.num_columns):
        values = _column(paths, i)
        prev, cur = values.slice(0, n - 1), values.slice(1)
        if pa.types.is_integer(values.type):
            a, b = prev.to_numpy(), cur.to_numpy()
            less, same = a < b, a == b
        else:
            less = pc.less(prev, cur).to_numpy(zero_copy_only=False)
            same = pc.equal(prev, cur).to_numpy(zero_copy_only=False)
        before |= equal & less
        equal &= same
    return bool((before | equal).all())


def _each_column_nondecreasing(paths: pa.Table) -> bool:
    """True when every column is integer, without NULLs, and nondecreasing on its own: then the
    rows are in order (the first column where two consecutive rows differ has the smaller value
    first). One comparison per column, about a third of the general check's work; it covers the
    common geography table whose codes nest (a state's code rises with its counties'). Read
    chunk by chunk, as fetched."""
    for i in range(paths.num_columns):
        views = integer_views(paths.column(i))
        if views is None or not increasing(views, strict=False):
            return False
    return True


def _has_repeats(first_values: pa.Array | pa.ChunkedArray, n_nodes: int) -> bool:
    """True if a value names two nodes of a depth (one value per node: its first row)."""
    views = integer_views(first_values)
    if views is not None:
        if increasing(views, strict=True):  # no repeats
            return False
        arr = np.sort(np.concatenate(views))
        return bool(np.any(arr[1:] == arr[:-1]))
    if isinstance(first_values, pa.ChunkedArray):
        first_values = first_values.combine_chunks()
    n = len(first_values)
    if n < 2:
        return False
    if bool(pc.all(pc.greater(first_values.slice(1), first_values.slice(0, n - 1))).as_py()):
        return False
    return bool(pc.count_distinct(first_values).as_py() != n_nodes)


@dataclass(frozen=True)
class CodedPaths:
    """A chain's distinct domain paths with their dense codes, and the tree they form.

    ``paths`` holds the chain's columns, one row per distinct path in sorted order;
    ``codes[d - 1]`` is the code of every row's depth-``d`` node (made on first use: a release
    that codes its leaf cells without the code table never needs them, and they are three
    arrays as long as the domain). ``not_nested`` is the first depth (>= 2) whose values name
    more than one node (the domain is not nested), else None. ``firsts[d - 1]``: the rows where
    a depth-``d`` node starts, for the depths above the leaves that were coded.
    """

    paths: pa.Table
    firsts: tuple[I64, ...]
    tree: ChainTree | None
    not_nested: int | None

    @functools.cached_property
    def codes(self) -> tuple[I64, ...]:
        """Every coded depth's code of every row: node ``k`` repeated over its rows (a running
        count of starts, without a cumulative sum); the leaves' are the row numbers."""
        n = self.paths.num_rows
        out = [
            np.repeat(np.arange(first.size, dtype=np.int64), np.diff(first, append=n))
            for first in self.firsts
        ]
        if self.tree is not None:
            out.append(np.arange(n, dtype=np.int64))
        return tuple(out)


def _tree(firsts: Sequence[I64], n_paths: int) -> ChainTree:
    """The tree of coded paths from ``firsts[d - 1]``, the rows where a depth-``d`` node starts
    (every depth above the leaves; a leaf starts at every row). A parent's first child is the
    child node starting at the row where the parent starts, so the child ranges are read off
    directly: the rank of that row among the child depth's starts (its row for the leaves)."""
    sizes = [1]
    offsets: list[I64] = [np.zeros(1, dtype=np.int64)]
    previous: I64 | None = None
    for first in [*firsts, None]:
        n_nodes = n_paths if first is None else first.size
        off = np.empty(sizes[-1] + 1, dtype=np.int64)
        if previous is None:
            off[0] = 0
        elif first is None:
            off[:-1] = previous
        else:  # a parent's start is a start of its first child
            off[:-1] = np.searchsorted(first, previous)
        off[-1] = n_nodes
        offsets.append(off)
        sizes.append(n_nodes)
        previous = first
    return ChainTree(sizes=tuple(sizes), child_offsets=tuple(offsets))


def code_paths(paths: pa.Table) -> CodedPaths:
    """Code a chain's domain paths, given sorted by (parent path, value) with repeats allowed.

    Because rows are sorted, the dense code of a depth-``d`` node is the running count of rows
    where one of the first ``d`` columns changes, the children of a node are one contiguous code
    range, and each node's parent is read off its first row. The domain is nested (every value
    has one parent) exactly when the number of distinct values of each column equals the number
    of nodes of its depth.

    Example:
        >>> coded = code_paths(pa.table({"r": ["N", "N", "S"], "c": ["a", "b", "c"]}))
        >>> [c.tolist() for c in coded.codes], coded.tree.sizes
        ([[0, 0, 1], [0, 1, 2]], (1, 2, 3))
    """
    n_cols = paths.num_columns
    # starts[d - 1]: the row starts a new depth-d node (a change in one of the first d columns)
    starts: list[npt.NDArray[np.bool_]] = []
    for d in range(n_cols):
        neq = _not_equal_to_previous(paths.column(d))
        if starts:
            np.logical_or(neq, starts[-1], out=neq)
        starts.append(neq)
    distinct = starts[-1]
    if not distinct.all():  # the domain lists some paths twice
        paths = paths.filter(pa.array(distinct))
        starts = [c[distinct] for c in starts]
    firsts: list[I64] = []
    for d in range(1, n_cols + 1):
        start = starts[d - 1]
        first = None if d == n_cols else np.flatnonzero(start).astype(np.int64, copy=False)
        n_nodes = start.size if first is None else first.size
        if d > 1:
            values = paths.column(d - 1)  # chunked as fetched
            # each node's value at its first row (gathered there, not a filter over every row)
            firsts_of_nodes = values if first is None else take_sorted(values, first)
            if _has_repeats(firsts_of_nodes, n_nodes):
                return CodedPaths(paths, tuple(firsts), None, d)
        if first is not None:
            firsts.append(first)
    return CodedPaths(paths, tuple(firsts), _tree(firsts, paths.num_rows), None)
