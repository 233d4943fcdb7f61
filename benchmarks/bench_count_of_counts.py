"""Count-of-counts histograms (Kuo et al., VLDB 2018): accuracy against the paper's claims, and
scale.

    python benchmarks/bench_count_of_counts.py accuracy [--quick]   # EMD per level, plots
    python benchmarks/bench_count_of_counts.py plot                 # redraw from the runs
    python benchmarks/bench_count_of_counts.py privacy --nodes 3221 --max-size 100000
    python benchmarks/bench_count_of_counts.py release --persons 100000000 [--db FILE]

``accuracy`` runs the engine-free core (``inftda_sql.core.coc``) on the true leaf histograms of
the synthetic data sets (``inftda_sql.synthetic``): every estimator, top-down (weighted and
average merge) and leaves-then-sum, several epsilons and seeds; the earthmover's distance per
node, averaged per level, goes to ``benchmarks/paper/coc_runs.jsonl`` and the plots to
``benchmarks/paper/coc_<dataset>.png``. ``privacy`` times the privacy stage alone (noise,
isotonic fits, matching) on a county-like level and reports the peak memory. ``release`` builds
a housing-like persons table of the given size in DuckDB and times the release against its two
plain aggregations, in the same run.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from inftda_sql.core.accounting import count_of_counts_accounting
from inftda_sql.core.coc import (
    CocLevel,
    Histograms,
    count_of_counts,
    emd_per_node,
    levels_from_leaves,
)
from inftda_sql.core.rng import as_source
from inftda_sql.synthetic import (
    GroupHistograms,
    housing_histograms,
    race_histograms,
    taxi_histograms,
)

OUT = Path(__file__).resolve().parent / "paper"
RUNS = OUT / "coc_runs.jsonl"

#: (name, generator, max_size K): K well above the largest group, as the paper's 100,000 is
#: (10x the largest household); smaller than the paper's to keep a run in seconds
DATASETS = {
    "housing": (lambda s: housing_histograms(scale=0.01, seed=s), 20_000),
    "taxi": (lambda s: taxi_histograms(scale=0.25, seed=s), 20_000),
    "white": (lambda s: race_histograms(race="white", scale=0.01, seed=s), 5_000),
    "hawaiian": (lambda s: race_histograms(race="hawaiian", scale=0.1, seed=s), 2_000),
}
CONFIGS = [
    ("cumulative", "topdown", "weighted"),
    ("cumulative", "topdown", "average"),
    ("cumulative", "leaves", "weighted"),
    ("unattributed", "topdown", "weighted"),
    ("unattributed", "topdown", "average"),
    ("unattributed", "leaves", "weighted"),
]


def _levels(data: GroupHistograms, max_size: int) -> list[CocLevel]:
    leaves = Histograms.build(data.node, np.minimum(data.size, max_size), data.count)
    return levels_from_leaves(data.paths, data.groups, leaves, list(data.hierarchy))


def _released(levels: list[CocLevel], leaves: Histograms) -> list[Histograms]:
    out = [leaves]
    for child, parent_level in zip(levels[:0:-1], levels[-2::-1], strict=True):
        out.insert(0, out[0].aggregate(child.parent))
        del parent_level
    return out


def run_one(
    levels: list[CocLevel],
    max_size: int,
    min_size: int,
    method: str,
    consistency: str,
    merge: str,
    epsilon: float,
    seed: int,
) -> tuple[list[float], float]:
    names = [lv.name for lv in levels] if consistency == "topdown" else [levels[-1].name]
    acct = count_of_counts_accounting(epsilon, names, method=method)
    t0 = time.perf_counter()
    out = count_of_counts(
        levels,
        acct,
        max_size=max_size,
        min_size=min_size,
        consistency=consistency,
        merge=merge,
        source=as_source(seed),
    )
    seconds = time.perf_counter() - t0
    emd = [
        float(emd_per_node(lv.truth, rel, lv.n_nodes).mean())
        for lv, rel in zip(levels, _released(levels, out.leaves), strict=True)
    ]
    return emd, seconds


def accuracy(args: argparse.Namespace) -> None:
    OUT.mkdir(exist_ok=True)
    epsilons = [1.0] if args.quick else [0.5, 1.0, 2.0]
    seeds = range(2 if args.quick else args.seeds)
    with RUNS.open("w") as f:
        for name, (make, max_size) in DATASETS.items():
            data = make(0)
            levels = _levels(data, max_size)
            print(
                f"{name}: {data.n_groups:,} groups, {data.n_persons:,} persons, "
                f"{len(data.paths)} leaves, K={max_size:,}",
                flush=True,
            )
            configs = list(CONFIGS)
            if not args.quick:
                configs.append(("naive", "topdown", "weighted"))
            for eps in epsilons:
                for method, consistency, merge in configs:
                    for seed in seeds if method != "naive" else range(1):
                        emd, seconds = run_one(
                            levels, max_size, data.min_size, method, consistency, merge, eps, seed
                        )
                        row = {
                            "dataset": name,
                            "epsilon": eps,
                            "method": method,
                            "consistency": consistency,
                            "merge": merge,
                            "seed": seed,
                            "emd": emd,
                            "levels": [lv.name for lv in levels],
                            "seconds": seconds,
                        }
                        f.write(json.dumps(row) + "\n")
                        f.flush()
                        print(
                            f"  eps {eps:g} {method:12s} {consistency:7s} {merge:8s} seed {seed}: "
                            + ", ".join(f"{e:,.1f}" for e in emd)
                            + f"  ({seconds:.1f} s)",
                            flush=True,
                        )
    plot(args)


def _label(method: str, consistency: str, merge: str) -> str:
    if consistency == "leaves":
        return f"{method}, leaves then sum"
    return f"{method}, top-down {merge}"


def plot(args: argparse.Namespace) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [json.loads(line) for line in RUNS.read_text().splitlines()]
    summary: list[str] = []
    for name in dict.fromkeys(r["dataset"] for r in rows):
        mine = [r for r in rows if r["dataset"] == name]
        eps_list = sorted({r["epsilon"] for r in mine})
        levels = mine[0]["levels"]
        fig, axes = plt.subplots(1, len(eps_list), figsize=(4.2 * len(eps_list), 3.8), sharey=True)
        axes = np.atleast_1d(axes)
        summary.append(f"\n### {name}\n")
        summary.append("| epsilon | configuration | " + " | ".join(levels) + " |")
        summary.append("|---|---|" + "---|" * len(levels))
        for ax, eps in zip(axes, eps_list, strict=True):
            keys = dict.fromkeys(
                (r["method"], r["consistency"], r["merge"]) for r in mine if r["epsilon"] == eps
            )
            for method, consistency, merge in keys:
                runs = [
                    r["emd"]
                    for r in mine
                    if r["epsilon"] == eps
                    and (r["method"], r["consistency"], r["merge"]) == (method, consistency, merge)
                ]
                mean = np.mean(runs, axis=0)
                style = "-" if consistency == "topdown" else "--"
                if merge == "average":
                    style = ":"
                ax.plot(levels, mean, style, marker="o", label=_label(method, consistency, merge))
                summary.append(
                    f"| {eps:g} | {_label(method, consistency, merge)} ({len(runs)} runs) | "
                    + " | ".join(f"{v:,.1f}" for v in mean)
                    + " |"
                )
            ax.set_yscale("log")
            ax.set_title(f"{name}, epsilon {eps:g}")
            ax.set_xlabel("level")
        axes[0].set_ylabel("mean earthmover's distance per node")
        axes[-1].legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(OUT / f"coc_{name}.png", dpi=110)
        plt.close(fig)
    (OUT / "coc_summary.md").write_text("\n".join(summary) + "\n")
    print("\n".join(summary))


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _profiled() -> dict[str, list[float]]:
    """Wrap the steps of the privacy stage to add up, per step, the CPU time of the thread
    running it and the pages it faulted in (``--profile``)."""
    import threading

    from inftda_sql.core import isotonic
    from inftda_sql.core.coc import estimators, release

    totals: dict[str, list[float]] = {}
    lock = threading.Lock()

    def wrap(owner: object, name: str, label: str) -> None:
        inner = getattr(owner, name)

        def timed(*a: object, **k: object) -> object:
            t, f = time.thread_time(), resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
            out = inner(*a, **k)
            faults = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - f
            with lock:
                row = totals.setdefault(label, [0.0, 0.0])
                row[0] += time.thread_time() - t
                row[1] += faults
            return out

        setattr(owner, name, timed)

    wrap(estimators, "_dense", "true cumulative histograms (noise threads)")
    wrap(estimators, "_noise", "discrete Laplace draws (noise threads)")
    wrap(isotonic.SegmentedIsotonic, "feed", "isotonic fit (main thread)")
    wrap(release, "match_and_merge", "matching and merging (main thread)")
    return totals


def privacy(args: argparse.Namespace) -> None:
    """The privacy stage alone on the housing data's counties under 52 states (3,221 at
    ``--scale 0.01``): noise, fits, matching."""
    data = housing_histograms(scale=args.scale, seed=0)
    levels = _levels(data, args.max_size)
    before = _peak_mb()
    acct = count_of_counts_accounting(1.0, [lv.name for lv in levels], method=args.method)
    steps = _profiled() if args.profile else None
    usage = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    out = count_of_counts(
        levels,
        acct,
        max_size=args.max_size,
        min_size=1,
        source=as_source(None),
        chunk=args.chunk,
    )
    seconds = time.perf_counter() - t0
    for st in out.levels:
        print(
            f"  {st.name:8s} nodes {st.nodes:6,} noised {st.noised_entries:13,} "
            f"runs {st.runs:8,} {st.seconds:7.2f} s"
        )
    entries = sum(st.noised_entries for st in out.levels)
    print(
        f"privacy stage: {sum(lv.n_nodes for lv in levels):,} nodes, K={args.max_size:,}, "
        f"{entries:,} noisy entries in {seconds:.1f} s ({entries / seconds / 1e6:.1f}M/s); "
        f"peak RSS {_peak_mb():,.0f} MB (before: {before:,.0f} MB), chunk {args.chunk:,}"
    )
    if steps is not None:
        end = resource.getrusage(resource.RUSAGE_SELF)
        user, system = end.ru_utime - usage.ru_utime, end.ru_stime - usage.ru_stime
        faults = end.ru_minflt - usage.ru_minflt
        print(
            f"  process CPU: user {user:.2f} s, system {system:.2f} s = "
            f"{(user + system) / entries * 1e9:.1f} ns per noisy entry; "
            f"{faults:,} page faults ({faults * 4096 / entries:.1f} fresh bytes per entry)"
        )
        for label, (cpu, faulted) in steps.items():
            print(
                f"  {label:45s} {cpu:7.2f} s CPU = {cpu / entries * 1e9:5.1f} ns per entry, "
                f"{faulted * 4096 / entries:5.1f} fresh bytes per entry"
            )


def release(args: argparse.Namespace) -> None:
    """A housing-like persons table of ``--persons`` rows: the release against its two plain
    aggregations, timed in the same run (medians of ``--repeats``)."""
    import duckdb

    import inftda_sql
    from inftda_sql.synthetic import write_groups

    scale = args.persons / 605_304_918
    con = duckdb.connect(args.db) if args.db else duckdb.connect()
    t0 = time.perf_counter()
    if args.db and args.reuse:
        print("reusing the tables of", args.db)
    else:
        data = write_groups(con, housing_histograms(scale=scale, seed=0), overwrite=True)
        print(
            f"generated {data.n_persons:,} persons in {data.n_groups:,} groups in "
            f"{time.perf_counter() - t0:.0f} s",
            flush=True,
        )
    n = con.execute("SELECT count(*) FROM persons").fetchall()[0][0]
    plain, rel = [], []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        con.execute(
            "CREATE OR REPLACE TEMP TABLE a AS "
            "SELECT group_id, state, county, count(*) AS size FROM persons GROUP BY ALL"
        ).fetchall()
        con.execute(
            "SELECT state, county, size, count(*) FROM a GROUP BY ROLLUP (state, county), size"
        ).fetchall()
        plain.append(time.perf_counter() - t0)
        con.execute("DROP TABLE a").fetchall()
        t0 = time.perf_counter()
        r = inftda_sql.release_count_of_counts(
            con,
            "persons",
            group="group_id",
            hierarchy=["state", "county"],
            groups="groups",
            epsilon=1.0,
            max_size=args.max_size,
            overwrite=True,
        )
        rel.append(time.perf_counter() - t0)
        print(
            f"  plain {plain[-1]:.1f} s, release {rel[-1]:.1f} s "
            f"({', '.join(f'{k} {v:.1f}' for k, v in r.timings.items())}); max_size {r.max_size:,}",
            flush=True,
        )
    p, q = statistics.median(plain), statistics.median(rel)
    print(
        f"{n:,} persons: two plain aggregations {p:.1f} s, release {q:.1f} s, "
        f"ratio {q / p:.2f}; peak RSS {_peak_mb():,.0f} MB"
    )


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    a = sub.add_parser("accuracy")
    a.add_argument("--quick", action="store_true")
    a.add_argument("--seeds", type=int, default=3)
    sub.add_parser("plot")
    pr = sub.add_parser("privacy")
    pr.add_argument("--scale", type=float, default=0.001, help="housing scale (1 = 240M groups)")
    pr.add_argument("--max-size", type=int, default=100_000)
    pr.add_argument("--method", default="cumulative")
    pr.add_argument("--chunk", type=int, default=1 << 20)
    pr.add_argument("--profile", action="store_true", help="CPU and page faults per step")
    r = sub.add_parser("release")
    r.add_argument("--persons", type=int, default=100_000_000)
    r.add_argument("--max-size", type=int, default=None)
    r.add_argument("--db", default=None, help="a file database (default: in memory)")
    r.add_argument("--reuse", action="store_true", help="reuse the tables of --db")
    r.add_argument("--repeats", type=int, default=1)
    args = p.parse_args(argv)
    {"accuracy": accuracy, "plot": plot, "privacy": privacy, "release": release}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
