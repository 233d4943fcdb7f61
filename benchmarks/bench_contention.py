"""Many threads releasing into one database file at once (issue 23, item 4).

    python benchmarks/bench_contention.py                     # 8 threads x 120 s
    python benchmarks/bench_contention.py --threads 4 --seconds 20 --timeout 0

Every thread takes a cursor of one connection to a fresh file database and releases, until the
time is up, a tiny hierarchy (7 leaves) with ``rho=1`` (CSPRNG noise, as a real release),
alternating:

* ``persons`` into a new output table each time (a budget that never runs out: every release
  must succeed), and
* ``scarce`` into the thread's own output, replaced (``overwrite=True``), whose stored budget
  allows exactly ``--scarce`` releases: the first ones succeed, every later one must be refused
  with ``BudgetExceededError`` (a correct outcome, not a failure).

Their write steps would collide on the ledger (the next ``release_id``) and the catalog; with a
timeout (``release(timeout=...)``, default 30 s) they take turns within the process and retry
their own transaction on a collision (the same released cells each attempt) instead of
failing; ``--timeout 0`` shows the old behaviour (one attempt).

The script prints the success rate (released + correctly refused, over all calls), the calls
that failed and why, the retries (logged by ``inftda_sql.engines.duckdb.write`` at DEBUG
level), the write stage's time (its p50 / p99 / max: the waits for the other writers are in
it) and the checks of the ledger afterwards: every release id unique, every successful
release's id in the ledger exactly once and no other row, and the rho spent on each input
within its budget. It exits 1 if a check fails or fewer than ``--min-success`` of the calls
succeed.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import tempfile
import threading
import time
import warnings
from collections import Counter
from pathlib import Path

import duckdb

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import inftda_sql  # noqa: E402
from inftda_sql._errors import InftdaWarning  # noqa: E402

GEO = ["region", "province", "mun"]
EACH = 1.0  # rho of every release


class _Retries(logging.Handler):
    """Counts the write step's retry messages."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.count = 0
        self.lock_ = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        if "retry" in record.getMessage():
            with self.lock_:
                self.count += 1


def _setup(con: duckdb.DuckDBPyConnection, scarce: int) -> None:
    con.execute(
        """CREATE TABLE geo AS SELECT * FROM (VALUES
            ('North', 'N1', 'n1a'), ('North', 'N1', 'n1b'), ('North', 'N2', 'n2a'),
            ('South', 'S1', 's1a'), ('South', 'S1', 's1b'), ('South', 'S1', 's1c'),
            ('East',  'E1', 'e1a')) g(region, province, mun)"""
    )
    for table in ("persons", "scarce"):
        con.execute(f"CREATE TABLE {table} AS SELECT * FROM geo, range(3) WHERE mun <> 'n1b'")
    inftda_sql.set_budget(con, "persons", rho=1e9)
    inftda_sql.set_budget(con, "scarce", rho=scarce * EACH)


def run(threads: int, seconds: float, timeout: float | None, scarce: int, path: Path) -> dict:
    warnings.filterwarnings("ignore", category=InftdaWarning)  # the huge budget
    con = duckdb.connect(str(path))
    _setup(con, scarce)
    handler = _Retries()
    logger = logging.getLogger("inftda_sql")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    lock = threading.Lock()
    released: list[tuple[str, int]] = []  # (input, release_id)
    refused: list[str] = []
    failed: Counter[str] = Counter()
    write_seconds: list[float] = []
    barrier = threading.Barrier(threads)
    deadline = 0.0

    def worker(i: int) -> None:
        cur = con.cursor()
        barrier.wait()
        n = 0
        while time.monotonic() < deadline:
            n += 1
            table = "scarce" if n % 2 else "persons"
            output = f"s_{i}" if table == "scarce" else f"p_{i}_{n}"
            try:
                r = inftda_sql.release(
                    cur, table, hierarchy=GEO, domain="geo", rho=EACH,
                    output=output, overwrite=True, timeout=timeout,
                )  # fmt: skip
            except inftda_sql.BudgetExceededError:
                with lock:
                    refused.append(table)
            except Exception as exc:  # every failure is counted
                with lock:
                    failed[f"{type(exc).__name__}: {str(exc)[:100]}"] += 1
            else:
                with lock:
                    released.append((table, r.release_id))
                    write_seconds.append(r.timings.get("write", float("nan")))
        cur.close()

    workers = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    deadline = time.monotonic() + seconds
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    logger.removeHandler(handler)

    rows = con.execute(
        "SELECT release_id, input_table, rho FROM inftda_releases ORDER BY release_id"
    ).fetchall()
    ids = [r[0] for r in rows]
    spent = Counter[str]()
    for _, table, rho in rows:
        spent[str(table)] += float(rho)
    con.close()
    calls = len(released) + len(refused) + sum(failed.values())
    ok_ids = Counter(rid for _, rid in released)
    checks = {
        "release ids unique": len(ids) == len(set(ids)),
        "every successful release in the ledger once, no other row": (
            sorted(ok_ids) == sorted(ids) and all(c == 1 for c in ok_ids.values())
        ),
        "persons within budget": spent["persons"] <= 1e9,
        "scarce within budget": spent["scarce"] <= scarce * EACH + 1e-9,
        "scarce spent whole (no lost release)": sum(1 for t, _ in released if t == "scarce")
        == scarce,
    }
    waits = sorted(write_seconds)
    return {
        "calls": calls,
        "released": len(released),
        "refused": len(refused),
        "failed": dict(failed),
        "success": (len(released) + len(refused)) / calls if calls else float("nan"),
        "retries": handler.count,
        "write_p50": statistics.median(waits) if waits else float("nan"),
        "write_p99": waits[min(len(waits) - 1, int(0.99 * len(waits)))] if waits else float("nan"),
        "write_max": waits[-1] if waits else float("nan"),
        "spent": dict(spent),
        "checks": checks,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument(
        "--timeout", type=float, default=30.0, help="release(timeout=); 0 = fail fast"
    )
    parser.add_argument("--scarce", type=int, default=10, help="releases the scarce budget allows")
    parser.add_argument("--min-success", type=float, default=0.99)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.monotonic()
        found = run(args.threads, args.seconds, args.timeout, args.scarce, Path(tmp) / "c.duckdb")
        elapsed = time.monotonic() - t0
    print(f"{args.threads} threads x {args.seconds:g} s on one file, timeout={args.timeout:g} s "
          f"({elapsed:.0f} s in all); load average (1 min) {load:.2f} before, "
          f"{os.getloadavg()[0]:.2f} after")  # fmt: skip
    print(f"calls {found['calls']}: released {found['released']}, refused by the budget "
          f"{found['refused']}, failed {sum(found['failed'].values())}; "
          f"success {100 * found['success']:.2f}%")  # fmt: skip
    for why, n in found["failed"].items():
        print(f"  failed x{n}: {why}")
    print(f"retries {found['retries']}; write stage p50 {found['write_p50']:.3f} s, "
          f"p99 {found['write_p99']:.3f} s, max {found['write_max']:.3f} s")  # fmt: skip
    print(f"rho spent: {found['spent']}")
    for name, ok in found["checks"].items():
        print(f"  {'ok  ' if ok else 'FAIL'} {name}")
    good = all(found["checks"].values()) and found["success"] >= args.min_success
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
