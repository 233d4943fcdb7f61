"""Every code example of the documentation site (``docs/**/*.md``) runs as written.

* ``>>>`` examples are doctests: pytest collects every ``*.md`` under ``docs/`` (``addopts``'
  ``--doctest-glob``), so they run with the rest of the suite.
* The other ``python`` blocks of a page run in order, in one namespace, in a folder holding what
  the pages start from: ``demo.duckdb`` (``inftda-sql demo --scale 0.01``) and the
  ``od.parquet``/``geo.parquet`` pair of "Your own data" (generated, of the UK census' shape).
* The ``inftda-sql`` lines of its ``sh`` blocks run there too, in page order (``inftda-sql demo``
  at ``--scale 0.01``; ``inftda-sql sql`` with a one-line script on stdin). Other programs'
  lines (``pip``, ``duckdb``, ``spark-submit``) are not run here.
* A block preceded by ``<!-- docs-test: fresh folder -->`` runs in a new folder holding only the
  two parquet files; one preceded by ``<!-- docs-test: skip (REASON) -->`` is not run, and the
  reason must be given (a test checks that every skip has one).
"""

from __future__ import annotations

import contextlib
import io
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from inftda_sql.cli import main
from tests.system.test_readme import command_lines, generated_files

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
MARKER = re.compile(r"<!-- docs-test: (skip \((?P<reason>[^)]+)\)|fresh folder) -->\n$")


@dataclass(frozen=True)
class Block:
    language: str
    body: str
    line: int
    skip: str | None  # the reason, when the block is not run
    fresh: bool


def page_blocks(page: Path) -> list[Block]:
    """The fenced blocks of a page, in order, with the marker of the line before each."""
    text = page.read_text(encoding="utf-8")
    out = []
    for m in re.finditer(r"^( *)```(\w*)[^\n]*\n(.*?)^\1```", text, flags=re.S | re.M):
        indent, language, body = m.groups()
        body = re.sub(rf"^{indent}", "", body, flags=re.M)
        before = text[: m.start()]
        last_line = before[before.rfind("\n", 0, len(before) - 1) + 1 :]
        marker = MARKER.search(last_line)
        skip = marker.group("reason") if marker and marker.group("reason") else None
        fresh = marker is not None and marker.group(1) == "fresh folder"
        out.append(Block(language, body, text.count("\n", 0, m.start()) + 1, skip, fresh))
    return out


def runnable(block: Block) -> bool:
    if block.skip is not None:
        return False
    if block.language == "python":
        return not block.body.lstrip().startswith(">>>")
    if block.language == "sh":
        return any(argv[0] == "inftda-sql" for argv in command_lines(block.body))
    return False


PAGES = sorted(p for p in DOCS.rglob("*.md") if any(runnable(b) for b in page_blocks(p)))


def test_the_pages_are_found() -> None:
    names = {str(p.relative_to(DOCS)) for p in PAGES}
    assert {"getting-started.md", "how-to/od-trees.md", "mechanisms/index.md"} <= names
    for page in DOCS.rglob("*.md"):
        for block in page_blocks(page):
            assert block.skip is None or len(block.skip) > 10, (page, block.line)
            if block.language == "python" and block.skip is None and not runnable(block):
                assert block.body.lstrip().startswith(">>>")


@pytest.fixture(scope="module")
def start(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding demo.duckdb (scale 0.01), od.parquet and geo.parquet."""
    folder = tmp_path_factory.mktemp("docs_start")
    generated_files(folder)
    with contextlib.redirect_stdout(io.StringIO()):
        assert (
            main(["demo", "--db", str(folder / "demo.duckdb"), "--scale", "0.01", "--quiet"]) == 0
        )
    return folder


def fresh_folder(tmp_path: Path, start: Path) -> Path:
    folder = tmp_path / f"fresh{len(list(tmp_path.glob('fresh*')))}"
    folder.mkdir()
    for name in ("od.parquet", "geo.parquet"):
        shutil.copyfile(start / name, folder / name)
    return folder


def run_shell(block: Block, page: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for argv in command_lines(block.body):
        if argv[0] != "inftda-sql":
            continue
        args = argv[1:]
        if args == ["demo"]:
            args = ["demo", "--scale", "0.01", "--quiet"]
        if args[0] == "sql":  # the shell reads a script from its (non-terminal) stdin
            monkeypatch.setattr(sys, "stdin", io.StringIO("SELECT 1;\n"))
        with contextlib.redirect_stdout(io.StringIO()):
            code = main(args)
        assert code == 0, f"{page}:{block.line}: inftda-sql {' '.join(args)} exited {code}"


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(DOCS)) for p in PAGES])
def test_page_examples_run(
    page: Path, start: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "work"
    shutil.copytree(start, work)
    monkeypatch.chdir(work)
    name = str(page.relative_to(DOCS))
    namespace: dict[str, object] = {"__name__": "docs"}
    for block in filter(runnable, page_blocks(page)):
        if block.fresh:
            monkeypatch.chdir(fresh_folder(tmp_path, start))
            namespace = {"__name__": "docs"}
        if block.language == "sh":
            run_shell(block, name, monkeypatch)
            continue
        code = compile(block.body, f"docs/{name}:{block.line}", "exec")
        with contextlib.redirect_stdout(io.StringIO()):
            exec(code, namespace)


def test_the_doctests_of_every_page_are_collected() -> None:
    """The ``>>>`` examples run because pytest collects docs/ with a ``*.md`` doctest glob."""
    import fnmatch
    import tomllib

    ini = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]
    options = ini["ini_options"]
    assert "docs" in options["testpaths"] and "README.md" in options["testpaths"]
    globs = [a.split("=", 1)[1] for a in options["addopts"] if a.startswith("--doctest-glob=")]
    with_doctests = [p for p in DOCS.rglob("*.md") if ">>> " in p.read_text(encoding="utf-8")]
    assert len(with_doctests) >= 8
    for page in [*with_doctests, ROOT / "README.md"]:
        assert any(fnmatch.fnmatch(page.name, g) for g in globs), page
