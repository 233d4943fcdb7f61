"""The SQL shell of ``inftda-sql sql`` (cli/shell.py): statement ends, values, the loop."""

from __future__ import annotations

import io
from collections.abc import Iterator

import duckdb
import pytest

from inftda_sql.cli.shell import PROMPT, PROMPT_MORE, Shell, cell, complete, error_text
from inftda_sql.engines.duckdb.functions import register


@pytest.fixture
def shell() -> Iterator[Shell]:
    con = duckdb.connect()
    register(con)
    yield Shell(con, out=io.StringIO(), err=io.StringIO())
    con.close()


def _out(shell: Shell) -> str:
    return shell.out.getvalue()  # type: ignore[attr-defined,no-any-return]


def _err(shell: Shell) -> str:
    return shell.err.getvalue()  # type: ignore[attr-defined,no-any-return]


class Reader:
    """The lines of a session, recording the prompt each line answers."""

    def __init__(self, *lines: str, interrupt_at: int | None = None) -> None:
        self.lines = list(lines)
        self.prompts: list[str] = []
        self.interrupt_at = interrupt_at

    def __call__(self, prompt: str) -> str | None:
        self.prompts.append(prompt)
        if self.interrupt_at is not None and len(self.prompts) == self.interrupt_at:
            raise KeyboardInterrupt
        return self.lines.pop(0) if self.lines else None


@pytest.mark.parametrize(
    ("text", "done"),
    [
        ("SELECT 1;", True),
        ("SELECT 1", False),
        ("SELECT 1;  \n", True),
        ("SELECT ';'", False),
        ("SELECT 'it''s;'", False),
        ("SELECT 'it''s';", True),
        ('SELECT 1 AS "a;b"', False),
        ("SELECT 1; -- and a comment", True),
        ("SELECT 1 -- not yet;", False),
        ("SELECT 1 /* ; */", False),
        ("SELECT 1 /* open", False),
        ("SELECT 'open", False),
        ("", False),
    ],
)
def test_complete(text: str, done: bool) -> None:
    assert complete(text) is done


def test_cells_are_spelled_like_duckdb() -> None:
    assert [cell(v) for v in (None, False, -3, 0.5, [1, None], "x")] == [
        "NULL",
        "false",
        "-3",
        "0.5",
        "[1, NULL]",
        "x",
    ]


def test_results_are_tables_with_a_row_count(shell: Shell) -> None:
    assert shell.run("SELECT 1 AS n, 'a' AS s, intopt([-20, 5, 5], 10) AS x, NULL AS z;")
    assert _out(shell).splitlines() == [
        "n  s  x              z",
        "1  a  [0, 0, 10]  NULL",
        "(1 row)",
    ]


def test_statements_without_data_print_nothing(shell: Shell) -> None:
    assert shell.run("CREATE TABLE t AS SELECT range AS i FROM range(3); SET VARIABLE v = 1;")
    assert _out(shell) == ""
    assert shell.run("SELECT count(*) AS n FROM t WHERE i < getvariable('v') + 1;")
    assert _out(shell).splitlines()[-2:] == ["2", "(1 row)"]


def test_long_results_are_cut(shell: Shell) -> None:
    shell.max_rows = 3
    assert shell.run("SELECT range AS i FROM range(10);")
    assert _out(shell).splitlines() == [
        "i",
        "0",
        "1",
        "2",
        "(first 3 rows shown; --max-rows 0 shows all)",
    ]
    assert shell.run("SELECT 42 AS answer;")  # the connection is free for the next statement


def test_errors_read_like_duckdbs_own(shell: Shell) -> None:
    assert not shell.run("SELECT dp_discrete_gaussian(-1);")
    assert _err(shell).strip() == (
        "Invalid Input Error: dp_discrete_gaussian: sigma must be finite and >= 0 (0 adds no "
        "noise), got -1; compute it with dp_sigma(rho := ..., sensitivity := ...)"
    )
    with pytest.raises(duckdb.Error) as info:
        shell.con.execute("SELECT dp_sigma(0, 1)").fetchall()
    assert error_text(info.value) == (
        "Invalid Input Error: dp_sigma: rho must be positive, got 0.0; pass rho := 'inf' for "
        "exact (non-private) counts"
    )


def test_dot_commands(shell: Shell) -> None:
    assert shell.run(".functions")
    listing = _out(shell)
    assert "dp_sigma(rho DOUBLE, sensitivity DOUBLE) -> DOUBLE" in listing
    assert "intopt(noisy BIGINT[], target HUGEINT, descending BOOLEAN := false)" in listing
    assert shell.run(".help") and ".quit" in _out(shell)
    shell.con.execute("CREATE VIEW v AS SELECT 1 AS x").fetchall()
    assert shell.run(".tables")
    assert _out(shell).splitlines()[-3:] == ["schema  name  type", "main    v     VIEW", "(1 row)"]
    assert not shell.run(".nope")
    assert "unknown command .nope; try .help" in _err(shell)
    with pytest.raises(EOFError):
        shell.run(".quit")


def test_interactive_loop_goes_on_after_errors(shell: Shell) -> None:
    read = Reader(
        "SELECT 1",
        "  AS a;",
        "SELECT nope;",
        "",
        ".functions",
        "SELECT 2 AS b;",
        ".quit",
        "SELECT 3 AS never;",
    )
    assert shell.loop(read, interactive=True) == 0
    assert read.prompts == [PROMPT, PROMPT_MORE, PROMPT, PROMPT, PROMPT, PROMPT, PROMPT]
    out = _out(shell)
    assert "a\n1\n(1 row)" in out and "b\n2\n(1 row)" in out and "never" not in out
    assert 'Referenced column "nope" was not found' in _err(shell)


def test_ctrl_c_drops_the_statement_being_typed(shell: Shell) -> None:
    read = Reader("SELECT 'dropped'", "SELECT 'kept' AS k;", interrupt_at=2)
    assert shell.loop(read, interactive=True) == 0
    assert "kept" in _out(shell) and "dropped" not in _out(shell)


class _CutByCtrlC:
    """A connection whose queries DuckDB reports as cut by Ctrl-C."""

    description = None

    def execute(self, statement: object) -> None:
        raise RuntimeError("Query interrupted")


def test_ctrl_c_cancels_the_running_statement(shell: Shell) -> None:
    """DuckDB's report of a Ctrl-C is no error to report: an interactive session goes on, a
    script ends with KeyboardInterrupt (exit 130 on the command line)."""
    real = shell.con
    shell.con = _CutByCtrlC()  # type: ignore[assignment]
    assert shell.loop(Reader("SELECT 'cut';"), interactive=True) == 0
    assert _err(shell) == "interrupted\n"
    with pytest.raises(KeyboardInterrupt):
        shell.loop(Reader("SELECT 'cut';", "SELECT 'never';"), interactive=False)
    shell.con = real


def test_scripts_stop_at_the_first_error(shell: Shell) -> None:
    read = Reader(
        "SELECT 1 AS a;", "SELECT dp_sigma(rho := 0, sensitivity := 1);", "SELECT 2 AS b;"
    )
    assert shell.loop(read, interactive=False) == 1
    assert "(1 row)" in _out(shell) and "b\n2" not in _out(shell)
    assert "dp_sigma: rho must be positive" in _err(shell)


def test_a_last_statement_may_omit_its_semicolon(shell: Shell) -> None:
    assert shell.loop(Reader("SELECT 7 AS seven"), interactive=False) == 0
    assert "seven\n    7" in _out(shell) or "seven\n7" in _out(shell)
    assert shell.loop(Reader("SELECT nope"), interactive=False) == 1
