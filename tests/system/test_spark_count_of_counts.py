"""Count-of-counts on Spark: the same releases as DuckDB's.

Seeded Spark == seeded DuckDB (every method, both consistencies, a given or privately
estimated largest size, the input in one partition or several), exact under an infinite budget,
the levels view and the ledger row as on DuckDB, the checks that teach (a groups table that
reads the input, a group in two regions), and on households made from the Portugal commuting
data (an origin-destination pair is a household of its commuters).
"""

from __future__ import annotations

import math
from typing import Any

import duckdb
import pytest

import inftda_sql
from inftda_sql._errors import DomainError, InputDataError
from inftda_sql.synthetic import housing_like
from tests.conftest import shared_path
from tests.system.test_count_of_counts import KW, WORLD, _persons, _truth
from tests.system.test_spark import _rows, _to_spark, sdb, spark

__all__ = ["sdb", "spark"]  # the shared fixtures


def _both(spark: Any, con: duckdb.DuckDBPyConnection, partitions: int, **kw: Any):
    import inftda_sql.spark

    duck = inftda_sql.release_count_of_counts(con, "persons", output="out", **kw)
    frame = spark.table("persons").repartition(partitions)
    sk = inftda_sql.spark.release_count_of_counts(spark, frame, output="out", **kw)
    return duck, sk


def _duck(con: duckdb.DuckDBPyConnection, table: str) -> list[tuple[Any, ...]]:
    return sorted(con.sql(f"SELECT * FROM {table}").fetchall())


@pytest.fixture
def world(spark: Any, sdb: str) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    _persons(con, WORLD)
    for table in ("persons", "listed"):
        _to_spark(spark, con, f"SELECT * FROM {table}", table)
    return con


@pytest.fixture
def housing(spark: Any, sdb: str) -> duckdb.DuckDBPyConnection:
    """The paper's housing-like data at a small scale, as persons(hh, state, county) and
    listed(state, county, n)."""
    con = duckdb.connect()
    d = housing_like(con, scale=0.002, seed=3, prefix="h_")
    con.execute(
        f"CREATE TABLE persons AS SELECT group_id AS hh, state, county FROM {d.persons}"
    ).fetchall()
    con.execute(f"CREATE TABLE listed AS SELECT state, county, groups AS n FROM {d.groups}")
    for table in ("persons", "listed"):
        _to_spark(spark, con, f"SELECT * FROM {table}", table)
    return con


def test_infinite_budget_is_exact(spark: Any, world: duckdb.DuckDBPyConnection) -> None:
    import inftda_sql.spark

    r = inftda_sql.spark.release_count_of_counts(
        spark, "persons", **KW, max_size=10, epsilon=math.inf
    )
    assert _rows(spark, r.output) == _truth(world)
    levels = spark.sql(
        f"SELECT level, level_name, state, county, size, groups FROM {r.levels_view} "
        "WHERE level < 2"
    ).collect()
    found = {tuple(row) for row in levels}
    assert (0, "root", None, None, 2, 4) in found and (1, "state", "B", None, 2, 3) in found
    assert not r.is_private and r.kind == "count_of_counts"


@pytest.mark.parametrize(
    ("method", "consistency", "max_size", "partitions"),
    [
        ("cumulative", "topdown", None, 1),
        ("unattributed", "topdown", 40, 3),
        ("naive", "leaves", 12, 2),
    ],
)
def test_seeded_spark_equals_duckdb(
    spark: Any,
    housing: duckdb.DuckDBPyConnection,
    method: str,
    consistency: str,
    max_size: int | None,
    partitions: int,
) -> None:
    kw = dict(KW, epsilon=1.0, seed=7, method=method, consistency=consistency, max_size=max_size)
    duck, sk = _both(spark, housing, partitions, **kw)
    assert _rows(spark, "out") == _duck(housing, "out")
    assert _rows(spark, "out_levels") == _duck(housing, "out_levels")
    assert sk.max_size == duck.max_size and sk.total == duck.total
    assert [lv.noised_entries for lv in sk.levels] == [lv.noised_entries for lv in duck.levels]
    other = inftda_sql.release_count_of_counts(housing, "persons", output="o2", **{**kw, "seed": 8})
    assert _duck(housing, "o2") != _duck(housing, "out")  # the seed matters: the test can fail
    assert other.release_id > 0


def test_ledger_row_as_on_duckdb(spark: Any, world: duckdb.DuckDBPyConnection) -> None:
    import inftda_sql.spark

    duck, sk = _both(spark, world, 1, **KW, max_size=10, epsilon=2.0)
    (row,) = [
        r for r in inftda_sql.spark.ledger(spark).releases if r["release_id"] == sk.release_id
    ]
    (want,) = [r for r in inftda_sql.ledger(world).releases if r["release_id"] == duck.release_id]
    for field in ("mechanism", "guarantee", "epsilon", "rho", "level_names", "level_sigma"):
        assert row[field] == want[field], field
    assert row["base_tables"] and row["base_tables"][0].endswith(".persons")


def test_a_groups_table_that_reads_the_input_is_refused(spark: Any, world: Any) -> None:
    import inftda_sql.spark

    spark.sql(
        "CREATE OR REPLACE TEMP VIEW from_data AS SELECT state, county, "
        "count(DISTINCT hh) AS n FROM persons GROUP BY state, county"
    )
    with pytest.raises(DomainError, match=r"reads .*persons.* which the input reads"):
        inftda_sql.spark.release_count_of_counts(
            spark,
            "persons",
            group="hh",
            hierarchy=["state", "county"],
            groups="from_data",
            epsilon=1.0,
            max_size=10,
        )
    assert not spark.catalog.tableExists("persons_count_of_counts")
    world.execute(
        "CREATE VIEW from_data AS SELECT state, county, count(DISTINCT hh) AS n FROM persons "
        "GROUP BY ALL"
    ).fetchall()
    with pytest.raises(DomainError, match="which the input reads"):  # the same on DuckDB
        inftda_sql.release_count_of_counts(
            world,
            "persons",
            group="hh",
            hierarchy=["state", "county"],
            groups="from_data",
            epsilon=1.0,
            max_size=10,
        )


def test_a_group_in_two_regions_is_named(spark: Any, world: Any) -> None:
    import inftda_sql.spark

    spark.sql("CREATE TABLE split AS SELECT * FROM persons UNION ALL SELECT 1, 'B', 'b1'")
    with pytest.raises(InputDataError, match=r"1 group\(s\) .* sit in more than one leaf"):
        inftda_sql.spark.release_count_of_counts(
            spark, "split", **KW, epsilon=1.0, max_size=10, output="never"
        )
    assert not spark.catalog.tableExists("never")


@pytest.mark.shared
def test_seeded_portugal_households(spark: Any, sdb: str) -> None:
    """Households from the Portugal commutes: an (origin, destination) pair of one district is
    a household of its commuters (at most 50 each); regions: district > origin municipality."""
    con = duckdb.connect()
    data = shared_path("data", "pt_census2021_commuting_muni.parquet")
    con.execute(
        f"""CREATE TABLE pairs AS SELECT row_number() OVER (ORDER BY o_municipality,
            d_municipality) AS hh, o_district AS district, o_municipality AS mun,
            least("count", 50) AS size
            FROM '{data}' WHERE o_district = (SELECT min(o_district) FROM '{data}')"""
    ).fetchall()
    con.execute(
        "CREATE TABLE persons AS SELECT hh, district, mun FROM pairs, range(size)"
    ).fetchall()
    con.execute(
        "CREATE TABLE listed AS SELECT district, mun, count(*) AS n FROM pairs GROUP BY ALL"
    ).fetchall()
    for table in ("persons", "listed"):
        _to_spark(spark, con, f"SELECT * FROM {table}", table)
    kw = dict(group="hh", hierarchy=["district", "mun"], groups="listed", epsilon=1.0, seed=2)
    duck, sk = _both(spark, con, 2, **kw)
    assert _rows(spark, "out") == _duck(con, "out")
    assert sk.max_size == duck.max_size
