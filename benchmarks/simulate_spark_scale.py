"""Simulate the Spark scale-out plan (benchmarks/SPARK_SCALE_OUT.md) on one machine.

    python benchmarks/simulate_spark_scale.py                      # one state: 1/50 of LODES
    python benchmarks/simulate_spark_scale.py --fraction 0.1 --cores 2

A LODES-like O/D table (state > county > tract > block group > block on both sides, one row per
non-empty home block x work block pair with its number of workers, the count column ``n``) is
generated at ``--fraction`` of the national size (8M blocks; the number of workers is chosen so
that the pairs come out near ``fraction`` x 100M), written as parquet with one public geography
table, and released on Spark in local mode with the partitioning the plan prescribes: input
splits of 128 MB, the cells' shuffle in partitions of about 2M cells, and every TopDown level
co-grouped in one task per block of parents (about 2**20 children each, the engine's default).
From Spark's event log it reports, per level, the tasks, the per-task (per-partition) executor
time (median and max), the bytes shuffled and the children noised per task-second; the same
release on DuckDB checks the table is identical (seeded) and gives the one-machine time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_spark import run_sampled

SEED = 2024
LEVELS = ["state", "county", "tract", "bg", "block"]
HIERARCHY = [[f"o_{c}" for c in LEVELS], [f"d_{c}" for c in LEVELS]]
NATIONAL_BLOCKS = 8_000_000
NATIONAL_PAIRS = 100_000_000


def _geography(rng: np.random.Generator, fraction: float) -> dict[str, np.ndarray]:
    """Nested integer codes, national shape: 51 states, ~62 counties per state, ~27 tracts per
    county, ~2.8 block groups per tract, ~33 blocks per block group."""
    blocks_wanted = NATIONAL_BLOCKS * fraction
    counties = max(1, round(blocks_wanted / (27.5 * 3 * 33.5)))
    county_state = np.repeat(np.arange(-(-counties // 62)), 62)[:counties]
    tract_county = np.repeat(np.arange(counties), rng.integers(14, 42, size=counties))
    bg_tract = np.repeat(np.arange(tract_county.size), rng.integers(2, 5, size=tract_county.size))
    block_bg = np.repeat(np.arange(bg_tract.size), rng.integers(10, 58, size=bg_tract.size))
    tract = bg_tract[block_bg]
    county = tract_county[tract]
    return {
        "state": county_state[county],
        "county": county,
        "tract": tract,
        "bg": block_bg,
        "block": np.arange(block_bg.size),
    }


def _pairs(rng: np.random.Generator, geo: dict[str, np.ndarray], workers: int) -> np.ndarray:
    """Home block by a log-normal population; work block in the home county (55%) or in a county
    of the state weighted by its jobs (45%), then by Pareto(2) jobs within the county."""
    n = geo["block"].size
    county = geo["county"]
    residents = rng.lognormal(0, 1.0, n)
    jobs = rng.pareto(2.0, n) + 0.05
    home = rng.choice(n, size=workers, p=residents / residents.sum())
    cum = np.cumsum(jobs)
    starts = np.flatnonzero(np.r_[True, county[1:] != county[:-1]])
    lo = np.r_[0.0, cum][starts]
    hi = cum[np.r_[starts[1:], n] - 1]
    county_jobs = hi - lo
    work_county = county[home].copy()
    away = rng.random(workers) < 0.45
    state_of = geo["state"][starts]
    for s in np.unique(state_of):  # a county of the same state, by its jobs
        in_state = np.flatnonzero(state_of == s)
        pick = away & (state_of[county[home]] == s)
        p = county_jobs[in_state] / county_jobs[in_state].sum()
        work_county[pick] = rng.choice(in_state, size=int(pick.sum()), p=p)
    target = lo[work_county] + rng.random(workers) * county_jobs[work_county]
    work = np.minimum(np.searchsorted(cum, target, side="right"), n - 1)
    return home.astype(np.int64) * n + work


def _prepare(work: Path, fraction: float) -> dict[str, Any]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    meta = work / "meta.json"
    if meta.exists():
        return dict(json.loads(meta.read_text()))
    rng = np.random.default_rng(SEED)
    geo = _geography(rng, fraction)
    n = geo["block"].size
    workers = int(NATIONAL_PAIRS * fraction * 1.6)
    keys, counts = np.unique(_pairs(rng, geo, workers), return_counts=True)
    o, d = keys // n, keys % n
    (work / "od").mkdir(parents=True, exist_ok=True)
    table = pa.table(
        {
            **{f"o_{c}": geo[c][o] for c in LEVELS},
            **{f"d_{c}": geo[c][d] for c in LEVELS},
            "n": counts.astype(np.int64),
        }
    )
    order = np.random.default_rng(1).permutation(table.num_rows)  # no helpful input order
    pq.write_table(table.take(order), work / "od" / "part-0.parquet", row_group_size=1 << 20)
    pq.write_table(pa.table(geo), work / "geo.parquet")
    info = {
        "fraction": fraction,
        "states": int(np.unique(geo["state"]).size),
        "counties": int(np.unique(geo["county"]).size),
        "tracts": int(np.unique(geo["tract"]).size),
        "block_groups": int(np.unique(geo["bg"]).size),
        "blocks": int(n),
        "workers": workers,
        "pairs": int(keys.size),
        "parquet_mb": round((work / "od" / "part-0.parquet").stat().st_size / 2**20, 1),
    }
    meta.write_text(json.dumps(info))
    return info


def _task_steps(log_dir: Path) -> list[dict[str, Any]]:
    """Per labelled step: its tasks' executor run times (the per-partition times) and bytes."""
    job_desc: dict[int, str] = {}
    stage_job: dict[int, int] = {}
    tasks: dict[str, list[float]] = defaultdict(list)
    shuffle: dict[str, float] = defaultdict(float)
    wall: dict[str, float] = defaultdict(float)
    start: dict[int, int] = {}
    for path in sorted(p for p in log_dir.rglob("*") if p.is_file()):
        for line in path.read_text(errors="replace").splitlines():
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            kind = ev.get("Event") if isinstance(ev, dict) else None
            if kind == "SparkListenerJobStart":
                job_desc[ev["Job ID"]] = (ev.get("Properties") or {}).get(
                    "spark.job.description"
                ) or "other"
                start[ev["Job ID"]] = ev["Submission Time"]
                for sid in ev.get("Stage IDs", []):
                    stage_job[sid] = ev["Job ID"]
            elif kind == "SparkListenerJobEnd":
                desc = job_desc.get(ev["Job ID"], "other")
                wall[desc] += (ev["Completion Time"] - start[ev["Job ID"]]) / 1000
            elif kind == "SparkListenerTaskEnd":
                desc = job_desc.get(stage_job.get(ev["Stage ID"], -1), "other")
                m = ev.get("Task Metrics") or {}
                tasks[desc].append(m.get("Executor Run Time", 0) / 1000)
                shuffle[desc] += (m.get("Shuffle Write Metrics") or {}).get(
                    "Shuffle Bytes Written", 0
                )
    out = []
    for desc, times in tasks.items():
        busy = [t for t in times if t > 0.0]
        out.append(
            {
                "step": desc,
                "wall_s": round(wall[desc], 2),
                "tasks": len(times),
                "task_s_median": round(statistics.median(busy), 3) if busy else 0.0,
                "task_s_max": round(max(times), 3),
                "task_s_sum": round(sum(times), 2),
                "shuffle_mb": round(shuffle[desc] / 2**20, 1),
            }
        )
    return sorted(out, key=lambda s: s["step"])


def _worker_spark(work: Path, cores: int, memory: str, cells_per_partition: int) -> dict[str, Any]:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    log_dir, warehouse = work / f"events_{cores}", work / f"warehouse_{cores}"
    for folder in (log_dir, warehouse):
        if folder.exists():
            shutil.rmtree(folder)
    log_dir.mkdir()
    from pyspark.sql import SparkSession

    import inftda_sql.spark
    from inftda_sql import Domain

    meta = json.loads((work / "meta.json").read_text())
    shuffle_partitions = max(cores, -(-meta["pairs"] // cells_per_partition))
    spark = (
        SparkSession.builder.master(f"local[{cores}]")
        .config("spark.driver.memory", memory)
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.sql.files.maxPartitionBytes", str(128 << 20))
        .config("spark.ui.enabled", "false")
        .config("spark.eventLog.enabled", "true")
        .config("spark.eventLog.dir", str(log_dir))
        .config("spark.eventLog.compress", "false")
        .config("spark.sql.warehouse.dir", str(warehouse))
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    od = spark.read.parquet(str(work / "od"))
    geo = spark.read.parquet(str(work / "geo.parquet"))
    t0 = time.perf_counter()
    r = inftda_sql.spark.release(
        spark,
        od,
        hierarchy=HIERARCHY,
        domain=Domain(geo),
        count="n",
        rho=1.0,
        seed=SEED,
        output="od_private",
        overwrite=True,
    )
    seconds = time.perf_counter() - t0
    out = spark.table("od_private").toArrow()
    spark.stop()
    import duckdb

    con = duckdb.connect()
    con.register("out", out)
    digest = con.execute("SELECT count(*), sum(hash(o_block, d_block, count)) FROM out").fetchall()
    return {
        "engine": f"spark local[{cores}]",
        "shuffle_partitions": shuffle_partitions,
        "release_seconds": round(seconds, 1),
        "stages": {k: round(v, 1) for k, v in r.timings.items()},
        "levels": [
            (lv.name, lv.parents, lv.noised_cells, lv.surviving_cells, round(lv.seconds, 1))
            for lv in r.levels
        ],
        "digest": [int(digest[0][0]), str(digest[0][1])],
        "steps": _task_steps(log_dir),
    }


def _worker_duckdb(work: Path) -> dict[str, Any]:
    import duckdb

    import inftda_sql
    from inftda_sql import Domain

    con = duckdb.connect()
    con.execute(f"CREATE TABLE od AS SELECT * FROM '{work / 'od'}/*.parquet'").fetchall()
    con.execute(f"CREATE TABLE geo AS SELECT * FROM '{work / 'geo.parquet'}'").fetchall()
    t0 = time.perf_counter()
    r = inftda_sql.release(
        con, "od", hierarchy=HIERARCHY, domain=Domain("geo"), count="n", rho=1.0, seed=SEED
    )
    seconds = time.perf_counter() - t0
    digest = con.execute(
        f"SELECT count(*), sum(hash(o_block, d_block, count)) FROM {r.output}"
    ).fetchall()
    return {
        "engine": "duckdb",
        "release_seconds": round(seconds, 1),
        "stages": {k: round(v, 1) for k, v in r.timings.items()},
        "digest": [int(digest[0][0]), str(digest[0][1])],
    }


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--fraction", type=float, default=0.02, help="of the national size")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--memory", default="6g")
    ap.add_argument("--cells-per-partition", type=int, default=2_000_000)
    ap.add_argument("--work", default="/tmp/inftda_sim_spark")
    ap.add_argument("--engines", default="spark,duckdb")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    work = Path(args.work) / f"fraction_{args.fraction}"
    if args.worker == "spark":
        res = _worker_spark(work, args.cores, args.memory, args.cells_per_partition)
        print(json.dumps(res))
        return
    if args.worker == "duckdb":
        print(json.dumps(_worker_duckdb(work)))
        return
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    info = _prepare(work, args.fraction)
    print(f"data ready in {time.perf_counter() - t0:.0f} s:", json.dumps(info), flush=True)
    with open("/proc/loadavg") as f:
        print("load average:", f.read().split()[:3], flush=True)
    common = ["--fraction", str(args.fraction), "--work", args.work, "--cores", str(args.cores)]
    common += ["--memory", args.memory, "--cells-per-partition", str(args.cells_per_partition)]
    results = []
    for engine in args.engines.split(","):
        res = run_sampled(["--worker", engine, *common], __file__, 0.5)
        results.append(res)
        print(json.dumps(res), flush=True)
    print("same table on every engine:", len({json.dumps(r.get("digest")) for r in results}) == 1)


if __name__ == "__main__":
    main()
