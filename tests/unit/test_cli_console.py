"""What the command line writes: one-line errors and warnings, tables, CSV and JSON."""

from __future__ import annotations

import ast
import json
import warnings
from pathlib import Path

import duckdb
import pytest

import inftda_sql.cli
from inftda_sql._errors import Arg, Func, InftdaWarning, OutputExistsError
from inftda_sql.cli import console
from inftda_sql.core.accounting import Budget


def test_error_lines_use_the_command_line_spelling() -> None:
    err = OutputExistsError(
        "'t' already exists;\n  pass ", Arg("overwrite", True), " or another ", Arg("output")
    )
    assert (
        console.error_line(err) == "error: 't' already exists; pass --overwrite or another --output"
    )
    # errors that are not the library's are shown as they are, on one line
    assert console.error_line(OSError("disk\nfull")) == "error: disk full"
    assert console.error_line(duckdb.IOException("overwrite=True")) == "error: overwrite=True"
    assert console.unexpected_line(RuntimeError("a\nb")) == (
        "error: RuntimeError: a b (unexpected: run again with --debug for the traceback and "
        "please report it)"
    )


def test_warning_lines() -> None:
    w = InftdaWarning("raise it with ", Func("set_budget", command="budget"))
    assert console.warning_line(w) == "warning: raise it with `inftda-sql budget`"
    assert console.warning_line(UserWarning("plain\ntext")) == "warning: plain text"


def test_library_warnings_become_one_line_each(capsys: pytest.CaptureFixture[str]) -> None:
    with console.warnings_as_lines():
        Budget.from_args(epsilon=50.0, delta=1e-8)
        warnings.warn("something else", UserWarning, stacklevel=1)
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("warning: --epsilon 50 (at --delta 1e-08) is above 20: ")
    assert err[1] == "warning: something else"


def test_emit_table_csv_json(capsys: pytest.CaptureFixture[str]) -> None:
    columns = ["level", "name", "error", "fdr"]
    rows = [[0, "root", 12345.0, None], [1, "region", 1.5, float("nan")]]
    console.emit(columns, rows, "table")
    assert capsys.readouterr().out.splitlines() == [
        "level  name     error  fdr",
        "    0  root    12,345",
        "    1  region     1.5",
    ]
    console.emit(columns, rows, "csv")
    assert capsys.readouterr().out.splitlines() == [
        "level,name,error,fdr",
        "0,root,12345.0,",
        "1,region,1.5,nan",
    ]
    console.emit(columns, rows[:1], "json")
    assert json.loads(capsys.readouterr().out) == [
        {"level": 0, "name": "root", "error": 12345.0, "fdr": None}
    ]


def test_level_names_for_the_progress_bar() -> None:
    assert console.level_names([["o_r", "o_m"], ["d_r", "d_m"]], "destination") == [
        "d_r",
        "o_r x d_r",
        "o_r x d_m",
        "o_m x d_m",
    ]
    assert console.level_names(["a"], "destination") == []  # the release explains the error


def test_the_cli_rewrites_no_message_text() -> None:
    """Flags come from the errors' parts: no module of the CLI imports ``re``."""
    folder = Path(inftda_sql.cli.__file__).parent
    modules = sorted(folder.glob("*.py"))
    assert {m.name for m in modules} >= {"__init__.py", "parse.py", "commands.py", "console.py"}
    for module in modules:
        tree = ast.parse(module.read_text(encoding="utf-8"))
        imported = {
            alias.name.split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, ast.Import)
            for alias in node.names
        } | {
            (node.module or "").split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and not node.level
        }
        assert "re" not in imported, module.name
        assert "importlib" not in imported, module.name
