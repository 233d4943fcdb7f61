"""Hierarchy specification: chains of columns and the order in which a tree refines them.

A *chain* is an ordered list of columns, coarse to fine, whose values nest (region > province >
municipality). A release refines one or more chains, one step per level of the tree:

* ``"chain"``: one chain, refined top to bottom.
* ``"sequential"``: several chains, the first fully refined, then the second... (k-hierarchical
  queries: geography, then age band, then sex).
* ``"destination"`` / ``"origin"``: two chains (origin, destination) interleaved as in the O/D
  TopDown paper; the destination tree refines the destination first: (O0, D1), (O1, D1), (O1, D2)...
  When one side is exhausted (different depths), the other keeps refining.

A level is described by its *depth vector*: how deep each chain is refined at that level. Level 0
is the root (all depths 0).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .._errors import Arg, Placeholder, SpecError

__all__ = ["OUTPUT_COUNT_COLUMN", "TREE_KINDS", "TreeSpec", "parse_hierarchy"]

TREE_KINDS = ("chain", "sequential", "destination", "origin")
OUTPUT_COUNT_COLUMN = "count"


@dataclass(frozen=True)
class TreeSpec:
    """A validated hierarchy: the chains and the depth vector of every level (root first)."""

    chains: tuple[tuple[str, ...], ...]
    tree: str
    levels: tuple[tuple[int, ...], ...]

    @property
    def columns(self) -> tuple[str, ...]:
        """All hierarchy columns, chain after chain, coarse to fine."""
        return tuple(col for chain in self.chains for col in chain)

    @property
    def leaf_columns(self) -> tuple[str, ...]:
        """The finest column of every chain: together they identify a leaf cell."""
        return tuple(chain[-1] for chain in self.chains)

    @property
    def n_levels(self) -> int:
        """Number of levels below the root."""
        return len(self.levels) - 1

    def refined_chain(self, level: int) -> int:
        """Index of the chain that level ``level`` (>= 1) refines by one step."""
        before, after = self.levels[level - 1], self.levels[level]
        (changed,) = (c for c in range(len(self.chains)) if before[c] != after[c])
        return changed

    def level_columns(self, level: int) -> tuple[str, ...]:
        """The columns that identify a cell of ``level`` (the deepest refined column per chain)."""
        return tuple(
            chain[depth - 1]
            for chain, depth in zip(self.chains, self.levels[level], strict=True)
            if depth > 0
        )

    def grouped_columns(self, level: int) -> tuple[str, ...]:
        """Every column a cell of ``level`` is grouped by (each chain down to its depth), in
        :attr:`columns` order: the level's grouping set in a levels view."""
        depth = dict(zip(self.chains, self.levels[level], strict=True))
        return tuple(col for chain in self.chains for col in chain[: depth[chain]])

    def grouping_mask(self, level: int, order: Sequence[str]) -> int:
        """The ``grouping()`` value of ``level``'s grouping set over the columns ``order``: one
        bit per column, the first the highest, set where the column is not grouped (SQL's rule;
        DuckDB numbers the columns as listed, Spark's ``grouping_id()`` by first appearance).

        >>> spec = parse_hierarchy(["region", "province"])
        >>> [spec.grouping_mask(level, spec.columns) for level in range(3)]
        [3, 1, 0]
        """
        grouped = set(self.grouped_columns(level))
        mask = 0
        for col in order:
            mask = (mask << 1) | (col not in grouped)
        return mask

    def level_name(self, level: int) -> str:
        """A readable name of a level: its identifying columns, or ``root``."""
        cols = self.level_columns(level)
        return " x ".join(cols) if cols else "root"

    def as_dict(self) -> dict[str, object]:
        return {"chains": [list(c) for c in self.chains], "tree": self.tree}


def _as_chain(item: object, position: str) -> tuple[str, ...]:
    if isinstance(item, str) or not isinstance(item, Sequence):
        raise SpecError(
            f"hierarchy {position} must be a list of column names, got {item!r}; write ",
            Arg("hierarchy", ["region", "province"]),
            " for one chain or ",
            Arg("hierarchy", [["o_region", "o_mun"], ["d_region", "d_mun"]]),
            " for several",
            param="hierarchy",
        )
    chain = tuple(item)
    if not chain:
        raise SpecError(
            f"hierarchy {position} is empty; list its columns coarse to fine", param="hierarchy"
        )
    for col in chain:
        if not isinstance(col, str) or not col:
            raise SpecError(
                f"hierarchy {position} has {col!r}, which is not a column name; "
                "columns are given as non-empty strings",
                param="hierarchy",
            )
    return chain


def _interleave(depths: tuple[int, int], first: int) -> list[tuple[int, ...]]:
    """O/D levels: alternately refine chain ``first`` and the other, until both are exhausted."""
    levels: list[tuple[int, ...]] = []
    cur = [0, 0]
    turn = first
    while cur != list(depths):
        if cur[turn] < depths[turn]:
            cur[turn] += 1
            levels.append(tuple(cur))
        turn = 1 - turn
    return levels


def parse_hierarchy(hierarchy: object, tree: str | None = None) -> TreeSpec:
    """Validate a user's ``hierarchy=`` / ``tree=`` pair and derive the levels.

    Example:
        >>> spec = parse_hierarchy([["o_reg", "o_mun"], ["d_reg", "d_mun"]], "destination")
        >>> [spec.level_name(l) for l in range(spec.n_levels + 1)]
        ['root', 'd_reg', 'o_reg x d_reg', 'o_reg x d_mun', 'o_mun x d_mun']
    """
    if isinstance(hierarchy, str):
        raise SpecError(
            f"hierarchy must be a list of columns, got the string {hierarchy!r}; write ",
            Arg("hierarchy", [c.strip() for c in hierarchy.split(",") if c.strip()]),
            param="hierarchy",
        )
    if not isinstance(hierarchy, Sequence) or not hierarchy:
        raise SpecError(
            f"hierarchy must be a non-empty list of columns (coarse to fine), got {hierarchy!r}",
            param="hierarchy",
        )
    items = list(hierarchy)
    if all(isinstance(x, str) for x in items):
        chains: tuple[tuple[str, ...], ...] = (_as_chain(items, "chain"),)
    elif all(not isinstance(x, str) for x in items):
        chains = tuple(_as_chain(x, f"chain {i + 1}") for i, x in enumerate(items))
    else:
        raise SpecError(
            f"hierarchy mixes column names and lists: {hierarchy!r}; give either one chain "
            "['region', 'province'] or a list of chains [['o_region'], ['d_region']]",
            param="hierarchy",
        )

    seen: dict[str, int] = {}
    for i, chain in enumerate(chains):
        for col in chain:
            key = col.lower()  # DuckDB identifiers are case-insensitive
            if key in seen:
                where = "twice in the same chain" if seen[key] == i else "in two chains"
                raise SpecError(
                    f"column {col!r} appears {where}; every hierarchy column must be distinct "
                    "(an O/D table names its sides apart, e.g. o_region and d_region)",
                    param="hierarchy",
                )
            seen[key] = i
    if OUTPUT_COUNT_COLUMN in seen:
        raise SpecError(
            f"a hierarchy column is named {OUTPUT_COUNT_COLUMN!r}, the name of the output's count "
            "column; rename it in a view first",
            param="hierarchy",
        )

    if tree is None:
        tree = "chain" if len(chains) == 1 else "sequential"
    if tree not in TREE_KINDS:
        raise SpecError(f"tree must be one of {', '.join(TREE_KINDS)}; got {tree!r}", param="tree")
    if tree == "chain" and len(chains) != 1:
        raise SpecError(
            Arg("tree", "chain"),
            f" takes one chain, got {len(chains)}; use ",
            Arg("tree", "sequential"),
            " (chains refined in order) or ",
            Arg("tree", "destination"),
            "/'origin' for two O/D chains",
            param="tree",
        )
    if tree in ("destination", "origin") and len(chains) != 2:
        raise SpecError(
            Arg("tree", tree),
            f" interleaves exactly two chains (origin, destination), got {len(chains)}; pass ",
            Arg(
                "hierarchy",
                [[Placeholder("origin columns")], [Placeholder("destination columns")]],
            ),
            param="hierarchy",
        )

    k = len(chains)
    levels: list[tuple[int, ...]] = [(0,) * k]
    if tree in ("chain", "sequential"):
        depth = [0] * k
        for c, chain in enumerate(chains):
            for d in range(1, len(chain) + 1):
                depth[c] = d
                levels.append(tuple(depth))
    else:
        first = 1 if tree == "destination" else 0
        levels += _interleave((len(chains[0]), len(chains[1])), first)
    return TreeSpec(chains=chains, tree=tree, levels=tuple(levels))
