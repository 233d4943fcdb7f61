"""The fixed cost of a release (issue 26, item 3): the ``small`` workload of
``bench_release.py`` (1M rows, 10 > 100 > 10,000, a star-schema view and a domain table), timed
in one process as wall time AND as the process's CPU time, which a loaded machine disturbs far
less than wall time; and the SQL statements one warm release runs (DuckDB's query log).

    python benchmarks/bench_fixed_cost.py [ROUNDS]      # default 20; prints one JSON line

Three releases warm it up (the ledger table exists, the output and levels view are replaced
each time), then ROUNDS alternating rounds of the plain ``GROUP BY`` (into a temp table) and a
release. Figures are ``[min, median]`` in milliseconds. To compare two checkouts, alternate
whole runs: ``PYTHONPATH=<checkout> python benchmarks/bench_fixed_cost.py``.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

import inftda_sql

GROUP_BY = "CREATE OR REPLACE TEMP TABLE gb AS SELECT mun, count(*) FROM trips GROUP BY ALL"
LOG_COUNT = "SELECT count(*) FROM duckdb_logs WHERE type = 'QueryLog'"


def main(rounds: int) -> dict[str, object]:
    con = duckdb.connect()
    rng = np.random.default_rng(0)  # the same input as bench_release.py small
    leaf = np.minimum(rng.zipf(1.3, 1_000_000) - 1, 9_999)
    leaf = rng.permutation(10_000)[leaf]
    con.register("t", pa.table({"region": leaf // 1000, "province": leaf // 100, "mun": leaf}))
    con.execute("CREATE TABLE trips AS SELECT * FROM t").fetchall()
    code = np.arange(10_000)
    con.register("g", pa.table({"region": code // 1000, "province": code // 100, "mun": code}))
    con.execute("CREATE TABLE geo AS SELECT * FROM g").fetchall()
    con.execute("CREATE TEMP VIEW trips_star AS SELECT mun FROM trips").fetchall()
    kw: dict[str, Any] = {"hierarchy": ["region", "province", "mun"], "domain": "geo"}
    kw |= {"epsilon": 1.0, "delta": 1e-8, "output": "trips_private", "overwrite": True}
    for _ in range(3):
        inftda_sql.release(con, "trips_star", **kw)
        con.execute(GROUP_BY).fetchall()
    con.execute("CALL enable_logging('QueryLog')").fetchall()
    before = con.execute(LOG_COUNT).fetchall()[0][0]
    inftda_sql.release(con, "trips_star", **kw)
    statements = con.execute(LOG_COUNT).fetchall()[0][0] - before - 1
    con.execute("CALL disable_logging()").fetchall()
    times: dict[str, list[float]] = {"gb": [], "release": [], "gb_cpu": [], "release_cpu": []}
    load = os.getloadavg()[0]
    for r in range(rounds):
        for step in ("gb", "release") if r % 2 == 0 else ("release", "gb"):
            t0, c0 = time.perf_counter(), time.process_time()
            if step == "gb":
                con.execute(GROUP_BY).fetchall()
            else:
                inftda_sql.release(con, "trips_star", **kw)
            times[step].append(time.perf_counter() - t0)
            times[step + "_cpu"].append(time.process_time() - c0)
    out: dict[str, object] = {
        k: [round(min(v) * 1e3, 1), round(statistics.median(v) * 1e3, 1)] for k, v in times.items()
    }
    out["statements"] = statements
    out["load"] = [round(load, 1), round(os.getloadavg()[0], 1)]
    return out


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)))
