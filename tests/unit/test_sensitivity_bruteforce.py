"""Brute-force check of level_sensitivities on tiny hierarchies.

For every tiny dataset (a multiset of at most 3 privacy units, each unit at most m records
placed on leaves, distinct leaves or not) and every neighbour of it (bounded: one unit
replaced; unbounded: one unit added), compute each level's histogram (the count of every
cell of that level, the root being level 0) from the records, and take the largest L2 change
over all neighbouring pairs. It must never exceed ``level_sensitivities``, and must equal it
where the bound is tight:

* bounded, general bound ``sqrt(2) m``: tight when the level has two cells that can each
  hold the m records of one unit (any two cells without ``distinct``; with ``distinct``, two
  cells with at least m leaves below each);
* bounded, distinct leaf bound ``sqrt(2m)``: tight when there are at least 2m leaves;
* unbounded, general bound ``m`` (root included): tight when one cell of the level can hold
  the m records of a unit (always without ``distinct``; with it, a cell with >= m leaves);
* unbounded, distinct leaf bound ``sqrt(m)``: tight when there are at least m leaves.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import numpy.typing as npt
import pytest

from inftda_sql.core.accounting import level_sensitivities

Leaf = tuple[str, ...]  # the path of a leaf below the root: (level-1 cell, ..., leaf cell)
Unit = tuple[int, ...]  # the leaves (indices) of a unit's records, sorted
Dataset = tuple[int, ...]  # the units (indices into the unit list) of a dataset, sorted

MAX_UNITS = 3

TREES: dict[str, list[Leaf]] = {
    # root -> 2 regions -> 2 areas each
    "binary": [("A", "A1"), ("A", "A2"), ("B", "B1"), ("B", "B2")],
    # root -> A {A1 {a, b}, A2 {c}, A3 {d, e, f}}, B {B1 {g}}
    "irregular": [
        ("A", "A1", "a"),
        ("A", "A1", "b"),
        ("A", "A2", "c"),
        ("A", "A3", "d"),
        ("A", "A3", "e"),
        ("A", "A3", "f"),
        ("B", "B1", "g"),
    ],
    # a level with a single cell, and only 3 leaves: several bounds are not attained
    "thin": [("A", "a1"), ("A", "a2"), ("A", "a3")],
}


@dataclass(frozen=True)
class Case:
    tree: str
    m: int
    distinct: bool

    @property
    def leaves(self) -> list[Leaf]:
        return TREES[self.tree]

    @property
    def n_levels(self) -> int:
        return len(self.leaves[0])

    def cells(self, level: int) -> list[Leaf]:
        """The cells of a level (level 0 is the root, a single cell)."""
        return sorted({leaf[:level] for leaf in self.leaves})

    def leaves_below(self, cell: Leaf) -> int:
        return sum(leaf[: len(cell)] == cell for leaf in self.leaves)

    @cached_property
    def units(self) -> list[Unit]:
        """Every possible privacy unit: 1..m records, on distinct leaves if required."""
        pick = itertools.combinations if self.distinct else itertools.combinations_with_replacement
        idx = range(len(self.leaves))
        return [u for k in range(1, self.m + 1) for u in pick(idx, k)]

    @cached_property
    def datasets(self) -> list[Dataset]:
        """Every dataset of 0..MAX_UNITS units (a multiset of units)."""
        n = len(self.units)
        return [
            d
            for k in range(MAX_UNITS + 1)
            for d in itertools.combinations_with_replacement(range(n), k)
        ]

    @cached_property
    def index(self) -> dict[Dataset, int]:
        return {d: i for i, d in enumerate(self.datasets)}

    def histograms(self, level: int) -> npt.NDArray[np.int64]:
        """Row i: the counts of every cell of ``level`` in dataset i, from its records."""
        cells = {c: j for j, c in enumerate(self.cells(level))}
        out = np.zeros((len(self.datasets), len(cells)), dtype=np.int64)
        for i, dataset in enumerate(self.datasets):
            for unit in dataset:
                for leaf in self.units[unit]:
                    out[i, cells[self.leaves[leaf][:level]]] += 1
        return out

    def neighbours(self, privacy: str) -> Iterator[tuple[int, int]]:
        """Index pairs of neighbouring datasets."""
        for dataset in self.datasets:
            if privacy == "unbounded":  # add one unit (removal is the same pair reversed)
                if len(dataset) < MAX_UNITS:
                    for v in range(len(self.units)):
                        yield self.index[dataset], self.index[tuple(sorted((*dataset, v)))]
            else:  # replace one unit
                for pos in range(len(dataset)):
                    rest = dataset[:pos] + dataset[pos + 1 :]
                    for v in range(len(self.units)):
                        yield self.index[dataset], self.index[tuple(sorted((*rest, v)))]

    def max_change(self, privacy: str) -> dict[int, float]:
        """Largest L2 change of every level's histogram over all neighbouring pairs."""
        pairs = np.array(list(self.neighbours(privacy)), dtype=np.int64)
        out = {}
        for level in range(self.n_levels + 1):
            hist = self.histograms(level)
            diff = hist[pairs[:, 0]] - hist[pairs[:, 1]]
            out[level] = float(np.sqrt((diff * diff).sum(axis=1).max()))
        return out

    def tight(self, privacy: str, level: int) -> bool:
        """Whether the bound of ``level`` is attained on this tree (see the module docstring)."""
        cells = self.cells(level)
        leaf_level = level == self.n_levels
        if self.distinct and leaf_level:
            need = 2 * self.m if privacy == "bounded" else self.m
            return len(cells) >= need
        holders = [c for c in cells if not self.distinct or self.leaves_below(c) >= self.m]
        return len(holders) >= (2 if privacy == "bounded" else 1)


CASES = [
    Case(tree, m, distinct)
    for tree in TREES
    for m in (1, 2)
    for distinct in (False, True)
    if not (distinct and m > len(TREES[tree]))
] + [Case("binary", 3, False), Case("binary", 3, True)]


@pytest.mark.parametrize("privacy", ["bounded", "unbounded"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.tree}-m{c.m}-distinct{c.distinct}")
def test_level_sensitivity_is_the_worst_case(case: Case, privacy: str) -> None:
    bounds = level_sensitivities(
        case.n_levels, privacy=privacy, contribution=case.m, distinct=case.distinct
    )
    first = 1 if privacy == "bounded" else 0  # the bounded root is public, not noised
    assert len(bounds) == case.n_levels + 1 - first
    observed = case.max_change(privacy)
    if privacy == "bounded":
        assert observed[0] <= case.m  # the root moves only when a unit's record count does
    for level, bound in enumerate(bounds, start=first):
        assert observed[level] <= bound + 1e-12, (level, observed[level], bound)
        if case.tight(privacy, level):
            assert observed[level] == pytest.approx(bound, rel=1e-12), (level, observed)
        else:
            assert observed[level] < bound - 1e-9, (level, observed, "expected slack")


def test_some_bounds_are_not_attained() -> None:
    """The tightness predicate is not vacuous: the thin tree leaves slack."""
    thin = Case("thin", 2, True)
    observed = thin.max_change("bounded")
    # a single cell: only a change of the unit's record count (2 -> 1) moves it
    assert observed[1] == 1.0
    assert observed[2] == pytest.approx(math.sqrt(3.0))  # 3 leaves < 2m = 4: below sqrt(2m) = 2


def test_distinct_bound_does_not_hold_above_the_leaves() -> None:
    """The caveat of ALGORITHMS.md section 1: distinct at the leaves, shared above."""
    case = Case("irregular", 2, True)
    observed = case.max_change("bounded")
    naive = math.sqrt(2 * case.m)  # the distinct bound, wrongly applied to every level
    assert observed[1] > naive and observed[2] > naive
    # level 2 has two cells with >= 2 leaves below (A1, A3): the general bound is attained
    assert observed[2] == pytest.approx(math.sqrt(2) * case.m)
    # level 1 has one (A; B has a single leaf): sqrt(5) from (2, 0) -> (0, 1), still > 2
    assert observed[1] == pytest.approx(math.sqrt(5))
    unbounded = case.max_change("unbounded")
    assert unbounded[0] == case.m > math.sqrt(case.m)


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.tree}-m{c.m}-distinct{c.distinct}")
def test_bounded_root_is_public_only_with_one_record_per_unit(case: Case) -> None:
    """Bounded DP: with m = 1, N never moves (released exactly); with m > 1 the accounting
    noises the root with sensitivity m - 1, the exact worst case (units hold 1..m records)."""
    from inftda_sql.core.accounting import Budget, account

    observed_root = case.max_change("bounded")[0]
    names = [f"l{i}" for i in range(1, case.n_levels + 1)]
    acct = account(Budget.from_args(rho=1.0), names, contribution=case.m, distinct=case.distinct)
    if case.m == 1:
        assert observed_root == 0.0
        assert acct.level_names[0] != "root"
    else:
        assert acct.level_names[0] == "root"
        assert acct.level_sensitivity[0] == observed_root == case.m - 1
