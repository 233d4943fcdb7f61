"""TopDown levels in Spark's tasks: few Spark jobs per level, the seeded DuckDB table.

With ``spark.inftda.driverChildren`` 0 every level below the root runs distributed
(:mod:`inftda_sql.engines.spark.topdown`). A Spark job costs a fixed share of a second or more
of driver and scheduling time whatever its size, so a level takes at most three: the summary
of its buckets collected, parents and cells sent to their blocks, the blocks noised and their
survivors written. The jobs are counted with Spark's status tracker: while the engine labels
its jobs ``level N ...``, the test puts them in a job group of the level's own. One SparkSession
for the module (the fixtures of test_spark.py); skipped when pyspark or Java is missing.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

import duckdb
import pytest

from inftda_sql import synthetic
from inftda_sql.core import topdown as _topdown
from tests.system.test_spark import OD, _rows, _to_spark, sdb, spark

pytest.importorskip("pyspark", reason="pyspark is not installed: pip install -e '.[test]'")

__all__ = ["sdb", "spark"]  # the shared fixtures

MAX_JOBS = 3  # Spark jobs per distributed level (2 when the driver reads the summary itself)


@pytest.mark.parametrize("local", [True, False], ids=["driver reads the summary", "Spark job"])
def test_a_level_in_spark_tasks_takes_at_most_three_jobs(
    spark: Any, sdb: str, monkeypatch: pytest.MonkeyPatch, local: bool
) -> None:
    """Every level in Spark's tasks (several blocks on the large ones): at most three Spark
    jobs a level, and the seeded table, levels and statistics of DuckDB; whether the driver
    reads the summary of a level's buckets from the scratch folder on its disk or, as from
    HDFS or an object store, through a Spark job."""
    import inftda_sql.spark
    from inftda_sql.engines.spark import topdown

    if not local:  # as if the scratch folder were not on the driver's disk
        monkeypatch.setattr(topdown, "local_folder", lambda spark, path: None)

    con = duckdb.connect()
    d = synthetic.italy_like(con, scale=0.002, microdata=False)
    for table in (d.trips, d.geo_origin, d.geo_destination):
        _to_spark(spark, con, f"SELECT * FROM {table}", table)
    monkeypatch.setattr(_topdown, "CHUNK_CHILDREN", 3000)  # several blocks per large level
    kwargs = dict(
        hierarchy=OD, domain=[d.geo_origin, d.geo_destination], count="n", rho=1.0, seed=11
    )
    duck = inftda_sql.release(con, d.trips, output="out", **kwargs)

    sc = spark.sparkContext
    run = uuid.uuid4().hex[:8]
    labelled = re.compile(r"level (\d+)\b")
    groups: dict[int, str] = {}
    describe = topdown.describe

    def per_level(session: Any, what: str | None) -> None:
        describe(session, what)
        found = labelled.match(what or "")
        if found:  # this level's jobs in a group of their own
            group = groups.setdefault(int(found.group(1)), f"{run}-{found.group(1)}")
            sc.setJobGroup(group, what or "")
        else:
            sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]

    monkeypatch.setattr(topdown, "describe", per_level)
    spark.conf.set("spark.inftda.driverChildren", "0")
    try:
        sk = inftda_sql.spark.release(spark, d.trips, output="out", **kwargs)
    finally:
        spark.conf.unset("spark.inftda.driverChildren")
        sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    tracker = sc.statusTracker()
    jobs = {level: len(tracker.getJobIdsForGroup(g)) for level, g in groups.items()}
    levels = range(1, len(duck.levels))  # every level below the root ran in Spark
    most = MAX_JOBS - 1 if local else MAX_JOBS
    assert all(1 <= jobs.get(level, 0) <= most for level in levels), jobs
    assert _rows(spark, "out") == sorted(con.sql("SELECT * FROM out").fetchall())
    assert [lv.surviving_cells for lv in sk.levels] == [lv.surviving_cells for lv in duck.levels]
    assert [lv.noised_cells for lv in sk.levels] == [lv.noised_cells for lv in duck.levels]
    assert [lv.parents for lv in sk.levels] == [lv.parents for lv in duck.levels]
    assert max(lv.noised_cells for lv in sk.levels) > 3 * 3000  # several blocks were drawn
