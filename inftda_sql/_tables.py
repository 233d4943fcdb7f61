"""The one table renderer: plain text for terminals, HTML for notebooks.

Every table the package prints goes through :func:`text_table` (Release, Plan, Accounting,
Ledger and the command line's tables) and :func:`html_table` (their notebook views). A column
is a header, or a :class:`Column` saying how to align, pad and cut it; cells that are not
strings are written by :func:`cell_text`.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = ["Column", "cell_text", "html_table", "text_table"]


@dataclass(frozen=True)
class Column:
    """How one column of a text table is laid out.

    Attributes:
        header: the column's title.
        align: ``"<"`` left, ``">"`` right, or ``"auto"``: right when every value of the
            column is a number (or None), left otherwise.
        width: the column is at least this wide.
        cut: cells longer than this are cut to it.
        sep: the text before this column (None: the table's ``sep``).
    """

    header: str
    align: Literal["<", ">", "auto"] = "auto"
    width: int = 0
    cut: int | None = None
    sep: str | None = None


def cell_text(value: object) -> str:
    """A value as a table shows it: None and NaN empty, bools yes/no, ints with thousands
    separators, floats to 4 significant digits (large whole numbers in full).

    Example:
        >>> [cell_text(v) for v in (None, True, 12345, 0.123456, 62410000.0, "a")]
        ['', 'yes', '12,345', '0.1235', '62,410,000', 'a']
    """
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        if value.is_integer() and abs(value) >= 1e4:
            return f"{value:,.0f}"
        return f"{value:.4g}"
    return str(value)


def _column(c: str | Column, i: int, left: int | None) -> Column:
    if isinstance(c, Column):
        return c
    if left is None:
        return Column(c)
    return Column(c, align="<" if i == left else ">")


def text_table(
    columns: Sequence[str | Column],
    rows: Sequence[Sequence[object]],
    *,
    left: int | None = None,
    sep: str = "  ",
    indent: str = "",
) -> list[str]:
    """The lines of an aligned plain-text table, header first, trailing spaces stripped.

    Args:
        columns: headers, or :class:`Column` layouts.
        rows: the cells; strings are shown as they are, other values by :func:`cell_text`.
        left: for plain headers, the one column aligned left (the others right); without it
            plain headers align ``"auto"``.
        sep: the text between columns.
        indent: the text before every line.

    Example:
        >>> print("\\n".join(text_table(["name", "n"], [["a", 1], ["bb", 12345]])))
        name       n
        a          1
        bb    12,345
        >>> print("\\n".join(text_table(["level", "sigma"], [["region", "2"]], left=0)))
        level   sigma
        region      2
    """
    cols = [_column(c, i, left) for i, c in enumerate(columns)]
    cells = [[v if isinstance(v, str) else cell_text(v) for v in r] for r in rows]
    for i, col in enumerate(cols):
        if col.cut is not None:
            for r in cells:
                r[i] = r[i][: col.cut]
    table = [[c.header for c in cols], *cells]
    widths = [max(c.width, *(len(r[i]) for r in table)) for i, c in enumerate(cols)]
    right = [
        c.align == ">"
        or (
            c.align == "auto"
            and bool(rows)
            and all(isinstance(r[i], (int, float)) or r[i] is None for r in rows)
        )
        for i, c in enumerate(cols)
    ]
    lines = []
    for r in table:
        parts = []
        for i, (cell, col) in enumerate(zip(r, cols, strict=True)):
            if i:
                parts.append(sep if col.sep is None else col.sep)
            parts.append(cell.rjust(widths[i]) if right[i] else cell.ljust(widths[i]))
        lines.append((indent + "".join(parts)).rstrip())
    return lines


def html_table(
    columns: Sequence[str | Column], rows: Sequence[Sequence[object]], *, before: str = ""
) -> str:
    """An HTML table (cells escaped), preceded by ``before`` (already HTML).

    Example:
        >>> html_table(["a"], [["<b>"]])
        '<table><tr><th>a</th></tr><tr><td>&lt;b&gt;</td></tr></table>'
    """
    head = "".join(
        f"<th>{html.escape(c.header if isinstance(c, Column) else c)}</th>" for c in columns
    )
    body = "".join(
        "<tr>"
        + "".join(f"<td>{html.escape(v if isinstance(v, str) else cell_text(v))}</td>" for v in r)
        + "</tr>"
        for r in rows
    )
    return f"{before}<table><tr>{head}</tr>{body}</table>"
