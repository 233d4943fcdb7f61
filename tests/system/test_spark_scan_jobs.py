"""The Spark scan's jobs: few, nothing cached when every level runs on the driver, and the same
refusals whichever way the cells go.

When the public domain has at most ``spark.inftda.driverChildren`` leaf cells, every level runs
on the driver: the scan then fetches the coded cells in the job that groups the input and
checks them there (at most three Spark jobs: the code tables broadcast, the ``GROUP BY``'s map
stage, its reduce with the join and the fetch) and caches nothing in Spark. Otherwise the cells
are cached for the levels in Spark's tasks, and the refusals of test_spark_scan.py hold there
too. The jobs are counted with Spark's status tracker (a job group around the engine's scan).
One SparkSession for the module (the fixtures of test_spark.py); skipped when pyspark or Java
is missing.
"""

from __future__ import annotations

import uuid
from typing import Any

import duckdb
import pytest

from inftda_sql import synthetic
from tests.system.test_spark import OD, _rows, _to_spark, sdb, spark
from tests.system.test_spark_scan import CASES, _frame, _release_counts

pytest.importorskip("pyspark", reason="pyspark is not installed: pip install -e '.[test]'")

__all__ = ["sdb", "spark"]  # the shared fixtures

MAX_JOBS = 3  # the scan's Spark jobs when its cells go to the driver
#: what the scan sets for its own query only
_SETTINGS = (
    "spark.sql.codegen.aggregate.fastHashMap.capacityBit",
    "spark.sql.execution.bypassPartialAggregation",
)


@pytest.mark.parametrize("count", [None, "n"], ids=["microdata", "count table"])
def test_a_scan_for_the_driver_takes_three_jobs_and_caches_nothing(
    spark: Any, sdb: str, monkeypatch: pytest.MonkeyPatch, count: str | None
) -> None:
    """Every level on the driver: the scan in at most three Spark jobs, nothing left cached
    in Spark, and the seeded table and levels of DuckDB."""
    import inftda_sql.spark
    from inftda_sql.engines.spark.engine import SparkEngine

    con = duckdb.connect()
    d = synthetic.italy_like(con, scale=0.002, microdata=count is None)
    for table in (d.trips, d.geo_origin, d.geo_destination):
        _to_spark(spark, con, f"SELECT * FROM {table}", table)
    kwargs: dict[str, Any] = dict(
        hierarchy=OD, domain=[d.geo_origin, d.geo_destination], count=count, rho=1.0, seed=11
    )
    duck = inftda_sql.release(con, d.trips, output="out", **kwargs)

    sc = spark.sparkContext
    group = f"scan-{uuid.uuid4().hex[:8]}"
    scan = SparkEngine.scan
    cached: list[int] = []

    def grouped(self: SparkEngine) -> Any:
        sc.setJobGroup(group, "the scan")
        try:
            return scan(self)
        finally:
            sc.setLocalProperty("spark.jobGroup.id", None)
            cached.append(sc._jsc.getPersistentRDDs().size())

    monkeypatch.setattr(SparkEngine, "scan", grouped)
    sk = inftda_sql.spark.release(spark, d.trips, output="out", **kwargs)
    jobs = len(sc.statusTracker().getJobIdsForGroup(group))
    assert 1 <= jobs <= MAX_JOBS, jobs
    assert cached == [0]
    assert all(spark.conf.get(key, None) is None for key in _SETTINGS)  # restored
    assert _rows(spark, "out") == sorted(con.sql("SELECT * FROM out").fetchall())
    assert [lv.surviving_cells for lv in sk.levels] == [lv.surviving_cells for lv in duck.levels]
    assert sk.total == duck.total


def test_every_refusal_of_a_scan_whose_cells_stay_in_spark(spark: Any, sdb: str) -> None:
    """The refusals of test_spark_scan.py, word for word, when the levels run in Spark's tasks
    (the cells cached in Spark, checked there)."""
    spark.conf.set("spark.inftda.driverChildren", "0")
    try:
        for name, (dtype, rows, error, message) in CASES.items():
            with pytest.raises(error) as info:
                _release_counts(spark, _frame(spark, dtype, rows), "o")
            assert type(info.value) is error and str(info.value) == message, name
    finally:
        spark.conf.unset("spark.inftda.driverChildren")
    assert not spark.catalog.tableExists("o")


@pytest.mark.parametrize(
    ("setting", "fetched"), [(5000, True), (999, False)], ids=["rows fit", "rows do not fit"]
)
def test_cells_go_to_the_driver_when_the_inputs_rows_fit(
    spark: Any, sdb: str, monkeypatch: pytest.MonkeyPatch, setting: int, fetched: bool
) -> None:
    """An O/D domain of 7,900 x 7,900 leaf cells is far above ``spark.inftda.driverChildren``,
    but the input's 1,000 rows are at most 5,000: the scan fetches its cells to the driver and
    caches nothing; the levels above 5,000 children then run in Spark's tasks on the cells
    handed back from the driver (the input is not read again). Below the input's rows (999),
    the cells are cached in Spark. The seeded DuckDB table either way."""
    import inftda_sql.spark
    from inftda_sql.engines.spark import engine as spark_engine
    from inftda_sql.engines.spark.engine import SparkEngine

    con = duckdb.connect()
    d = synthetic.italy_like(con, scale=0.002, microdata=False)
    for table in (d.trips, d.geo_origin, d.geo_destination):
        _to_spark(spark, con, f"SELECT * FROM {table}", table)
    kwargs: dict[str, Any] = dict(
        hierarchy=OD, domain=[d.geo_origin, d.geo_destination], count="n", rho=1.0, seed=11
    )
    duck = inftda_sql.release(con, d.trips, output="out", **kwargs)
    assert con.sql(f"SELECT count(*) FROM {d.trips}").fetchall() == [(1000,)]
    assert max(lv.noised_cells for lv in duck.levels) > 5000  # some level runs in tasks

    sc = spark.sparkContext
    scan = SparkEngine.scan
    cached: list[int] = []
    handed_back: list[int] = []

    def watched(self: SparkEngine) -> Any:
        try:
            return scan(self)
        finally:
            cached.append(sc._jsc.getPersistentRDDs().size())

    def cells_frame(session: Any, cells: Any, spec: Any) -> Any:
        handed_back.append(cells.counts.size)
        return frame_of(session, cells, spec)

    frame_of = spark_engine.cells_frame
    monkeypatch.setattr(SparkEngine, "scan", watched)
    monkeypatch.setattr(spark_engine, "cells_frame", cells_frame)
    spark.conf.set("spark.inftda.driverChildren", str(setting))
    try:
        sk = inftda_sql.spark.release(spark, d.trips, output="out", **kwargs)
    finally:
        spark.conf.unset("spark.inftda.driverChildren")
    assert (cached == [0]) is fetched, cached
    cells = con.sql(f"SELECT count(DISTINCT (o_mun, d_mun)) FROM {d.trips} WHERE n > 0")
    assert handed_back == (list(cells.fetchall()[0]) if fetched else [])
    assert _rows(spark, "out") == sorted(con.sql("SELECT * FROM out").fetchall())
    assert [lv.surviving_cells for lv in sk.levels] == [lv.surviving_cells for lv in duck.levels]
    assert [lv.noised_cells for lv in sk.levels] == [lv.noised_cells for lv in duck.levels]
