"""Hay et al.'s stored counts: independent rounding of the leaves against the top-down rounding.

Issue 16.1. The ``hierarchical`` baseline used to round every leaf estimate on its own; a
parent's adjustment is one constant over its children, whose noisy counts are integers, so they
all rounded the same way and the stored totals drifted. It now rounds top-down (the root, then
every parent's children to the parent's stored integer, by largest remainder). This script
releases the same seeds both ways (the old rule is restored by replacing the top-down rounding
with ``np.rint``) and scores them with ``evaluate()``: the stored total minus N and the maximum
absolute error per level. Seeded benchmark runs, not releases.

    .venv/bin/python benchmarks/hierarchical_rounding.py            # about 2 minutes
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

import duckdb
import numpy as np
import numpy.typing as npt

import inftda_sql
from inftda_sql.mechanisms import hierarchical
from inftda_sql.synthetic import paper_dataset

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
DELTA = 1e-8


def independent(values: npt.ArrayLike, targets: npt.ArrayLike, lengths: npt.ArrayLike) -> object:
    """The old rule: every value rounded to the nearest integer on its own."""
    return np.rint(np.asarray(values, dtype=np.float64)).astype(np.int64)


Case = tuple[str, str, list[str], list[list[str]], str]


def datasets(con: duckdb.DuckDBPyConnection) -> list[Case]:
    out = []
    d = paper_dataset(con, "binary", "complete", seed=0, prefix="bc_")
    out.append(("binary complete", d.trips, [d.geo_origin, d.geo_destination], d.hierarchy, "n"))
    data = SHARED / "pt_census2021_commuting_muni.parquet"
    if data.exists():
        geo = SHARED / "pt_census2021_commuting_muni_geo.parquet"
        levels = ["country", "district", "municipality"]
        con.execute(f"CREATE TABLE pt AS SELECT * FROM '{data}'")
        con.execute(f"CREATE TABLE pt_geo AS SELECT * FROM '{geo}'")
        for side in ("o", "d"):
            cols = ", ".join(f"{c} AS {side}_{c}" for c in levels)
            con.execute(f"CREATE VIEW pt_geo_{side} AS SELECT {cols} FROM pt_geo")
        hierarchy = [[f"o_{c}" for c in levels], [f"d_{c}" for c in levels]]
        out.append(("Portugal", "pt", ["pt_geo_o", "pt_geo_d"], hierarchy, "count"))
    return out


def main(argv: Sequence[str]) -> None:
    seeds = int(argv[0]) if argv else 10
    con = duckdb.connect()
    print(
        "| dataset | epsilon | rounding | stored total - N: median abs [min, max] | "
        "max abs error, first noised level | at the leaves |"
    )
    print("|---|---|---|---|---|---|")
    for name, trips, domain, hierarchy, count in datasets(con):
        for eps in (0.1, 1.0, 10.0):
            for rule in ("independent", "top-down"):
                drift, first, leaves = [], [], []
                for seed in range(seeds):
                    original = hierarchical.round_to_parents
                    if rule == "independent":
                        hierarchical.round_to_parents = independent  # type: ignore[assignment]
                    try:
                        r = inftda_sql.release(
                            con, trips, hierarchy=hierarchy, domain=domain, tree="destination",
                            epsilon=eps, delta=DELTA, conversion="simple", count=count,
                            mechanism="hierarchical", seed=seed, output="released",
                            overwrite=True, levels_view=False,
                        )  # fmt: skip
                    finally:
                        hierarchical.round_to_parents = original
                    ev = inftda_sql.evaluate(
                        con,
                        trips,
                        "released",
                        hierarchy=hierarchy,
                        tree="destination",
                        count=count,
                    ).fetchall()
                    drift.append(int(ev[0][9]) - int(ev[0][8]))
                    noised = next(lv.level for lv in r.levels if lv.sigma > 0)
                    first.append(float(ev[noised][4]))
                    leaves.append(float(ev[-1][4]))
                absd = [abs(x) for x in drift]
                print(
                    f"| {name} | {eps:g} | {rule} | {statistics.median(absd):,.0f} "
                    f"[{min(drift):,}, {max(drift):,}] | {statistics.median(first):,.0f} "
                    f"[{min(first):,.0f}-{max(first):,.0f}] | {statistics.median(leaves):,.0f} "
                    f"[{min(leaves):,.0f}-{max(leaves):,.0f}] |",
                    flush=True,
                )


if __name__ == "__main__":
    main(sys.argv[1:])
