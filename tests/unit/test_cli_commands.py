"""Commands that need an optional dependency say so before doing any work."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from inftda_sql.cli import main


@pytest.mark.parametrize("flag", ["--plot", "--zoom"])
def test_plots_without_matplotlib_name_the_install_command(
    flag: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import fails
    db = tmp_path / "none.duckdb"  # never opened: the check comes first
    code = main(["evaluate", str(db), "t", "t_private", flag, str(tmp_path / "x.png")])
    out, err = capsys.readouterr()
    assert (code, out) == (1, "")
    assert err == f"error: evaluate {flag} needs matplotlib: pip install 'inftda-sql[plot]'\n"


def test_a_missing_database_file_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["ledger", str(tmp_path / "nope.duckdb")])
    assert code == 1
    assert capsys.readouterr().err == (
        f"error: database file {str(tmp_path / 'nope.duckdb')!r} does not exist; check the path "
        "(or run `inftda-sql demo` to create demo.duckdb)\n"
    )


def test_the_commands_run_sql_only_from_the_templates() -> None:
    """SQL text lives in sql/*.sql (the demo's in sql/demo.sql): no command calls
    ``execute``/``sql``/``query`` on a connection with a string of its own (the shell runs the
    user's statements)."""
    import ast

    import inftda_sql.cli

    folder = Path(inftda_sql.cli.__file__).parent
    for module in sorted(set(folder.glob("*.py")) - {folder / "shell.py"}):
        tree = ast.parse(module.read_text(encoding="utf-8"))
        calls = [
            node.func.attr
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in {"execute", "sql", "query", "executemany"}
        ]
        assert calls == [], module.name
