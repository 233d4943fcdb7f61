"""The stages of a feature release (CBDP) on Spark: domain, the one scan, the write.

The same stages as DuckDB's (:mod:`inftda_sql.engines.duckdb.features`), in Spark:

* :func:`code_domain` reads each PUBLIC domain table's feature columns to the driver (the
  leaf columns cast to the input's types) and codes them with the engine-free
  :func:`~inftda_sql.core.features.code_lattice`, which checks that every feature is a
  coarsening of the leaf; each table's code table (its leaf columns and the leaf code of every
  row) goes back to Spark to be broadcast.
* :func:`scan` is the ONE pass over the private input: its leaf columns joined to the code
  tables and grouped by leaf code in Spark, with the checks of the hierarchy scan (NULL leaves,
  bad counts, leaves outside the domain, contribution bounding) before any noise. The leaf
  counts come to the driver as a dense array (CBDP's least squares is global: the leaf lattice
  is bounded by ``max_cells`` before any data is read), and every coarser feature is summed
  from them exactly: the same numbers as DuckDB's GROUPING SETS.
* :func:`write` decodes the released leaves on the driver from the public domain, saves them
  as a table of the catalog with the features view, then appends the ledger row; if that fails
  the table and view are dropped again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ..._errors import DomainError, InputDataError, InternalError, SpecError
from ..._request import ReleaseRequest
from ...core.accounting import Guarantee
from ...core.arrays import I64
from ...core.features import FeatureSpec, Lattice, code_lattice
from ...core.rng import RandomSource
from ...mechanisms.base import FeatureResult
from ..base import Scan
from ..checks import COUNT_LIMIT, too_large
from ..records import ReleaseRecord
from .catalog import (
    SparkSource,
    check_scalar_type,
    count_column,
    quote,
    sql_name,
    type_family,
)
from .frames import from_driver
from .scan import (
    bound_units,
    check_unit,
    count_aggregates,
    describe,
    unit_diagnostics,
    validate,
    with_records,
)

__all__ = [
    "FeatureStages",
    "code_domain",
    "features_view_sql",
    "released_table",
    "scan",
    "write",
]

#: the column of a code table holding the leaf code of its row
_CODE = "__leaf_code"


def input_leaf_columns(spec: FeatureSpec, inp: SparkSource) -> dict[str, str]:
    """Lower-case leaf column -> its stored name in the input; a clear error if missing."""
    return {
        c.lower(): inp.column(c, f"leaf column of feature {spec.leaf.name!r}")
        for c in spec.leaf.columns
    }


def _check_types(spec: FeatureSpec, inp: SparkSource, domains: Sequence[SparkSource]) -> None:
    for dom in domains:
        for col in spec.leaf.columns:
            key = col.lower()
            if key not in dom.types or key not in inp.types:
                continue
            if type_family(dom.types[key]) != type_family(inp.types[key]):
                raise DomainError(
                    f"column {inp.names[key]!r} is {inp.types[key].simpleString()} in the input "
                    f"but {dom.types[key].simpleString()} in {dom.description}; cast one of "
                    "them in a view so both have the same type"
                )


def code_domain(
    spark: SparkSession, spec: FeatureSpec, inp: SparkSource, domains: Sequence[SparkSource]
) -> tuple[Lattice, list[DataFrame]]:
    """Fetch, check and code the public domain; one code table per domain table."""
    _check_types(spec, inp, domains)
    wanted = {c.lower() for c in spec.columns}
    tables = []
    for dom in domains:
        cols = [stored for key, stored in dom.names.items() if key in wanted]
        if not cols:
            tables.append(pa.table({}))
            continue
        select = [
            F.col(quote(c)).cast(inp.types[c.lower()]).alias(c)
            if c.lower() in inp.types and c.lower() in {x.lower() for x in spec.leaf.columns}
            else F.col(quote(c))
            for c in cols
        ]
        describe(spark, "domain: the public feature tables")
        tables.append(dom.df.select(*select).toArrow())
    describe(spark, None)
    lattice = code_lattice(spec, tables, [d.description for d in domains])
    leaf = {c.lower() for c in spec.leaf.columns}
    frames = []
    for part in lattice.parts:
        keep = [c for c in part.columns if c.lower() in leaf]
        table = part.rows.select(keep).append_column(
            _CODE, pa.array(part.row_codes(lattice.leaf), pa.int64())
        )
        frames.append(F.broadcast(spark.createDataFrame(table)))
    return lattice, frames


def scan(
    lattice: Lattice,
    frames: Sequence[DataFrame],
    inp: SparkSource,
    *,
    count: str | None,
    count_is_integer: bool,
    privacy_unit: str | None,
    contribution: int,
    distinct: bool,
    source: RandomSource,
) -> tuple[Scan, list[I64]]:
    """Count the leaf cells in one Spark scan; every query's true counts (dense, zeros
    included) follow from them on the driver (module docstring)."""
    spec = lattice.spec
    leaf_cols = input_leaf_columns(spec, inp)
    df, unit, weight = inp.df, None, F.lit(1)
    if privacy_unit is not None:
        unit = check_unit(inp, privacy_unit, list(leaf_cols.values()), count)
        salt = source.words(4).tobytes().hex()
        df = bound_units(
            df, list(leaf_cols.values()), unit, distinct=distinct, m=contribution, salt=salt
        )
        weight = F.col("__keep").cast("long")
    aggs = count_aggregates(inp, count, count_is_integer, weight)
    describe(inp.df.sparkSession, "scan: GROUP BY of the input's leaf cells, checks")
    grouped = df.groupBy(*[F.col(quote(c)) for c in leaf_cols.values()]).agg(*aggs)
    leaf = with_records(grouped).persist()
    try:
        validate(leaf, list(leaf_cols.values()), count, inp)
        key = F.lit(0).cast("long")
        joined = leaf
        for t, (part, frame, stride) in enumerate(
            zip(lattice.parts, frames, lattice.strides(lattice.leaf), strict=True)
        ):
            on = [c for c in part.columns if c.lower() in leaf_cols]
            renamed = frame.select(
                *[F.col(quote(c)).alias(f"__d{t}_{i}") for i, c in enumerate(on)],
                F.col(_CODE).alias(f"__c{t}"),
            )
            cond = [
                F.col(quote(leaf_cols[c.lower()])) == F.col(f"__d{t}_{i}") for i, c in enumerate(on)
            ]
            joined = joined.join(renamed, cond, "left") if cond else joined.crossJoin(renamed)
            key = key + F.col(f"__c{t}").cast("long") * F.lit(int(stride))
        found = joined.select(key.alias("k"), F.col("__n").cast("long").alias("n")).toArrow()
        if found.column("k").null_count:
            _unmatched(joined, lattice, leaf_cols)
    finally:
        leaf.unpersist()
        describe(inp.df.sparkSession, None)
    keys = found.column("k").to_numpy(zero_copy_only=False).astype(np.int64)
    n = found.column("n").to_numpy(zero_copy_only=False).astype(np.int64)
    leaf_counts = np.zeros(lattice.n_leaf, dtype=np.int64)
    np.add.at(leaf_counts, keys, n)
    total = int(leaf_counts.sum())
    if total > COUNT_LIMIT:
        raise InputDataError(f"{inp.description}: {too_large(count)}")
    counts: list[I64] = []
    for q, size in enumerate(lattice.sizes):
        if q == lattice.leaf:
            counts.append(leaf_counts)
            continue
        summed = np.bincount(lattice.cell_map(q), weights=leaf_counts, minlength=size)
        counts.append(np.rint(summed).astype(np.int64))
    for q, c in enumerate(counts):
        if int(c.sum()) != total:
            raise InternalError(f"query {lattice.queries[q].name!r} does not sum to the leaves")
    return Scan(
        total=total,
        diagnostics=unit_diagnostics(inp, privacy_unit, contribution, distinct, total),
        privacy_unit=unit,
    ), counts


def _unmatched(joined: DataFrame, lattice: Lattice, leaf_cols: dict[str, str]) -> None:
    """Raise the error naming an input leaf the domain does not list (error path only)."""
    missing = F.lit(False)
    for t in range(len(lattice.parts)):
        missing = missing | F.col(f"__c{t}").isNull()
    cols = [F.col(quote(c)) for c in leaf_cols.values()]
    bad = joined.where(missing).select(*cols).distinct()
    n = bad.count()
    example = bad.orderBy(*cols).first()
    if example is None:  # pragma: no cover - found a NULL code above
        raise InternalError("input rows matched no domain cell, but none was found again")
    shown = ", ".join(f"{c}={v!r}" for c, v in zip(leaf_cols.values(), example, strict=True))
    raise DomainError(
        f"{n} leaf cell(s) of the input are not in the domain, e.g. ({shown}); add them to "
        "the public domain or fix the input"
    )


def released_table(lattice: Lattice, leaves: I64, counts: I64) -> pa.Table:
    """The released leaves decoded from the public domain: every feature column and
    ``count``, in the order of the leaf columns (as DuckDB writes it)."""
    spec = lattice.spec
    columns: dict[str, pa.Array] = {}
    for part, code in zip(lattice.parts, lattice.part_codes(leaves), strict=True):
        row_of = np.empty(part.n_rows, dtype=np.int64)
        row_of[part.row_codes(lattice.leaf)] = np.arange(part.n_rows, dtype=np.int64)
        rows = part.rows.take(pa.array(row_of[code]))
        for name in part.columns:
            columns.setdefault(name.lower(), rows.column(name).combine_chunks())
    table = pa.table(
        {
            **{c: columns[c.lower()] for c in spec.columns},
            "count": pa.array(np.asarray(counts, np.int64)),
        }
    )
    return table.sort_by([(c, "ascending") for c in spec.leaf.columns])


def features_view_sql(spec: FeatureSpec, view: str, output: str) -> str:
    """A view with every feature's released counts (``feature`` names it) as leaf sums.

    ``grouping_id()`` numbers the grouping columns in the order they first appear in the
    grouping sets (Spark's rule), so the masks are computed in that order.
    """
    sets = []
    for f in spec.features:
        mine = {c.lower() for c in f.columns}
        sets.append([c for c in spec.columns if c.lower() in mine])
    order: list[str] = []
    for grouped in sets:
        order += [c for c in grouped if c not in order]
    order += [c for c in spec.columns if c not in order]
    cases = []
    for f, grouped in zip(spec.features, sets, strict=True):
        mask = 0
        for col in order:
            mask = (mask << 1) | (0 if col in grouped else 1)
        name = f.name.replace("\\", "\\\\").replace("'", "\\'")
        cases.append(f"WHEN {mask} THEN '{name}'")
    cols = ", ".join(quote(c) for c in spec.columns)
    grouping_sets = ", ".join("(" + ", ".join(quote(c) for c in g) + ")" for g in sets)
    return (
        f"CREATE OR REPLACE VIEW {view} AS\n"
        f"SELECT CASE grouping_id({', '.join(quote(c) for c in order)}) {' '.join(cases)} END "
        "AS feature,\n"
        f"       {cols},\n"
        f"       CAST(coalesce(sum(`count`), 0) AS BIGINT) AS `count`\n"
        f"FROM {output}\n"
        f"GROUP BY GROUPING SETS ({grouping_sets})"
    )


def write(
    spark: SparkSession,
    lattice: Lattice,
    leaves: I64,
    counts: I64,
    *,
    output: str,
    view: str | None,
    overwrite: bool,
    record: ReleaseRecord,
    append: Callable[[ReleaseRecord, Sequence[str]], ReleaseRecord],
) -> ReleaseRecord:
    """Save the released leaves and the features view, then ``append`` the ledger row; if that
    fails, the table and view are dropped again."""
    table = released_table(lattice, leaves, counts)
    released = from_driver(spark, table)  # as Arrow, in few parts
    mode = "overwrite" if overwrite else "errorifexists"
    describe(spark, "write: the released leaves")
    try:
        released.write.mode(mode).saveAsTable(output)
        try:
            if view is not None:
                spark.sql(features_view_sql(lattice.spec, view, output))
            return append(record, [output] if view is None else [output, view])
        except BaseException:
            if view is not None:
                spark.sql(f"DROP VIEW IF EXISTS {view}")
            spark.sql(f"DROP TABLE IF EXISTS {output}")
            raise
    finally:
        describe(spark, None)


class FeatureStages:
    """The feature-release stages of :class:`~inftda_sql.engines.spark.engine.SparkEngine`
    (the :class:`~inftda_sql.engines.base.FeatureEngine` methods), on its resolved input and
    domains."""

    spark: SparkSession
    _domains: list[SparkSource]
    _domain_desc: list[str]
    _count: str | None
    _count_is_integer: bool
    _code_frames: list[DataFrame]

    @property
    def request(self) -> ReleaseRequest:  # pragma: no cover - SparkEngine's
        raise NotImplementedError

    @property
    def input(self) -> SparkSource:  # pragma: no cover - SparkEngine's
        raise NotImplementedError

    @property
    def output(self) -> str:  # pragma: no cover - SparkEngine's
        raise NotImplementedError

    def resolve_features(self) -> None:
        """Check the input holds the leaf's columns (and the count column); with the domain
        taken from the data, make it the input's distinct cells (NOT private)."""
        req, spec, inp = self.request, self.request.features, self.input
        for col in input_leaf_columns(spec, inp).values():
            check_scalar_type(inp, col, "leaf column", InputDataError)
        if req.count is not None:
            self._count, self._count_is_integer = count_column(inp, req.count)
            if req.count.lower() in {c.lower() for c in spec.leaf.columns}:
                raise SpecError(f"count column {req.count!r} is also a leaf column", param="count")
        if req.domains is None:
            cols = [
                inp.column(c, "feature column (the domain is taken from the data)")
                for c in spec.columns
            ]
            self._domains = [
                SparkSource(
                    inp.df.select(*[F.col(quote(c)) for c in cols]).distinct(),
                    "the input's distinct cells (FROM DATA, not private)",
                    None,
                )
            ]
            self._domain_desc.append("FROM DATA (not private)")
            return
        self._domain_desc.extend(dom.description for dom in self._domains)

    def code_lattice(self) -> Lattice:
        """The features coded on the public domain (nothing private is read)."""
        lattice, self._code_frames = code_domain(
            self.spark, self.request.features, self.input, self._domains
        )
        return lattice

    def feature_counts(self, lattice: Lattice) -> tuple[Scan, list[I64]]:
        """The one scan of the private input: every query's true counts."""
        req = self.request
        return scan(
            lattice,
            self._code_frames,
            self.input,
            count=self._count,
            count_is_integer=self._count_is_integer,
            privacy_unit=req.privacy_unit,
            contribution=req.contribution,
            distinct=req.distinct,
            source=req.source,
        )

    def write_features(
        self, lattice: Lattice, result: FeatureResult, record: ReleaseRecord
    ) -> ReleaseRecord:
        """Check the budget again, write the released leaves, the features view, then the
        ledger row; return the ledger row as written."""
        req = self.request
        record = self.recheck_budget(record, req.guarantee)
        return write(
            self.spark,
            lattice,
            result.leaves,
            result.counts,
            output=sql_name(self.output),
            view=sql_name(req.levels_view) if req.levels_view else None,
            overwrite=req.overwrite,
            record=record,
            append=self.append,
        )

    def released_features(self, lattice: Lattice) -> pa.Table:
        """Not on Spark: the released table stays in the cluster (``spark.table(r.output)``)."""
        raise SpecError(
            "a Spark release is not returned in memory; read spark.table(r.output)",
            param="return_as",
        )

    def recheck_budget(  # pragma: no cover - SparkEngine's
        self, record: ReleaseRecord, guarantee: Guarantee
    ) -> ReleaseRecord:
        raise NotImplementedError

    def append(  # pragma: no cover - SparkEngine's
        self, record: ReleaseRecord, made: Sequence[str]
    ) -> ReleaseRecord:
        raise NotImplementedError
