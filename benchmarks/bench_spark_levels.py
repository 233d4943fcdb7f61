"""Seconds and Spark jobs per TopDown level when every level runs in Spark's tasks.

    python benchmarks/bench_spark_levels.py                  # scale 0.002: ~1,000 O/D pairs
    python benchmarks/bench_spark_levels.py --scale 0.05 --rounds 3

One process, ``local[2]``: the Italy-like synthetic O/D table (``synthetic.italy_like``, one row
per pair with a count) is saved as Spark tables, then seeded releases run with
``spark.inftda.driverChildren=0`` (every level distributed): one warm-up (Python workers
started), then ``--rounds`` measured. A level's jobs are counted from Spark's status tracker:
while the engine labels its jobs ``level N ...`` (``describe``), they run in a job group of
their own. The small levels (a root of one parent, a few dozen children) measure the fixed cost
of a distributed level. Prints one JSON line per round.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import sys
import tempfile
import time
from typing import Any

HIERARCHY = [["o_region", "o_province", "o_mun"], ["d_region", "d_province", "d_mun"]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=float, default=0.002)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()

    import duckdb
    from pyspark.sql import SparkSession

    import inftda_sql.spark
    from inftda_sql import synthetic
    from inftda_sql.engines.spark import topdown

    os.environ["PYSPARK_PYTHON"] = sys.executable
    folder = tempfile.mkdtemp(prefix="bench_levels_")
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.warehouse.dir", f"{folder}/warehouse")
        .config("spark.driver.memory", "2g")
        .config("spark.inftda.ledger", f"{folder}/ledger")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    con = duckdb.connect()
    d = synthetic.italy_like(con, scale=args.scale, microdata=False)
    for table in (d.trips, d.geo_origin, d.geo_destination):
        spark.createDataFrame(con.sql(f"SELECT * FROM {table}").to_arrow_table()).write.saveAsTable(
            table
        )
    sc = spark.sparkContext
    label = re.compile(r"level (\d+)\b")
    groups: list[str] = []
    original = topdown.describe

    steps: list[tuple[float, str | None]] = []

    def describe(session: Any, what: str | None) -> None:
        steps.append((time.perf_counter(), what))
        original(session, what)
        found = label.match(what or "")
        if found:
            groups.append(f"{run_id}-{found.group(1)}")
            sc.setJobGroup(groups[-1], what or "")
        else:
            sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]

    topdown.describe = describe  # type: ignore[assignment]
    spark.conf.set("spark.inftda.driverChildren", "0")
    for r in range(args.rounds + 1):
        run_id = f"r{r}"
        steps.clear()
        t0 = time.perf_counter()
        sk = inftda_sql.spark.release(
            spark, d.trips, hierarchy=HIERARCHY, domain=[d.geo_origin, d.geo_destination],
            count="n", rho=1.0, seed=2024, output="out", overwrite=True,
        )  # fmt: skip
        took = time.perf_counter() - t0
        sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
        tracker = sc.statusTracker()
        jobs = {
            int(g.rsplit("-", 1)[1]): len(tracker.getJobIdsForGroup(g))
            for g in dict.fromkeys(groups)
            if g.startswith(f"{run_id}-")
        }
        if r == 0:
            continue  # the warm-up
        print(
            json.dumps(
                {
                    "round": r,
                    "release_s": round(took, 2),
                    "levels": [
                        {
                            "level": lv.level,
                            "children": lv.noised_cells,
                            "kept": lv.surviving_cells,
                            "s": round(lv.seconds, 3),
                            "jobs": jobs.get(lv.level, 0),
                        }
                        for lv in sk.levels
                    ],
                    "jobs_by_label": jobs,
                    "steps": [[round(b[0] - a[0], 3), a[1]] for a, b in itertools.pairwise(steps)],
                    "load1": os.getloadavg()[0],
                }
            ),
            flush=True,
        )
    spark.stop()


if __name__ == "__main__":
    main()
