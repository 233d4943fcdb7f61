"""Fault injection: ``kill -9`` of a real release at random moments, on a file database.

After every kill the file is reopened (DuckDB replays its log) and must hold: the input and the
public domain unchanged, an earlier release untouched, and the new release either complete
(table, levels view and ledger row, counts summing to the input's total) or absent, with no
output table without its ledger row and no ledger row without its table.
"""

from __future__ import annotations

import random
import signal
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest

from inftda_sql.cli import main
from tests.system.helpers import (
    OD_RELEASE,
    fingerprint,
    fresh_copy,
    interrupted_run,
    release_outcome,
    small_od_database,
    startup_and_duration,
)

INPUTS = ("trips", "geo", "geo_origin", "geo_destination")
KILLS = 22


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small O/D database with one release made already (``earlier``)."""
    db = small_od_database(tmp_path_factory.mktemp("faults") / "base.duckdb")
    argv = [a.format(db=db) for a in OD_RELEASE]
    assert main([*argv, "--output", "earlier", "--quiet"]) == 0
    return db


def _state(db: Path) -> dict[str, Any]:
    with duckdb.connect(str(db), read_only=True) as con:
        tables = con.execute(
            "SELECT table_name, table_type FROM information_schema.tables "
            "WHERE table_schema = 'main' ORDER BY 1"
        ).fetchall()
        ledger = con.execute(
            "SELECT release_id, output_table, rho FROM inftda_releases ORDER BY 1"
        ).fetchall()
        return {
            "inputs": {t: fingerprint(con, t) for t in INPUTS},
            "earlier": fingerprint(con, "earlier"),
            "tables": tables,
            "ledger": ledger,
            "total": con.execute("SELECT count(*) FROM trips").fetchall()[0][0],
        }


@pytest.mark.slow
def test_kill_9_at_random_moments_leaves_a_complete_release_or_none(
    base: Path, tmp_path: Path
) -> None:
    """22 kills spread from Python's start to the end of the release (measured first)."""
    rng = random.Random(9)
    db = tmp_path / "t.duckdb"
    argv = [sys.executable, "-m", "inftda_sql", *(a.format(db=db) for a in OD_RELEASE)]
    argv += ["--output", "p", "--quiet"]
    start, total = startup_and_duration(base, db, argv)
    before = _state(base)
    outcomes: dict[str, int] = {}
    for _ in range(KILLS):
        fresh_copy(base, db)
        delay = rng.uniform(start, total)
        code, err = interrupted_run(argv, delay, signal.SIGKILL)
        duckdb.connect(str(db)).close()  # reopen read-write: DuckDB replays or drops its log
        outcome = release_outcome(db, "p", total=before["total"])
        context = f"kill -9 after {delay:.3f} s (exit {code}): {outcome}; stderr {err[-300:]!r}"
        assert outcome in ("recorded", "nothing"), context
        after = _state(db)
        assert after["inputs"] == before["inputs"], context
        assert after["earlier"] == before["earlier"], context
        if outcome == "nothing":
            assert after["tables"] == before["tables"], context
            assert after["ledger"] == before["ledger"], context
        else:
            new = {("p", "BASE TABLE"), ("p_levels", "VIEW")}
            assert set(after["tables"]) == set(before["tables"]) | new, context
            assert after["ledger"][:-1] == before["ledger"], context
            assert after["ledger"][-1][1] == "p", context
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    assert outcomes.get("nothing", 0) >= 5, outcomes  # most kills fell inside the release
