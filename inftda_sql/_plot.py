"""Pictures of a release's accuracy: per-level metrics and the "zoom" scatter of every level,
and the error bounds of a release.

The first two read evaluation results, which are computed from the TRUE data: like
:func:`evaluate`, they are for the data owner and are not to be published. :func:`plot_bounds`
reads only the levels view (released counts and public bounds): it may be published.
matplotlib is an optional dependency (``pip install 'inftda-sql[plot]'``), imported only when a
function here is called; figures are drawn on an explicit Agg canvas, so no global pyplot state
or GUI backend is touched.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import numpy as np
import pyarrow as pa

from ._errors import SpecError
from ._evaluate import EVALUATION_COLUMNS, Evaluation, compared_cells
from ._interrupts import critical
from ._recorded import truth_reading
from .core.spec import parse_hierarchy
from .engines.duckdb import compile as _compile
from .engines.duckdb.catalog import lookup
from .engines.duckdb.connection import require_open
from .engines.duckdb.sql import arrow, ident, render, rows

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["plot_bounds", "plot_evaluation", "plot_zoom"]

_INSTALL = "plotting needs matplotlib, an optional dependency: pip install 'inftda-sql[plot]'"

#: readable axis titles of the metrics evaluate() returns
METRIC_TITLES = {
    "max_abs_error": "maximum absolute error",
    "mean_abs_error": "mean absolute error",
    "false_discovery_rate": "false discovery rate (%)",
    "false_negative_rate": "false negative rate (%)",
    "cells_true": "true cells > 0",
    "cells_released": "released cells > 0",
}
_RATES = ("false_discovery_rate", "false_negative_rate")


def _figure(width: float, height: float) -> Figure:
    """A figure on an explicit Agg canvas (matplotlib imported here, lazily)."""
    try:
        with critical():  # a Ctrl-C here is not a missing matplotlib
            from matplotlib.backends.backend_agg import FigureCanvasAgg
            from matplotlib.figure import Figure
    except ImportError as exc:  # pragma: no cover - exercised by monkeypatching in the tests
        raise ImportError(_INSTALL) from exc
    fig = Figure(figsize=(width, height), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _save(fig: Figure, path: str | Path) -> Path:
    out = Path(path)
    if out.suffix.lower() != ".png":
        raise SpecError(f"plots are written as PNG; give a path ending in .png, got {str(out)!r}")
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, format="png")
    return out


def _as_table(evaluation: object) -> pa.Table:
    if isinstance(evaluation, Evaluation):
        table = evaluation.table
    elif isinstance(evaluation, duckdb.DuckDBPyRelation):
        table = evaluation.to_arrow_table()
    elif isinstance(evaluation, pa.Table):
        table = evaluation
    else:
        raise SpecError(
            "evaluation must be the relation evaluate() returns (or an Arrow table of it), or a "
            f"list of them; got {type(evaluation).__name__}"
        )
    missing = [c for c in ("level", "level_name") if c not in table.column_names]
    if missing:
        raise SpecError(
            f"evaluation has no column {missing[0]!r}; pass the result of evaluate() "
            f"(columns {', '.join(EVALUATION_COLUMNS)})"
        )
    return table.sort_by("level")


def _values(table: pa.Table, metric: str) -> np.ndarray:
    if metric not in table.column_names:
        raise SpecError(
            f"metric {metric!r} is not a column of the evaluation; choose from "
            f"{', '.join(c for c in EVALUATION_COLUMNS if c not in ('level', 'level_name'))}"
        )
    values = np.asarray(table.column(metric).to_numpy(zero_copy_only=False), dtype=np.float64)
    return values * 100.0 if metric in _RATES else values


def _level_ticks(ax: Axes, levels: Sequence[int], names: Sequence[str]) -> None:
    ax.set_xticks(list(levels))
    many = len(levels) > 8
    ax.set_xticklabels(
        [f"{lv}: {name}" for lv, name in zip(levels, names, strict=True)],
        rotation=60 if many else 35,
        ha="right",
        fontsize=7 if many else 8,
    )
    ax.set_xlabel("level of the tree (coarse to fine)")
    ax.grid(True, alpha=0.3)


def plot_evaluation(
    evaluation: Any,
    path: str | Path,
    *,
    title: str | None = None,
    label: str | Sequence[str] | None = None,
    metrics: Sequence[str] = ("max_abs_error", "false_discovery_rate"),
) -> Path:
    """Draw per-level metrics of :func:`~inftda_sql.evaluate` results into a PNG.

    One panel per metric (by default the maximum absolute error, on a log scale, and the false
    discovery rate), the level on the x axis. ``evaluation`` is one result of ``evaluate()`` or
    a list of them; with a list, ``label`` gives one label per result (a mechanism, a budget) and
    results that share a label are drawn as their mean with a min-max band (repetitions).

    Evaluations are computed from the TRUE data: this picture is for the data owner.

    Args:
        evaluation: a relation (or Arrow table) returned by ``evaluate()``, or a list of them.
        path: the PNG file to write (parent folders are created).
        title: the figure title.
        label: the legend label of a single evaluation, or one label per evaluation of a list.
        metrics: columns of the evaluation to draw, one panel each.

    Returns:
        The path of the PNG written.
    """
    if isinstance(evaluation, (Evaluation, duckdb.DuckDBPyRelation, pa.Table)):
        evaluations = [evaluation]
    elif isinstance(evaluation, Sequence) and not isinstance(evaluation, str) and evaluation:
        evaluations = list(evaluation)
    else:
        raise SpecError(
            "evaluation must be the relation evaluate() returns, or a non-empty list of them; "
            f"got {evaluation!r}"
        )
    labels: list[str | None]
    labels = [label] * len(evaluations) if label is None or isinstance(label, str) else list(label)
    if len(labels) != len(evaluations):
        raise SpecError(
            f"label must give one label per evaluation: {len(evaluations)} evaluation(s), "
            f"{len(labels)} label(s)"
        )
    if not metrics:
        raise SpecError("metrics must name at least one column of the evaluation")
    tables = [_as_table(e) for e in evaluations]
    groups: dict[str | None, list[pa.Table]] = {}
    for lab, table in zip(labels, tables, strict=True):
        groups.setdefault(lab, []).append(table)

    fig = _figure(5.2 * len(metrics), 4.4)
    axes = fig.subplots(1, len(metrics), squeeze=False)[0]
    for ax, metric in zip(axes, metrics, strict=True):
        positive = True
        for i, (lab, group) in enumerate(groups.items()):
            levels = group[0].column("level").to_pylist()
            for other in group[1:]:
                if other.column("level").to_pylist() != levels:
                    raise SpecError(
                        f"evaluations labelled {lab!r} have different levels; compare runs of "
                        "the same hierarchy and tree under one label"
                    )
            stack = np.vstack([_values(t, metric) for t in group])
            mean = stack.mean(axis=0)
            color = f"C{i % 10}"
            ax.plot(levels, mean, marker="o", ms=4, color=color, label=lab)
            if len(group) > 1:
                ax.fill_between(
                    levels, stack.min(axis=0), stack.max(axis=0), color=color, alpha=0.2, lw=0
                )
            positive = positive and bool(np.all(stack > 0))
        if metric in ("max_abs_error", "mean_abs_error"):
            if positive:
                ax.set_yscale("log")
            else:
                ax.set_yscale("symlog", linthresh=1.0)
                ax.set_ylim(bottom=0)
        elif metric in _RATES:
            ax.set_ylim(-2, 102)
        first = next(iter(groups.values()))[0]
        _level_ticks(ax, first.column("level").to_pylist(), first.column("level_name").to_pylist())
        ax.set_title(METRIC_TITLES.get(metric, metric), fontsize=10)
        if any(lab is not None for lab in groups):
            ax.legend(fontsize=8)
    if title:
        fig.suptitle(title)
    if any(len(group) > 1 for group in groups.values()):
        fig.text(
            0.995, 0.005, "lines: mean over repetitions; bands: min to max",
            ha="right", va="bottom", fontsize=7, color="0.4",
        )  # fmt: skip
    return _save(fig, path)


def _zoom_position(values: np.ndarray, zero_at: float) -> np.ndarray:
    """Log-axis positions: values <= 0 are drawn on the ``zero_at`` line below the positives."""
    return np.where(values > 0, values, zero_at)


def plot_zoom(
    con: duckdb.DuckDBPyConnection,
    truth: str | duckdb.DuckDBPyRelation,
    released: str | duckdb.DuckDBPyRelation,
    path: str | Path,
    /,
    *,
    hierarchy: Sequence[str] | Sequence[Sequence[str]],
    tree: str | None = None,
    count: str | None = None,
    released_count: str = "count",
    max_points_per_level: int = 5000,
    title: str | None = None,
    seed: int = 0,
) -> Path:
    """The map-free "zoom" picture: per level, released vs true count of every cell.

    One small panel per level below the root (coarse to fine), log-log, with the line y = x:
    points on the line are exact, and the cloud widens as the levels get finer. Cells that are
    zero (or missing) on one side are drawn on the "0" line at the bottom (false discoveries,
    red) or at the left (false negatives, orange). Levels with more cells than
    ``max_points_per_level`` show a uniform sample of them (seeded) plus the 50 cells with the
    largest errors, and say so.

    The picture is computed from the TRUE data (like :func:`~inftda_sql.evaluate`): it is for
    the data owner and is not to be published.

    Args:
        con, truth, released, hierarchy, tree, count, released_count: as for ``evaluate()``.
        path: the PNG file to write.
        max_points_per_level: at most this many points per panel.
        title: the figure title.
        seed: seed of the subsample of large levels.

    Returns:
        The path of the PNG written.
    """
    require_open(con, "plot_zoom")
    if isinstance(max_points_per_level, bool) or not isinstance(max_points_per_level, int):
        raise SpecError(f"max_points_per_level must be an integer, got {max_points_per_level!r}")
    if max_points_per_level < 100:
        raise SpecError(f"max_points_per_level must be at least 100, got {max_points_per_level}")
    spec = parse_hierarchy(hierarchy, tree)
    count, _ = truth_reading(con, truth, released, count)  # a release's input: as it read it
    with compared_cells(con, truth, released, spec, count, released_count) as (cte, _):
        cells = arrow(con, _compile.zoom_cells(cte))
    level = cells.column("level").to_numpy(zero_copy_only=False).astype(np.int64)
    t_all = cells.column("t").to_numpy(zero_copy_only=False).astype(np.float64)
    r_all = cells.column("r").to_numpy(zero_copy_only=False).astype(np.float64)
    rng = np.random.default_rng(seed)

    n_panels = spec.n_levels
    ncols = min(4, n_panels)
    nrows = math.ceil(n_panels / ncols)
    fig = _figure(3.3 * ncols, 3.2 * nrows + 0.4)
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    bounds = np.searchsorted(level, np.arange(1, n_panels + 2))
    for i in range(n_panels):
        ax = axes[i]
        lo, hi = bounds[i], bounds[i + 1]
        t, r = t_all[lo:hi], r_all[lo:hi]
        n = t.size
        sampled = n > max_points_per_level
        if sampled:
            worst = np.argsort(np.abs(t - r))[-50:]
            pick = rng.choice(n, size=max_points_per_level - worst.size, replace=False)
            keep = np.union1d(pick, worst)
            t, r = t[keep], r[keep]
        top = max(float(np.max(t, initial=1.0)), float(np.max(r, initial=1.0)), 1.0)
        zero_at = 0.5
        tx, ry = _zoom_position(t, zero_at), _zoom_position(r, zero_at)
        ok = (t > 0) & (r > 0)
        fd = (t <= 0) & (r > 0)
        fn = (t > 0) & (r <= 0)
        style = {"s": 6, "alpha": 0.5, "linewidths": 0}
        ax.scatter(tx[ok], ry[ok], color="C0", label="both > 0", **style)
        ax.scatter(tx[fd], ry[fd], color="C3", label="false discovery", **style)
        ax.scatter(tx[fn], ry[fn], color="C1", label="false negative", **style)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(zero_at / 1.6, top * 1.6)
        ax.set_ylim(zero_at / 1.6, top * 1.6)
        ax.plot([1, top], [1, top], color="k", lw=0.8, alpha=0.6)
        ax.axhline(0.75, color="grey", lw=0.5, ls=":")
        ax.axvline(0.75, color="grey", lw=0.5, ls=":")
        ticks = [zero_at] + [10.0**k for k in range(0, int(math.log10(top)) + 1)]
        labels = ["0"] + [_tick(v) for v in ticks[1:]]
        ax.set_xticks(ticks, labels, fontsize=7)
        ax.set_yticks(ticks, labels, fontsize=7)
        ax.minorticks_off()
        err = float(np.max(np.abs(t_all[lo:hi] - r_all[lo:hi]), initial=0.0))
        note = f", {max_points_per_level:,} shown" if sampled else ""
        ax.set_title(
            f"level {i + 1}: {spec.level_name(i + 1)}\n{n:,} cells{note}, max err {err:,.0f}",
            fontsize=8,
        )
        if i % ncols == 0:
            ax.set_ylabel("released count", fontsize=8)
        if i >= n_panels - ncols:
            ax.set_xlabel("true count", fontsize=8)
        if i == 0:
            ax.legend(fontsize=6, loc="upper left", markerscale=2)
    for ax in axes[n_panels:]:
        ax.set_visible(False)
    fig.suptitle(title or "released vs true count per cell, level by level (zoom in)")
    return _save(fig, path)


def _tick(value: float) -> str:
    if value >= 1e6:
        return f"{value / 1e6:g}M"
    if value >= 1e3:
        return f"{value / 1e3:g}k"
    return f"{value:g}"


def plot_bounds(
    con: duckdb.DuckDBPyConnection,
    levels_view: str,
    path: str | Path,
    *,
    level: int | None = None,
    cells: int = 20,
) -> Path:
    """The error bounds of a release, from its levels view (public values only: this picture
    may be published with the table).

    Left: per level, the bound of every released count (``error_bound``, holding for all
    cells at once with probability >= 1 - beta) and the typical largest error of the level
    (``typical_error``, from a simulation on synthetic data of the same shape). Right: the
    ``cells`` largest released counts of ``level`` (default the finest) with their interval
    ``[max(0, count - bound), count + bound]``.

    Args:
        con: the database holding the levels view (or the published file).
        levels_view: the view (``<output>_levels``) of a release made with bounds.
        path: where to write the PNG.
        level: the level whose cells are drawn (default the finest).
        cells: how many of its largest counts to draw.
    """
    found = lookup(con, levels_view, param="levels_view", role="levels view")
    if found is None:
        raise SpecError(
            f"{levels_view!r} is not a table or view of this database", param="levels_view"
        )
    ref = found[0]
    columns = [r[0] for r in rows(con, _compile.describe(ref.sql))]
    if "error_bound" not in columns:
        raise SpecError(
            f"{levels_view!r} has no error_bound column: it is not the levels view of a release "
            "made with error bounds (release again with this version)",
            param="levels_view",
        )
    per_level = rows(con, render("levels_view.per_level", view=ref.sql))
    if not per_level:
        raise SpecError(f"{levels_view!r} is empty: nothing to draw", param="levels_view")
    levels = [int(r[0]) for r in per_level]
    chosen = levels[-1] if level is None else int(level)
    if chosen not in levels:
        raise SpecError(
            f"level {level!r} is not in {levels_view!r}; its levels are {levels}", param="level"
        )
    hier = [
        c
        for c in columns
        if c not in ("level", "level_name", "count", "error_bound", "typical_error")
    ]
    label = " || ' / ' || ".join(f"coalesce(CAST({ident(c)} AS VARCHAR), '')" for c in hier)
    sql = render(
        "levels_view.top_cells", label=label or "''", view=ref.sql, limit=str(max(int(cells), 1))
    )
    top = rows(con, sql, {"level": chosen})
    fig = _figure(11.0, 4.2)
    left, right = fig.subplots(1, 2)
    bound = np.array([np.nan if r[2] is None else float(r[2]) for r in per_level])
    typical = np.array([np.nan if r[3] is None else float(r[3]) for r in per_level])
    left.plot(levels, bound, "o-", label="error bound (every cell, prob. >= 1 - beta)")
    if not np.all(np.isnan(typical)):
        left.plot(levels, typical, "s--", label="typical largest error (simulated)")
    left.set_ylabel("absolute error (records)")
    left.set_title("error bound per level")
    _level_ticks(left, levels, [str(r[1]) for r in per_level])
    left.legend(fontsize=8)
    names = [str(r[0]).strip(" /") or "(root)" for r in top]
    counts = np.array([float(r[1]) for r in top])
    width = np.array([0.0 if r[2] is None else float(r[2]) for r in top])
    low = np.minimum(width, counts)  # the interval is clipped at 0: counts are non-negative
    ypos = np.arange(len(top))[::-1]
    right.errorbar(counts, ypos, xerr=[low, width], fmt="o", capsize=3)
    right.set_yticks(ypos)
    right.set_yticklabels(names, fontsize=7)
    right.set_xlabel("released count with its interval")
    name = next(str(r[1]) for r in per_level if int(r[0]) == chosen)
    right.set_title(f"largest {len(top)} cells of level {chosen} ({name})")
    right.grid(True, alpha=0.3)
    return _save(fig, path)
