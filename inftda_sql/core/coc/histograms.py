"""The data of a count-of-counts release: sparse histograms, runs of estimated groups, the
levels of the hierarchy and the per-level result.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np

from ..arrays import F64, I64

#: how the levels are made consistent
CONSISTENCY = ("topdown", "leaves")
#: how a matched parent and child estimate of one group are combined
MERGES = ("weighted", "average")

DEFAULT_CHUNK = 1 << 20
T = TypeVar("T")
_EMPTY_I = np.zeros(0, dtype=np.int64)


@dataclass(frozen=True)
class Histograms:
    """Sparse count-of-counts histograms of the nodes of one level, sorted by (node, size):
    ``count`` groups of size ``size`` in node ``node`` (counts > 0)."""

    node: I64
    size: I64
    count: I64

    @classmethod
    def build(cls, node: object, size: object, count: object) -> Histograms:
        """Sort by (node, size), add up repeated pairs and drop zero counts.

        Example:
            >>> h = Histograms.build([1, 0, 1, 1], [2, 5, 2, 3], [1, 4, 2, 0])
            >>> h.node.tolist(), h.size.tolist(), h.count.tolist()
            ([0, 1], [5, 2], [4, 3])
        """
        n = np.asarray(node, dtype=np.int64)
        s = np.asarray(size, dtype=np.int64)
        c = np.asarray(count, dtype=np.int64)
        if n.size == 0:
            return cls(_EMPTY_I, _EMPTY_I, _EMPTY_I)
        order = np.lexsort((s, n))
        n, s, c = n[order], s[order], c[order]
        new = np.ones(n.size, dtype=bool)
        new[1:] = (n[1:] != n[:-1]) | (s[1:] != s[:-1])
        first = np.flatnonzero(new)
        total = np.add.reduceat(c, first)
        keep = total != 0
        return cls(n[first][keep], s[first][keep], total[keep])

    def totals(self, n_nodes: int) -> I64:
        """Groups per node."""
        return np.bincount(self.node, weights=self.count, minlength=n_nodes).astype(np.int64)

    def persons(self, n_nodes: int) -> I64:
        """Persons per node (sum of size x count)."""
        w = (self.size * self.count).astype(np.float64)
        return np.rint(np.bincount(self.node, weights=w, minlength=n_nodes)).astype(np.int64)

    def aggregate(self, parent: I64) -> Histograms:
        """The histograms of the parents (``parent[node]``): sums of their children's."""
        return Histograms.build(parent[self.node], self.size, self.count)


@dataclass(frozen=True)
class Runs:
    """Estimated groups of the nodes of one level, as runs sorted by (node, size, var):
    ``count`` groups of node ``node`` estimated at size ``size`` with variance ``var``."""

    node: I64
    size: I64
    var: F64
    count: I64

    @classmethod
    def build(cls, node: I64, size: I64, var: F64, count: I64) -> Runs:
        """Sort by (node, size, var), add up runs that agree on all three, drop empty ones."""
        if node.size == 0:
            return cls(_EMPTY_I, _EMPTY_I, np.zeros(0), _EMPTY_I)
        order = np.lexsort((var, size, node))
        node, size, var, count = node[order], size[order], var[order], count[order]
        new = np.ones(node.size, dtype=bool)
        new[1:] = (node[1:] != node[:-1]) | (size[1:] != size[:-1]) | (var[1:] != var[:-1])
        first = np.flatnonzero(new)
        total = np.add.reduceat(count, first)
        keep = total > 0
        return cls(node[first][keep], size[first][keep], var[first][keep], total[keep])

    def histograms(self) -> Histograms:
        """The runs as histograms (variances dropped)."""
        return Histograms.build(self.node, self.size, self.count)


@dataclass(frozen=True)
class CocLevel:
    """One level of the hierarchy: its public facts and its PRIVATE true histograms.

    Attributes:
        name: the level's name (``root``, or its column).
        groups: the public number of groups of every node (from the groups table).
        parent: the node of the previous level each node belongs to (zeros for the root).
        truth: the true histograms, sizes already truncated at ``max_size`` (PRIVATE).
    """

    name: str
    groups: I64
    parent: I64
    truth: Histograms

    @property
    def n_nodes(self) -> int:
        return int(self.groups.size)


@dataclass(frozen=True)
class CocLevelStats:
    """What one level did (public facts only: no true value)."""

    level: int
    name: str
    nodes: int
    noised_entries: int
    scale: float
    runs: int
    seconds: float = field(repr=False)  # NOT private: never in the repr

    def as_dict(self) -> dict[str, object]:
        return {
            "level": self.level,
            "name": self.name,
            "nodes": self.nodes,
            "noised_entries": self.noised_entries,
            "scale": self.scale,
            "runs": self.runs,
            "seconds": round(self.seconds, 4),
        }


@dataclass(frozen=True)
class CocResult:
    """The released leaf histograms and what each level did."""

    leaves: Histograms
    levels: tuple[CocLevelStats, ...]
