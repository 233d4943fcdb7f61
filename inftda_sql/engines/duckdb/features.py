"""The stages of a feature release (CBDP) on DuckDB: domain, the one scan, the write.

* :func:`resolve` checks the input holds the leaf's columns and resolves every domain table.
* :func:`code_domain` fetches each domain table's feature columns (``sql/features.sql``, the
  leaf columns cast to the input's types), codes them with
  :func:`~inftda_sql.core.features.code_lattice` (engine-free: it checks that every feature is a
  coarsening of the leaf and names a violating cell) and registers one code table per domain
  table: its feature columns and, per query, the code of its sub-cell.
* :func:`scan` is the ONE pass over the private input: the input's leaf columns joined to the
  code tables and every query counted with ``GROUPING SETS``; the checks (leaf values missing
  from the domain, NULLs, bad counts) run on its result before any noise.
* :func:`write` writes the released leaves with every feature column, the features view and the
  ledger row in one transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..._errors import DomainError, InputDataError, InternalError
from ...core.accounting import Budget
from ...core.arrays import I64
from ...core.features import FeatureSpec, Lattice, code_lattice
from ...core.rng import RandomSource
from ..base import Scan
from . import compile as _compile
from .catalog import Resolved, Source, Target, is_wide_number, join_type, type_family
from .ledger import (
    ReleaseRecord,
)
from .scan import COUNT_LIMIT, check_counts, check_unit
from .sql import arrow, rows, scalar
from .write import record_release

__all__ = ["code_domain", "input_leaf_columns", "scan", "write"]


def input_leaf_columns(spec: FeatureSpec, inp: Source) -> dict[str, str]:
    """Lower-case leaf column -> its stored name in the input; a clear error if missing."""
    return {
        c.lower(): inp.column(c, f"leaf column of feature {spec.leaf.name!r}")
        for c in spec.leaf.columns
    }


def _check_types(spec: FeatureSpec, inp: Source, domains: Sequence[Source]) -> None:
    leaf = {c.lower() for c in spec.leaf.columns}
    for dom in domains:
        for col in leaf:
            if col in dom.columns and type_family(dom.columns[col]) != type_family(
                inp.columns[col]
            ):
                name = inp.names[col]
                raise DomainError(
                    f"column {name!r} is {inp.columns[col]} in the input but "
                    f"{dom.columns[col]} in {dom.description}; cast one of them in a view so "
                    "both have the same type"
                )


def code_domain(
    con: duckdb.DuckDBPyConnection,
    names: _compile.TempNames,
    spec: FeatureSpec,
    inp: Source,
    domains: Sequence[Source],
) -> Lattice:
    """Fetch, check and code the public domain; register a code table per domain table."""
    _check_types(spec, inp, domains)
    wanted = {c.lower() for c in spec.columns}
    types = {
        c.lower(): join_type(inp.columns[c.lower()])
        for c in spec.leaf.columns
        if c.lower() in inp.columns
    }
    tables = []
    for dom in domains:
        cols = [stored for key, stored in dom.names.items() if key in wanted]
        if not cols:
            tables.append(pa.table({}))
            continue
        try:
            tables.append(arrow(con, _compile.feature_part(cols, types, dom.sql)))
        except duckdb.ConversionException as exc:
            raise DomainError(
                f"{dom.description} has leaf values that do not convert to the input's column "
                f"types: {exc}"
            ) from exc
    lattice = code_lattice(spec, tables, [d.description for d in domains])
    for t, part in enumerate(lattice.parts):
        table = part.rows
        for q in range(len(part.codes)):
            table = table.append_column(_compile.query_code(q), pa.array(part.row_codes(q)))
        con.register(names.part(t), table)
    return lattice


def scan(
    con: duckdb.DuckDBPyConnection,
    names: _compile.TempNames,
    lattice: Lattice,
    inp: Source,
    *,
    count: str | None,
    count_is_integer: bool,
    privacy_unit: str | None,
    contribution: int,
    distinct: bool,
    source: RandomSource,
) -> tuple[Scan, list[I64]]:
    """Count every query's cells in one scan (module docstring); the true counts are dense
    arrays, one per query, zeros included. The checks of the hierarchy scan (counts NULL,
    negative, not whole, beyond int64 or 2**60) run on the leaf set before any noise."""
    spec = lattice.spec
    leaf_cols = input_leaf_columns(spec, inp)
    scan_sql, params = inp.sql, None
    unit: str | None = None
    if privacy_unit is not None:
        unit = check_unit(con, inp, privacy_unit, list(leaf_cols.values()), count, "leaf column")
        salt = source.words(4).tobytes().hex()  # 256-bit secret for the random choice
        scan_sql = _compile.bound_units(
            list(leaf_cols.values()), inp.sql, unit, distinct=distinct, m=contribution
        )
        params = {"salt": salt}
    stored_count = count and inp.column(count, "count")
    wide = count is not None and is_wide_number(inp.columns[count.lower()])
    sql = _compile.feature_counts(
        names,
        lattice,
        scan_sql,
        leaf_cols,
        stored_count,
        count_is_integer,
        bounded=privacy_unit is not None,
        wide=wide,
    )
    found = arrow(con, sql, params)
    sets = found.column("__set").to_numpy()
    leaf = lattice.leaf
    in_leaf = pa.array(sets == _compile.feature_set_mask(lattice, leaf))
    leaf_rows = found.filter(in_leaf)
    if count is not None:
        nulls, negative, not_whole, beyond = (
            int(pc.sum(leaf_rows.column(c)).as_py() or 0)
            for c in ("__nulls", "__neg", "__frac", "__big")
        )
        big_cells = int(pc.sum(pc.greater(leaf_rows.column("__n"), COUNT_LIMIT)).as_py() or 0)
        check_counts(count, inp, nulls, negative, not_whole, beyond, big_cells)
    if leaf_rows.column(f"__k{leaf}").null_count:
        _unmatched(con, names, lattice, scan_sql, leaf_cols, params)
    n = found.column("__n").to_numpy(zero_copy_only=False)
    counts: list[I64] = []
    for q, size in enumerate(lattice.sizes):
        mine = sets == _compile.feature_set_mask(lattice, q)
        keys = np.asarray(found.column(f"__k{q}").to_numpy(zero_copy_only=False)[mine])
        dense = np.zeros(size, dtype=np.int64)
        dense[keys.astype(np.int64)] = np.asarray(n[mine]).astype(np.int64)
        counts.append(dense)
    total = int(counts[leaf].sum())
    if total > COUNT_LIMIT:
        raise InputDataError(
            f"{inp.description}: the records add up to more than 2**60; count in larger units "
            "or split the input"
        )
    for q, c in enumerate(counts):
        if int(c.sum()) != total:
            raise InternalError(f"query {lattice.queries[q].name!r} does not sum to the leaves")
    diagnostics: dict[str, Any] = {}
    if privacy_unit is not None:
        rows_in = int(scalar(con, _compile.row_count(inp.sql)))
        diagnostics = {
            "privacy_unit": privacy_unit,
            "contribution_bound": contribution,
            "distinct": distinct,
            "rows_in": rows_in,
            "rows_kept": total,
            "rows_dropped": rows_in - total,
        }
    return Scan(total=total, diagnostics=diagnostics, privacy_unit=unit), counts


def _unmatched(
    con: duckdb.DuckDBPyConnection,
    names: _compile.TempNames,
    lattice: Lattice,
    input_sql: str,
    leaf_cols: dict[str, str],
    params: dict[str, str] | None,
) -> None:
    """Raise the error naming an input leaf the domain does not list (error path only)."""
    found = rows(con, _compile.feature_unmatched(names, lattice, input_sql, leaf_cols), params)
    if not found:
        raise InternalError("input rows matched no domain cell, but none was found again")
    *values, n = found[0]
    shown = ", ".join(f"{c}={v!r}" for c, v in zip(leaf_cols.values(), values, strict=True))
    if any(v is None for v in values):
        raise InputDataError(
            f"the input has NULL leaf values, e.g. ({shown}); every record needs a value in "
            f"every leaf column ({', '.join(leaf_cols.values())}): filter or fill them first"
        )
    raise DomainError(
        f"{n} leaf cell(s) of the input are not in the domain, e.g. ({shown}); add them to "
        "the public domain or fix the input"
    )


def write(
    con: duckdb.DuckDBPyConnection,
    names: _compile.TempNames,
    lattice: Lattice,
    leaves: I64,
    counts: I64,
    *,
    output: Target,
    view: Target | None,
    overwrite: bool,
    record: ReleaseRecord,
    source: Resolved,
    budget: Budget,
    guarantee: str,
    budget_override: bool,
) -> ReleaseRecord:
    """Write the released leaves, the features view and the ledger row in one transaction
    (:func:`~inftda_sql.engines.duckdb.write.record_release`); return the ledger row as
    written."""
    released = pa.table(
        {
            **{f"__p{t}": code for t, code in enumerate(lattice.part_codes(leaves))},
            "count": counts,
        }
    )
    statements = [_compile.feature_output(names, lattice, output.ref.sql)]
    if view is not None:
        statements.append(_compile.features_view(lattice.spec, view.ref.sql, output.ref.sql))
    return record_release(
        con,
        registered=[(names.released, released)],
        targets=(output, view),
        statements=statements,
        overwrite=overwrite,
        record=record,
        source=source,
        budget=budget,
        guarantee=guarantee,
        budget_override=budget_override,
    )
