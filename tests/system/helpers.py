"""Small builders shared by the system tests."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import duckdb


def make_geo(con: duckdb.DuckDBPyConnection) -> None:
    """A 3-level geography with an uneven fan-out and a domain leaf without any record."""
    con.execute(
        """CREATE TABLE geo AS SELECT * FROM (VALUES
            ('North', 'N1', 'n1a'), ('North', 'N1', 'n1b'), ('North', 'N2', 'n2a'),
            ('South', 'S1', 's1a'), ('South', 'S1', 's1b'), ('South', 'S1', 's1c'),
            ('East',  'E1', 'e1a')
        ) g(region, province, mun)"""
    ).fetchall()


PERSONS = (
    [("North", "N1", "n1a")] * 5
    + [("North", "N2", "n2a")] * 3
    + [("South", "S1", "s1c")] * 7
    + [("South", "S1", "s1a")]
)


def make_persons(con: duckdb.DuckDBPyConnection, name: str = "persons") -> None:
    con.execute(f"CREATE TABLE {name} (region VARCHAR, province VARCHAR, mun VARCHAR)").fetchall()
    con.executemany(f"INSERT INTO {name} VALUES (?, ?, ?)", PERSONS)


def make_od(con: duckdb.DuckDBPyConnection) -> None:
    """O/D geography (origin 2 levels, destination 3 levels) and pre-aggregated trips."""
    con.execute(
        "CREATE TABLE geo_o AS SELECT * FROM (VALUES ('A','a1'),('A','a2'),('B','b1')) g(o_reg, o_mun)"
    ).fetchall()
    con.execute(
        """CREATE TABLE geo_d AS SELECT * FROM (VALUES
            ('X','x1','x1a'),('X','x1','x1b'),('X','x2','x2a'),('Y','y1','y1a')) g(d_reg, d_prov, d_mun)"""
    ).fetchall()
    con.execute(
        """CREATE TABLE od AS SELECT * FROM (VALUES
            ('A','a1','X','x1','x1a', 4), ('A','a1','Y','y1','y1a', 2), ('A','a2','X','x2','x2a', 9),
            ('B','b1','X','x1','x1b', 1), ('B','b1','Y','y1','y1a', 6), ('B','b1','Y','y1','y1a', 1)
        ) t(o_reg, o_mun, d_reg, d_prov, d_mun, n)"""
    ).fetchall()
    con.execute(
        "CREATE TABLE od_micro AS SELECT o_reg, o_mun, d_reg, d_prov, d_mun FROM od, range(n)"
    ).fetchall()


def leaf_truth(
    con: duckdb.DuckDBPyConnection, table: str, cols: list[str], count: str | None = None
) -> list[Any]:
    agg = f"sum({count})" if count else "count(*)"
    return con.execute(
        f"SELECT {', '.join(cols)}, {agg}::BIGINT FROM {table} GROUP BY ALL HAVING {agg} > 0 "
        f"ORDER BY ALL"
    ).fetchall()


def released(con: duckdb.DuckDBPyConnection, table: str, cols: list[str]) -> list[Any]:
    return con.execute(f"SELECT {', '.join(cols)}, count FROM {table} ORDER BY ALL").fetchall()


def snapshot(con: duckdb.DuckDBPyConnection) -> list[Any]:
    """Every table and view of the database with its row count (to check nothing changed)."""
    objs = con.execute(
        "SELECT table_schema, table_name, table_type FROM information_schema.tables "
        "WHERE NOT starts_with(table_name, '__inftda') ORDER BY ALL"
    ).fetchall()
    out = []
    for schema, name, kind in objs:
        n = con.execute(f'SELECT count(*) FROM "{schema}"."{name}"').fetchall()[0][0]
        out.append((schema, name, kind, n))
    return out


def leftovers(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Temporary objects of a release still in the catalog (tables, views, registrations); the
    caches a release keeps on purpose (``__inftda_checks``, ``__inftda_domains`` and its
    ``__inftda_domain_<key>`` tables) are not leftovers."""
    return [
        r[0]
        for r in con.execute(
            "SELECT table_name FROM information_schema.tables "
            "WHERE starts_with(table_name, '__inftda') ORDER BY 1"
        ).fetchall()
        if r[0] != "__inftda_checks" and not r[0].startswith("__inftda_domain")
    ]


def fingerprint(con: duckdb.DuckDBPyConnection, table: str) -> tuple[Any, ...]:
    """Row count and an order-free hash of every row of ``table``."""
    return tuple(con.execute(f'SELECT count(*), sum(hash(t)) FROM "{table}" AS t').fetchall()[0])


def release_outcome(db: Path, output: str, *, total: int | None = None) -> str:
    """What a release into ``output`` left in the file ``db``: ``"recorded"`` (the table, its
    levels view and exactly one ledger row naming it, counts positive and summing to ``total``
    if given), ``"nothing"`` (none of them), or a description of anything in between."""
    with duckdb.connect(str(db), read_only=True) as con:
        kinds = dict(
            con.execute(
                "SELECT table_name, table_type FROM information_schema.tables "
                "WHERE table_schema = 'main'"
            ).fetchall()
        )
        rows = 0
        if "inftda_releases" in kinds:
            rows = con.execute(
                "SELECT count(*) FROM inftda_releases WHERE output_table = $o", {"o": output}
            ).fetchall()[0][0]
        has_table = kinds.get(output) == "BASE TABLE"
        has_view = kinds.get(f"{output}_levels") == "VIEW"
        if not (has_table or has_view or rows):
            return "nothing"
        if has_table and has_view and rows == 1:
            n_bad, released = con.execute(
                f'SELECT count(*) FILTER (WHERE count <= 0), sum(count) FROM "{output}"'
            ).fetchall()[0]
            if n_bad == 0 and (total is None or released == total):
                return "recorded"
            return f"recorded but wrong: {n_bad} non-positive counts, total {released}"
        return f"partial: table {has_table}, levels view {has_view}, {rows} ledger row(s)"


def interrupted_run(
    argv: list[str], delay: float, sig: int, *, terminal: bool = False
) -> tuple[int, str]:
    """Run ``argv``, send it ``sig`` after ``delay`` seconds (if still running); return its
    exit code (negative: killed by that signal) and what it wrote on stderr. With
    ``terminal``, stderr is a pseudo-terminal (so a progress bar is drawn)."""
    if not terminal:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(delay)
        if proc.poll() is None:
            proc.send_signal(sig)
        _, err = proc.communicate(timeout=120)
        return proc.returncode, err.decode(errors="replace")
    leader, follower = pty.openpty()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=follower)
    os.close(follower)
    shown: list[bytes] = []

    def read() -> None:
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the child closed the terminal
                return
            if not chunk:
                return
            shown.append(chunk)

    reader = threading.Thread(target=read)
    reader.start()
    time.sleep(delay)
    if proc.poll() is None:
        proc.send_signal(sig)
    proc.communicate(timeout=120)
    reader.join(timeout=10)
    os.close(leader)
    return proc.returncode, b"".join(shown).decode(errors="replace")


def read_terminal(fd: int, proc: subprocess.Popen[bytes], timeout: float | None = None) -> bytes:
    """Everything the child writes to the pseudo-terminal ``fd`` until it closes it, exits, or
    ``timeout`` seconds (if given) have passed."""
    out = b""
    deadline = None if timeout is None else time.monotonic() + timeout
    while deadline is None or time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
        elif proc.poll() is not None:
            break
    return out


def fresh_copy(base: Path, db: Path) -> None:
    """``db`` becomes a copy of the database file ``base`` (any log of an earlier ``db``
    removed: DuckDB would replay it onto the copy)."""
    Path(f"{db}.wal").unlink(missing_ok=True)
    db.write_bytes(base.read_bytes())


#: a release of :func:`small_od_database` on the command line (``{db}``: the file)
OD_RELEASE = [
    "release", "{db}", "trips",
    "--hierarchy", "o_region,o_province,o_mun", "--hierarchy", "d_region,d_province,d_mun",
    "--tree", "destination", "--domain", "geo_origin", "--domain", "geo_destination",
    "--rho", "1",
]  # fmt: skip


def small_od_database(path: Path) -> Path:
    """A file database with a small Italy-like O/D table (144K trips): a release on it takes
    about a second in a new process, most of it Python starting."""
    from inftda_sql.synthetic import italy_like

    with duckdb.connect(str(path)) as con:
        italy_like(con, scale=0.005, seed=0)
    return path


def startup_time(prelude: str = "import inftda_sql.cli") -> float:
    """Seconds a new Python process takes to run ``prelude``: its start-up and the imports
    before this package's own code runs, where no package can handle signals (the slowest of
    three, with a margin)."""
    starts = []
    for _ in range(3):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", prelude], check=True)
        starts.append(time.perf_counter() - t0)
    return 1.5 * max(starts)


def startup_and_duration(
    base: Path, db: Path, argv: list[str], *, prelude: str = "import inftda_sql.cli"
) -> tuple[float, float]:
    """:func:`startup_time` of ``prelude``, and seconds ``argv`` takes on a fresh copy of
    ``base``."""
    start = startup_time(prelude)
    fresh_copy(base, db)
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True)
    return start, time.perf_counter() - t0
