"""Sorts of int64 keys that numpy's one ``np.sort`` does slowly on some machines.

On this project's machine of 2026-11-27 (AMD EPYC, AVX-512), numpy 2.4's ``np.sort`` of int64
runs at 50-65 ns a key beyond a few thousand keys (its AVX-512 quicksort: 12 ns with numpy's
AVX-512 dispatch disabled), but sorts rows of up to 256 keys with sorting networks at 1.1-1.9
ns a key, and 8- or 16-bit values stably by radix (benchmarks/RESULTS.md, "Eighth pass").
The sorts here are built from those two: :func:`sort_segments` (keys already ordered between
segments), :func:`sort_keys` (one pass of radix on the top 16 bits, then the segments),
:func:`sort_order` and :func:`lex_order` (permutations). Each gives exactly what one
``np.sort`` or ``np.lexsort`` would; none depends on the order of equal keys it receives.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .arrays import I64, mixed_radix_strides

__all__ = ["SEGMENT_ROW", "lex_order", "sort_keys", "sort_order", "sort_segments"]

#: Keys per row of :func:`sort_segments` (numpy sorts rows of up to 256 int64 with networks).
SEGMENT_ROW = 256
#: Below this many keys one ``np.sort`` is used (the radix pass's 2**16 buckets cost more).
_RADIX_MIN = 1 << 15
#: Above this many keys too: the radix pass holds 18 more bytes a key while it runs (the top
#: bits, the permutation, the gathered copy), 300 MB at this size; one ``np.sort`` sorts in place.
_RADIX_MAX = 1 << 24


def sort_keys(values: I64) -> I64:
    """Non-negative ``values`` sorted: a new array, or ``values`` sorted in place.

    The values are put in order of their top 16 bits (of the largest value's width) by one
    stable ``np.argsort`` of those bits as ``uint16`` (numpy's radix sort), gathered, and each
    run of equal top bits sorted by :func:`sort_segments`: 459K O/D cell keys at 14.5 ns a key
    against 46 ns for ``np.sort`` on the AMD EPYC, 1.27M at 22.6 against 51.5 ns
    (``benchmarks/bench_sorting.py``). Small arrays, and arrays beyond 2**24 keys (whose
    radix pass would hold 300 MB more), get one ``np.sort`` in place.

    Example:
        >>> sort_keys(np.array([5, 3, 9, 3])).tolist()
        [3, 3, 5, 9]
    """
    n = values.size
    if n < _RADIX_MIN or n > _RADIX_MAX:
        values.sort()
        return values
    shift = max(0, int(values.max()).bit_length() - 16)
    top = np.right_shift(values, shift).astype(np.uint16)
    runs = np.bincount(top, minlength=1 << 16)
    order = np.argsort(top, kind="stable")
    del top
    ordered: I64 = values[order]
    del order
    sort_segments(ordered, runs)
    return ordered


def sort_segments(key: I64, count: I64, row: int = SEGMENT_ROW) -> None:
    """Sort ``key`` in place, given that it is already ordered between segments.

    ``count`` gives the segments' lengths in ``key``. ``np.sort`` along the last axis of a
    2-D array sorts every row in one call, and rows of up to 256 int64 keys it sorts with
    sorting networks (x86-simd-sort); a longer sort partitions. On an AMD EPYC with AVX-512
    (2026-11-27; benchmarks/RESULTS.md), CPU per random key: rows of 64-256 keys 1.5-1.9 ns,
    rows of 512 10 ns, one sort of 1M keys 50 ns, slices of 1,024 in a Python loop 19 ns.

    Why two grids of rows sort every short segment: sorting any run of consecutive keys
    permutes keys only within the segments it holds (the keys are ordered between
    segments), and sorting part of a sorted segment leaves it sorted. The rows of the first
    grid start at multiples of ``row``, those of the second at ``row // 2`` plus multiples of
    ``row`` (its first ``row // 2`` keys are in no row), and each grid's last row is what is
    left: the two grids' boundaries alternate ``row // 2`` keys apart. A segment of at most
    ``row // 2 + 1`` keys crosses at most one boundary, so it lies whole in a row of the
    other grid. Longer segments are sorted one slice each afterwards: that loop runs at most
    ``len(key) / (row // 2 + 2)`` times. ``row < 2`` sorts in one call.
    """
    n = key.shape[0]
    if row < 2 or n <= row:
        key.sort()
        return
    half = row // 2
    _sort_rows(key, row)
    _sort_rows(key[half:], row)
    long = np.flatnonzero(count > half + 1)
    if long.size:
        ends = np.cumsum(count)[long]
        for lo, hi in zip((ends - count[long]).tolist(), ends.tolist(), strict=True):
            key[lo:hi].sort()


def _sort_rows(key: I64, row: int) -> None:
    """Sort the consecutive rows of ``row`` keys of ``key`` in place, the last one shorter.
    ``key`` is contiguous (a slice of a fresh array), so the reshape is a view of it."""
    full = key.shape[0] - key.shape[0] % row
    key[:full].reshape(-1, row).sort(axis=1)
    key[full:].sort()


def sort_order(key: I64, space: int) -> I64:
    """The permutation sorting ``key`` (values below ``space``): one sort (:func:`sort_keys`)
    of the key packed with the position when both fit in 63 bits (much faster than
    ``argsort``)."""
    n = key.size
    bits = max(1, (n - 1).bit_length())
    if space <= (1 << (63 - bits)):  # in place: one new array besides the positions
        packed: I64 = np.left_shift(key, bits)
        packed |= np.arange(n, dtype=np.int64)
        packed = sort_keys(packed)
        packed &= (1 << bits) - 1
        return packed
    return np.argsort(key, kind="stable")


def lex_order(codes: Sequence[I64], sizes: Sequence[int]) -> I64 | None:
    """The permutation that sorts cells by their codes, ``codes[0]`` first (chain ``j``'s codes
    below ``sizes[j]``), or None when they are in that order already.

    Codes of at most 2**16 values are sorted by ``np.lexsort`` of 8- or 16-bit copies, which
    numpy sorts by radix (stable, a pass per chain and no comparison): TopDown's cells come in
    the order of the leaf level's key, in which the chains are already grouped, and putting
    them chain 0 first costs 2.4 ms for 341K UK cells against 20 ms for one ``np.sort`` of the
    packed key on an AMD EPYC whose AVX-512 ``np.sort`` runs at 50-65 ns a key (RESULTS.md).
    Larger codes are sorted by their mixed-radix key (:func:`sort_order`), or by
    ``np.lexsort`` of the codes when the key would not fit in 62 bits.

    Example:
        >>> lex_order([np.array([1, 0, 1]), np.array([0, 2, 1])], [2, 3]).tolist()
        [1, 0, 2]
        >>> lex_order([np.array([0, 1]), np.array([5, 0])], [2, 6]) is None
        True
    """
    n = codes[0].size if codes else 0
    if n < 2:
        return None
    space = math.prod(sizes)
    key: I64 | None = None
    if space < 1 << 62:
        key = np.zeros(n, dtype=np.int64)
        for code, stride in zip(codes, mixed_radix_strides(sizes), strict=True):
            key += code * stride
        if bool(np.all(key[1:] >= key[:-1])):
            return None
    if max(sizes) <= 1 << 16:
        widths = [np.uint8 if size <= 1 << 8 else np.uint16 for size in sizes]
        narrow = [code.astype(width) for code, width in zip(codes, widths, strict=True)]
        by_radix: I64 = np.lexsort(narrow[::-1]).astype(np.int64, copy=False)
        return by_radix
    if key is not None:
        return sort_order(key, space)
    order: I64 = np.lexsort(tuple(reversed(codes))).astype(np.int64)
    return None if bool(np.all(order[1:] > order[:-1])) else order
