"""The same release on DuckDB and on Spark (local mode, 1 and 2 cores), side by side in one run.

    python benchmarks/bench_spark.py                 # Italy-scale synthetic: 28.8M trips, 6 levels
    python benchmarks/bench_spark.py --scale 0.05    # a quick look
    python benchmarks/bench_spark.py --kernel        # the per-block kernel alone (children/s)
    python benchmarks/bench_spark.py --inputs micro,counts --engines duckdb,spark2

``--inputs counts`` releases the same trips pre-aggregated to one row per distinct path of the
six hierarchy columns with their number of trips in ``n`` (``count="n"``): the same cells, so
the same seeded table; the summary gives the scan's seconds (wall, and on Spark its jobs'
executor run and CPU time) per input row of each input: a count table against microdata.

The data are made once (``inftda_sql.synthetic.italy_like``, one row per trip) in a DuckDB file
and exported to parquet; then each engine runs in a fresh subprocess: DuckDB reads its table,
Spark reads the parquet files as an external table (``local[1]`` and ``local[2]``: the executor
cores of local mode). Every run is seeded with the same seed, so the three outputs must be the
same table (checked). Peak memory is the largest sum of the resident sets of the subprocess
and all its descendants (the JVM, the Python workers), sampled every 0.2 s. Where Spark's time
goes comes from its event log: the wall time, executor run time and bytes shuffled of the
jobs of each step (the engine labels them ``inftda_sql ...``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

HIERARCHY = [["o_region", "o_province", "o_mun"], ["d_region", "d_province", "d_mun"]]
SEED = 2024


def _tree_rss_mb(pid: int) -> float:
    """Resident set of ``pid`` and all its descendants, in MB."""
    children: dict[int, list[int]] = defaultdict(list)
    rss: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        ppid = vm = 0
        for line in status.splitlines():
            if line.startswith("PPid:"):
                ppid = int(line.split()[1])
            elif line.startswith("VmRSS:"):
                vm = int(line.split()[1])
        children[ppid].append(int(entry.name))
        rss[int(entry.name)] = vm
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        total += rss.get(p, 0)
        stack += children.get(p, [])
    return total / 1024


def run_sampled(
    args: list[str], script: str = __file__, interval: float = 0.2, python: str = sys.executable
) -> dict[str, Any]:
    """Run ``script`` with ``args`` as a worker subprocess of interpreter ``python`` (its last
    output line is JSON; else the end of its stderr is the result's ``error``), sampling the peak
    RSS of its process tree (JVM and Python workers) every ``interval`` s."""
    proc = subprocess.Popen([python, script, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    peak = [0.0]

    def sample() -> None:
        while proc.poll() is None:
            peak[0] = max(peak[0], _tree_rss_mb(proc.pid))
            time.sleep(interval)

    t = threading.Thread(target=sample, daemon=True)
    t0 = time.perf_counter()
    t.start()
    out, err = proc.communicate()
    wall = time.perf_counter() - t0
    t.join()
    lines = out.decode().strip().splitlines()
    try:
        result: dict[str, Any] = json.loads(lines[-1])
    except (IndexError, ValueError):
        result = {"error": err.decode()[-3000:] or "no output"}
    result["process_seconds"] = round(wall, 1)
    result["peak_rss_mb"] = round(peak[0])
    return result


INPUTS = {"micro": "trips", "counts": "trips_counts"}  # --inputs: the table (and parquet folder)


def _prepare(work: Path, scale: float, inputs: list[str]) -> dict[str, int]:
    """Make the data once (the microdata, and the count table if asked); the rows per input."""
    import duckdb

    from inftda_sql.synthetic import italy_like

    db = work / "italy.duckdb"
    con = duckdb.connect(str(db))
    if not ((work / "trips").exists() and db.exists()):
        italy_like(con, scale=scale, microdata=True, overwrite=True)
        for view in ("geo_origin", "geo_destination"):
            con.execute(f"COPY (SELECT * FROM {view}) TO '{work / view}.parquet' (FORMAT parquet)")
    if "counts" in inputs and not (work / "trips_counts").exists():
        cols = ", ".join(col for chain in HIERARCHY for col in chain)
        con.execute(
            f"CREATE OR REPLACE TABLE trips_counts AS SELECT {cols}, count(*)::BIGINT AS n "
            f"FROM trips GROUP BY ALL"
        )
    rows = {}
    for name in inputs:
        table = INPUTS[name]
        if not (work / table).exists():
            (work / table).mkdir()
            con.execute(
                f"COPY {table} TO '{work / table}' "
                "(FORMAT parquet, PER_THREAD_OUTPUT true, OVERWRITE true)"
            ).fetchall()
        rows[name] = int(con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0])
    con.close()
    return rows


def _worker_duckdb(work: Path, inp: str) -> dict[str, Any]:
    import duckdb

    import inftda_sql

    con = duckdb.connect(str(work / "italy.duckdb"))
    t0 = time.perf_counter()
    r = inftda_sql.release(
        con,
        INPUTS[inp],
        hierarchy=HIERARCHY,
        count="n" if inp == "counts" else None,
        domain=["geo_origin", "geo_destination"],
        rho=1.0,
        seed=SEED,
        output="trips_private",
        overwrite=True,
    )
    seconds = time.perf_counter() - t0
    digest = con.execute(
        "SELECT count(*), sum(hash(o_mun, d_mun, count)) FROM trips_private"
    ).fetchall()[0]
    return {
        "engine": "duckdb",
        "release_seconds": round(seconds, 2),
        "stages": {k: round(v, 2) for k, v in r.timings.items()},
        "levels": [
            (lv.name, lv.noised_cells, lv.surviving_cells, round(lv.seconds, 2)) for lv in r.levels
        ],
        "digest": [int(digest[0]), str(digest[1])],
    }


def _event_steps(log_dir: Path) -> list[dict[str, Any]]:
    """Per labelled step: jobs' wall time, executor run time and shuffle/input bytes."""
    job_desc: dict[int, str] = {}
    stage_job: dict[int, int] = {}
    job_time: dict[int, list[float]] = {}
    stage_metrics: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for path in sorted(p for p in log_dir.rglob("*") if p.is_file()):
        for line in path.read_text(errors="replace").splitlines():
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            if not isinstance(ev, dict):
                continue
            kind = ev.get("Event")
            if kind == "SparkListenerJobStart":
                jid = ev["Job ID"]
                job_desc[jid] = (ev.get("Properties") or {}).get("spark.job.description") or "other"
                for sid in ev.get("Stage IDs", []):
                    stage_job[sid] = jid
                job_time[jid] = [ev["Submission Time"], ev["Submission Time"]]
            elif kind == "SparkListenerJobEnd":
                job_time[ev["Job ID"]][1] = ev["Completion Time"]
            elif kind == "SparkListenerTaskEnd":
                m = ev.get("Task Metrics") or {}
                s = stage_metrics[ev["Stage ID"]]
                s["tasks"] += 1
                s["run_ms"] += m.get("Executor Run Time", 0)
                s["cpu_ns"] += m.get("Executor CPU Time", 0)
                s["gc_ms"] += m.get("JVM GC Time", 0)
                s["shuffle_write"] += (m.get("Shuffle Write Metrics") or {}).get(
                    "Shuffle Bytes Written", 0
                )
                s["input"] += (m.get("Input Metrics") or {}).get("Bytes Read", 0)
    steps: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for jid, desc in job_desc.items():
        a, b = job_time[jid]
        steps[desc]["wall_s"] += (b - a) / 1000
        steps[desc]["jobs"] += 1
    for sid, m in stage_metrics.items():
        desc = job_desc.get(stage_job.get(sid, -1), "other")
        for key, value in m.items():
            steps[desc][key] += value
    out = []
    for desc, m in steps.items():
        out.append(
            {
                "step": desc,
                "jobs": int(m["jobs"]),
                "wall_s": round(m["wall_s"], 2),
                "tasks": int(m["tasks"]),
                "executor_run_s": round(m["run_ms"] / 1000, 2),
                "executor_cpu_s": round(m["cpu_ns"] / 1e9, 2),
                "gc_s": round(m["gc_ms"] / 1000, 2),
                "shuffle_write_mb": round(m["shuffle_write"] / 2**20, 1),
                "input_mb": round(m["input"] / 2**20, 1),
            }
        )
    return sorted(out, key=lambda x: -x["wall_s"])


def _worker_spark(work: Path, cores: int, memory: str, inp: str) -> dict[str, Any]:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    log_dir = work / f"events_{cores}"
    import shutil

    for folder in (log_dir, work / f"warehouse_{cores}"):  # the catalog is in memory: start clean
        if folder.exists():
            shutil.rmtree(folder)
    log_dir.mkdir()
    t0 = time.perf_counter()
    from pyspark.sql import SparkSession

    import inftda_sql.spark

    spark = (
        SparkSession.builder.master(f"local[{cores}]")
        .config("spark.driver.memory", memory)
        .config("spark.sql.shuffle.partitions", str(4 * cores))
        .config("spark.ui.enabled", "false")
        .config("spark.eventLog.enabled", "true")
        .config("spark.eventLog.dir", str(log_dir))
        .config("spark.eventLog.rolling.enabled", "false")
        .config("spark.eventLog.compress", "false")
        .config("spark.sql.warehouse.dir", str(work / f"warehouse_{cores}"))
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    start = time.perf_counter() - t0
    trips = spark.read.parquet(str(work / INPUTS[inp]))
    geo = [
        spark.read.parquet(str(work / f"{v}.parquet")) for v in ("geo_origin", "geo_destination")
    ]
    t0 = time.perf_counter()
    r = inftda_sql.spark.release(
        spark,
        trips,
        hierarchy=HIERARCHY,
        count="n" if inp == "counts" else None,
        domain=geo,
        rho=1.0,
        seed=SEED,
        output="trips_private",
        overwrite=True,
    )
    seconds = time.perf_counter() - t0
    out = spark.table("trips_private").toArrow()
    spark.stop()
    import duckdb

    con = duckdb.connect()
    con.register("out", out)
    digest = con.execute("SELECT count(*), sum(hash(o_mun, d_mun, count)) FROM out").fetchall()[0]
    return {
        "engine": f"spark local[{cores}]",
        "jvm_start_seconds": round(start, 1),
        "release_seconds": round(seconds, 2),
        "stages": {k: round(v, 2) for k, v in r.timings.items()},
        "levels": [
            (lv.name, lv.noised_cells, lv.surviving_cells, round(lv.seconds, 2)) for lv in r.levels
        ],
        "digest": [int(digest[0]), str(digest[1])],
        "spark_steps": _event_steps(log_dir),
    }


def _kernel(children: int) -> dict[str, Any]:
    """The per-block kernel alone (what one Spark task runs per block): children/s."""
    import numpy as np

    from inftda_sql.core.rng import SeededSource
    from inftda_sql.core.topdown import LevelJob
    from inftda_sql.mechanisms.inftda import intopt_step

    rng = np.random.default_rng(1)
    fan = 20
    parents = children // fan
    starts = np.arange(parents, dtype=np.int64) * fan
    counts = np.full(parents, fan, np.int64)
    keys = np.sort(rng.choice(children, size=children // 10, replace=False)).astype(np.int64)
    true = rng.integers(1, 50, size=keys.size).astype(np.int64)
    values = np.full(parents, 100, np.int64)
    job = LevelJob(
        0, [np.zeros(parents, np.int64)], values, starts, counts, (1,), keys, true, 3.0, intopt_step
    )
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        job.run((0, parents), SeededSource(1).derive(1, 0))
        best = min(best, time.perf_counter() - t0)
    return {
        "children": children,
        "seconds": round(best, 3),
        "children_per_s": round(children / best),
    }


def _scan_row(r: dict[str, Any], rows: int) -> str:
    """A summary row of the scan per input row: wall and (Spark) executor microseconds."""
    scan = r.get("stages", {}).get("scan")
    steps = [s for s in r.get("spark_steps", []) if s["step"].startswith("inftda_sql scan")]
    executor = round(sum(s["executor_run_s"] for s in steps), 2) if steps else None
    cpu = round(sum(s["executor_cpu_s"] for s in steps), 2) if steps else None
    jobs = sum(s["jobs"] for s in steps) if steps else "-"
    per_row = f"{scan / rows * 1e6:.3f}" if scan is not None else "-"
    ex_row = f"{executor / rows * 1e6:.3f}" if executor is not None else "-"
    cpu_row = f"{cpu / rows * 1e6:.3f}" if cpu is not None else "-"
    return (
        f"| {r.get('engine')} | {r.get('input')} | {rows:,} | {scan} | {per_row} | "
        f"{executor if executor is not None else '-'} | {ex_row} | "
        f"{cpu if cpu is not None else '-'} | {cpu_row} | {jobs} |"
    )


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--work", default="/tmp/inftda_bench_spark")
    ap.add_argument("--memory", default="4g", help="Spark driver memory (local mode)")
    ap.add_argument("--engines", default="duckdb,spark1,spark2")
    ap.add_argument(
        "--inputs",
        default="micro",
        help="comma-separated: micro (one row per trip), counts (one row per path, count n)",
    )
    ap.add_argument("--kernel", action="store_true")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    work = Path(args.work) / f"scale_{args.scale}"
    inputs = args.inputs.split(",")
    if unknown := set(inputs) - set(INPUTS):
        ap.error(f"--inputs: unknown {sorted(unknown)}; choose from {sorted(INPUTS)}")
    if args.worker:
        if args.worker == "duckdb":
            res = _worker_duckdb(work, inputs[0])
        elif args.worker == "kernel":
            res = _kernel(1 << 20)
        else:
            res = _worker_spark(work, int(args.worker[len("spark") :]), args.memory, inputs[0])
        print(json.dumps({**res, "input": inputs[0]}))
        return
    if args.kernel:
        print(json.dumps(run_sampled(["--worker", "kernel"]), indent=1))
        return
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    rows = _prepare(work, args.scale, inputs)
    print(f"data ready in {time.perf_counter() - t0:.0f} s ({work}): rows {rows}", flush=True)
    with open("/proc/loadavg") as f:
        print("load average:", f.read().split()[:3], flush=True)
    results = []
    for inp in inputs:
        for engine in args.engines.split(","):
            res = run_sampled(
                [
                    "--worker",
                    engine,
                    "--inputs",
                    inp,
                    "--scale",
                    str(args.scale),
                    "--work",
                    args.work,
                    "--memory",
                    args.memory,
                ]
            )
            res.setdefault("input", inp)
            results.append(res)
            print(json.dumps(res), flush=True)
    digests = {json.dumps(r.get("digest")) for r in results}
    print("same table on every engine and input:", len(digests) == 1)
    print(
        "\n| engine | input | release s | process s | peak RSS MB | scan s | topdown s | write s "
        "| Spark jobs | jobs in levels |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        st = r.get("stages", {})
        steps = r.get("spark_steps", [])
        jobs = sum(s["jobs"] for s in steps) if steps else "-"
        # the engine labels a level's jobs "inftda_sql level <n> (...)": none for a level it
        # ran on the driver
        in_levels = sum(s["jobs"] for s in steps if s["step"].startswith("inftda_sql level "))
        print(
            f"| {r.get('engine')} | {r.get('input')} | {r.get('release_seconds')} | "
            f"{r['process_seconds']} | {r['peak_rss_mb']} | {st.get('scan')} | "
            f"{st.get('topdown')} | {st.get('write')} | {jobs} | {in_levels if steps else '-'} |"
        )
    print(
        "\n| engine | input | input rows | scan s | scan us/row | scan executor s "
        "| executor us/row | scan executor CPU s | CPU us/row | scan jobs |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        print(_scan_row(r, rows[r["input"]]))


if __name__ == "__main__":
    main()
