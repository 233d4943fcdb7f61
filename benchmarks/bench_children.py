"""Children of the surviving parents: a SQL join with the domain vs numpy code ranges.

    python benchmarks/bench_children.py

The design asked for the children of a level's surviving parents to be generated in SQL, by
joining the parents with the domain. This measures that against what the engine does (expand
contiguous code ranges of the public domain with ``np.repeat``) on the last level of the
Italy-scale release: ~75K (origin province, destination municipality) parents, ~8.7M children.
Both produce the same child codes; the numbers decide the design.
"""

from __future__ import annotations

import statistics
import time

import duckdb
import numpy as np
import pyarrow as pa


def main() -> None:
    rng = np.random.default_rng(0)
    n_prov, n_mun = 107, 7900
    sizes = rng.multinomial(n_mun - n_prov, np.full(n_prov, 1 / n_prov)) + 1
    off = np.concatenate(([0], np.cumsum(sizes)))
    mun_prov = np.repeat(np.arange(n_prov), sizes)
    # surviving parents (o_province, d_mun), weighted to large provinces as in a real release
    weight = sizes / sizes.sum()
    parents_o = np.sort(rng.choice(n_prov, size=75_000, p=weight))
    parents_d = rng.integers(0, n_mun, size=parents_o.size)
    con = duckdb.connect()
    con.register("domain", pa.table({"o_prov": mun_prov, "o_mun": np.arange(n_mun)}))
    con.register("parents", pa.table({"o_prov": parents_o, "d_mun": parents_d}))
    sql = (
        "SELECT p.d_mun, d.o_mun FROM parents p JOIN domain d ON d.o_prov = p.o_prov "
        "ORDER BY p.o_prov, p.d_mun, d.o_mun"
    )
    sql_unordered = "SELECT p.d_mun, d.o_mun FROM parents p JOIN domain d ON d.o_prov = p.o_prov"

    def numpy_way() -> int:
        counts = off[parents_o + 1] - off[parents_o]
        seg = np.zeros(counts.size, dtype=np.int64)
        np.cumsum(counts[:-1], out=seg[1:])
        total = int(counts.sum())
        child = np.repeat(off[parents_o] - seg, counts) + np.arange(total)
        d = np.repeat(parents_d, counts)
        return int(child.size + d.size * 0)

    def sql_way(q: str) -> int:
        t = con.sql(q).to_arrow_table()
        t.column(0).to_numpy()
        return t.num_rows

    rows = {}
    for name, fn in [
        ("numpy code ranges", numpy_way),
        ("SQL join, ordered by parent", lambda: sql_way(sql)),
        ("SQL join, unordered", lambda: sql_way(sql_unordered)),
    ]:
        fn()
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            n = fn()
            times.append(time.perf_counter() - t0)
        rows[name] = (statistics.median(times), n)
    base = rows["numpy code ranges"][0]
    print("| method | children | median s | x numpy |")
    print("|---|---:|---:|---:|")
    for name, (t, n) in rows.items():
        print(f"| {name} | {n:,} | {t:.3f} | {t / base:.1f} |")


if __name__ == "__main__":
    main()
