"""The public domains' distinct paths on Spark (engines/spark/domain.py): a small domain is
fetched in one job and made distinct on the driver, with the rows Spark's ``DISTINCT`` gives;
floating values keep Spark's equality (one zero, one NaN). One SparkSession for the module (the
fixtures of test_spark.py); skipped when pyspark or Java is missing."""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.system.test_spark import sdb, spark

pytest.importorskip("pyspark", reason="pyspark is not installed: pip install -e '.[test]'")

__all__ = ["sdb", "spark"]  # the shared fixtures


def _jobs(spark: Any, work: Callable[[], Any]) -> tuple[Any, int]:
    """``work()``'s result and how many Spark jobs it ran."""
    sc, group = spark.sparkContext, f"inftda-domain-{uuid.uuid4().hex}"
    sc.setJobGroup(group, "distinct paths of a domain")
    try:
        found = work()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
        sc.setLocalProperty("spark.job.description", None)
    return found, len(sc.statusTracker().getJobIdsForGroup(group))


def _rows(table: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(r.values()) for r in table.to_pylist()), key=lambda r: tuple(map(repr, r)))


def test_a_small_domain_is_made_distinct_on_the_driver(
    spark: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Repeated paths, a NULL, two chains in one query, read from files (whose size Spark
    knows without a job): one job on the driver's side of the threshold, and the same rows as
    Spark's DISTINCT (two jobs) when the threshold is 0."""
    from pyspark.sql import types as T

    from inftda_sql.engines.spark import domain

    rows = [("a", 1), ("a", 1), ("b", None), ("b", None), ("c", 2), ("c", 3)]
    spark.createDataFrame(rows, "r string, m int").write.parquet(str(tmp_path / "first"))
    spark.createDataFrame([(10,), (10,), (11,)], "k long").write.parquet(str(tmp_path / "second"))
    first = spark.read.parquet(str(tmp_path / "first"))
    second = spark.read.parquet(str(tmp_path / "second"))
    chains, types = [["r", "m"], ["k"]], [[T.StringType(), T.LongType()], [T.LongType()]]
    fetched, n_jobs = _jobs(spark, lambda: domain.distinct_paths([first, second], chains, types))
    assert n_jobs == 1
    assert _rows(fetched[0]) == [
        ("a", 1, False),
        ("b", None, False),
        ("c", 2, False),
        ("c", 3, False),
    ]
    assert _rows(fetched[1]) == [(10, False), (11, False)]
    monkeypatch.setattr(domain, "DRIVER_DOMAIN_BYTES", 0)
    in_spark, n_jobs = _jobs(spark, lambda: domain.distinct_paths([first, second], chains, types))
    assert n_jobs >= 2  # a DISTINCT: a map and a reduce stage
    assert [_rows(t) for t in in_spark] == [_rows(t) for t in fetched]
    assert [t.schema for t in in_spark] == [t.schema for t in fetched]


def test_floating_values_keep_sparks_equality(spark: Any) -> None:
    """-0.0 and 0.0 are one value, and so is every NaN, as in Spark's DISTINCT (Arrow's
    grouping would keep them apart): floating domains are made distinct by Spark."""
    from pyspark.sql import types as T

    from inftda_sql.engines.spark import domain

    frame = spark.createDataFrame(
        [(0.0,), (-0.0,), (float("nan"),), (float("nan"),), (1.5,)], "x double"
    )
    found = domain.distinct_paths([frame], [["x"]], [[T.DoubleType()]])[0]
    values = found.column("x").to_pylist()
    assert len(values) == 3
    assert sum(1 for v in values if math.isnan(v)) == 1
    assert sorted(v for v in values if not math.isnan(v)) == [0.0, 1.5]
