"""Scan stage on DuckDB: the one pass over the private input, its checks, the level counts.

:func:`scan` bounds each privacy unit's contribution (``sql/bound_units.sql``), groups the input
by the leaf column of every chain (``sql/leaf_counts.sql``), checks what it found (NULL keys,
bad counts, leaf values outside the domain, ancestors that disagree with the domain), and codes
the leaf cells with the domain's integer codes (``sql/leaf_codes.sql``). :func:`level_counts`
then gives the mechanism the true counts of any level from that small keys table. Every check
runs before any noise is drawn; the messages go to the data owner only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import duckdb
import numpy as np

from ..._errors import Arg, DomainError, InputDataError, InternalError, SpecError
from ...core.arrays import I64
from ...core.intopt import VALUE_LIMIT
from ...core.rng import RandomSource
from ...core.spec import TreeSpec
from ..base import Scan
from . import compile as _compile
from .catalog import Source, check_scalar_type, is_wide_number, join_type
from .sql import arrow, ident, rows, run, scalar

__all__ = ["COUNT_LIMIT", "check_counts", "check_unit", "level_counts", "scan"]

_FLOAT_TYPES = frozenset({"FLOAT", "DOUBLE", "REAL", "FLOAT4", "FLOAT8"})


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
) -> Scan:
    """Scan the input into the keys table ``names.keys``: one row per leaf cell the input has
    a row in, with its count (0 where every record was dropped by the contribution bound or
    counted 0; :func:`level_counts` leaves those out)."""
    scan_sql, params = inp.sql, None
    unit: str | None = None
    if privacy_unit is not None:
        unit = check_unit(con, inp, privacy_unit, spec.columns, count)
        salt = source.words(4).tobytes().hex()  # 256-bit secret for the random choice
        scan_sql = _compile.bound_units(
            spec.columns, inp.sql, unit, distinct=distinct, m=contribution
        )
        params = {"salt": salt}
    wide = count is not None and is_wide_number(inp.columns[count.lower()])
    enums = frozenset(
        c for c in spec.columns if join_type(inp.columns[c.lower()]) != inp.columns[c.lower()]
    )
    leaf_sql = _compile.leaf_counts(
        names,
        spec,
        scan_sql,
        count and inp.column(count, "count"),
        count_is_integer,
        enums,
        bounded=privacy_unit is not None,
        wide=wide,
    )
    run(con, leaf_sql, params)
    _validate_input(con, names, spec, count, inp)
    run(con, _compile.leaf_codes(names, spec))
    _check_paths(con, names, spec, inp)
    total = int(scalar(con, _compile.total(names)))
    if total > COUNT_LIMIT:
        raise InputDataError(f"{inp.description}: {_too_large(count)}")
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
    return Scan(total=total, diagnostics=diagnostics, privacy_unit=unit)


def level_counts(
    con: duckdb.DuckDBPyConnection,
    names: _compile.TempNames,
    spec: TreeSpec,
    level: int,
    strides: tuple[int, ...],
) -> tuple[I64, I64]:
    """True counts of one level from the keys table: sorted mixed-radix keys and counts, the
    non-zero cells only (``sql/level_counts.sql``; the keys table keeps the zero cells for the
    checks of the input)."""
    tab = arrow(con, _compile.level_counts(names, spec, level, strides))
    return (
        tab.column("key").to_numpy().astype(np.int64, copy=False),
        tab.column("n").to_numpy().astype(np.int64, copy=False),
    )


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


def _validate_input(
    con: duckdb.DuckDBPyConnection,
    names: _compile.TempNames,
    spec: TreeSpec,
    count: str | None,
    inp: Source,
) -> None:
    """Checks before any noise: NULL leaves, bad counts, counts too large to add up exactly.

    The messages name the column, how many rows are wrong and a query that lists them, never
    a count or a value derived from counts (they may be shown or logged beyond the owner).
    """
    cols = spec.leaf_columns
    stats = rows(con, _compile.leaf_stats(names, cols, COUNT_LIMIT))[0]
    for col, n_null in zip(cols, stats[: len(cols)], strict=True):
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
    check_counts(count, inp, *(int(x) for x in stats[len(cols) :]))


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
            f"{_too_large(count)}; {_see_rows(inp, f'TRY_CAST({q} AS BIGINT) IS NULL')}",
            param="count",
        )
    if n_big_cells:
        raise InputDataError(
            f"count column {count!r}: {n_big_cells:,} leaf cell(s) hold more than 2**60 "
            f"records; {_too_large(count)}",
            param="count",
        )


#: The largest count a release handles: IntOpt's exact 64-bit arithmetic takes values and
#: totals up to 2**60 (about 1.15e18).
COUNT_LIMIT = VALUE_LIMIT


def _too_large(count: str | None) -> str:
    what = f"the counts of {count!r}" if count else "the number of records"
    return (
        f"{what} must add up to at most 2**60 (about 1.15e18) for exact integer arithmetic; "
        "count in larger units (e.g. thousands) or split the input"
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
    con: duckdb.DuckDBPyConnection, names: _compile.TempNames, spec: TreeSpec, inp: Source
) -> None:
    """Leaf values must be in the domain, and every input row's ancestors must be those the
    domain gives its leaf (the offending row is looked up only on error)."""
    for c, chain in enumerate(spec.chains):
        missing = rows(con, _compile.missing_leaf(names, c, chain))
        if missing:
            value, n_values = missing[0]
            raise DomainError(
                f"{n_values} value(s) of {chain[-1]!r} in the input are not in the domain, e.g. "
                f"{chain[-1]}={value!r}; add them to the public domain table or fix the input"
            )
    if not _compile.ancestors(spec):
        return
    if not scalar(con, _compile.bad_path_count(names)):
        return
    bad_codes = rows(con, _compile.bad_path_codes(names, spec))[0]
    for c, chain in enumerate(spec.chains):
        if len(chain) == 1:
            continue
        leaf_value = scalar(con, _compile.leaf_of_code(names, c, chain), {"code": bad_codes[c]})
        ex = rows(con, _compile.bad_path(names, c, chain, inp.sql), {"leaf": leaf_value})
        if ex:
            for col, value in zip(chain, ex[0], strict=True):
                if value is None:
                    _null_error(col, inp)
            raise DomainError(
                f"input path ({_example(ex[0], chain)}) is not in the domain: the domain puts "
                f"{chain[-1]}={leaf_value!r} under other ancestors; fix the input's "
                f"{', '.join(chain[:-1])} or the domain"
            )
    raise InternalError("an input path failed the domain check but no offending row was found")
