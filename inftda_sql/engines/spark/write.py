"""Write stage on Spark: the released table, its levels view, then the ledger row.

The released leaves (a code per chain and a count) are decoded to the hierarchy columns by a
broadcast join with each chain's code table (on the driver when every level ran there: the
table then goes to Spark as Arrow batches, :func:`~.frames.from_driver`) and saved as a table
of the catalog (parquet in the warehouse unless the catalog says otherwise), so it joins with
the geography like any table. The levels view (every level as sums of the leaves, ``GROUPING
SETS``, with each level's error bound and typical error as on DuckDB) follows, and the ledger
row (with the content fingerprint of both, :mod:`.fingerprint`) is appended (to the ledger
folder, :mod:`.ledger`) only after both are complete; if that append fails, the output and view
are dropped again, so no release is visible without its row.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Protocol

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ...core.bounds import sql_constant, view_bounds
from ...core.spec import TreeSpec
from ..records import ReleaseRecord
from . import fingerprint
from .catalog import quote
from .domain import CodedChain, depth_code

__all__ = ["Append", "decode", "levels_view_sql", "write_release"]


class Append(Protocol):
    """Appends the ledger row of what was written (``made``: SQL names), with the digests of
    those already taken as they were written (``known``, by name), and returns it."""

    def __call__(
        self, record: ReleaseRecord, made: Sequence[str], known: Mapping[str, str] | None = None
    ) -> ReleaseRecord: ...


def decode(leaves: DataFrame, spec: TreeSpec, chains: Sequence[CodedChain]) -> DataFrame:
    """Leaves with codes ``c0, c1, ...`` and ``v`` -> the hierarchy columns and ``count``."""
    out = leaves
    for c, (chain, coded) in enumerate(zip(spec.chains, chains, strict=True)):
        codes = coded.codes.select(
            *[F.col(quote(col)) for col in chain], F.col(depth_code(c, len(chain)))
        )
        out = out.join(coded.joinable(codes), F.col(f"c{c}") == F.col(depth_code(c, len(chain))))
    return out.select(*[F.col(quote(col)) for col in spec.columns], F.col("v").alias("count"))


def levels_view_sql(
    spec: TreeSpec,
    view: str,
    output: str,
    bounds: Mapping[str, tuple[float | None, float | None]] | None = None,
) -> str:
    """A view with every level of the release (level 0 = root) as sums of the leaves.

    ``grouping_id()`` numbers the grouping columns in the order they first appear in the
    grouping sets (Spark's rule), so the masks are computed in that order. ``bounds``: per
    level name, ``(error bound, typical error)``, public constants read from the ledger row
    (:func:`~inftda_sql.core.bounds.view_bounds`; None is NULL), written as the columns
    ``error_bound`` and ``typical_error`` as on DuckDB; without it the view has no such columns.
    """
    sets = [spec.grouped_columns(level) for level in range(len(spec.levels))]
    order: list[str] = []
    for grouped in sets:
        order += [c for c in grouped if c not in order]
    cases, labels, bound, typical = [], [], [], []
    for level in range(len(sets)):
        mask = spec.grouping_mask(level, order)
        cases.append(f"WHEN {mask} THEN {level}")
        name = spec.level_name(level).replace("\\", "\\\\").replace("'", "\\'")
        labels.append(f"WHEN {mask} THEN '{name}'")
        if bounds is not None:
            b, t = bounds.get(spec.level_name(level), (None, None))
            bound.append(f"WHEN {mask} THEN {sql_constant(b)}")
            typical.append(f"WHEN {mask} THEN {sql_constant(t)}")
    extra = ""
    if bounds is not None:
        extra = (
            f",\n       CAST(CASE grouping_id() {' '.join(bound)} END AS DOUBLE) AS error_bound"
            f",\n       CAST(CASE grouping_id() {' '.join(typical)} END AS DOUBLE) AS typical_error"
        )
    cols = ", ".join(quote(c) for c in spec.columns)
    grouping_sets = ", ".join("(" + ", ".join(quote(c) for c in g) + ")" for g in sets)
    return (
        f"CREATE OR REPLACE VIEW {view} AS\n"
        f"SELECT CASE grouping_id() {' '.join(cases)} END AS level,\n"
        f"       CASE grouping_id() {' '.join(labels)} END AS level_name,\n"
        f"       {cols},\n"
        f"       CAST(coalesce(sum(`count`), 0) AS BIGINT) AS `count`{extra}\n"
        f"FROM {output}\n"
        f"GROUP BY GROUPING SETS ({grouping_sets})"
    )


def write_release(
    spark: SparkSession,
    released: DataFrame,
    spec: TreeSpec,
    *,
    output: str,
    view: str | None,
    overwrite: bool,
    record: ReleaseRecord,
    append: Append,
) -> ReleaseRecord:
    """Save the output table and its levels view, then ``append`` the ledger row (which
    fingerprints what was written, given the output's digest taken as it was written, and names
    the release's budget reservation); if that fails, the output and view are dropped again."""
    mode = "overwrite" if overwrite else "errorifexists"
    observed, observation = fingerprint.observed(released)  # its digest, in the same job
    observed.write.mode(mode).saveAsTable(output)
    try:
        if view is not None:
            # the bounds are public constants of the ledger row (computed from public parameters)
            spark.sql(levels_view_sql(spec, view, output, view_bounds(record.details)))
        digest = fingerprint.written(spark, output, released, observation)
        made = [output] if view is None else [output, view]
        return append(record, made, {output: digest} if digest else {})
    except BaseException:
        if view is not None:
            spark.sql(f"DROP VIEW IF EXISTS {view}")
        spark.sql(f"DROP TABLE IF EXISTS {output}")
        raise


def with_base_tables(record: ReleaseRecord, keys: Sequence[str]) -> ReleaseRecord:
    """The record charged to these base tables."""
    return dataclasses.replace(record, base_tables=list(keys))
