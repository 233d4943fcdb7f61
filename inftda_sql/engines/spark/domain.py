"""Domain coding on Spark: a chain's public domain collected to the driver once, coded there.

Domains are public and modest (a country's municipalities, census blocks): their distinct
paths are collected as Arrow, sorted by (parent path, value) on the driver with the same byte
order DuckDB uses, and coded by :func:`~inftda_sql.core.tree.code_paths`, so both engines give
every node the same code. The coded paths (the chain's columns and a code per depth) go back
to Spark as a small DataFrame the scan joins and the write stage decodes with.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc
from py4j.protocol import Py4JError  # type: ignore[import-untyped]
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..._errors import DomainError, Part
from ...core.tree import ChainTree, code_paths
from ..checks import check_domain_paths, reversal_hint
from .catalog import quote
from .frames import from_driver

__all__ = ["CodedChain", "build_chain", "depth_code", "distinct_paths"]


def depth_code(chain: int, depth: int) -> str:
    """The column of chain ``chain``'s depth-``depth`` code (in code tables and cell tables)."""
    return f"__c{chain}_{depth}"


#: code tables up to this many paths are broadcast to every task; larger ones (millions of
#: census blocks) are joined by a shuffle, as Spark decides
BROADCAST_PATHS = 1 << 20

#: code tables up to this many paths are rows in the plan (a ``LocalRelation``: broadcast
#: without a Spark job); larger ones go to Spark as Arrow batches (:func:`~.frames.from_driver`),
#: since every query over rows in the plan plans them again (a census domain's 156,000 paths:
#: about 0.5 s of planning per query, and as much to make them)
LOCAL_PATHS = 1 << 14

#: public domains whose plan Spark estimates at most this size (the files' bytes for a file
#: or table) are fetched whole and made distinct on the driver: one job and no shuffle instead
#: of a ``DISTINCT``'s two (its planning is the first query of a session, the slowest)
DRIVER_DOMAIN_BYTES = 16 << 20


class CodedChain:
    """A chain's tree and its code table (the chain's columns, then ``depth_code(c, d)``), in
    Spark and, as ``paths``, on the driver (row ``i`` is leaf code ``i``'s path)."""

    def __init__(self, tree: ChainTree, codes: DataFrame, paths: pa.Table | None = None) -> None:
        self.tree = tree
        self.codes = codes
        self.paths = paths

    def joinable(self, frame: DataFrame) -> DataFrame:
        """``frame`` (a projection of the code table) marked for broadcast when it is small."""
        return F.broadcast(frame) if self.tree.sizes[-1] <= BROADCAST_PATHS else frame


def _lost(chain: Sequence[str], types: Sequence[T.DataType]) -> Column:
    """Whether a value of the row's path does not convert to its column's type."""
    lost = F.lit(False)
    for c, t in zip(chain, types, strict=True):
        lost = lost | (F.col(quote(c)).isNotNull() & F.col(quote(c)).try_cast(t).isNull())
    return lost


def distinct_paths(
    domains: Sequence[DataFrame],
    chains: Sequence[Sequence[str]],
    types: Sequence[Sequence[T.DataType]],
) -> list[pa.Table]:
    """Every chain's distinct paths, cast to ``types``, each with ``__lost`` (whether a value of
    it did not convert), from ONE Spark query over all the chains' domains (``domains[i]`` has
    chain ``i``'s columns): the rows of chain ``i`` fill its own slots of a common row (the other
    chains' slots are NULL) and carry ``i``, so one ``DISTINCT`` serves every chain."""
    slots = [[f"__k{i}_{j}" for j in range(len(ch))] for i, ch in enumerate(chains)]
    branches = []
    for i, (frame, chain) in enumerate(zip(domains, chains, strict=True)):
        columns = [F.lit(i).alias("__chain")]
        for k, (names, kinds) in enumerate(zip(slots, types, strict=True)):
            for j, (slot, t) in enumerate(zip(names, kinds, strict=True)):
                value = F.col(quote(chain[j])).try_cast(t) if k == i else F.lit(None).cast(t)
                columns.append(value.alias(slot))
        branches.append(frame.select(*columns, _lost(chain, types[i]).alias("__lost")))
    union = branches[0]
    for branch in branches[1:]:
        union = union.union(branch)
    if _distinct_on_driver(union, types):
        fetched = union.toArrow()
        found = fetched.group_by(fetched.column_names, use_threads=False).aggregate([])
    else:
        found = union.distinct().toArrow()
    index = found.column("__chain")
    out = []
    for i, chain in enumerate(chains):
        mine = found.filter(pc.equal(index, i))
        out.append(
            pa.table(
                [*(mine.column(slot) for slot in slots[i]), mine.column("__lost")],
                names=[*chain, "__lost"],
            )
        )
    return out


def _distinct_on_driver(union: DataFrame, types: Sequence[Sequence[T.DataType]]) -> bool:
    """Whether the domains' rows are few enough to fetch whole and make distinct on the driver
    (Spark's estimate of the plan's size, from the public domains' files or rows, at most
    :data:`DRIVER_DOMAIN_BYTES`), and Arrow's equality of their values is Spark's: not for
    floating values (Spark's ``DISTINCT`` makes -0.0 and 0.0, and every NaN, one value) or
    strings under a collation other than binary."""
    for kinds in types:
        for t in kinds:
            if isinstance(t, T.FloatType | T.DoubleType):
                return False
            if isinstance(t, T.StringType) and getattr(t, "collation", "UTF8_BINARY") != (
                "UTF8_BINARY"
            ):
                return False
    try:
        size = int(str(union._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()))
    except (Py4JError, ValueError):  # no estimate: Spark's DISTINCT
        return False
    return size <= DRIVER_DOMAIN_BYTES


def build_chain(
    spark: SparkSession,
    index: int,
    domain: DataFrame,
    chain: Sequence[str],
    types: Sequence[T.DataType],
    role: str,
    hierarchy: Sequence[Sequence[str]] = (),
    domains: Sequence[DataFrame] = (),
    found: pa.Table | None = None,
) -> CodedChain:
    """Validate and code one chain's domain (``domain`` has the chain's columns).

    ``hierarchy`` and ``domains`` (every chain and its domain, with its columns) let a domain
    that is not nested because its chain was given fine to coarse suggest the hierarchy to type
    instead, every chain given fine to coarse reversed. ``found``: the chain's distinct paths
    as :func:`distinct_paths` gives them, when fetched already (else one Spark job here)."""
    if found is None:  # one job: the distinct paths, each with whether a value did not convert
        found = distinct_paths([domain], [chain], [types])[0]
    if pc.any(found.column("__lost")).as_py():
        raise DomainError(
            f"the {role} has values that do not convert to the input's column types "
            f"({', '.join(f'{c} {t.simpleString()}' for c, t in zip(chain, types, strict=True))})"
        )
    paths = pa.table(found.columns[: len(chain)], names=list(chain))
    check_domain_paths(paths, role, chain)
    paths = paths.sort_by([(c, "ascending") for c in chain])
    coded = code_paths(paths)
    if coded.tree is None:
        chains = [list(c) for c in hierarchy] or [list(chain)]
        at = index if index < len(chains) and chains[index] == list(chain) else 0
        if chains[at] != list(chain):
            chains, at = [list(chain)], 0

        def read(j: int) -> pa.Table | None:
            if j >= len(domains):
                return None
            table = domains[j].select(*[quote(c) for c in chains[j]]).distinct().toArrow()
            return pa.table(table.columns, names=chains[j])

        hint = reversal_hint(coded.paths, at, chains, read)
        _nesting_error(coded.paths, chain, coded.not_nested or 2, role, hint)
    assert coded.tree is not None
    table = coded.paths
    for d, code in enumerate(coded.codes, start=1):
        table = table.append_column(depth_code(index, d), pa.array(code))
    frame = (
        spark.createDataFrame(table) if table.num_rows <= LOCAL_PATHS else from_driver(spark, table)
    )
    return CodedChain(coded.tree, frame, coded.paths)


def _nesting_error(
    paths: pa.Table, chain: Sequence[str], depth: int, role: str, hint: Sequence[Part] = ()
) -> None:
    parents: dict[object, list[object]] = defaultdict(list)
    for parent, child in zip(
        paths.column(depth - 2).to_pylist(), paths.column(depth - 1).to_pylist(), strict=True
    ):
        if parent not in parents[child]:
            parents[child].append(parent)
    value, (p1, p2) = next((v, ps[:2]) for v, ps in parents.items() if len(ps) > 1)
    problem = (
        f"the {role} is not nested: {chain[depth - 1]}={value!r} is listed under "
        f"{chain[depth - 2]}={p1!r} and {chain[depth - 2]}={p2!r}; "
    )
    if hint:
        raise DomainError(problem, *hint, param="hierarchy")
    raise DomainError(
        problem,
        "every value must have one "
        f"parent (use codes unique across the whole domain, e.g. prefix {chain[depth - 1]} with "
        f"its {chain[depth - 2]})",
    )
