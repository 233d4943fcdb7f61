"""TopDown levels on the driver: the small ones, with no Spark job at all.

Most levels of a release are small: a country's regions, provinces, even municipality pairs
(millions of children) take a Spark job or several each (about 0.2 s of driver time apiece,
seconds per level whatever its size) but a second or less in numpy. So a level whose children
(counted from the surviving parents and the public domain: never from private data) number at
most the engine setting ``spark.inftda.driverChildren`` runs on the driver, exactly as the
DuckDB engine runs it (:class:`~inftda_sql.core.topdown.LevelJob` over the same blocks, each
drawing from the stream keyed by (seed, level, block) under a test seed, the CSPRNG
otherwise), so a seeded release is the same table whichever side a level runs on. The first
level above the setting, and every level after it, runs distributed
(:mod:`.topdown`). The true counts of a driver level come from the leaf cells, collected to the
driver once (:func:`collect_cells`) when they number at most the same setting, else from one
``GROUP BY`` of the cells table. Cells fetched by the scan itself go back to Spark as the cells
table (:func:`cells_frame`) only if a level then runs in Spark's tasks: the input is never read
again.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ..._errors import SpecError
from ...core.arrays import I64
from ...core.cells import LeafCells
from ...core.rng import RandomSource
from ...core.spec import TreeSpec
from ...core.topdown import LevelJob, Optimizer, run_level
from ...core.tree import ChainTree, key_strides
from .domain import depth_code
from .frames import from_driver

__all__ = [
    "DRIVER_CHILDREN",
    "SETTING",
    "cells_frame",
    "collect_cells",
    "driver_children",
    "driver_level",
]

#: the Spark conf that bounds what runs on the driver (children of a level, leaf cells fetched)
SETTING = "spark.inftda.driverChildren"
#: its default: a level of up to 64M children takes seconds and well under 2 GB on the
#: driver (blocks of about 1M children at a time); 0 runs every level in Spark's tasks
DRIVER_CHILDREN = 1 << 26

TrueLevel = Callable[[int, tuple[int, ...]], tuple[I64, I64]]


def driver_children(spark: SparkSession) -> int:
    """The engine setting ``spark.inftda.driverChildren`` (:data:`DRIVER_CHILDREN` if unset)."""
    given = spark.conf.get(SETTING, None)
    if given is None or str(given).strip() == "":
        return DRIVER_CHILDREN
    try:
        value = int(str(given).strip().replace("_", ""))
    except ValueError:
        value = -1
    if value < 0:
        raise SpecError(
            f"the Spark conf {SETTING} must be a whole number of children >= 0 (0: every level "
            f'in Spark\'s tasks), got {given!r}; e.g. spark.conf.set("{SETTING}", '
            f'"{DRIVER_CHILDREN}")'
        )
    return value


def leaf_code_columns(spec: TreeSpec) -> list[str]:
    """The cells table's leaf code column of every chain."""
    return [depth_code(c, len(chain)) for c, chain in enumerate(spec.chains)]


def fetched_cells(
    table: pa.Table, spec: TreeSpec, counts: I64, chains: Sequence[ChainTree]
) -> LeafCells:
    """The non-empty leaf cells of a table fetched to the driver: its leaf code columns
    (:func:`leaf_code_columns`) and true ``counts`` (64-bit, one per row), where a count is
    above 0."""
    kept = counts > 0
    codes = tuple(
        np.ascontiguousarray(table.column(name).to_numpy()[kept], dtype=np.int64)
        for name in leaf_code_columns(spec)
    )
    return LeafCells(codes, np.ascontiguousarray(counts[kept], dtype=np.int64), tuple(chains))


def collect_cells(cells: DataFrame, spec: TreeSpec, chains: Sequence[ChainTree]) -> LeafCells:
    """The non-empty leaf cells (a leaf code per chain, the true count), fetched as Arrow."""
    table = cells.where(F.col("n") > 0).select(*leaf_code_columns(spec), "n").toArrow()
    return fetched_cells(table, spec, table.column("n").to_numpy(), chains)


def cells_frame(spark: SparkSession, cells: LeafCells, spec: TreeSpec) -> DataFrame:
    """The cells table (a code per chain and depth, and ``n``; one row per non-empty leaf cell)
    made from leaf cells held on the driver, for the levels that run in Spark's tasks after the
    scan fetched its cells: the ancestors' codes are read off the public domain."""
    columns = {
        depth_code(c, d): cells.ancestor_codes(c, d)
        for c, chain in enumerate(spec.chains)
        for d in range(1, len(chain) + 1)
    }
    table = pa.table({**{k: pa.array(v) for k, v in columns.items()}, "n": pa.array(cells.counts)})
    return from_driver(spark, table)


def level_children(
    chains: Sequence[ChainTree], spec: TreeSpec, level: int, codes: Sequence[I64]
) -> int:
    """How many children the surviving parents ``codes`` have at ``level`` (public domain)."""
    c = spec.refined_chain(level)
    off = chains[c].child_offsets[spec.levels[level][c]]
    return int((off[codes[c] + 1] - off[codes[c]]).sum())


def driver_level(
    spec: TreeSpec,
    chains: Sequence[ChainTree],
    level: int,
    codes: Sequence[I64],
    values: I64,
    sigma: float,
    step: Optimizer,
    source: RandomSource,
    true_level: TrueLevel,
    determined: bool,
    pool: ThreadPoolExecutor | None,
) -> tuple[list[I64], I64, int]:
    """One level on the driver, as :func:`inftda_sql.core.topdown.topdown` runs it: the codes
    and values of the surviving children and how many children were noised."""
    sizes = [ch.sizes for ch in chains]
    c = spec.refined_chain(level)
    depth = spec.levels[level][c]
    strides = key_strides(spec, level, sizes)
    off = chains[c].child_offsets[depth]
    starts, counts = off[codes[c]], off[codes[c] + 1] - off[codes[c]]
    empty = np.zeros(0, dtype=np.int64)
    if determined or bool(np.all(counts == 1)):  # every child is its parent: no true count
        keys_true, counts_true = empty, empty
    else:
        keys_true, counts_true = true_level(level, strides)
    cells = math.prod(size[d] for size, d in zip(sizes, spec.levels[level], strict=True))
    job = LevelJob(c, codes, values, starts, counts, strides, keys_true, counts_true, sigma, step)
    return run_level(job, level, cells, source, pool)
