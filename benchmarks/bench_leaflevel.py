"""TopDown's leaf level on Italy, step by step (issue 26, item 4).

    python benchmarks/bench_leaflevel.py capture            # one Italy release -> out/leaf.npz
    python benchmarks/bench_leaflevel.py steps --rounds 9   # per-step thread CPU, one thread
    python benchmarks/bench_leaflevel.py whole --baseline ../main --rounds 10 --threads 2

``capture`` runs one release of the synthetic Italy input (28.8M trips, star schema, as
``bench_release.py italy``) and saves its largest level's job (the leaf level: 75K parents,
8.65M children in 9 blocks) to ``benchmarks/out/leaf.npz``. ``steps`` replays that level's
blocks in one thread, timing each step with the thread's CPU clock (robust to a loaded
machine), for the kernel of this checkout (``now``) and, alternating round by round, the kernel
as it was before issue 26 item 4 (``before``: a zero-filled y, a child-length mask of the only
children, the noise added through it), both with this checkout's samplers and IntOpt; it also
times the CSPRNG alone for the words the draws take. ``whole`` times ``LevelJob.run`` over
all blocks (wall and process CPU, page faults) for this checkout and for a ``--baseline``
checkout's ``core/topdown.py`` and ``core/intopt.py``, alternating. Draws come from the
CSPRNG, as in a release.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
LEAF = HERE / "out" / "leaf.npz"


def capture() -> None:
    import duckdb

    import inftda_sql
    from inftda_sql.core import topdown as td
    from inftda_sql.synthetic import italy_like

    seen: dict[int, dict[str, Any]] = {}
    run = td.LevelJob.run

    def spy(self: Any, chunk: tuple[int, int], source: Any) -> Any:
        seen.setdefault(id(self), {"job": self, "chunks": []})["chunks"].append(chunk)
        return run(self, chunk, source)

    td.LevelJob.run = spy  # type: ignore[method-assign]
    con = duckdb.connect(":memory:")
    d = italy_like(con, scale=1.0, seed=0, microdata=True)
    con.execute("CREATE TEMP VIEW trips_star AS SELECT o_mun, d_mun FROM trips").fetchall()
    inftda_sql.release(
        con,
        "trips_star",
        hierarchy=d.hierarchy,
        domain=[d.geo_origin, d.geo_destination],
        tree="destination",
        epsilon=1.0,
        delta=1e-8,
        output="trips_private",
        overwrite=True,
    )
    big = max(seen.values(), key=lambda v: int(v["job"].child_counts.sum()))
    j = big["job"]
    LEAF.parent.mkdir(exist_ok=True)
    np.savez(
        LEAF,
        chain=j.chain,
        codes=np.stack(list(j.codes)),
        values=j.values,
        child_starts=j.child_starts,
        child_counts=j.child_counts,
        strides=np.array(j.strides),
        keys_true=j.keys_true,
        counts_true=j.counts_true,
        sigma=j.sigma,
        chunks=np.array(sorted(big["chunks"])),
    )
    print(f"{LEAF}: {j.values.size} parents, {int(j.child_counts.sum())} children")


class Level:
    """The captured level's arrays."""

    def __init__(self) -> None:
        z = np.load(LEAF)
        self.chain = int(z["chain"])
        self.codes = list(z["codes"])
        self.values = z["values"]
        self.starts = z["child_starts"]
        self.counts = z["child_counts"]
        self.strides = tuple(int(s) for s in z["strides"])
        self.keys = z["keys_true"]
        self.true = z["counts_true"]
        self.sigma = float(z["sigma"])
        self.chunks = [(int(a), int(b)) for a, b in z["chunks"]]

    def job(self, td: ModuleType, intopt: Callable[..., Any]) -> Any:
        return td.LevelJob(
            self.chain, self.codes, self.values, self.starts, self.counts, self.strides,
            self.keys, self.true, self.sigma, lambda y, t, o: intopt(y, t, o),
        )  # fmt: skip


def steps(rounds: int) -> None:
    from inftda_sql.core import topdown as td
    from inftda_sql.core.intopt import intopt
    from inftda_sql.core.noise import draw_discrete_gaussian
    from inftda_sql.core.rng import as_source

    lv = Level()
    src = as_source(None)
    clock = time.thread_time

    def prologue(a: int, b: int) -> tuple[Any, ...]:
        counts, starts = lv.counts[a:b], lv.starts[a:b]
        seg = np.zeros(counts.size, dtype=np.int64)
        np.cumsum(counts[:-1], out=seg[1:])
        first = starts.copy()
        for j, codes in enumerate(lv.codes):
            if j != lv.chain:
                first += codes[a:b] * lv.strides[j]
        return counts, starts, int(counts.sum()), seg, first

    def survivors(x: Any, seg: Any, starts: Any, a: int, b: int) -> Any:
        kept = np.flatnonzero(x > 0)
        parent = np.searchsorted(seg, kept, side="right") - 1
        return [
            starts[parent] + (kept - seg[parent]) if j == lv.chain else codes[a:b][parent]
            for j, codes in enumerate(lv.codes)
        ], x[kept]

    def before(a: int, b: int, t: dict[str, float]) -> Any:
        t0 = clock()
        counts, starts, total, seg, first = prologue(a, b)
        single = counts == 1
        t1 = clock()
        y = td._true_counts(lv.keys, lv.true, first, counts, seg, total)
        t2 = clock()
        many = np.repeat(~single, counts) if single.any() else None
        noised = total if many is None else int(np.count_nonzero(many))
        t3 = clock()
        noise = draw_discrete_gaussian(lv.sigma, noised, source=src)
        t4 = clock()
        if many is None:
            y += noise
        else:
            y[many] += noise
            y[~many] = lv.values[a:b][single]
        t5 = clock()
        x = intopt(y, lv.values[a:b], seg)
        t6 = clock()
        out = survivors(x, seg, starts, a, b)
        t7 = clock()
        for k, dt in zip(
            STEPS, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t6 - t5, t7 - t6), strict=True
        ):
            t[k] += dt
        return out

    def now(a: int, b: int, t: dict[str, float]) -> Any:
        t0 = clock()
        counts, starts, total, seg, first = prologue(a, b)
        lone = np.flatnonzero(counts == 1)
        holes = seg[lone]
        t1 = clock()
        noise = draw_discrete_gaussian(lv.sigma, total - lone.size, source=src)
        t2 = clock()
        y = td._spread(noise, total, holes)
        t3 = clock()
        td._add_true_counts(y, lv.keys, lv.true, first, counts, seg)
        y[holes] = lv.values[a:b][lone]
        t4 = clock()
        x = intopt(y, lv.values[a:b], seg)
        t5 = clock()
        out = survivors(x, seg, starts, a, b)
        t6 = clock()
        for k, dt in zip(
            STEPS, (t1 - t0, t4 - t3, 0.0, t2 - t1, t3 - t2, t5 - t4, t6 - t5), strict=True
        ):
            t[k] += dt
        return out

    results: dict[str, list[dict[str, float]]] = {"before": [], "now": []}
    load = os.getloadavg()[0]
    for r in range(rounds):
        for who in ("before", "now") if r % 2 == 0 else ("now", "before"):
            t: dict[str, float] = defaultdict(float)
            kernel = before if who == "before" else now
            parts = [kernel(a, b, t) for a, b in lv.chunks]
            t0 = clock()
            [np.concatenate([p[0][j] for p in parts]) for j in range(len(lv.codes))]
            np.concatenate([p[1] for p in parts])
            t["concatenate"] = clock() - t0
            t0 = clock()
            for a, b in lv.chunks:
                src.words((int(lv.counts[a:b].sum()) + 1) // 2)
            t["(CSPRNG words alone)"] = clock() - t0
            results[who].append(t)
    print(f"load {load} -> {os.getloadavg()[0]}; thread CPU seconds over {rounds} rounds")
    print(f"{'step':26s} {'before min':>10s} {'median':>8s} {'now min':>8s} {'median':>8s}")
    for k in [*STEPS, "concatenate", "(CSPRNG words alone)", "total"]:
        cols = []
        for who in ("before", "now"):
            if k == "total":
                v = [sum(x for s, x in t.items() if not s.startswith("(")) for t in results[who]]
            else:
                v = [t.get(k, 0.0) for t in results[who]]
            cols.append(f"{min(v):10.4f} {statistics.median(v):8.4f}")
        print(f"{k:26s} {cols[0]} {cols[1]}")


STEPS = (
    "children",
    "true counts",
    "only-child mask",
    "noise draw",
    "noise into y",
    "intopt",
    "survivors",
)


def _load_module(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def whole(baseline: Path, rounds: int, threads: int) -> None:
    import inftda_sql.core
    from inftda_sql.core import intopt as io
    from inftda_sql.core import topdown as td
    from inftda_sql.core.rng import as_source

    assert inftda_sql.core
    core = baseline / "inftda_sql" / "core"
    old_io = _load_module("inftda_sql.core._baseline_intopt", core / "intopt.py")
    old_td = _load_module("inftda_sql.core._baseline_topdown", core / "topdown.py")
    lv = Level()
    src = as_source(None)
    pool = ThreadPoolExecutor(threads)
    wall: dict[str, list[float]] = {"baseline": [], "now": []}
    cpu: dict[str, list[float]] = {"baseline": [], "now": []}
    faults: dict[str, list[int]] = {"baseline": [], "now": []}
    load = os.getloadavg()[0]
    for r in range(rounds):
        for who in ("baseline", "now") if r % 2 == 0 else ("now", "baseline"):
            job = lv.job(old_td, old_io.intopt) if who == "baseline" else lv.job(td, io.intopt)
            f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            t0, c0 = time.perf_counter(), time.process_time()
            parts = list(pool.map(job.run, lv.chunks, [src] * len(lv.chunks)))
            [np.concatenate([p[0][j] for p in parts]) for j in range(len(lv.codes))]
            np.concatenate([p[1] for p in parts])
            wall[who].append(time.perf_counter() - t0)
            cpu[who].append(time.process_time() - c0)
            faults[who].append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
    print(f"load {load} -> {os.getloadavg()[0]}; {threads} threads, {rounds} rounds")
    for who in ("baseline", "now"):
        print(
            f"{who:8s} wall min {min(wall[who]):.3f} median {statistics.median(wall[who]):.3f}"
            f"  CPU min {min(cpu[who]):.3f} median {statistics.median(cpu[who]):.3f}"
            f"  page faults median {statistics.median(faults[who]):.0f}"
        )


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("what", choices=["capture", "steps", "whole"])
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--baseline", type=Path, help="whole: a checkout to compare against")
    args = p.parse_args()
    if args.what == "capture":
        capture()
    elif args.what == "steps":
        steps(args.rounds)
    else:
        if args.baseline is None:
            raise SystemExit("whole needs --baseline DIR (a checkout, e.g. of main)")
        whole(args.baseline, args.rounds, args.threads)


if __name__ == "__main__":
    main()
