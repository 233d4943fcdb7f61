"""Benchmark of ``inftda_sql.intopt`` on a realistic level, against the reference ``inf-tda``.

The level: 20M children in 300K parents with skewed (lognormal) sizes; the true counts are
sparse and heavy-tailed (60% zeros, the rest Zipf(1.8) capped at 10**6); ``y`` adds rounded
Gaussian noise (sigma 5) and each parent's value is its true total plus the same noise,
clipped at 0. ``intopt`` runs once as a warm-up, then three times; the median is reported,
with the most passes any parent needed and the process's peak RSS.

The reference is the published ``inf-tda`` 0.1 ``int_opt``, applied parent by parent as its
``inf_tda`` does, on the first ``--sample`` parents (3,000 by default; one warm-up, median of
3); its speed per child is extrapolated to the full level. Its output is also recomputed with
a stable ``argsort`` and compared with ``intopt`` (they must be identical). The reference runs
in a subprocess with its own interpreter, because it pins old versions. Set up that
virtualenv once (``benchmarks/.venv-ref`` is git-ignored)::

    python3 -m venv benchmarks/.venv-ref
    benchmarks/.venv-ref/bin/pip install inf-tda==0.1 opendp==0.12.1 pandas==2.2.3 numpy==2.2.6

Run from the repository root (about 10 s; ``--no-reference`` skips the reference)::

    .venv/bin/python benchmarks/bench_intopt.py
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import numpy.typing as npt

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from inftda_sql.core import intopt as _intopt  # noqa: E402
from inftda_sql.core.intopt import intopt  # noqa: E402

REF_PYTHON = ROOT / "benchmarks" / ".venv-ref" / "bin" / "python"
Int64Array = npt.NDArray[np.int64]

# Runs inside the reference virtualenv: int_opt parent by parent, as inf_tda does.
REF_SCRIPT = r"""
import json, statistics, sys, time
import numpy as np
from InfTDA.optimization import int_opt

data = np.load(sys.argv[1])
y, offsets, targets = data["y"], data["offsets"], data["targets"]
ends = np.append(offsets[1:], len(y))
parts = [y[a:b] for a, b in zip(offsets.tolist(), ends.tolist())]
work = list(zip(parts, targets.tolist()))
[int_opt(part, c) for part, c in work]  # warm-up
times = []
for _ in range(3):
    start = time.perf_counter()
    out = [int_opt(part, c) for part, c in work]
    times.append(time.perf_counter() - start)
np.save(sys.argv[2], np.concatenate(out).astype(np.int64))
# The same with a stable argsort (the tie-break inftda_sql reproduces); not timed.
unstable = np.argsort
np.argsort = lambda a, *args, **kwargs: unstable(a, kind="stable")
stable = [int_opt(part, c) for part, c in work]
np.save(sys.argv[3], np.concatenate(stable).astype(np.int64))
print(json.dumps({"seconds": statistics.median(times), "numpy": np.__version__}))
"""


def make_level(
    children: int, segments: int, seed: int, sigma: float = 5.0
) -> tuple[Int64Array, Int64Array, Int64Array]:
    """A synthetic noisy level: ``y``, segment ``offsets`` and non-negative ``targets``."""
    rng = np.random.default_rng(seed)
    weights = rng.lognormal(0.0, 1.3, segments)
    sizes = 1 + np.floor(weights / weights.sum() * (children - segments)).astype(np.int64)
    sizes[rng.choice(segments, children - int(sizes.sum()), replace=False)] += 1
    offsets = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
    y = np.empty(children, dtype=np.int64)
    block = 1 << 20
    for start in range(0, children, block):  # blocks keep the temporaries small
        true = y[start : start + block]
        true[:] = rng.zipf(1.8, true.size)
        np.minimum(true, 1_000_000, out=true)
        true[rng.random(true.size) < 0.6] = 0
    targets = np.add.reduceat(y, offsets)
    targets += np.rint(rng.normal(0.0, sigma, segments)).astype(np.int64)
    np.maximum(targets, 0, out=targets)
    for start in range(0, children, block):
        part = y[start : start + block]
        part += np.rint(rng.normal(0.0, sigma, part.size)).astype(np.int64)
    return y, offsets, targets


def median_seconds(run: Callable[[], object], repeats: int = 3) -> float:
    run()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def run_reference(
    y: Int64Array, offsets: Int64Array, targets: Int64Array
) -> tuple[float, Int64Array, Int64Array, str]:
    """Median seconds of the reference loop, its output, its output with a stable sort."""
    with tempfile.TemporaryDirectory() as tmp:
        paths = [Path(tmp) / name for name in ("in.npz", "out.npy", "stable.npy")]
        np.savez(paths[0], y=y, offsets=offsets, targets=targets)
        proc = subprocess.run(
            [str(REF_PYTHON), "-c", REF_SCRIPT, *map(str, paths)],
            check=True,
            capture_output=True,
            text=True,
        )
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        return float(result["seconds"]), np.load(paths[1]), np.load(paths[2]), result["numpy"]


def compare(
    ours: Int64Array, ref: Int64Array, y: Int64Array, offsets: Int64Array
) -> tuple[int, int]:
    """(segments identical, segments at the same Chebyshev distance) between two outputs."""
    same = np.add.reduceat((ours != ref).astype(np.int64), offsets) == 0
    dist_ours = np.maximum.reduceat(np.abs(ours - y), offsets)
    dist_ref = np.maximum.reduceat(np.abs(ref - y), offsets)
    return int(same.sum()), int((dist_ours == dist_ref).sum())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--children", type=int, default=20_000_000)
    parser.add_argument("--segments", type=int, default=300_000)
    parser.add_argument("--sample", type=int, default=3_000, help="parents run by the reference")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-reference", action="store_true")
    args = parser.parse_args()

    start = time.perf_counter()
    y, offsets, targets = make_level(args.children, args.segments, args.seed)
    gen_seconds = time.perf_counter() - start
    rss_data = peak_rss_mib()
    n, m = len(y), len(offsets)

    full = median_seconds(lambda: intopt(y, targets, offsets))
    rss_after = peak_rss_mib()
    full_desc = median_seconds(lambda: intopt(y, targets, offsets, order="descending"))
    _, passes = _intopt._solve(*_intopt._validate(y, targets, offsets, "ascending"))
    _, passes_desc = _intopt._solve(*_intopt._validate(y, targets, offsets, "descending"))

    k = min(args.sample, m)
    sample_n = int(offsets[k]) if k < m else n
    ys, offs_s, cs = y[:sample_n], offsets[:k], targets[:k]
    sample = median_seconds(lambda: intopt(ys, cs, offs_s))

    print(f"numpy {np.__version__}; level generated in {gen_seconds:.1f} s")
    print(
        f"level: {n:,} children in {m:,} parents (largest {int(np.diff(offsets).max()):,}); "
        f"{int((y == 0).sum()) / n:.0%} zeros, {int((y < 0).sum()) / n:.0%} negative"
    )
    print(f"most passes: {passes} (ascending), {passes_desc} (descending)")
    print(
        f"peak RSS: {rss_data:,.0f} MiB after generating the level, "
        f"{rss_after:,.0f} MiB after intopt (output alone is {n * 8 / 2**20:,.0f} MiB)"
    )
    print()

    rows: list[tuple[str, int, float]] = []
    ref_rate: float | None = None
    if args.no_reference:
        pass
    elif not REF_PYTHON.exists():
        print(f"reference skipped: {REF_PYTHON} missing (see this script's docstring)\n")
    else:
        ref_seconds, ref_x, ref_stable, ref_numpy = run_reference(ys, offs_s, cs)
        ref_rate = sample_n / ref_seconds
        ours_x = intopt(ys, cs, offs_s)
        same, same_dist = compare(ours_x, ref_x, ys, offs_s)
        same_stable, _ = compare(ours_x, ref_stable, ys, offs_s)
        print(
            f"reference (numpy {ref_numpy}, median of 3) on the first {k:,} parents: "
            f"output identical to intopt in {same_stable:,} parents with a stable argsort; "
            f"with its own unstable argsort identical in {same:,}, "
            f"same Chebyshev distance in {same_dist:,}\n"
        )
        rows.append((f"reference int_opt, first {k:,} parents", sample_n, ref_seconds))
        rows.append(("reference, extrapolated to the level", n, n / ref_rate))
    rows.append((f"intopt, first {k:,} parents", sample_n, sample))
    rows.append(("intopt, full level", n, full))
    rows.append(("intopt descending, full level", n, full_desc))

    print("| run | children | seconds | children/s | ratio |")
    print("|---|---:|---:|---:|---:|")
    for name, children, seconds in rows:
        rate = children / seconds
        ratio = f"{rate / ref_rate:,.0f}x" if ref_rate else "-"
        print(f"| {name} | {children:,} | {seconds:.3f} | {rate:,.0f} | {ratio} |")


if __name__ == "__main__":
    main()
