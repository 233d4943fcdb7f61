"""Privacy on the Spark engine, as on DuckDB: names resolved down to the tables and files read.

A domain that reads what the input reads (through a temporary, global or persistent view, a
DataFrame, a subquery, or a file) is refused before any Spark job runs; a budget is charged to
the base tables a view or DataFrame reads; contribution bounding keeps exactly ``contribution``
records per unit; and every level's noise has the variance the accounting promises. One
SparkSession for the module (the fixtures of test_spark.py); skipped when pyspark or Java is
missing.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import inftda_sql
from inftda_sql._errors import BudgetError, DomainError, SpecError
from tests.system.test_noise_levels import P_FLOOR, SIGMA, _p_two_sided, _within_parent
from tests.system.test_spark import _rows, sdb, spark

pytest.importorskip("pyspark", reason="pyspark is not installed: pip install -e '.[test]'")

__all__ = ["sdb", "spark"]  # the shared fixtures

INF = float("inf")
UNITS, M, PER_UNIT = 20, 2, 5  # every unit holds M + 3 records, in distinct cells
CELLS = [(("N" if i < 5 else "S"), f"c{i}") for i in range(10)]


def _persons() -> pa.Table:
    rows = [(f"u{u}", *CELLS[(u + j) % 10]) for u in range(UNITS) for j in range(PER_UNIT)]
    return pa.table({n: [r[i] for r in rows] for i, n in enumerate(("u", "r", "c"))})


def _geo() -> pa.Table:
    return pa.table({"r": [r for r, _ in CELLS], "c": [c for _, c in CELLS]})


@pytest.fixture
def db(spark: Any, sdb: str, tmp_path: Path) -> Iterator[Path]:
    """``persons`` (private) and ``geo`` (public) in the test's database; the persons also as a
    parquet folder (given); the test's temporary views dropped at the end."""
    spark.createDataFrame(_persons()).write.saveAsTable("persons")
    spark.createDataFrame(_geo()).write.saveAsTable("geo")
    folder = tmp_path / "persons.parquet"
    spark.createDataFrame(_persons()).write.parquet(str(folder))
    yield folder
    for table in spark.catalog.listTables():
        if table.isTemporary:
            spark.catalog.dropTempView(table.name)
    spark.catalog.dropGlobalTempView("dom_gv")


@contextlib.contextmanager
def no_work(spark: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Fail the test if the input is scanned or any Spark job runs: refusals come first."""
    from inftda_sql.engines.spark import engine as engine_module

    def scanned(*args: object, **kwargs: object) -> None:
        raise AssertionError("the input was scanned before the refusal")

    sc, group = spark.sparkContext, f"inftda-refusal-{uuid.uuid4().hex}"
    with monkeypatch.context() as patch:
        patch.setattr(engine_module, "scan", scanned)
        sc.setJobGroup(group, "a release that must be refused before any work")
        try:
            yield
        finally:
            sc.setLocalProperty("spark.jobGroup.id", None)
            sc.setLocalProperty("spark.job.description", None)
    assert list(sc.statusTracker().getJobIdsForGroup(group)) == [], "a Spark job ran"


def _release(spark: Any, table: Any, **kw: Any) -> inftda_sql.Release:
    import inftda_sql.spark

    args: dict[str, Any] = {"hierarchy": ["r", "c"], "domain": "geo", "rho": 1.0}
    return inftda_sql.spark.release(spark, table, **{**args, **kw})


def _domains_over_the_input(spark: Any, folder: Path) -> dict[str, tuple[Any, Any]]:
    """(input, domain) pairs where the domain reads the private input."""
    spark.sql("CREATE TEMP VIEW dom_tv AS SELECT DISTINCT r, c FROM persons")
    spark.sql("CREATE OR REPLACE GLOBAL TEMP VIEW dom_gv AS SELECT r, c FROM dom_tv")
    spark.sql("CREATE VIEW dom_join AS SELECT g.r, g.c FROM geo g JOIN persons p ON g.c = p.c")
    spark.sql("CREATE VIEW dom_sub AS SELECT * FROM geo WHERE c IN (SELECT c FROM persons)")
    spark.sql("CREATE VIEW persons_v AS SELECT * FROM persons WHERE u <> 'nobody'")
    # temporary views over the file, made with the DataFrame API (a view of SQL text over a
    # path infers the file's schema, a Spark job, each time it is read)
    spark.read.parquet(str(folder)).select("r", "c").distinct().createTempView("dom_file")
    spark.read.parquet(str(folder)).createTempView("persons_file")
    linked = folder.parent / "linked.parquet"  # the input's files under other names
    linked.mkdir()
    for part in folder.glob("*.parquet"):
        os.link(part, linked / part.name)
    table_folder = next(
        r.data_type
        for r in spark.sql("DESCRIBE TABLE EXTENDED persons").collect()
        if r.col_name == "Location"
    )
    return {
        "a temp view over the input": ("persons", "dom_tv"),
        "a global temp view over it": ("persons", "global_temp.dom_gv"),
        "a DataFrame over the input": ("persons", spark.table("persons").select("r", "c")),
        "a view joining input and geography": ("persons", "dom_join"),
        "a subquery reading the input": ("persons", "dom_sub"),
        "the base table of a view input": ("persons_v", "PERSONS"),
        "a file input, a view over the file": (spark.read.parquet(str(folder)), "dom_file"),
        "a file view input, the file as domain": ("persons_file", spark.read.parquet(str(folder))),
        "the table's own files": ("persons", spark.read.parquet(table_folder).select("r", "c")),
        "hard links of the input's files": (
            spark.read.parquet(str(folder)),
            spark.read.parquet(str(linked)).select("r", "c"),
        ),
    }


CASES = [
    "a temp view over the input",
    "a global temp view over it",
    "a DataFrame over the input",
    "a view joining input and geography",
    "a subquery reading the input",
    "the base table of a view input",
    "a file input, a view over the file",
    "a file view input, the file as domain",
    "the table's own files",
    "hard links of the input's files",
]


@pytest.mark.parametrize("case", CASES)
def test_a_domain_reading_the_input_is_refused_before_any_work(
    spark: Any, db: Path, case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import inftda_sql.spark

    table, domain = _domains_over_the_input(spark, db)[case]
    with (
        no_work(spark, monkeypatch),
        pytest.raises(DomainError, match="which the input reads too") as info,
    ):
        _release(spark, table, domain=domain, output="out")
    assert info.value.param == "domain"
    assert "domain_from_data=True" in str(info.value)
    assert not spark.catalog.tableExists("out")
    assert inftda_sql.spark.ledger(spark).releases == []


def test_a_public_view_is_a_domain_and_outputs_protect_what_views_read(
    spark: Any, db: Path
) -> None:
    """The check refuses only what reads the input: a view over the geography is a domain; an
    output onto a table or view the input reads is refused."""
    spark.sql("CREATE TEMP VIEW public_geo AS SELECT r, c FROM geo WHERE c <> 'none'")
    spark.sql("CREATE VIEW persons_v AS SELECT * FROM persons")
    spark.sql("CREATE VIEW persons_vv AS SELECT * FROM persons_v")
    r = _release(spark, "persons_vv", domain="public_geo", rho=INF, output="out")
    assert r.total == UNITS * PER_UNIT
    for output in ("persons", "persons_v", "geo"):
        with pytest.raises(SpecError, match="destroy what it reads") as info:
            _release(spark, "persons_vv", domain="public_geo", output=output, overwrite=True)
        assert info.value.param == "output"


def test_a_budget_is_charged_to_the_base_table_a_view_reads(spark: Any, sdb: str, db: Path) -> None:
    import inftda_sql.spark

    base = f"spark_catalog.{sdb}.persons"
    inftda_sql.spark.set_budget(spark, "persons", rho=1.0)
    spark.sql("CREATE VIEW persons_v AS SELECT * FROM persons")
    spark.sql("CREATE TEMP VIEW persons_tv AS SELECT * FROM persons_v")
    _release(spark, "persons_v", rho=0.6, output="first")
    (row,) = inftda_sql.spark.ledger(spark).releases
    assert row["base_tables"] == [base]
    for table in ("persons_tv", spark.table("persons").filter("u <> 'nobody'")):
        with pytest.raises(BudgetError, match=f"this release of '{base}' would spend rho=0.6"):
            _release(spark, table, rho=0.6, output="second")
    assert not spark.catalog.tableExists("second")
    _release(spark, spark.table("persons_tv"), rho=0.4, output="second")  # what is left
    assert [r["base_tables"] for r in inftda_sql.spark.ledger(spark).releases] == [[base], [base]]
    # rows from outside the catalog cannot be charged while budgets are stored
    local = spark.createDataFrame(_persons()).select("r", "c")
    with pytest.raises(BudgetError, match="outside the catalog"):
        _release(spark, local, rho=0.1, output="third")


def test_hard_links_of_a_budgeted_tables_files_spend_its_budget(spark: Any, db: Path) -> None:
    """A table's budget is keyed by its name; a folder of hard links of its data files reads
    the same data, so a release of it is charged to the table too."""
    import inftda_sql.spark

    inftda_sql.spark.set_budget(spark, "persons", rho=1.0)
    _release(spark, "persons", rho=0.6, output="first")
    table_folder = next(
        r.data_type
        for r in spark.sql("DESCRIBE TABLE EXTENDED persons").collect()
        if r.col_name == "Location"
    )
    linked = db.parent / "linked_table.parquet"
    linked.mkdir()
    for part in Path(table_folder.removeprefix("file:")).glob("*.parquet"):
        os.link(part, linked / part.name)
    with pytest.raises(BudgetError, match=r"would spend rho=0\.6"):
        _release(spark, spark.read.parquet(str(linked)), rho=0.6, output="second")
    assert not spark.catalog.tableExists("second")
    _release(spark, spark.read.parquet(str(linked)), rho=0.4, output="second")  # what is left
    base = f"spark_catalog.{spark.catalog.currentDatabase()}.persons"
    assert base in inftda_sql.spark.ledger(spark).releases[-1]["base_tables"]


# ---------------------------------------------------------------- contribution bounding


@pytest.mark.parametrize("distinct", [False, True])
def test_bounding_keeps_exactly_m_records_per_unit(spark: Any, db: Path, distinct: bool) -> None:
    """Every unit holds M + 3 records in distinct cells: under an infinite budget the released
    total is exactly UNITS * M (one record too many per unit shows)."""
    r = _release(
        spark, "persons", privacy_unit="u", contribution=M, distinct=distinct, rho=INF,
        output="bounded",
    )  # fmt: skip
    assert r.total == UNITS * M
    assert sum(row[-1] for row in _rows(spark, "bounded")) == UNITS * M
    assert r.diagnostics["rows_kept"] == UNITS * M


def test_seeded_bounded_release_equals_duckdb(spark: Any, db: Path) -> None:
    """Which records a unit keeps and the noise are the same on both engines under a seed."""
    import inftda_sql.spark

    con = duckdb.connect()
    for name, table in (("persons", _persons()), ("geo", _geo())):
        con.register("src", table)
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM src").fetchall()
        con.unregister("src")
    kw: dict[str, Any] = dict(
        hierarchy=["r", "c"], domain="geo", privacy_unit="u", contribution=M, rho=2.0, seed=7
    )
    duck = inftda_sql.release(con, "persons", output="out", **kw)
    sk = inftda_sql.spark.release(spark, "persons", output="out", **kw)
    assert _rows(spark, "out") == sorted(con.sql("SELECT * FROM out").fetchall())
    assert sk.total == duck.total
    exact = inftda_sql.release(con, "persons", output="exact", **{**kw, "rho": INF})
    assert exact.total == UNITS * M


# ---------------------------------------------------------------- the noise of every level

REGIONS, PROVINCES, MUNS = 100, 3, 3
RELEASES = 3  # (REGIONS - 1) * RELEASES = 297 degrees of freedom at the coarsest level
RHO = 3.0 / SIGMA**2  # as in test_noise_levels.py: sigma = SIGMA at every level


@pytest.mark.slow
def test_every_level_has_the_promised_noise_on_spark(spark: Any, sdb: str) -> None:
    """test_noise_levels.py's chi-square test, fewer releases over more regions: a sigma off by
    sqrt(2) at one level gives a p-value far below the floor."""
    import inftda_sql.spark

    con = duckdb.connect()
    con.execute(
        f"""CREATE TABLE geo AS
        SELECT 'r' || r AS region, 'r' || r || 'p' || p AS province,
               'r' || r || 'p' || p || 'm' || m AS mun
        FROM range({REGIONS}) a(r), range({PROVINCES}) b(p), range({MUNS}) c(m)"""
    ).fetchall()
    con.execute(
        "CREATE TABLE agg AS SELECT *, 1000000 + (row_number() OVER (ORDER BY mun)) * 37 % 5000 "
        "AS n FROM geo ORDER BY region, province, mun"
    ).fetchall()
    for name in ("geo", "agg"):
        spark.createDataFrame(con.sql(f"SELECT * FROM {name}").to_arrow_table()).write.saveAsTable(
            name
        )
    truth_rows = con.execute("SELECT region, province, mun, n FROM agg").fetchall()
    truth = np.array([n for *_, n in truth_rows], dtype=np.float64)
    index = {tuple(row[:3]): i for i, row in enumerate(truth_rows)}
    province = np.arange(truth.size) // MUNS
    region = province // PROVINCES
    stats: dict[int, list[float]] = {level: [0.0, 0.0] for level in (1, 2, 3)}
    for _ in range(RELEASES):
        inftda_sql.spark.release(
            spark, "agg", hierarchy=["region", "province", "mun"], domain="geo", rho=RHO,
            count="n", output="released", overwrite=True, levels_view=False,
        )  # fmt: skip
        released = np.full(truth.size, np.nan)
        for row in spark.table("released").collect():
            released[index[(row[0], row[1], row[2])]] = row[3]
        assert not np.isnan(released).any(), "a municipality vanished: IntOpt clipped"
        e3 = released - truth
        e2 = np.bincount(province, weights=e3)
        e1 = np.bincount(region[::MUNS], weights=e2)
        for level, errors, parent in (
            (1, e1, np.zeros(REGIONS, dtype=np.int64)),
            (2, e2, np.arange(REGIONS * PROVINCES) // PROVINCES),
            (3, e3, province),
        ):
            s, dof = _within_parent(errors, parent)
            stats[level][0] += s
            stats[level][1] += dof
    for level, (total, freedom) in stats.items():
        ratio = total / (freedom * SIGMA**2)
        p = _p_two_sided(total / SIGMA**2, int(freedom))
        assert p >= P_FLOOR, (
            f"level {level}: noise variance {ratio:.3f} x sigma^2 over {freedom:.0f} degrees of "
            "freedom "
            f"(p = {p:.2g}); the noise of this level is not sigma = {SIGMA}"
        )
