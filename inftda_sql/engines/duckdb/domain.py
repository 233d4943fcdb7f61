"""The public domain of each chain: validated, coded, and kept as a temporary code table.

One sorted ``SELECT`` of the domain (``sql/domain_paths.sql``) is fetched as Arrow and,
with a code column per depth added, registered back as the chain's code table.
Because rows are sorted by (parent path, value), the dense code of a depth-``d`` node is the
running count of rows where one of the first ``d`` columns changes, the children of a node are
one contiguous code range, and each node's parent is read off its first row. The domain is
nested (every value has one parent) exactly when the number of distinct values of each column
equals the number of nodes of its depth; the SQL query that names an offending value runs only
when that fails. Nothing here reads the private data.
"""

from __future__ import annotations

from collections.abc import Sequence

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..._errors import DomainError
from ...core.topdown import ChainTree
from . import compile as _compile
from .sql import arrow, rows

__all__ = ["build_chain"]


def _changes(table: pa.Table, depth: int) -> np.ndarray:
    """Boolean per row: does the path of depth ``depth`` differ from the previous row's?"""
    n = table.num_rows
    change = np.zeros(n, dtype=bool)
    change[:1] = True
    for col in table.columns[:depth]:
        values = col.combine_chunks()
        neq = pc.not_equal(values.slice(1), values.slice(0, n - 1))
        change[1:] |= neq.to_numpy(zero_copy_only=False)
    return change


def _has_repeats(first_values: pa.ChunkedArray, n_nodes: int) -> bool:
    """True if a value names two nodes of a depth (one value per node: its first row)."""
    values = first_values.combine_chunks()
    if pa.types.is_integer(values.type):
        arr = np.sort(values.to_numpy())
        return bool(np.any(arr[1:] == arr[:-1]))
    return bool(pc.count_distinct(values).as_py() != n_nodes)


def build_chain(
    con: duckdb.DuckDBPyConnection,
    names: _compile.TempNames,
    index: int,
    chain: Sequence[str],
    domain_sql: str,
    types: Sequence[str],
    role: str,
) -> ChainTree:
    """Validate and code one chain's domain; register its code table as ``names.codes(index)``."""
    try:
        paths = arrow(con, _compile.domain_paths(chain, domain_sql, types))
    except duckdb.ConversionException as exc:
        raise DomainError(
            f"the {role} has values that do not convert to the input's column types "
            f"({', '.join(f'{c} {t}' for c, t in zip(chain, types, strict=True))}): {exc}"
        ) from exc
    n = paths.num_rows
    if n == 0:
        raise DomainError(
            f"the {role} is empty; it must list every valid path of {', '.join(chain)}"
        )
    for col, values in zip(chain, paths.columns, strict=True):
        if values.null_count:
            raise DomainError(
                f"the {role} has {values.null_count} row(s) with NULL in {col!r}; every listed "
                "path must be complete"
            )
    distinct = _changes(paths, len(chain))
    if not distinct.all():  # the domain lists some paths twice
        paths = paths.filter(pa.array(distinct))
    codes: dict[str, np.ndarray] = {}
    parents: list[np.ndarray] = []
    previous: np.ndarray | None = None
    for d in range(1, len(chain) + 1):
        change = _changes(paths, d)
        code = np.cumsum(change, dtype=np.int64) - 1
        n_nodes = int(code[-1]) + 1
        if d > 1 and _has_repeats(paths.column(d - 1).filter(pa.array(change)), n_nodes):
            _nesting_error(con, paths, chain, d, role, index, names)
        parents.append(np.zeros(n_nodes, dtype=np.int64) if previous is None else previous[change])
        codes[_compile.depth_code(d)] = code
        previous = code
    table = paths
    for name, code in codes.items():
        table = table.append_column(name, pa.array(code))
    # Registered, not copied: DuckDB joins the Arrow table in place for the rest of the release
    # (the caller unregisters it).
    con.register(names.codes(index), table)
    return ChainTree.from_parents(parents)


def _nesting_error(
    con: duckdb.DuckDBPyConnection,
    paths: pa.Table,
    chain: Sequence[str],
    depth: int,
    role: str,
    index: int,
    names: _compile.TempNames,
) -> None:
    arrow_name = f"{names.codes(index)}_nesting"
    con.register(arrow_name, paths)
    try:
        bad = rows(con, _compile.nesting_check(arrow_name, chain[depth - 2], chain[depth - 1]))
    finally:
        con.unregister(arrow_name)
    value, p1, p2 = bad[0] if bad else ("?", "?", "?")
    raise DomainError(
        f"the {role} is not nested: {chain[depth - 1]}={value!r} is listed under "
        f"{chain[depth - 2]}={p1!r} and {chain[depth - 2]}={p2!r}; every value must have one "
        f"parent (use codes unique across the whole domain, e.g. prefix {chain[depth - 1]} with "
        f"its {chain[depth - 2]})"
    )
