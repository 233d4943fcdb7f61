"""Hierarchical count-of-counts histograms (Kuo, Chiu, Kifer, Hay, Machanavajjhala; VLDB 2018).

Engine-free: the true histograms arrive as numpy arrays, the released ones leave as numpy
arrays. Persons belong to groups (households); every group sits in one leaf region; the number of
groups of every region is PUBLIC. For every node v of the hierarchy and every size j the release
gives ``H_v[j]``, the number of groups of size j in v: non-negative integers, each node's
histogram summing to its public number of groups, children summing to their parent.

**Representation.** A level's histograms are sparse (:class:`Histograms`: node, size, count;
most sizes hold no group). Estimated groups are kept as *runs* (:class:`Runs`): ``count`` groups
of one node with one estimated size and one variance estimate. Nothing is ever materialised per
group or per (node, size) of the full range except inside a bounded chunk of entries.

**Per-node estimators** (noise scales and the budget split come from
:func:`~inftda_sql.core.accounting.count_of_counts_accounting`; sizes are truncated at the
public ``max_size`` K, and ``min_size`` is the smallest size a group may have: 1 when every
listed group holds someone, the engine's check; 0 when groups may be empty):

* ``"naive"``: discrete Laplace noise (sensitivity 2) on ``H[j]``, ``j = min_size .. K``;
  the closest point (least squares) with ``H >= 0`` and ``sum H = G``, then largest-remainder
  rounding. Every empty size is noised, so this is orders of magnitude worse.
* ``"unattributed"``: noise (sensitivity 1) on the sorted group sizes ``Hg`` (length G),
  isotonic regression, clipped to ``[min_size, K]``, rounded to the nearest integer.
* ``"cumulative"`` (the paper's choice): noise (sensitivity 1) on ``Hc[j]``, the number of
  groups of size ``<= j``, for ``j = min_size .. K - 1``; both ends are fixed (``Hc[min_size -
  1] = 0``, ``Hc[K] = G``), so the isotonic fit is clipped to ``[0, G]``, rounded (a rounded
  non-decreasing sequence stays non-decreasing) and differenced.

The isotonic fits run over all nodes of a level at once, streamed in chunks of ``chunk`` entries
(:class:`~inftda_sql.core.isotonic.SegmentedIsotonic`): for 3,000 nodes and K = 100,000 the
level is 3e8 entries, but at most three chunks of them (the one fitted and the next two, whose
noise two threads draw meanwhile, each chunk from its own random source: the same draws as one
after the other) and the blocks of one open node are in memory; the chunks' arrays are reused,
not allocated afresh. The naive and cumulative estimators chunk whole nodes, so a chunk holds at
least one node's K entries; the unattributed one cuts anywhere (a root of 240M groups is
streamed). The true cumulative histogram of a node is piecewise constant; a chunk builds it
from the sparse histogram by one scatter and one cumulative sum.

**Variance of an estimated group's size** (the paper's Section 5.1; its formulas were lost in
conversion, re-derived here). ``V`` is the variance of one noise draw of the level
(:func:`~inftda_sql.core.accounting.discrete_laplace_variance`, about ``2 / epsilon_l^2``):

* unattributed: a PAV block of ``s`` entries is the mean of ``s`` noisy values: ``V / s`` for
  each of its groups;
* cumulative: ``Var(Hc[j])`` is at most ``V`` (over-estimated, ignoring the fit), so
  ``Var(H[j]) = Var(Hc[j] - Hc[j-1]) <= 2V``, shared by the ``H[j]`` groups estimated at size
  j: ``2V / H[j]`` each;
* naive: ``Var(H[j]) = V``: ``V / H[j]`` each (the same reasoning; the paper does not give one).

**Top-down consistency** (Algorithm 1). The root keeps its own estimate. For each level below,
the groups of every parent (sorted by estimated size) are matched to the groups of all its
children pooled and sorted by size (Algorithm 2: smallest to smallest, which is the optimal
matching for the cost ``|size difference|``); when the parent's next run of groups covers only
part of the children's groups of one size, it is split among those children in proportion to
what each has left, with largest-remainder rounding. Each matched pair is merged (weighted:
``(s_p / v_p + s_c / v_c) / (1 / v_p + 1 / v_c)``, variance ``1 / (1 / v_p + 1 / v_c)``; or the
naive average), rounded, and becomes the child's group for the next level. The leaves are final;
every other level is the sum of its leaves, so the release is consistent by construction.
``consistency="leaves"`` is the paper's baseline: estimate the leaves only (with the whole
budget) and add them up. Everything is vectorised over nodes and runs; the only Python loops run
over chunks, levels and the rounds of the proportional splits (one per piece of a size class).

The modules: :mod:`.histograms` (the data), :mod:`.estimators` (per node), :mod:`.merge`
(top-down matching), :mod:`.release` (the whole release, the error) and :mod:`.memory` (the
working memory of a chunk, checked before the data is read). Import the names from
this package, which re-exports them.
"""

from __future__ import annotations

from .estimators import estimate_level
from .histograms import CONSISTENCY, MERGES, CocLevel, CocLevelStats, CocResult, Histograms, Runs
from .histograms import DEFAULT_CHUNK as DEFAULT_CHUNK
from .levels import (
    found_vs_listed,
    node_parents,
    public_groups,
    truncate_sizes,
    with_empty_groups,
)
from .memory import BYTES_PER_ENTRY, check_memory, chunk_entries, size_limit
from .merge import match_and_merge
from .release import count_of_counts, emd_per_node, levels_from_leaves

__all__ = [
    "BYTES_PER_ENTRY",
    "CONSISTENCY",
    "MERGES",
    "CocLevel",
    "CocLevelStats",
    "CocResult",
    "Histograms",
    "Runs",
    "check_memory",
    "chunk_entries",
    "count_of_counts",
    "emd_per_node",
    "estimate_level",
    "found_vs_listed",
    "levels_from_leaves",
    "match_and_merge",
    "node_parents",
    "public_groups",
    "size_limit",
    "truncate_sizes",
    "with_empty_groups",
]
