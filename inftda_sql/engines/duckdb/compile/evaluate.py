"""``evaluate()`` and ``plot_zoom()``: the true and released cells of every level
(``sql/evaluate_cells.sql``).
"""

from __future__ import annotations

from collections.abc import Sequence

from ....core.spec import TreeSpec
from ..sql import ident, render, template
from ._common import _cols


def level_cell_columns(spec: TreeSpec, level: int) -> tuple[str, ...]:
    """The columns that identify a cell of ``level``: every column of each chain down to the
    depth the level refines it to (ancestors included, so equal codes under different parents
    stay distinct)."""
    return tuple(
        col
        for chain, depth in zip(spec.chains, spec.levels[level], strict=True)
        for col in chain[:depth]
    )


def evaluate_cells(
    spec: TreeSpec,
    truth_sql: str,
    released_sql: str,
    truth_sum: str,
    released_sum: str,
) -> str:
    """A ``WITH`` clause defining ``cells`` (``level``, true count ``t``, released count ``r``):
    one row per cell of the union of both sides, every level (the root always)."""
    parts = [template("evaluate_cells.root").rstrip()]
    for level in range(1, spec.n_levels + 1):
        cols = level_cell_columns(spec, level)
        on = " AND ".join(f"tl.{ident(c)} IS NOT DISTINCT FROM rl.{ident(c)}" for c in cols)
        parts.append(
            render("evaluate_cells.level", level=str(level), cols=_cols(cols), on=on).rstrip()
        )
    return render(
        "evaluate_cells",
        cols=_cols(spec.columns),
        truth=truth_sql,
        released=released_sql,
        truth_sum=truth_sum,
        released_sum=released_sum,
        cells="\n    UNION ALL\n".join(parts),
    ).rstrip()


def zoom_cells(cells_cte: str) -> str:
    """Every non-root cell's level, true and released count (plot_zoom())."""
    return render("evaluate_cells.zoom", cte=cells_cte)


def node_counts(chain: Sequence[str], domain_sql: str) -> str:
    """The number of nodes of every depth of a chain's domain (one row, one column per depth)."""
    counts = ", ".join(
        f"count(DISTINCT ({_cols(chain[:d])}))" if d > 1 else f"count(DISTINCT {ident(chain[0])})"
        for d in range(1, len(chain) + 1)
    )
    return render("domain_paths.node_counts", counts=counts, domain=domain_sql)
