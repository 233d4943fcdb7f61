"""Throughput of the SQL functions (``inftda_sql.register``) against the Python API, same data.

Usage::

    .venv/bin/python benchmarks/bench_udf.py [--draws N] [--children N] [--parents N]
                                             [--rounds R] [--threads T]

Everything runs in one process, on one in-memory DuckDB connection with ``threads = T``
(1 by default: the Python API runs on one core, and the machine is shared), in ``R`` rounds
(at least 5). A round runs every variant once, in alternating order (forwards in even rounds,
backwards in odd ones), so that a burst of load from other processes falls on both sides of a
comparison. Each figure is the min and the median over the rounds; the ratios compare medians
(and mins) of the pairs measured side by side. The machine's load average is printed before and
after.

Draws (``N`` rows of ``t(x BIGINT, s DOUBLE)``, the noise CSPRNG as always):

* ``sql noise``: ``SELECT sum(x + dp_discrete_gaussian(s)) FROM t`` (one sigma; and four
  sigmas mixed row by row);
* ``python noise``: ``(x + sample_discrete_gaussian(s)).sum()`` on the same columns already in
  numpy (one sigma: a scalar and a size, the API's fastest call; mixed: the array of sigmas);
* ``sql floor``: ``SELECT sum(x + 0) FROM t``, the query without the function;
* ``sql no-op Arrow UDF``: the same query through an Arrow UDF that returns zeros: the price of
  the round trip itself (DuckDB to Arrow to Python and back, one call per 2,048 rows).

IntOpt (``--children`` children in ``--parents`` parents of lognormal sizes, the level of
``bench_intopt.py``):

* ``sql intopt (lists)``: ``SELECT sum(len(intopt(noisy, target))) FROM parents``, one
  ``BIGINT[]`` per parent already in a table;
* ``python intopt``: ``intopt(y, targets, offsets)`` on the flat numpy arrays;
* ``sql group by + intopt``: ``intopt(list(noisy ORDER BY child), any_value(target))`` per
  parent of a table of children (``GROUP BY parent``): DuckDB builds the lists too;
* ``python fetch + intopt``: the same table fetched as Arrow ``ORDER BY parent, child``, the
  offsets found with numpy, then ``intopt``: how ``release()`` runs a level;
* ``sql group by, lists only``: the ``GROUP BY`` with its ordered ``list()`` and no IntOpt, the
  share of DuckDB's own work in ``sql group by + intopt``.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import duckdb
import duckdb.func
import numpy as np
import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_intopt import make_level  # noqa: E402

import inftda_sql  # noqa: E402
from inftda_sql.core.intopt import intopt  # noqa: E402
from inftda_sql.core.noise import sample_discrete_gaussian  # noqa: E402

SIGMA = 13.2  # a level's sigma at epsilon 1, delta 1e-8 over 3 levels (README)
MIXED = (2.5, 13.2, 40.0, 150.0)


def rounds(variants: dict[str, Callable[[], object]], n: int) -> dict[str, list[float]]:
    """Seconds of every variant in each of ``n`` rounds, the order alternating by round."""
    names = list(variants)
    for name in names:  # warm-up: tables, caches, page faults
        variants[name]()
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(n):
        for name in names if r % 2 == 0 else names[::-1]:
            start = time.perf_counter()
            variants[name]()
            times[name].append(time.perf_counter() - start)
    return times


def report(title: str, unit: str, count: int, times: dict[str, list[float]]) -> None:
    print(f"\n{title}: {count:,} {unit} per run, {len(next(iter(times.values())))} rounds\n")
    print(f"| variant | min (s) | median (s) | M {unit}/s (median) |")
    print("|---|---:|---:|---:|")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"| {name} | {min(ts):.3f} | {med:.3f} | {count / med / 1e6:.1f} |")


def ratio(times: dict[str, list[float]], slow: str, fast: str) -> str:
    a, b = times[slow], times[fast]
    return (
        f"{slow} / {fast}: {statistics.median(a) / statistics.median(b):.2f}x (medians), "
        f"{min(a) / min(b):.2f}x (mins)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=10_000_000, help="rows of the noise runs")
    parser.add_argument("--children", type=int, default=5_000_000, help="children of the level")
    parser.add_argument("--parents", type=int, default=100_000, help="parents of the level")
    parser.add_argument("--rounds", type=int, default=7, help="rounds (at least 5)")
    parser.add_argument("--threads", type=int, default=1, help="DuckDB threads")
    args = parser.parse_args()
    if args.rounds < 5:
        parser.error("--rounds must be at least 5")

    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores; Python "
        f"{platform.python_version()}, DuckDB {duckdb.__version__}, numpy {np.__version__}, "
        f"pyarrow {pa.__version__}; DuckDB threads = {args.threads}"
    )
    print("load average before: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    con = duckdb.connect(config={"threads": args.threads})
    inftda_sql.register(con)
    zeros = np.zeros(2048, dtype=np.int64)  # DuckDB's batches have at most 2,048 rows
    con.create_function(
        "bench_nop",
        lambda s: pa.array(zeros[: len(s)]),
        ["DOUBLE"],
        "BIGINT",
        type=duckdb.func.ARROW,
        side_effects=True,
    )

    # ---------------------------------------------------------------------------- noise
    n = args.draws
    rng = np.random.default_rng(0)
    x = rng.integers(0, 1000, n)
    s_one = np.full(n, SIGMA)
    s_mixed = np.asarray(MIXED)[rng.integers(0, len(MIXED), n)]
    con.register("t_", pa.table({"x": x, "s": s_one, "m": s_mixed}))
    con.execute("CREATE TABLE t AS SELECT * FROM t_").fetchall()
    con.unregister("t_")

    def sql(query: str) -> Callable[[], object]:
        return lambda: con.execute(query).fetchall()

    noise = rounds(
        {
            "sql noise, one sigma": sql("SELECT sum(x + dp_discrete_gaussian(s)) FROM t"),
            "python noise, one sigma": lambda: int((x + sample_discrete_gaussian(SIGMA, n)).sum()),
            "sql noise, 4 sigmas mixed": sql("SELECT sum(x + dp_discrete_gaussian(m)) FROM t"),
            "python noise, 4 sigmas mixed": lambda: int(
                (x + sample_discrete_gaussian(s_mixed)).sum()
            ),
            "sql floor (no function)": sql("SELECT sum(x + 0) FROM t"),
            "sql no-op Arrow UDF": sql("SELECT sum(x + bench_nop(s)) FROM t"),
        },
        args.rounds,
    )
    report("Draws", "draws", n, noise)
    print()
    print(ratio(noise, "sql noise, one sigma", "python noise, one sigma"))
    print(ratio(noise, "sql noise, 4 sigmas mixed", "python noise, 4 sigmas mixed"))

    # ---------------------------------------------------------------------------- intopt
    y, offsets, targets = make_level(args.children, args.parents, seed=1)
    m = len(offsets)
    sizes = np.diff(offsets, append=len(y))
    parent = np.repeat(np.arange(m), sizes)
    lists = pa.ListArray.from_arrays(
        pa.array(np.append(offsets, len(y)).astype(np.int32)), pa.array(y)
    )
    con.register("p_", pa.table({"id": np.arange(m), "noisy": lists, "target": targets}))
    con.execute("CREATE TABLE parents AS SELECT * FROM p_").fetchall()
    con.unregister("p_")
    shuffled = rng.permutation(len(y))  # the children table is not stored in order
    con.register(
        "c_",
        pa.table(
            {
                "parent": parent[shuffled],
                "child": shuffled,
                "noisy": y[shuffled],
                "target": targets[parent[shuffled]],
            }
        ),
    )
    con.execute("CREATE TABLE children AS SELECT * FROM c_").fetchall()
    con.unregister("c_")

    def fetch_and_solve() -> object:
        tab = con.sql(
            "SELECT parent, noisy, target FROM children ORDER BY parent, child"
        ).to_arrow_table()
        par = tab.column("parent").to_numpy()
        starts = np.flatnonzero(np.diff(par, prepend=-1))
        tgt = tab.column("target").to_numpy()[starts]
        return intopt(tab.column("noisy").to_numpy(), tgt, starts)

    solve = rounds(
        {
            "sql intopt (lists)": sql("SELECT sum(len(intopt(noisy, target))) FROM parents"),
            "python intopt": lambda: intopt(y, targets, offsets),
            "sql group by + intopt": sql(
                "SELECT sum(len(x)) FROM (SELECT intopt(list(noisy ORDER BY child), "
                "any_value(target)) AS x FROM children GROUP BY parent)"
            ),
            "python fetch + intopt": fetch_and_solve,
            "sql group by, lists only": sql(
                "SELECT sum(len(x)) FROM (SELECT list(noisy ORDER BY child) AS x "
                "FROM children GROUP BY parent)"
            ),
        },
        args.rounds,
    )
    report(f"IntOpt ({m:,} parents)", "children", len(y), solve)
    print()
    print(ratio(solve, "sql intopt (lists)", "python intopt"))
    print(ratio(solve, "sql group by + intopt", "python fetch + intopt"))
    got = np.concatenate(
        [
            np.asarray(r[0], dtype=np.int64)
            for r in con.execute("SELECT intopt(noisy, target) FROM parents ORDER BY id").fetchall()
        ]
    )
    assert (got == intopt(y, targets, offsets)).all(), "SQL and Python IntOpt differ"
    print("SQL and Python IntOpt outputs are identical on the level.")
    print("load average after: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    con.close()


if __name__ == "__main__":
    main()
