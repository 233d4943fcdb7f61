"""Scan stage on DuckDB: the one pass over the private input, its checks, its leaf cells.

:func:`scan` bounds each privacy unit's contribution (``sql/bound_units.sql``), groups the input
by the leaf column of every chain (``sql/leaf_counts.sql``), checks what it found (NULL keys,
bad counts, leaf values outside the domain and, when asked, ancestors that disagree with the
domain), and fetches the leaf cells once with the domain's integer leaf codes
(``sql/leaf_codes.sql``): every level's true counts are sums of them
(:class:`~inftda_sql.core.cells.LeafCells`, in numpy). Every check runs before any noise is
drawn; the messages go to the data owner only.

How the leaves get their codes depends on their type: string leaves are joined to their codes
row by row and grouped by the codes (:func:`_scan_by_codes`: an integer key is cheaper than a
string in DuckDB's hash table); integer leaves increasing in code order are grouped by value
and coded from the fetched values (:func:`_coded_cells`); other leaves are grouped by value and
the cells joined to the code tables. A cell without a code sends the first way back to the
second and third, whose checks name the offending value.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

from ..._errors import Arg, DomainError, InputDataError, InternalError, SpecError
from ...core.arrays import I64
from ...core.cells import exact_sum
from ...core.leaf_index import LeafIndex
from ...core.rng import RandomSource
from ...core.spec import TreeSpec
from ..base import Scan
from ..checks import COUNT_LIMIT, too_large
from . import compile as _compile
from .catalog import Source, check_scalar_type, is_wide_number, join_type, type_family
from .sql import arrow, ident, rows, run, scalar

__all__ = ["COUNT_LIMIT", "LeafScan", "check_counts", "check_unit", "scan"]

_FLOAT_TYPES = frozenset({"FLOAT", "DOUBLE", "REAL", "FLOAT4", "FLOAT8"})


@dataclass(frozen=True)
class LeafScan:
    """What :func:`scan` found: the :class:`Scan` facts and the non-empty leaf cells, one leaf
    code array per chain and the true counts (>= 1), in no particular order."""

    found: Scan
    codes: tuple[I64, ...]
    counts: I64


def scan(
    con: duckdb.DuckDBPyConnection,
    names: _compile.TempNames,
    spec: TreeSpec,
    inp: Source,
    *,
    count: str | None,
    count_is_integer: bool,
    privacy_unit: str | None,
    contribution: int,
    distinct: bool,
    source: RandomSource,
    check: Sequence[str] = (),
    codes: Sequence[str] | None = None,
    leaf_index: Sequence[LeafIndex | None] = (),
    register_codes: Callable[[], None] = lambda: None,
) -> LeafScan:
    """Scan the input into the leaf table ``names.leaf`` (one row per leaf cell the input has a
    row in, with its count: 0 where every record was dropped by the contribution bound or
    counted 0), check it, and fetch its non-zero cells with their leaf codes.

    ``check``: the input's ancestor columns to check against the domain on every row (none:
    the domain alone gives every leaf its ancestors). ``codes``: the code table of every chain
    (quoted SQL) when not the release's registered ones. ``leaf_index``: per chain, its leaf
    codes as a function of the leaf values where the domain allows (:func:`_coded_cells`).
    ``register_codes``: called before the first statement that reads a code table (the leaf
    index spares most releases the join, and the caller makes the code tables on demand).
    """
    present = [c for c in spec.columns if c.lower() in inp.columns]
    scan_sql, params = inp.sql, None
    unit: str | None = None
    if privacy_unit is not None:
        unit = check_unit(con, inp, privacy_unit, spec.columns, count)
        salt = source.words(4).tobytes().hex()  # 256-bit secret for the random choice
        scan_sql = _compile.bound_units(present, inp.sql, unit, distinct=distinct, m=contribution)
        params = {"salt": salt}
    wide = count is not None and is_wide_number(inp.columns[count.lower()])
    enums = frozenset(
        c for c in present if join_type(inp.columns[c.lower()]) != inp.columns[c.lower()]
    )
    count_col = count and inp.column(count, "count")
    bounded = privacy_unit is not None
    counted = _compile.count_checks(count_col, bounded=bounded)  # the leaf table's count checks
    cells = None
    if _strings(spec, inp, enums) and not _indexed(spec, leaf_index, enums):
        register_codes()
        coded = _compile.coded_leaf_counts(
            names, spec, scan_sql, count_col, count_is_integer, bounded=bounded, wide=wide,
            codes=codes, check=check, as_varchar=enums,
        )  # fmt: skip
        cells = _scan_by_codes(
            con, names, spec, inp, coded, params, count_col, check, codes, counted=counted
        )
    if cells is None:
        leaf_sql = _compile.leaf_counts(
            names,
            spec,
            scan_sql,
            count_col,
            count_is_integer,
            enums,
            bounded=bounded,
            wide=wide,
            check=check,
        )
        run(con, leaf_sql, params)
        if count is not None:  # the counts are checked before anything converts them
            _validate_input(con, names, spec, count, inp, counted=counted)
        if not check:
            cells = _coded_cells(con, names, spec, leaf_index, enums)
    if cells is None:
        register_codes()
        cells = arrow(con, _compile.leaf_codes(names, spec, check, codes))
    if count is None and any(
        cells.column(_compile.leaf_code(c)).null_count for c in range(len(spec.chains))
    ):
        # records counted one by one need no count check, and a NULL or NaN leaf value gets no
        # code: only then is there something to find (NULL and NaN are named before values
        # missing from the domain)
        _validate_input(con, names, spec, count, inp, counted=counted)
    if any(cells.column(_compile.leaf_code(c)).null_count for c in range(len(spec.chains))):
        register_codes()  # a leaf value the domain lacks: the error's query reads the codes
    leaf_codes = _leaf_codes(con, names, spec, cells, codes)
    n = cells.column("n").to_numpy().astype(np.int64, copy=False)
    if check:
        _check_paths(con, names, spec, inp, cells, leaf_codes, codes)
    total = exact_sum(n)
    if total > COUNT_LIMIT:
        raise InputDataError(f"{inp.description}: {too_large(count)}")
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
    if bool((n <= 0).any()):  # every record dropped or counted 0: checked above, never counted
        kept = np.flatnonzero(n > 0)
        leaf_codes, n = tuple(code[kept] for code in leaf_codes), n[kept]
    return LeafScan(Scan(total=total, diagnostics=diagnostics, privacy_unit=unit), leaf_codes, n)


def _indexed(spec: TreeSpec, leaf_index: Sequence[LeafIndex | None], enums: frozenset[str]) -> bool:
    """Whether every chain's leaves are coded from their fetched values (:func:`_coded_cells`):
    integers the PUBLIC domain lists in increasing code order, not ENUMs."""
    if len(leaf_index) != len(spec.chains) or any(index is None for index in leaf_index):
        return False
    return not any(col.lower() in {e.lower() for e in enums} for col in spec.leaf_columns)


def _strings(spec: TreeSpec, inp: Source, enums: frozenset[str]) -> bool:
    """Whether a leaf column holds strings (VARCHAR; an ENUM is grouped by its integer
    storage): the scan then groups by the leaves' codes (:func:`_scan_by_codes`), since an
    integer key costs DuckDB's hash table much less than strings do, more than the join that
    codes the rows. Integer leaves group faster by their values than the join costs (Italy,
    28.8M rows: 0.43 s against 0.98 s)."""
    return any(
        type_family(inp.columns[col.lower()]) == "string" and col not in enums
        for col in spec.leaf_columns
    )


def _scan_by_codes(
    con: duckdb.DuckDBPyConnection,
    names: _compile.TempNames,
    spec: TreeSpec,
    inp: Source,
    coded: str,
    params: dict[str, str] | None,
    count: str | None,
    check: Sequence[str],
    codes: Sequence[str] | None,
    *,
    counted: bool,
) -> pa.Table | None:
    """The scan grouped by the leaf codes (``coded``: :func:`_compile.coded_leaf_counts`) and
    its cells, the counts checked; None, the leaf table dropped, when a cell has no code (a
    NULL, NaN or unlisted leaf value) or a NULL or negative count (flagged per cell, not
    counted): the caller then scans by values, whose checks name what is wrong and how many
    rows (the release fails either way: the second read serves its error message only).
    With ``check``, the cells carry ``path_ok``: their ancestors' hash is the domain's."""
    run(con, coded, params)
    code_cols = [_compile.leaf_code(c) for c in range(len(spec.chains))]
    if count is not None:  # checked before anything converts the counts (the fetch does)
        stats = rows(con, _compile.leaf_stats(names, code_cols, COUNT_LIMIT, counted=counted))[0]
        if stats[0] or any(stats[_COUNT_STATS:]):  # a NULL or negative count; a cell without a code
            run(con, _compile.drop_temp_table(names.leaf))
            return None
        check_counts(count, inp, *(int(x) for x in stats[:_COUNT_STATS]))
    cells = arrow(con, _compile.coded_cells(names, spec, bool(check)))
    if any(cells.column(col).null_count for col in code_cols):
        run(con, _compile.drop_temp_table(names.leaf))
        return None
    if not check:
        return cells
    expected = np.zeros(cells.num_rows, dtype=np.uint64)
    for c, chain in enumerate(spec.chains):
        cols = [col for col in check if col in chain]
        if cols:  # the domain's hash of the leaf's ancestors, per cell (a gather by code)
            table = None if codes is None else codes[c]
            per_leaf = arrow(con, _compile.ancestor_hashes(names, c, chain, cols, table))
            code = cells.column(_compile.leaf_code(c)).to_numpy()
            expected ^= per_leaf.column(0).to_numpy()[code]
    ok = cells.column("__h").to_numpy() == expected
    return cells.append_column("path_ok", pa.array(ok))


def _coded_cells(
    con: duckdb.DuckDBPyConnection,
    names: _compile.TempNames,
    spec: TreeSpec,
    leaf_index: Sequence[LeafIndex | None],
    enums: frozenset[str],
) -> pa.Table | None:
    """The leaf cells as :func:`_compile.leaf_codes` fetches them (a leaf code per chain, NULL
    where the domain does not list the value, and ``n``), coded here from their fetched leaf
    values instead of a join to the code tables: when every chain's leaves are integers
    increasing in code order (``leaf_index``), which is a property of the PUBLIC domain only.
    None when they are not (the caller joins)."""
    if not _indexed(spec, leaf_index, enums):
        return None
    cells = arrow(con, _compile.leaf_values(names, spec))
    columns: dict[str, pa.Array] = {}
    for c, index in enumerate(leaf_index):
        values = cells.column(c).combine_chunks()
        if index is None or not index.accepts(values.type):
            return None
        nulls = values.is_null().to_numpy(zero_copy_only=False) if values.null_count else None
        if nulls is not None:
            values = values.fill_null(pa.scalar(0, values.type))
        code, missing = index.codes(values.to_numpy(zero_copy_only=False))
        if nulls is not None:
            missing |= nulls
        columns[_compile.leaf_code(c)] = pa.array(code, mask=missing if missing.any() else None)
    columns["n"] = cells.column("n")
    return pa.table(columns)


def _leaf_codes(
    con: duckdb.DuckDBPyConnection,
    names: _compile.TempNames,
    spec: TreeSpec,
    cells: pa.Table,
    codes: Sequence[str] | None,
) -> tuple[I64, ...]:
    """The fetched leaf code of every chain; a leaf value the domain does not list (no code) is
    named in the error."""
    out = []
    for c, chain in enumerate(spec.chains):
        column = cells.column(_compile.leaf_code(c))
        if column.null_count:
            table = None if codes is None else codes[c]
            missing = rows(con, _compile.missing_leaf(names, c, chain, table))
            value, n_values = missing[0] if missing else ("?", column.null_count)
            raise DomainError(
                f"{n_values} value(s) of {chain[-1]!r} in the input are not in the domain, e.g. "
                f"{chain[-1]}={value!r}; add them to the public domain table or fix the input"
            )
        out.append(column.to_numpy().astype(np.int64, copy=False))
    return tuple(out)


def _example(values: Sequence[object], cols: Sequence[str]) -> str:
    return ", ".join(f"{c}={v!r}" for c, v in zip(cols, values, strict=False))


def _see_rows(inp: Source, condition: str) -> str:
    """How the data owner lists the rows for which ``condition`` holds: a query on a named
    input, a filter on a relation or a query on a data frame (whose temporary view is gone once
    the release fails)."""
    if inp.temp_view is None:
        return f"see them with: {_compile.offending_rows(inp.sql, condition)}"
    if inp.resolved.kind != "relation":  # a data frame: DuckDB reads it by its variable name
        return f"see them with: duckdb.sql({f'SELECT * FROM df WHERE {condition}'!r}) (df: yours)"
    return f"see them with: <your relation>.filter({condition!r})"


#: the count checks' numbers that lead a row of ``leaf_stats`` (:func:`check_counts`)
_COUNT_STATS = 5


def _validate_input(
    con: duckdb.DuckDBPyConnection,
    names: _compile.TempNames,
    spec: TreeSpec,
    count: str | None,
    inp: Source,
    *,
    counted: bool,
) -> None:
    """Checks before any noise: NULL leaves, bad counts, counts too large to add up exactly
    (``counted``: the leaf table has the count checks, :func:`_compile.count_checks`).

    The messages name the column, how many rows are wrong and a query that lists them, never
    a count or a value derived from counts (they may be shown or logged beyond the owner).
    """
    cols = spec.leaf_columns
    stats = rows(con, _compile.leaf_stats(names, cols, COUNT_LIMIT, counted=counted))[0]
    for col, n_null in zip(cols, stats[_COUNT_STATS:], strict=True):
        if n_null:
            _null_error(col, inp)
    nan_cols = [c for c in cols if inp.columns[c.lower()].upper() in _FLOAT_TYPES]
    if nan_cols:
        for col, n_nan in zip(
            nan_cols, rows(con, _compile.nan_leaves(names, nan_cols))[0], strict=True
        ):
            if n_nan:
                raise InputDataError(
                    f"hierarchy column {col!r} of {inp.description} has NaN values; NaN is not a "
                    "category (a domain cannot list it): filter or label those rows in a view "
                    f"first; {_see_rows(inp, f'isnan({ident(col)})')}",
                    param="hierarchy",
                )
    check_counts(count, inp, *(int(x) for x in stats[:_COUNT_STATS]))


def check_counts(
    count: str | None,
    inp: Source,
    n_nulls: int,
    n_negative: int,
    n_not_whole: int,
    n_big: int,
    n_big_cells: int,
) -> None:
    """Refuse a count column with rows that are NULL, negative, not whole or beyond int64, or
    leaf cells above 2**60: the numbers of rows and cells and a query listing them, never a
    count (before any noise)."""
    if count is None:
        return
    q = ident(count)
    if n_nulls:
        raise InputDataError(
            f"count column {count!r} has {n_nulls:,} row(s) with NULL; use 0 or drop those "
            f"rows in a view; {_see_rows(inp, f'{q} IS NULL')}",
            param="count",
        )
    if n_negative:
        raise InputDataError(
            f"count column {count!r} has {n_negative:,} row(s) with a negative value; counts "
            f"must be non-negative integers: fix or drop those rows in a view first (e.g. WHERE "
            f"{q} >= 0); {_see_rows(inp, f'{q} < 0')}",
            param="count",
        )
    if n_not_whole:
        raise InputDataError(
            f"count column {count!r} has {n_not_whole:,} row(s) that are not whole numbers "
            "(fractional, NaN or infinite); counts must be whole numbers (CAST or ROUND them in "
            f"a view); {_see_rows(inp, _compile.not_whole(count))}",
            param="count",
        )
    if n_big:
        raise InputDataError(
            f"count column {count!r} has {n_big:,} row(s) beyond the 64-bit integer range; "
            f"{too_large(count)}; {_see_rows(inp, f'TRY_CAST({q} AS BIGINT) IS NULL')}",
            param="count",
        )
    if n_big_cells:
        raise InputDataError(
            f"count column {count!r}: {n_big_cells:,} leaf cell(s) hold more than 2**60 "
            f"records; {too_large(count)}",
            param="count",
        )


def check_unit(
    con: duckdb.DuckDBPyConnection,
    inp: Source,
    unit: object,
    columns: Sequence[str],
    count: str | None,
    role: str = "hierarchy column",
) -> str:
    """The privacy-unit column: present, not one of ``columns`` (the hierarchy's, or the leaf's
    of a feature release) nor the count column, never NULL."""
    if not isinstance(unit, str) or not unit:
        raise SpecError(f"privacy_unit must be a column name, got {unit!r}", param="privacy_unit")
    stored = inp.column(unit, "privacy unit")
    check_scalar_type(inp, unit, "privacy unit column", InputDataError)
    if unit.lower() in {c.lower() for c in columns}:
        raise SpecError(
            f"privacy_unit {unit!r} is also a {role}; name the column that "
            "identifies a person or household",
            param="privacy_unit",
        )
    if count is not None:
        raise SpecError(
            Arg("privacy_unit"),
            " bounds the records of each unit and needs one row per record, but ",
            Arg("count", count, "!r"),
            " says rows are pre-aggregated; expand them first "
            f"(SELECT t.* EXCLUDE ({count}) FROM t, range(t.{count})) or drop ",
            Arg("privacy_unit"),
            param="privacy_unit",
        )
    nulls = scalar(con, _compile.unit_nulls(inp.sql, stored))
    if nulls:
        raise InputDataError(
            f"privacy unit column {stored!r} has {nulls} NULL value(s); every "
            "record must belong to a unit (drop or label them in a view)"
        )
    return stored


def _null_error(col: str, inp: Source) -> None:
    raise InputDataError(
        f"hierarchy column {col!r} of {inp.description} has NULL values; every record needs a "
        "value in every hierarchy column (filter or fill them in a view first)"
    )


def _check_paths(
    con: duckdb.DuckDBPyConnection,
    names: _compile.TempNames,
    spec: TreeSpec,
    inp: Source,
    cells: pa.Table,
    leaf_codes: Sequence[I64],
    codes: Sequence[str] | None,
) -> None:
    """Every input row's ancestors must be those the domain gives its leaf (the offending row
    is looked up only on error)."""
    ok = cells.column("path_ok").fill_null(False).to_numpy(zero_copy_only=False)
    if bool(ok.all()):
        return
    bad = int(np.flatnonzero(~ok)[0])
    for c, chain in enumerate(spec.chains):
        cols = [col for col in chain[:-1] if col.lower() in inp.columns] + [chain[-1]]
        if len(cols) == 1:
            continue
        table = None if codes is None else codes[c]
        leaf_value = scalar(
            con, _compile.leaf_of_code(names, c, chain, table), {"code": int(leaf_codes[c][bad])}
        )
        ex = rows(con, _compile.bad_path(names, c, cols, inp.sql, table), {"leaf": leaf_value})
        if ex:
            for col, value in zip(cols, ex[0], strict=True):
                if value is None:
                    _null_error(col, inp)
            raise DomainError(
                f"input path ({_example(ex[0], cols)}) is not in the domain: the domain puts "
                f"{chain[-1]}={leaf_value!r} under other ancestors; fix the input's "
                f"{', '.join(cols[:-1])} or the domain (or pass ",
                Arg("check_ancestors", "off"),
                " to take every leaf's ancestors from the domain)",
                param="check_ancestors",
            )
    raise InternalError("an input path failed the domain check but no offending row was found")
