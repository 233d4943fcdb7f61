"""Parquet and CSV files named by their path (:func:`resolve_files`): resolved to the sorted
absolute paths they name, each a budget key like ``schema.table``.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from pathlib import Path

from ...._errors import InftdaError, InputDataError
from ....core.names import (
    FILE_FORMATS,
    GLOB_CHARS,
    file_format,
    sql_spelling_hint,
)

_KIND = {"parquet": "parquet file", "csv": "CSV file"}


@dataclass(frozen=True)
class FileInput:
    """Files named by a path or glob: ``pattern`` absolute (folders resolved, the glob part as
    typed), ``files`` the absolute paths read (symbolic links followed, sorted), ``format``
    ``"parquet"`` or ``"csv"``."""

    pattern: str
    files: tuple[str, ...]
    format: str

    @property
    def kind(self) -> str:
        return _KIND[self.format]


def _absolute_pattern(text: str) -> str:
    """A glob made absolute: the folders before the first glob character resolved."""
    absolute = os.path.abspath(os.path.expanduser(text))
    parts = Path(absolute).parts
    fixed = next(i for i, part in enumerate(parts) if GLOB_CHARS & set(part))
    head = Path(*parts[:fixed]).resolve()
    return str(head.joinpath(*parts[fixed:]))


def resolve_files(
    name: str | os.PathLike[str],
    *,
    role: str,
    param: str | None = None,
    error: type[InftdaError] = InputDataError,
) -> FileInput:
    """The files a path or glob names, resolved (see :class:`FileInput`); a clear error when
    it names none, a folder, or a format this package does not read."""
    text = os.fspath(name)
    if "://" in text:
        raise error(
            f"{role} {text!r} is a URL; download the file first and name its local path",
            param=param,
        )
    if GLOB_CHARS & set(text):
        pattern = _absolute_pattern(text)
        found = sorted(
            {
                str(Path(f).resolve())
                for f in glob.glob(pattern, recursive=True)
                if Path(f).is_file()
            }
        )
        if not found:
            raise error(f"{role} {text!r}: no file matches {pattern!r}", param=param)
    else:
        path = Path(os.path.expanduser(text)).resolve()
        pattern = str(path)
        if path.is_dir():
            raise error(
                f"{role} {text!r} is a folder; name a file, or its files with a glob such as "
                f"{os.path.join(text, '*.parquet')!r}",
                param=param,
            )
        if not path.is_file():
            raise error(
                f"{role} {text!r}: no such file ({pattern!r}); "
                f"{sql_spelling_hint(text) or 'check the path, or name a table of the database'}",
                param=param,
            )
        found = [pattern]
    formats = (
        {file_format(f) for f in found} if file_format(pattern) is None else {file_format(pattern)}
    )
    if None in formats or len(formats) != 1:
        endings = ", ".join(sorted(FILE_FORMATS))
        raise error(
            f"{role} {text!r}: cannot tell one file format from the name"
            f"{'s of the files it matches' if len(found) > 1 else ''}; files ending in "
            f"{endings} (optionally .gz or .zst) are read directly, anything else: load it into "
            "a table first (CREATE TABLE t AS SELECT ...) and name the table",
            param=param,
        )
    (fmt,) = formats
    assert fmt is not None
    return FileInput(pattern, tuple(found), fmt)
