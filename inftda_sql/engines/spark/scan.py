"""Scan stage on Spark: one GROUP BY of the private input, its checks, the coded leaf cells.

:func:`scan` bounds each privacy unit's contribution (window functions, the same keyed SHA-256
ranking as ``sql/bound_units.sql``), groups the input in Spark SQL by its leaf columns and a
hash of each chain's ancestors (as DuckDB's scan), checks what it found (NULL keys, bad counts,
leaf values outside the domain, ancestors that disagree with the domain) and joins the groups
to the domain's codes: the *cells* table, one row per non-empty leaf cell with a code per chain
and depth and its count, kept by Spark for the rest of the release, or fetched to the driver in
the same job when the engine finds they fit there. :func:`level_counts` gives a driver-side
mechanism the true counts of a level (a GROUP BY of the cells table). Every check runs before
any noise is drawn; messages name columns and numbers of rows, never a count.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..._errors import Arg, DomainError, InputDataError, SpecError
from ...core.arrays import I64
from ...core.cells import LeafCells, exact_sum
from ...core.rng import RandomSource
from ...core.spec import TreeSpec
from ..base import Scan
from ..checks import COUNT_LIMIT, too_large
from .catalog import SparkSource, check_scalar_type, quote
from .domain import CodedChain, depth_code
from .driver import fetched_cells, leaf_code_columns
from .workers import session_settings


def describe(spark: Any, what: str | None) -> None:
    """Label the Spark jobs that follow (Spark UI, event log): ``inftda_sql <what>``."""
    spark.sparkContext.setJobDescription(None if what is None else f"inftda_sql {what}")


__all__ = [
    "COUNT_LIMIT",
    "CellsTable",
    "bound_units",
    "check_unit",
    "count_aggregates",
    "describe",
    "level_counts",
    "level_key",
    "scan",
    "unit_diagnostics",
    "validate",
    "with_records",
]

_INT64_MAX = 2**63 - 1
_LOW = 2**31 - 1


def with_records(grouped: DataFrame) -> DataFrame:
    """The groups of :func:`count_aggregates` with their records ``__n`` (a decimal joined
    from the 31-bit halves of an integer count column, per group)."""
    if "__hi" not in grouped.columns:
        return grouped
    n = F.col("__hi").cast("decimal(38,0)") * F.lit(2**31) + F.col("__lo")
    return grouped.withColumn("__n", n.cast("decimal(38,0)")).drop("__hi", "__lo")


@dataclass(frozen=True)
class CellsTable:
    """The scan's cells table, its number of rows (leaf cells) and of records (the sum of
    ``n``), and the frame Spark caches it in (unpersisted when the release ends); or, fetched
    to the driver instead of cached, its non-empty cells ``leaf`` and no frame (one would read
    the input again)."""

    frame: DataFrame | None
    rows: int
    total: int
    cached: DataFrame | None
    leaf: LeafCells | None = None


def _c(name: str) -> Column:
    return F.col(quote(name))


def bound_units(
    df: DataFrame, columns: Sequence[str], unit: str, *, distinct: bool, m: int, salt: str
) -> DataFrame:
    """The input with a ``__keep`` flag: at most ``m`` records (or distinct cells of
    ``columns``) per unit, chosen by a keyed SHA-256 under a secret salt (as
    ``sql/bound_units.sql``)."""
    cols = [_c(c) for c in columns]
    rows = df.select(_c(unit).alias("__u"), *cols)
    if distinct:
        rows = rows.distinct()
    by_unit = Window.partitionBy("__u")
    ranked = rows.withColumn("__c", F.count(F.lit(1)).over(by_unit)).withColumn(
        "__k",
        F.when(
            F.col("__c") > m,
            F.sha2(
                F.concat_ws(
                    "|",
                    F.lit(salt),
                    F.col("__u").cast("string"),
                    F.row_number().over(by_unit.orderBy(*cols)).cast("string"),
                ),
                256,
            ),
        ),
    )
    keep = (F.col("__c") <= m) | (F.row_number().over(by_unit.orderBy("__k")) <= m)
    return ranked.withColumn("__keep", keep)


def scan(
    spec: TreeSpec,
    inp: SparkSource,
    chains: Sequence[CodedChain],
    *,
    count: str | None,
    count_is_integer: bool,
    privacy_unit: str | None,
    contribution: int,
    distinct: bool,
    source: RandomSource,
    to_driver: bool = False,
) -> tuple[Scan, CellsTable]:
    """Scan the input: the checks, then what the scan found and the cells table: cached in
    Spark, or with ``to_driver`` (they fit the driver) fetched to the driver in the
    job that groups and codes them (:attr:`CellsTable.leaf`; nothing cached)."""
    df = inp.df
    unit: str | None = None
    weight: Column = F.lit(1)
    if privacy_unit is not None:
        unit = check_unit(inp, privacy_unit, spec.columns, count)
        salt = source.words(4).tobytes().hex()
        df = bound_units(df, spec.columns, unit, distinct=distinct, m=contribution, salt=salt)
        weight = F.col("__keep").cast("long")
    aggs = _lean_aggregates(inp, count, count_is_integer, weight, weighted=unit is not None)
    describe(inp.df.sparkSession, "scan: GROUP BY of the input, checks, coded cells")
    leaf = df.groupBy(*_group_keys(spec, inp)).agg(*aggs)
    if "__n" not in leaf.columns:  # one record per row: the records are the rows
        leaf = leaf.withColumn("__n", F.col("__rows"))
    exact = _Exact(df, spec, inp, count, count_is_integer, weight)
    with _tuned(inp.df.sparkSession, count_table=count is not None):
        table = _code_cells(leaf, spec, chains, inp, exact, to_driver=to_driver)
    total = table.total
    describe(inp.df.sparkSession, None)
    if total > COUNT_LIMIT:
        if table.cached is not None:
            table.cached.unpersist()
        raise InputDataError(f"{inp.description}: {too_large(count)}")
    return Scan(
        total=total,
        diagnostics=unit_diagnostics(inp, privacy_unit, contribution, distinct, total),
        privacy_unit=unit,
    ), table


#: the fast hash map of Spark's hash aggregate holds 2**bit groups (2**16 by default) before
#: it falls back to its slower map; a leaf level has some 10**5-10**7 groups a task
_FAST_MAP = ("spark.sql.codegen.aggregate.fastHashMap.capacityBit", "20")
#: a count table has about one row per group: the map side's partial aggregation only copies
_BYPASS_PARTIAL = ("spark.sql.execution.bypassPartialAggregation", "true")


@contextlib.contextmanager
def _tuned(spark: Any, *, count_table: bool) -> Iterator[None]:
    """The session's settings for the scan's own query, as planned in this block (the
    physical plan, the cache's included, is made here), then restored: a fast hash map that
    holds a task's groups and, for a count table, no partial aggregation. A setting the user
    gave is kept."""
    wanted = dict([_FAST_MAP, *([_BYPASS_PARTIAL] if count_table else [])])
    with session_settings(spark, wanted, keep_given=True):
        yield


def count_aggregates(
    inp: SparkSource, count: str | None, count_is_integer: bool, weight: Column
) -> list[Column]:
    """Per group: its rows, its records (``__n``, weighted by ``weight``: the kept flag of a
    bounded input) and, for a count column, the rows with a NULL, negative, fractional or
    too large count (checked by :func:`validate`)."""
    cnt = _c(count) if count is not None else None
    big = F.lit(float(_INT64_MAX))
    aggs = [F.count(F.lit(1)).alias("__rows")]
    if cnt is None:  # one record per row: a 64-bit count
        aggs.append(F.sum(weight.cast("long")).alias("__n"))
    elif count is not None and isinstance(inp.types[count.lower()], T.IntegralType):
        # 64-bit sums of the high and low 31 bits, exact (no overflow below 2**31 rows a
        # group); :func:`with_records` joins them per group, not per row
        whole = cnt.cast("long") * weight
        aggs += [
            F.sum(F.shiftright(whole, 31)).alias("__hi"),
            F.sum(whole.bitwiseAND(F.lit(_LOW))).alias("__lo"),
        ]
    else:  # decimals and floating point: summed exactly as decimals
        aggs.append(F.sum(cnt.cast("decimal(38,0)") * weight).cast("decimal(38,0)").alias("__n"))
    if cnt is not None:
        aggs += [
            F.sum(cnt.isNull().cast("long")).alias("__nulls"),
            F.sum((cnt < 0).cast("long")).alias("__neg"),
            F.sum(
                (F.lit(False) if count_is_integer else _not_whole(cnt, inp, count)).cast("long")
            ).alias("__frac"),
            F.sum((cnt.cast("double") > big).cast("long")).alias("__big"),
        ]
    return aggs


def _lean_aggregates(
    inp: SparkSource, count: str | None, count_is_integer: bool, weight: Column, *, weighted: bool
) -> list[Column]:
    """Per group, what the scan keeps: its rows ``__rows``, its records ``__n`` (64-bit; NULL
    when they overflow it: a sum too large) and, for a count column, ``__badc``: the rows with
    a NULL, negative, fractional or too large count. Any problem sends the release to
    :class:`_Exact`, which counts each kind as :func:`validate` does (the messages' numbers);
    an input without problems pays three sums a row, not seven. Microdata without a privacy
    unit sums nothing: its records are its rows."""
    aggs = [F.count(F.lit(1)).alias("__rows")]
    if count is None:
        if weighted:
            aggs.append(F.sum(weight.cast("long")).alias("__n"))
        return aggs
    cnt = _c(count)
    dtype = inp.types[count.lower()]
    bad = cnt.isNull() | (cnt < 0)
    if isinstance(dtype, T.IntegralType):  # 64 bits at most: never too large a row
        n = F.try_sum(cnt.cast("long") * weight)
    else:  # decimals and floating point: summed exactly as decimals, kept when they fit
        n = F.sum(cnt.cast("decimal(38,0)") * weight)
        n = F.when(n <= F.lit(_INT64_MAX), n.cast("long"))
        if not count_is_integer:
            bad = bad | _not_whole(cnt, inp, count)
        bad = bad | (cnt.cast("double") > F.lit(float(_INT64_MAX)))
    return [
        *aggs,
        n.alias("__n"),
        F.sum(F.coalesce(bad, F.lit(True)).cast("long")).alias("__badc"),
    ]


@dataclass(frozen=True)
class _Exact:
    """What :func:`validate` needs to count the input's problems exactly, on error only: a
    second ``GROUP BY`` of the input with every check's own sum (:func:`count_aggregates`)."""

    df: DataFrame
    spec: TreeSpec
    inp: SparkSource
    count: str | None
    count_is_integer: bool
    weight: Column

    def refuse(self) -> None:
        """Raise what :func:`validate` finds: NULL or NaN leaves, bad counts, cells too large."""
        cols = self.spec.leaf_columns
        aggs = count_aggregates(self.inp, self.count, self.count_is_integer, self.weight)
        grouped = with_records(self.df.groupBy(*[_c(c) for c in cols]).agg(*aggs))
        validate(grouped, cols, self.count, self.inp)


def unit_diagnostics(
    inp: SparkSource, privacy_unit: str | None, contribution: int, distinct: bool, total: int
) -> dict[str, Any]:
    """What contribution bounding dropped: for the data owner only (NOT private)."""
    if privacy_unit is None:
        return {}
    rows_in = inp.df.count()
    return {
        "privacy_unit": privacy_unit,
        "contribution_bound": contribution,
        "distinct": distinct,
        "rows_in": rows_in,
        "rows_kept": total,
        "rows_dropped": rows_in - total,
    }


def _not_whole(cnt: Column, inp: SparkSource, count: str | None) -> Column:
    assert count is not None
    dtype = inp.types[count.lower()]
    if isinstance(dtype, T.DecimalType):
        return cnt != F.floor(cnt)
    # floor() of a float is a 64-bit integer (an overflow error beyond it): every float from
    # 2**53 up is whole, so only those below are compared with their floor
    below = F.abs(cnt) < F.lit(float(2**53))
    fractional = F.when(below, cnt != F.floor(cnt)).otherwise(F.lit(False))
    return F.isnan(cnt) | (F.abs(cnt) == float("inf")) | fractional


def _null_error(col: str, inp: SparkSource) -> None:
    raise InputDataError(
        f"hierarchy column {col!r} of {inp.description} has NULL values; every record needs a "
        "value in every hierarchy column (filter or fill them first)"
    )


def validate(leaf: DataFrame, cols: Sequence[str], count: str | None, inp: SparkSource) -> None:
    """NULL and NaN leaves, bad counts, counts too large (numbers of rows, never a count)."""
    checks = validation(cols, count, inp)
    refuse([int(v or 0) for v in leaf.agg(*checks).first() or ()], cols, count, inp)


def _nan_cols(cols: Sequence[str], inp: SparkSource) -> list[str]:
    return [c for c in cols if isinstance(inp.types[c.lower()], (T.FloatType, T.DoubleType))]


def validation(cols: Sequence[str], count: str | None, inp: SparkSource) -> list[Column]:
    """The aggregates :func:`validate` runs over the groups (for :func:`refuse`)."""
    checks = [F.sum(F.when(_c(c).isNull(), F.col("__rows")).otherwise(0)) for c in cols]
    checks += [F.sum(F.isnan(_c(c)).cast("long")) for c in _nan_cols(cols, inp)]
    if count is not None:
        checks += [F.sum(F.col(k)) for k in ("__nulls", "__neg", "__frac", "__big")]
        checks.append(F.sum((F.col("__n") > COUNT_LIMIT).cast("long")))
    return checks


def refuse(found: Sequence[int], cols: Sequence[str], count: str | None, inp: SparkSource) -> None:
    """Raise what the aggregates of :func:`validation` found (numbers of rows, never a count)."""
    nan_cols = _nan_cols(cols, inp)
    for col, n_null in zip(cols, found, strict=False):
        if n_null:
            _null_error(col, inp)
    for col, n_nan in zip(nan_cols, found[len(cols) : len(cols) + len(nan_cols)], strict=False):
        if n_nan:
            raise InputDataError(
                f"hierarchy column {col!r} of {inp.description} has NaN values; NaN is not a "
                "category (a domain cannot list it): filter or label those rows first",
                param="hierarchy",
            )
    if count is None:
        return
    n_nulls, n_negative, n_not_whole, n_big, n_big_cells = found[
        len(cols) + len(nan_cols) : len(cols) + len(nan_cols) + 5
    ]
    if n_nulls:
        raise InputDataError(
            f"count column {count!r} has {n_nulls:,} row(s) with NULL; use 0 or drop those "
            f"rows first (df.where(df[{count!r}].isNotNull()))",
            param="count",
        )
    if n_negative:
        raise InputDataError(
            f"count column {count!r} has {n_negative:,} row(s) with a negative value; counts "
            f"must be non-negative integers: fix or drop those rows first (e.g. "
            f"df.where(df[{count!r}] >= 0))",
            param="count",
        )
    if n_not_whole:
        raise InputDataError(
            f"count column {count!r} has {n_not_whole:,} row(s) that are not whole numbers "
            "(fractional, NaN or infinite); counts must be whole numbers (cast or round them "
            "first)",
            param="count",
        )
    if n_big:
        raise InputDataError(
            f"count column {count!r} has {n_big:,} row(s) beyond the 64-bit integer range; "
            f"{too_large(count)}",
            param="count",
        )
    if n_big_cells:
        raise InputDataError(
            f"count column {count!r}: {n_big_cells:,} leaf cell(s) hold more than 2**60 "
            f"records; {too_large(count)}",
            param="count",
        )


def _group_keys(spec: TreeSpec, inp: SparkSource) -> list[Column]:
    """The scan's ``GROUP BY`` keys, as DuckDB's scan groups (``sql/leaf_counts.sql``): every
    chain's leaf column once and, per chain of several columns, one hash of the row's ancestors
    (``__h<c>``, :func:`_ancestor_hash`). A leaf cell whose rows agree on their ancestors stays
    one group; one whose rows disagree splits into groups, of which one at least hashes unlike
    the domain's path of the leaf and is flagged (:func:`_ancestors_flag`). Two or three keys
    instead of every hierarchy column: a narrower shuffle and hash table."""
    seen: dict[str, Column] = {}
    for chain in spec.chains:
        seen.setdefault(chain[-1].lower(), _c(chain[-1]))
    hashes = [
        _ancestor_hash([_c(col) for col in chain[:-1]], _types(inp, chain[:-1])).alias(f"__h{c}")
        for c, chain in enumerate(spec.chains)
        if len(chain) > 1
    ]
    return [*seen.values(), *hashes]


def _types(inp: SparkSource, columns: Sequence[str]) -> list[T.DataType]:
    return [inp.types[col.lower()] for col in columns]


def _ancestor_hash(values: Sequence[Column], types: Sequence[T.DataType]) -> Column:
    """Spark's ``xxhash64`` of a path's ancestors, each cast to the input column's type, so the
    input's rows and the domain's paths (coded in those types) hash alike when Spark's equality
    makes them equal (its hash makes -0.0 and 0.0 alike). A collision (about 2**-64 a group)
    could only let rows under other ancestors than the domain's pass, counted in their leaf's
    cell as the domain places it."""
    return F.xxhash64(*[v.cast(t) for v, t in zip(values, types, strict=True)])


def _ancestors_flag(c: int, chain: Sequence[str]) -> Column:
    """A group whose leaf is in the domain under other ancestors (a NULL one included): its
    ancestors' hash is not the domain's."""
    leaf_code = F.col(depth_code(c, len(chain)))
    return (leaf_code.isNotNull() & (F.col(f"__h{c}") != F.col(f"__domh{c}"))).alias(f"__bad{c}")


def _code_cells(
    leaf: DataFrame,
    spec: TreeSpec,
    chains: Sequence[CodedChain],
    inp: SparkSource,
    exact: _Exact,
    *,
    to_driver: bool,
) -> CellsTable:
    """Join every chain's leaf value to its path and codes (a broadcast join with the public
    code table) and check the input against the domain and its counts: a group whose leaf is
    under other ancestors in the domain is flagged (``__bad<c>``, :func:`_ancestors_flag`); a
    group with no leaf code (NULL, NaN or not in the domain), a bad count (``__badc``) or too
    many records (``__n`` NULL or above the limit) sends the release to the exact counts of
    :class:`_Exact` and :func:`_refuse_paths`. The checks are ONE aggregate over the joined
    groups, which caches them (the codes, ``__n`` and the flags, not the input's columns); or,
    with ``to_driver``, the joined groups are fetched in the job that makes them and checked on
    the driver (:func:`_fetched`). Returns the cells table (a code per chain and depth, and
    ``n``, one row per leaf cell), its rows and the sum of ``n``."""
    joined = leaf
    flags: list[Column] = []
    for c, (chain, coded) in enumerate(zip(spec.chains, chains, strict=True)):
        ancestors = [_c(col) for col in chain[:-1]]
        dom = coded.codes.select(
            _c(chain[-1]).alias(f"__leaf{c}"),
            *[F.col(depth_code(c, d)) for d in range(1, len(chain) + 1)],
            *(
                [_ancestor_hash(ancestors, _types(inp, chain[:-1])).alias(f"__domh{c}")]
                if ancestors
                else []
            ),
        )
        on = _c(chain[-1]) == F.col(f"__leaf{c}")
        joined = joined.join(coded.joinable(dom), on, "left")
        if len(chain) > 1:
            flags.append(_ancestors_flag(c, chain))
    codes = [
        F.col(depth_code(c, d))
        for c, chain in enumerate(spec.chains)
        for d in range(1, len(chain) + 1)
    ]
    n = F.col("__n")
    problems = n.isNull() | (n > COUNT_LIMIT)
    if "__badc" in leaf.columns:
        problems = problems | (F.col("__badc") > 0)
    joined = joined.select(*codes, n, *flags, problems.alias("__problem"))
    if to_driver:
        return _fetched(joined, spec, chains, inp, exact)
    cells = joined.select(*codes, n.alias("n"))
    joined = joined.persist()
    try:
        paths = _path_checks(spec)
        found = joined.agg(
            F.sum(F.col("__problem").cast("long")), *paths, F.count(F.lit(1)), F.try_sum(n)
        ).first()
        assert found is not None
        values = [int(v or 0) for v in found]
        _refuse_found(values[: 1 + len(paths)], spec, chains, inp, exact)
    except BaseException:
        joined.unpersist()
        raise
    total = COUNT_LIMIT + 1 if found[-1] is None else values[-1]  # NULL: beyond 64 bits
    return CellsTable(cells, values[-2], total, joined)


def _fetched(
    joined: DataFrame,
    spec: TreeSpec,
    chains: Sequence[CodedChain],
    inp: SparkSource,
    exact: _Exact,
) -> CellsTable:
    """The joined groups of :func:`_code_cells` fetched to the driver as Arrow (leaf codes,
    ``__n``, the flags: the job that groups the input and codes the cells, nothing cached),
    checked there as :func:`_path_checks` checks them in Spark; the cells table is its
    non-empty leaf cells (:attr:`CellsTable.leaf`)."""
    leaf = leaf_code_columns(spec)
    flags = [f"__bad{c}" for c, chain in enumerate(spec.chains) if len(chain) > 1]
    tab = joined.select(*leaf, "__n", *flags, "__problem").toArrow()

    def trues(name: str) -> int:
        return int(pc.sum(tab.column(name)).as_py() or 0)

    found = [trues("__problem"), *(tab.column(x).null_count for x in leaf), *map(trues, flags)]
    _refuse_found(found, spec, chains, inp, exact)
    n = tab.column("__n")
    counts = np.asarray(pc.fill_null(n, 0).to_numpy(), dtype=np.int64)
    total = COUNT_LIMIT + 1 if n.null_count else exact_sum(counts)  # NULL: beyond 64 bits
    fetched = fetched_cells(tab, spec, counts, [ch.tree for ch in chains])
    return CellsTable(None, tab.num_rows, total, None, fetched)


def _refuse_found(
    found: Sequence[int],
    spec: TreeSpec,
    chains: Sequence[CodedChain],
    inp: SparkSource,
    exact: _Exact,
) -> None:
    """Refuse what the checks of :func:`_code_cells` found (``found``: the groups with a
    problem, then :func:`_path_checks`' numbers): NULL or NaN leaves, bad counts and cells too
    large first (:class:`_Exact`), then leaves outside the domain and other ancestors."""
    if found[0] or any(found[1 : 1 + len(spec.chains)]):
        exact.refuse()  # NULL or NaN leaves, bad counts, cells too large
    _refuse_paths(spec, chains, inp, found[1:])


def _ancestors_differ(c: int, chain: Sequence[str]) -> Column:
    bad: Column = F.lit(False)
    for i, col in enumerate(chain[:-1]):
        bad = bad | ~_c(col).eqNullSafe(F.col(f"__dom{c}_{i}"))
    return bad


def _path_checks(spec: TreeSpec) -> list[Column]:
    """Per chain: groups whose leaf value is not in the domain; then per chain of several
    columns, groups flagged by :func:`_code_cells` (for :func:`_refuse_paths`)."""
    checks = [
        F.sum(F.col(depth_code(c, len(chain))).isNull().cast("long"))
        for c, chain in enumerate(spec.chains)
    ]
    checks += [
        F.sum(F.col(f"__bad{c}").cast("long"))
        for c, chain in enumerate(spec.chains)
        if len(chain) > 1
    ]
    return checks


def _refuse_paths(
    spec: TreeSpec,
    chains: Sequence[CodedChain],
    inp: SparkSource,
    found: Sequence[int],
) -> None:
    """Leaf values must be in the domain, and every input row's ancestors must be those the
    domain gives its leaf: the numbers of :func:`_path_checks`; an offending value is looked up
    only on error (the input's rows compared value by value with the domain's path of their
    leaf, as :func:`_ancestors_flag` compares the groups). The input's NULL and NaN leaves are
    refused before."""
    k = len(spec.chains)
    for c, chain in enumerate(spec.chains):
        if not found[c]:
            continue
        dom = chains[c].codes.select(_c(chain[-1]).alias("__dom"))
        missing = (
            inp.df.select(_c(chain[-1]))
            .distinct()
            .join(chains[c].joinable(dom), _c(chain[-1]) == F.col("__dom"), "left_anti")
        )
        n_values, value = missing.agg(F.count(F.lit(1)), F.min(_c(chain[-1]))).first() or (0, None)
        raise DomainError(
            f"{n_values} value(s) of {chain[-1]!r} in the input are not in the domain, e.g. "
            f"{chain[-1]}={value!r}; add them to the public domain table or fix the input"
        )
    bad_counts = iter(found[k:])
    for c, (chain, coded) in enumerate(zip(spec.chains, chains, strict=True)):
        if len(chain) == 1 or not next(bad_counts):
            continue
        dom = coded.codes.select(*[_c(col).alias(f"__dom{c}_{i}") for i, col in enumerate(chain)])
        rows = inp.df.select(*[_c(col) for col in chain]).join(
            coded.joinable(dom), _c(chain[-1]) == F.col(f"__dom{c}_{len(chain) - 1}")
        )
        ex = rows.where(_ancestors_differ(c, chain)).select(*[_c(col) for col in chain]).first()
        if ex is None:
            continue
        for col, value in zip(chain, ex, strict=True):
            if value is None:
                raise InputDataError(
                    f"hierarchy column {col!r} of the input has NULL values; every record needs "
                    "a value in every hierarchy column (filter or fill them first)"
                )
        shown = ", ".join(f"{col}={v!r}" for col, v in zip(chain, ex, strict=True))
        raise DomainError(
            f"input path ({shown}) is not in the domain: the domain puts "
            f"{chain[-1]}={ex[-1]!r} under other ancestors; fix the input's "
            f"{', '.join(chain[:-1])} or the domain"
        )


def level_key(spec: TreeSpec, level: int, strides: Sequence[int]) -> Column:
    """The mixed-radix key of a level's cell from the cells table's codes."""
    key: Column = F.lit(0).cast("long")
    for c, (depth, stride) in enumerate(zip(spec.levels[level], strides, strict=True)):
        if depth:
            key = key + F.col(depth_code(c, depth)).cast("long") * F.lit(int(stride))
    return key


def level_counts(
    cells: DataFrame, spec: TreeSpec, level: int, strides: tuple[int, ...]
) -> tuple[I64, I64]:
    """True non-zero counts of one level, sorted by key, collected to the driver (for the
    mechanisms that run there: the full-domain baselines)."""
    tab = (
        cells.where(F.col("n") > 0)
        .groupBy(level_key(spec, level, strides).alias("key"))
        .agg(F.sum("n").cast("long").alias("n"))
        .orderBy("key")
        .toArrow()
    )
    return (
        tab.column("key").to_numpy().astype(np.int64, copy=False),
        tab.column("n").to_numpy().astype(np.int64, copy=False),
    )


def check_unit(inp: SparkSource, unit: object, columns: Sequence[str], count: str | None) -> str:
    """The privacy-unit column: present, not a hierarchy or count column, never NULL."""
    if not isinstance(unit, str) or not unit:
        raise SpecError(f"privacy_unit must be a column name, got {unit!r}", param="privacy_unit")
    stored = inp.column(unit, "privacy unit")
    check_scalar_type(inp, unit, "privacy unit column", InputDataError)
    if unit.lower() in {c.lower() for c in columns}:
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
            " says rows are pre-aggregated; expand them first or drop ",
            Arg("privacy_unit"),
            param="privacy_unit",
        )
    nulls = inp.df.where(_c(stored).isNull()).count()
    if nulls:
        raise InputDataError(
            f"privacy unit column {stored!r} has {nulls} NULL value(s); every "
            "record must belong to a unit (drop or label them first)"
        )
    return stored
