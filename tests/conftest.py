from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import duckdb
import pytest

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
GOLDEN = Path(__file__).resolve().parent / "golden"
#: set to 1 to rewrite the golden SQL files from the current compiler (then review the diff)
UPDATE_GOLDEN = "INFTDA_UPDATE_GOLDEN"
_REGENERATED: list[str] = []


def shared_path(*parts: str) -> Path:
    """A file under ../shared, or skip the test with the reason it is missing."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} not found: these tests need ../shared beside the checkout")
    return path


@pytest.fixture
def con() -> Iterator[duckdb.DuckDBPyConnection]:
    connection = duckdb.connect()
    yield connection
    connection.close()


@pytest.fixture
def golden() -> Callable[[str, str], None]:
    """Compare SQL text with ``tests/golden/<name>``.

    Files change only when asked: with ``INFTDA_UPDATE_GOLDEN=1`` a differing or missing file
    is rewritten and listed at the end of the run, for review with ``git diff tests/golden``.
    """

    def check(name: str, text: str) -> None:
        path = GOLDEN / name
        old = path.read_text(encoding="utf-8") if path.exists() else None
        if os.environ.get(UPDATE_GOLDEN) == "1":
            if old != text:
                path.write_text(text, encoding="utf-8")
                _REGENERATED.append(str(path.relative_to(GOLDEN.parents[1])))
            return
        how = f"if the change is intended, rerun with {UPDATE_GOLDEN}=1 and review the diff"
        if old is None:
            pytest.fail(f"golden file {path} is missing; {how}")
        assert text == old, f"the compiled SQL differs from {path}; {how}"

    return check


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C as a terminal delivers it, whatever started pytest. A shell without job control
    (``cmd &`` in a script, ``nohup``) starts its children with SIGINT *ignored*; Python keeps
    that, and its children inherit it, so every test of what Ctrl-C does (tests/*/
    test_interrupts.py, test_ctrl_c.py and the CLI's exits with 130) would see nothing. The
    suite runs as from a terminal instead: Python's own handler, which children started by the
    tests reset to the default."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _REGENERATED:
        terminalreporter.section(f"golden SQL files rewritten ({UPDATE_GOLDEN}=1)")
        for path in sorted(set(_REGENERATED)):
            terminalreporter.write_line(f"rewritten: {path} (review: git diff {path})")
