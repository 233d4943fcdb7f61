"""How users spell tables and files: engine-free, so the request, the command line and every
engine read a name the same way (a table name's dotted parts, whether a string names a file,
the table name a file's release gets by default)."""

from __future__ import annotations

import os
import re
from collections.abc import Hashable, Mapping

__all__ = [
    "FILE_FORMATS",
    "GLOB_CHARS",
    "file_format",
    "file_spelling",
    "file_stem",
    "is_file_key",
    "key_identity",
    "split_name",
    "sql_spelling_hint",
]

#: file name endings read here, and DuckDB's reader of each (compressed: ``.gz``, ``.zst``)
FILE_FORMATS: Mapping[str, str] = {".parquet": "parquet", ".csv": "csv", ".tsv": "csv"}
_COMPRESSIONS = (".gz", ".zst")
GLOB_CHARS = frozenset("*?[")


def split_name(text: str) -> tuple[str, ...]:
    """The dot-separated parts of a name; double quotes keep dots and quotes (``""``) inside.

    Raises ValueError for an empty part or an unclosed quote.

    Example:
        >>> split_name('"temp".main."my.table"'), split_name("Main.Trips")
        (('temp', 'main', 'my.table'), ('Main', 'Trips'))
    """
    parts: list[str] = []
    current: list[str] = []
    quoted = False
    i = 0
    while i < len(text):
        ch = text[i]
        if quoted:
            if ch == '"' and text[i + 1 : i + 2] == '"':
                current.append('"')
                i += 1
            elif ch == '"':
                quoted = False
            else:
                current.append(ch)
        elif ch == '"':
            quoted = True
        elif ch == ".":
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
        i += 1
    parts.append("".join(current))
    if quoted or not all(parts):
        raise ValueError(f"not a table name: {text!r}")
    return tuple(parts)


def file_format(name: str) -> str | None:
    """The format a file name's ending says, or None."""
    lower = name.lower()
    for compression in _COMPRESSIONS:
        lower = lower.removesuffix(compression)
    return next((f for ext, f in FILE_FORMATS.items() if lower.endswith(ext)), None)


def file_spelling(obj: object) -> str | None:
    """The path ``obj`` names when it names a file, else None (a table name, a relation...).

    A ``pathlib.Path`` (any ``os.PathLike``) always names a file; a string does when it has a
    path separator or a glob character, or ends in ``.parquet``, ``.csv`` or ``.tsv`` (optionally
    ``.gz``/``.zst``), outside double quotes: ``s."csv"`` is the table ``csv`` of schema ``s``.

    Example:
        >>> [file_spelling(x) for x in ("od.parquet", "data/*.csv", "trips", 'main."x.csv"')]
        ['od.parquet', 'data/*.csv', None, None]
    """
    if isinstance(obj, os.PathLike):
        text = os.fspath(obj)
        return text if isinstance(text, str) else None
    if not isinstance(obj, str) or not obj or '"' in obj:
        return None
    if any(ch in obj for ch in "/\\") or GLOB_CHARS & set(obj) or file_format(obj):
        return obj
    return None


def sql_spelling_hint(name: object) -> str | None:
    """How to pass a source written as SQL (a path in quotes, a reader call), which names no
    table or file; None for any other name.

    Example:
        >>> sql_spelling_hint("'od.parquet'")
        "write the path without SQL quotes: 'od.parquet'"
        >>> print(sql_spelling_hint("read_parquet('od.parquet')").split(",")[0])
        pass the path itself ('od.parquet')
        >>> sql_spelling_hint("trips") is None
        True
    """
    if not isinstance(name, str):
        return None
    inner = name.strip()
    if len(inner) > 1 and inner[0] == inner[-1] == "'":
        return f"write the path without SQL quotes: {inner[1:-1]!r}"
    call = inner.find("(")
    if call > 0 and inner.endswith(")") and inner[:call].strip().lower().startswith("read_"):
        first = inner[call + 1 : -1].split(",")[0].strip()
        path = first[1:-1] if len(first) > 1 and first[0] == first[-1] == "'" else first
        return f'pass the path itself ({path!r}), or a relation: con.sql("SELECT * FROM {inner}")'
    return None


def is_file_key(key: str) -> bool:
    """Whether a budget key (or a ledger's input) is a file's absolute path, not a table."""
    return os.path.isabs(key)


def key_identity(key: str) -> Hashable:
    """What a budget key or a source's read stands for, to compare two of them: a local file's
    device and inode (so a hard link, which no path resolution reveals, is the same file as
    its other names), else the key case-folded (a table, a remote file's URI, a file that no
    longer exists).

    Example:
        >>> import os, tempfile
        >>> folder = tempfile.mkdtemp()
        >>> a, b = os.path.join(folder, "a.csv"), os.path.join(folder, "b.csv")
        >>> from pathlib import Path
        >>> _ = Path(a).write_text("x"); os.link(a, b)
        >>> key_identity(a) == key_identity(b), key_identity("main.T") == key_identity("MAIN.t")
        (True, True)
    """
    if is_file_key(key):
        try:
            found = os.stat(key)
        except OSError:
            return key.lower()
        return ("file", found.st_dev, found.st_ino)
    return key.lower()


def file_stem(text: str) -> str:
    """A table name made of a file's name: no folder, no endings, no glob characters, only
    letters, digits and underscores (the default output of a release of the file).

    Example:
        >>> file_stem("/data/od.parquet"), file_stem("flows_2021_*.csv.gz"), file_stem("2021.csv")
        ('od', 'flows_2021', 't_2021')
    """
    name = re.split(r"[/\\]", text.rstrip("/\\"))[-1]
    for compression in _COMPRESSIONS:
        if name.lower().endswith(compression):
            name = name[: -len(compression)]
    name = name.rsplit(".", 1)[0] if "." in name else name
    stem = re.sub(r"[^0-9A-Za-z_]+", "_", name).strip("_") or "input"
    return f"t_{stem}" if stem[0].isdigit() else stem
