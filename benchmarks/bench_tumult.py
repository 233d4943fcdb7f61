"""A peer, side by side: per-level noisy counts by Tumult Analytics against our Spark release.

    python benchmarks/bench_tumult.py --scale 0.1 --rounds 2
    python benchmarks/bench_tumult.py --tumult-python /tmp/tumult-venv/bin/python

Tumult Analytics (``tmlt.analytics``) pins its own pyspark (3.5 for 0.21), so it lives in a
separate virtualenv (``python3 -m venv /tmp/tumult-venv && /tmp/tumult-venv/bin/pip install
tmlt.analytics``) and runs as a subprocess with that venv's python; this file is its worker too
(the Tumult worker imports nothing of ``inftda_sql``).

The data are made once with this venv (``inftda_sql.synthetic.italy_like``, one row per trip;
parquet), and every side reads the same parquet files:

* **Tumult** (``local[2]``): a zCDP session over the trips (``AddOneRow``: a neighbour adds or
  removes one trip) with the same rho as ours; one ``groupby(KeySet).count()`` per level of the
  hierarchy, the root (the total) included, the KeySet being the public domain of the level
  (the product of the geography's projections); the rho split evenly over the 7 queries; the
  default count mechanism (under zCDP: Gaussian noise on integers). Its output: the noisy count
  of every cell of every level's public domain.
* **ours on Spark** (``local[2]``): ``inftda_sql.spark.release(..., privacy="unbounded")``: the
  same neighbours, the same 7 noised levels (root included), the rho split evenly by default;
  the output is the consistent, non-negative integer leaf table (its per-level counts are its
  sums).
* **ours on DuckDB**: ``inftda_sql.release`` with the same arguments, for reference.

No seed anywhere (every side draws from its own CSPRNG-backed sampler). Each run is a fresh
process (the JVM's start is timed apart); the rounds alternate the sides. Peak RSS is the whole
process tree (JVM, Python workers), sampled every 0.2 s. The errors are against the true counts
(DuckDB over the same parquet) over the whole public domain of each level: a cell absent from an
output or from the data counts as 0.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

ORIGIN = ["o_region", "o_province", "o_mun"]
DESTINATION = ["d_region", "d_province", "d_mun"]
#: the noised levels, root first: (origin columns, destination columns)
LEVELS: list[tuple[list[str], list[str]]] = (
    [([], [])]
    + [(ORIGIN[: i + 1], []) for i in range(3)]
    + [(ORIGIN, DESTINATION[: j + 1]) for j in range(3)]
)


def _level_name(k: int) -> str:
    o, d = LEVELS[k]
    return " x ".join(c for c in (o[-1:] + d[-1:])) or "root"


def _spark(cores: int, memory: str, work: Path, tumult: bool) -> Any:
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(f"local[{cores}]")
    if tumult:  # Tumult's own recommended settings for Java 11+
        from tmlt.core.utils.configuration import get_java11_config

        builder = builder.config(conf=get_java11_config())
    tag = "tumult" if tumult else "ours"
    warehouse = work / f"warehouse_{tag}"
    if warehouse.exists():
        shutil.rmtree(warehouse)
    spark = (
        builder.config("spark.driver.memory", memory)
        .config("spark.sql.shuffle.partitions", str(4 * cores))
        .config("spark.ui.enabled", "false")
        .config("spark.sql.warehouse.dir", str(warehouse))
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _worker_tumult(work: Path, rho: float, memory: str, out: Path) -> dict[str, Any]:
    os.environ["PYSPARK_PYTHON"] = sys.executable  # the workers must import tmlt too
    t0 = time.perf_counter()
    spark = _spark(2, memory, work, tumult=True)
    start = time.perf_counter() - t0
    from tmlt.analytics import AddOneRow, KeySet, QueryBuilder, RhoZCDPBudget, Session

    trips = spark.read.parquet(str(work / "trips"))
    geo_o = spark.read.parquet(str(work / "geo_origin.parquet"))
    geo_d = spark.read.parquet(str(work / "geo_destination.parquet"))
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "progress.jsonl", "a") as f:
        f.write(json.dumps({"jvm_start_seconds": round(start, 1)}) + "\n")
    t0 = time.perf_counter()
    session = Session.from_dataframe(
        privacy_budget=RhoZCDPBudget(rho),
        source_id="trips",
        dataframe=trips,
        protected_change=AddOneRow(),
    )
    per_level = []
    share = RhoZCDPBudget(rho / len(LEVELS))
    for k, (o, d) in enumerate(LEVELS):
        t1 = time.perf_counter()
        query = QueryBuilder("trips")
        if o or d:
            parts = [
                KeySet.from_dataframe(g.select(*c).distinct())
                for g, c in ((geo_o, o), (geo_d, d))
                if c
            ]
            keys = parts[0] if len(parts) == 1 else parts[0] * parts[1]
            result = session.evaluate(query.groupby(keys).count(), share)
        else:
            result = session.evaluate(query.count(), share)
        result.write.mode("overwrite").parquet(str(out / f"level_{k}"))
        per_level.append(round(time.perf_counter() - t1, 2))
        with open(out / "progress.jsonl", "a") as f:  # what is done, should the run be cut
            f.write(json.dumps({"level": _level_name(k), "seconds": per_level[-1]}) + "\n")
    seconds = time.perf_counter() - t0
    import importlib.metadata as md

    spark.stop()
    return {
        "engine": "tumult local[2]",
        "version": f"tmlt.analytics {md.version('tmlt.analytics')}, "
        f"pyspark {md.version('pyspark')}",
        "jvm_start_seconds": round(start, 1),
        "release_seconds": round(seconds, 2),
        "level_seconds": per_level,
        "remaining_budget": str(session.remaining_privacy_budget),
    }


def _release_args(rho: float) -> dict[str, Any]:
    return {
        "hierarchy": [ORIGIN, DESTINATION],
        "rho": rho,
        "privacy": "unbounded",
        "output": "trips_private",
        "overwrite": True,
    }


def _worker_ours_spark(work: Path, rho: float, memory: str, out: Path) -> dict[str, Any]:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    t0 = time.perf_counter()
    spark = _spark(2, memory, work, tumult=False)
    start = time.perf_counter() - t0
    import inftda_sql.spark

    trips = spark.read.parquet(str(work / "trips"))
    geo = [
        spark.read.parquet(str(work / f"{v}.parquet")) for v in ("geo_origin", "geo_destination")
    ]
    t0 = time.perf_counter()
    r = inftda_sql.spark.release(
        spark, trips, domain=geo, ledger=str(work / "ledger_ours"), **_release_args(rho)
    )
    seconds = time.perf_counter() - t0
    spark.table(r.output).write.mode("overwrite").parquet(str(out / "leaf"))
    spark.stop()
    return {
        "engine": "ours spark local[2]",
        "jvm_start_seconds": round(start, 1),
        "release_seconds": round(seconds, 2),
        "level_seconds": [round(lv.seconds, 2) for lv in r.levels],
        "level_rho": [lv.rho for lv in r.levels] if hasattr(r.levels[0], "rho") else None,
    }


def _worker_ours_duckdb(work: Path, rho: float, out: Path) -> dict[str, Any]:
    import duckdb

    import inftda_sql

    db = work / "duckdb_run.duckdb"
    db.unlink(missing_ok=True)
    con = duckdb.connect(str(db))
    con.execute(f"CREATE VIEW trips AS SELECT * FROM read_parquet('{work / 'trips'}/*.parquet')")
    for v in ("geo_origin", "geo_destination"):
        con.execute(f"CREATE VIEW {v} AS SELECT * FROM read_parquet('{work / v}.parquet')")
    t0 = time.perf_counter()
    r = inftda_sql.release(
        con, "trips", domain=["geo_origin", "geo_destination"], **_release_args(rho)
    )
    seconds = time.perf_counter() - t0
    out.mkdir(parents=True, exist_ok=True)
    con.execute(f"COPY trips_private TO '{out / 'leaf.parquet'}' (FORMAT parquet)")
    con.close()
    return {
        "engine": "ours duckdb",
        "release_seconds": round(seconds, 2),
        "level_seconds": [round(lv.seconds, 2) for lv in r.levels],
    }


def _errors(work: Path, out: Path, tumult: bool) -> list[dict[str, Any]]:
    """Per level: max |noisy - true| over the public domain, cells, negatives, fractional,
    and (Tumult) how many parents differ from the sum of their noisy children."""
    import duckdb

    con = duckdb.connect()
    trips = f"read_parquet('{work / 'trips'}/*.parquet')"
    rows = []
    for k, (o, d) in enumerate(LEVELS):
        cols = o + d
        keys = ", ".join(cols)
        group = f"GROUP BY {keys}" if cols else ""
        true = f"(SELECT {keys + ',' if cols else ''} count(*) AS t FROM {trips} {group})"
        if tumult:
            level = f"read_parquet('{out / f'level_{k}'}/*.parquet')"
            noisy = f"(SELECT {keys + ',' if cols else ''} count AS n FROM {level})"
        else:
            leaf = out / "leaf" if (out / "leaf").exists() else out / "leaf.parquet"
            src = (
                f"read_parquet('{leaf}/*.parquet')" if leaf.is_dir() else f"read_parquet('{leaf}')"
            )
            noisy = f"(SELECT {keys + ',' if cols else ''} sum(count) AS n FROM {src} {group})"
        on = " AND ".join(f"a.{c} = b.{c}" for c in cols) or "TRUE"
        err, cells, neg, frac = con.execute(
            f"SELECT max(abs(coalesce(a.n, 0) - coalesce(b.t, 0))), count(a.n), "
            f"count(*) FILTER (WHERE a.n < 0), count(*) FILTER (WHERE a.n <> floor(a.n)) "
            f"FROM {noisy} a FULL OUTER JOIN {true} b ON {on}"
        ).fetchone()
        row = {
            "level": _level_name(k),
            "max_abs_error": float(err),
            "cells": int(cells),
            "negative": int(neg),
            "fractional": int(frac),
        }
        if tumult and k > 0:
            po, pd_ = LEVELS[k - 1]
            pcols = po + pd_
            pkeys = ", ".join(pcols)
            pgroup = f"GROUP BY {pkeys}" if pcols else ""
            children = (
                f"(SELECT {pkeys + ',' if pcols else ''} sum(count) AS s FROM {level} {pgroup})"
            )
            parent = f"read_parquet('{out / f'level_{k - 1}'}/*.parquet')"
            on = " AND ".join(f"a.{c} = b.{c}" for c in pcols) or "TRUE"
            bad, worst = con.execute(
                f"SELECT count(*) FILTER (WHERE a.s <> b.count), max(abs(a.s - b.count)) "
                f"FROM {children} a JOIN {parent} b ON {on}"
            ).fetchone()
            row["parents_inconsistent"] = int(bad)
            row["max_parent_gap"] = float(worst)
        rows.append(row)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--scale", type=float, default=0.1)
    ap.add_argument("--rho", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--work", default="/tmp/inftda_bench_tumult")
    ap.add_argument("--memory", default="4g", help="Spark driver memory (local mode)")
    ap.add_argument("--tumult-python", default="/tmp/tumult-venv/bin/python")
    ap.add_argument("--sides", default="tumult,spark,duckdb")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    work = Path(args.work) / f"scale_{args.scale}"
    if args.worker:
        out = Path(args.out)
        if args.worker == "tumult":
            res = _worker_tumult(work, args.rho, args.memory, out)
        elif args.worker == "spark":
            res = _worker_ours_spark(work, args.rho, args.memory, out)
        else:
            res = _worker_ours_duckdb(work, args.rho, out)
        print(json.dumps(res))
        return
    sys.path.insert(0, str(Path(__file__).parent))
    from bench_spark import _prepare, run_sampled

    work.mkdir(parents=True, exist_ok=True)
    _prepare(work, args.scale)
    with open("/proc/loadavg") as f:
        print("load average at start:", f.read().split()[:3], flush=True)
    results: list[dict[str, Any]] = []
    for rnd in range(args.rounds):
        for side in args.sides.split(","):
            out = work / f"out_{side}_{rnd}"
            if out.exists():
                shutil.rmtree(out)
            python = args.tumult_python if side == "tumult" else sys.executable
            common = ["--scale", str(args.scale), "--rho", str(args.rho), "--work", args.work]
            res = run_sampled(
                ["--worker", side, "--out", str(out), "--memory", args.memory, *common],
                __file__,
                python=python,
            )
            res["round"] = rnd
            if "error" not in res:
                res["errors"] = _errors(work, out, tumult=side == "tumult")
            with open("/proc/loadavg") as f:
                res["load_after"] = f.read().split()[:3]
            results.append(res)
            print(json.dumps(res), flush=True)
    print("\n| round | side | release s | JVM start s | process s | peak RSS MB |")
    print("|---|---|---:|---:|---:|---:|")
    for r in results:
        print(
            f"| {r['round']} | {r.get('engine', r.get('error', '')[:60])} | "
            f"{r.get('release_seconds')} | "
            f"{r.get('jvm_start_seconds', '-')} | {r['process_seconds']} | {r['peak_rss_mb']} |"
        )


if __name__ == "__main__":
    main()
