"""Write stage on Spark: the released table, its levels view, then the ledger row.

The released leaves (a code per chain and a count) are decoded to the hierarchy columns by a
broadcast join with each chain's code table and saved as a table of the catalog (parquet in the
warehouse unless the catalog says otherwise), so it joins with the geography like any table. The
levels view (every level as sums of the leaves, ``GROUPING SETS``) follows, and the ledger row
(with the content fingerprint of both, :mod:`.fingerprint`) is appended (to the ledger folder,
:mod:`.ledger`) only after both are complete; if that append fails, the output and view are
dropped again, so no release is visible without its row.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ...core.spec import TreeSpec
from ..records import ReleaseRecord
from . import fingerprint
from .catalog import quote
from .domain import CodedChain, depth_code
from .ledger import FileLedger, Reservation, register_views

__all__ = ["decode", "levels_view_sql", "write_release"]


def decode(leaves: DataFrame, spec: TreeSpec, chains: Sequence[CodedChain]) -> DataFrame:
    """Leaves with codes ``c0, c1, ...`` and ``v`` -> the hierarchy columns and ``count``."""
    out = leaves
    for c, (chain, coded) in enumerate(zip(spec.chains, chains, strict=True)):
        codes = coded.codes.select(
            *[F.col(quote(col)) for col in chain], F.col(depth_code(c, len(chain)))
        )
        out = out.join(coded.joinable(codes), F.col(f"c{c}") == F.col(depth_code(c, len(chain))))
    return out.select(*[F.col(quote(col)) for col in spec.columns], F.col("v").alias("count"))


def levels_view_sql(spec: TreeSpec, view: str, output: str) -> str:
    """A view with every level of the release (level 0 = root) as sums of the leaves.

    ``grouping_id()`` numbers the grouping columns in the order they first appear in the
    grouping sets (Spark's rule), so the masks are computed in that order.
    """
    sets = []
    for depths in spec.levels:
        in_set = {col for chain, d in zip(spec.chains, depths, strict=True) for col in chain[:d]}
        sets.append([c for c in spec.columns if c in in_set])
    order: list[str] = []
    for grouped in sets:
        order += [c for c in grouped if c not in order]
    cases, labels = [], []
    for level, grouped in enumerate(sets):
        mask = 0
        for col in order:
            mask = (mask << 1) | (0 if col in grouped else 1)
        cases.append(f"WHEN {mask} THEN {level}")
        name = spec.level_name(level).replace("\\", "\\\\").replace("'", "\\'")
        labels.append(f"WHEN {mask} THEN '{name}'")
    cols = ", ".join(quote(c) for c in spec.columns)
    grouping_sets = ", ".join("(" + ", ".join(quote(c) for c in g) + ")" for g in sets)
    return (
        f"CREATE OR REPLACE VIEW {view} AS\n"
        f"SELECT CASE grouping_id() {' '.join(cases)} END AS level,\n"
        f"       CASE grouping_id() {' '.join(labels)} END AS level_name,\n"
        f"       {cols},\n"
        f"       CAST(coalesce(sum(`count`), 0) AS BIGINT) AS `count`\n"
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
    ledger: FileLedger,
    reservation: Reservation | None,
    record: ReleaseRecord,
) -> ReleaseRecord:
    """Save the output table and its levels view, then append the ledger row (which names the
    release's budget reservation, so the two are counted once)."""
    mode = "overwrite" if overwrite else "errorifexists"
    released.write.mode(mode).saveAsTable(output)
    try:
        if view is not None:
            spark.sql(levels_view_sql(spec, view, output))
        made = [output] if view is None else [output, view]
        record = dataclasses.replace(record, fingerprint=fingerprint.take(spark, made))
        written = ledger.append_release(record, reservation)
    except BaseException:
        if view is not None:
            spark.sql(f"DROP VIEW IF EXISTS {view}")
        spark.sql(f"DROP TABLE IF EXISTS {output}")
        raise
    register_views(spark, ledger)
    return written


def with_base_tables(record: ReleaseRecord, keys: Sequence[str]) -> ReleaseRecord:
    """The record charged to these base tables."""
    return dataclasses.replace(record, base_tables=list(keys))
