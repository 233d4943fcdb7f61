"""The ``inftda-sql`` command line: every command, exit codes, one-line errors, progress bar."""

from __future__ import annotations

import io
import json
import os
import pty
import random
import select
import signal
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

import inftda_sql
from inftda_sql._compat import storage_version
from inftda_sql._errors import Arg, Code, Func, InftdaError, Part, Spelling
from inftda_sql.cli import commands as _cli
from inftda_sql.cli import main
from inftda_sql.cli.console import Progress as _Progress
from inftda_sql.core.tree import LevelStats
from tests.system.helpers import (
    interrupted_run,
    make_geo,
    make_persons,
    read_terminal,
    startup_time,
)

ROOT = Path(__file__).resolve().parents[2]
GEO_FLAGS = ["--hierarchy", "region,province,mun", "--domain", "geo"]
OD_HIERARCHY = [
    "--hierarchy", "o_region,o_province,o_mun", "--hierarchy", "d_region,d_province,d_mun",
    "--tree", "destination",
]  # fmt: skip
OD_FLAGS = [*OD_HIERARCHY, "--domain", "geo_origin", "--domain", "geo_destination"]


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def demo_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small demo database made once by `inftda-sql demo` (copied by each test)."""
    db = tmp_path_factory.mktemp("demo") / "demo.duckdb"
    assert main(["demo", "--db", str(db), "--scale", "0.01", "--quiet"]) == 0
    return db


@pytest.fixture
def demo(demo_template: Path, tmp_path: Path) -> Path:
    db = tmp_path / "demo.duckdb"
    db.write_bytes(demo_template.read_bytes())
    return db


@pytest.fixture
def persons_db(tmp_path: Path) -> Path:
    db = tmp_path / "persons.duckdb"
    with duckdb.connect(str(db)) as con:
        make_geo(con)
        make_persons(con)
    return db


def _query(db: Path, sql: str) -> list[Any]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(sql).fetchall()


# ---------------------------------------------------------------------------------- basics


def test_help_version_and_module_entry_point(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["--help"], capsys)
    assert code == 0
    for command in ("demo", "release", "evaluate", "ledger", "plan", "budget"):
        assert command in out
    code, out, _ = run(["--version"], capsys)
    assert (code, out.strip()) == (0, f"inftda-sql {inftda_sql.__version__}")
    proc = subprocess.run(
        [sys.executable, "-m", "inftda_sql", "--version"], capture_output=True, text=True
    )
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"inftda-sql {inftda_sql.__version__}"


@pytest.mark.parametrize(
    "argv,fragment",
    [
        ([], "required: command"),
        (["release"], "required: db, table"),
        (["release", "x.duckdb", "t", "--bogus"], "unrecognized arguments: --bogus"),
        (["release", "x.duckdb", "t", "--rho", "lots"], "invalid float value: 'lots'"),
        (["release", "x.duckdb", "t", "--rho", "1"], "--hierarchy is required"),
        (["plan", "--epsilon", "1", "--delta", "1e-8"], "give --levels"),
        (["plan", "--levels", "20,x"], "node counts per level"),
        (["plan", "--levels", "20,0", "--rho", "1"], "positive integers"),
        (["plan", "--levels", "20", "--split", "a,b", "--rho", "1"], "or 'optimal'"),
        (["plan", "--levels", "20", "--tree", "origin", "--rho", "1"], "not both"),
    ],
)
def test_usage_errors_exit_2_with_one_line(
    argv: list[str], fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(argv, capsys)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1, err
    assert fragment in err


def test_cli_spelling() -> None:
    """Library messages are built from parts; the command line renders them as flags."""
    cases: list[tuple[tuple[Part, ...], str, str]] = [
        (
            ("pass ", Arg("overwrite", True), " to replace it or choose another ", Arg("output"),
             " name"),
            "pass overwrite=True to replace it or choose another output= name",
            "pass --overwrite to replace it or choose another --output name",
        ),
        (
            ("Pass ", Arg("domain", "geo"), " (a table)",
             Spelling(python=(" or ", Arg("domain", {"sex": ["F", "M"]})), cli=()), "; or ",
             Arg("domain_from_data", True)),
            "Pass domain='geo' (a table) or domain={'sex': ['F', 'M']}; or domain_from_data=True",
            "Pass --domain geo (a table); or --domain-from-data",
        ),
        (
            ("pass ", Arg("hierarchy", [["o_reg", "o_mun"], ["d_reg", "d_mun"]])),
            "pass hierarchy=[['o_reg', 'o_mun'], ['d_reg', 'd_mun']]",
            "pass --hierarchy o_reg,o_mun --hierarchy d_reg,d_mun",
        ),
        (
            ("write ", Arg("hierarchy", ["region", "province"])),
            "write hierarchy=['region', 'province']",
            "write --hierarchy region,province",
        ),
        (
            ("e.g. ", Arg("epsilon", 1.0), " with ", Arg("delta", Code("1e-8")), ", or ",
             Arg("epsilon", float("inf")), " for exact counts"),
            "e.g. epsilon=1.0 with delta=1e-8, or epsilon=float('inf') for exact counts",
            "e.g. --epsilon 1.0 with --delta 1e-8, or --epsilon inf for exact counts",
        ),
        (("pass ", Arg("rho", ...), " (zCDP)"), "pass rho=... (zCDP)", "pass --rho ... (zCDP)"),
        ((Arg("levels_view", False),), "levels_view=False", "--no-levels-view"),
        (
            (Arg("tree", "destination"), " interleaves"),
            "tree='destination' interleaves",
            "--tree destination interleaves",
        ),
        (
            ("raise the budget with ", Func("set_budget", command="budget"), ", or pass ",
             Arg("budget_override", True)),
            "raise the budget with set_budget(), or pass budget_override=True",
            "raise the budget with `inftda-sql budget`, or pass --budget-override",
        ),
        (
            ("so ", Spelling(python="domain must be a list of 2 domains",
                             cli=(Arg("domain"), " must be given 2 times"))),
            "so domain must be a list of 2 domains",
            "so --domain must be given 2 times",
        ),
        (
            (Arg("epsilon", 1, "!r"), " needs a delta: pass ", Arg("delta", ...), " as well (e.g. ",
             Arg("delta", Code("1e-8")), ")"),
            "epsilon=1 needs a delta: pass delta=... as well (e.g. delta=1e-8)",
            "--epsilon 1 needs a delta: pass --delta ... as well (e.g. --delta 1e-8)",
        ),
        # values of the data are plain text: left alone
        (
            ("input path (region='South', mun='n1a') is not in the domain",),
            "input path (region='South', mun='n1a') is not in the domain",
            "input path (region='South', mun='n1a') is not in the domain",
        ),
        (
            ("column 'delta' not in table 't'",),
            "column 'delta' not in table 't'",
            "column 'delta' not in table 't'",
        ),
    ]  # fmt: skip
    for parts, python, expected in cases:
        err = InftdaError(*parts)
        assert str(err) == python
        assert err.message(cli=True) == expected


# ---------------------------------------------------------------------------------- demo


def test_demo_writes_a_file_older_duckdb_clients_open(
    demo_template: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with duckdb.connect(str(demo_template), read_only=True) as con:
        assert storage_version(con) == "v1.0.0"
        n_trips = con.execute("SELECT count(*) FROM trips").fetchall()[0][0]
        assert con.execute("SELECT sum(count) FROM trips_private").fetchall()[0][0] == n_trips
    db = tmp_path / "latest.duckdb"
    code, out, err = run(
        ["demo", "--db", str(db), "--scale", "0.01", "--quiet", "--storage-version", "latest"],
        capsys,
    )
    assert code == 0, err
    assert err == ""
    assert "storage format v2.0.0: only DuckDB 2.0.0 and later open it" in out
    assert "SELECT g.name AS origin" in out
    assert _query(db, "SELECT tags['storage_version'] FROM duckdb_databases() WHERE NOT internal")


def test_demo_rebuilds_its_own_file_and_protects_others(
    demo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(["demo", "--db", str(demo), "--scale", "0.01", "--quiet"], capsys)
    assert code == 0
    assert "storage format v1.0.0: DuckDB 1.0.0 and later" in out
    other = tmp_path / "mine.duckdb"
    duckdb.connect(str(other)).close()
    code, _, err = run(["demo", "--db", str(other), "--scale", "0.01", "--quiet"], capsys)
    assert code == 1
    assert "was not made by `inftda-sql demo`; pass --overwrite" in err
    code, _, err = run(
        ["demo", "--db", str(tmp_path / "x.duckdb"), "--storage-version", "1.0", "--quiet"],
        capsys,
    )
    assert code == 1
    assert "storage_version must be a DuckDB version such as 'v1.0.0'" in err


def _aside_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".tmp-" in p.name)


def test_an_interrupted_demo_leaves_the_target_as_it_was(
    demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The demo builds its file aside and renames it at the end: Ctrl-C (here during its
    release) leaves no file, or the previous demo file intact, and no temporary file."""

    def interrupted(*args: Any, **kw: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(_cli, "release", interrupted)
    fresh = tmp_path / "fresh.duckdb"
    code, _, err = run(["demo", "--db", str(fresh), "--scale", "0.01", "--quiet"], capsys)
    assert (code, err) == (130, "interrupted: nothing was recorded\n")
    assert not fresh.exists()
    before = demo.read_bytes()
    code, _, _ = run(["demo", "--db", str(demo), "--scale", "0.01", "--quiet"], capsys)
    assert code == 130
    assert demo.read_bytes() == before
    assert _aside_files(tmp_path) == []
    monkeypatch.undo()  # the README's command works on what was left
    code, _, err = run(["demo", "--db", str(fresh), "--scale", "0.01", "--quiet"], capsys)
    assert code == 0, err
    assert _query(fresh, "SELECT count(*) FROM inftda_releases") == [(1,)]
    assert _aside_files(tmp_path) == []


@pytest.mark.slow
def test_a_demo_cut_by_ctrl_c_at_random_moments_can_be_run_again(tmp_path: Path) -> None:
    """A real `inftda-sql demo` interrupted at random moments: the file is a complete demo or
    absent, nothing temporary stays, and the same command then succeeds."""
    rng = random.Random(15)
    db = tmp_path / "demo.duckdb"
    argv = [sys.executable, "-m", "inftda_sql", "demo", "--db", str(db), "--scale", "0.005"]
    argv.append("--quiet")
    start = startup_time()  # Python's own start: no package handles a signal there
    for _ in range(4):
        code, err = interrupted_run(argv, rng.uniform(start, start + 1.2), signal.SIGINT)
        assert code in (0, 130), err
        assert "report" not in err and "Traceback" not in err, err
        assert db.exists() == (code == 0), (code, err)
        if db.exists():
            assert _query(db, "SELECT count(*) FROM inftda_releases") == [(1,)]
            db.unlink()
        assert _aside_files(tmp_path) == []
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert _query(db, "SELECT count(*) FROM trips_private") != [(0,)]


# ---------------------------------------------------------------------------------- release


def test_release_with_every_kind_of_flag(demo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        ["release", str(demo), "trips", *OD_FLAGS, "--epsilon", "2", "--delta", "1e-9",
         "--conversion", "simple", "--split", "1,1,1,1,2,2", "--output", "trips_dp",
         "--seed", "7", "--no-levels-view", "--quiet"],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    assert err == ""
    assert "release #2: trips -> trips_dp" in out
    assert "NOT PRIVATE: seeded noise" in out
    assert "note:" not in out  # the demo file is in the compatible format
    (row,) = _query(
        demo,
        "SELECT epsilon, delta, conversion, seeded, level_rho FROM inftda_releases "
        "WHERE output_table = 'trips_dp'",
    )
    assert row[:4] == (2.0, 1e-9, "simple", True)
    assert row[4][-1] == pytest.approx(2 * row[4][0])
    tables = {r[0] for r in _query(demo, "SELECT table_name FROM information_schema.tables")}
    assert "trips_dp" in tables
    assert "trips_dp_levels" not in tables
    # the same release again is refused; --overwrite replaces it
    code, _, err = run(
        ["release", str(demo), "trips", *OD_FLAGS, "--rho", "1", "--output", "trips_dp", "--quiet"],
        capsys,
    )
    assert code == 1
    assert "pass --overwrite" in err
    code, _, err = run(
        ["release", str(demo), "trips", *OD_FLAGS, "--rho", "1", "--output", "trips_dp",
         "--overwrite", "--quiet"],
        capsys,
    )  # fmt: skip
    assert code == 0, err


def test_release_from_a_toml_file_with_flags_overriding_it(
    persons_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "release.toml"
    config.write_text(
        'hierarchy = ["region", "province", "mun"]\ndomain = "geo"\nrho = 1e300\n'
        'output = "from_toml"\nseed = 3\nprivacy = "unbounded"\ncontribution = 1\n',
        encoding="utf-8",
    )
    code, out, err = run(
        ["release", str(persons_db), "persons", "--config", str(config), "--output", "from_flag"],
        capsys,
    )
    assert code == 0, err
    assert "persons -> from_flag" in out
    assert "unbounded DP" in out
    # a file in DuckDB 2.0's own format gets a note about other clients
    assert "note:" in out and f"--storage-version {'v1.0.0'}" in out
    assert _query(persons_db, "SELECT count(*) FROM inftda_releases") == [(1,)]

    config.write_text('hierarchy = ["region"]\nrhoo = 1\n', encoding="utf-8")
    code, _, err = run(["release", str(persons_db), "persons", "--config", str(config)], capsys)
    assert code == 1
    assert err.startswith("error: unknown key(s) in") and "rhoo" in err and "allowed:" in err
    config.write_text("hierarchy = [region\n", encoding="utf-8")
    code, _, err = run(["release", str(persons_db), "persons", "--config", str(config)], capsys)
    assert code == 1
    assert "is not valid TOML" in err and err.count("\n") == 1
    code, _, err = run(
        ["release", str(persons_db), "persons", "--config", str(tmp_path / "none.toml")], capsys
    )
    assert code == 1
    assert "cannot read config" in err and "No such file" in err


def test_release_on_a_compatible_file_keeps_it_compatible(
    demo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(
        ["release", str(demo), "trips", *OD_FLAGS, "--rho", "1", "--output", "again",
         "--storage-version", "v1.0.0", "--quiet"],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    with duckdb.connect(str(demo), read_only=True) as con:
        assert storage_version(con) == "v1.0.0"


def test_release_privacy_unit_and_budget(
    persons_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with duckdb.connect(str(persons_db)) as con:
        con.execute(
            "CREATE TABLE visits AS SELECT *, (row_number() OVER ()) % 3 AS person FROM persons"
        ).fetchall()
    code, out, err = run(["budget", str(persons_db), "visits", "--rho", "1.5"], capsys)
    assert code == 0, err
    assert "budget of 'visits': rho=1.5" in out
    code, out, err = run(
        ["release", str(persons_db), "visits", *GEO_FLAGS, "--rho", "1", "--privacy-unit",
         "person", "--contribution", "2", "--quiet"],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    code, _, err = run(
        ["release", str(persons_db), "visits", *GEO_FLAGS, "--rho", "1", "--output", "v2",
         "--quiet"],
        capsys,
    )  # fmt: skip
    assert code == 1
    assert err.count("\n") == 1
    assert "--budget-override" in err and "`inftda-sql budget`" in err
    assert "budget_override=True" not in err and "set_budget()" not in err
    code, _, err = run(
        ["release", str(persons_db), "visits", *GEO_FLAGS, "--rho", "1", "--output", "v2",
         "--budget-override", "--quiet"],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    code, out, _ = run(["ledger", str(persons_db)], capsys)
    assert code == 0
    assert "visits: 2 release(s), spent rho 2" in out
    assert "budget rho 1.5" in out


def test_debug_shows_the_traceback(persons_db: Path) -> None:
    with pytest.raises(inftda_sql.BudgetError, match="needs a delta"):
        main(["--debug", "release", str(persons_db), "persons", *GEO_FLAGS, "--epsilon", "1"])
    with pytest.raises(inftda_sql.BudgetError, match="needs a delta"):  # after the command too
        main(["release", str(persons_db), "persons", *GEO_FLAGS, "--epsilon", "1", "--debug"])


def test_unexpected_errors_are_one_line_too(
    persons_db: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(*args: Any, **kw: Any) -> Any:
        raise RuntimeError("something\nbroke")

    monkeypatch.setattr(_cli, "release", broken)
    code, _, err = run(["release", str(persons_db), "persons", *GEO_FLAGS, "--rho", "1"], capsys)
    assert code == 1
    assert err == (
        "error: RuntimeError: something broke (unexpected: run again with --debug for the "
        "traceback and please report it)\n"
    )
    with pytest.raises(RuntimeError):
        main(["--debug", "release", str(persons_db), "persons", *GEO_FLAGS, "--rho", "1"])


def test_warnings_are_one_line_in_flag_spelling(
    persons_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(
        ["release", str(persons_db), "persons", *GEO_FLAGS, "--epsilon", "50", "--delta", "1e-8",
         "--quiet"],
        capsys,
    )  # fmt: skip
    assert code == 0
    assert err.startswith("warning: --epsilon 50")
    assert err.count("\n") == 1


def test_a_locked_file_is_explained(persons_db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c",
         f"import duckdb, sys; c = duckdb.connect({str(persons_db)!r}); print('ok', flush=True); "
         "sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ok"
        code, _, err = run(["ledger", str(persons_db)], capsys)
    finally:
        holder.communicate("")
    assert code == 1
    assert "is open in another program" in err and err.count("\n") == 1


# ---------------------------------------------------------------------------------- ledger


def test_ledger_formats(demo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["ledger", str(demo)], capsys)
    assert code == 0
    assert "trips_private" in out and "trips: 1 release(s)" in out
    code, out, _ = run(["ledger", str(demo), "--format", "json"], capsys)
    data = json.loads(out)
    assert data["releases"][0]["output_table"] == "trips_private"
    assert data["inputs"][0]["input_table"] == "main.trips"  # the base table, resolved
    code, out, _ = run(["ledger", str(demo), "--format", "csv"], capsys)
    header, first = out.splitlines()[:2]
    assert header.startswith("release_id,") and first.startswith("1,")
    empty = tmp_path / "empty.duckdb"
    duckdb.connect(str(empty)).close()
    code, out, _ = run(["ledger", str(empty)], capsys)
    assert (code, out.strip()) == (0, f"no releases recorded in {empty}")


# ---------------------------------------------------------------------------------- evaluate


def test_evaluate_prints_levels_and_writes_plots(
    demo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib", reason="the plots need matplotlib (the plot extra)")
    errors_png, zoom_png = tmp_path / "errors.png", tmp_path / "zoom.png"
    code, out, err = run(
        ["evaluate", str(demo), "trips", "trips_private", "--plot", str(errors_png),
         "--zoom", str(zoom_png), "--title", "demo", "--label", "epsilon 1"],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split() == [
        "level", "level_name", "cells_true", "cells_released", "max_abs_error", "mean_abs_error",
        "false_discovery_rate", "false_negative_rate", "total_true", "total_released",
    ]  # fmt: skip
    assert lines[1].split()[:2] == ["0", "root"]
    assert len(lines) == 1 + 7 + 2  # header, root + 6 levels, two "wrote" lines
    for png in (errors_png, zoom_png):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # hierarchy given explicitly, JSON output
    code, out, err = run(
        ["evaluate", str(demo), "trips", "trips_private", *OD_HIERARCHY, "--format", "json"], capsys
    )
    assert code == 0, err
    rows = json.loads(out)
    assert [r["level"] for r in rows] == list(range(7))
    assert rows[0]["total_true"] == rows[0]["total_released"]


def test_evaluate_needs_a_hierarchy_when_the_ledger_has_none(
    persons_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(["evaluate", str(persons_db), "persons", "persons"], capsys)
    assert code == 2
    assert "--hierarchy is required ('persons' is not the output of a release" in err


def _fake_module(monkeypatch: pytest.MonkeyPatch, name: str, **attrs: Any) -> None:
    module = types.ModuleType(f"inftda_sql.{name}")
    for key, value in attrs.items():
        setattr(module, key, value)
    monkeypatch.setitem(sys.modules, f"inftda_sql.{name}", module)


def test_evaluate_passes_every_option(
    demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls: dict[str, Any] = {}

    def evaluate(con: Any, truth: str, released: str, /, **kw: Any) -> Any:
        calls["evaluate"] = (truth, released, kw)
        return con.sql("SELECT 0 AS level, 'root' AS level_name, 1.5 AS max_abs_error")

    def plot_evaluation(evaluation: Any, path: Path, **kw: Any) -> Path:
        calls["plot"] = (evaluation.fetchall(), path, kw)
        return path

    def plot_zoom(con: Any, truth: str, released: str, path: Path, /, **kw: Any) -> Path:
        calls["zoom"] = (truth, released, path, kw)
        return path

    _fake_module(monkeypatch, "_evaluate", evaluate=evaluate)
    _fake_module(monkeypatch, "_plot", plot_evaluation=plot_evaluation, plot_zoom=plot_zoom)
    code, out, err = run(
        ["evaluate", str(demo), "trips", "trips_private", "--count", "n", "--released-count",
         "c", "--plot", str(tmp_path / "a.png"), "--zoom", str(tmp_path / "b.png"),
         "--title", "T", "--label", "L", "--format", "csv"],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    assert out == "level,level_name,max_abs_error\n0,root,1.5\n"
    hierarchy = [["o_region", "o_province", "o_mun"], ["d_region", "d_province", "d_mun"]]
    common = {"hierarchy": hierarchy, "tree": "destination", "count": "n", "released_count": "c"}
    assert calls["evaluate"] == ("trips", "trips_private", common)
    assert calls["plot"] == ([(0, "root", 1.5)], tmp_path / "a.png", {"title": "T", "label": "L"})
    assert calls["zoom"] == ("trips", "trips_private", tmp_path / "b.png", {"title": "T", **common})
    assert err == f"wrote {tmp_path / 'a.png'}\nwrote {tmp_path / 'b.png'}\n"


@pytest.mark.parametrize(
    "argv,module",
    [
        (["evaluate", "{db}", "trips", "trips_private"], "_evaluate"),
        (["evaluate", "{db}", "trips", "trips_private", "--plot", "x.png"], "_plot"),
        (["plan", "--levels", "20", "--rho", "1"], "_planning"),
        (["ledger", "{db}"], "_budget"),
        (["budget", "{db}", "trips", "--rho", "1"], "_budget"),
    ],
)
def test_commands_missing_from_an_installation_say_so(
    demo: Path,
    argv: list[str],
    module: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setitem(sys.modules, f"inftda_sql.{module}", None)  # import fails
    code, out, err = run([a.replace("{db}", str(demo)) for a in argv], capsys)
    assert code == 1
    assert out == ""
    assert err == (
        f"error: {argv[0]}{' --plot' if module == '_plot' else ''} is not available in this "
        f"version of inftda-sql ({inftda_sql.__version__})\n"
    )


# ---------------------------------------------------------------------------------- plan


def test_plan_from_a_shape(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        ["plan", "--levels", "20,107,7900", "--epsilon", "1", "--delta", "1e-8",
         "--simulations", "0"],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    assert out.startswith("plan: rho=0.0172053")
    assert "7,900" in out and "13.2" in out
    code, out, err = run(
        ["plan", "--levels", "20,107,7900", "--rho", "1", "--simulations", "0",
         "--target-levels", "1", "--json"],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    plan = json.loads(out)
    assert [lv["nodes"] for lv in plan["levels"]] == [20, 107, 7900]
    assert plan["split"][0] > plan["split"][2]  # the optimal split favours the target


def test_plan_from_a_database_reads_only_the_domain(
    demo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = demo.read_bytes()
    code, out, err = run(
        ["plan", str(demo), *OD_FLAGS, "--epsilon", "1", "--delta", "1e-8", "--simulations", "0"],
        capsys,
    )
    assert code == 0, err
    assert "o_mun x d_mun" in out and "62,410,000" in out
    assert demo.read_bytes() == before


def test_plan_passes_every_option(
    demo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls: list[tuple[Any, dict[str, Any]]] = []

    class FakePlan:
        def __str__(self) -> str:
            return "a plan"

        def as_dict(self) -> dict[str, Any]:
            return {"levels": []}

    def plan(shape: Any = None, **kw: Any) -> FakePlan:
        calls.append((shape, kw))
        return FakePlan()

    _fake_module(monkeypatch, "_planning", plan=plan)
    code, out, _ = run(
        ["plan", "--levels", "20,107,7_900", "--epsilon", "1", "--delta", "1e-8", "--split",
         "1,2,3", "--conversion", "simple", "--privacy", "unbounded", "--contribution", "2",
         "--distinct", "--beta", "0.1", "--simulations", "5", "--total", "1000", "--seed", "4"],
        capsys,
    )  # fmt: skip
    assert (code, out) == (0, "a plan\n")
    assert calls[-1] == (
        [20, 107, 7900],
        {"conversion": "simple", "privacy": "unbounded", "contribution": 2, "distinct": True,
         "beta": 0.1, "simulations": 5, "total": 1000, "seed": 4, "epsilon": 1.0,
         "delta": 1e-8, "split": [1.0, 2.0, 3.0]},
    )  # fmt: skip
    code, out, _ = run(
        ["plan", str(demo), "--hierarchy", "region", "--domain", "geo", "--tree", "chain",
         "--rho", "1", "--target-levels", "1,region", "--target-levels", "2", "--json"],
        capsys,
    )  # fmt: skip
    assert (code, json.loads(out)) == (0, {"levels": []})
    shape, kw = calls[-1]
    assert shape is None
    assert kw["hierarchy"] == ["region"] and kw["domain"] == "geo" and kw["tree"] == "chain"
    assert kw["target_levels"] == [1, "region", 2] and kw["split"] == "optimal"
    assert isinstance(kw["con"], duckdb.DuckDBPyConnection)


# ---------------------------------------------------------------------------------- progress


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _stats(level: int, name: str) -> LevelStats:
    return LevelStats(level, name, 3 * level, 10 * level, 5 * level, 1.5, 0.25)


def _drive(progress: _Progress) -> None:
    with progress:
        progress(LevelStats(0, "root", 0, 0, 1, 0.0, 0.0))
        progress(_stats(1, "region"))
        progress(_stats(2, "region x mun"))


def test_progress_bar_draws_each_level_on_a_terminal() -> None:
    term = _Terminal()
    _drive(_Progress(["region", "region x mun"], stream=term, delay=0))
    text = term.getvalue()
    assert "  level 1/2 region: 3 parents, 10 cells noised, 5 kept (0.2 s)\n" in text
    assert "  level 2/2 region x mun: 6 parents, 20 cells noised, 10 kept (0.2 s)\n" in text
    assert "[##########----------] 1/2 levels  level 2: region x mun" in text
    assert "[####################] 2/2 levels  writing the output" in text
    assert text.endswith("\r\033[K")  # the bar is removed at the end


@pytest.mark.parametrize(
    "stream,enabled,delay",
    [(io.StringIO(), True, 0), (_Terminal(), False, 0), (_Terminal(), True, 60)],
    ids=["not a terminal", "--quiet", "quick release"],
)
def test_progress_bar_is_silent(stream: io.StringIO, enabled: bool, delay: float) -> None:
    _drive(_Progress(["region", "region x mun"], stream=stream, enabled=enabled, delay=delay))
    assert stream.getvalue() == ""


@pytest.fixture
def slow_release_argv(demo: Path) -> Iterator[list[str]]:
    """A release in a child process whose progress bar shows at once (no delay)."""
    code = (
        "import sys; from inftda_sql.cli import console, main; console.PROGRESS_DELAY = 0; "
        "sys.exit(main(sys.argv[1:]))"
    )
    yield [sys.executable, "-c", code, "release", str(demo), "trips", *OD_FLAGS, "--rho", "1",
           "--output", "p", "--overwrite"]  # fmt: skip


def test_progress_bar_in_a_real_terminal(slow_release_argv: list[str]) -> None:
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        slow_release_argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=follower
    )
    os.close(follower)
    try:
        shown = read_terminal(leader, proc).decode()
    finally:
        os.close(leader)
    out, _ = proc.communicate()
    assert proc.returncode == 0
    assert "release #2: trips -> p" in out.decode()
    for level in range(1, 7):
        assert f"  level {level}/6 " in shown
    assert "6/6 levels" in shown
    assert shown.endswith("\r\033[K")
    # the same release with --quiet, or with stderr not a terminal, draws nothing
    leader, follower = pty.openpty()
    quiet = subprocess.run(
        [*slow_release_argv, "--quiet"], stdout=subprocess.PIPE, stderr=follower, check=False
    )
    os.close(follower)
    assert quiet.returncode == 0
    try:
        drawn = os.read(leader, 65536) if select.select([leader], [], [], 0.2)[0] else b""
    except OSError:  # EIO: the terminal was closed with nothing written to it
        drawn = b""
    os.close(leader)
    assert drawn == b""
    piped = subprocess.run(slow_release_argv, capture_output=True, check=False)
    assert piped.returncode == 0
    assert piped.stderr == b""


def test_publish_writes_a_shareable_file(
    demo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "public.duckdb"
    code, out, err = run(
        ["publish", str(demo), "trips_private", str(target), "--public-table", "geo"], capsys
    )
    assert code == 0, err
    assert "no input, no diagnostics" in out
    assert _query(target, "SELECT table_name FROM information_schema.tables ORDER BY 1") == [
        ("geo",),
        ("inftda_releases",),
        ("trips_private",),
        ("trips_private_levels",),
    ]
    code, _, err = run(["publish", str(demo), "trips_private", str(target)], capsys)
    assert code == 1 and "--overwrite" in err and err.count("\n") == 1
    code, _, err = run(
        [
            "publish",
            str(demo),
            "trips_private",
            str(target),
            "--public-table",
            "trips",
            "--overwrite",
        ],
        capsys,
    )
    assert code == 1 and "private input" in err


def test_release_cbdp_features(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--mechanism cbdp --features ...` from flags and from a TOML file; evaluate refuses a
    feature release with a pointer to its features view."""
    db = tmp_path / "odmts.duckdb"
    con = duckdb.connect(str(db))
    from inftda_sql.synthetic import odmts

    odmts(con, stops=10, zones=2, period_minutes=360, trips=300, seed=2)
    con.close()
    flags = [
        "--mechanism", "cbdp", "--features", "total:", "--features", "period:period",
        "--features", "zones:o_zone,d_zone,period", "--features", "trip:o_stop,d_stop,period",
        "--domain", "odmts_pairs", "--domain", "odmts_periods",
    ]  # fmt: skip
    code, out, err = run(
        ["release", str(db), "odmts_trips", *flags, "--epsilon", "1", "--seed", "1", "--quiet"],
        capsys,
    )
    assert code == 0, err
    assert "(cbdp, 4 features, flat structure, bounded DP)" in out
    assert "pure DP, discrete Laplace noise" in out
    config = tmp_path / "cbdp.toml"
    config.write_text(
        'mechanism = "cbdp"\nepsilon = 1.0\nseed = 1\noutput = "again"\n'
        'domain = ["odmts_pairs", "odmts_periods"]\nstructure = "hierarchical"\n'
        '[features]\ntotal = []\nperiod = ["period"]\nzones = ["o_zone", "d_zone", "period"]\n'
        'trip = ["o_stop", "d_stop", "period"]\n'
    )
    code, out, err = run(
        ["release", str(db), "odmts_trips", "--config", str(config), "--quiet"], capsys
    )
    assert code == 0, err
    assert "hierarchical structure" in out
    con = duckdb.connect(str(db), read_only=True)
    try:
        assert con.execute("SELECT sum(count) FROM odmts_trips_private").fetchall() == [(300,)]
        assert con.execute("SELECT count(DISTINCT feature) FROM again_features").fetchall() == [
            (4,)
        ]
    finally:
        con.close()
    code, out, err = run(["evaluate", str(db), "odmts_trips", "again"], capsys)
    assert code == 2
    assert "'again' is a feature release (cbdp)" in err and "again_features view" in err
    code, out, err = run(
        [
            "release",
            str(db),
            "odmts_trips",
            "--features",
            "trip:o_stop,d_stop,period",
            "--domain",
            "odmts_pairs",
            "--domain",
            "odmts_periods",
            "--epsilon",
            "1",
        ],
        capsys,
    )
    assert code == 1
    assert "--features is for the mechanisms that release features (cbdp)" in err
    assert "--hierarchy ..., or --mechanism cbdp with --features ..." in err
