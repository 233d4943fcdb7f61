"""The sorts of core/sorting.py against numpy's one np.sort, on this machine (issue 26).

    python benchmarks/bench_sorting.py              # thread CPU ns per key, min of --rounds
    python benchmarks/bench_sorting.py --rounds 9

numpy's ``np.sort`` of int64 is fast or slow by CPU: on the AMD EPYC (AVX-512) of 2026-11-27
its quicksort ran at 50-65 ns a key for a million keys, while rows of up to 256 keys (sorting
networks) took under 2 ns. This prints, per case, each way's thread CPU per key (min of the
rounds, alternating), so that a machine where one ``np.sort`` wins shows it:

- ``np.sort`` of random int64 keys, 1M; the same as rows of 64..1,024 keys (``axis=1``); slices
  of 1,024 in a Python loop (IntOpt's sort before issue 26's eighth pass);
- O/D leaf-cell keys (two codes below 7,264, clustered along the diagonal) packed with a count:
  ``np.sort`` against :func:`~inftda_sql.core.sorting.sort_keys`, 460K and 1.4M cells;
- released cells in the leaf level's order (destination major) put origin first: ``np.sort``
  of the packed key and position (the old ``sort_order``) against
  :func:`~inftda_sql.core.sorting.lex_order` (radix over 16-bit codes), 341K cells.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

import numpy as np

from inftda_sql.core.sorting import lex_order, sort_keys


def _ns_per_key(make: Callable[[], np.ndarray], sort: Callable[[np.ndarray], object], n: int,
                rounds: int) -> float:  # fmt: skip
    best = float("inf")
    for _ in range(rounds):
        data = make()
        t0 = time.thread_time()
        sort(data)
        best = min(best, time.thread_time() - t0)
    return best / n * 1e9


def _loop_1024(a: np.ndarray) -> None:
    for i in range(0, a.size, 1024):
        a[i : i + 1024].sort()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    rounds = parser.parse_args().rounds
    rng = np.random.default_rng(0)
    print(f"load {os.getloadavg()[0]:.2f}; thread CPU ns per key, min of {rounds} rounds")

    def show(label: str, make: Callable[[], np.ndarray], sort: Callable[..., object], n: int):
        print(f"  {label:<28}{_ns_per_key(make, sort, n, rounds):6.1f}")

    n = 1 << 20
    keys = rng.integers(0, 1 << 40, n)
    print(f"random int64, {n:,} keys")
    show("np.sort, one call", keys.copy, np.ndarray.sort, n)
    for row in (64, 128, 256, 512, 1024):
        show(f"rows of {row} (axis=1)", keys.copy, lambda a, r=row: a.reshape(-1, r).sort(1), n)
    show("slices of 1,024 in a loop", keys.copy, _loop_1024, n)

    size = 7264
    for cells in (500_000, 1_600_000):
        o = rng.integers(0, size, cells)
        near = np.clip(o + rng.integers(-50, 50, cells), 0, size - 1)
        d = np.where(rng.random(cells) < 0.5, near, rng.integers(0, size, cells))
        key = np.unique(d * size + o)
        packed = rng.permutation((key << 8) | rng.integers(1, 200, key.size))
        print(f"O/D leaf cells packed with a count, {key.size:,} in random order")
        show("np.sort", packed.copy, np.ndarray.sort, key.size)
        show("sorting.sort_keys", packed.copy, sort_keys, key.size)

    key = np.unique(rng.integers(0, size, 400_000) * size + rng.integers(0, size, 400_000))
    d, o = key // size, key % size  # the leaf level's order: destination major
    m = key.size
    position = np.arange(m, dtype=np.int64)
    print(f"released cells, destination major, put origin first, {m:,}")
    show(
        "np.sort of key | position",
        lambda: o,
        lambda _: (((o * size + d) << 20) | position).sort(),
        m,
    )
    show("sorting.lex_order", lambda: o, lambda _: lex_order([o, d], [size, size]), m)


if __name__ == "__main__":
    main()
