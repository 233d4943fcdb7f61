"""Ctrl-C during a release: before the commit nothing is recorded, from the commit on the release
completes; the command line exits 130 or 0 accordingly and never asks for a bug report.

The deterministic tests raise SIGINT at chosen statements of the release (in this process);
the statistical one sends it to a real ``inftda-sql release`` at random moments.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest

import inftda_sql
from inftda_sql.cli import commands as cli_commands
from inftda_sql.cli import main
from inftda_sql.engines.duckdb import ledger as ledger_module
from inftda_sql.engines.duckdb import write as write_module
from tests.system.helpers import (
    OD_RELEASE,
    fresh_copy,
    interrupted_run,
    leftovers,
    make_geo,
    make_persons,
    release_outcome,
    small_od_database,
    snapshot,
    startup_and_duration,
)

GEO = ["region", "province", "mun"]
GEO_FLAGS = ["--hierarchy", "region,province,mun", "--domain", "geo", "--rho", "1"]


@pytest.fixture
def persons(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    make_geo(con)
    make_persons(con)
    return con


@pytest.fixture
def persons_db(tmp_path: Path) -> Path:
    db = tmp_path / "persons.duckdb"
    with duckdb.connect(str(db)) as con:
        make_geo(con)
        make_persons(con)
    return db


def _sigint_at(
    monkeypatch: pytest.MonkeyPatch,
    module: Any,
    matches: Callable[[str], bool],
    nth: int = 1,
    *,
    after: bool = False,
) -> list[str]:
    """Raise SIGINT just before (or ``after``) the ``nth`` statement of ``module.run`` that
    ``matches``."""
    original = module.run
    seen: list[str] = []

    def run(con: duckdb.DuckDBPyConnection, sql: str, params: Any = None) -> None:
        hit = matches(sql) and len(seen) == nth - 1
        if matches(sql):
            seen.append(sql)
        if hit and not after:
            signal.raise_signal(signal.SIGINT)
        original(con, sql, params)
        if hit and after:
            signal.raise_signal(signal.SIGINT)

    monkeypatch.setattr(module, "run", run)
    return seen


def _no_open_transaction(con: duckdb.DuckDBPyConnection) -> bool:
    try:
        con.execute("BEGIN TRANSACTION").fetchall()
    except duckdb.Error:
        return False
    con.execute("ROLLBACK").fetchall()
    return True


def _release(con: duckdb.DuckDBPyConnection, **kw: Any) -> inftda_sql.Release:
    return inftda_sql.release(con, "persons", hierarchy=GEO, domain="geo", rho=1.0, **kw)


# ---------------------------------------------------------------------------------- Python


def _begin(sql: str) -> bool:
    return sql.startswith("BEGIN")


#: moment -> (the module whose run() executes the statement, which statement, its match number,
#: SIGINT after the statement rather than before)
BEFORE_COMMIT = {
    "before the check that no transaction is open": (write_module, _begin, 1, False),
    "inside the check that no transaction is open": (write_module, _begin, 1, True),
    "right after the write's BEGIN": (write_module, _begin, 2, True),
    "writing the output": (write_module, lambda sql: "CREATE TABLE" in sql, 1, False),
    "creating the levels view": (write_module, lambda sql: "CREATE VIEW" in sql, 1, False),
    "inserting the ledger row": (ledger_module, lambda sql: "INSERT" in sql, 1, False),
}


@pytest.mark.parametrize("moment", list(BEFORE_COMMIT))
def test_ctrl_c_before_the_commit_records_nothing(
    persons: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch, moment: str
) -> None:
    before = snapshot(persons)
    module, matches, nth, after = BEFORE_COMMIT[moment]
    seen = _sigint_at(monkeypatch, module, matches, nth, after=after)
    with pytest.raises(KeyboardInterrupt):
        _release(persons)
    assert len(seen) == nth, f"no statement matched {moment!r}"
    assert snapshot(persons) == before
    assert leftovers(persons) == []
    assert _no_open_transaction(persons)


def test_ctrl_c_while_the_levels_are_computed_records_nothing(
    persons: duckdb.DuckDBPyConnection,
) -> None:
    before = snapshot(persons)

    def progress(stats: Any) -> None:
        if stats.level == 2:
            signal.raise_signal(signal.SIGINT)

    with pytest.raises(KeyboardInterrupt):
        _release(persons, progress=progress)
    assert snapshot(persons) == before
    assert leftovers(persons) == []


@pytest.mark.parametrize("after", [False, True], ids=["during", "right after"])
def test_ctrl_c_during_the_commit_completes_the_release(
    persons: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch, after: bool
) -> None:
    seen = _sigint_at(monkeypatch, write_module, lambda sql: sql == "COMMIT", after=after)
    with pytest.raises(KeyboardInterrupt):  # delivered once the release is complete
        _release(persons)
    assert seen
    assert persons.execute("SELECT sum(count) FROM persons_private").fetchall() == [(16,)]
    assert persons.execute("SELECT count(*) FROM persons_private_levels").fetchall()[0][0] > 0
    assert persons.execute("SELECT output_table FROM inftda_releases").fetchall() == [
        ("persons_private",)
    ]
    assert leftovers(persons) == []
    assert _no_open_transaction(persons)


def test_ctrl_c_during_the_cleanup_lets_it_finish(
    persons: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine's cleanup ignores DuckDB errors; a Ctrl-C must neither be swallowed by that
    nor cut the cleanup short."""
    from inftda_sql.engines.duckdb import engine as engine_module

    seen = _sigint_at(monkeypatch, engine_module, lambda sql: sql.startswith("DROP"))
    with pytest.raises(KeyboardInterrupt):
        _release(persons)
    assert seen
    assert leftovers(persons) == []
    assert persons.execute("SELECT count(*) FROM inftda_releases").fetchall() == [(1,)]


# ---------------------------------------------------------------------------------- CLI


def test_cli_ctrl_c_before_the_commit_exits_130(
    persons_db: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _sigint_at(monkeypatch, write_module, lambda sql: "CREATE TABLE" in sql)
    code = main(["release", str(persons_db), "persons", *GEO_FLAGS])
    out, err = capsys.readouterr()
    assert (code, out, err) == (130, "", "interrupted: nothing was recorded\n")
    assert release_outcome(persons_db, "persons_private") == "nothing"


@pytest.mark.parametrize("after", [False, True], ids=["during", "right after"])
def test_cli_ctrl_c_at_the_commit_exits_0(
    persons_db: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    after: bool,
) -> None:
    _sigint_at(monkeypatch, write_module, lambda sql: sql == "COMMIT", after=after)
    code = main(["release", str(persons_db), "persons", *GEO_FLAGS])
    out, err = capsys.readouterr()
    assert code == 0
    assert "release #1: persons -> persons_private" in out
    assert err == "note: Ctrl-C came after the result was recorded, so the command completed\n"
    assert release_outcome(persons_db, "persons_private") == "recorded"


@pytest.mark.parametrize(
    "raised",
    [(RuntimeError, "Query interrupted"), (duckdb.InterruptException, "INTERRUPT Error")],
    ids=["duckdb-query-interrupted", "duckdb-interrupt-exception"],
)
def test_cli_duckdbs_own_reports_of_ctrl_c_exit_130(
    persons_db: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    raised: tuple[type[BaseException], str],
) -> None:
    """However DuckDB reports an interrupt, it is not an unexpected error to report."""

    def release(*args: Any, **kw: Any) -> None:
        kind, text = raised
        raise kind(text)

    monkeypatch.setattr(cli_commands, "release", release)
    code = main(["release", str(persons_db), "persons", *GEO_FLAGS])
    _, err = capsys.readouterr()
    assert (code, err) == (130, "interrupted: nothing was recorded\n")


def test_cli_an_extension_cut_by_ctrl_c_exits_130(
    persons_db: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A C extension cut by Ctrl-C while it is imported (pandas, which pyarrow imports on its
    first conversion) raises SystemError with the KeyboardInterrupt as its cause: an interrupt,
    not an unexpected error (found by the random test below once pandas was installed)."""

    def release(*args: Any, **kw: Any) -> None:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as exc:
            raise SystemError("<module> returned a result with an exception set") from exc

    monkeypatch.setattr(cli_commands, "release", release)
    code = main(["release", str(persons_db), "persons", *GEO_FLAGS])
    _, err = capsys.readouterr()
    assert (code, err) == (130, "interrupted: nothing was recorded\n")


# ---------------------------------------------------------------------------------- real process


@pytest.fixture
def small_od_db(tmp_path: Path) -> Path:
    return small_od_database(tmp_path / "base.duckdb")


#: the console script pip writes for ``inftda-sql`` (``{extra}``: lines before main() runs)
CONSOLE_SCRIPT = """\
import re
import sys
from inftda_sql.cli import main
{extra}
if __name__ == "__main__":
    sys.argv[0] = re.sub(r"(-script\\.pyw|\\.exe)?$", "", sys.argv[0])
    sys.exit(main())
"""
PRELUDE = "import sys; from inftda_sql.cli import console, main"


def console_script(folder: Path, extra: str = "") -> Path:
    """A copy of the ``inftda-sql`` console script in ``folder`` (it imports the package before
    main() runs, and its name tells the package that the command line is starting)."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "inftda-sql"
    script.write_text(CONSOLE_SCRIPT.format(extra=extra))
    return script


def _without_import_times(err: str) -> str:
    return "".join(line for line in err.splitlines(True) if not line.startswith("import time:"))


@pytest.mark.parametrize("entry", ["console script", "python -m inftda_sql"])
def test_ctrl_c_while_the_command_line_imports_the_package_exits_130(
    small_od_db: Path, tmp_path: Path, entry: str
) -> None:
    """SIGINT while Python imports the package, before main() runs (the console script imports
    ``inftda_sql.cli`` first; ``-m`` imports the package first): exit 130 with the usual line,
    no traceback, nothing recorded. The moment is found by Python's ``-X importtime`` report of
    the package's first module (``inftda_sql._version``), then up to 40 ms later (the rest of
    the package's import, or main() starting)."""
    db = tmp_path / "t.duckdb"
    first = (
        [str(console_script(tmp_path / "bin"))]
        if entry == "console script"
        else ["-m", "inftda_sql"]
    )
    argv = [sys.executable, "-X", "importtime", *first, *(a.format(db=db) for a in OD_RELEASE)]
    rng = random.Random(20261126)
    for delay in [0.0, 0.0, *(rng.uniform(0, 0.04) for _ in range(4))]:
        fresh_copy(small_od_db, db)
        with subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        ) as proc:
            assert proc.stderr is not None
            seen = []
            for line in proc.stderr:
                seen.append(line)
                if line.split("|")[-1].strip() == "inftda_sql._version":
                    break
            time.sleep(delay)
            proc.send_signal(signal.SIGINT)
            _, rest = proc.communicate(timeout=120)
        assert "inftda_sql._version" in "".join(seen), "the child never imported the package"
        err = _without_import_times("".join(seen) + rest)
        context = f"{entry}, SIGINT {delay:.3f} s after the package's import began: {err!r}"
        assert "Traceback" not in err, context
        assert (proc.returncode, err) == (130, "interrupted: nothing was recorded\n"), context
        assert release_outcome(db, "trips_private") == "nothing", context


@pytest.mark.slow
def test_ctrl_c_at_random_moments_of_a_real_release(small_od_db: Path, tmp_path: Path) -> None:
    """SIGINT at 20 random moments of `inftda-sql release` (half of them with the progress bar
    on a terminal): exit 130 and nothing recorded, or exit 0 and the release complete; never
    a traceback or a request to report a bug.

    The moments are drawn from the time Python takes to start and import the package (with a
    margin: only Python's own start, before the package's first line, is out of its reach) up
    to the end of the release, both measured first. A moment that falls in the package's import
    on a loaded machine must give the same clean exit (the test above aims there).
    """
    rng = random.Random(20251122)
    db = tmp_path / "t.duckdb"
    # the console script, its progress bar drawn at once (on a terminal: the drawing thread
    # runs too); a moment that falls in its import of the package is handled like the others
    script = console_script(tmp_path / "bin", "from inftda_sql.cli import console\n"
                            "console.PROGRESS_DELAY = 0")  # fmt: skip
    argv = [sys.executable, str(script), *(a.format(db=db) for a in OD_RELEASE)]
    start, total = startup_and_duration(small_od_db, db, [*argv, "--quiet"], prelude=PRELUDE)
    outcomes: dict[str, int] = {}
    for i in range(20):
        fresh_copy(small_od_db, db)
        delay = rng.uniform(start, total * 1.1)
        code, err = interrupted_run(argv, delay, signal.SIGINT, terminal=i % 2 == 1)
        outcome = release_outcome(db, "trips_private")
        context = f"SIGINT after {delay:.3f} s: exit {code}, {outcome}, stderr {err[-300:]!r}"
        assert "report" not in err and "Traceback" not in err, context
        if code == 0:
            assert outcome == "recorded", context
        else:
            assert (code, outcome) == (130, "nothing"), context
            assert err.rstrip("\r\n\033[K").endswith("interrupted: nothing was recorded"), context
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    assert outcomes.get("nothing", 0) >= 5, outcomes  # the moments did fall inside the release
