"""The files a view or relation reads (:func:`files_read`), which DuckDB's plan does not say,
and the data frames it scans.

:func:`.names.base_tables` lists the catalog tables a source scans, but a file read by a table
function (``FROM 'trips.parquet'``, ``read_parquet([...])``, ``read_csv(...)``) shows in the plan
as an operator only (``PARQUET_SCAN``, ``READ_CSV``), without its path. So a view over the
input's file, given as a domain, would pass the check that a domain is not the input. This
module reads the paths from the SQL itself: the source and every view it meets on the way are
parsed by DuckDB (``json_serialize_sql``) and walked; a replacement scan of a path and a file
reader with constant paths name their files, resolved as a file input's are
(:func:`.files.resolve_files`: absolute, links followed, globs expanded), and views met are
followed, their names bound in the view's own database and schema as DuckDB binds them. CTE
names shadow tables. A reader whose path is computed, a table function this walk does not know
(a macro, an extension's scan), or a view it cannot parse make the answer incomplete
(``complete`` False): the callers then assume the worst.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import duckdb

from ...._errors import InftdaError
from ....core.names import file_spelling
from ..sql import rows
from .files import resolve_files

__all__ = ["FILE_READERS", "FilesRead", "files_read", "in_memory", "reads_files"]

#: table functions that read the files named by their first argument
FILE_READERS = frozenset(
    {"read_parquet", "parquet_scan", "read_csv", "read_csv_auto", "read_json", "read_json_auto"}
    | {"read_ndjson", "read_ndjson_auto", "read_json_objects", "read_ndjson_objects"}
    | {"read_text", "read_blob"}
)
#: table functions that read no data of a file or table
_DATA_FREE = frozenset({"range", "generate_series", "unnest", "repeat", "glob"})
#: plan operators of data that lies in the process, not in a file (data frames, Arrow tables)
_IN_MEMORY = ("PANDAS_SCAN", "PYTHON_", "ARROW_SCAN")
#: table functions that scan a data frame or Arrow table held by the process; DuckDB names
#: each registered object by the alias of its scan, which relations made from it keep
_MEMORY_SCANS = ("pandas_scan", "arrow_scan", "python_")
#: the header DuckDB writes before a view's query (``duckdb_views().sql``)
_VIEW_HEADER = re.compile(
    r'^CREATE (?:TEMP |TEMPORARY )?VIEW (?:"(?:[^"]|"")*"|[^\s(]+)'
    r'(?:\s*\((?:[^()"]|"(?:[^"]|"")*")*\))? AS ',
    re.DOTALL,
)


@dataclass(frozen=True)
class FilesRead:
    """The files a source reads (absolute, sorted) and whether that list is known to be all;
    ``memory``: the data frames and Arrow tables of the process it scans, each named by the
    alias DuckDB gave its registration (a relation and the relations made from it share it,
    two registrations of one object do not)."""

    files: tuple[str, ...]
    complete: bool
    memory: tuple[str, ...] = ()


def reads_files(outside: tuple[str, ...]) -> bool:
    """Whether plan operators ``outside`` the catalog (see :func:`.names.base_tables`) may
    read files: any but the scans of data frames and Arrow tables held by the process.

    Example:
        >>> reads_files(("PARQUET_SCAN",)), reads_files(("PANDAS_SCAN", "PYTHON_ARROW_SCAN"))
        (True, False)
    """
    return any(not in_memory(op) for op in outside)


def in_memory(operator: str) -> bool:
    """Whether a plan operator ``outside`` the catalog scans a data frame or Arrow table held
    by the process (not a file).

    Example:
        >>> in_memory("PANDAS_SCAN"), in_memory("READ_CSV")
        (True, False)
    """
    return any(m in operator for m in _IN_MEMORY)


def files_read(con: duckdb.DuckDBPyConnection, source_sql: str) -> FilesRead:
    """The files ``SELECT * FROM source_sql`` reads, through views and relations (see the
    module docstring).

    Example:
        >>> import duckdb, tempfile, os
        >>> folder = tempfile.mkdtemp()
        >>> path = os.path.join(folder, "t.parquet")
        >>> con = duckdb.connect()
        >>> _ = con.execute(f"COPY (SELECT 1 AS a) TO '{path}' (FORMAT parquet)")
        >>> _ = con.execute(f"CREATE VIEW v AS SELECT * FROM '{path}'")
        >>> found = files_read(con, "v")
        >>> [os.path.basename(f) for f in found.files], found.complete
        (['t.parquet'], True)
    """
    from .names import find_object  # names imports this module

    files: set[str] = set()
    memory: set[str] = set()
    complete = True
    seen: set[tuple[str, str, str]] = set()
    todo: list[tuple[str, tuple[str, str] | None]] = [(f"SELECT * FROM {source_sql}", None)]
    while todo:
        query, where = todo.pop()
        tree = _parse(con, query)
        if tree is None:
            complete = False
            continue
        ctes = {name.lower() for name in _cte_names(tree)}
        for node in _nodes(tree):
            if node.get("type") == "BASE_TABLE":
                parts = tuple(
                    str(p)
                    for p in (node.get("catalog_name"), node.get("schema_name"), node["table_name"])
                    if p
                )
                if len(parts) == 1 and parts[0].lower() in ctes:
                    continue
                found = find_object(con, parts, where)
                if found is None:  # a replacement scan: a file's path, or a Python object
                    if file_spelling(parts[-1]) is not None or "." in parts[-1]:
                        complete &= _add(files, [parts[-1]])
                    continue
                ref, kind = found
                if kind == "view" and ref.folded not in seen:
                    seen.add(ref.folded)
                    body = _view_query(con, ref.database, ref.schema, ref.name)
                    if body is None:
                        complete = False
                    else:
                        todo.append((body, (ref.database, ref.schema)))
            elif node.get("type") == "TABLE_FUNCTION":
                function = node.get("function") or {}
                name = str(function.get("function_name", "")).lower()
                if name in FILE_READERS:
                    paths = _constant_paths(function.get("arguments") or [])
                    complete &= paths is not None and _add(files, paths)
                elif name.startswith(_MEMORY_SCANS):
                    if node.get("alias"):
                        memory.add(f"the in-memory data DuckDB scans as {node['alias']}")
                elif name not in _DATA_FREE:
                    complete = False
    return FilesRead(tuple(sorted(files)), complete, tuple(sorted(memory)))


def _add(files: set[str], paths: list[str]) -> bool:
    """Add the files ``paths`` name (resolved); False when one cannot be resolved."""
    for path in paths:
        try:
            files.update(resolve_files(path, role="a file read by a view").files)
        except InftdaError:
            return False
    return True


def _parse(con: duckdb.DuckDBPyConnection, query: str) -> dict[str, Any] | None:
    found = rows(con, "SELECT json_serialize_sql($q)", {"q": query})
    tree = json.loads(str(found[0][0])) if found else None
    return None if not isinstance(tree, dict) or tree.get("error") else tree


def _view_query(
    con: duckdb.DuckDBPyConnection, database: str, schema: str, name: str
) -> str | None:
    """The query of a view, from its definition (None when it cannot be told)."""
    found = rows(
        con,
        "SELECT sql FROM duckdb_views() WHERE database_name = $d AND schema_name = $s "
        "AND view_name = $n",
        {"d": database, "s": schema, "n": name},
    )
    if len(found) != 1 or found[0][0] is None:
        return None
    header = _VIEW_HEADER.match(str(found[0][0]))
    return None if header is None else str(found[0][0])[header.end() :].rstrip().rstrip(";")


def _nodes(tree: Any) -> Iterator[dict[str, Any]]:
    """Every object of a parsed statement, depth first."""
    stack = [tree]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            yield item
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _cte_names(tree: Any) -> Iterator[str]:
    for node in _nodes(tree):
        cte_map = node.get("cte_map")
        if isinstance(cte_map, dict):
            for entry in cte_map.get("map") or []:
                yield str(entry.get("key", ""))


def _constant_paths(arguments: list[dict[str, Any]]) -> list[str] | None:
    """The paths of a reader's first positional argument when they are constants (one string
    or a list of strings), else None."""
    first = next((a.get("expression") for a in arguments if not a.get("name")), None)
    if not isinstance(first, dict):
        return None
    single = _string(first)
    if single is not None:
        return [single]
    if first.get("class") == "FUNCTION" and first.get("function_name") == "list_value":
        items = [_string(a.get("expression") or {}) for a in first.get("arguments") or []]
        if items and all(i is not None for i in items):
            return [i for i in items if i is not None]
    return None


def _string(expression: dict[str, Any]) -> str | None:
    """A string constant's text (DuckDB 2's ``literal`` or 1's ``value``), else None."""
    if expression.get("class") != "CONSTANT":
        return None
    literal = expression.get("literal")
    if isinstance(literal, dict) and literal.get("kind") == "STRING":
        return str(literal.get("text"))
    value = expression.get("value")
    if isinstance(value, dict) and not value.get("is_null"):
        kind = (value.get("type") or {}).get("id")
        if kind == "VARCHAR" and isinstance(value.get("value"), str):
            return str(value["value"])
    return None
