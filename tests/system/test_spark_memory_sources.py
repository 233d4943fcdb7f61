"""Domains over data the Spark catalog does not hold: rows in memory, RDDs, JDBC, data sources.

A domain that reads the same rows as the input (the input's own DataFrame, a select or filter of
it, a temporary view of it and SQL over that view, a self-join, a DataFrame over the same RDD,
the same JDBC table) is refused before any Spark job runs, with nothing written and no ledger
row; so are count-of-counts groups and feature domains derived from the input. A public domain
made apart from the input (a pandas geography, a separate list of rows or RDD, another JDBC
table) is accepted, and exact under an infinite budget. JDBC runs on Derby's in-memory
database, whose driver ships with pyspark.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest

import inftda_sql
from inftda_sql._errors import DomainError
from tests.system.test_spark import _rows, sdb, spark
from tests.system.test_spark_privacy import no_work

pytest.importorskip("pyspark", reason="pyspark is not installed: pip install -e '.[test]'")

__all__ = ["sdb", "spark"]  # the shared fixtures

INF = float("inf")
ROWS = [("u1", "N", "n1"), ("u2", "N", "n1"), ("u3", "N", "n2"), ("u4", "S", "s1")]
GEO = [("N", "n1"), ("N", "n2"), ("S", "s1"), ("S", "s2")]  # s2: a public zero cell
SCHEMA, GEO_SCHEMA = "u string, r string, c string", "r string, c string"


def _persons() -> pd.DataFrame:
    return pd.DataFrame(ROWS, columns=["u", "r", "c"])


def _geo() -> pd.DataFrame:
    return pd.DataFrame(GEO, columns=["r", "c"])


def _release(spark: Any, table: Any, domain: Any, **kw: Any) -> inftda_sql.Release:
    import inftda_sql.spark

    args: dict[str, Any] = {"hierarchy": ["r", "c"], "rho": 1.0, "output": "out"}
    return inftda_sql.spark.release(spark, table, domain=domain, **{**args, **kw})


@pytest.fixture
def views(spark: Any, sdb: str) -> Iterator[None]:
    """The test's temporary views dropped at the end."""
    yield
    for table in spark.catalog.listTables():
        if table.isTemporary:
            spark.catalog.dropTempView(table.name)


def _self_join(spark: Any) -> tuple[Any, Any]:
    inp = spark.createDataFrame(_persons())
    a, b = inp.alias("a"), inp.alias("b")
    return inp, a.join(b, a.u == b.u).select("a.r", "b.c").distinct()


def _temp_view(spark: Any) -> tuple[Any, Any]:
    spark.createDataFrame(_persons()).createTempView("persons_tv")
    return "persons_tv", spark.sql("SELECT DISTINCT r, c FROM persons_tv")


def _sql_view_of_values(spark: Any) -> tuple[Any, Any]:
    """A view of inline rows is analysed afresh at each use: new rows in memory each time."""
    values = ", ".join(str(row) for row in ROWS)
    spark.sql(f"CREATE TEMP VIEW persons_vals AS SELECT * FROM VALUES {values} AS t(u, r, c)")
    return spark.table("persons_vals"), spark.sql("SELECT DISTINCT r, c FROM persons_vals")


def _same_rdd(spark: Any) -> tuple[Any, Any]:
    rdd = spark.sparkContext.parallelize(ROWS)
    inp = spark.createDataFrame(rdd, SCHEMA)
    return inp, spark.createDataFrame(rdd.map(lambda row: row[1:]), GEO_SCHEMA)


def _table_rdd(spark: Any) -> tuple[Any, Any]:
    """An RDD of a catalog table's rows made a DataFrame again: its lineage scans the files."""
    spark.createDataFrame(_persons()).write.saveAsTable("persons")
    rdd = spark.table("persons").rdd.map(lambda row: (row.r, row.c))
    return "persons", spark.createDataFrame(rdd, GEO_SCHEMA)


#: (input, domain) where the domain reads the input's rows; the input is never scanned
REFUSED: dict[str, Callable[[Any], tuple[Any, Any]]] = {
    "the same pandas DataFrame": lambda s: (df := s.createDataFrame(_persons()), df),
    "a select distinct of it": lambda s: (
        df := s.createDataFrame(_persons()),
        df.select("r", "c").distinct(),
    ),
    "a filter and a rename of it": lambda s: (
        df := s.createDataFrame(_persons()),
        df.filter("u <> 'x'").withColumnRenamed("u", "who").select("r", "c"),
    ),
    "an Arrow table's rows, aliased": lambda s: (
        df := s.createDataFrame(pa.Table.from_pandas(_persons())),
        df.alias("geo").select("r", "c"),
    ),
    "a self-join of it": _self_join,
    "a temp view of it and SQL over the view": _temp_view,
    "a SQL view of inline rows": _sql_view_of_values,
    "a list of rows (an RDD inside)": lambda s: (
        df := s.createDataFrame(ROWS, SCHEMA),
        df.select("r", "c").distinct(),
    ),
    "a DataFrame over the same RDD": _same_rdd,
    "the .rdd of an input made of rows, a DataFrame again": lambda s: (
        df := s.createDataFrame(ROWS, SCHEMA),
        s.createDataFrame(df.rdd.map(lambda row: (row.r, row.c)), GEO_SCHEMA),
    ),
    "an RDD of the input table's rows": _table_rdd,
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_a_domain_over_the_input_rows_is_refused_before_any_work(
    spark: Any, views: None, case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import inftda_sql.spark

    table, domain = REFUSED[case](spark)
    with (
        no_work(spark, monkeypatch),
        pytest.raises(DomainError, match="which the input reads too") as info,
    ):
        _release(spark, table, domain)
    message = str(info.value)
    assert info.value.param == "domain"
    assert "domain_from_data=True" in message
    shared = (
        "in-memory rows of LocalRelation #",
        "the RDD #",
        "view persons_vals",
        "persons/part-",
    )
    assert any(what in message for what in shared)
    for value in ("u1", "n1", "s1"):  # the message names no value of the data
        assert f"'{value}'" not in message
    assert not spark.catalog.tableExists("out")
    assert inftda_sql.spark.ledger(spark).releases == []


def test_groups_derived_from_in_memory_input_are_refused(
    spark: Any, sdb: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pyspark.sql import functions as F

    import inftda_sql.spark

    persons = spark.createDataFrame(
        pd.DataFrame({"hh": [1, 1, 2, 3], "state": ["A", "A", "A", "B"], "county": list("aabc")})
    )
    groups = persons.groupBy("state", "county").agg(F.countDistinct("hh").alias("n"))
    with no_work(spark, monkeypatch), pytest.raises(DomainError, match="which the input reads"):
        inftda_sql.spark.release_count_of_counts(
            spark, persons, group="hh", hierarchy=["state", "county"], groups=groups,
            epsilon=1.0, max_size=10, output="coc",
        )  # fmt: skip
    assert not spark.catalog.tableExists("coc")
    assert inftda_sql.spark.ledger(spark).releases == []


def test_a_feature_domain_derived_from_in_memory_input_is_refused(
    spark: Any, sdb: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import inftda_sql.spark

    inp = spark.createDataFrame(_persons())
    with no_work(spark, monkeypatch), pytest.raises(DomainError, match="LocalRelation #"):
        inftda_sql.spark.release(
            spark, inp, features={"total": [], "leaf": ["r", "c"]},
            domain=inp.select("r", "c").distinct(), mechanism="cbdp", rho=1.0, output="out",
        )  # fmt: skip
    assert not spark.catalog.tableExists("out")
    assert inftda_sql.spark.ledger(spark).releases == []


def _exact(spark: Any, r: inftda_sql.Release, what: str = "") -> None:
    assert r.total == len(ROWS), what
    want = [("N", "n1", 2), ("N", "n2", 1), ("S", "s1", 1)]  # the zero cell S/s2: no row
    assert _rows(spark, "out") == want, what


def test_public_domains_made_apart_from_the_input_are_accepted(
    spark: Any, sdb: str, tmp_path: Path
) -> None:
    """A catalog table or files with a pandas geography, two separate pandas frames, two
    separate lists of rows (RDDs), files and files: accepted, exact under rho=inf."""
    spark.createDataFrame(_persons()).write.saveAsTable("persons")
    spark.createDataFrame(_persons()).write.parquet(str(tmp_path / "persons"))
    spark.createDataFrame(_geo()).write.parquet(str(tmp_path / "geo"))
    read = spark.read.parquet
    pairs = {
        "table + pandas": ("persons", spark.createDataFrame(_geo())),
        "files + pandas": (read(str(tmp_path / "persons")), spark.createDataFrame(_geo())),
        "pandas + pandas": (spark.createDataFrame(_persons()), spark.createDataFrame(_geo())),
        "rows + rows": (
            spark.createDataFrame(ROWS, SCHEMA),
            spark.createDataFrame(GEO, GEO_SCHEMA),
        ),
        "files + files": (read(str(tmp_path / "persons")), read(str(tmp_path / "geo"))),
    }
    for what, (table, domain) in pairs.items():
        r = _release(spark, table, domain, rho=INF, overwrite=True)
        _exact(spark, r, what)


# ---------------------------------------------------------------- JDBC (Derby, in memory)


@pytest.fixture
def derby(spark: Any, sdb: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A fresh in-memory Derby database holding ``persons`` and ``geo``; its URL. Derby's log
    goes to a temporary folder (by default it writes derby.log where the tests run)."""
    from py4j.protocol import Py4JJavaError

    log = tmp_path_factory.getbasetemp() / "derby.log"  # set before Derby starts
    spark._jvm.java.lang.System.setProperty("derby.stream.error.file", str(log))
    try:  # shipped with pyspark (the Hive metastore's database)
        spark._jvm.java.lang.Class.forName("org.apache.derby.jdbc.EmbeddedDriver")
    except Py4JJavaError:
        pytest.skip("no Derby JDBC driver among Spark's jars")
    url = f"jdbc:derby:memory:db{uuid.uuid4().hex[:8]}"
    for name, frame, create in (("persons", _persons(), ";create=true"), ("geo", _geo(), "")):
        types = ", ".join(f"{c} VARCHAR(8)" for c in frame.columns)  # not CLOB: comparable
        spark.createDataFrame(frame).write.format("jdbc").option("url", url + create).option(
            "dbtable", name
        ).option("createTableColumnTypes", types).save()
    return url


def test_a_jdbc_domain_over_the_input_table_is_refused_without_credentials(
    spark: Any, derby: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import inftda_sql.spark

    inp = spark.read.jdbc(f"{derby};password=s3cret", "persons")
    domains = {
        "which the input reads too": spark.read.jdbc(derby, "PERSONS").select("r", "c"),
        "has no identity": spark.read.format("jdbc")
        .option("url", derby)
        .option("query", 'SELECT DISTINCT "r", "c" FROM persons')
        .load(),
    }
    for fragment, domain in domains.items():
        with no_work(spark, monkeypatch), pytest.raises(DomainError, match=fragment) as info:
            _release(spark, inp, domain)
        assert derby in str(info.value) and "s3cret" not in str(info.value)
    assert not spark.catalog.tableExists("out")
    assert inftda_sql.spark.ledger(spark).releases == []


def test_a_jdbc_geography_beside_a_jdbc_input_is_accepted(spark: Any, derby: str) -> None:
    r = _release(spark, spark.read.jdbc(derby, "persons"), spark.read.jdbc(derby, "geo"), rho=INF)
    _exact(spark, r)


# ---------------------------------------------------------------- a Python data source


def test_a_python_data_source_is_identified_by_its_name_and_options(
    spark: Any, sdb: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same source with the same options is the same data (refused); other options are
    another read (identities differ); the credentials are in neither."""
    from pyspark.sql.datasource import DataSource, DataSourceReader

    from inftda_sql.engines.spark.catalog import base_tables

    class Reader(DataSourceReader):
        def read(self, partition: object) -> Iterator[tuple[str, str, str]]:
            yield from ROWS

    class Persons(DataSource):
        @classmethod
        def name(cls) -> str:
            return "inftda_test_persons"

        def schema(self) -> str:
            return SCHEMA

        def reader(self, schema: object) -> Reader:
            return Reader()

    spark.dataSource.register(Persons)

    def load(**options: str) -> Any:
        return spark.read.format("inftda_test_persons").options(**options).load()

    inp = load(region="all", password="s3cret")
    with no_work(spark, monkeypatch), pytest.raises(DomainError, match="which the input reads"):
        _release(spark, inp, load(password="other", region="all").select("r", "c"))
    (mine,) = base_tables(inp).memory
    (other,) = base_tables(load(region="north")).memory
    assert mine == "the data source inftda_test_persons (region=all)"
    assert other == "the data source inftda_test_persons (region=north)"
