"""Separate Spark applications for tests/system/test_spark.py, run as subprocesses.

``python spark_apps.py ledger WAREHOUSE``: a second application in WAREHOUSE (its ledger by
default in WAREHOUSE/inftda_ledger) reads the ledger, sets a budget and releases, stops, and a
restarted one reads the ledger again. ``python spark_apps.py workers FAKE WAREHOUSE``: releases
whose workers run /usr/bin/python3 (no inftda_sql), then import the fake inftda_sql in FAKE.
``python spark_apps.py driver_only WAREHOUSE``: workers on /usr/bin/python3, a release that runs
on the driver only, then one with a level for Spark's tasks. Each prints one JSON line of what it
saw.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

import inftda_sql.spark

DOMAIN = {"r": ["N", "N", "S"], "c": ["a", "b", "c"]}


def _session(warehouse: str, **conf: str) -> SparkSession:
    builder = (
        SparkSession.builder.master("local[1]")
        .appName("inftda_sql second application")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.warehouse.dir", warehouse)
        .config("spark.sql.session.timeZone", "UTC")
    )
    for key, value in conf.items():
        builder = builder.config(key.replace("_", "."), value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _seen(spark: SparkSession) -> dict[str, Any]:
    found = inftda_sql.spark.ledger(spark)
    view = spark.sql("SELECT release_id FROM inftda_releases ORDER BY 1").collect()
    return {
        "ids": [r["release_id"] for r in found.releases],
        "budgets": sorted(inftda_sql.spark.budgets(spark)),
        "view": [r[0] for r in view],
        "printed": str(found),
    }


def ledger_app(warehouse: str) -> dict[str, Any]:
    spark = _session(warehouse)
    out: dict[str, Any] = {"before": _seen(spark)}
    spark.createDataFrame([("N", "a"), ("S", "c")], "r string, c string").write.saveAsTable("q")
    inftda_sql.spark.set_budget(spark, "q", rho=1.0)
    r = inftda_sql.spark.release(spark, "q", hierarchy=["r", "c"], domain=DOMAIN, rho=0.5)
    out["release_id"] = r.release_id
    spark.stop()
    spark = _session(warehouse)  # restarted: a new SparkContext, an empty in-memory catalog
    out["restarted"] = _seen(spark)
    spark.stop()
    return out


def _refusal(spark: SparkSession, driver_children: str = "0") -> dict[str, Any]:
    """A release whose levels may run in Spark's tasks (``spark.inftda.driverChildren``: 0,
    all of them; 2, those of more than 2 children in the public domain): what it raised, how
    many jobs it ran, where its last job was called from, whether it wrote its output."""
    spark.conf.set("spark.inftda.driverChildren", driver_children)
    tracker = spark.sparkContext.statusTracker()
    frame = spark.createDataFrame([("N", "a"), ("S", "c")], "r string, c string")
    before = set(tracker.getJobIdsForGroup())
    try:
        inftda_sql.spark.release(
            spark, frame, hierarchy=["r", "c"], domain=DOMAIN, rho=1.0, output="out"
        )
        error = ""
    except inftda_sql.SpecError as exc:
        error = str(exc)
    finally:
        spark.conf.unset("spark.inftda.driverChildren")
    jobs = sorted(set(tracker.getJobIdsForGroup()) - before)
    return {
        "error": error,
        "jobs": len(jobs),
        "last_job": _called_from(spark, jobs[-1]) if jobs else "",
        "written": spark.catalog.tableExists("out"),
    }


def _called_from(spark: SparkSession, job: int) -> str:
    """Where job ``job`` was started (its stages' names: ``collect at workers.py:67``)."""
    tracker = spark.sparkContext.statusTracker()
    info = tracker.getJobInfo(job)
    stages = [tracker.getStageInfo(s) for s in (info.stageIds if info else [])]
    return "; ".join(s.name for s in stages if s is not None)


def driver_only_app(warehouse: str) -> dict[str, Any]:
    """Workers without the package: a release whose every level runs on the driver starts no
    Python worker and succeeds; one with a level for Spark's tasks is refused before the scan."""
    os.environ["PYSPARK_PYTHON"] = "/usr/bin/python3"  # read when the SparkContext starts
    spark = _session(warehouse)
    tracker = spark.sparkContext.statusTracker()
    before = set(tracker.getJobIdsForGroup())
    r = inftda_sql.spark.release(
        spark,
        spark.createDataFrame([("N", "a"), ("S", "c")], "r string, c string"),
        hierarchy=["r", "c"],
        domain=DOMAIN,
        rho=float("inf"),
        output="driver_only",
    )
    jobs = sorted(set(tracker.getJobIdsForGroup()) - before)
    out: dict[str, Any] = {
        "driver_only": {
            "rows": sorted(tuple(x) for x in spark.table(r.output).collect()),
            "called_from": [_called_from(spark, j) for j in jobs],
        },
        "after_domain": _refusal(spark, "2"),
    }
    spark.stop()
    return out


def workers_app(fake: str, warehouse: str) -> dict[str, Any]:
    os.environ["PYSPARK_PYTHON"] = "/usr/bin/python3"  # read when the SparkContext starts
    spark = _session(warehouse)
    out = {"no_package": _refusal(spark)}
    spark.stop()
    python = Path(fake) / "python"  # this interpreter, the fake package first on its path
    python.write_text(f'#!/bin/sh\nPYTHONPATH="{fake}:$PYTHONPATH" exec {sys.executable} "$@"\n')
    python.chmod(0o755)
    os.environ["PYSPARK_PYTHON"] = str(python)
    spark = _session(warehouse)
    out["other_version"] = _refusal(spark)
    spark.stop()
    return out


if __name__ == "__main__":
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if sys.argv[1] == "ledger":
        result = ledger_app(sys.argv[2])
    elif sys.argv[1] == "driver_only":
        result = driver_only_app(sys.argv[2])
    else:
        result = workers_app(sys.argv[2], sys.argv[3])
    print(json.dumps(result))
