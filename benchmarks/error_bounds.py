"""Coverage and tightness of the stated error bounds on real data (issue 25).

    .venv/bin/python benchmarks/error_bounds.py                 # Portugal and UK (to LAD)
    .venv/bin/python benchmarks/error_bounds.py --runs 20 --uk-msoa   # also the full UK tree

For each dataset and budget, ``--runs`` seeded releases (InfTDA, destination tree, bounded DP,
tight conversion, delta 1e-8) are scored with ``inftda_sql.evaluate`` (the largest absolute error
of every level, against the true data); each release states its bounds
(``Release.error_bounds``, public parameters only, beta 0.05). Reported per level: the bound, the
median and largest observed maximum error over the runs, the ratio bound / median observed
maximum, and the coverage (share of runs where every cell of every level is within its bound; it
must be >= 0.95). Seeds make the runs reproducible: benchmark runs, NOT private releases.

Datasets (``../shared/data``, see its README): Portugal (country > district > municipality,
77,284 leaf pairs) and the UK census commuting data cut at the local authority level (country >
region > LAD: 109,561 leaf pairs); ``--uk-msoa`` adds the full UK tree down to MSOAs (52.8M leaf
pairs, about a minute a release here). Output: a markdown table on stdout and in
``--out`` (default ``benchmarks/paper/error_bounds.md``), which ``PAPER.md`` quotes.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import duckdb

import inftda_sql

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
DELTA = 1e-8
DATASETS = {
    "portugal": ("pt_census2021_commuting_muni", ["country", "district", "municipality"]),
    "uk (to LAD)": ("uk_ew_census2021_odwp01_msoa", ["country", "region", "lad"]),
    "uk (to MSOA)": ("uk_ew_census2021_odwp01_msoa", ["country", "region", "lad", "msoa"]),
}


def load(con: duckdb.DuckDBPyConnection, key: str) -> tuple[str, list[list[str]], list[str]]:
    """The trips table (aggregated to ``levels``), hierarchy and domains of a dataset."""
    stem, levels = DATASETS[key]
    data, geo = SHARED / f"{stem}.parquet", SHARED / f"{stem}_geo.parquet"
    if not data.exists():
        raise SystemExit(f"{data} not found: the real datasets live in ../shared/data")
    name = key.split()[0] + str(len(levels))
    cols = [f"{side}_{c}" for side in ("o", "d") for c in levels]
    con.execute(
        f"CREATE OR REPLACE TABLE {name}_trips AS SELECT {', '.join(cols)}, sum(count)::BIGINT "
        f"AS count FROM '{data}' GROUP BY ALL"
    ).fetchall()
    for side in ("o", "d"):
        sel = ", ".join(f"{c} AS {side}_{c}" for c in levels)
        con.execute(
            f"CREATE OR REPLACE TABLE {name}_geo_{side} AS SELECT DISTINCT {sel} FROM '{geo}'"
        ).fetchall()
    hierarchy = [[f"o_{c}" for c in levels], [f"d_{c}" for c in levels]]
    return f"{name}_trips", hierarchy, [f"{name}_geo_o", f"{name}_geo_d"]


def measure(
    con: duckdb.DuckDBPyConnection, key: str, epsilon: float, runs: int
) -> tuple[list[str], list[float], list[list[float]], float]:
    table, hierarchy, domain = load(con, key)
    names: list[str] = []
    bounds: list[float] = []
    observed: list[list[float]] = []
    t0 = time.perf_counter()
    for seed in range(runs):
        r = inftda_sql.release(
            con,
            table,
            hierarchy=hierarchy,
            domain=domain,
            tree="destination",
            epsilon=epsilon,
            delta=DELTA,
            count="count",
            output="released",
            overwrite=True,
            seed=seed,
            levels_view=False,
        )
        assert r.error_bounds is not None
        names = list(r.error_bounds.names)
        bounds = [float(b or 0.0) for b in r.error_bounds.bound]
        ev = inftda_sql.evaluate(
            con, table, "released", hierarchy=hierarchy, tree="destination", count="count"
        )
        observed.append([float(row[0]) for row in ev.select("max_abs_error").fetchall()])
    return names, bounds, observed, time.perf_counter() - t0


def report(
    key: str,
    epsilon: float,
    names: list[str],
    bounds: list[float],
    observed: list[list[float]],
    seconds: float,
) -> list[str]:
    runs = len(observed)
    covered = sum(all(o <= b for o, b in zip(run, bounds, strict=True)) for run in observed)
    lines = [
        f"**{key}, epsilon {epsilon:g}** ({runs} runs, {seconds:.0f} s; coverage "
        f"{covered}/{runs} = {covered / runs:.2f}, required >= 0.95)",
        "",
        "| level | bound | observed max: median | largest | bound / median |",
        "|---|---:|---:|---:|---:|",
    ]
    for i, name in enumerate(names):
        col = [run[i] for run in observed]
        med = statistics.median(col)
        ratio = "exact" if bounds[i] == 0 else (f"{bounds[i] / med:.1f}" if med else "-")
        lines.append(f"| {i}: {name} | {bounds[i]:,.0f} | {med:,.0f} | {max(col):,.0f} | {ratio} |")
    return [*lines, ""]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--epsilon", type=float, nargs="+", default=[0.1, 1.0])
    ap.add_argument("--uk-msoa", action="store_true", help="also the full UK tree (slow)")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "paper/error_bounds.md")
    args = ap.parse_args()
    keys = ["portugal", "uk (to LAD)"] + (["uk (to MSOA)"] if args.uk_msoa else [])
    out: list[str] = []
    with duckdb.connect() as con:
        for key in keys:
            for eps in args.epsilon:
                res = measure(con, key, eps, args.runs)
                text = report(key, eps, *res)
                print("\n".join(text), flush=True)
                out += text
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(out))


if __name__ == "__main__":
    main()
