"""Integer rounding of a lattice release: non-negative, consistent, close to the optimum.

The optimisation (:mod:`.lsq`) gives real leaf counts ``x >= 0``; every feature is their sum.
The release needs integers. Rounding the leaves one by one would let the coarse sums drift
by up to the number of leaves they hold; instead the leaves are rounded **coarse to fine along
a chain of the lattice** with largest remainders:

* the chain is a sequence of queries each refining the previous one (the longest such chain;
  ties broken by the finer end), then the *atoms* (the cells of the meet of all coarse
  features, which refine every one of them), then the leaves;
* the coarsest level's integer total is the public N when it is exact, else the nearest integer
  to the optimum's total;
* going down, the cells under each parent get ``floor`` of their optimum plus one for the
  largest fractional parts, as many as their parent's integer asks for (ties by position).

**Guaranteed**: every released count is a non-negative integer; every feature's count is the
sum of released leaves, so the release is consistent by construction; each leaf, each atom and
each cell of every query on the chain is ``floor`` or ``ceil`` of its optimum (within 1); a
leaf whose optimum is 0 stays 0; the total is N exactly when N is public. A query off the chain
(``mode`` when the chain runs through ``zones``) is a sum of atoms each within 1, so its error
is below the number of atoms it holds (and the largest remainders of one chain cell balance);
the mechanism records every query's largest deviation in the ledger. (Keeping two
incomparable features both within 1 is a controlled-rounding problem that needs a flow
computation; three or more may have no solution at all.)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .._errors import InternalError
from .arrays import F64, I64

__all__ = ["apportion", "longest_chain", "round_lattice"]

#: optimum values this close to an integer are taken as that integer (solver rounding)
SNAP = 1e-9


def apportion(values: F64, parent: I64, targets: I64) -> I64:
    """Integers within 1 of ``values`` whose sums per ``parent`` are ``targets``.

    Each value gets its floor, then the largest fractional parts of each parent one more
    (ties by position) until the parent's target is met; a target below the sum of the floors
    (possible only through floating-point rounding) takes one back from the smallest fractional
    parts among the positive values.

    Example:
        >>> apportion(np.array([0.6, 0.7, 0.7, 2.0]), np.array([0, 0, 0, 1]),
        ...           np.array([2, 2])).tolist()
        [0, 1, 1, 2]
    """
    base = np.floor(values)
    rem = values - base
    out = base.astype(np.int64)
    n_parents = targets.size
    deficit = targets - np.bincount(parent, weights=out, minlength=n_parents).astype(np.int64)
    if np.any(deficit > 0):
        cand = np.flatnonzero((rem > 0.0) & (deficit[parent] > 0))
        order = cand[np.lexsort((cand, -rem[cand], parent[cand]))]
        rank = _rank_within(parent[order])
        chosen = order[rank < deficit[parent[order]]]
        out[chosen] += 1
        short = deficit - np.bincount(parent[chosen], minlength=n_parents)
        if np.any(short > 0):
            raise InternalError("rounding: a parent asks for more than its children can give")
    if np.any(deficit < 0):
        cand = np.flatnonzero((out > 0) & (deficit[parent] < 0))
        order = cand[np.lexsort((cand, rem[cand], parent[cand]))]
        rank = _rank_within(parent[order])
        chosen = order[rank < -deficit[parent[order]]]
        out[chosen] -= 1
    return out


def _rank_within(groups: I64) -> I64:
    """The position of every element within its run of equal (sorted) group labels."""
    if groups.size == 0:
        return groups
    start = np.flatnonzero(np.r_[True, groups[1:] != groups[:-1]])
    lengths = np.diff(np.r_[start, groups.size])
    return np.arange(groups.size) - np.repeat(start, lengths)


def longest_chain(sizes: Sequence[int], refines: Sequence[Sequence[bool]]) -> list[int]:
    """The longest chain of queries, coarse to fine, each refining the previous one.

    ``refines[a][b]`` says whether query ``a`` refines query ``b``. Ties go to the chain whose
    finest query has more cells.

    Example:
        >>> r = [[True, False, False, False], [True, True, False, False],
        ...      [True, True, True, False], [True, True, False, True]]
        >>> longest_chain([1, 48, 768, 576], r)
        [0, 1, 2]
    """
    order = sorted(range(len(sizes)), key=lambda q: sizes[q])
    best: dict[int, list[int]] = {}
    for q in order:
        chain = [q]
        for p in order:
            if p == q or sizes[p] >= sizes[q] or p not in best or not refines[q][p]:
                continue
            if len(best[p]) + 1 > len(chain):
                chain = [*best[p], q]
        best[q] = chain
    if not best:
        return []
    return max(best.values(), key=lambda c: (len(c), sizes[c[-1]]))


def round_lattice(x: F64, levels: Sequence[I64], *, total: int | None = None) -> I64:
    """Round the optimum ``x`` (leaves) coarse to fine through ``levels`` (module docstring).

    Args:
        x: the optimal leaf counts, ``>= 0``.
        levels: per level of the chain, coarse to fine, the cell of every leaf (dense codes);
            each level must refine the previous one.
        total: the exact total N when it is public (the first level is then the total).

    Returns:
        The integer leaves.

    Example:
        >>> x = np.array([0.5, 0.5, 0.5, 0.5, 2.0])
        >>> r = round_lattice(x, [np.array([0, 0, 1, 1, 1])])
        >>> r.tolist(), int(r.sum())
        ([1, 0, 1, 0, 2], 4)
    """
    snapped = np.where(np.abs(x - np.rint(x)) <= SNAP * (1.0 + np.abs(x)), np.rint(x), x)
    snapped = np.maximum(snapped, 0.0)
    grand = float(np.sum(snapped))
    parent_targets = np.array([int(np.rint(grand)) if total is None else int(total)])
    parent_of_leaf = np.zeros(x.size, dtype=np.int64)
    for m in levels:
        n = int(m.max()) + 1 if m.size else 0
        values = np.asarray(np.bincount(m, weights=snapped, minlength=n), np.float64)
        parent = np.zeros(n, dtype=np.int64)
        parent[m] = parent_of_leaf
        parent_targets = apportion(values, parent, parent_targets)
        parent_of_leaf = m
    return apportion(snapped, parent_of_leaf, parent_targets)
