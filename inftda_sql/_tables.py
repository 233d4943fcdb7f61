"""Small text and HTML tables for the objects users print in a terminal or a notebook."""

from __future__ import annotations

import html
from collections.abc import Sequence

__all__ = ["html_table", "text_table"]


def text_table(header: Sequence[str], rows: Sequence[Sequence[str]], *, left: int) -> list[str]:
    """Aligned lines: column ``left`` left-aligned, the others right-aligned (numbers)."""
    table = [tuple(header), *(tuple(r) for r in rows)]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    return [
        "  ".join(
            cell.ljust(w) if i == left else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in table
    ]


def html_table(header: Sequence[str], rows: Sequence[Sequence[str]], *, before: str = "") -> str:
    """An HTML table (cells escaped), preceded by ``before`` (already HTML)."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows
    )
    return f"{before}<table><tr>{head}</tr>{body}</table>"
