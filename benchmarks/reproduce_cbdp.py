"""Reproduce the CBDP paper's experiments and compare CBDP with InfTDA, with inftda_sql.

Fioretto, Lee & Van Hentenryck, *Constrained-Based Differential Privacy for Mobility Services*,
AAMAS 2018: CBDP (``release(..., mechanism="cbdp", features=...)``) against the Laplace mechanism
and the hierarchical mechanism of Hay et al. on ODMTS trip data.

    .venv/bin/python benchmarks/reproduce_cbdp.py paper      # error curves + Table 2 ablation
    .venv/bin/python benchmarks/reproduce_cbdp.py chain      # CBDP vs InfTDA on the ODMTS chain
    .venv/bin/python benchmarks/reproduce_cbdp.py real       # CBDP vs InfTDA on Portugal and UK
    .venv/bin/python benchmarks/reproduce_cbdp.py speed      # full day vs the GROUPING SETS scan
    .venv/bin/python benchmarks/reproduce_cbdp.py scaling    # up to 10M leaf cells, peak memory
    .venv/bin/python benchmarks/reproduce_cbdp.py plot       # figures and summary from the runs
    (add --quick for a few-minute smoke run in benchmarks/paper/cbdp_quick/)

**Data.** ``inftda_sql.synthetic.odmts``: 130 stops in 4 zones, 48 periods of 30 minutes, 12
modes fixed by the O/D pair, a weekday (38,000 trips) and a weekend (15,000) of the same
geography: 811,200 leaf cells, about 1% non-zero. The paper's Ann Arbor data is not public.

**Mechanisms** (all in the paper's model: add/remove one trip, sensitivity 1 per feature, pure
epsilon-DP, Laplace noise; seeds make them reproducible benchmark runs, NOT private releases):

* ``Lap``: discrete Laplace of scale 1/epsilon on every leaf cell, negative counts set to 0
  (CBDP with the leaf as the only feature: its optimum is exactly that).
* ``H3``, ``H4``, ``H5``: Hay et al.'s hierarchical mechanism on the trees root > period >
  leaf, root > period > zones > leaf, root > period > zones > zones & mode > leaf (the paper's):
  discrete Laplace on every node of every level (root included: in the add/remove model N is
  not public), the geometric budget allocation of Cormode et al. (epsilon of depth d
  proportional to 2^(d/3), the leaves get the most), Hay's bottom-up/top-down least squares
  for irregular trees with per-level variances, and Hay's pruning heuristic (a node whose
  bottom-up estimate is <= 0 is set to 0 with its subtree; its parent's value is shared among
  the other children). Real-valued leaves, negative ones possible. Implemented here in numpy.
* ``O3``, ``O4``, ``O5``: CBDP (``release``) with features {total, period, trip}, + zones, +
  mode; flat structure, weights 1/cells.
* Ablation (Table 2): ``O5(a)`` hierarchical structure, uniform weights; ``O5(b)``
  hierarchical, 1/cells; ``O5(c)`` flat, uniform.

**Metrics** (per run, leaves and every feature): mean absolute error over all cells, over the
true non-zero cells, and over the cells where either the truth or the release is non-zero;
the released total; false discoveries at the leaves; negative counts. Runs go to
``benchmarks/paper/cbdp_runs.jsonl``; figures ``cbdp_*.png`` and ``cbdp_summary.md``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

import inftda_sql
from inftda_sql.core.accounting import Budget
from inftda_sql.core.noise import sample_discrete_laplace
from inftda_sql.synthetic import odmts, odmts_features

HERE = Path(__file__).resolve().parent
SHARED = HERE.parent.parent / "shared" / "data"
EPSILONS = (0.01, 0.1, 1.0, 10.0)
ABLATION_EPSILONS = (1.0, 0.1, 0.01)
DAYS = ("weekday", "weekend")
DELTA = 1e-8
LEAF = ["o_stop", "d_stop", "period"]
#: the features scored (the paper's O5 set) and their columns
SCORED = {
    "total": [],
    "period": ["period"],
    "zones": ["o_zone", "d_zone", "period"],
    "mode": ["mode", "period"],
    "trip": LEAF,
}


# ---------------------------------------------------------------------------------------------
# scoring in SQL: one FULL OUTER JOIN per feature


def score(
    con: duckdb.DuckDBPyConnection,
    truth_sql: str,
    released_sql: str,
    levels: dict[str, list[str]],
    cells: dict[str, int],
) -> dict[str, dict[str, float]]:
    """Per level: MAE over all cells, over true non-zero cells, over the union of non-zero
    cells; max abs error; cells true / released non-zero; false discoveries; negatives; totals.

    ``truth_sql`` has the level columns and ``n``; ``released_sql`` the columns and ``c``."""
    out = {}
    for name, cols in levels.items():
        if cols:
            keys = ", ".join(cols)
            sql = f"""
            WITH t AS (SELECT {keys}, sum(n)::DOUBLE AS t FROM ({truth_sql}) GROUP BY ALL),
                 r AS (SELECT {keys}, sum(c)::DOUBLE AS r FROM ({released_sql}) GROUP BY ALL),
                 j AS (SELECT coalesce(t, 0) AS t, coalesce(r, 0) AS r
                       FROM t FULL OUTER JOIN r USING ({keys}))
            SELECT sum(abs(t - r)), max(abs(t - r)), sum(abs(t - r)) FILTER (WHERE t > 0),
                   count(*) FILTER (WHERE t > 0), count(*) FILTER (WHERE r > 0),
                   count(*) FILTER (WHERE r > 0 AND t = 0), count(*) FILTER (WHERE r < 0),
                   count(*) FILTER (WHERE t <> 0 OR r <> 0), sum(t), sum(r)
            FROM j"""
        else:
            sql = f"""
            WITH j AS (SELECT coalesce((SELECT sum(n) FROM ({truth_sql})), 0)::DOUBLE AS t,
                              coalesce((SELECT sum(c) FROM ({released_sql})), 0)::DOUBLE AS r)
            SELECT abs(t - r), abs(t - r), abs(t - r), (t > 0)::INT, (r > 0)::INT,
                   (r > 0 AND t = 0)::INT, (r < 0)::INT, 1, t, r FROM j"""
        (s, mx, s_true, n_true, n_rel, fd, neg, union, tot_t, tot_r) = con.sql(sql).fetchall()[0]
        out[name] = {
            "mae_all": (s or 0.0) / cells[name],
            "mae_true": (s_true or 0.0) / max(n_true, 1),
            "mae_union": (s or 0.0) / max(union, 1),
            "max_abs": float(mx or 0.0),
            "cells_true": int(n_true),
            "cells_released": int(n_rel),
            "false_discoveries": int(fd),
            "fdr": fd / n_rel if n_rel else 0.0,
            "negative": int(neg),
            "total_true": float(tot_t or 0.0),
            "total_released": float(tot_r or 0.0),
        }
    return out


# ---------------------------------------------------------------------------------------------
# the ODMTS data and its numpy view (for Hay et al.)


@dataclass
class Day:
    name: str
    data: Any  # synthetic.ODMTS
    truth_sql: str
    cells: dict[str, int]
    codes: pa.Table  # leaf code order: o_stop, d_stop, period + per-level cell codes
    truth: np.ndarray  # true leaf counts in code order


def load_day(con: duckdb.DuckDBPyConnection, day: str, *, seed: int = 0) -> Day:
    d = odmts(con, day=day, seed=seed, prefix=f"{day}_", overwrite=True)
    con.execute(f"""
        CREATE OR REPLACE TABLE {day}_codes AS
        SELECT (row_number() OVER (ORDER BY o_stop, d_stop, period) - 1)::BIGINT AS code,
               o_stop, d_stop, period, o_zone, d_zone, mode,
               (dense_rank() OVER (ORDER BY period) - 1)::BIGINT AS l_period,
               (dense_rank() OVER (ORDER BY o_zone, d_zone, period) - 1)::BIGINT AS l_zones,
               (dense_rank() OVER (ORDER BY o_zone, d_zone, mode, period) - 1)::BIGINT AS l_zm
        FROM {d.cells} ORDER BY code""").fetchall()
    codes = con.sql(f"SELECT * FROM {day}_codes ORDER BY code").to_arrow_table()
    truth_sql = (
        f"SELECT o_stop, d_stop, period, o_zone, d_zone, mode, count(*) AS n FROM {d.trips} "
        f"JOIN {d.pairs} USING (o_stop, d_stop) GROUP BY ALL"
    )
    leaf = con.sql(
        f"SELECT c.code, count(*) FROM {d.trips} JOIN {day}_codes c USING (o_stop, d_stop, period) "
        "GROUP BY ALL"
    ).fetchall()
    truth = np.zeros(codes.num_rows, dtype=np.int64)
    for code, n in leaf:
        truth[code] = n
    cells = {
        name: int(
            con.sql(f"SELECT count(DISTINCT ({', '.join(cols) or '1'})) FROM {d.cells}").fetchall()[
                0
            ][0]
        )
        for name, cols in SCORED.items()
    }
    return Day(day, d, truth_sql, cells, codes, truth)


def _laplace_variance(scale: float) -> float:
    a = math.exp(-1.0 / scale)
    return 2.0 * a / (1.0 - a) ** 2


def hay(day: Day, depth: int, epsilon: float, seed: int) -> np.ndarray:
    """Hay et al. on the tree of ``depth`` levels below the root (H3: 2, H4: 3, H5: 4; the
    module docstring): real-valued leaves in code order."""
    n = day.truth.size
    inner = {2: ["l_period"], 3: ["l_period", "l_zones"], 4: ["l_period", "l_zones", "l_zm"]}[depth]
    maps = [np.zeros(n, np.int64)]
    maps += [day.codes.column(c).to_numpy().astype(np.int64) for c in inner]
    maps.append(np.arange(n, dtype=np.int64))
    sizes = [int(m.max()) + 1 for m in maps]
    weights = np.array([2.0 ** (d / 3.0) for d in range(len(maps))])
    eps = epsilon * weights / weights.sum()
    rng = np.random.default_rng([seed, 7])
    y, var = [], []
    for m, size, e in zip(maps, sizes, eps, strict=True):
        true = np.bincount(m, weights=day.truth, minlength=size)
        y.append(true + sample_discrete_laplace(1.0 / e, size, rng=rng))
        var.append(_laplace_variance(1.0 / e))
    parents = [None] + [np.zeros(sizes[level], np.int64) for level in range(1, len(maps))]
    for level in range(1, len(maps)):
        parents[level][maps[level]] = maps[level - 1]  # type: ignore[index]
    # bottom-up
    z = [np.zeros(0)] * len(maps)
    v = [np.zeros(0)] * len(maps)
    z[-1], v[-1] = y[-1].astype(float), np.full(sizes[-1], var[-1])
    for level in range(len(maps) - 1, 0, -1):
        par = parents[level]
        s_z = np.bincount(par, weights=z[level], minlength=sizes[level - 1])
        s_v = np.bincount(par, weights=v[level], minlength=sizes[level - 1])
        w_own, w_kids = 1.0 / var[level - 1], 1.0 / s_v
        z[level - 1] = (y[level - 1] * w_own + s_z * w_kids) / (w_own + w_kids)
        v[level - 1] = 1.0 / (w_own + w_kids)
    # pruning and top-down
    final = np.where(z[0] > 0, z[0], 0.0)
    keep = z[0] > 0
    for level in range(1, len(maps)):
        par = parents[level]
        keep = keep[par] & (z[level] > 0)
        s_z = np.bincount(par, weights=z[level] * keep, minlength=sizes[level - 1])
        s_v = np.bincount(par, weights=v[level] * keep, minlength=sizes[level - 1])
        share = np.divide(final - s_z, s_v, out=np.zeros_like(s_z), where=s_v > 0)
        final = np.where(keep, z[level] + v[level] * share[par], 0.0)
    return final


def register_leaves(con: duckdb.DuckDBPyConnection, day: Day, leaves: np.ndarray, name: str) -> str:
    nz = np.flatnonzero(leaves)
    table = pa.table({"code": nz, "c": leaves[nz]})
    con.register(name, table)
    return (
        f"SELECT k.o_stop, k.d_stop, k.period, k.o_zone, k.d_zone, k.mode, r.c "
        f"FROM {name} r JOIN {day.name}_codes k USING (code)"
    )


# ---------------------------------------------------------------------------------------------
# the paper's experiments


O_VARIANTS: dict[str, tuple[int, str, str]] = {
    "O3": (3, "flat", "cells"),
    "O4": (4, "flat", "cells"),
    "O5": (5, "flat", "cells"),
    "O5(a)": (5, "hierarchical", "uniform"),
    "O5(b)": (5, "hierarchical", "cells"),
    "O5(c)": (5, "flat", "uniform"),
}


def run_one(
    con: duckdb.DuckDBPyConnection, day: Day, mech: str, eps: float, seed: int
) -> dict[str, Any]:
    t0 = time.perf_counter()
    extra: dict[str, Any] = {}
    if mech.startswith("H"):
        leaves = hay(day, int(mech[1]) - 1, eps, seed)
        seconds = time.perf_counter() - t0
        released = register_leaves(con, day, leaves, "__hay")
    else:
        if mech == "Lap":
            features = {"trip": LEAF}
            structure, weights = "flat", "cells"
        else:
            k, structure, weights = O_VARIANTS[mech]
            features = odmts_features(k)
        r = inftda_sql.release(
            con,
            day.data.trips,
            mechanism="cbdp",
            features=features,
            domain=[day.data.pairs, day.data.periods],
            epsilon=eps,
            privacy="unbounded",
            structure=structure,
            weights=weights,
            seed=seed,
            output="__out",
            overwrite=True,
            levels_view=False,
        )
        seconds = time.perf_counter() - t0
        extra = {
            "newton_steps": r.mechanism_params["newton_steps"],
            "rounding_max_deviation": r.mechanism_params["rounding_max_deviation"],
            "timings": {k: round(v, 4) for k, v in r.timings.items()},
        }
        released = (
            f'SELECT r.o_stop, r.d_stop, r.period, p.o_zone, p.d_zone, p.mode, r."count" AS c '
            f"FROM __out r JOIN {day.data.pairs} p USING (o_stop, d_stop)"
        )
    metrics = score(con, day.truth_sql, released, SCORED, day.cells)
    if mech.startswith("H"):
        con.unregister("__hay")
    return {
        "day": day.name,
        "mechanism": mech,
        "epsilon": eps,
        "seed": seed,
        "seconds": seconds,
        "metrics": metrics,
        **extra,
    }


def paper(args: argparse.Namespace, out: Path) -> None:
    con = duckdb.connect()
    runs_path = out / "cbdp_runs.jsonl"
    done = {
        (r["section"], r["day"], r["mechanism"], r["epsilon"], r["seed"]) for r in load(runs_path)
    }
    with runs_path.open("a") as f:
        for day_name in args.days:
            day = load_day(con, day_name)
            plan = [
                ("paper", m, e)
                for m in ("Lap", "H3", "H4", "H5", "O3", "O4", "O5")
                for e in args.epsilons
            ]
            plan += [
                ("ablation", m, e)
                for m in ("O5(a)", "O5(b)", "O5(c)")
                for e in ABLATION_EPSILONS
                if e in args.epsilons
            ]
            for section, mech, eps in plan:
                for seed in range(args.reps):
                    if (section, day_name, mech, eps, seed) in done:
                        continue
                    run = run_one(con, day, mech, eps, seed)
                    run["section"] = section
                    f.write(json.dumps(run) + "\n")
                    f.flush()
                    m = run["metrics"]["trip"]
                    print(
                        f"{day_name} {mech:6} eps={eps:<5} seed={seed} {run['seconds']:.2f}s "
                        f"mae_union={m['mae_union']:.3f} total={m['total_released']:.0f}",
                        flush=True,
                    )


# ---------------------------------------------------------------------------------------------
# CBDP vs InfTDA where the features form a chain


def chain(args: argparse.Namespace, out: Path) -> None:
    con = duckdb.connect()
    day = load_day(con, "weekday")
    d = day.data
    con.execute(f"""
        CREATE OR REPLACE VIEW chain_dom AS
        SELECT period::VARCHAR AS h_period,
               period::VARCHAR || '|' || o_zone || '>' || d_zone AS h_zones,
               period::VARCHAR || '|' || o_zone || '>' || d_zone
                   || '|' || o_stop || '>' || d_stop AS h_trip
        FROM {d.cells}""").fetchall()
    con.execute(f"""
        CREATE OR REPLACE VIEW chain_trips AS
        SELECT t.period::VARCHAR AS h_period,
               t.period::VARCHAR || '|' || p.o_zone || '>' || p.d_zone AS h_zones,
               t.period::VARCHAR || '|' || p.o_zone || '>' || p.d_zone
                   || '|' || t.o_stop || '>' || t.d_stop AS h_trip
        FROM {d.trips} t JOIN {d.pairs} p USING (o_stop, d_stop)""").fetchall()
    levels = {k: SCORED[k] for k in ("total", "period", "zones", "trip")}
    runs_path = out / "cbdp_runs.jsonl"
    with runs_path.open("a") as f:
        for eps in args.chain_epsilons:
            rho = Budget.from_args(epsilon=eps, delta=DELTA).rho
            for seed in range(args.reps):
                for mech in ("inftda", "cbdp", "cbdp-laplace"):
                    t0 = time.perf_counter()
                    if mech == "inftda":
                        inftda_sql.release(
                            con,
                            "chain_trips",
                            hierarchy=["h_period", "h_zones", "h_trip"],
                            domain="chain_dom",
                            rho=rho,
                            seed=seed,
                            output="__out",
                            overwrite=True,
                            levels_view=False,
                        )
                        released = (
                            "SELECT c.o_stop, c.d_stop, c.period, c.o_zone, c.d_zone, c.mode, "
                            f'r."count" AS c FROM __out r JOIN (SELECT *, period::VARCHAR || '
                            "'|' || o_zone || '>' || d_zone || '|' || o_stop || '>' || d_stop "
                            f"AS h_trip FROM {d.cells}) c USING (h_trip)"
                        )
                    else:
                        budget = {"rho": rho} if mech == "cbdp" else {"epsilon": eps}
                        inftda_sql.release(
                            con,
                            d.trips,
                            mechanism="cbdp",
                            features=odmts_features(4),
                            domain=[d.pairs, d.periods],
                            seed=seed,
                            output="__out",
                            overwrite=True,
                            levels_view=False,
                            **budget,
                        )
                        released = 'SELECT *, "count" AS c FROM __out'
                    seconds = time.perf_counter() - t0
                    metrics = score(con, day.truth_sql, released, levels, day.cells)
                    run = {
                        "section": "chain",
                        "day": "weekday",
                        "mechanism": mech,
                        "epsilon": eps,
                        "rho": rho,
                        "seed": seed,
                        "seconds": seconds,
                        "metrics": metrics,
                    }
                    f.write(json.dumps(run) + "\n")
                    f.flush()
                    print(
                        f"chain {mech:12} eps={eps} seed={seed} {seconds:.2f}s "
                        f"leaf mae={metrics['trip']['mae_all']:.4f} "
                        f"fdr={metrics['trip']['fdr']:.3f}",
                        flush=True,
                    )


# ---------------------------------------------------------------------------------------------
# real O/D data: Portugal and UK


REAL = {
    "portugal": ("pt_census2021_commuting_muni", ["country", "district", "municipality"]),
    "uk": ("uk_ew_census2021_odwp01_msoa", ["country", "region", "lad", "msoa"]),
}


def real(args: argparse.Namespace, out: Path) -> None:
    con = duckdb.connect()
    runs_path = out / "cbdp_runs.jsonl"
    for name in args.real:
        stem, levels_names = REAL[name]
        data, geo = SHARED / f"{stem}.parquet", SHARED / f"{stem}_geo.parquet"
        if not data.exists():
            print(f"skip {name}: {data} not found")
            continue
        con.execute(f"CREATE OR REPLACE TABLE {name}_trips AS SELECT * FROM '{data}'").fetchall()
        con.execute(f"CREATE OR REPLACE TABLE {name}_geo AS SELECT * FROM '{geo}'").fetchall()
        for side in ("o", "d"):
            cols = ", ".join(f"{c} AS {side}_{c}" for c in levels_names)
            con.execute(
                f"CREATE OR REPLACE VIEW {name}_geo_{side} AS SELECT {cols} FROM {name}_geo"
            ).fetchall()
        # one O/D feature per level (the country pair only where there are several countries)
        n_countries = con.sql(f"SELECT count(DISTINCT country) FROM {name}_geo").fetchall()[0][0]
        used = [c for c in levels_names if c != "country" or n_countries > 1]
        features: dict[str, list[str]] = {"total": []}
        for c in used:
            features[c] = [f"o_{c}", f"d_{c}"]
        levels = {k: v for k, v in features.items()}
        cells = {"total": 1}
        for c in used:
            k = con.sql(f"SELECT count(DISTINCT {c}) FROM {name}_geo").fetchall()[0][0]
            cells[c] = int(k) ** 2
        truth_sql = f'SELECT *, "count" AS n FROM {name}_trips'
        hierarchy = [[f"o_{c}" for c in levels_names], [f"d_{c}" for c in levels_names]]
        with runs_path.open("a") as f:
            for eps in args.chain_epsilons:
                rho = Budget.from_args(epsilon=eps, delta=DELTA).rho
                for seed in range(args.real_reps):
                    for mech in ("inftda", "cbdp"):
                        t0 = time.perf_counter()
                        try:
                            if mech == "inftda":
                                inftda_sql.release(
                                    con,
                                    f"{name}_trips",
                                    hierarchy=hierarchy,
                                    domain=[f"{name}_geo_o", f"{name}_geo_d"],
                                    tree="destination",
                                    rho=rho,
                                    count="count",
                                    seed=seed,
                                    output="__out",
                                    overwrite=True,
                                    levels_view=False,
                                )
                            else:
                                inftda_sql.release(
                                    con,
                                    f"{name}_trips",
                                    mechanism="cbdp",
                                    features=features,
                                    domain=[f"{name}_geo_o", f"{name}_geo_d"],
                                    rho=rho,
                                    count="count",
                                    seed=seed,
                                    output="__out",
                                    overwrite=True,
                                    levels_view=False,
                                    max_cells=args.max_cells,
                                )
                        except (inftda_sql.SpecError, MemoryError) as exc:
                            run = {
                                "section": "real",
                                "day": name,
                                "mechanism": mech,
                                "epsilon": eps,
                                "seed": seed,
                                "refused": str(exc),
                            }
                            f.write(json.dumps(run) + "\n")
                            print(f"{name} {mech} refused: {exc}", flush=True)
                            continue
                        seconds = time.perf_counter() - t0
                        released = 'SELECT *, "count" AS c FROM __out'
                        metrics = score(con, truth_sql, released, levels, cells)
                        run = {
                            "section": "real",
                            "day": name,
                            "mechanism": mech,
                            "epsilon": eps,
                            "rho": rho,
                            "seed": seed,
                            "seconds": seconds,
                            "metrics": metrics,
                        }
                        f.write(json.dumps(run) + "\n")
                        f.flush()
                        leaf = used[-1]
                        print(
                            f"{name} {mech:7} eps={eps} seed={seed} {seconds:.1f}s "
                            f"leaf mae_union={metrics[leaf]['mae_union']:.3f} "
                            f"fdr={metrics[leaf]['fdr']:.3f}",
                            flush=True,
                        )


# ---------------------------------------------------------------------------------------------
# speed and scaling


def speed(args: argparse.Namespace, out: Path) -> None:
    """The full-day release against the GROUPING SETS scan alone, side by side in one process."""
    from inftda_sql._request import ReleaseRequest
    from inftda_sql.engines.duckdb.engine import DuckDBEngine

    con = duckdb.connect()
    results = []
    for domain_kind in ("product", "table"):
        d = odmts(con, prefix="speed_", overwrite=True)
        domain: Any = [d.pairs, d.periods] if domain_kind == "product" else d.cells
        kw = dict(
            mechanism="cbdp",
            features=odmts_features(5),
            domain=domain,
            epsilon=1.0,
            privacy="unbounded",
            seed=1,
            output="__out",
            overwrite=True,
        )
        inftda_sql.release(con, d.trips, **kw)  # warm up
        request = ReleaseRequest.from_args(
            d.trips,
            hierarchy=None,
            tree=None,
            rho=None,
            delta=None,
            conversion="tight",
            privacy_unit=None,
            contribution=1,
            distinct=False,
            split=None,
            count=None,
            domain_from_data=False,
            budget_override=False,
            levels_view=True,
            max_cells=inftda_sql.mechanisms.DEFAULT_MAX_CELLS,
            **{k: v for k, v in kw.items() if k not in ("output", "overwrite")},
            output="__out",
            overwrite=True,
        )
        scans, releases, cpus, stages = [], [], [], []
        for _ in range(args.speed_reps):
            with DuckDBEngine(con, request) as engine:
                engine.resolve_features()
                lattice = engine.code_lattice()
                t0 = time.perf_counter()
                engine.feature_counts(lattice)
                scans.append(time.perf_counter() - t0)
            t0, c0 = time.perf_counter(), time.process_time()
            r = inftda_sql.release(con, d.trips, **kw)
            releases.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)
            stages.append(r.timings)
        scan, rel = statistics.median(scans), statistics.median(releases)
        row = {
            "section": "speed",
            "domain": domain_kind,
            "leaf_cells": d.leaf_cells,
            "trips": d.trips_total,
            "scan_s": scan,
            "release_s": rel,
            "ratio": rel / scan,
            "release_cpu_s": statistics.median(cpus),
            "load_average": os.getloadavg()[0],
            "release_all": releases,
            "scan_all": scans,
            "stages": {k: statistics.median(s[k] for s in stages) for k in stages[0]},
        }
        results.append(row)
        print(json.dumps(row), flush=True)
    with (out / "cbdp_runs.jsonl").open("a") as f:
        for row in results:
            f.write(json.dumps(row) + "\n")


def _rss_mb() -> float:
    """The current resident memory of this process (Linux), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return math.nan


def scaling_one(stops: int, max_cells: int, path: str) -> dict[str, Any]:
    """One size, in this fresh process, from a database written by another: wall and CPU time
    and the peak resident memory of the release over what the process held before it."""
    con = duckdb.connect(path, read_only=False)
    info = json.loads(Path(path + ".json").read_text())
    con.sql("SELECT count(*) FROM odmts_trips").fetchall()  # warm the catalog
    base = _rss_mb()
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        r = inftda_sql.release(
            con,
            "odmts_trips",
            mechanism="cbdp",
            features=odmts_features(5),
            domain=["odmts_pairs", "odmts_periods"],
            epsilon=1.0,
            privacy="unbounded",
            seed=1,
            output="out",
            overwrite=True,
            max_cells=max_cells,
            levels_view=False,
        )
    except inftda_sql.SpecError as exc:
        return {"stops": stops, "leaf_cells": info["leaf_cells"], "refused": str(exc)}
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "stops": stops,
        "leaf_cells": info["leaf_cells"],
        "trips": info["trips"],
        "seconds": seconds,
        "cpu_seconds": cpu,
        "peak_rss_mb": peak,
        "rss_before_mb": base,
        "bytes_per_cell": (peak - base) * 2**20 / info["leaf_cells"],
        "stages": {k: round(v, 3) for k, v in r.timings.items()},
        "newton_steps": r.mechanism_params["newton_steps"],
    }


def scaling_data(stops: int, path: str) -> None:
    """Write the ODMTS day of ``stops`` stops into the database file ``path``."""
    Path(path).unlink(missing_ok=True)
    con = duckdb.connect(path)
    trips = int(38_000 * (stops / 130) ** 2)
    d = odmts(con, stops=stops, trips=trips, seed=0)
    con.execute(f"CREATE TABLE cells_copy AS SELECT count(*) AS n FROM {d.cells}").fetchall()
    con.close()
    Path(path + ".json").write_text(json.dumps({"leaf_cells": d.leaf_cells, "trips": trips}))


def scaling(args: argparse.Namespace, out: Path) -> None:
    rows = []
    tmp = Path(os.environ.get("TMPDIR", "/tmp")) / "cbdp_scaling.duckdb"
    for stops in args.stops:
        for step in ("_scaling_data", "_scaling_one"):
            found = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    step,
                    "--one-stops",
                    str(stops),
                    "--max-cells",
                    str(args.max_cells),
                    "--db",
                    str(tmp),
                ],
                capture_output=True,
                text=True,
                check=True,
            )
        row = json.loads(found.stdout.strip().splitlines()[-1])
        row["section"] = "scaling"
        rows.append(row)
        print(json.dumps(row), flush=True)
    tmp.unlink(missing_ok=True)
    Path(str(tmp) + ".json").unlink(missing_ok=True)
    with (out / "cbdp_runs.jsonl").open("a") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")


# ---------------------------------------------------------------------------------------------
# figures and summary


def load(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _mean(runs: list[dict[str, Any]], feature: str, metric: str) -> float:
    vals = [r["metrics"][feature][metric] for r in runs]
    return float(np.mean(vals)) if vals else math.nan


def plot(args: argparse.Namespace, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = load(out / "cbdp_runs.jsonl")
    groups: dict[tuple[str, str, str, float], list[dict[str, Any]]] = defaultdict(list)
    for r in runs:
        if "metrics" in r and r["section"] in ("paper", "ablation"):
            groups[(r["section"], r["day"], r["mechanism"], r["epsilon"])].append(r)
    styles = {
        "Lap": ("k", "o"),
        "H3": ("tab:orange", "v"),
        "H4": ("tab:red", "^"),
        "H5": ("tab:brown", "s"),
        "O3": ("tab:cyan", "v"),
        "O4": ("tab:blue", "^"),
        "O5": ("tab:green", "s"),
    }
    metrics = [
        ("mae_union", "MAE over non-zero cells (truth or release)"),
        ("mae_true", "MAE over true non-zero cells"),
        ("mae_all", "MAE over all 811,200 cells"),
    ]
    fig, axes = plt.subplots(len(metrics), 2, figsize=(11, 4 * len(metrics)), squeeze=False)
    for col, day in enumerate(DAYS):
        for row, (metric, label) in enumerate(metrics):
            ax = axes[row][col]
            for mech, (color, marker) in styles.items():
                eps = sorted(
                    e for (s, d, m, e) in groups if s == "paper" and d == day and m == mech
                )
                if not eps:
                    continue
                ys = [_mean(groups[("paper", day, mech, e)], "trip", metric) for e in eps]
                ax.plot(eps, ys, color=color, marker=marker, label=mech)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("epsilon")
            ax.set_title(f"{day}: {label}", fontsize=10)
            ax.grid(True, which="both", alpha=0.3)
            if row == 0 and col == 0:
                ax.legend(ncol=2, fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "cbdp_errors.png", dpi=110)
    plt.close(fig)
    # released totals (the Laplace blow-up)
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    for col, day in enumerate(DAYS):
        for mech, (color, marker) in styles.items():
            eps = sorted(e for (s, d, m, e) in groups if s == "paper" and d == day and m == mech)
            if eps:
                ys = [_mean(groups[("paper", day, mech, e)], "trip", "total_released") for e in eps]
                ax[col].plot(eps, ys, color=color, marker=marker, label=mech)
        truth = [
            r["metrics"]["trip"]["total_true"]
            for r in runs
            if r.get("day") == day and "metrics" in r
        ]
        if truth:
            ax[col].axhline(truth[0], color="r", lw=1, ls="--", label="true")
        ax[col].set_xscale("log")
        ax[col].set_yscale("log")
        ax[col].set_title(f"{day}: trips released", fontsize=10)
        ax[col].set_xlabel("epsilon")
        ax[col].grid(True, which="both", alpha=0.3)
    ax[0].legend(ncol=2, fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "cbdp_totals.png", dpi=110)
    plt.close(fig)
    summary(out, runs, groups)


def _fmt(x: float) -> str:
    if x != x:
        return "-"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    return f"{x:.3g}"


def summary(out: Path, runs: list[dict[str, Any]], groups: dict[Any, list[dict[str, Any]]]) -> None:
    lines = ["# CBDP benchmark summary (generated by benchmarks/reproduce_cbdp.py plot)", ""]
    mechs = ["Lap", "H3", "H4", "H5", "O3", "O4", "O5"]
    for metric in ("mae_union", "mae_true", "mae_all"):
        lines += [f"## Leaf error ({metric}), mean over seeds", ""]
        lines.append("| day | epsilon | " + " | ".join(mechs) + " |")
        lines.append("|---|---|" + "---|" * len(mechs))
        for day in DAYS:
            for eps in EPSILONS:
                vals = [
                    _mean(groups.get(("paper", day, m, eps), []), "trip", metric) for m in mechs
                ]
                lines.append(f"| {day} | {eps:g} | " + " | ".join(_fmt(v) for v in vals) + " |")
        lines.append("")
    lines += ["## Per-feature MAE over all cells (O5 features), mean over seeds", ""]
    feats = ["total", "period", "zones", "mode", "trip"]
    lines.append("| day | epsilon | mechanism | " + " | ".join(feats) + " |")
    lines.append("|---|---|---|" + "---|" * len(feats))
    for day in DAYS:
        for eps in EPSILONS:
            for m in mechs:
                g = groups.get(("paper", day, m, eps), [])
                if g:
                    lines.append(
                        f"| {day} | {eps:g} | {m} | "
                        + " | ".join(_fmt(_mean(g, f, "mae_all")) for f in feats)
                        + " |"
                    )
    lines.append("")
    lines += ["## Released trips (true total in the first column)", ""]
    lines.append("| day | epsilon | true | " + " | ".join(mechs) + " |")
    lines.append("|---|---|---|" + "---|" * len(mechs))
    for day in DAYS:
        for eps in EPSILONS:
            g0 = groups.get(("paper", day, "O5", eps), [])
            true = g0[0]["metrics"]["trip"]["total_true"] if g0 else math.nan
            vals = [
                _mean(groups.get(("paper", day, m, eps), []), "trip", "total_released")
                for m in mechs
            ]
            lines.append(
                f"| {day} | {eps:g} | {_fmt(true)} | " + " | ".join(_fmt(v) for v in vals) + " |"
            )
    lines.append("")
    lines += ["## Negative leaves and false discovery rate at the leaves", ""]
    lines.append("| day | epsilon | " + " | ".join(f"{m} neg / FDR" for m in mechs) + " |")
    lines.append("|---|---|" + "---|" * len(mechs))
    for day in DAYS:
        for eps in EPSILONS:
            cells = []
            for m in mechs:
                g = groups.get(("paper", day, m, eps), [])
                cells.append(
                    f"{_fmt(_mean(g, 'trip', 'negative'))} / {_fmt(_mean(g, 'trip', 'fdr'))}"
                    if g
                    else "-"
                )
            lines.append(f"| {day} | {eps:g} | " + " | ".join(cells) + " |")
    lines.append("")
    abl = ["O5", "H5", "O5(a)", "O5(b)", "O5(c)"]
    for metric in ("mae_union", "mae_true", "mae_all"):
        lines += [f"## Ablation (the paper's Table 2), leaf {metric}", ""]
        lines.append(
            "| mechanism | S P W | "
            + " | ".join(f"{d} {e:g}" for d in DAYS for e in ABLATION_EPSILONS)
            + " |"
        )
        lines.append("|---|---|" + "---|" * (len(DAYS) * len(ABLATION_EPSILONS)))
        props = {"O5": "F ✓ ✓", "H5": "H ✗ ✗", "O5(a)": "H ✓ ✗", "O5(b)": "H ✓ ✓", "O5(c)": "F ✓ ✗"}
        for m in abl:
            vals = []
            for d in DAYS:
                for e in ABLATION_EPSILONS:
                    sec = "ablation" if m.startswith("O5(") else "paper"
                    vals.append(_mean(groups.get((sec, d, m, e), []), "trip", metric))
            lines.append(f"| {m} | {props[m]} | " + " | ".join(_fmt(v) for v in vals) + " |")
        lines.append("")
    lines += ["## Claims", ""]
    for metric in ("mae_union", "mae_true", "mae_all"):
        for day in DAYS:
            ratios = []
            for eps in (1.0, 0.1, 0.01):
                o5 = _mean(groups.get(("paper", day, "O5", eps), []), "trip", metric)
                h5 = _mean(groups.get(("paper", day, "H5", eps), []), "trip", metric)
                lap = _mean(groups.get(("paper", day, "Lap", eps), []), "trip", metric)
                oc = _mean(groups.get(("ablation", day, "O5(c)", eps), []), "trip", metric)
                ratios.append(
                    f"eps {eps:g}: H5/O5 {_fmt(h5 / o5)}, Lap/O5 {_fmt(lap / o5)}, "
                    f"O5(c)/O5 {_fmt(oc / o5)}"
                )
            lines.append(f"- {metric}, {day}: " + "; ".join(ratios))
    lines.append("")
    chain_runs = [r for r in runs if r.get("section") == "chain"]
    if chain_runs:
        lines += [
            "## CBDP vs InfTDA on the ODMTS chain (total > period > zones > trip), weekday",
            "",
        ]
        lines.append(
            "| epsilon (rho) | mechanism | seconds | total | period | zones | trip MAE all "
            "| trip max | trip FDR |"
        )
        lines.append("|---|---|---|---|---|---|---|---|---|")
        cg: dict[tuple[float, str], list[dict[str, Any]]] = defaultdict(list)
        for r in chain_runs:
            cg[(r["epsilon"], r["mechanism"])].append(r)
        for (eps, mech), g in sorted(cg.items()):
            sec = statistics.median(r["seconds"] for r in g)
            lines.append(
                f"| {eps:g} ({g[0].get('rho', math.nan):.4g}) | {mech} | {sec:.2f} | "
                + " | ".join(
                    _fmt(_mean(g, f, "mae_all")) for f in ("total", "period", "zones", "trip")
                )
                + f" | {_fmt(_mean(g, 'trip', 'max_abs'))} | {_fmt(_mean(g, 'trip', 'fdr'))} |"
            )
        lines.append("")
    real_runs = [r for r in runs if r.get("section") == "real"]
    if real_runs:
        lines += ["## CBDP vs InfTDA on real O/D data (O/D feature per level)", ""]
        rg: dict[tuple[str, float, str], list[dict[str, Any]]] = defaultdict(list)
        for r in real_runs:
            rg[(r["day"], r["epsilon"], r["mechanism"])].append(r)
        for (ds, eps, mech), g in sorted(rg.items()):
            ok = [r for r in g if "metrics" in r]
            if not ok:
                lines.append(f"- {ds} eps {eps:g} {mech}: refused: {g[0].get('refused')}")
                continue
            feats = list(ok[0]["metrics"])
            sec = statistics.median(r["seconds"] for r in ok)
            per = ", ".join(
                f"{f}: MAE all {_fmt(_mean(ok, f, 'mae_all'))} / union "
                f"{_fmt(_mean(ok, f, 'mae_union'))} / max {_fmt(_mean(ok, f, 'max_abs'))}"
                for f in feats
            )
            lines.append(
                f"- {ds} eps {eps:g} {mech} ({sec:.1f} s): {per}; "
                f"leaf FDR {_fmt(_mean(ok, feats[-1], 'fdr'))}"
            )
        lines.append("")
    for r in runs:
        if r.get("section") == "speed":
            lines.append(
                f"- speed ({r['domain']} domain, {r['leaf_cells']:,} leaf cells, "
                f"{r['trips']:,} trips): "
                f"release {r['release_s']:.2f} s wall "
                f"({r.get('release_cpu_s', math.nan):.2f} s CPU, "
                f"load average {r.get('load_average', math.nan):.1f}), GROUPING SETS scan "
                f"{r['scan_s'] * 1000:.1f} ms, "
                f"ratio {r['ratio']:.0f}x; stages "
                f"{json.dumps({k: round(v, 3) for k, v in r['stages'].items()})}"
            )
        if r.get("section") == "scaling":
            if "refused" in r:
                lines.append(f"- scaling {r['leaf_cells']:,} cells: refused: {r['refused']}")
            else:
                lines.append(
                    f"- scaling {r['leaf_cells']:,} cells ({r['trips']:,} trips): "
                    f"{r['seconds']:.2f} s "
                    f"({r.get('cpu_seconds', math.nan):.2f} s CPU), "
                    f"peak RSS {r['peak_rss_mb']:.0f} MB "
                    f"({r['bytes_per_cell']:.0f} B/cell over the "
                    f"{r['rss_before_mb']:.0f} MB before), {r['newton_steps']} Newton steps"
                )
    (out / "cbdp_summary.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {out / 'cbdp_summary.md'}")


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "what",
        choices=[
            "paper",
            "chain",
            "real",
            "speed",
            "scaling",
            "plot",
            "all",
            "_scaling_one",
            "_scaling_data",
        ],
    )
    p.add_argument("--db", help="database file of one scaling size (internal)")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--real-reps", type=int, default=2)
    p.add_argument("--speed-reps", type=int, default=5)
    p.add_argument("--epsilons", nargs="+", type=float, default=list(EPSILONS))
    p.add_argument("--chain-epsilons", nargs="+", type=float, default=[0.1, 1.0, 10.0])
    p.add_argument("--days", nargs="+", default=list(DAYS))
    p.add_argument("--real", nargs="+", default=["portugal", "uk"])
    p.add_argument("--stops", nargs="+", type=int, default=[130, 200, 300, 460])
    p.add_argument("--max-cells", type=int, default=inftda_sql.mechanisms.DEFAULT_MAX_CELLS)
    p.add_argument("--one-stops", type=int)
    p.add_argument("--out", type=Path, default=HERE / "paper")
    args = p.parse_args(argv)
    if args.what == "_scaling_one":
        print(json.dumps(scaling_one(args.one_stops, args.max_cells, args.db)))
        return
    if args.what == "_scaling_data":
        scaling_data(args.one_stops, args.db)
        return
    out = args.out
    if args.quick:
        out = out / "cbdp_quick"
        args.reps, args.real_reps, args.speed_reps = 1, 1, 2
        args.epsilons, args.chain_epsilons = [1.0, 0.01], [1.0]
        args.real, args.stops = ["portugal"], [130, 200]
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    steps = (
        ["paper", "chain", "real", "speed", "scaling", "plot"]
        if args.what == "all"
        else [args.what]
    )
    for step in steps:
        globals()[step](args, out)


if __name__ == "__main__":
    main()
