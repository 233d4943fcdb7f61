"""The commands of "Getting started" run as written: the pages' own code blocks are extracted
and executed (these sections were the README's; the README is now the front door to docs/).

* "Your own data" (``docs/getting-started.md``): the shell block (``inftda-sql release``
  then ``publish``) and the Python
  block, each in a fresh folder holding only ``od.parquet`` and ``geo.parquet``: the UK census
  O/D flows and their geography from ``../shared/data`` (``uk_ew_census2021_odwp01_msoa*``)
  when that folder is there, and always a generated pair of files of the same shape and column
  names. Then the SQL of "SQL clients and DBeaver" (``docs/how-to/sql-clients.md``) on the
  files they made.
* Every ``inftda-sql`` line of the shell blocks of "Command line" and "Publishing", in order,
  after ``inftda-sql demo`` (run with ``--scale 0.01`` to stay quick), and the error line
  "Command line" shows.
* The command lines of "Count-of-counts histograms" on the tables its doctest creates.
"""

from __future__ import annotations

import contextlib
import doctest
import hashlib
import io
import re
import shlex
import shutil
import sys
from pathlib import Path

import duckdb
import pytest

from inftda_sql.cli import main
from tests.conftest import shared_path

DOCS = Path(__file__).resolve().parents[2] / "docs"
GETTING_STARTED = DOCS / "getting-started.md"
SQL_CLIENTS = DOCS / "how-to" / "sql-clients.md"
COMMAND_LINE = DOCS / "how-to" / "command-line.md"
PUBLISHING = DOCS / "how-to" / "publishing.md"
COUNT_OF_COUNTS = DOCS / "how-to" / "count-of-counts.md"
UK = "uk_ew_census2021_odwp01_msoa"


def section(title: str, page: Path = GETTING_STARTED) -> str:
    """The text of the page's ``## title`` section, up to the next ``## `` heading."""
    text = page.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def blocks(text: str, language: str) -> list[str]:
    """The fenced code blocks of ``language`` in ``text`` (indented ones included)."""
    found = re.findall(rf"^( *)```{language}\n(.*?)^\1```", text, flags=re.S | re.M)
    return [re.sub(rf"^{indent}", "", body, flags=re.M) for indent, body in found]


def command_lines(block: str) -> list[list[str]]:
    """The commands of a shell block: continuation lines joined, a quoted string may span lines,
    comments dropped."""
    out: list[list[str]] = []
    pending = ""
    for line in block.replace("\\\n", " ").splitlines():
        pending += line + "\n"
        try:
            argv = shlex.split(pending, comments=True)
        except ValueError:  # a quote still open: the command goes on
            continue
        if argv:
            out.append(argv)
        pending = ""
    assert not pending.strip(), f"unclosed quote in {block!r}"
    return out


def inftda_commands(block: str) -> list[list[str]]:
    return [argv[1:] for argv in command_lines(block) if argv and argv[0] == "inftda-sql"]


def duckdb_cli_queries(block: str) -> list[tuple[str, str]]:
    """``duckdb -readonly FILE -c "SQL"`` lines of a shell block: (file, SQL)."""
    out = []
    for argv in command_lines(block):
        if argv and argv[0] == "duckdb" and "-c" in argv:
            out.append((argv[argv.index("-c") - 1], argv[argv.index("-c") + 1]))
    return out


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ------------------------------------------------------------------------------- the two files


def generated_files(folder: Path) -> None:
    """od.parquet and geo.parquet of the UK layout, small: 2 countries, 4 regions, 8 LADs,
    40 MSOAs (some without any flow), flows of every size from 1 up."""
    with duckdb.connect() as con:
        con.execute(
            """CREATE TABLE geo AS
            SELECT format('M{:03d}', i) AS msoa, format('Area {}', i) AS msoa_name,
                   format('L{}', i // 5) AS lad, format('District {}', i // 5) AS lad_name,
                   format('R{}', i // 10) AS region, format('Region {}', i // 10) AS region_name,
                   format('C{}', i // 20) AS country, format('Country {}', i // 20) AS country_name
            FROM range(40) r(i)"""
        ).fetchall()
        con.execute(
            """CREATE TABLE od AS
            SELECT o.msoa AS o_msoa, o.lad AS o_lad, o.region AS o_region, o.country AS o_country,
                   d.msoa AS d_msoa, d.lad AS d_lad, d.region AS d_region,
                   d.country AS d_country, (hash(o.msoa, d.msoa) % 50 + 1)::BIGINT AS count
            FROM geo o, geo d
            WHERE o.msoa < 'M035' AND hash(o.msoa || d.msoa) % 3 = 0"""
        ).fetchall()
        con.execute(f"COPY od TO '{folder / 'od.parquet'}'").fetchall()
        con.execute(f"COPY geo TO '{folder / 'geo.parquet'}'").fetchall()


@pytest.fixture(params=["generated", pytest.param("uk", marks=pytest.mark.slow)])
def folder(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The current folder, holding only od.parquet and geo.parquet."""
    if request.param == "uk":
        shutil.copyfile(shared_path("data", f"{UK}.parquet"), tmp_path / "od.parquet")
        shutil.copyfile(shared_path("data", f"{UK}_geo.parquet"), tmp_path / "geo.parquet")
    else:
        generated_files(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["geo.parquet", "od.parquet"]
    return tmp_path


def check_release(folder: Path, inputs: dict[str, str]) -> None:
    """out.duckdb holds od_private, which joins with the geography; its ledger row names the
    resolved file; the files are as they were; public.duckdb holds the release and geo."""
    od = str((folder / "od.parquet").resolve())
    with duckdb.connect(str(folder / "out.duckdb"), read_only=True) as con:
        ledger = con.execute("SELECT input_table, base_tables FROM inftda_releases").fetchall()
        assert ledger == [(od, [od])]
        cells, matched, total = con.execute(
            "SELECT count(*), count(g.msoa), sum(p.count) FROM od_private p "
            "LEFT JOIN 'geo.parquet' g ON g.msoa = p.o_msoa"
        ).fetchall()[0]
        assert cells > 0 and matched == cells  # every released origin is a geography MSOA
        true_total = con.execute("SELECT sum(count) FROM 'od.parquet'").fetchall()[0][0]
        assert total == true_total  # bounded DP: the total is public and kept
    assert {p.name: digest(p) for p in folder.glob("*.parquet")} == inputs
    with duckdb.connect(str(folder / "public.duckdb"), read_only=True) as con:
        tables = {r[0] for r in con.execute("SHOW TABLES").fetchall()}
        assert {"od_private", "od_private_levels", "geo", "inftda_releases"} <= tables


# ------------------------------------------------------------------------------- "Your own data"


def test_your_own_data_on_the_command_line(folder: Path) -> None:
    (shell,) = blocks(section("Your own data"), "sh")
    commands = inftda_commands(shell)
    assert [c[0] for c in commands] == ["release", "publish"]
    assert commands[0][1:3] == ["out.duckdb", "od.parquet"]
    inputs = {p.name: digest(p) for p in folder.glob("*.parquet")}
    for argv in commands:
        assert main(argv) == 0, argv
    check_release(folder, inputs)
    # then "Using it from DBeaver / the DuckDB CLI": the CLI's query on out.duckdb (in this
    # folder), the IDE's on public.duckdb (no file path needed there)
    clients = SQL_CLIENTS.read_text(encoding="utf-8").split("\n## Older DuckDB versions\n")[0]
    queries = [q for block in blocks(clients, "sh") for q in duckdb_cli_queries(block)]
    assert [file for file, _ in queries] == ["out.duckdb"]
    (ide_sql,) = blocks(clients, "sql")
    for file, sql in [*queries, ("public.duckdb", ide_sql)]:
        with duckdb.connect(file, read_only=True) as con:
            rows = con.execute(sql).fetchall()
        assert rows and all(isinstance(home, str) and n > 0 for home, _, n in rows), file


def test_your_own_data_in_python(folder: Path) -> None:
    (code,) = blocks(section("Your own data"), "python")
    assert len(code.strip().splitlines()) <= 10
    inputs = {p.name: digest(p) for p in folder.glob("*.parquet")}
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, "getting-started.md: Your own data", "exec"), {"__name__": "docs"})
    assert "commuters" in printed.getvalue()
    check_release(folder, inputs)


# ------------------------------------------------------------------------------- the rest


def test_every_other_command_runs_after_the_demo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    text = COMMAND_LINE.read_text(encoding="utf-8") + PUBLISHING.read_text(encoding="utf-8")
    commands = [argv for block in blocks(text, "sh") for argv in inftda_commands(block)]
    assert commands[0] == ["demo"]
    assert {c[0] for c in commands} >= {"plan", "release", "evaluate", "budget", "ledger"}
    assert "publish" in {c[0] for c in commands}
    for argv in commands:
        if argv == ["demo"]:
            argv = ["demo", "--scale", "0.01", "--quiet"]
        if argv[0] == "sql":  # the shell reads a script from its (non-terminal) standard input
            monkeypatch.setattr(
                sys, "stdin", io.StringIO("SELECT sum(count) FROM trips_private;\n")
            )
        assert main(argv) == 0, (argv, capsys.readouterr().err)
    assert (tmp_path / "errors.png").exists() and (tmp_path / "public.duckdb").exists()
    capsys.readouterr()
    # the error "Command line" shows, word for word
    (shown,) = [
        b for b in blocks(COMMAND_LINE.read_text(encoding="utf-8"), "text") if b.startswith("$ ")
    ]
    typed, error = shown.strip().splitlines()
    assert main(shlex.split(typed.removeprefix("$ "))[1:]) == 1
    assert capsys.readouterr().err.strip() == error


def test_count_of_counts_commands_run_on_the_example_tables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The command lines of "Count-of-counts histograms" (``docs/how-to/count-of-counts.md``),
    on the tables its Python example creates (in my.duckdb); the Python example itself runs as
    a doctest of the page."""
    monkeypatch.chdir(tmp_path)
    text = COUNT_OF_COUNTS.read_text(encoding="utf-8")
    (code,) = blocks(text, "python")
    (shell,) = [b for b in blocks(text, "text") if "inftda-sql" in b]
    namespace: dict[str, object] = {}
    with duckdb.connect("my.duckdb") as con:
        namespace["con"] = con
        for example in doctest.DocTestParser().get_examples(code):
            if "CREATE TABLE" in example.source:
                exec(example.source, namespace)
    commands = inftda_commands(re.sub(r"^\$ ", "", shell, flags=re.M))
    assert [c[0] for c in commands] == ["count-of-counts", "evaluate"]
    for argv in commands:
        assert main(argv) == 0, (argv, capsys.readouterr().err)
    assert "mean_emd" in capsys.readouterr().out
