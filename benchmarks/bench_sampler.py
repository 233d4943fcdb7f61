"""Throughput of the exact discrete Gaussian sampler against OpenDP's exact integer Gaussian.

Usage::

    python benchmarks/bench_sampler.py [--draws N] [--repeats R] [--opendp-draws M]

For each sigma it times, on one thread: building the 128-bit table (cold, uncached); our
sampler on the default OS-CSPRNG path and on the seeded (Philox) path, ``N`` draws per run;
OpenDP's ``make_gaussian`` over an integer vector, ``M`` draws per run (its rate is
extrapolated). Each figure is the median of ``R`` runs after one warm-up run. It also reports
the raw ``os.urandom`` rate, an upper bound for the default path (each draw consumes 32 bits),
and the rate of the exact rejection sampler used above ``SIGMA_TABLE_MAX``. The output is a
Markdown table.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np

if importlib.util.find_spec("inftda_sql") is None:  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from inftda_sql.core import noise as _noise
from inftda_sql.core.noise import SIGMA_TABLE_MAX, sample_discrete_gaussian

SIGMAS = (1.0, 10.0, 100.0, 1e4)


def _median_seconds(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm-up: caches, page faults
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _opendp_sampler(sigma: float, n: int) -> Callable[[], object] | None:
    try:
        import opendp.prelude as dp
    except ImportError:
        return None
    dp.enable_features("contrib")
    meas = dp.m.make_gaussian(dp.vector_domain(dp.atom_domain(T=int)), dp.l2_distance(T=int), sigma)
    zeros = [0] * n
    return lambda: meas(zeros)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=10_000_000, help="draws per run (ours)")
    parser.add_argument("--repeats", type=int, default=5, help="runs per figure (median)")
    parser.add_argument("--opendp-draws", type=int, default=20_000, help="draws per OpenDP run")
    args = parser.parse_args()
    n, reps, m = args.draws, args.repeats, args.opendp_draws

    words = 1 << 20
    t_bits = _median_seconds(lambda: os.urandom(8 * words), reps)
    print(f"machine: {platform.machine()} {platform.processor() or ''} numpy {np.__version__}")
    print(
        f"os.urandom: {8 * words / t_bits / 1e6:.0f} MB/s = {2 * words / t_bits / 1e6:.1f} M "
        "32-bit prefixes/s (upper bound of the default path)"
    )
    print(f"{n:,} draws per run for ours, {m:,} for OpenDP; median of {reps} runs\n")
    print(
        "| sigma | table build (s) | table size (MB) | ours, CSPRNG (M draws/s) "
        "| ours, seeded (M draws/s) | OpenDP (K draws/s) | ours CSPRNG / OpenDP |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for sigma in SIGMAS:
        start = time.perf_counter()
        tab = _noise._build_table(sigma)
        t_build = time.perf_counter() - start
        t_os = _median_seconds(partial(sample_discrete_gaussian, sigma, n), reps)
        t_seed = _median_seconds(partial(sample_discrete_gaussian, sigma, n, rng=1), reps)
        ours = n / t_os
        opendp = _opendp_sampler(sigma, m)
        if opendp is None:
            theirs_txt, ratio_txt = "n/a", "n/a"
        else:
            theirs = m / _median_seconds(opendp, reps)
            theirs_txt, ratio_txt = f"{theirs / 1e3:.1f}", f"{ours / theirs:.0f}x"
        print(
            f"| {sigma:g} | {t_build:.3f} | {tab.nbytes / 1e6:.3f} | {ours / 1e6:.1f} "
            f"| {n / t_seed / 1e6:.1f} | {theirs_txt} | {ratio_txt} |"
        )

    start = time.perf_counter()
    _noise._build_table(SIGMA_TABLE_MAX)
    t_max = time.perf_counter() - start
    big = 2 * SIGMA_TABLE_MAX
    k = 20_000
    t_rej = _median_seconds(partial(sample_discrete_gaussian, big, k), 3)
    print(f"\ntable build at SIGMA_TABLE_MAX = {SIGMA_TABLE_MAX:g}: {t_max:.2f} s")
    print(f"exact rejection sampler (sigma = {big:g}, CSPRNG): {k / t_rej / 1e3:.0f} K draws/s")


if __name__ == "__main__":
    main()
