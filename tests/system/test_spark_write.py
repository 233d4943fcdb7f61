"""The write stage on Spark: a released table decoded on the driver goes to Spark as Arrow.

A release whose every level ran on the driver decodes its table there; Spark then gets it as
Arrow batches read by ``ceil(rows / ROWS_PER_TASK)`` tasks (one file of the output each), not
as rows held in the plan (which the driver converts one by one and ships inside the write's
tasks, in as many parts as the cluster has cores), and the session's Arrow settings are as they
were. One SparkSession for the module (the fixtures of test_spark.py); skipped when pyspark or
Java is missing.
"""

from __future__ import annotations

import math
from typing import Any

import duckdb
import pytest

from inftda_sql import synthetic
from tests.system.test_spark import OD, _rows, _to_spark, sdb, spark

pytest.importorskip("pyspark", reason="pyspark is not installed: pip install -e '.[test]'")

__all__ = ["sdb", "spark"]  # the shared fixtures

SETTINGS = (
    "spark.sql.execution.arrow.localRelationThreshold",
    "spark.sql.execution.arrow.maxRecordsPerBatch",
)


def test_a_driver_release_is_written_in_parts_of_rows_per_task(
    spark: Any, sdb: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One file for a small release (a part per ROWS_PER_TASK rows, whatever the cores), the
    seeded DuckDB table, and the session's Arrow settings put back: unset stays unset, a value
    set stays that value."""
    import inftda_sql.spark
    from inftda_sql.engines.spark import frames

    con = duckdb.connect()
    d = synthetic.italy_like(con, scale=0.002, microdata=False)
    for table in (d.trips, d.geo_origin, d.geo_destination):
        _to_spark(spark, con, f"SELECT * FROM {table}", table)
    kwargs = dict(
        hierarchy=OD, domain=[d.geo_origin, d.geo_destination], count="n", rho=1.0, seed=11
    )
    duck = inftda_sql.release(con, d.trips, output="out", **kwargs)
    rows = con.sql("SELECT count(*) FROM out").fetchall()[0][0]
    assert rows > 100
    spark.conf.set(SETTINGS[1], "777")
    try:
        sk = inftda_sql.spark.release(spark, d.trips, output="out", **kwargs)
        assert spark.conf.get(SETTINGS[0], None) is None
        assert spark.conf.get(SETTINGS[1], None) == "777"
    finally:
        spark.conf.unset(SETTINGS[1])
    assert len(spark.table(sk.output).inputFiles()) == 1
    assert _rows(spark, "out") == sorted(con.sql("SELECT * FROM out").fetchall())

    per_task = rows // 3 + 1  # three parts
    monkeypatch.setattr(frames, "ROWS_PER_TASK", per_task)
    again = inftda_sql.spark.release(spark, d.trips, output="out3", **kwargs)
    assert len(spark.table(again.output).inputFiles()) == math.ceil(rows / per_task) == 3
    assert _rows(spark, "out3") == _rows(spark, "out")
    assert [lv.surviving_cells for lv in sk.levels] == [lv.surviving_cells for lv in duck.levels]


def test_a_tables_digest_sums_its_row_hashes_exactly(spark: Any) -> None:
    """The digest's sum of the rows' ``xxhash64`` (taken in 64-bit parts, not as a decimal) is
    the exact sum, negative and large hashes included, so a digest is what the fingerprint
    method says and what earlier ledger rows recorded."""
    import functools
    import operator

    from pyspark.sql import functions as F

    from inftda_sql.engines.spark import fingerprint

    df = spark.range(20_000).selectExpr("id", "CAST(id * 7919 % 13 AS STRING) AS k")
    hashes = [r[0] for r in df.select(F.xxhash64("id", "k")).collect()]
    assert min(hashes) < -(2**62) and max(hashes) > 2**62
    row = df.agg(*fingerprint._aggregates(df)).first()
    assert row is not None
    found = row.asDict()
    assert fingerprint._total(found) == sum(hashes)
    assert found["n"] == len(hashes)
    assert found["xor"] == functools.reduce(operator.xor, hashes)
