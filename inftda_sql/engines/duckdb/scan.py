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
from ...core.rng import RandomSource
from ...core.spec import TreeSpec
from ..base import Scan
from . import compile as _compile
from .catalog import Source, join_type
from .sql import arrow, rows, run, scalar

__all__ = ["level_counts", "scan"]


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
    """Scan the input into the keys table ``names.keys`` (one row per non-empty leaf cell)."""
    scan_sql, params = inp.sql, None
    if privacy_unit is not None:
        unit = _check_unit(con, inp, privacy_unit, spec, count)
        salt = source.words(4).tobytes().hex()  # 256-bit secret for the random choice
        scan_sql = _compile.bound_units(spec, inp.sql, unit, distinct=distinct, m=contribution)
        params = {"salt": salt}
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
    )
    run(con, leaf_sql, params)
    _validate_input(con, names, spec, count, inp)
    run(con, _compile.leaf_codes(names, spec))
    _check_paths(con, names, spec, inp)
    total = int(scalar(con, _compile.total(names)))
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
    return Scan(total=total, diagnostics=diagnostics)


def level_counts(
    con: duckdb.DuckDBPyConnection,
    names: _compile.TempNames,
    spec: TreeSpec,
    level: int,
    strides: tuple[int, ...],
) -> tuple[I64, I64]:
    """True counts of one level from the keys table: sorted mixed-radix keys and counts."""
    tab = arrow(con, _compile.level_counts(names, spec, level, strides))
    return (
        tab.column("key").to_numpy().astype(np.int64, copy=False),
        tab.column("n").to_numpy().astype(np.int64, copy=False),
    )


def _example(values: Sequence[object], cols: Sequence[str]) -> str:
    return ", ".join(f"{c}={v!r}" for c, v in zip(cols, values, strict=False))


def _validate_input(
    con: duckdb.DuckDBPyConnection,
    names: _compile.TempNames,
    spec: TreeSpec,
    count: str | None,
    inp: Source,
) -> None:
    """Checks before any noise: NULL leaves, bad counts."""
    cols = spec.leaf_columns
    stats = rows(con, _compile.leaf_stats(names, cols))[0]
    for col, n_null in zip(cols, stats[: len(cols)], strict=True):
        if n_null:
            _null_error(col, inp)
    n_nulls, minimum, frac = stats[len(cols) :]
    if count is not None:
        if n_nulls:
            raise InputDataError(
                f"count column {count!r} has {n_nulls} NULL value(s); use 0 or drop those rows"
            )
        if minimum is not None and minimum < 0:
            ex = rows(con, _compile.negative_example(names, cols))[0]
            raise InputDataError(
                f"count column {count!r} has negative values, e.g. {ex[-1]} at "
                f"({_example(ex, cols)}); counts must be non-negative integers: fix or drop those "
                f"rows in a view first (e.g. WHERE {count} >= 0)"
            )
        if frac:
            raise InputDataError(
                f"count column {count!r} has non-integer values; counts must "
                "be whole numbers (CAST or ROUND them in a view)"
            )


def _check_unit(
    con: duckdb.DuckDBPyConnection, inp: Source, unit: object, spec: TreeSpec, count: str | None
) -> str:
    """The privacy-unit column: present, not a hierarchy or count column, never NULL."""
    if not isinstance(unit, str) or not unit:
        raise SpecError(f"privacy_unit must be a column name, got {unit!r}", param="privacy_unit")
    stored = inp.column(unit, "privacy unit")
    if unit.lower() in {c.lower() for c in spec.columns}:
        raise SpecError(
            f"privacy_unit {unit!r} is also a hierarchy column; name the column that "
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
