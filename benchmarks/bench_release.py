"""Benchmarks of ``inftda_sql.release`` (issue: SQL-native InfTDA).

    python benchmarks/bench_release.py uk          # UK MSOA O/D, 15M microdata rows, 8 levels
    python benchmarks/bench_release.py italy       # synthetic Italy-scale, 28.8M trips
    python benchmarks/bench_release.py reference   # side by side with inf-tda 0.1, 2M leaves
    python benchmarks/bench_release.py dropin      # inftda_sql.pandas.inf_tda vs inf-tda 0.1, cold
    python benchmarks/bench_release.py all

Each case runs in a fresh subprocess: it loads its input into an in-memory DuckDB, resets the
peak-RSS counter (``/proc/self/clear_refs``), then times a plain ``GROUP BY`` of the same input
and the release side by side (``--repeat`` times, medians), printing one Markdown table row.
The machine is shared and noisy: compare ratios measured in one run, not absolute seconds.

``reference`` needs the published package in its own environment (it pins old versions):

    python3 -m venv benchmarks/.venv-ref
    benchmarks/.venv-ref/bin/pip install inf-tda==0.1 opendp==0.12.1 pandas==2.2.3 numpy==2.2.6
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED = HERE.parent.parent / "shared" / "data"
REF_PY = HERE / ".venv-ref" / "bin" / "python"


def _peak_reset() -> None:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def _rss_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field):
            return int(line.split()[1]) / 1024
    return float("nan")


def _child(case: str, repeat: int) -> dict[str, object]:
    import duckdb

    import inftda_sql
    from inftda_sql.synthetic import italy_like

    con = duckdb.connect()
    if case == "uk":
        data = SHARED / "uk_ew_census2021_odwp01_msoa.parquet"
        geo = SHARED / "uk_ew_census2021_odwp01_msoa_geo.parquet"
        if not data.exists():
            return {"case": case, "skipped": f"{data} not found"}
        levels = ["country", "region", "lad", "msoa"]
        con.execute(
            f"CREATE TABLE trips AS SELECT {', '.join('o_' + c for c in levels)}, "
            f"{', '.join('d_' + c for c in levels)} FROM '{data}', range(count)"
        ).fetchall()
        for side in ("o", "d"):
            cols = ", ".join(f"{c} AS {side}_{c}" for c in levels)
            con.execute(f"CREATE TABLE geo_{side} AS SELECT {cols} FROM '{geo}'").fetchall()
        hierarchy = [[f"o_{c}" for c in levels], [f"d_{c}" for c in levels]]
        kw = dict(
            hierarchy=hierarchy,
            domain=["geo_o", "geo_d"],
            tree="destination",
            epsilon=1.0,
            delta=1e-8,
        )
        group_by = "SELECT o_msoa, d_msoa, count(*) FROM trips GROUP BY ALL"
    elif case == "italy":
        d = italy_like(con, scale=1.0, seed=0, microdata=True)
        kw = dict(
            hierarchy=d.hierarchy,
            domain=[d.geo_origin, d.geo_destination],
            tree="destination",
            epsilon=1.0,
            delta=1e-8,
        )
        group_by = f"SELECT o_mun, d_mun, count(*) FROM {d.trips} GROUP BY ALL"
    else:
        raise SystemExit(f"unknown case {case}")
    rows = con.execute("SELECT count(*) FROM trips").fetchall()[0][0]
    con.execute(f"CREATE TABLE warm AS {group_by}").fetchall()  # warm-up scan
    con.execute("DROP TABLE warm").fetchall()
    base_rss = _rss_mb("VmRSS")
    t_gb, t_rel, peaks = [], [], []
    result = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        con.execute(f"CREATE OR REPLACE TABLE gb AS {group_by}").fetchall()
        t_gb.append(time.perf_counter() - t0)
        _peak_reset()
        t0 = time.perf_counter()
        result = inftda_sql.release(con, "trips", output="trips_private", overwrite=True, **kw)
        t_rel.append(time.perf_counter() - t0)
        peaks.append(_rss_mb("VmHWM"))
    assert result is not None
    gb, rel = statistics.median(t_gb), statistics.median(t_rel)
    return {
        "case": case,
        "input_rows": rows,
        "group_by_s": gb,
        "release_s": rel,
        "ratio": rel / gb,
        "peak_rss_mb": max(peaks),
        "rss_before_mb": base_rss,
        "levels": [{**lv.as_dict(), "seconds": lv.seconds} for lv in result.levels],
        "timings": result.timings,
        "repeat": repeat,
    }


REF_SCRIPT = textwrap.dedent(
    """
    import sys, time, numpy as np, pandas as pd
    from InfTDA import inf_tda
    n1, n2, n3 = map(int, sys.argv[1:4])
    rng = np.random.default_rng(0)
    idx = pd.MultiIndex.from_product([range(n1), range(n2), range(n3)])
    values = rng.poisson(0.5, len(idx)) * rng.integers(1, 20, len(idx))
    data = pd.Series(values, index=idx)
    t0 = time.perf_counter()
    inf_tda(data=data, budget=(1.0, 1e-8), contribution=1, privacy_type="bounded",
            distinct_tuples=True)
    print(time.perf_counter() - t0)
    """
)


def _reference(repeat: int, sizes: tuple[int, int, int]) -> dict[str, object]:
    import duckdb
    import numpy as np
    import pyarrow as pa

    import inftda_sql

    n1, n2, n3 = sizes
    leaves = n1 * n2 * n3
    con = duckdb.connect()
    rng = np.random.default_rng(0)
    values = rng.poisson(0.5, leaves) * rng.integers(1, 20, leaves)
    code = np.arange(leaves)
    a, b, c = code // (n2 * n3), code // n3, code
    con.register("g", pa.table({"a": a, "b": b, "c": c}))
    con.execute("CREATE TABLE geo AS SELECT * FROM g").fetchall()
    nz = values > 0
    con.register("d", pa.table({"a": a[nz], "b": b[nz], "c": c[nz], "n": values[nz]}))
    con.execute("CREATE TABLE data AS SELECT * FROM d").fetchall()
    ours = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        inftda_sql.release(
            con,
            "data",
            hierarchy=["a", "b", "c"],
            domain="geo",
            count="n",
            epsilon=1.0,
            delta=1e-8,
            output="out",
            overwrite=True,
        )
        ours.append(time.perf_counter() - t0)
    ref_s = None
    if REF_PY.exists():
        out = subprocess.run(
            [str(REF_PY), "-c", REF_SCRIPT, str(n1), str(n2), str(n3)],
            capture_output=True,
            text=True,
            check=False,
        )
        if out.returncode == 0:
            ref_s = float(out.stdout.strip().splitlines()[-1])
        else:
            print(out.stderr[-2000:], file=sys.stderr)
    return {
        "case": "reference",
        "leaves": leaves,
        "ours_s": statistics.median(ours),
        "reference_s": ref_s,
        "speedup": (ref_s / statistics.median(ours)) if ref_s else None,
    }


#: one cold call of inf_tda on the Series of REF_SCRIPT, in a fresh process (the imports and the
#: data are made before the clock starts, as for the reference)
DROPIN_SCRIPT = textwrap.dedent(
    """
    import json, os, sys, time
    import numpy as np, pandas as pd
    t_import = time.perf_counter()
    from inftda_sql.pandas import release_series
    t_import = time.perf_counter() - t_import
    n1, n2, n3 = map(int, sys.argv[1:4])
    rng = np.random.default_rng(0)
    idx = pd.MultiIndex.from_product([range(n1), range(n2), range(n3)])
    values = rng.poisson(0.5, len(idx)) * rng.integers(1, 20, len(idx))
    data = pd.Series(values, index=idx)
    t0, c0 = time.perf_counter(), time.process_time()
    out, r = release_series(data=data, budget=(1.0, 1e-8), contribution=1,
                            privacy_type="bounded", distinct_tuples=True)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(json.dumps({"wall": wall, "cpu": cpu, "import": t_import, "timings": r.timings,
                      "cells": len(out),
                      "noised": [lv.noised_cells for lv in r.levels]}))
    """
)

#: REF_SCRIPT, also reporting the process's CPU seconds of the call
REF_CPU_SCRIPT = REF_SCRIPT.replace(
    "t0 = time.perf_counter()", "t0, c0 = time.perf_counter(), time.process_time()"
).replace(
    "print(time.perf_counter() - t0)",
    "print(time.perf_counter() - t0, time.process_time() - c0)",
)


def _dropin(repeat: int, sizes: tuple[int, int, int], with_reference: bool) -> dict[str, object]:
    """``inftda_sql.pandas.inf_tda`` and ``inf-tda`` 0.1 on the same Series, each call the
    first of a fresh process, alternated ``repeat`` times; medians of wall and CPU seconds."""
    args = [str(n) for n in sizes]
    env = {**os.environ, "PYTHONPATH": str(HERE.parent)}
    ours: list[dict[str, object]] = []
    ref: list[tuple[float, float]] = []
    loads = [os.getloadavg()[0]]
    for _ in range(repeat):
        out = subprocess.run(
            [sys.executable, "-c", DROPIN_SCRIPT, *args],
            capture_output=True, text=True, check=False, env=env,
        )  # fmt: skip
        if out.returncode != 0:
            raise SystemExit(out.stderr[-3000:])
        ours.append(json.loads(out.stdout.strip().splitlines()[-1]))
        loads.append(os.getloadavg()[0])
        if with_reference and REF_PY.exists():
            out = subprocess.run(
                [str(REF_PY), "-c", REF_CPU_SCRIPT, *args],
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            if out.returncode != 0:
                raise SystemExit(out.stderr[-3000:])
            wall, cpu = (float(x) for x in out.stdout.strip().splitlines()[-1].split())
            ref.append((wall, cpu))
            loads.append(os.getloadavg()[0])
    ours_wall = statistics.median(float(str(o["wall"])) for o in ours)
    ours_cpu = statistics.median(float(str(o["cpu"])) for o in ours)
    result: dict[str, object] = {
        "case": "dropin",
        "leaves": sizes[0] * sizes[1] * sizes[2],
        "repeat": repeat,
        "ours_wall_s": ours_wall,
        "ours_cpu_s": ours_cpu,
        "ours_runs": ours,
        "load_1min": [round(x, 2) for x in loads],
    }
    if ref:
        ref_wall = statistics.median(w for w, _ in ref)
        ref_cpu = statistics.median(c for _, c in ref)
        result |= {
            "reference_wall_s": ref_wall,
            "reference_cpu_s": ref_cpu,
            "reference_runs": ref,
            "speedup_wall": ref_wall / ours_wall,
            "speedup_cpu": ref_cpu / ours_cpu,
        }
    return result


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("case", choices=["uk", "italy", "reference", "dropin", "all"])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--ref-sizes", default="20,100,1000", help="reference tree fan-outs (2M leaves)")
    p.add_argument(
        "--dropin-sizes", default="100,100,200", help="drop-in tree fan-outs (2M leaves)"
    )
    p.add_argument(
        "--no-reference", action="store_true", help="dropin: time ours only (no inf-tda runs)"
    )
    args = p.parse_args()
    if args.child:
        print(json.dumps(_child(args.case, args.repeat)))
        return
    cases = ["uk", "italy", "reference", "dropin"] if args.case == "all" else [args.case]
    for case in cases:
        if case == "dropin":
            sizes = tuple(int(x) for x in args.dropin_sizes.split(","))
            res = _dropin(args.repeat, sizes, not args.no_reference)  # type: ignore[arg-type]
        elif case == "reference":
            sizes = tuple(int(x) for x in args.ref_sizes.split(","))
            res = _reference(args.repeat, sizes)  # type: ignore[arg-type]
        else:
            out = subprocess.run(
                [sys.executable, __file__, case, "--child", "--repeat", str(args.repeat)],
                capture_output=True,
                text=True,
                check=False,
                env={**os.environ, "PYTHONPATH": str(HERE.parent)},
            )
            if out.returncode != 0:
                print(out.stderr[-3000:], file=sys.stderr)
                continue
            res = json.loads(out.stdout.strip().splitlines()[-1])
        print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
