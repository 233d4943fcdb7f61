"""The TopDown pass on Spark: every level's noise and IntOpt run inside Spark's tasks.

The surviving parents of a level live in a parquet file in the release's scratch folder (one
row per parent: a code per chain and the released value), never on the driver; beside them,
in the same files, each block of the level above wrote a *summary* of them: per bucket of this
level, its children, parents and only children (parents with one child). A Spark job costs a
fixed share of a second whatever its size, so a level takes at most three:

1. the summary is read (at most :data:`~inftda_sql.core.blocks.MAX_BUCKETS` small rows per
   block): by the driver itself when the scratch folder is on its disk (local mode, a shared
   disk: no job), else by one Spark job; none for the first level in Spark, whose parents the
   driver holds. Every
   bucket gets its block on the driver (:func:`~inftda_sql.core.blocks.bucket_blocks`): the
   same blocks as DuckDB's; it also counts the survivors of the level above;
2. the parents and the cells (the cells table's codes, summed per level key within each task)
   go to their blocks in ONE shuffle: each row finds its block in Python (key -> parent's first
   key -> bucket -> block) from the public code ranges and the bucket -> block table, shipped in
   the tasks' closure (no broadcast join, no job of its own); in as many partitions as the level
   has blocks;
3. ``applyInArrow`` runs the engine-free kernel per block
   (:class:`~inftda_sql.core.topdown.LevelJob`: children from the domain, true counts by binary
   search, noise, the mechanism's step, vectorised over the block) with the random source of
   the block: under a test seed the stream keyed by (seed, level, block), so a seeded release
   is the same table as on DuckDB, whatever the partitioning; else the CSPRNG of the task.
   Its survivors, and their summary for the next level, are written to the scratch folder in
   one write: that file, written once by Spark's commit protocol (the attempt that commits a
   block's survivors commits its summary), is the level's release; noise is never drawn again
   for it, even if Spark recomputes something downstream, and the next level's blocks come
   from what was written.

With adaptive execution (Spark's default) steps 2 and 3 are two jobs (the shuffle's map stage,
then the write), else one. The leaves (the last level, written without a summary) are counted
from their files' footers (by the driver, or in one Spark job per release).
"""

from __future__ import annotations

import dataclasses
import math
import re
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ... import _errors
from ..._errors import InftdaError
from ...core import topdown as _topdown
from ...core.arrays import I64
from ...core.blocks import bucket_blocks, bucket_width, first_child_keys
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
    cells: Callable[[], DataFrame],
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

    ``cells`` gives the scan's cells table, asked for only when a level runs in Spark's tasks;
    ``sigmas`` per level, root first (0: no noise);
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
    leaves = _distributed(
        spark, spec, chains, cells, sigmas, level, (codes, values),
        source=source, step=step, scratch=scratch, report=report,
    )  # fmt: skip
    levels = tuple(sorted(stats, key=lambda s: s.level))
    if leaves is None:  # a level kept nothing: no leaves
        empty = np.zeros(0, np.int64)
        return TopDownResult(codes=tuple(empty for _ in range(k)), counts=empty, levels=levels)
    return SparkLeaves(path=leaves, levels=levels, total=total)


@dataclass(frozen=True)
class _Buckets:
    """A level's non-empty buckets (sorted) with the children, parents and only children
    (parents with one child) of the surviving parents in each: all the driver needs to cut
    the level into blocks and to count it."""

    bucket: I64
    children: I64
    parents: I64
    lone: I64

    @classmethod
    def summed(cls, bucket: I64, children: I64, parents: I64, lone: I64) -> _Buckets:
        """Rows of ``(bucket, children, parents, lone)`` summed per bucket."""
        if bucket.size == 0:
            empty = np.zeros(0, np.int64)
            return cls(empty, empty, empty, empty)
        order, starts = _key_runs(bucket)
        return cls(
            bucket[order][starts],
            *(
                np.add.reduceat(np.asarray(x, np.int64)[order], starts)
                for x in (children, parents, lone)
            ),
        )

    @property
    def n_parents(self) -> int:
        return int(self.parents.sum())

    @property
    def noised(self) -> int:
        """Children that draw noise: an only child is its parent's value."""
        return int(self.children.sum() - self.lone.sum())


@dataclass(frozen=True)
class _Keys:
    """How a level's parents find their children: the refined ``chain``, the code ranges of
    its children (``offsets``), the level's key strides and bucket ``width``."""

    chain: int
    offsets: I64
    strides: tuple[int, ...]
    width: int

    def parents(self, codes: Sequence[I64]) -> tuple[I64, I64, I64]:
        """First child code, child count and first child key of every parent."""
        code = codes[self.chain]
        start = np.asarray(self.offsets[code], np.int64)
        cnt = np.asarray(self.offsets[code + 1], np.int64) - start
        return start, cnt, first_child_keys(codes, self.chain, start, self.strides)

    def buckets(self, codes: Sequence[I64]) -> _Buckets:
        """The per-bucket summary of the parents ``codes``."""
        _, cnt, first = self.parents(codes)
        ones = np.ones(cnt.size, np.int64)
        return _Buckets.summed(first // self.width, cnt, ones, (cnt == 1).astype(np.int64))


def _level_keys(spec: TreeSpec, chains: Sequence[ChainTree], level: int) -> _Keys:
    sizes = [ch.sizes for ch in chains]
    c = spec.refined_chain(level)
    n_cells = math.prod(s[d] for s, d in zip(sizes, spec.levels[level], strict=True))
    return _Keys(
        c,
        np.asarray(chains[c].child_offsets[spec.levels[level][c]], np.int64),
        key_strides(spec, level, sizes),
        bucket_width(n_cells),
    )


def _col(table: pa.Table | pa.RecordBatch, name: str) -> I64:
    out: I64 = table.column(name).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    return out


def _key_runs(key: I64) -> tuple[I64, I64]:
    """The stable order sorting non-empty ``key`` and where each run of one key starts in it."""
    order = np.argsort(key, kind="stable")
    k = key[order]
    return order, np.flatnonzero(np.concatenate(([True], k[1:] != k[:-1])))


def _sum_by_key(key: I64, n: I64, block: I64) -> tuple[I64, I64, I64]:
    """Cells summed per key (a key's block is the same on every row)."""
    if key.size == 0:
        return key, n, block
    order, starts = _key_runs(key)
    return key[order][starts], np.add.reduceat(n[order], starts), block[order][starts]


def _rows(k: int, block: I64, kind: int, codes: Sequence[I64], v: I64) -> pa.RecordBatch:
    """Rows of the level's one shuffle: ``block, kind, c0.., v`` (kind 0: a parent with its
    codes and value; kind 1: a cell, its key in ``c0`` and its true count in ``v``)."""
    zero = np.zeros(block.size, np.int64)
    codes = [*codes, *([zero] * (k - len(codes)))]
    arrays = [block, np.full(block.size, kind, np.int64), *codes, v]
    names = ["block", "kind", *_code_cols(k), "v"]
    return pa.RecordBatch.from_arrays([pa.array(a, pa.int64()) for a in arrays], names=names)


def _block_of(bucket: I64, buckets: I64, blocks: I64) -> tuple[I64, I64]:
    """Block of every bucket of ``bucket`` found among the level's ``buckets``, and where."""
    at = np.searchsorted(buckets, bucket)
    found = np.flatnonzero(at < buckets.size)
    found = found[buckets[at[found]] == bucket[found]]
    return blocks[at[found]], found


def _parent_rows(
    k: int, keys: _Keys, buckets: I64, blocks: I64
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The surviving parents (``c0.., v``) with their block."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            codes = [_col(batch, c) for c in _code_cols(k)]
            _, _, first = keys.parents(codes)
            # every parent's bucket is in the summary (made from these parents): all found
            block, at = _block_of(first // keys.width, buckets, blocks)
            yield _rows(k, block, 0, [c[at] for c in codes], _col(batch, "v")[at])

    return run


#: cells buffered by a task before it sums them per key and sends them on
_CELLS_BUFFER = 1 << 20


def _cell_rows(
    k: int, keys: _Keys, buckets: I64, blocks: I64
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The cells (``key, code, p, n``: the refined chain's code and its parent's) of the
    surviving parents' buckets with their block, summed per key within the task."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        held: list[tuple[I64, I64, I64]] = []
        rows = 0
        for batch in batches:
            key, n = _col(batch, "key"), _col(batch, "n")
            first = key - _col(batch, "code") + keys.offsets[_col(batch, "p")]
            block, at = _block_of(first // keys.width, buckets, blocks)
            held.append(_sum_by_key(key[at], n[at], block))
            rows += held[-1][0].size
            if rows >= _CELLS_BUFFER:
                yield _flush(k, held)
                held, rows = [], 0
        if held:
            yield _flush(k, held)

    return run


def _flush(k: int, held: list[tuple[I64, I64, I64]]) -> pa.RecordBatch:
    key, n, block = (np.concatenate([h[j] for h in held]) for j in range(3))
    key, n, block = _sum_by_key(key, n, block)
    return _rows(k, block, 1, [key], n)


def _block_task(
    run: Callable[[pa.Table, pa.Table], pa.Table], k: int, keys: _Keys, after: _Keys | None
) -> Callable[[pa.Table], pa.Table]:
    """One block's group of the shuffle -> its survivors (``run``: :func:`_kernel`) and, when
    a level follows (``after``), one summary row per bucket of that level they fall in."""
    cols = _code_cols(k)

    def task(group: pa.Table) -> pa.Table:
        kind = _col(group, "kind")
        par, cel = np.flatnonzero(kind == 0), np.flatnonzero(kind == 1)
        codes = [_col(group, c)[par] for c in cols]
        start, cnt, first = keys.parents(codes)
        parents = pa.table(
            {
                **dict(zip(cols, codes, strict=True)),
                "v": _col(group, "v")[par],
                "start": start,
                "cnt": cnt,
                "first": first,
                "block": _col(group, "block")[par],
            }
        )
        key, n, _ = _sum_by_key(_col(group, "c0")[cel], _col(group, "v")[cel], cel)  # any block
        out = run(parents, pa.table({"key": key, "n": n}))
        if after is None:
            return out
        survivors = [_col(out, c) for c in cols]
        summary = after.buckets(survivors)
        none = pa.nulls(out.num_rows, pa.int64())
        size = summary.bucket.size
        rows = {
            **{c: pa.concat_arrays([pa.array(x, pa.int64()), pa.nulls(size, pa.int64())])
               for c, x in zip([*cols, "v"], [*survivors, _col(out, "v")], strict=True)},
            **{name: pa.concat_arrays([none, pa.array(getattr(summary, name), pa.int64())])
               for name in _SUMMARY},
        }  # fmt: skip
        return pa.table(rows)

    return task


_SUMMARY = ("bucket", "children", "parents", "lone")


def _distributed(
    spark: SparkSession,
    spec: TreeSpec,
    chains: Sequence[ChainTree],
    cells: Callable[[], DataFrame],
    sigmas: Sequence[float],
    first_level: int,
    held: tuple[list[I64], I64],
    *,
    source: RandomSource,
    step: Optimizer,
    scratch: str,
    report: Callable[[LevelStats], None],
) -> str | None:
    """Levels ``first_level ..`` in Spark's tasks, from the surviving parents ``held`` on the
    driver (codes per chain, values); returns the folder of the released leaves (None when a
    level keeps nothing).

    At most three Spark jobs a level: (1) the summary of the level's buckets, written by the
    level above beside its survivors, is collected (none for the first level: the driver
    holds its parents); (2) parents and cells go to their blocks in one shuffle; (3) the
    blocks are noised and post-processed and their survivors written, with the summary of the
    next level's buckets. The lookups (code ranges, bucket -> block) travel in the tasks'
    closures, not as broadcast joins."""
    k = len(spec.chains)
    cols = _code_cols(k)
    cells_table = cells()
    block_children = _topdown.CHUNK_CHILDREN  # read now: tests shrink it
    schema = _schema([*cols, "v", *_SUMMARY])
    path = ""
    pending: LevelStats | None = None  # a level's statistics, until its survivors are counted
    keys = _level_keys(spec, chains, first_level)
    summary = keys.buckets(held[0])
    for level in range(first_level, spec.n_levels + 1):
        t0 = time.perf_counter()
        sigma = float(sigmas[level])
        name = spec.level_name(level)
        if level > first_level:
            describe(spark, f"level {level} ({name}): parents per bucket")
            table = _read_summary(spark, path, schema)
            summary = _Buckets.summed(*(_col(table, s) for s in _SUMMARY))
            assert pending is not None
            report(dataclasses.replace(pending, surviving_cells=summary.n_parents))
        if summary.n_parents == 0:
            for empty in range(level, spec.n_levels + 1):
                report(
                    LevelStats(empty, spec.level_name(empty), 0, 0, 0, float(sigmas[empty]), 0.0)
                )
            describe(spark, None)
            return None
        blocks = bucket_blocks(summary.children, block_children)
        last = level == spec.n_levels
        after = None if last else _level_keys(spec, chains, level + 1)
        if level == first_level:
            codes, values = held
            _, _, first = keys.parents(codes)
            block, at = _block_of(first // keys.width, summary.bucket, blocks)
            batch = _rows(k, block, 0, [c[at] for c in codes], values[at])
            parents = spark.createDataFrame(pa.Table.from_batches([batch]), schema=_rows_schema(k))
        else:
            parents = (
                spark.read.schema(schema)
                .parquet(path)
                .where(F.col("bucket").isNull())
                .select(*cols, "v")
                .mapInArrow(_parent_rows(k, keys, summary.bucket, blocks), _rows_schema(k))
            )
        rows = parents
        if summary.noised:  # else the level reads no true count: every child is an only child
            c, depth = keys.chain, spec.levels[level][keys.chain]
            rows = rows.unionByName(
                cells_table.where(F.col("n") > 0)
                .select(
                    level_key(spec, level, keys.strides).alias("key"),
                    F.col(_depth_code(c, depth)).cast("long").alias("code"),
                    (
                        F.col(_depth_code(c, depth - 1)).cast("long")
                        if depth > 1
                        else F.lit(0).cast("long")
                    ).alias("p"),
                    F.col("n").cast("long").alias("n"),
                )
                .mapInArrow(_cell_rows(k, keys, summary.bucket, blocks), _rows_schema(k))
            )
        # one partition per block (on average: placed by hash), so a task holds about
        # block_children children; an explicit count keeps adaptive execution from coalescing
        # blocks (their inputs are small: the children are made in the task)
        n_blocks = max(1, int(np.unique(blocks).size))
        run = _kernel(level, keys.chain, k, keys.strides, sigma, step, source)
        out = (
            rows.repartition(n_blocks, "block")
            .groupBy("block")
            .applyInArrow(
                _block_task(run, k, keys, after), _schema([*cols, "v"]) if last else schema
            )
        )
        path = f"{scratch}/level_{level}"
        describe(
            spark,
            f"level {level} ({name}): blocks to their tasks, noise and step, survivors written",
        )
        try:
            out.write.parquet(path)
        except PySparkException as exc:
            raise_task_error(exc)
            raise
        pending = LevelStats(level, name, summary.n_parents, summary.noised, -1, sigma,
                             time.perf_counter() - t0)  # fmt: skip
        if after is not None:
            keys = after
    assert pending is not None
    describe(spark, "TopDown: the leaves counted")
    report(dataclasses.replace(pending, surviving_cells=_count_rows(spark, path)))
    describe(spark, None)
    return path


def _rows_schema(k: int) -> str:
    return _schema(["block", "kind", *_code_cols(k), "v"])


def _depth_code(chain: int, depth: int) -> str:
    from .domain import depth_code

    return depth_code(chain, depth)


def scratch_folder(spark: SparkSession, scratch: str | None) -> str:
    """A fresh folder for one release's intermediate files (under ``scratch`` or the warehouse)."""
    base = scratch or spark.conf.get("spark.sql.warehouse.dir") or "spark-warehouse"
    return f"{base.rstrip('/')}/__inftda_{uuid.uuid4().hex[:12]}"


def local_folder(spark: SparkSession, path: str) -> str | None:
    """``path`` on the driver's own disk when Hadoop resolves it to the local file system
    (``file:``; Spark's local mode, a shared disk), else None (HDFS, an object store)."""
    jvm = spark.sparkContext._jvm
    jsc = spark.sparkContext._jsc
    if jvm is None or jsc is None:
        return None
    hpath = jvm.org.apache.hadoop.fs.Path(path)
    uri = hpath.getFileSystem(jsc.hadoopConfiguration()).makeQualified(hpath).toUri()
    return str(uri.getPath()) if str(uri.getScheme()) == "file" else None


def _read_summary(spark: SparkSession, path: str, schema: str) -> pa.Table:
    """The summary rows of a level's output: read by the driver itself from a local folder
    (no Spark job: the files Spark committed, ``_SUCCESS`` and checksums left aside), else
    collected by one Spark job."""
    local = local_folder(spark, path)
    if local is not None:
        import pyarrow.dataset as ds  # here, not for every Python worker (it imports pandas)

        found = ds.dataset(
            local, format="parquet", schema=pa.schema([(c, pa.int64()) for c in _names(schema)])
        )
        return found.to_table(columns=list(_SUMMARY), filter=pc.field("bucket").is_valid())
    return (
        spark.read.schema(schema)
        .parquet(path)
        .where(F.col("bucket").isNotNull())
        .select(*_SUMMARY)
        .toArrow()
    )


def _count_rows(spark: SparkSession, path: str) -> int:
    """The rows of a parquet folder, from its files' footers (on the driver when the folder is
    local, else one Spark job)."""
    local = local_folder(spark, path)
    if local is not None:
        import pyarrow.dataset as ds

        return int(ds.dataset(local, format="parquet").count_rows())
    return int(spark.read.parquet(path).count())


def _names(schema: str) -> list[str]:
    return [field.split()[0] for field in schema.split(",")]


def remove_folder(spark: SparkSession, path: str) -> None:
    """Delete ``path`` recursively through Hadoop's file system (local, HDFS, object stores)."""
    jvm = spark.sparkContext._jvm
    jsc = spark.sparkContext._jsc
    if jvm is None or jsc is None:
        return
    hpath = jvm.org.apache.hadoop.fs.Path(path)
    hpath.getFileSystem(jsc.hadoopConfiguration()).delete(hpath, True)
