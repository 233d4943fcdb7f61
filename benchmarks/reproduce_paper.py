"""Reproduce the experiments of the PETS 2025 InfTDA paper (section 5) with inftda_sql.

    .venv/bin/python benchmarks/reproduce_paper.py              # full run, results in paper/
    .venv/bin/python benchmarks/reproduce_paper.py --quick      # ~1.5 min, in paper/quick/
    .venv/bin/python benchmarks/reproduce_paper.py --resume     # add only the missing runs
    .venv/bin/python benchmarks/reproduce_paper.py --plot-only  # redraw from the saved runs

Datasets: the six synthetic ones of the paper's Table 1 (``inftda_sql.synthetic.paper_dataset``)
and two real ones from ``../shared/data`` (Portugal municipalities, UK MSOAs; the paper's
Italian data is not public). Every available mechanism runs on every dataset at epsilon 0.1, 1
and 10 (delta 1e-8, the simple Bun-Steinke conversion as in the paper, rho split uniformly over
the noised levels, bounded DP, one trip per user), destination tree, ``--reps`` seeds each;
InfTDA also runs with the tight conversion at the same (epsilon, delta) (not in the paper).
Every run is scored with ``inftda_sql.evaluate`` (max/mean absolute error, false discovery and
false negative rate per level) and timed (wall clock of ``release()``).

Mechanisms that ``release()`` does not implement yet are skipped and reported; so are runs that
cannot finish in reasonable time on 2 cores: full-domain mechanisms above ``--max-cells`` leaf
cells, and runs that do not fit the time budget of a mechanism on a dataset
(``--budget-seconds``, see :class:`TimeBudget`; it binds only for the per-parent MILP solver).
The reasons are stored with the results. Seeds make the runs reproducible: they are benchmark
runs, NOT private releases.

Outputs (in ``--out``): ``runs.jsonl`` (one line per run), ``skips.json``, one figure per dataset
(``<dataset>.png``: max absolute error and false discovery rate per level, one column per epsilon,
one line per mechanism, min-max bands over the seeds), ``<dataset>_time.png``, ``tight.png`` (error
reduction of the tight conversion) and ``summary.md`` (the numbers PAPER.md quotes).
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import platform
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

import inftda_sql
from inftda_sql._evaluate import evaluate
from inftda_sql._plot import plot_zoom
from inftda_sql.synthetic import paper_dataset

HERE = Path(__file__).resolve().parent

SHARED = HERE.parent.parent / "shared" / "data"
DELTA = 1e-8
EPSILONS = (0.1, 1.0, 10.0)
#: paper order; hierarchical (Hay et al.) is not in the paper but is run when available
MECHANISMS = (
    "inftda",
    "tda_l2",
    "tda_linf_solver",
    "stability_histogram",
    "vanilla_gauss",
    "hierarchical",
)
TOPDOWN = ("inftda", "tda_l2", "tda_linf_solver")
LABELS = {
    "inftda": "InfTDA",
    "inftda_tight": "InfTDA (tight conv.)",
    "tda_l2": "TDA-L2",
    "tda_linf_solver": "TDA-Linf (solver)",
    "stability_histogram": "SH",
    "vanilla_gauss": "VanillaGauss",
    "hierarchical": "Hierarchical",
}
COLORS = {
    "inftda": "C0",
    "inftda_tight": "C9",
    "tda_l2": "C1",
    "tda_linf_solver": "C2",
    "stability_histogram": "C3",
    "vanilla_gauss": "C4",
    "hierarchical": "C5",
}
SYNTHETIC = tuple(f"{k}_{d}" for k in ("binary", "random") for d in ("complete", "dense", "sparse"))
REAL = ("portugal", "uk")
#: runs we do not attempt, with the reason (none now: TimeBudget decides)
STATIC_SKIPS: dict[tuple[str, str], str] = {}
FULL_DOMAIN = ("vanilla_gauss", "hierarchical")


@dataclass(frozen=True)
class Dataset:
    name: str
    title: str
    table: str
    hierarchy: list[list[str]]
    domain: list[str]
    count: str
    pairs: int
    users: int
    leaf_domain: int


def _load_synthetic(con: duckdb.DuckDBPyConnection, name: str) -> Dataset:
    kind, density = name.split("_")
    d = paper_dataset(con, kind, density, seed=0, prefix=f"{name}_")
    return Dataset(
        name=name,
        title=f"{kind} {density} (synthetic, {len(d.level_columns)} levels per side)",
        table=d.trips,
        hierarchy=d.hierarchy,
        domain=[d.geo_origin, d.geo_destination],
        count="n",
        pairs=d.pairs,
        users=d.users,
        leaf_domain=d.areas**2,
    )


def _load_real(con: duckdb.DuckDBPyConnection, name: str) -> Dataset:
    stem, levels, title = {
        "portugal": (
            "pt_census2021_commuting_muni",
            ["country", "district", "municipality"],
            "Portugal commuting (country > district > municipality)",
        ),
        "uk": (
            "uk_ew_census2021_odwp01_msoa",
            ["country", "region", "lad", "msoa"],
            "UK (E&W) commuting (country > region > LAD > MSOA)",
        ),
    }[name]
    data, geo = SHARED / f"{stem}.parquet", SHARED / f"{stem}_geo.parquet"
    if not data.exists():
        raise FileNotFoundError(f"{data} not found: the real datasets live in ../shared/data")
    con.execute(f"CREATE TABLE {name}_trips AS SELECT * FROM '{data}'").fetchall()
    con.execute(f"CREATE TABLE {name}_geo AS SELECT * FROM '{geo}'").fetchall()
    for side in ("o", "d"):
        cols = ", ".join(f"{c} AS {side}_{c}" for c in levels)
        con.execute(f"CREATE VIEW {name}_geo_{side} AS SELECT {cols} FROM {name}_geo").fetchall()
    pairs, users = con.execute(f"SELECT count(*), sum(count) FROM {name}_trips").fetchall()[0]
    leaves = con.execute(f"SELECT count(*) FROM {name}_geo").fetchall()[0][0]
    return Dataset(
        name=name,
        title=title,
        table=f"{name}_trips",
        hierarchy=[[f"o_{c}" for c in levels], [f"d_{c}" for c in levels]],
        domain=[f"{name}_geo_o", f"{name}_geo_d"],
        count="count",
        pairs=int(pairs),
        users=int(users),
        leaf_domain=int(leaves) ** 2,
    )


def load(con: duckdb.DuckDBPyConnection, name: str) -> Dataset:
    return _load_synthetic(con, name) if name in SYNTHETIC else _load_real(con, name)


def probe_mechanisms(wanted: Iterable[str]) -> tuple[list[str], dict[str, str]]:
    """Which mechanisms release() runs now (a tiny release each); the others with the reason."""
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE g AS SELECT * FROM (VALUES ('a','a1'),('a','a2'),('b','b1')) t(r, c)"
    ).fetchall()
    con.execute(
        "CREATE TABLE p AS SELECT * FROM (VALUES ('a','a1',3),('b','b1',2)) t(r, c, n)"
    ).fetchall()
    ok, missing = [], {}
    for mech in wanted:
        try:
            inftda_sql.release(
                con,
                "p",
                hierarchy=["r", "c"],
                domain="g",
                epsilon=1.0,
                delta=DELTA,
                mechanism=mech,
                count="n",
                output="o",
                overwrite=True,
                seed=0,
                levels_view=False,
            )
        except Exception as exc:  # any failure means: not usable here
            missing[mech] = f"{type(exc).__name__}: {exc}"
        else:
            ok.append(mech)
    con.close()
    return ok, missing


def run_key(run: dict[str, Any]) -> tuple[Any, ...]:
    return (run["dataset"], run["variant"], run["epsilon"], run["seed"])


def one_run(
    con: duckdb.DuckDBPyConnection,
    ds: Dataset,
    mechanism: str,
    conversion: str,
    epsilon: float,
    seed: int,
) -> dict[str, Any]:
    t0 = time.perf_counter()
    r = inftda_sql.release(
        con,
        ds.table,
        hierarchy=ds.hierarchy,
        domain=ds.domain,
        tree="destination",
        epsilon=epsilon,
        delta=DELTA,
        conversion=conversion,
        count=ds.count,
        mechanism=mechanism,
        output="released",
        overwrite=True,
        seed=seed,
        levels_view=False,
    )
    seconds = time.perf_counter() - t0
    t1 = time.perf_counter()
    ev = evaluate(
        con, ds.table, "released", hierarchy=ds.hierarchy, tree="destination", count=ds.count
    )
    cols = ev.columns
    levels = [dict(zip(cols, row, strict=True)) for row in ev.fetchall()]
    return {
        "dataset": ds.name,
        "mechanism": mechanism,
        "conversion": conversion,
        "variant": mechanism if conversion == "simple" else f"{mechanism}_{conversion}",
        "epsilon": epsilon,
        "delta": DELTA,
        "seed": seed,
        "rho": r.accounting.budget.rho,
        "seconds": seconds,
        "stages": {k: round(v, 4) for k, v in r.timings.items()},
        "parents": sum(lv.parents for lv in r.levels),
        "evaluate_seconds": time.perf_counter() - t1,
        "levels": [
            {k: (float(v) if isinstance(v, float) else v) for k, v in lv.items()} for lv in levels
        ],
    }


SOLVER = ("tda_linf_solver",)


def ordered_epsilons(epsilons: Sequence[float]) -> list[float]:
    """Epsilon 1 first (the paper's headline budget), then the others in the given order."""
    return sorted(epsilons, key=lambda e: e != 1.0)


@functools.cache
def milp_cost() -> float:
    """Seconds one MILP solve of a small parent takes here (median of 30, 6 children)."""
    from inftda_sql.mechanisms import tda_linf_solver as _baselines

    rng = np.random.default_rng(0)
    times = []
    for _ in range(30):
        y = rng.integers(-5, 30, size=6).astype(np.int64)
        t0 = time.perf_counter()
        _baselines.linf_milp_optimizer(y, np.array([50], np.int64), np.array([0], np.int64))
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


class TimeBudget:
    """Time allowed for all runs of one (dataset, mechanism), shared out over the epsilons.

    Each epsilon gets an equal share of what is left when it starts. Its first run goes ahead
    if the expected time (the measured time of the last run, or a prediction for the MILP
    solver: InfTDA's parents x the time of one solve / 2 threads) fits the share, or, for the first
    epsilon, the whole budget; further seeds run while they fit the share. Anything not run
    is reported with the reason.
    """

    def __init__(self, seconds: float, epsilons: Sequence[float]) -> None:
        self.total, self.epsilons = seconds, list(epsilons)
        self.used = 0.0
        self.by_eps: dict[float, float] = defaultdict(float)
        self.last: float | None = None
        self.share: dict[float, float] = {}

    def allow(self, eps: float, seed: int, predicted: float | None) -> str | None:
        """None if the next run fits, else the reason it does not."""
        if eps not in self.share:
            left = len(self.epsilons) - self.epsilons.index(eps)
            self.share[eps] = (self.total - self.used) / left
        expected = self.last if self.last is not None else predicted
        if expected is None:
            return None
        first = eps == self.epsilons[0]
        room = self.total - self.used if first and seed == 0 else self.share[eps] - self.by_eps[eps]
        if seed == 0 and expected > room:
            how = "predicted" if self.last is None else "the last run took"
            return (
                f"not run: {how} {expected:,.0f} s, more than the {room:,.0f} s left of "
                f"the {self.total:,.0f} s budget of this mechanism on this dataset "
                "(--budget-seconds)"
            )
        if seed > 0 and self.by_eps[eps] + expected > self.share[eps]:
            return (
                f"{seed} repetition(s) only: the last run took {expected:,.0f} s and this "
                f"epsilon's share of the budget (--budget-seconds) is {self.share[eps]:,.0f} s"
            )
        return None

    def spent(self, eps: float, seconds: float) -> None:
        self.used += seconds
        self.by_eps[eps] += seconds
        self.last = seconds


def zoom(con: duckdb.DuckDBPyConnection, ds: Dataset, out: Path, epsilon: float = 1.0) -> None:
    """The zoom picture of one InfTDA release (epsilon 1, seed 0) of a dataset."""
    inftda_sql.release(
        con, ds.table, hierarchy=ds.hierarchy, domain=ds.domain, tree="destination",
        epsilon=epsilon, delta=DELTA, conversion="simple", count=ds.count, output="released",
        overwrite=True, seed=0, levels_view=False,
    )  # fmt: skip
    path = plot_zoom(
        con, ds.table, "released", out / f"{ds.name}_zoom.png", hierarchy=ds.hierarchy,
        tree="destination", count=ds.count, max_points_per_level=3000,
        title=f"{ds.title}: InfTDA, epsilon {epsilon:g}, delta 1e-8, one run",
    )  # fmt: skip
    print(f"  wrote {path}", flush=True)


def run_all(args: argparse.Namespace, out: Path) -> None:
    runs_path, skips_path = out / "runs.jsonl", out / "skips.json"
    done: dict[tuple[Any, ...], float] = {}  # saved runs (with --resume) and their seconds
    if args.resume and runs_path.exists():
        for line in runs_path.read_text().splitlines():
            if line:
                saved = json.loads(line)
                done[run_key(saved)] = saved["seconds"]
    elif runs_path.exists():
        runs_path.unlink()
    skips: dict[str, str] = (
        json.loads(skips_path.read_text()) if args.resume and skips_path.exists() else {}
    )
    # parents InfTDA optimised per (dataset, epsilon), seed 0: predicts the MILP solver's cost
    parents: dict[tuple[str, float], int] = {}
    if args.resume and runs_path.exists():
        for line in runs_path.read_text().splitlines():
            run = json.loads(line) if line else None
            if run and run["variant"] == "inftda" and run["seed"] == 0:
                parents[run["dataset"], run["epsilon"]] = run["parents"]
    available, missing = probe_mechanisms(args.mechanisms)
    for mech, why in missing.items():
        print(f"mechanism {mech} unavailable: {why}", flush=True)
        skips[f"*/{mech}"] = f"not available in release(): {why}"
    for mech in available:
        skips.pop(f"*/{mech}", None)
    variants = [(m, "simple") for m in available]
    if "inftda" in available and not args.no_tight:
        variants.append(("inftda", "tight"))

    with runs_path.open("a") as sink:
        for name in args.datasets:
            con = duckdb.connect()
            try:
                ds = load(con, name)
            except FileNotFoundError as exc:
                skips[f"{name}/*"] = str(exc)
                print(f"skip {name}: {exc}", flush=True)
                continue
            print(
                f"== {name}: {ds.pairs:,} pairs, {ds.users:,} users, "
                f"{ds.leaf_domain:,} leaf cells in the domain",
                flush=True,
            )
            for mech, conversion in variants:
                variant = mech if conversion == "simple" else f"{mech}_{conversion}"
                key = f"{name}/{variant}"
                if (name, mech) in STATIC_SKIPS:
                    skips[key] = STATIC_SKIPS[name, mech]
                    print(f"  skip {variant}: {skips[key]}", flush=True)
                    continue
                if mech in FULL_DOMAIN and ds.leaf_domain > args.max_cells:
                    skips[key] = (
                        f"noises every cell of the full domain: {ds.leaf_domain:,} leaf cells > "
                        f"{args.max_cells:,} (release(max_cells=))"
                    )
                    print(f"  skip {variant}: {skips[key]}", flush=True)
                    continue
                plan = TimeBudget(args.budget_seconds, ordered_epsilons(args.epsilons))
                for eps in plan.epsilons:
                    predicted = None
                    if mech in SOLVER and (name, eps) in parents:
                        # one solve per parent, on the release's two threads
                        predicted = parents[name, eps] * milp_cost() / 2
                    for seed in range(args.reps):
                        if (name, variant, eps, seed) in done:
                            plan.spent(eps, done[name, variant, eps, seed])
                            continue
                        verdict = plan.allow(eps, seed, predicted)
                        if verdict:
                            skips[f"{key}/eps={eps:g}"] = verdict
                            print(f"  {variant} eps={eps:g}: {verdict}", flush=True)
                            break
                        try:
                            run = one_run(con, ds, mech, conversion, eps, seed)
                        except Exception as exc:  # record the failure and go on
                            skips[f"{key}/eps={eps:g}"] = f"{type(exc).__name__}: {exc}"
                            print(f"  {variant} eps={eps:g}: FAILED {exc}", flush=True)
                            break
                        plan.spent(eps, run["seconds"])
                        if variant == "inftda" and seed == 0:
                            parents[name, eps] = run["parents"]
                        sink.write(json.dumps(run) + "\n")
                        sink.flush()
                        leaf = run["levels"][-1]
                        guess = f" (predicted {predicted:.0f} s)" if predicted and seed == 0 else ""
                        print(
                            f"  {variant:>22} eps={eps:<4g} seed={seed} {run['seconds']:7.2f} s  "
                            f"leaf max err {leaf['max_abs_error']:>8,.0f}  "
                            f"leaf FDR {leaf['false_discovery_rate']:.3f}{guess}",
                            flush=True,
                        )
            if "inftda" in available and not args.no_zoom:
                zoom(con, ds, out)
            con.close()
            skips_path.write_text(json.dumps(skips, indent=2, sort_keys=True))
    skips_path.write_text(json.dumps(skips, indent=2, sort_keys=True))


# --- aggregation ----------------------------------------------------------------------------


def load_runs(out: Path) -> list[dict[str, Any]]:
    path = out / "runs.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line]


Groups = dict[tuple[str, str, float], list[dict[str, Any]]]


def group_runs(runs: Sequence[dict[str, Any]]) -> Groups:
    groups: Groups = defaultdict(list)
    for run in runs:
        groups[run["dataset"], run["variant"], run["epsilon"]].append(run)
    return groups


def metric(runs: Sequence[dict[str, Any]], name: str) -> np.ndarray:
    """(seeds, levels) array of one metric."""
    return np.array([[lv[name] for lv in run["levels"]] for run in runs], dtype=np.float64)


def seconds(runs: Sequence[dict[str, Any]]) -> np.ndarray:
    return np.array([run["seconds"] for run in runs], dtype=np.float64)


# --- figures --------------------------------------------------------------------------------


def _figure(width: float, height: float) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _variants_of(groups: Groups, dataset: str) -> list[str]:
    present = {v for (d, v, _) in groups if d == dataset}
    return [v for v in (*MECHANISMS, "inftda_tight") if v in present]


def plot_dataset(
    groups: Groups, ds_name: str, title: str, out: Path, epsilons: Sequence[float]
) -> Path:
    variants = [v for v in _variants_of(groups, ds_name) if v != "inftda_tight"]
    fig = _figure(4.6 * len(epsilons), 7.4)
    axes = fig.subplots(2, len(epsilons), squeeze=False)
    for col, eps in enumerate(epsilons):
        for row, (name, ylabel) in enumerate(
            (
                ("max_abs_error", "maximum absolute error"),
                ("false_discovery_rate", "false discovery rate (%)"),
            )
        ):
            ax = axes[row][col]
            for v in variants:
                runs = groups.get((ds_name, v, eps))
                if not runs:
                    continue
                m = metric(runs, name) * (100.0 if row else 1.0)
                levels = np.arange(m.shape[1])
                ours = v == "inftda"  # drawn on top: it often overlaps TDA-L2
                ax.plot(
                    levels, m.mean(axis=0), marker="o", ms=3, color=COLORS[v], label=LABELS[v],
                    lw=2.0 if ours else 1.4, zorder=3 if ours else 2,
                )  # fmt: skip
                ax.fill_between(
                    levels, m.min(axis=0), m.max(axis=0), color=COLORS[v], alpha=0.2, lw=0
                )
            if row == 0:
                ax.set_yscale("symlog", linthresh=1.0)
                ax.set_ylim(bottom=0)
                ax.set_title(f"epsilon = {eps:g}", fontsize=10)
            else:
                ax.set_ylim(-2, 102)
                ax.set_xlabel(
                    "level of the destination tree (0 = root, coarse to fine)", fontsize=8
                )
            if col == 0:
                ax.set_ylabel(ylabel)
            ax.grid(True, alpha=0.3)
            ax.xaxis.get_major_locator().set_params(integer=True)
    legend: dict[str, Any] = {}
    for ax in axes[0]:
        for handle, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            legend.setdefault(lab, handle)
    order = [LABELS[v] for v in variants if LABELS[v] in legend]
    if order:
        fig.legend(
            [legend[lab] for lab in order], order, loc="outside lower center", ncol=len(order),
            fontsize=9,
        )  # fmt: skip
    fig.suptitle(f"{title}: mean over seeds, band = min to max", fontsize=11)
    path = out / f"{ds_name}.png"
    fig.savefig(path)
    return path


def plot_time(
    groups: Groups, ds_name: str, title: str, out: Path, epsilons: Sequence[float]
) -> Path:
    variants = _variants_of(groups, ds_name)
    fig = _figure(max(6.0, 1.3 * len(variants) + 2), 4.2)
    ax = fig.subplots()
    width = 0.8 / max(1, len(epsilons))
    for j, eps in enumerate(epsilons):
        xs, mean, lo, hi = [], [], [], []
        for i, v in enumerate(variants):
            runs = groups.get((ds_name, v, eps))
            if not runs:
                continue
            s = seconds(runs)
            xs.append(i + (j - (len(epsilons) - 1) / 2) * width)
            mean.append(s.mean())
            lo.append(s.mean() - s.min())
            hi.append(s.max() - s.mean())
        ax.bar(
            xs,
            mean,
            width=width,
            yerr=[lo, hi],
            capsize=2,
            label=f"epsilon {eps:g}",
            color=f"C{j}",
            alpha=0.8,
        )
    ax.set_xticks(range(len(variants)), [LABELS[v] for v in variants], rotation=20, ha="right")
    heights = [b.get_height() for b in ax.patches if b.get_height() > 0]
    if heights and max(heights) / min(heights) > 20:
        ax.set_yscale("log")
    ax.set_ylabel("seconds per release (wall clock, 2 cores)")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(f"{title}: running time (bars: mean, whiskers: min to max)", fontsize=10)
    path = out / f"{ds_name}_time.png"
    fig.savefig(path)
    return path


def tight_reduction(groups: Groups, ds_name: str, eps: float, name: str) -> np.ndarray | None:
    """Per-level % reduction of a metric (mean over seeds) from simple to tight conversion."""
    simple, tight = groups.get((ds_name, "inftda", eps)), groups.get((ds_name, "inftda_tight", eps))
    if not simple or not tight:
        return None
    a, b = metric(simple, name).mean(axis=0), metric(tight, name).mean(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        red = np.where(a > 0, 100.0 * (a - b) / a, np.nan)
    return red


def sigma_reduction(groups: Groups, ds_name: str, eps: float) -> float | None:
    """% by which the tight conversion's larger rho shrinks every sigma."""
    simple, tight = groups.get((ds_name, "inftda", eps)), groups.get((ds_name, "inftda_tight", eps))
    if not simple or not tight:
        return None
    return 100.0 * (1.0 - math.sqrt(simple[0]["rho"] / tight[0]["rho"]))


def plot_tight(
    groups: Groups, datasets: Sequence[str], out: Path, epsilons: Sequence[float]
) -> Path | None:
    names = [d for d in datasets if any((d, "inftda_tight", e) in groups for e in epsilons)]
    if not names:
        return None
    ncols = min(4, len(names))
    nrows = math.ceil(len(names) / ncols)
    fig = _figure(4.0 * ncols, 3.2 * nrows + 0.6)
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    for ax, d in zip(axes, names, strict=False):
        for j, eps in enumerate(epsilons):
            red = tight_reduction(groups, d, eps, "max_abs_error")
            if red is None:
                continue
            ax.plot(np.arange(red.size), red, marker="o", ms=3, color=f"C{j}", label=f"eps {eps:g}")
            ratio = sigma_reduction(groups, d, eps)
            if ratio is not None:
                ax.axhline(ratio, color=f"C{j}", lw=0.8, ls="--")
        ax.axhline(0, color="k", lw=0.6)
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.set_title(d, fontsize=9)
        ax.grid(True, alpha=0.3)
        ax.set_xlabel("level", fontsize=8)
        ax.set_ylabel("max abs error reduction (%)", fontsize=8)
    for ax in axes[len(names) :]:
        ax.set_visible(False)
    axes[0].legend(fontsize=7)
    fig.suptitle(
        "InfTDA, tight (Canonne-Kamath-Steinke) vs simple (Bun-Steinke) zCDP conversion at the "
        "same (epsilon, 1e-8): reduction of the mean max absolute error per level\n"
        "(dashed: the reduction of sigma, 1 - sqrt(rho_simple / rho_tight))",
        fontsize=10,
    )
    path = out / "tight.png"
    fig.savefig(path)
    return path


# --- summary --------------------------------------------------------------------------------


def _fmt(x: float) -> str:
    if math.isnan(x):
        return "-"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    return f"{x:.3g}"


def coarsest_level(groups: Groups, dataset: str) -> int:
    """The first level with more than one true cell (Portugal's country levels have one)."""
    for (d, _, _), rs in groups.items():
        if d == dataset:
            cells = metric(rs[:1], "cells_true")[0]
            return int(np.argmax(cells > 1)) if np.any(cells > 1) else 0
    return 1


def _mean(groups: Groups, key: tuple[str, str, float], name: str) -> np.ndarray | None:
    rs = groups.get(key)
    return None if not rs else metric(rs, name).mean(axis=0)


def claim_checks(groups: Groups, epsilons: Sequence[float], datasets: Sequence[str]) -> list[str]:
    """The paper's claims, checked on the mean over seeds (tables for PAPER.md)."""
    out = ["## The paper's claims, checked", ""]
    # (1) zoom-in: TopDown error grows with depth; SH is poor on coarse levels
    out += [
        "(1) Max abs error of the TopDown mechanisms at the coarsest non-trivial level, at its "
        "worst level (which), and at the leaves; SH at the coarsest level.",
        "",
        "| dataset | epsilon | mechanism | coarsest | worst (level) | leaves | SH coarsest |",
        "|---|---:|---|---:|---:|---:|---:|",
    ]
    for d in datasets:
        top = coarsest_level(groups, d)
        for eps in epsilons:
            sh = _mean(groups, (d, "stability_histogram", eps), "max_abs_error")
            for v in TOPDOWN:
                m = _mean(groups, (d, v, eps), "max_abs_error")
                if m is None:
                    continue
                worst = int(np.argmax(m))
                out.append(
                    f"| {d} | {eps:g} | {LABELS[v]} | {_fmt(m[top])} | {_fmt(m[worst])} ({worst}) "
                    f"| {_fmt(m[-1])} | {'-' if sh is None else _fmt(sh[top])} |"
                )
    out.append("")
    # (2) FDR: InfTDA vs the other TopDown mechanisms, every level
    out += [
        "(2) False discovery rate at the leaves (%), and on how many levels with any false "
        "discovery InfTDA has the lowest FDR of the TopDown mechanisms run.",
        "",
        "| dataset | epsilon | InfTDA | TDA-L2 | TDA-Linf | InfTDA lowest on |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for d in datasets:
        for eps in epsilons:
            f = {v: _mean(groups, (d, v, eps), "false_discovery_rate") for v in TOPDOWN}
            if f["inftda"] is None:
                continue
            present = [a for a in f.values() if a is not None]
            stack = np.vstack(present)
            active = np.flatnonzero(stack.max(axis=0) > 0)
            lowest = int(np.sum(f["inftda"][active] <= stack[:, active].min(axis=0) + 1e-12))
            cells = [
                "-" if f[v] is None else f"{100 * f[v][-1]:.1f}"  # type: ignore[index]
                for v in TOPDOWN
            ]
            out.append(
                f"| {d} | {eps:g} | {' | '.join(cells)} | {lowest} of {active.size} levels |"
            )
    out.append("")
    # (3) running time
    out += [
        "(3) Mean seconds per release (all epsilons), and how many times slower than InfTDA.",
        "",
        "| dataset | InfTDA | TDA-L2 | TDA-Linf (solver) | SH | VanillaGauss |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for d in datasets:
        per = {}
        for v in ("inftda", "tda_l2", "tda_linf_solver", "stability_histogram", "vanilla_gauss"):
            rs = [r for eps in epsilons for r in groups.get((d, v, eps), [])]
            per[v] = float(seconds(rs).mean()) if rs else math.nan
        base = per["inftda"]
        cells = [f"{base:.2f}"] + [
            "-" if math.isnan(x) else f"{x:.2f} ({x / base:.3g}x)"
            for v, x in per.items()
            if v != "inftda"
        ]
        out.append(f"| {d} | {' | '.join(cells)} |")
    out.append("")
    # (4) leaves: who is most accurate
    out += [
        "(4) Max abs error at the leaves: the most accurate mechanism, and SH against the best "
        "TopDown mechanism.",
        "",
        "| dataset | epsilon | most accurate (max err) | SH | best TopDown |",
        "|---|---:|---|---:|---:|",
    ]
    for d in datasets:
        for eps in epsilons:
            leaf = {
                v: float(m[-1])
                for v in MECHANISMS
                if (m := _mean(groups, (d, v, eps), "max_abs_error")) is not None
            }
            if not leaf:
                continue
            best = min(leaf, key=lambda v: leaf[v])
            td = [leaf[v] for v in TOPDOWN if v in leaf]
            sh_leaf = leaf.get("stability_histogram", math.nan)
            out.append(
                f"| {d} | {eps:g} | {LABELS[best]} ({_fmt(leaf[best])}) | {_fmt(sh_leaf)} | "
                f"{_fmt(min(td)) if td else '-'} |"
            )
    out.append("")
    # (5) not in the paper: the tight conversion
    out += [
        "(5) Not in the paper: InfTDA with the tight zCDP -> (epsilon, delta) conversion at the "
        "same (epsilon, delta): rho gained, the change of sigma it implies, and the measured "
        "change of the mean max abs error (coarsest non-trivial level / median over the "
        "noised levels / leaves) and of the mean abs error at the leaves.",
        "",
        "| dataset | epsilon | rho simple -> tight | sigma | max err: coarsest / median / leaves "
        "| mean err leaves |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for d in datasets:
        top = coarsest_level(groups, d)
        for eps in epsilons:
            red = tight_reduction(groups, d, eps, "max_abs_error")
            red_mean = tight_reduction(groups, d, eps, "mean_abs_error")
            sig = sigma_reduction(groups, d, eps)
            if red is None or red_mean is None or sig is None:
                continue
            rho_s = groups[d, "inftda", eps][0]["rho"]
            rho_t = groups[d, "inftda_tight", eps][0]["rho"]
            mid = float(np.nanmedian(red[top:]))
            out.append(
                f"| {d} | {eps:g} | {rho_s:.3g} -> {rho_t:.3g} | {-sig:+.1f}% | "
                f"{-red[top]:+.0f}% / {-mid:+.0f}% / {-red[-1]:+.0f}% | {-red_mean[-1]:+.0f}% |"
            )
    out.append("")
    return out


def summary(
    runs: Sequence[dict[str, Any]],
    skips: dict[str, str],
    epsilons: Sequence[float],
    datasets: Sequence[str],
) -> str:
    groups = group_runs(runs)
    lines = [
        "# Reproduction summary (generated by benchmarks/reproduce_paper.py)",
        "",
        f"Python {platform.python_version()}, DuckDB {duckdb.__version__}, inftda_sql "
        f"{inftda_sql.__version__}; {len(runs)} runs. Means over seeds (min-max in brackets). "
        "'max err level k' is the coarsest level with more than one true cell.",
        "",
        *claim_checks(groups, epsilons, datasets),
    ]
    for d in datasets:
        variants = _variants_of(groups, d)
        if not variants:
            continue
        lines += [f"## {d}", ""]
        top = coarsest_level(groups, d)
        lines.append(
            f"| epsilon | mechanism | runs | max err level {top} | max err leaves | "
            "mean err leaves | FDR leaves | FNR leaves | seconds |"
        )
        lines.append("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
        for eps in epsilons:
            for v in variants:
                rs = groups.get((d, v, eps))
                if not rs:
                    continue
                mx, mean = metric(rs, "max_abs_error"), metric(rs, "mean_abs_error")
                fdr, fnr = metric(rs, "false_discovery_rate"), metric(rs, "false_negative_rate")
                s = seconds(rs)
                lines.append(
                    f"| {eps:g} | {LABELS[v]} | {len(rs)} | {_fmt(mx[:, top].mean())} | "
                    f"{_fmt(mx[:, -1].mean())} [{_fmt(mx[:, -1].min())}-{_fmt(mx[:, -1].max())}] | "
                    f"{_fmt(mean[:, -1].mean())} | {100 * fdr[:, -1].mean():.1f}% | "
                    f"{100 * fnr[:, -1].mean():.1f}% | "
                    f"{s.mean():.2f} [{s.min():.2f}-{s.max():.2f}] |"
                )
        lines.append("")
        # per-level detail of the TopDown mechanisms and SH: max error and FDR
        lines.append("Per level (mean max abs error / mean FDR %), level 0 = root:")
        lines.append("")
        for eps in epsilons:
            for v in variants:
                rs = groups.get((d, v, eps))
                if not rs:
                    continue
                mx = metric(rs, "max_abs_error").mean(axis=0)
                fdr = 100 * metric(rs, "false_discovery_rate").mean(axis=0)
                cells = " ".join(f"{_fmt(a)}/{b:.0f}" for a, b in zip(mx, fdr, strict=True))
                lines.append(f"- eps {eps:g}, {LABELS[v]}: {cells}")
        lines.append("")
        red_lines = []
        for eps in epsilons:
            red = tight_reduction(groups, d, eps, "max_abs_error")
            red_mean = tight_reduction(groups, d, eps, "mean_abs_error")
            if red is None or red_mean is None:
                continue
            red_lines.append(
                f"- eps {eps:g}: max abs error per level (%): "
                + " ".join("-" if math.isnan(x) else f"{x:.0f}" for x in red)
                + "; mean abs error per level (%): "
                + " ".join("-" if math.isnan(x) else f"{x:.0f}" for x in red_mean)
            )
        if red_lines:
            rho_s = (
                groups[(d, "inftda", epsilons[0])][0]["rho"]
                if (d, "inftda", epsilons[0]) in groups
                else None
            )
            rho_t = (
                groups[(d, "inftda_tight", epsilons[0])][0]["rho"]
                if (d, "inftda_tight", epsilons[0]) in groups
                else None
            )
            lines.append(
                "Tight vs simple conversion, InfTDA, reduction of the mean error per level"
                + (
                    f" (rho at eps {epsilons[0]:g}: {rho_s:.3g} -> {rho_t:.3g})"
                    if rho_s and rho_t
                    else ""
                )
                + ":"
            )
            lines.append("")
            lines += red_lines
            lines.append("")
    if skips:
        lines += ["## Skipped", ""]
        lines += [f"- `{k}`: {v}" for k, v in sorted(skips.items())]
        lines.append("")
    return "\n".join(lines)


def draw(out: Path, datasets: Sequence[str], epsilons: Sequence[float]) -> None:
    runs = load_runs(out)
    skips_path = out / "skips.json"
    skips = json.loads(skips_path.read_text()) if skips_path.exists() else {}
    groups = group_runs(runs)
    titles = {}
    for d in datasets:
        if d in SYNTHETIC:
            kind, density = d.split("_")
            titles[d] = f"{kind} {density}"
        else:
            titles[d] = {"portugal": "Portugal commuting", "uk": "UK (E&W) commuting"}[d]
    for d in datasets:
        if not any(k[0] == d for k in groups):
            continue
        print("wrote", plot_dataset(groups, d, titles[d], out, epsilons))
        print("wrote", plot_time(groups, d, titles[d], out, epsilons))
    tight = plot_tight(groups, datasets, out, epsilons)
    if tight:
        print("wrote", tight)
    (out / "summary.md").write_text(summary(runs, skips, epsilons, datasets))
    print("wrote", out / "summary.md")


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="epsilon 1 only, 2 seeds, the small datasets; results in <out>/quick",
    )
    p.add_argument(
        "--datasets", nargs="+", default=[*SYNTHETIC, *REAL], choices=[*SYNTHETIC, *REAL]
    )
    p.add_argument("--mechanisms", nargs="+", default=list(MECHANISMS), choices=list(MECHANISMS))
    p.add_argument("--epsilons", nargs="+", type=float, default=list(EPSILONS))
    p.add_argument("--reps", type=int, default=5, help="seeds per (dataset, mechanism, epsilon)")
    p.add_argument("--no-tight", action="store_true", help="skip the tight-conversion InfTDA runs")
    p.add_argument(
        "--budget-seconds",
        type=float,
        default=900.0,
        help="time allowed for all runs of one mechanism on one dataset (default 900)",
    )
    p.add_argument(
        "--max-cells",
        type=int,
        default=50_000_000,
        help="skip full-domain mechanisms above this many leaf cells",
    )
    p.add_argument("--no-zoom", action="store_true", help="skip the zoom picture per dataset")
    p.add_argument("--resume", action="store_true", help="keep saved runs, add the missing ones")
    p.add_argument("--plot-only", action="store_true", help="redraw figures and summary only")
    p.add_argument("--out", type=Path, default=HERE / "paper")
    args = p.parse_args(argv)
    out: Path = args.out
    if args.quick:
        out = out / "quick"
        args.epsilons = [1.0]
        args.reps = 2
        if args.datasets == [*SYNTHETIC, *REAL]:
            args.datasets = ["binary_sparse", "random_sparse", "portugal"]
    out.mkdir(parents=True, exist_ok=True)
    if not args.plot_only:
        t0 = time.perf_counter()
        run_all(args, out)
        print(f"all runs: {time.perf_counter() - t0:.0f} s", flush=True)
    draw(out, args.datasets, args.epsilons)


if __name__ == "__main__":
    main()
