"""The TopDown pass on Spark: every level's noise and IntOpt run inside Spark's tasks.

The surviving parents of a level live in a parquet file in the release's scratch folder (one
row per parent: a code per chain and the released value), never on the driver. Per level:

1. each parent's first child key, child count and bucket are computed in Spark SQL from the
   public domain's code ranges (a broadcast join with ``parent -> (start, count)``);
2. the children per bucket are summed with a ``GROUP BY`` and collected (at most
   :data:`~inftda_sql.core.blocks.MAX_BUCKETS` small rows), and every bucket gets its block on
   the driver (:func:`~inftda_sql.core.blocks.bucket_blocks`): the same blocks as DuckDB's;
   this aggregate also counts the survivors of the level above;
3. the level's true counts come from a Spark SQL ``GROUP BY`` of the cells table; each cell is
   sent to its parent's block (key -> parent's first key -> bucket -> block, broadcast joins);
4. parents and cells are co-grouped by block, in as many partitions as the level has blocks,
   and ``applyInArrow`` runs the engine-free kernel
   (:class:`~inftda_sql.core.topdown.LevelJob`: children from the domain, true counts by binary
   search, noise, the mechanism's step, vectorised over the block) with the random source of
   the block: under a test seed the stream keyed by (seed, level, block), so a seeded release
   is the same table as on DuckDB, whatever the partitioning; else the OS CSPRNG of the task;
5. the survivors are written to the scratch folder: that file, written once, is the level's
   release (noise is never drawn again for it, even if Spark recomputes something downstream).
"""

from __future__ import annotations

import dataclasses
import math
import re
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ... import _errors
from ..._errors import InftdaError
from ...core import topdown as _topdown
from ...core.arrays import I64
from ...core.blocks import bucket_blocks, bucket_width
from ...core.rng import RandomSource
from ...core.spec import TreeSpec
from ...core.topdown import LevelJob, Optimizer, noisy_root, pass_source
from ...core.tree import ChainTree, LevelStats, TopDownResult, determined_levels, key_strides
from .driver import TrueLevel, driver_level, level_children
from .scan import describe, level_key

__all__ = [
    "SparkLeaves",
    "describe",
    "raise_task_error",
    "remove_folder",
    "run_topdown",
    "scratch_folder",
]


@dataclass(frozen=True)
class SparkLeaves:
    """The released leaves of a distributed TopDown pass: a parquet folder with a code per
    chain (``c0``, ``c1``, ...) and the released value ``v``; the levels' statistics; the
    released total (the root's value)."""

    path: str
    levels: tuple[LevelStats, ...]
    total: int


def _code_cols(k: int) -> list[str]:
    return [f"c{j}" for j in range(k)]


def _schema(names: Sequence[str]) -> str:
    return ", ".join(f"{n} long" for n in names)


_TASK_ERROR = re.compile(r"inftda_sql\._errors\.(\w+): (.*)")


def raise_task_error(exc: BaseException) -> None:
    """Raise an inftda_sql error raised inside a Spark task as itself (Spark wraps it in a
    PythonException with the task's traceback as text); return if it is not one."""
    for line in str(exc).splitlines():
        found = _TASK_ERROR.search(line)
        if found:
            cls = getattr(_errors, found.group(1), None)
            if isinstance(cls, type) and issubclass(cls, InftdaError):
                raise cls(found.group(2)) from None


def _kernel(
    level: int,
    chain: int,
    k: int,
    strides: tuple[int, ...],
    sigma: float,
    step: Optimizer,
    source: RandomSource,
) -> Callable[[pa.Table, pa.Table], pa.Table]:
    """One block: the children of its parents noised and post-processed by ``step``."""
    cols = _code_cols(k)

    def run(parents: pa.Table, cells: pa.Table) -> pa.Table:
        if parents.num_rows == 0:
            return pa.table({c: pa.array([], pa.int64()) for c in [*cols, "v"]})

        def col(table: pa.Table, name: str) -> I64:
            out: I64 = table.column(name).to_numpy().astype(np.int64, copy=False)
            return out

        first = col(parents, "first")
        order = np.argsort(first, kind="stable")
        keys = col(cells, "key")
        by_key = np.argsort(keys, kind="stable")
        job = LevelJob(
            chain,
            [col(parents, c)[order] for c in cols],
            col(parents, "v")[order],
            col(parents, "start")[order],
            col(parents, "cnt")[order],
            strides,
            keys[by_key],
            col(cells, "n")[by_key],
            sigma,
            step,
        )
        block = int(col(parents, "block")[0])
        codes, values, _ = job.run((0, parents.num_rows), source.derive(level, block))
        return pa.table(
            {**{c: pa.array(codes[j], pa.int64()) for j, c in enumerate(cols)}, "v": values}
        )

    return run


def run_topdown(
    spark: SparkSession,
    spec: TreeSpec,
    chains: Sequence[ChainTree],
    cells: DataFrame,
    sigmas: Sequence[float],
    root_total: int,
    *,
    source: RandomSource,
    step: Optimizer,
    scratch: str,
    progress: Callable[[LevelStats], None] | None = None,
    true_level: TrueLevel | None = None,
    on_driver: int = 0,
    threads: int = 2,
) -> SparkLeaves | TopDownResult:
    """Run TopDown over ``spec``'s levels with ``step`` per level.

    ``cells`` is the scan's cells table; ``sigmas`` per level, root first (0: no noise);
    ``scratch`` a folder every executor can read and write (the survivors of every level).
    Levels of at most ``on_driver`` children run on the driver (:mod:`.driver`: no Spark job;
    their true counts from ``true_level``) as long as every level above did; the rest in
    Spark's tasks. Returns a :class:`~inftda_sql.core.tree.TopDownResult` when the leaf level
    ran on the driver, else the released leaves' parquet folder.
    """
    k = len(spec.chains)
    sizes = [ch.sizes for ch in chains]
    source = pass_source(source)  # this pass's source, as core.topdown takes it
    source.derive(0, 0)  # a seeded source fixes its key here, before it is shipped
    stats: list[LevelStats] = []

    def report(s: LevelStats) -> None:
        stats.append(s)
        if progress:
            progress(s)

    t0 = time.perf_counter()
    values = noisy_root(root_total, float(sigmas[0]), source)
    codes: list[I64] = [np.zeros(values.size, np.int64) for _ in range(k)]
    total = int(values.sum())
    report(
        LevelStats(0, "root", 0, int(sigmas[0] > 0), int(values.size), float(sigmas[0]),
                   time.perf_counter() - t0)
    )  # fmt: skip
    determined = determined_levels(spec, sizes)
    level = 1
    with ThreadPoolExecutor(threads) as pool:
        while level <= spec.n_levels and true_level is not None and on_driver > 0:
            if values.size and level_children(chains, spec, level, codes) > on_driver:
                break
            t0 = time.perf_counter()
            sigma = float(sigmas[level])
            n_parents = int(values.size)
            noised = 0
            if n_parents:
                codes, values, noised = driver_level(
                    spec, chains, level, codes, values, sigma, step, source, true_level,
                    determined[level - 1], pool,
                )  # fmt: skip
            report(
                LevelStats(level, spec.level_name(level), n_parents, noised, int(values.size),
                           sigma, time.perf_counter() - t0)
            )  # fmt: skip
            level += 1
    if level > spec.n_levels:
        return TopDownResult(codes=tuple(codes), counts=values, levels=tuple(stats))
    path = f"{scratch}/level_{level - 1}"
    describe(spark, f"level {level - 1}: survivors written for the levels in Spark")
    frame = pa.table({**{c: pa.array(codes[j]) for j, c in enumerate(_code_cols(k))},
                      "v": pa.array(values)})  # fmt: skip
    spark.createDataFrame(frame, schema=_schema([*_code_cols(k), "v"])).write.parquet(path)
    leaves = _distributed(
        spark, spec, chains, cells, sigmas, level, path, int(values.size),
        source=source, step=step, scratch=scratch, report=report,
    )  # fmt: skip
    return SparkLeaves(path=leaves, levels=tuple(sorted(stats, key=lambda s: s.level)), total=total)


def _distributed(
    spark: SparkSession,
    spec: TreeSpec,
    chains: Sequence[ChainTree],
    cells: DataFrame,
    sigmas: Sequence[float],
    first_level: int,
    path: str,
    n_parents: int,
    *,
    source: RandomSource,
    step: Optimizer,
    scratch: str,
    report: Callable[[LevelStats], None],
) -> str:
    """Levels ``first_level ..`` in Spark's tasks, from the parents in parquet at ``path``;
    returns the folder of the released leaves."""
    k = len(spec.chains)
    cols = _code_cols(k)
    sizes = [ch.sizes for ch in chains]
    block_children = _topdown.CHUNK_CHILDREN  # read now: tests shrink it
    pending: LevelStats | None = None  # a level's statistics, until its survivors are counted
    for level in range(first_level, spec.n_levels + 1):
        t0 = time.perf_counter()
        sigma = float(sigmas[level])
        name = spec.level_name(level)
        if n_parents == 0:
            if pending is not None:  # it had no parents, so no survivors
                report(dataclasses.replace(pending, surviving_cells=0))
                pending = None
            report(LevelStats(level, name, 0, 0, 0, sigma, 0.0))
            continue
        c = spec.refined_chain(level)
        depth = spec.levels[level][c]
        strides = key_strides(spec, level, sizes)
        n_cells = math.prod(s[d] for s, d in zip(sizes, spec.levels[level], strict=True))
        width = bucket_width(n_cells)
        offsets = chains[c].child_offsets[depth]
        first = F.col("start")
        for j in range(k):
            if j != c:
                first = first + F.col(f"c{j}") * F.lit(int(strides[j]))
        parents = (
            spark.read.parquet(path)
            .join(F.broadcast(_ranges(spark, offsets)), F.col(f"c{c}") == F.col("parent"))
            .select(*cols, "v", "start", "cnt", first.alias("first"))
            .withColumn("bucket", F.floor(F.col("first") / F.lit(width)).cast("long"))
        )
        describe(spark, f"level {level} ({name}): children per bucket")
        totals = (
            parents.groupBy("bucket")
            .agg(
                F.sum("cnt").alias("children"),
                F.count(F.lit(1)).alias("parents"),
                # an only child is its parent's value: no noise drawn, no true count read
                F.sum(F.when(F.col("cnt") > 1, F.col("cnt")).otherwise(0)).alias("noised"),
            )
            .toArrow()
            .sort_by("bucket")
        )
        buckets = totals.column("bucket").to_numpy().astype(np.int64)
        children = totals.column("children").to_numpy().astype(np.int64)
        n_parents, noised = int(pc_sum(totals, "parents")), int(pc_sum(totals, "noised"))
        if pending is not None:  # the survivors of the level above are this level's parents
            report(dataclasses.replace(pending, surviving_cells=n_parents))
        block_ids = bucket_blocks(children, block_children)
        ids = pa.table({"bucket": pa.array(buckets), "block": pa.array(block_ids)})
        # one partition per block (on average: placed by hash), so a task holds about
        # block_children children and a level runs as many tasks as it has blocks; an explicit
        # count keeps adaptive execution from coalescing blocks (their inputs are small: the
        # children are made in the task) into a few long tasks
        n_blocks = max(1, int(np.unique(block_ids).size))

        def block_of(ids: pa.Table = ids) -> DataFrame:
            # one per side of the co-group (no ambiguous self-join)
            return spark.createDataFrame(ids, schema="bucket long, block long")

        code, parent = _depth_code(c, depth), _depth_code(c, depth - 1)
        # a level its parents determine (every child an only child) reads no true count
        level_cells = (
            cells.where(F.col("n") > 0 if noised else F.lit(False))
            .groupBy(
                level_key(spec, level, strides).alias("key"),
                F.col(code).cast("long").alias("code"),
                (F.col(parent).cast("long") if depth > 1 else F.lit(0).cast("long")).alias("p"),
            )
            .agg(F.sum("n").cast("long").alias("n"))
            .join(F.broadcast(_ranges(spark, offsets)), F.col("p") == F.col("parent"))
            .withColumn(
                "bucket",
                F.floor((F.col("key") - F.col("code") + F.col("start")) / F.lit(width)).cast(
                    "long"
                ),
            )
            .join(F.broadcast(block_of()), "bucket")
            .select("block", "key", "n")
        )
        out = (
            parents.join(F.broadcast(block_of()), "bucket")
            .select(*cols, "v", "first", "start", "cnt", "block")
            .repartition(n_blocks, "block")
            .groupBy("block")
            .cogroup(level_cells.repartition(n_blocks, "block").groupBy("block"))
            .applyInArrow(_kernel(level, c, k, strides, sigma, step, source), _schema([*cols, "v"]))
        )
        path = f"{scratch}/level_{level}"
        describe(spark, f"level {level} ({name}): noise and step per block, survivors written")
        try:
            out.write.parquet(path)
        except PySparkException as exc:
            raise_task_error(exc)
            raise
        pending = LevelStats(level, name, n_parents, noised, -1, sigma, time.perf_counter() - t0)
    if pending is not None:
        describe(spark, f"level {pending.level} ({pending.name}): survivors counted")
        report(dataclasses.replace(pending, surviving_cells=spark.read.parquet(path).count()))
    describe(spark, None)
    return path


def pc_sum(table: pa.Table, column: str) -> int:
    """The sum of an integer column of an Arrow table."""
    return int(table.column(column).to_numpy().sum()) if table.num_rows else 0


def _depth_code(chain: int, depth: int) -> str:
    from .domain import depth_code

    return depth_code(chain, depth)


def _ranges(spark: SparkSession, offsets: I64) -> DataFrame:
    """The children of every node of the depth above: ``parent -> (start, cnt)`` codes."""
    starts = np.asarray(offsets[:-1], np.int64)
    table = pa.table(
        {
            "parent": pa.array(np.arange(starts.size, dtype=np.int64)),
            "start": pa.array(starts),
            "cnt": pa.array(np.diff(offsets).astype(np.int64)),
        }
    )
    return spark.createDataFrame(table, schema="parent long, start long, cnt long")


def scratch_folder(spark: SparkSession, scratch: str | None) -> str:
    """A fresh folder for one release's intermediate files (under ``scratch`` or the warehouse)."""
    base = scratch or spark.conf.get("spark.sql.warehouse.dir") or "spark-warehouse"
    return f"{base.rstrip('/')}/__inftda_{uuid.uuid4().hex[:12]}"


def remove_folder(spark: SparkSession, path: str) -> None:
    """Delete ``path`` recursively through Hadoop's file system (local, HDFS, object stores)."""
    jvm = spark.sparkContext._jvm
    jsc = spark.sparkContext._jsc
    if jvm is None or jsc is None:
        return
    hpath = jvm.org.apache.hadoop.fs.Path(path)
    hpath.getFileSystem(jsc.hadoopConfiguration()).delete(hpath, True)
