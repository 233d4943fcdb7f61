"""Throughput of the exact discrete Gaussian and Laplace samplers, small to very large scales.

Usage::

    python benchmarks/bench_sampler.py [--draws N] [--rounds R] [--opendp-draws M] [--quick]

For each sigma it reports the method (one table up to ``SIGMA_TABLE_MAX``, the convolution of
small tables above it), the cold set-up time (building the table or the convolution plan's
tables, uncached) and their size, then our draws/s on the default OS-CSPRNG path and on the
seeded (Philox) path, ``N`` draws per call. All timed calls run in one process in ``R``
alternating rounds (every sigma once per round, in turn), so a load spike hits every case
alike; each figure is the best (min time) and the median of its ``R`` calls, and the ratio
column divides by sigma 10's figure of the same round. The machine's load average is printed
before and after. OpenDP's ``make_gaussian`` over an integer vector (``M`` draws per call, its
rate extrapolated) and the exact CKS rejection loop (what served every sigma above
``SIGMA_TABLE_MAX`` before the convolution method; still used above ``SIGMA_CONV_MAX``) are
timed alongside. A third table forces both Gaussian methods at sigma 1e4, SIGMA_TABLE_MAX and
1e5 (one table is allowed by its proof up to 104,857), a fourth times the table method with
and without its direct guide (forced at every sigma, to show where the threshold
``tables._DIRECT_SHARE`` lies), and a last one repeats the first for the discrete Laplace. The
output is Markdown.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from fractions import Fraction
from functools import partial
from pathlib import Path

import numpy as np

if importlib.util.find_spec("inftda_sql") is None:  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from inftda_sql.core.noise import (
    LAPLACE_TABLE_MAX,
    SIGMA_CONV_MAX,
    SIGMA_TABLE_MAX,
    sample_discrete_gaussian,
    sample_discrete_laplace,
)
from inftda_sql.core.noise import composed as _composed
from inftda_sql.core.noise import laplace as _laplace
from inftda_sql.core.noise import rejection as _rejection
from inftda_sql.core.noise import tables as _tables
from inftda_sql.core.rng import CSPRNGSource

SIGMAS = (1.0, 10.0, 100.0, 1e3, 1e4, SIGMA_TABLE_MAX, 1e5, 1.05e5, 2e5, 1e6, 1e7)
SCALES = (10.0, 1e3, LAPLACE_TABLE_MAX, 1e5, 1e6, 1e7)
REFERENCE = 10.0  # the ratio column divides by this scale's rate in the same round
SWITCH_SIGMAS = (1e4, SIGMA_TABLE_MAX, 1e5)  # both Gaussian methods forced, side by side
DIRECT_SIGMAS = (1.0, 10.0, 18.7, 100.0, 400.0, 1000.0, 1400.0, 3000.0, 1e4)  # direct guide


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} / {five:.2f} / {fifteen:.2f} (1 / 5 / 15 min, {os.cpu_count()} CPUs)"


def _seconds(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _opendp(kind: str, scale: float, n: int) -> Callable[[], object] | None:
    try:
        import opendp.prelude as dp
    except ImportError:
        return None
    dp.enable_features("contrib")
    domain = dp.vector_domain(dp.atom_domain(T=int))
    if kind == "gauss":
        meas = dp.m.make_gaussian(domain, dp.l2_distance(T=int), scale)
    else:
        meas = dp.m.make_laplace(domain, dp.l1_distance(T=int), scale)
    zeros = [0] * n
    return lambda: meas(zeros)


def _setup(kind: str, scale: float) -> tuple[str, float, int]:
    """Method name, cold set-up seconds and bytes of the tables (nothing cached)."""
    _tables._cache.clear()
    _tables._laplace_cache.clear()
    _composed._component_cache.clear()
    start = time.perf_counter()
    if kind == "gauss" and scale <= SIGMA_TABLE_MAX:
        tab, method = _tables._table(scale), "table"
    elif kind == "gauss":
        plan, method = _composed._gauss_plan(scale), "convolution"
    elif scale <= LAPLACE_TABLE_MAX:
        tab, method = _tables._laplace_table(scale), "table"
    else:
        plan, method = _composed._laplace_plan(scale), "decomposition"
    seconds = time.perf_counter() - start
    if method == "table":
        return method, seconds, tab.nbytes
    tabs = {id(t): t for t in (plan.bottom, *(lev.table for lev in plan.levels))}
    lookups = 1 + len(plan.levels)
    n_tabs = len(tabs)  # a balanced Gaussian split shares one table
    method += f", {lookups} look-ups in {n_tabs} table{'s' * (n_tabs > 1)}"
    return method, seconds, sum(t.nbytes for t in tabs.values())


def _run(kind: str, scales: tuple[float, ...], n: int, rounds: int, m: int) -> None:
    sampler = sample_discrete_gaussian if kind == "gauss" else sample_discrete_laplace
    name = "sigma" if kind == "gauss" else "scale"
    setups = {s: _setup(kind, s) for s in scales}
    cases = [(s, rng) for s in scales for rng in (None, 1)]
    for s, rng in cases:  # warm-up: tables cached, code paths touched
        sampler(s, 1000, rng=rng)
    times: dict[tuple[float, int | None], list[float]] = {c: [] for c in cases}
    for _ in range(rounds):
        for s, rng in cases:
            times[(s, rng)].append(_seconds(partial(sampler, s, n, rng=rng)))
    ref = times[(REFERENCE, None)]
    print(
        f"| {name} | method | cold set-up (s) | tables (MB) | CSPRNG best (M/s) "
        f"| CSPRNG median (M/s) | seeded best (M/s) | seeded median (M/s) "
        f"| CSPRNG vs {name} {REFERENCE:g}, median of rounds | OpenDP (K/s) |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for s in scales:
        method, t_setup, nbytes = setups[s]
        os_t, seed_t = times[(s, None)], times[(s, 1)]
        ratio = statistics.median(r / t for r, t in zip(ref, os_t, strict=True))
        opendp = _opendp(kind, s, m) if s in (1e3, 1e5, 1e6) else None
        theirs = ""
        if opendp is not None:
            theirs = f"{m / min(_seconds(opendp) for _ in range(3)) / 1e3:.0f}"
        print(
            f"| {s:g} | {method} | {t_setup:.3f} | {nbytes / 1e6:.2f} "
            f"| {n / min(os_t) / 1e6:.1f} | {n / statistics.median(os_t) / 1e6:.1f} "
            f"| {n / min(seed_t) / 1e6:.1f} | {n / statistics.median(seed_t) / 1e6:.1f} "
            f"| {ratio:.2f} | {theirs} |"
        )


def _switch(n: int, rounds: int) -> None:
    """Both Gaussian methods forced at the same sigmas, around SIGMA_TABLE_MAX (CSPRNG)."""
    out = np.empty(n, dtype=np.int64)
    src = CSPRNGSource()
    cases: dict[tuple[str, float], Callable[[], None]] = {}
    setup: dict[tuple[str, float], tuple[float, float]] = {}
    for sigma in SWITCH_SIGMAS:
        _composed._component_cache.clear()
        start = time.perf_counter()
        tab = _tables._build_table(sigma)  # the table's proof holds up to sigma 104,857
        setup[("table", sigma)] = (time.perf_counter() - start, tab.nbytes)
        start = time.perf_counter()
        plan = _composed._gauss_plan(sigma)
        nbytes = sum(
            {id(t): t.nbytes for t in (plan.bottom, *(v.table for v in plan.levels))}.values()
        )
        setup[("convolution", sigma)] = (time.perf_counter() - start, nbytes)
        cases[("table", sigma)] = partial(_tables._draw_table, tab, out, src)
        cases[("convolution", sigma)] = partial(_composed._draw_composed, plan, out, src)
    times: dict[tuple[str, float], list[float]] = {c: [] for c in cases}
    for _ in range(rounds):
        for c, fn in cases.items():
            times[c].append(_seconds(fn))
    print("| sigma | method | cold set-up (s) | tables (MB) | best (M/s) | median (M/s) |")
    print("|---:|---|---:|---:|---:|---:|")
    for (method, sigma), t in times.items():
        t_setup, nbytes = setup[(method, sigma)]
        print(
            f"| {sigma:g} | {method} | {t_setup:.3f} | {nbytes / 1e6:.2f} "
            f"| {n / min(t) / 1e6:.1f} | {n / statistics.median(t) / 1e6:.1f} |"
        )


def _direct(n: int, rounds: int) -> None:
    """The table method with its direct guide (forced at every sigma) and without it."""
    out = np.empty(n, dtype=np.int64)
    src = CSPRNGSource()
    cases: dict[tuple[float, bool], Callable[[], None]] = {}
    shares: dict[float, float] = {}
    for sigma in DIRECT_SIGMAS:
        tab = _tables._table(sigma)
        direct = _tables._direct_guide(tab.top, tab.k, share=1.0)
        assert direct is not None
        shares[sigma] = float((direct > tab.k).mean())
        with_direct = dataclasses.replace(tab, direct=direct)
        cases[(sigma, True)] = partial(_tables._draw_table, with_direct, out, src)
        cases[(sigma, False)] = partial(
            _tables._draw_table, dataclasses.replace(tab, direct=None), out, src
        )
    times: dict[tuple[float, bool], list[float]] = {c: [] for c in cases}
    for _ in range(rounds):
        for c, fn in cases.items():
            times[c].append(_seconds(fn))
    print(
        "| sigma | buckets holding a boundary | built | direct + guide, median (M/s) "
        "| guide alone, median (M/s) | ratio of medians |"
    )
    print("|---:|---:|---|---:|---:|---:|")
    for sigma in DIRECT_SIGMAS:
        on, off = statistics.median(times[(sigma, True)]), statistics.median(times[(sigma, False)])
        built = "yes" if shares[sigma] <= _tables._DIRECT_SHARE else "no"
        print(
            f"| {sigma:g} | {100 * shares[sigma]:.2f}% | {built} | {n / on / 1e6:.1f} "
            f"| {n / off / 1e6:.1f} | {off / on:.2f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=10_000_000, help="draws per call (ours)")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds (>= 5)")
    parser.add_argument("--opendp-draws", type=int, default=20_000, help="draws per OpenDP call")
    parser.add_argument("--quick", action="store_true", help="1M draws, 3 rounds (smoke run)")
    args = parser.parse_args()
    n, rounds, m = args.draws, args.rounds, args.opendp_draws
    if args.quick:
        n, rounds = 1_000_000, 3

    print(f"machine: {platform.machine()} {platform.processor() or ''} numpy {np.__version__}")
    print(f"load average before: {_load()}")
    words = 1 << 22
    sources = {  # the CSPRNG the samplers use, against the system call it replaced
        "CSPRNGSource().words (OpenSSL DRBG)": partial(CSPRNGSource().words, words),
        "os.urandom, 32 MiB a call": partial(os.urandom, 8 * words),
    }
    best: dict[str, list[float]] = {name: [] for name in sources}
    for _ in range(rounds):  # alternating
        for name, call in sources.items():
            best[name].append(_seconds(call))
    for name, t in best.items():
        print(
            f"{name}: {8 * words / min(t) / 1e6:.0f} MB/s best, "
            f"{8 * words / statistics.median(t) / 1e6:.0f} median = "
            f"{2 * words / min(t) / 1e6:.1f} M 32-bit prefixes/s (each table look-up takes one)"
        )
    print(f"{n:,} draws per call for ours, {rounds} alternating rounds; best and median\n")
    print("### Discrete Gaussian\n")
    _run("gauss", SIGMAS, n, rounds, m)

    k = 20_000
    out = np.empty(k, dtype=np.int64)
    src = CSPRNGSource()
    for sigma in (1e5, 2 * SIGMA_CONV_MAX):
        t_rej = min(
            _seconds(partial(_rejection._draw_rejection, sigma, out, src)) for _ in range(3)
        )
        print(
            f"\nexact CKS rejection loop, sigma {sigma:g} (CSPRNG, {k:,} draws, best of 3): "
            f"{k / t_rej / 1e3:.0f} K draws/s"
        )

    print("\n### Both methods around SIGMA_TABLE_MAX\n")
    _switch(n, rounds)

    print(f"\n### The direct guide (built to {_tables._DIRECT_SHARE:.2%} of buckets holding one)\n")
    _direct(n, rounds)

    print("\n### Discrete Laplace\n")
    _run("laplace", SCALES, n, rounds, m)
    bits = _rejection._Bits(src)
    fr = Fraction(1e5)
    num, den = fr.numerator, fr.denominator
    t_rej = min(
        _seconds(lambda: [_laplace._laplace_rational(bits, num, den) for _ in out])
        for _ in range(3)
    )
    print(
        f"\nexact CKS Laplace loop (Algorithm 2), scale 1e5 (CSPRNG, {k:,} draws, best of 3): "
        f"{k / t_rej / 1e3:.0f} K draws/s"
    )
    print(f"\nload average after: {_load()}")


if __name__ == "__main__":
    main()
