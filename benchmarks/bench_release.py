"""Whole releases against one plain GROUP BY of the same input (issue 15's workloads).

    python benchmarks/bench_release.py italy       # synthetic Italy-scale, 28.8M trips, 6 levels
    python benchmarks/bench_release.py uk          # UK MSOA O/D microdata, 15.1M rows, in memory
    python benchmarks/bench_release.py uk-file     # the same from a DuckDB file (peak RSS)
    python benchmarks/bench_release.py uk-agg      # UK pre-aggregated (count column), in memory
    python benchmarks/bench_release.py small       # 1M rows, 10 > 100 > 10,000 chain
    python benchmarks/bench_release.py reference   # inf-tda 0.1 on 100 x 100 x 200 (2M leaves)
    python benchmarks/bench_release.py dropin      # inftda_sql.pandas.inf_tda vs inf-tda 0.1, cold
    python benchmarks/bench_release.py all

Every in-process case runs in a fresh subprocess: it loads its input into DuckDB, releases once
(the *first* release: it codes the domain, and keeps it coded when it is large and not stored
in code order, see README "Inputs") and runs ``--rounds`` alternating rounds of a plain
``GROUP BY`` of the input into leaf cells and a release (the order flips every round), each
timed alone. It prints the min and median of each, the median of the per-round ratios, the
stages of the median release, the process's peak RSS during the releases, and the load average
(1 min) before and after.

``--input star`` (default) releases a star-schema input: a view of the leaf columns only (the
geography table gives the ancestors; nothing to check). ``--input wide`` releases the table with
every hierarchy column, whose ancestors each release checks against the domain as
``--check`` says (``full``, the default of ``release()``; ``cached``: once per input version).
``--threads N`` runs DuckDB (``SET threads``) and TopDown's pool on ``N`` threads, the ``GROUP
BY`` too: ``--threads 1`` shows what a release costs against the scan on one core, apart from
how each scales on this machine's cores.

``reference`` alternates two fresh processes per round: ours (build the 2M-leaf domain and the
input in an in-memory DuckDB, then time the first release: *cold*; the library is imported
before the clock starts, as the reference's is) and the published
``inf-tda`` 0.1 ``inf_tda()`` on a pandas Series of all 2M leaves. Our input holds the leaf
and its count (as the reference's Series: one value per leaf); ``--ref-wide`` adds the ancestor
columns, which the cold release then checks against the domain. The reference pins old
libraries, so it runs in its own environment, created on first use:

    python3 -m venv benchmarks/.venv-ref
    benchmarks/.venv-ref/bin/pip install inf-tda==0.1 opendp==0.12.1 pandas==2.2.3 numpy==2.2.6

The UK cases need ``../shared/data`` beside the checkout; ``uk-file`` builds
``benchmarks/out/uk.duckdb`` once. The machine is shared and noisy: compare ratios measured in
one run, and note the load.
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
from typing import Any

HERE = Path(__file__).resolve().parent
SHARED = HERE.parent.parent / "shared" / "data"
OUT = HERE / "out"
REF_VENV = HERE / ".venv-ref"
REF_PY = REF_VENV / "bin" / "python"
REF_PACKAGES = ["inf-tda==0.1", "opendp==0.12.1", "pandas==2.2.3", "numpy==2.2.6"]
UK_DATA = SHARED / "uk_ew_census2021_odwp01_msoa.parquet"
UK_GEO = SHARED / "uk_ew_census2021_odwp01_msoa_geo.parquet"
UK_LEVELS = ["country", "region", "lad", "msoa"]
CASES = ["italy", "uk", "uk-file", "uk-agg", "small", "reference"]


def _peak_reset() -> None:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def _rss_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field):
            return int(line.split()[1]) / 1024
    return float("nan")


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def _uk_tables(con: Any, *, aggregated: bool) -> None:
    cols = ", ".join([*(f"o_{c}" for c in UK_LEVELS), *(f"d_{c}" for c in UK_LEVELS)])
    if aggregated:
        con.execute(f"CREATE TABLE trips AS SELECT {cols}, count FROM '{UK_DATA}'").fetchall()
    else:
        con.execute(
            f"CREATE TABLE trips AS SELECT {cols} FROM '{UK_DATA}', range(count)"
        ).fetchall()
    for side in ("o", "d"):
        renamed = ", ".join(f"{c} AS {side}_{c}" for c in UK_LEVELS)
        con.execute(f"CREATE TABLE geo_{side} AS SELECT {renamed} FROM '{UK_GEO}'").fetchall()


def _uk_file() -> Path:
    """The UK microdata in a DuckDB file (built once)."""
    import duckdb

    path = OUT / "uk.duckdb"
    if not path.exists():
        OUT.mkdir(exist_ok=True)
        tmp = path.with_suffix(".tmp.duckdb")
        tmp.unlink(missing_ok=True)
        con = duckdb.connect(str(tmp))
        _uk_tables(con, aggregated=False)
        con.execute("CHECKPOINT").fetchall()
        con.close()
        tmp.rename(path)
    return path


def _small(con: Any) -> tuple[dict[str, Any], str]:
    """1M rows over a 10 > 100 > 10,000 chain (skewed), integer codes."""
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(0)
    leaf = np.minimum(rng.zipf(1.3, 1_000_000) - 1, 9_999)
    leaf = rng.permutation(10_000)[leaf]
    con.register("t", pa.table({"region": leaf // 1000, "province": leaf // 100, "mun": leaf}))
    con.execute("CREATE TABLE trips AS SELECT * FROM t").fetchall()
    con.unregister("t")
    code = np.arange(10_000)
    con.register("g", pa.table({"region": code // 1000, "province": code // 100, "mun": code}))
    con.execute("CREATE TABLE geo AS SELECT * FROM g").fetchall()
    con.unregister("g")
    kw = {"hierarchy": ["region", "province", "mun"], "domain": "geo"}
    return kw, "SELECT mun, count(*) FROM trips GROUP BY ALL"


def _setup(case: str, con: Any) -> tuple[dict[str, Any], str]:
    from inftda_sql.synthetic import italy_like

    od = {"tree": "destination"}
    uk = [[f"o_{c}" for c in UK_LEVELS], [f"d_{c}" for c in UK_LEVELS]]
    if case == "italy":
        d = italy_like(con, scale=1.0, seed=0, microdata=True)
        kw = {"hierarchy": d.hierarchy, "domain": [d.geo_origin, d.geo_destination], **od}
        return kw, f"SELECT o_mun, d_mun, count(*) FROM {d.trips} GROUP BY ALL"
    if case in ("uk", "uk-file"):
        if case == "uk":
            _uk_tables(con, aggregated=False)
        kw = {"hierarchy": uk, "domain": ["geo_o", "geo_d"], **od}
        return kw, "SELECT o_msoa, d_msoa, count(*) FROM trips GROUP BY ALL"
    if case == "uk-agg":
        _uk_tables(con, aggregated=True)
        kw = {"hierarchy": uk, "domain": ["geo_o", "geo_d"], "count": "count", **od}
        return kw, "SELECT o_msoa, d_msoa, sum(count) FROM trips GROUP BY ALL"
    if case == "small":
        return _small(con)
    raise SystemExit(f"unknown case {case}")


def _star(con: Any, leaf_cols: list[str]) -> str:
    """A star-schema view of the input: its leaf columns only (temporary: a file database is
    left as it is)."""
    cols = ", ".join(leaf_cols)
    con.execute(f"CREATE OR REPLACE TEMP VIEW trips_star AS SELECT {cols} FROM trips").fetchall()
    return "trips_star"


LEAVES = {
    "italy": ["o_mun", "d_mun"],
    "uk": ["o_msoa", "d_msoa"],
    "uk-file": ["o_msoa", "d_msoa"],
    "uk-agg": ["o_msoa", "d_msoa", "count"],
    "small": ["mun"],
}


def _one_pool(threads: int) -> None:
    """Every TopDown pass of this process on ``threads`` threads (the library's default is 2):
    with DuckDB's ``SET threads`` alike, the release and the ``GROUP BY`` on as many cores."""
    from inftda_sql.mechanisms import base

    namespace = vars(base)  # where MechanismContext.topdown finds the pass
    topdown = namespace["topdown"]

    def fixed(*args: Any, **kwargs: Any) -> Any:
        kwargs["threads"] = threads
        return topdown(*args, **kwargs)

    namespace["topdown"] = fixed


def _child(
    case: str, rounds: int, check: str, star: bool = True, threads: int | None = None
) -> dict[str, Any]:
    import duckdb

    import inftda_sql

    if case.startswith("uk") and not UK_DATA.exists():
        return {"case": case, "skipped": f"{UK_DATA} not found"}
    con = duckdb.connect(str(_uk_file()) if case == "uk-file" else ":memory:")
    if threads is not None:
        con.execute(f"SET threads = {int(threads)}")
        _one_pool(threads)
    kw, group_by = _setup(case, con)
    kw.update(epsilon=1.0, delta=1e-8, output="trips_private", overwrite=True)
    kw["check_ancestors"] = check
    table = _star(con, LEAVES[case]) if star else "trips"
    rows = con.execute("SELECT count(*) FROM trips").fetchall()[0][0]
    load_before = _load()
    base_rss = _rss_mb("VmRSS")
    release = inftda_sql.release  # the library's modules load on first use: not timed
    t0 = time.perf_counter()
    first = release(con, table, **kw)
    first_s = time.perf_counter() - t0
    con.execute(f"CREATE OR REPLACE TEMP TABLE gb AS {group_by}").fetchall()  # warm-up
    t_gb: list[float] = []
    t_rel: list[float] = []
    peaks: list[float] = []
    releases = []
    for r in range(rounds):
        for step in ("gb", "release") if r % 2 == 0 else ("release", "gb"):
            if step == "gb":
                t0 = time.perf_counter()
                con.execute(f"CREATE OR REPLACE TEMP TABLE gb AS {group_by}").fetchall()
                t_gb.append(time.perf_counter() - t0)
            else:
                _peak_reset()
                t0 = time.perf_counter()
                releases.append(release(con, table, **kw))
                t_rel.append(time.perf_counter() - t0)
                peaks.append(_rss_mb("VmHWM"))
    median_at = sorted(range(rounds), key=lambda i: t_rel[i])[rounds // 2]
    return {
        "case": case,
        "input": "star (leaf columns only)" if star else "wide (every hierarchy column)",
        "check_ancestors": check if not star else "nothing to check",
        "input_rows": rows,
        "rounds": rounds,
        "threads": threads or "default (DuckDB: all cores; TopDown: 2)",
        "group_by_min_s": min(t_gb),
        "group_by_median_s": statistics.median(t_gb),
        "release_min_s": min(t_rel),
        "release_median_s": statistics.median(t_rel),
        "ratio_of_medians": statistics.median(t_rel) / statistics.median(t_gb),
        "median_round_ratio": statistics.median(r / g for r, g in zip(t_rel, t_gb, strict=True)),
        "first_release_s": first_s,
        "first_release_stages": {k: round(v, 3) for k, v in first.timings.items()},
        "stages_of_median_release": {
            k: round(v, 3) for k, v in releases[median_at].timings.items()
        },
        "levels": [
            (lv.level, lv.noised_cells, lv.surviving_cells, round(lv.seconds, 3))
            for lv in releases[median_at].levels
        ],
        "peak_rss_mb": round(max(peaks)),
        "rss_before_mb": round(base_rss),
        "load_before": load_before,
        "load_after": _load(),
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


def _ours_cold(sizes: tuple[int, int, int], warm: int, wide: bool) -> dict[str, Any]:
    """Ours in this (fresh) process: the same counts as the reference (the 2M-path domain and
    the non-zero leaves in an in-memory DuckDB), the first release timed, then ``warm`` more.
    The input holds the leaf and its count (``wide``: its ancestors too, checked by the first
    release)."""
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
    data = {"a": a[nz], "b": b[nz], "c": c[nz], "n": values[nz]}
    if not wide:
        del data["a"], data["b"]
    con.register("d", pa.table(data))
    con.execute("CREATE TABLE data AS SELECT * FROM d").fetchall()
    kw: dict[str, Any] = {
        "hierarchy": ["a", "b", "c"],
        "domain": "geo",
        "count": "n",
        "epsilon": 1.0,
        "delta": 1e-8,
        "output": "out",
        "overwrite": True,
    }
    times, stages = [], []
    release = inftda_sql.release  # imported before the clock starts, as the reference is
    for _ in range(1 + warm):
        t0 = time.perf_counter()
        r = release(con, "data", **kw)
        times.append(time.perf_counter() - t0)
        stages.append({k: round(v, 3) for k, v in r.timings.items()})
    return {"cold_s": times[0], "cold_stages": stages[0], "warm_s": times[1:]}


def _ensure_reference_env() -> bool:
    if REF_PY.exists():
        return True
    print(f"creating {REF_VENV} ({', '.join(REF_PACKAGES)})", file=sys.stderr)
    made = subprocess.run([sys.executable, "-m", "venv", str(REF_VENV)], check=False)
    if made.returncode == 0:
        pip = [str(REF_VENV / "bin" / "pip"), "install", "-q", *REF_PACKAGES]
        made = subprocess.run(pip, check=False)
    return made.returncode == 0 and REF_PY.exists()


def _reference(rounds: int, sizes: tuple[int, int, int], wide: bool) -> dict[str, Any]:
    have_ref = _ensure_reference_env()
    load_before = _load()
    ours: list[float] = []
    ref: list[float] = []
    warm: list[float] = []
    stages: list[dict[str, float]] = []
    for r in range(rounds):
        for step in ("ours", "ref") if r % 2 == 0 else ("ref", "ours"):
            if step == "ours":
                out = subprocess.run(
                    [sys.executable, __file__, "reference", "--ours-cold", "--ref-sizes",
                     ",".join(map(str, sizes)), "--warm", "2" if r == 0 else "0",
                     *(["--ref-wide"] if wide else [])],
                    capture_output=True, text=True, check=True,
                    env={**os.environ, "PYTHONPATH": str(HERE.parent)},
                )  # fmt: skip
                got = json.loads(out.stdout.strip().splitlines()[-1])
                ours.append(got["cold_s"])
                stages.append(got["cold_stages"])
                warm += got["warm_s"]
            elif have_ref:
                out = subprocess.run(
                    [str(REF_PY), "-c", REF_SCRIPT, *map(str, sizes)],
                    capture_output=True, text=True, check=False,
                )  # fmt: skip
                if out.returncode == 0:
                    ref.append(float(out.stdout.strip().splitlines()[-1]))
                else:
                    print(out.stderr[-2000:], file=sys.stderr)
    result: dict[str, Any] = {
        "case": "reference",
        "input": "leaf, ancestors and count (checked)" if wide else "leaf and count",
        "sizes": sizes,
        "leaves": sizes[0] * sizes[1] * sizes[2],
        "rounds": rounds,
        "ours_cold_min_s": min(ours),
        "ours_cold_median_s": statistics.median(ours),
        "ours_cold_stages_median_round": stages[
            sorted(range(len(ours)), key=ours.__getitem__)[len(ours) // 2]
        ],
        "ours_warm_s": warm,
        "load_before": load_before,
        "load_after": _load(),
    }
    if ref:
        result.update(
            reference_min_s=min(ref),
            reference_median_s=statistics.median(ref),
            speedup_cold_medians=statistics.median(ref) / statistics.median(ours),
            speedup_cold_min=min(ref) / min(ours),
        )
    return result


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
    p.add_argument("case", choices=[*CASES, "dropin", "all"])
    p.add_argument("--rounds", type=int, default=5, help="alternating rounds (>= 5 to quote)")
    p.add_argument("--input", choices=["star", "wide"], default="star",
                   help="leaf columns only, or every hierarchy column")  # fmt: skip
    p.add_argument("--check", choices=["full", "cached", "off"], default="full",
                   help="check_ancestors of the releases of a wide input")  # fmt: skip
    p.add_argument("--threads", type=int, default=None,
                   help="DuckDB's threads and TopDown's pool (default: as shipped)")  # fmt: skip
    p.add_argument("--ref-sizes", default="100,100,200", help="reference fan-outs (2M leaves)")
    p.add_argument(
        "--ref-wide",
        action="store_true",
        help="our input holds the ancestor columns too (checked on the cold release)",
    )
    p.add_argument(
        "--dropin-sizes", default="100,100,200", help="drop-in tree fan-outs (2M leaves)"
    )
    p.add_argument(
        "--no-reference", action="store_true", help="dropin: time ours only (no inf-tda runs)"
    )
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--ours-cold", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--warm", type=int, default=0, help=argparse.SUPPRESS)
    args = p.parse_args()
    sizes = tuple(int(x) for x in args.ref_sizes.split(","))
    assert len(sizes) == 3
    if args.ours_cold:
        print(json.dumps(_ours_cold(sizes, args.warm, args.ref_wide)))  # type: ignore[arg-type]
        return
    if args.child:
        star = args.input == "star"
        print(json.dumps(_child(args.case, args.rounds, args.check, star, args.threads)))
        return
    for case in [*CASES, "dropin"] if args.case == "all" else [args.case]:
        if case == "dropin":
            dropin_sizes = tuple(int(x) for x in args.dropin_sizes.split(","))
            res = _dropin(args.rounds, dropin_sizes, not args.no_reference)  # type: ignore[arg-type]
        elif case == "reference":
            res = _reference(args.rounds, sizes, args.ref_wide)  # type: ignore[arg-type]
        else:
            if case == "uk-file" and UK_DATA.exists():
                _uk_file()  # built in this process, measured in a fresh one
            out = subprocess.run(
                [sys.executable, __file__, case, "--child", "--rounds", str(args.rounds),
                 "--check", args.check, "--input", args.input,
                 *(["--threads", str(args.threads)] if args.threads else [])],
                capture_output=True, text=True, check=False,
                env={**os.environ, "PYTHONPATH": str(HERE.parent)},
            )  # fmt: skip
            if out.returncode != 0:
                print(out.stderr[-3000:], file=sys.stderr)
                continue
            res = json.loads(out.stdout.strip().splitlines()[-1])
        print(json.dumps(res, indent=1), flush=True)


if __name__ == "__main__":
    main()
