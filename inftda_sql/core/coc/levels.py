"""The true levels of a count-of-counts release, from an engine's aggregations: the engine-free
steps every engine takes after its scan (each node's parent and public number of groups, empty
groups, sizes truncated at the largest size, the groups found against the groups listed)."""

from __future__ import annotations

import dataclasses

import numpy as np

from ..arrays import I64
from ..tree import ChainTree
from .histograms import CocLevel, Histograms

__all__ = [
    "found_vs_listed",
    "node_parents",
    "public_groups",
    "truncate_sizes",
    "with_empty_groups",
]


def truncate_sizes(level: CocLevel, max_size: int) -> CocLevel:
    """The level with groups larger than ``max_size`` counted at ``max_size``."""
    t = level.truth
    return dataclasses.replace(
        level, truth=Histograms.build(t.node, np.minimum(t.size, max_size), t.count)
    )


def node_parents(tree: ChainTree) -> list[I64]:
    """For every depth, the parent code of each node (zeros for the root)."""
    out: list[I64] = [np.zeros(1, dtype=np.int64)]
    for depth in range(1, len(tree.sizes)):
        off = tree.child_offsets[depth]
        out.append(np.repeat(np.arange(off.size - 1, dtype=np.int64), np.diff(off)))
    return out


def public_groups(tree: ChainTree, per_leaf: I64) -> list[I64]:
    """The public number of groups of every node of every depth (sums of the leaves)."""
    out = [per_leaf]
    for depth in range(len(tree.sizes) - 1, 0, -1):
        off = tree.child_offsets[depth]
        sums = np.add.reduceat(out[0], off[:-1]) if out[0].size else out[0]
        out.insert(0, sums.astype(np.int64))
    return out


def with_empty_groups(level: CocLevel) -> CocLevel:
    """Add the listed groups the data does not hold as groups of size 0."""
    empty = level.groups - level.truth.totals(level.n_nodes)
    nodes = np.flatnonzero(empty > 0)
    t = level.truth
    truth = Histograms.build(
        np.concatenate((t.node, nodes)),
        np.concatenate((t.size, np.zeros(nodes.size, dtype=np.int64))),
        np.concatenate((t.count, empty[nodes])),
    )
    return dataclasses.replace(level, truth=truth)


def found_vs_listed(leaves: CocLevel, min_size: int) -> tuple[int, int]:
    """How many leaf regions hold more groups than the groups table lists, and (when groups
    cannot be empty) how many hold fewer: numbers of regions, never a count."""
    found = leaves.truth.totals(leaves.n_nodes)
    over = int(np.count_nonzero(found > leaves.groups))
    under = int(np.count_nonzero(found < leaves.groups)) if min_size > 0 else 0
    return over, under
