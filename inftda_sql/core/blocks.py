"""Blocks of parents: the unit of a TopDown level's work and of its random stream.

The surviving parents of a level are cut into *blocks* by their keys alone, never by how an
engine happens to hold them (threads, chunks, partitions). A parent's key is the level key of
its first child (:func:`first_child_keys`; the children of a parent are the contiguous keys
``first .. first + count - 1``). Keys are grouped into *buckets* of ``width`` consecutive keys
(:func:`bucket_width`: at most ``MAX_BUCKETS`` buckets span the level's key space, so an engine
can list the non-empty buckets on its driver), and a bucket's block is the number of children
of all parents in the buckets before it, divided by ``block_children`` (:func:`bucket_blocks`).
So a block holds whole parents and whole buckets, about ``block_children`` children (at most
``block_children + width + largest fan-out``), and its id depends only on the level's
surviving parents and the public domain.

Under a test seed, the noise of a block is drawn from the stream keyed by (seed, level, block)
(:meth:`~inftda_sql.core.rng.RandomSource.derive`) in one call, children in key order: any
engine that forms the same blocks draws the same noise, whatever its partitioning.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .arrays import I64

__all__ = [
    "MAX_BUCKETS",
    "bucket_blocks",
    "bucket_width",
    "first_child_keys",
    "parent_blocks",
    "runs",
]

#: the most buckets a level's key space is cut into (the non-empty ones fit on a driver)
MAX_BUCKETS = 1 << 20


def bucket_width(cells: int) -> int:
    """Keys per bucket for a level with ``cells`` possible cells (its key space).

    Example:
        >>> bucket_width(1000), bucket_width(3 * MAX_BUCKETS + 1)
        (1, 4)
    """
    return max(1, -(-int(cells) // MAX_BUCKETS))


def first_child_keys(
    codes: Sequence[I64], chain: int, child_starts: I64, strides: Sequence[int]
) -> I64:
    """The level key of every parent's first child: the refined chain ``chain`` has stride 1,
    so its children are the keys ``first .. first + count - 1``."""
    first = np.asarray(child_starts, dtype=np.int64).copy()
    for j, code in enumerate(codes):
        if j != chain:
            first += code * strides[j]
    return first


def bucket_blocks(children: I64, block_children: int) -> I64:
    """Block id of every non-empty bucket, given its children in bucket order.

    Example:
        >>> bucket_blocks(np.array([3, 3, 9, 1]), 4).tolist()
        [0, 0, 1, 3]
    """
    counts = np.asarray(children, dtype=np.int64)
    before = np.cumsum(counts) - counts
    out: I64 = before // int(block_children)
    return out


def parent_blocks(first: I64, child_counts: I64, width: int, block_children: int) -> I64:
    """Block id of every parent, ``first`` sorted ascending (see the module docstring).

    Example:
        >>> parent_blocks(np.array([0, 2, 5, 9]), np.array([2, 3, 4, 1]), 4, 5).tolist()
        [0, 0, 1, 1]
    """
    n = first.size
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    bucket = first // int(width)
    starts = np.flatnonzero(np.concatenate(([True], bucket[1:] != bucket[:-1])))
    per_bucket = np.add.reduceat(child_counts, starts)
    lengths = np.diff(np.append(starts, n))
    return np.repeat(bucket_blocks(per_bucket, block_children), lengths)


def runs(block: I64) -> list[tuple[int, int, int]]:
    """``(start, stop, block id)`` of every run of equal ids of a sorted block array.

    Example:
        >>> runs(np.array([0, 0, 1, 3, 3]))
        [(0, 2, 0), (2, 3, 1), (3, 5, 3)]
    """
    n = block.size
    if n == 0:
        return []
    starts = np.flatnonzero(np.concatenate(([True], block[1:] != block[:-1])))
    stops = np.append(starts[1:], n)
    return [(int(a), int(b), int(block[a])) for a, b in zip(starts, stops, strict=True)]
