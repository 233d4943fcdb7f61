"""CSV files DuckDB cannot parse, reported as the file, the line and the fix.

:func:`csv_error` turns DuckDB's ``CSV Error on Line`` (raised while a query reads the file)
into an :class:`InputDataError`; every query helper of :mod:`.sql` applies it (the check of a
file's fields the sniffer hides is :func:`.catalog.sources.check_csv_fields`).
"""

from __future__ import annotations

import re

from ..._errors import InputDataError

__all__ = ["csv_error"]


_CSV_LINE = re.compile(r"CSV Error on Line: (\d+)")
_CSV_FILE = re.compile(r"^\s*file = (.+)$", re.MULTILINE)
_CSV_FIELDS = re.compile(r"Expected Number of Columns: (\d+) Found: (\d+)")
_CSV_COLUMN = re.compile(r'converting column "(.+?)"\..*? to \'(.+?)\'')


def csv_error(exc: BaseException) -> InputDataError | None:
    """DuckDB's error for a line of a CSV file it cannot parse, as an InputDataError naming the
    file, the line, what is wrong and the fix (None for any other error). The line's content,
    which is private, is left out.

    Example:
        >>> import duckdb
        >>> exc = duckdb.InvalidInputException(
        ...     "Invalid Input Error: CSV Error on Line: 3\\nOriginal Line: a,b\\n"
        ...     "Expected Number of Columns: 3 Found: 2\\n\\n  file = /d/trips.csv\\n")
        >>> print(csv_error(exc))  # doctest: +NORMALIZE_WHITESPACE
        CSV file '/d/trips.csv': line 3 has 2 fields, but its header has 3; fix the file, or
        read it into a table or view with read_csv('/d/trips.csv', null_padding=true) (missing
        fields become NULL) and name that instead
    """
    text = str(exc)
    line = _CSV_LINE.search(text)
    if line is None:
        return None
    found = _CSV_FILE.search(text)
    path = found.group(1).strip() if found else "?"
    where = f"CSV file {path!r}: line {line.group(1)}"
    fields = _CSV_FIELDS.search(text)
    if fields:
        return InputDataError(
            f"{where} has {fields.group(2)} fields, but its header has {fields.group(1)}; fix "
            f"the file, or read it into a table or view with read_csv({path!r}, "
            "null_padding=true) (missing fields become NULL) and name that instead"
        )
    column = _CSV_COLUMN.search(text)
    if column:
        name, kind = column.groups()
        return InputDataError(
            f"{where}: column {name!r} holds a value that is not {kind}, the type DuckDB "
            f"guessed from the lines before; fix the file, or read it into a table or view with "
            f"read_csv({path!r}, types={{{name!r}: 'VARCHAR'}}) (or sample_size=-1) and name "
            "that instead"
        )
    lines = [part for part in text.splitlines()[2:3] if part.strip()]
    what = f" ({lines[0].strip()})" if lines and "Original Line" not in lines[0] else ""
    return InputDataError(
        f"{where} cannot be parsed{what}; fix the file, or read it into a table or view with "
        f"read_csv({path!r}, ...) and the options it needs, and name that instead"
    )
