"""MkDocs hooks of the site (mkdocs.yml ``hooks:``).

* The benchmark figures stay where the benchmarks write them (``benchmarks/paper/*.png``); the
  build adds them to the site as ``benchmarks/<name>.png`` instead of keeping copies in docs/.
* ``reference/index.md`` lists every name of ``inftda_sql.__all__``: its ``::: name`` lines are
  generated here from the package's own table of homes, so the reference never misses a name
  and holds no hand-kept signature.
* Doctest output in a docstring (``[13.2, 13.2]``, ``x["levels"][0]``) reads as Markdown
  reference links to mkdocs-autorefs; a target that is not a Python name is not a reference,
  so its "could not find cross-reference target" warning is dropped (any other stays, and
  fails the strict build).
* :class:`ExampleSections` (a griffe extension, mkdocs.yml ``extensions:``) reads a docstring's
  ``Example:`` section as Google style's ``Examples:``, so its ``>>>`` lines render as code.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import griffe
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ROOT / "benchmarks" / "paper"


def on_files(files: Files, config: Any) -> Files:
    for png in sorted(FIGURES.glob("*.png")):
        files.append(File.generated(config, f"benchmarks/{png.name}", abs_src_path=str(png)))
    return files


def reference_directives() -> str:
    """One ``::: module.name`` block per public name, grouped by the module that defines it."""
    import inftda_sql

    lines = []
    for name in sorted(inftda_sql.__all__, key=str.lower):
        if name == "__version__":
            continue
        module = "inftda_sql" + inftda_sql._HOME[name]
        lines.append(f"::: {module}.{name}\n    options:\n        heading: {name}\n")
    return "\n".join(lines)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    if page.file.src_uri == "reference/index.md":
        return markdown.replace("<!-- reference -->", reference_directives())
    return markdown


class _NotAReference(logging.Filter):
    """Drops autorefs' warning about a "target" that is no dotted Python name (doctest output)."""

    TARGET = re.compile(r"Could not find cross-reference target '(?P<target>[^']*)'")
    NAME = re.compile(r"[A-Za-z_][\w.]*")

    def filter(self, record: logging.LogRecord) -> bool:
        found = self.TARGET.search(record.getMessage())
        return found is None or self.NAME.fullmatch(found.group("target")) is not None


def on_pre_build(config: Any) -> None:
    # on the handlers (the strict build's warning counter among them): a filter on a logger
    # would not see the records of its child loggers
    for handler in logging.getLogger("mkdocs").handlers:
        if not any(isinstance(f, _NotAReference) for f in handler.filters):
            handler.addFilter(_NotAReference())


class ExampleSections(griffe.Extension):
    """``Example:`` (the package's spelling) is read as ``Examples:`` (Google style's)."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = re.sub(
                r"^(\s*)Example:$", r"\1Examples:", obj.docstring.value, flags=re.M
            )
