"""CBDP (features) on Spark: the same releases as DuckDB's.

Seeded Spark == seeded DuckDB (pure epsilon and zCDP, one domain table or a product of two, the
input in one partition or several); an infinite budget releases the true counts; contribution
bounding keeps exactly m records per unit; the features view and the ledger row as on DuckDB;
and on the Portugal commuting data (an O/D lattice of 94,864 leaf cells).
"""

from __future__ import annotations

import json
from typing import Any

import duckdb
import pytest

import inftda_sql
from inftda_sql._errors import DomainError
from tests.conftest import shared_path
from tests.system.test_cbdp import FEATURES, small_world
from tests.system.test_spark import _rows as rows
from tests.system.test_spark import _to_spark as to_spark
from tests.system.test_spark import sdb, spark

__all__ = ["sdb", "spark"]  # fixtures, shared with the other Spark modules

INF = float("inf")


def many_world() -> duckdb.DuckDBPyConnection:
    """The small world of the DuckDB CBDP tests plus ``many``: its trips 40 times over, 3
    records per ``person``."""
    con = duckdb.connect()
    small_world(con)
    con.execute(
        "CREATE TABLE many AS SELECT t.*, (row_number() OVER ()) // 3 AS person "
        "FROM trips t, range(40)"
    ).fetchall()
    return con


@pytest.fixture
def world(spark: Any, sdb: str) -> duckdb.DuckDBPyConnection:
    """The small world of the DuckDB CBDP tests, in both engines (more trips, 2 per unit)."""
    con = many_world()
    for table in ("cells", "pairs", "periods", "trips", "many"):
        to_spark(spark, con, f"SELECT * FROM {table}", table)
    return con


def _both(spark: Any, con: duckdb.DuckDBPyConnection, table: str, partitions: int, **kw: Any):
    import inftda_sql.spark

    duck = inftda_sql.release(con, table, mechanism="cbdp", output="out", **kw)
    frame = spark.table(table).repartition(partitions)
    sk = inftda_sql.spark.release(spark, frame, mechanism="cbdp", output="out", **kw)
    return duck, sk


def _duck(con: duckdb.DuckDBPyConnection, table: str) -> list[tuple[Any, ...]]:
    return sorted(con.sql(f"SELECT * FROM {table}").fetchall())


@pytest.mark.parametrize(
    ("budget", "domain", "partitions"),
    [
        ({"epsilon": 1.0}, "cells", 1),
        ({"rho": 0.5}, ["pairs", "periods"], 3),
        ({"epsilon": 2.0, "delta": 1e-6}, ["pairs", "periods"], 2),
    ],
)
def test_seeded_spark_equals_duckdb(
    spark: Any,
    world: duckdb.DuckDBPyConnection,
    budget: dict[str, float],
    domain: Any,
    partitions: int,
) -> None:
    kw = dict(features=FEATURES, domain=domain, seed=5, **budget)
    duck, sk = _both(spark, world, "many", partitions, **kw)
    assert rows(spark, "out") == _duck(world, "out")
    assert rows(spark, "out_features") == _duck(world, "out_features")
    assert sk.total == duck.total
    assert sk.guarantee == duck.guarantee and sk.seeded and not sk.is_private
    assert [lv.noised_cells for lv in sk.levels] == [lv.noised_cells for lv in duck.levels]
    other = inftda_sql.release(world, "many", mechanism="cbdp", output="o2", **{**kw, "seed": 6})
    assert _duck(world, "o2") != _duck(world, "out")  # the seed matters: the test can fail
    assert other.total > 0


def test_infinite_budget_is_exact(spark: Any, world: duckdb.DuckDBPyConnection) -> None:
    import inftda_sql.spark

    inftda_sql.spark.release(
        spark,
        "trips",
        mechanism="cbdp",
        features=FEATURES,
        domain=["pairs", "periods"],
        rho=INF,
        output="exact",
    )
    truth = world.sql("SELECT o_stop, d_stop, period, count(*) FROM trips GROUP BY ALL").fetchall()
    got = spark.sql("SELECT o_stop, d_stop, period, `count` FROM exact").collect()
    assert sorted(tuple(r) for r in got) == sorted(truth)
    view = spark.sql("SELECT feature, `count` FROM exact_features WHERE feature = 'total'")
    assert [tuple(r) for r in view.collect()] == [("total", 7)]


def test_contribution_bounding_keeps_m_records_per_unit(
    spark: Any, world: duckdb.DuckDBPyConnection
) -> None:
    """Every unit of ``many`` has 3 records: with m = 2 an exact release keeps 2 per unit."""
    import inftda_sql.spark

    units = world.sql(
        "SELECT count(DISTINCT person), min(c), max(c) FROM "
        "(SELECT person, count(*) c FROM many GROUP BY person)"
    ).fetchall()[0]
    n_units, fewest, most = units
    assert most == 3
    r = inftda_sql.spark.release(
        spark,
        "many",
        mechanism="cbdp",
        features=FEATURES,
        domain="cells",
        rho=INF,
        privacy_unit="person",
        contribution=2,
        output="bounded",
    )
    expected = world.sql(
        "SELECT sum(least(c, 2)) FROM (SELECT person, count(*) c FROM many GROUP BY person)"
    ).fetchall()[0][0]
    assert r.total == expected == sum(c for *_, c in rows(spark, "bounded"))
    assert (
        r.diagnostics["rows_dropped"]
        == world.sql("SELECT count(*) FROM many").fetchall()[0][0] - expected
    )
    assert fewest <= 3 and n_units > 0


def test_ledger_row_as_on_duckdb(spark: Any, world: duckdb.DuckDBPyConnection) -> None:
    import inftda_sql.spark

    duck, sk = _both(spark, world, "trips", 1, features=FEATURES, domain="cells", epsilon=1.0)
    (row,) = [
        r for r in inftda_sql.spark.ledger(spark).releases if r["release_id"] == sk.release_id
    ]
    assert row["mechanism"] == "cbdp" and row["guarantee"] == "pureDP"
    assert row["tree"] == "features"
    assert json.loads(row["hierarchy"]) == duck.spec.as_dict()
    assert list(row["level_sigma"]) == list(duck.accounting.level_sigma)
    assert sk.accounting.level_sigma == duck.accounting.level_sigma


def test_input_outside_the_domain_is_named(spark: Any, world: duckdb.DuckDBPyConnection) -> None:
    import inftda_sql.spark

    spark.sql("CREATE TABLE odd AS SELECT * FROM trips UNION ALL SELECT 'a', 'z', 0")
    with pytest.raises(DomainError, match=r"1 leaf cell\(s\) of the input are not in the domain"):
        inftda_sql.spark.release(
            spark,
            "odd",
            mechanism="cbdp",
            features=FEATURES,
            domain="cells",
            epsilon=1.0,
            output="never",
        )
    assert not spark.catalog.tableExists("never")


@pytest.mark.shared
def test_seeded_portugal_od_lattice(spark: Any, sdb: str) -> None:
    """Portugal's commutes as an O/D lattice (308 x 308 municipalities): district features on
    both sides and the leaf; seeded Spark == seeded DuckDB."""
    con = duckdb.connect()
    data = shared_path("data", "pt_census2021_commuting_muni.parquet")
    geo = shared_path("data", "pt_census2021_commuting_muni_geo.parquet")
    con.execute(f"CREATE TABLE pt AS SELECT * FROM '{data}'").fetchall()
    for side in ("o", "d"):
        con.execute(
            f"CREATE TABLE geo_{side} AS SELECT district AS {side}_district, "
            f"municipality AS {side}_municipality FROM '{geo}'"
        ).fetchall()
        to_spark(spark, con, f"SELECT * FROM geo_{side}", f"geo_{side}")
    to_spark(spark, con, "SELECT * FROM pt", "pt")
    features = {
        "total": [],
        "origin": ["o_district"],
        "districts": ["o_district", "d_district"],
        "pairs": ["o_municipality", "d_municipality"],
    }
    kw = dict(features=features, domain=["geo_o", "geo_d"], rho=1.0, seed=3, count="count")
    duck, sk = _both(spark, con, "pt", 2, **kw)
    assert rows(spark, "out") == _duck(con, "out")
    assert sk.total == duck.total
