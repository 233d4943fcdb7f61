"""``inftda-sql sql``: the SQL shell with the building blocks, driven as a user would (a real
process: a script on stdin, ``-c``, and a terminal)."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from tests.system.helpers import make_geo, make_persons, read_terminal

ROOT = Path(__file__).resolve().parents[2]


def shell(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "inftda_sql", "sql", *args],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        timeout=120,
    )


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "persons.duckdb"
    with duckdb.connect(str(path)) as con:
        make_geo(con)
        make_persons(con)
    return path


def test_a_script_on_stdin(db: Path) -> None:
    script = """
-- the noisy count of every region of the public domain, and IntOpt under the root
CREATE TEMP TABLE noisy AS
SELECT region, coalesce(n, 0) + dp_discrete_gaussian(
           dp_sigma(rho := dp_rho(1.0, 1e-8), sensitivity := dp_sensitivity())) AS noisy
FROM (SELECT DISTINCT region FROM geo)
LEFT JOIN (SELECT region, count(*) AS n FROM persons GROUP BY region) USING (region);
SELECT list_sum(x) AS total, list_min(x) >= 0 AS non_negative, len(x) AS regions
FROM (SELECT intopt(list(noisy ORDER BY region), (SELECT count(*) FROM persons)) AS x
      FROM noisy);
SELECT dp_sigma(0.125, 1) AS sigma;
"""
    out = shell(str(db), stdin=script)
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""
    assert out.stdout.splitlines() == [
        "total  non_negative  regions",
        "   16  true                3",
        "(1 row)",
        "sigma",
        "  2.0",
        "(1 row)",
    ]


def test_one_command_with_c() -> None:
    out = shell("-c", "SELECT intopt([-20, 5, 5], 10) AS x; SELECT dp_discrete_gaussian(0) AS z")
    assert (out.returncode, out.stderr) == (0, "")
    assert out.stdout.splitlines() == ["x", "[0, 0, 10]", "(1 row)", "z", "0", "(1 row)"]
    listing = shell("-c", ".functions")
    assert listing.returncode == 0
    assert "dp_discrete_laplace(scale DOUBLE) -> BIGINT" in listing.stdout


def test_errors_exit_1_with_duckdbs_message() -> None:
    out = shell("-c", "SELECT dp_rho(1, 2)")
    assert out.returncode == 1
    assert out.stdout == ""
    assert out.stderr.strip() == (
        "Invalid Input Error: dp_rho: delta must be strictly between 0 and 1, got 2.0; use a "
        "value far below 1/N, e.g. delta := 1e-8"
    )
    stops = shell(stdin="SELECT 1 AS a;\nSELECT dp_discrete_laplace(-1);\nSELECT 2 AS b;\n")
    assert stops.returncode == 1
    assert stops.stdout.splitlines() == ["a", "1", "(1 row)"]
    assert "dp_discrete_laplace: scale must be finite and >= 0" in stops.stderr


def test_quit_ends_a_script(db: Path) -> None:
    out = shell(str(db), stdin="SELECT count(*) AS n FROM persons;\n.quit\nSELECT nope;\n")
    assert (out.returncode, out.stderr) == (0, "")
    assert out.stdout.splitlines() == [" n", "16", "(1 row)"]


def test_files_must_exist_and_may_be_read_only(db: Path, tmp_path: Path) -> None:
    missing = shell(str(tmp_path / "typo.duckdb"), "-c", "SELECT 1")
    assert missing.returncode == 1
    assert "does not exist" in missing.stderr
    assert not (tmp_path / "typo.duckdb").exists()
    ro = shell(str(db), "--read-only", "-c", "CREATE TABLE t AS SELECT 1")
    assert ro.returncode == 1
    assert "read-only" in ro.stderr
    ok = shell(str(db), "--read-only", "-c", "SELECT dp_sigma(0.5, 1) AS s")
    assert ok.returncode == 0 and ok.stdout.splitlines()[1] == "1.0"


def test_an_interactive_session_in_a_terminal(db: Path) -> None:
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "inftda_sql", "sql", str(db)],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        cwd=ROOT,
    )
    os.close(follower)
    try:
        typed = (
            "SELECT intopt([3, -1, 4],\n"
            "              6) AS x;\n"
            "SELECT nope;\n"
            "SELECT dp_sigma(rho := 'inf', sensitivity := 1) AS after_the_error;\n"
            ".quit\n"
        )
        os.write(leader, typed.encode())
        shown = read_terminal(leader, proc, timeout=60.0).decode()
    finally:
        os.close(leader)
    assert proc.wait(timeout=60) == 0
    assert "inftda-sql SQL shell on " in shown and "SQL functions: dp_rho," in shown
    assert "D " in shown and "· " in shown  # the prompt, and the one of a statement's next line
    assert "[2, 0, 4]" in shown
    assert 'Referenced column "nope" was not found' in shown
    assert "after_the_error" in shown and "0.0" in shown
