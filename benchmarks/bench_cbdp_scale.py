"""CBDP at O/D scale (issue 26 item 5): the Newton systems of the optimisation by conjugate
gradients (``inftda_sql.core.lsq_iterative``) against the structural direct solver, and numpy's
CG against SciPy's.

    .venv/bin/python benchmarks/bench_cbdp_scale.py release   # DC-like releases, fresh processes
    .venv/bin/python benchmarks/bench_cbdp_scale.py solver    # solve() alone: direct vs CG
    .venv/bin/python benchmarks/bench_cbdp_scale.py scipy     # numpy pcg vs scipy.sparse.linalg.cg
    .venv/bin/python benchmarks/bench_cbdp_scale.py odmts     # issue 15's 10.2M-cell scaling case

**Data.** ``inftda_sql.synthetic.dc_like`` (570 x 570 block groups in 200 tracts, 250,000 trips,
seed 0: 324,900 leaf cells) with ``dc_like_features("mixed")`` (total, origin and destination
tract, tract pair, block group x tract both ways: coarse cells 1 + 200 + 200 + 40,000 + 114,000
+ 114,000, 268,401 of them besides the largest, so the direct solver's dense system is out of
the question) or ``"tract"`` (401 besides the 40,000 tract pairs: both solvers apply). The
10.2M-cell case is ``benchmarks/reproduce_cbdp.py``'s scaling run at 460 stops (ODMTS, the
paper's five features), its data written by that script.

Every release runs in a fresh process (peak RSS is ``ru_maxrss`` less the resident memory
before the release); rounds alternate the cases; medians and minima are printed with the load
average. Rows go to ``benchmarks/paper/cbdp_scale_runs.jsonl``. ``--baseline DIR`` times another
checkout's package in the same rounds (``release``: the tract case, which it may refuse, with
``inftda_sql/synthetic/dc.py`` copied into it; ``odmts``: the 10.2M-cell case), e.g. main as
``git archive main inftda_sql sql | tar -x -C DIR``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
OUT = HERE / "paper" / "cbdp_scale_runs.jsonl"
#: feature set, budget, and the solver forced (None: the automatic choice)
CASES: dict[str, tuple[str, dict[str, float], str | None]] = {
    "mixed-eps1": ("mixed", {"epsilon": 1.0}, None),
    "mixed-rhoinf": ("mixed", {"rho": float("inf")}, None),
    "tract-eps1": ("tract", {"epsilon": 1.0}, None),
    "tract-eps1-direct": ("tract", {"epsilon": 1.0}, "direct"),
}


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _force(solver: str | None) -> None:
    """Force the CG path or the direct one (as far as it applies)."""
    from inftda_sql.core import lsq

    if solver == "cg":
        lsq.MAX_DENSE_CELLS = 0
    elif solver == "direct":
        lsq.MAX_DENSE_CELLS = lsq.MAX_LAPACK_CELLS = 4000


def release_one(case: str) -> dict[str, Any]:
    """One DC-like release in this (fresh) process."""
    import duckdb

    import inftda_sql
    from inftda_sql.synthetic.dc import dc_like, dc_like_features

    kind, budget, force = CASES[case]
    _force(force)
    con = duckdb.connect()
    d = dc_like(con, seed=0)
    con.sql(f"SELECT count(*) FROM {d.trips}").fetchall()
    base = _rss_mb()
    t0, c0 = time.perf_counter(), time.process_time()
    r = inftda_sql.release(
        con,
        d.trips,
        mechanism="cbdp",
        features=dc_like_features(kind),
        domain=[d.origins, d.destinations],
        seed=1,
        output="out",
        levels_view=False,
        **budget,  # type: ignore[arg-type]
    )
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    p = r.mechanism_params
    return {
        "case": case,
        "leaf_cells": d.leaf_cells,
        "seconds": seconds,
        "cpu_seconds": cpu,
        "optimise_s": r.timings.get("mechanism: optimise"),
        "peak_rss_mb": peak,
        "rss_before_mb": base,
        "newton_steps": p["newton_steps"],
        "newton_solver": p.get("newton_solver"),
        "cg_iterations": p.get("cg_iterations"),
        "atoms": p["atoms"],
    }


def odmts_one(db: str, force: str | None) -> dict[str, Any]:
    """The 10.2M-cell release of reproduce_cbdp.py's scaling run, in this fresh process."""
    import inftda_sql.mechanisms

    sys.path.insert(0, str(HERE))
    from reproduce_cbdp import scaling_one  # type: ignore[import-not-found]

    if force is not None:
        _force(force)
    row: dict[str, Any] = scaling_one(460, inftda_sql.mechanisms.DEFAULT_MAX_CELLS, db)
    row["forced"] = force
    return row


def _child(args: list[str], path: str | None = None) -> dict[str, Any]:
    env = dict(os.environ)
    if path is not None:
        env["PYTHONPATH"] = path
    found = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, check=True, env=env
    )
    row: dict[str, Any] = json.loads(found.stdout.strip().splitlines()[-1])
    return row


def _record(rows: list[dict[str, Any]], section: str) -> None:
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with OUT.open("a") as f:
        for row in rows:
            blas = os.environ.get("OPENBLAS_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS")
            f.write(json.dumps({"section": section, "blas_threads": blas, **row}) + "\n")


def _summary(rows: list[dict[str, Any]], key: str, value: str) -> None:
    for name in dict.fromkeys(r[key] for r in rows):
        vals = [r[value] for r in rows if r[key] == name and value in r]
        if not vals:
            continue
        print(
            f"{name}: median {statistics.median(vals):.2f}, min {min(vals):.2f} "
            f"({len(vals)} rounds)",
            flush=True,
        )


def release(args: argparse.Namespace) -> None:
    rows = []
    print(f"load before {os.getloadavg()}", flush=True)
    for _ in range(args.rounds):
        for case in args.cases:
            row = _child(["_release", case])
            row["load_average"] = os.getloadavg()[0]
            rows.append(row)
            print(json.dumps(row), flush=True)
        if args.baseline:  # the cases the baseline can release (it may refuse)
            try:
                row = _child(["_release", "tract-eps1"], args.baseline)
            except subprocess.CalledProcessError as exc:
                row = {"case": "tract-eps1", "error": exc.stderr.strip().splitlines()[-1]}
            row["case"] = f"baseline tract-eps1 {args.baseline}"
            row["load_average"] = os.getloadavg()[0]
            rows.append(row)
            print(json.dumps(row), flush=True)
    print(f"load after {os.getloadavg()}", flush=True)
    _summary(rows, "case", "seconds")
    _summary(rows, "case", "peak_rss_mb")
    _record(rows, "release")


def _problem(kind: str, eps: float, seed: int = 0) -> Any:
    """The LatticeProblem a DC-like release at ``eps`` (discrete-Laplace-like noise, exact
    total) solves, built in numpy."""
    from inftda_sql.core.lsq import LatticeProblem, combine_codes
    from inftda_sql.synthetic import dc_like_flows

    f = dc_like_flows(seed=seed)
    b, t = f.block_groups, f.tracts
    o, d = np.repeat(np.arange(b), b), np.tile(np.arange(b), b)
    to, td = f.tract[o], f.tract[d]
    groups = [np.zeros(b * b, np.int64), to, td, to * t + td]
    if kind == "mixed":
        groups += [o * t + td, to * b + d]
    maps: list[Any] = []
    sizes = []
    for g in groups:
        code, n = combine_codes(np.zeros(b * b, np.int64), 1, g.astype(np.int64), int(g.max()) + 1)
        maps.append(code)
        sizes.append(n)
    maps.append(None)
    sizes.append(b * b)
    truth = f.counts.ravel().astype(float)
    rng = np.random.default_rng(seed)
    noised = len(sizes) - 1
    targets = [
        (truth if m is None else np.bincount(m, weights=truth, minlength=s))
        + np.round(rng.laplace(0.0, noised / eps, s))
        for m, s in zip(maps, sizes, strict=True)
    ]
    targets[0] = np.array([truth.sum()])
    exact = (True,) + (False,) * noised
    weights = tuple(1.0 / s for s in sizes)
    return LatticeProblem(tuple(maps), tuple(sizes), tuple(targets), weights, exact, noised)


def _odmts_problem(stops: int = 130, trips: int = 38_000, eps: float = 1.0) -> Any:
    """The paper's shape (ODMTS: stops x stops x 48 periods; total, period, zones x period,
    mode x period, leaf), uniform trips, noise of scale 4 / eps (the exact total)."""
    from inftda_sql.core.lsq import LatticeProblem

    rng = np.random.default_rng(7)
    periods = 48
    o, d, t = (
        x.ravel()
        for x in np.meshgrid(np.arange(stops), np.arange(stops), np.arange(periods), indexing="ij")
    )
    zone = np.sort(rng.integers(0, 4, stops))
    mode = rng.integers(0, 12, (stops, stops))[o, d]
    truth = np.bincount(rng.integers(0, o.size, trips), minlength=o.size).astype(float)
    maps = [np.zeros(o.size, np.int64), t, (zone[o] * 4 + zone[d]) * periods + t]
    maps += [mode * periods + t, None]
    sizes = [1, periods, 16 * periods, 12 * periods, o.size]
    targets = [
        (truth if m is None else np.bincount(m, weights=truth, minlength=s))
        + np.round(rng.laplace(0, 4.0 / eps, s))
        for m, s in zip(maps, sizes, strict=True)
    ]
    targets[0] = np.array([truth.sum()])
    weights = tuple(1 / s for s in sizes)
    exact = (True, False, False, False, False)
    return LatticeProblem(tuple(maps), tuple(sizes), tuple(targets), weights, exact, 4)


def solver(args: argparse.Namespace) -> None:
    from inftda_sql.core import lsq

    problems = {
        "tract": _problem("tract", 1.0),
        "mixed": _problem("mixed", 1.0),
        "odmts-811K": _odmts_problem(),
    }
    # (problem, MAX_DENSE_CELLS, MAX_LAPACK_CELLS): direct where allowed, else CG
    cases = [("tract", 4000, 4000), ("tract", 0, 0), ("mixed", 0, 0)]
    cases += [("odmts-811K", 4000, 4000), ("odmts-811K", 0, 0)]
    rows = []
    print(f"load before {os.getloadavg()}", flush=True)
    for _ in range(args.rounds):
        for kind, max_dense, max_lapack in cases:
            lsq.MAX_DENSE_CELLS, lsq.MAX_LAPACK_CELLS = max_dense, max_lapack
            t0 = time.perf_counter()
            sol = lsq.solve(problems[kind])
            row = {
                "case": f"{kind} {sol.solver}",
                "seconds": time.perf_counter() - t0,
                "newton_steps": sol.newton_steps,
                "cg_iterations": sol.cg_iterations,
                "objective": problems[kind].objective(sol.x),
                "load_average": os.getloadavg()[0],
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    print(f"load after {os.getloadavg()}", flush=True)
    _summary(rows, "case", "seconds")
    _record(rows, "solver")


def scipy_vs_numpy(args: argparse.Namespace) -> None:
    """The Newton systems of one mixed solve, each solved by our pcg and by SciPy's cg with
    the same operator, Jacobi preconditioner and absolute tolerance (the forcing term)."""
    from scipy.sparse.linalg import LinearOperator, cg

    from inftda_sql.core import lsq, lsq_iterative

    captured: list[tuple[Any, ...]] = []
    original = lsq_iterative.SchurCG.solve

    def capture(
        self: lsq_iterative.SchurCG, w_all: Any, grad: Any, forcing: float, floor: float
    ) -> Any:
        captured.append((self, w_all.copy(), grad.copy(), forcing))
        return original(self, w_all, grad, forcing, floor)

    lsq_iterative.SchurCG.solve = capture  # type: ignore[method-assign]
    lsq.solve(_problem("mixed", 1.0))
    lsq_iterative.SchurCG.solve = original  # type: ignore[method-assign]
    rows = []
    print(f"{len(captured)} Newton systems; load before {os.getloadavg()}", flush=True)
    for _ in range(args.rounds):
        for solver_name in ("numpy", "scipy"):
            total, iterations = 0.0, 0
            for owner, w_all, grad, forcing in captured:
                system = owner.system(w_all, grad)
                target = forcing * float(np.sqrt(np.einsum("i,i->", grad, grad)))
                t0 = time.perf_counter()
                if solver_name == "numpy":
                    _, done = lsq_iterative.pcg(system.apply, system.diag, system.rhs, target, 0.0)
                else:
                    n = system.rhs.size
                    count = [0]

                    def step(_: Any, count: list[int] = count) -> None:
                        count[0] += 1

                    op = LinearOperator((n, n), matvec=system.apply, dtype=np.float64)
                    inv = 1.0 / system.diag
                    pre = LinearOperator((n, n), matvec=lambda v, inv=inv: inv * v)
                    cg(op, system.rhs, rtol=0.0, atol=target, M=pre, maxiter=1000, callback=step)
                    done = count[0]
                total += time.perf_counter() - t0
                iterations += done
            row = {
                "case": solver_name,
                "seconds": total,
                "iterations": iterations,
                "load_average": os.getloadavg()[0],
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    print(f"load after {os.getloadavg()}", flush=True)
    _summary(rows, "case", "seconds")
    _record(rows, "scipy")


def odmts(args: argparse.Namespace) -> None:
    db = str(Path(os.environ.get("TMPDIR", "/tmp")) / "cbdp_scale_odmts.duckdb")
    # reproduce_cbdp.py's own data step, in a process of its own
    subprocess.run([sys.executable, __file__, "_odmts_data", db], check=True)
    rows = []
    print(f"load before {os.getloadavg()}", flush=True)
    try:
        for _ in range(args.rounds):
            runs = [("auto (direct)", [], None), ("cg (forced)", ["--cg"], None)]
            if args.baseline:
                runs.append((f"baseline {args.baseline}", [], args.baseline))
            for case, extra, path in runs:
                row = _child(["_odmts", db, *extra], path)
                row["load_average"] = os.getloadavg()[0]
                row["case"] = case
                rows.append(row)
                print(json.dumps(row), flush=True)
    finally:
        Path(db).unlink(missing_ok=True)
        Path(db + ".json").unlink(missing_ok=True)
    print(f"load after {os.getloadavg()}", flush=True)
    _summary(rows, "case", "seconds")
    _summary(rows, "case", "peak_rss_mb")
    _record(rows, "odmts")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__)
    steps = ["release", "solver", "scipy", "odmts", "_release", "_odmts", "_odmts_data"]
    p.add_argument("what", choices=steps)
    p.add_argument(
        "--baseline",
        help="a checkout (e.g. of main) whose inftda_sql to time beside this one, same rounds",
    )
    p.add_argument("rest", nargs="*")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--cases", nargs="+", default=list(CASES))
    p.add_argument("--cg", action="store_true")
    args = p.parse_args(argv)
    if args.what == "_release":
        print(json.dumps(release_one(args.rest[0])))
    elif args.what == "_odmts_data":
        import inftda_sql.mechanisms  # noqa: F401  (reproduce_cbdp reads it at import)

        sys.path.insert(0, str(HERE))
        from reproduce_cbdp import scaling_data

        scaling_data(460, args.rest[0])
    elif args.what == "_odmts":
        print(json.dumps(odmts_one(args.rest[0], "cg" if args.cg else None)))
    else:
        {"release": release, "solver": solver, "scipy": scipy_vs_numpy, "odmts": odmts}[args.what](
            args
        )


if __name__ == "__main__":
    main()
