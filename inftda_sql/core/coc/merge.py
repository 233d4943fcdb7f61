"""Top-down consistency: the groups of every parent matched to its children's, smallest to
smallest, and each matched pair merged (:func:`match_and_merge`).
"""

from __future__ import annotations

import numpy as np

from ..._errors import InternalError, SpecError
from ..arrays import F64, I64
from .histograms import _EMPTY_I, MERGES, Runs


def _ranges(lo: I64, hi: I64) -> tuple[I64, I64]:
    """The concatenation of ``range(lo[i], hi[i])`` and, for each element, its ``i``."""
    lens = hi - lo
    which = np.repeat(np.arange(lo.size), lens)
    within = np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens, lens)
    return lo[which] + within, which


def _match(parent: Runs, child: Runs, child_parent: I64) -> tuple[I64, I64, I64]:
    """Algorithm 2 on every parent at once: matched (parent run, child run, groups) triples.

    Positions: the groups of parent p, sorted by size, and the groups of all its children,
    sorted by size, both fill the same slice of the level (sum of the earlier parents' groups
    up to theirs). A *class* is the children's groups of one size under one parent; a *piece*
    is where a parent run and a class overlap. A class's pieces are split in order among its
    child runs in proportion to what each has left (largest remainder), one round per piece
    rank.
    """
    cpar = child_parent[child.node]
    order = np.lexsort((child.var, child.node, child.size, cpar))
    c_par, c_size, c_cnt = cpar[order], child.size[order], child.count[order]
    n = c_cnt.size
    if n == 0:
        return _EMPTY_I, _EMPTY_I, _EMPTY_I
    c_start = np.cumsum(c_cnt) - c_cnt
    p_start = np.cumsum(parent.count) - parent.count
    total = int(c_cnt.sum())
    if total != int(parent.count.sum()):
        raise InternalError("children and parents hold different numbers of groups")
    new = np.ones(n, dtype=bool)
    new[1:] = (c_par[1:] != c_par[:-1]) | (c_size[1:] != c_size[:-1])
    first = np.flatnonzero(new)
    class_start = c_start[first]
    class_end = np.append(first[1:], n)
    class_rem = np.add.reduceat(c_cnt, first)
    piece_start = np.union1d(class_start, p_start)
    piece_len = np.diff(np.append(piece_start, total))
    piece_prun = np.searchsorted(p_start, piece_start, side="right") - 1
    piece_class = np.searchsorted(class_start, piece_start, side="right") - 1
    if np.any(parent.node[piece_prun] != c_par[first[piece_class]]):
        raise InternalError("a parent's groups and its children's groups do not line up")
    rank = np.arange(piece_start.size) - np.searchsorted(piece_start, class_start)[piece_class]
    rem = c_cnt.copy()
    out_p, out_c, out_n = [], [], []
    by_rank = np.argsort(rank, kind="stable")
    splits = np.searchsorted(rank[by_rank], np.arange(1, int(rank.max()) + 1))
    for act in np.split(by_rank, splits):
        cls = piece_class[act]
        length = piece_len[act]
        left = class_rem[cls]
        ent, which = _ranges(first[cls], class_end[cls])
        num = length[which] * rem[ent]
        floor, frac = np.divmod(num, left[which])
        deficit = length - np.bincount(which, weights=floor, minlength=act.size).astype(np.int64)
        pos = np.lexsort((ent, -frac, which))
        seg_first = np.searchsorted(which[pos], np.arange(act.size))
        rank_in = np.arange(ent.size) - seg_first[which[pos]]
        extra = np.zeros(ent.size, dtype=np.int64)
        extra[pos] = rank_in < deficit[which[pos]]
        alloc = floor + extra
        rem[ent] -= alloc
        class_rem[cls] -= length
        got = alloc > 0
        out_p.append(piece_prun[act][which[got]])
        out_c.append(order[ent[got]])
        out_n.append(alloc[got])
    if np.any(rem != 0):
        raise InternalError("the matching left groups unmatched")
    return np.concatenate(out_p), np.concatenate(out_c), np.concatenate(out_n)


def _merge(sp: F64, vp: F64, sc: F64, vc: F64, merge: str) -> tuple[F64, F64]:
    """Combine a parent's and a child's estimate of the same groups (value, variance)."""
    if merge == "average":
        return (sp + sc) / 2.0, (vp + vc) / 4.0
    with np.errstate(divide="ignore", invalid="ignore"):
        wp, wc = 1.0 / vp, 1.0 / vc
        value = (sp * wp + sc * wc) / (wp + wc)
        var = 1.0 / (wp + wc)
    exact_p, exact_c = vp == 0.0, vc == 0.0
    value = np.where(exact_p & exact_c, (sp + sc) / 2.0, value)
    value = np.where(exact_p & ~exact_c, sp, value)
    value = np.where(exact_c & ~exact_p, sc, value)
    var = np.where(exact_p | exact_c, 0.0, var)
    return value, var


def match_and_merge(
    parent: Runs,
    child: Runs,
    child_parent: I64,
    *,
    merge: str = "weighted",
    min_size: int = 0,
    max_size: int,
) -> Runs:
    """The children's groups after matching them to their parents' (Algorithm 2) and merging
    the two estimates of each matched group (rounded, within ``[min_size, max_size]``).

    Example:
        >>> z = np.zeros
        >>> parent = Runs.build(np.array([0, 0]), np.array([1, 4]), z(2), np.array([2, 1]))
        >>> child = Runs.build(np.array([0, 1]), np.array([2, 3]), np.ones(2), np.array([2, 1]))
        >>> out = match_and_merge(parent, child, np.array([0, 0]), max_size=9)
        >>> out.node.tolist(), out.size.tolist(), out.count.tolist()
        ([0, 1], [1, 4], [2, 1])
    """
    if merge not in MERGES:
        raise SpecError(f"merge must be one of {', '.join(MERGES)}; got {merge!r}")
    p, c, k = _match(parent, child, child_parent)
    value, var = _merge(
        parent.size[p].astype(np.float64),
        parent.var[p],
        child.size[c].astype(np.float64),
        child.var[c],
        merge,
    )
    size = np.clip(np.floor(value + 0.5), min_size, max_size).astype(np.int64)
    return Runs.build(child.node[c], size, var, k)
