"""The noisy measurements of a TopDown release (``measurements=True``): every noisy value the
mechanism drew, before any post-processing.

**Which values.** TopDown noises, level by level, the children of every *surviving* parent
(released > 0) that has more than one child in the public domain: ``y = true count + discrete
Gaussian noise`` of the level's sigma, zero-count children included (the root too, in unbounded
DP). Children of a pruned parent (released 0) are never measured: they are 0 by
post-processing. An only child is its parent's value, measured as such: nothing is drawn.

**Why they are private.** They are the mechanism's own output: the release is a function of
them (and of public values) alone, and the privacy proof of TopDown covers the measurements
themselves, adaptively chosen (which parents survive is decided by earlier noisy values). So
publishing them costs no extra budget; what is measured depends only on released values and the
public domain.

**The table** (``<output>_measurements``): ``level``, ``level_name``, the hierarchy columns of
the measured cell (NULL below its level, as in the levels view), ``noisy`` (the measurement),
``sigma`` (its noise), ``parent_count`` (the released value of the parent it was measured under,
whose cell is the same with the refined column one step coarser; NULL for the root). Feeding
each parent's measured children and ``parent_count`` to the mechanism's step (IntOpt for
InfTDA) level by level reproduces the release.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from .arrays import I64
from .sorting import lex_order
from .spec import TreeSpec
from .tree import ChainTree

__all__ = ["Collector"]


class Collector:
    """A :data:`~inftda_sql.core.topdown.Measure` that keeps every measurement (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._parts: list[tuple[int, float, list[I64], I64, I64]] = []

    def __call__(
        self, level: int, sigma: float, codes: Sequence[I64], noisy: I64, parents: I64
    ) -> None:
        part = (level, sigma, [np.asarray(c, dtype=np.int64) for c in codes], noisy, parents)
        with self._lock:
            self._parts.append(part)

    def __len__(self) -> int:
        return sum(int(p[3].size) for p in self._parts)

    def table(
        self, spec: TreeSpec, chains: Sequence[ChainTree], paths: Sequence[pa.Table]
    ) -> pa.Table:
        """The measurements decoded into the hierarchy's columns (``paths``: every chain's coded
        domain, row ``i`` the leaf of code ``i``), in level then cell order."""
        k = len(spec.chains)
        parts = sorted(self._parts, key=lambda p: p[0])
        columns: dict[str, list[pa.Array]] = {col: [] for col in spec.columns}
        level_col, name_col, noisy, sigma, parent = [], [], [], [], []
        for level in sorted({p[0] for p in parts}):
            mine = [p for p in parts if p[0] == level]
            codes = [np.concatenate([p[2][c] for p in mine]) for c in range(k)]
            depths = spec.levels[level]
            sizes = [chains[c].sizes[depths[c]] for c in range(k)]
            order = lex_order(codes, sizes)  # None: in cell order already

            def in_order(values: I64, order: I64 | None = order) -> I64:
                return values if order is None else values[order]

            codes = [in_order(c) for c in codes]
            n = int(codes[0].size)
            for c, chain in enumerate(spec.chains):
                leaf = _first_leaf(chains[c], depths[c], codes[c])
                for d, col in enumerate(chain):
                    if d < depths[c]:
                        columns[col].append(paths[c].column(col).take(pa.array(leaf)))
                    else:
                        columns[col].append(pa.nulls(n, paths[c].schema.field(col).type))
            level_col.append(np.full(n, level, dtype=np.int32))
            name_col += [spec.level_name(level)] * n
            noisy.append(in_order(np.concatenate([p[3] for p in mine])))
            sigma.append(np.full(n, mine[0][1]))
            parent.append(in_order(np.concatenate([p[4] for p in mine])))
        if not level_col:
            empty = {
                col: pa.array([], type=p.schema.field(col).type)
                for p, ch in zip(paths, spec.chains, strict=True)
                for col in ch
            }
            return pa.table(
                {
                    "level": pa.array([], pa.int32()),
                    "level_name": pa.array([], pa.string()),
                    **empty,
                    "noisy": pa.array([], pa.int64()),
                    "sigma": pa.array([], pa.float64()),
                    "parent_count": pa.array([], pa.int64()),
                }
            )
        parents = np.concatenate(parent)
        out: dict[str, pa.Array | pa.ChunkedArray] = {
            "level": pa.array(np.concatenate(level_col)),
            "level_name": pa.array(name_col, pa.string()),
        }
        for col in spec.columns:
            out[col] = pa.chunked_array(columns[col])
        out["noisy"] = pa.array(np.concatenate(noisy))
        out["sigma"] = pa.array(np.concatenate(sigma))
        out["parent_count"] = pa.array(parents, mask=parents < 0)
        return pa.table(out)


def _first_leaf(chain: ChainTree, depth: int, codes: I64) -> I64:
    """The first leaf code under each depth-``depth`` node (codes of the domain are sorted by
    path, so the node's path is that leaf's prefix)."""
    out = codes
    for d in range(depth + 1, len(chain.sizes)):
        out = chain.child_offsets[d][out]
    return out
