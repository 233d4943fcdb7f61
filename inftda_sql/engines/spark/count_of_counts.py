"""A count-of-counts release on Spark: the public groups table, the two aggregations, the write.

The same stages and checks as DuckDB's (:mod:`inftda_sql.engines.duckdb.count_of_counts`), in
Spark: the groups table coded as the hierarchy's public domain on the driver
(:func:`~.domain.build_chain`); ``A`` (one row per group: its region and size) and, per level,
the number of groups of each size per region, both aggregated by Spark, each level's
histograms collected to the driver (the estimators are global per node: a node's histogram is
at most ``max_size`` entries); then the engine-free steps of :mod:`inftda_sql.core.coc_levels`.
The write saves the leaf histograms as a table of the catalog and its levels view, then appends
the ledger row (both dropped again if that fails).

Messages name columns, regions (public) and how many rows or regions are wrong; never a count
taken from the private data.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ..._errors import Arg, DomainError, InputDataError, InternalError, Part, SpecError
from ...core.accounting import Guarantee
from ...core.arrays import I64
from ...core.coc import (
    CocLevel,
    Histograms,
    found_vs_listed,
    node_parents,
    public_groups,
    truncate_sizes,
    with_empty_groups,
)
from ...core.tree import ChainTree
from ..records import ReleaseRecord
from .catalog import (
    BaseTables,
    SparkSource,
    base_tables,
    check_domain_reads,
    check_domain_types,
    check_scalar_type,
    count_column,
    quote,
    resolve_source,
    sql_name,
)
from .domain import CodedChain, build_chain, depth_code
from .frames import from_driver
from .ledger import FileLedger, Reservation, open_ledger
from .scan import describe
from .targets import check_targets

__all__ = ["CocStages", "SparkCountOfCounts", "levels_view_sql"]


def _c(name: str) -> Any:
    return F.col(quote(name))


class SparkCountOfCounts:
    """The data stages of one count-of-counts release on a SparkSession (the Spark engine's
    :class:`~inftda_sql.engines.base.CountOfCountsEngine` methods delegate here)."""

    def __init__(self, spark: SparkSession, request: Any) -> None:
        self.spark = spark
        self.request = request
        self._input: SparkSource | None = None
        self._groups: SparkSource | None = None
        self._groups_column = ""
        self._coded: CodedChain | None = None
        self.tree: ChainTree | None = None
        self.groups_per_leaf: I64 | None = None

    @property
    def groups_description(self) -> str:
        return self._groups.description if self._groups else "?"

    @property
    def sources(self) -> tuple[SparkSource, SparkSource]:
        if self._input is None or self._groups is None:
            raise SpecError("resolve the inputs first")  # pragma: no cover - stage order
        return self._input, self._groups

    def resolve_names(self) -> tuple[SparkSource, SparkSource]:
        """The input and the PUBLIC groups table resolved in the catalog."""
        req = self.request
        self._input = resolve_source(self.spark, req.table, role="input table", param="table")
        self._groups = resolve_source(
            self.spark, req.groups, role="groups table", error=DomainError, param="groups"
        )
        return self._input, self._groups

    def resolve(self) -> None:
        """The input and the groups table have the named columns, of plain types."""
        req = self.request
        src, groups = self.sources
        src.column(req.group, "group column")
        check_scalar_type(src, req.group, "group column", InputDataError)
        for col in req.chain:
            src.column(col, "hierarchy column")
            check_scalar_type(src, col, "hierarchy column", InputDataError)
        if req.group.lower() in {c.lower() for c in req.chain}:
            raise SpecError(f"group column {req.group!r} is also a hierarchy column", param="group")
        for col in req.chain:
            groups.column(col, "hierarchy column of the groups table", DomainError)
            check_scalar_type(groups, col, "hierarchy column of the groups table", DomainError)
        check_domain_types(src, groups, req.chain, "groups table")
        column = req.groups_column
        if column is None:
            others = [n for k, n in groups.names.items() if k not in {c.lower() for c in req.chain}]
            if len(others) != 1:
                raise DomainError(
                    f"the {groups.description} has {len(others)} columns besides the hierarchy "
                    f"({', '.join(others) or 'none'}); name the one holding the number of groups "
                    "with ",
                    Arg("groups_column"),
                    param="groups_column",
                )
            column = others[0]
        self._groups_column, _ = count_column(groups, column, "groups column")

    def domain(self) -> tuple[ChainTree, I64]:
        """Code the groups table as the public domain; the public number of groups per leaf."""
        src, groups = self.sources
        chain = list(self.request.chain)
        types = [src.types[c.lower()] for c in chain]
        frame = groups.df.select(*[_c(groups.names[c.lower()]).alias(c) for c in chain])
        describe(self.spark, "domain: the public groups table")
        coded = build_chain(self.spark, 0, frame, chain, types, "groups table")
        tree = coded.tree
        leaf_code = depth_code(0, len(chain))
        codes = coded.codes.select(_c(chain[-1]).alias("__leaf"), F.col(leaf_code)).distinct()
        gcol = _c(self._groups_column)
        table = (
            groups.df.select(
                _c(groups.names[chain[-1].lower()]).cast(types[-1]).alias("__leaf"),
                gcol.alias("__g"),
            )
            .join(coded.joinable(codes), "__leaf")
            .groupBy(F.col(leaf_code).alias("leaf"))
            .agg(
                F.count(F.lit(1)).alias("listed"),
                F.min("__g").cast("double").alias("groups"),
                F.sum(F.col("__g").isNull().cast("long")).alias("nulls"),
                F.max((F.col("__g") != F.floor(F.col("__g"))).cast("int")).alias("fractional"),
            )
            .toArrow()
        )
        describe(self.spark, None)
        leaf = table.column("leaf").to_numpy().astype(np.int64)
        lo = table.column("groups").to_numpy(zero_copy_only=False).astype(float)
        problems = {
            "is listed more than once": table.column("listed").to_numpy() > 1,
            "has a NULL number of groups": table.column("nulls").to_numpy() > 0,
            "has a fractional number of groups": np.nan_to_num(
                table.column("fractional").to_numpy(zero_copy_only=False).astype(float)
            )
            > 0,
            "has a negative number of groups": np.nan_to_num(lo) < 0,
        }
        for what, bad in problems.items():
            if np.any(bad):
                region = self._region(coded, int(leaf[np.flatnonzero(bad)[0]]))
                raise DomainError(
                    f"the groups table ({groups.description}): {int(np.count_nonzero(bad))} "
                    f"region(s) where it {what}, e.g. {region}; list every leaf region once with "
                    f"its number of groups in {self._groups_column!r} (a non-negative integer)",
                    param="groups",
                )
        per_leaf = np.zeros(tree.sizes[-1], dtype=np.int64)
        per_leaf[leaf] = np.nan_to_num(lo).astype(np.int64)
        self._coded, self.tree, self.groups_per_leaf = coded, tree, per_leaf
        return tree, per_leaf

    def scan(self, max_size: int | None) -> tuple[list[CocLevel], int]:
        """The two aggregations, the checks, and the true histograms of every level (root
        first, sizes truncated at ``max_size`` when given); also the largest group size."""
        src, groups = self.sources
        if self._coded is None or self.tree is None or self.groups_per_leaf is None:
            raise SpecError("code the domain first")  # pragma: no cover - stage order
        req, chain, tree, coded = self.request, list(self.request.chain), self.tree, self._coded
        group = src.column(req.group, "group column")
        describe(self.spark, "scan: group sizes, histograms of every level")
        sizes = (
            src.df.groupBy(
                _c(group).alias("gid"), *[_c(src.names[c.lower()]).alias(c) for c in chain]
            )
            .agg(F.count(F.lit(1)).alias("size"))
            .persist()
        )
        try:
            split, null_ids = sizes.agg(
                F.count("gid") - F.countDistinct("gid"), F.sum(F.col("gid").isNull().cast("long"))
            ).first() or (0, 0)
            if null_ids:
                raise InputDataError(
                    f"{int(null_ids)} group(s) of the {src.description} have a NULL "
                    f"{req.group!r}; every person must belong to a group",
                    param="group",
                )
            if split:
                raise InputDataError(
                    f"{int(split)} group(s) of the {src.description} sit in more than one leaf "
                    f"region ({req.group!r} appears with different {', '.join(chain)}); a group "
                    "must lie in one leaf: fix the data, or make the group id include the region",
                    param="group",
                )
            levels, largest = self._levels(sizes, coded, tree, chain)
        finally:
            sizes.unpersist()
            describe(self.spark, None)
        over, under = found_vs_listed(levels[-1], req.min_size)
        if over or under:
            self._disagree(over, under, src, groups)
        if req.min_size == 0:
            levels = [with_empty_groups(lv) for lv in levels]
        if max_size is not None:
            levels = [truncate_sizes(lv, max_size) for lv in levels]
        return levels, largest

    def _levels(
        self, sizes: DataFrame, coded: CodedChain, tree: ChainTree, chain: Sequence[str]
    ) -> tuple[list[CocLevel], int]:
        parents = node_parents(tree)
        public = public_groups(tree, self.groups_per_leaf)  # type: ignore[arg-type]
        levels: list[CocLevel] = []
        largest = 0
        for depth in range(len(chain) + 1):
            prefix = list(chain[:depth])
            hist = sizes.groupBy(*[F.col(quote(c)) for c in prefix], "size").agg(
                F.count(F.lit(1)).alias("groups")
            )
            if depth == 0:
                table = hist.select(F.lit(0).cast("long").alias("node"), "size", "groups")
            else:
                code = depth_code(0, depth)
                nodes = coded.codes.select(
                    *[F.col(quote(c)).alias(f"__p{i}") for i, c in enumerate(prefix)], code
                ).distinct()
                on = [F.col(quote(c)).eqNullSafe(F.col(f"__p{i}")) for i, c in enumerate(prefix)]
                table = hist.join(coded.joinable(nodes), on, "left").select(
                    F.col(code).alias("node"), "size", "groups", *[quote(c) for c in prefix]
                )
            found = table.toArrow()
            node = found.column("node")
            if node.null_count:
                self._outside(found, prefix, int(node.null_count))
            n = node.to_numpy(zero_copy_only=False).astype(np.int64)
            size = found.column("size").to_numpy().astype(np.int64)
            count = found.column("groups").to_numpy().astype(np.int64)
            if size.size:
                largest = max(largest, int(size.max()))
            levels.append(
                CocLevel(
                    name="root" if depth == 0 else chain[depth - 1],
                    groups=public[depth],
                    parent=parents[depth],
                    truth=Histograms.build(n, size, count),
                )
            )
        return levels, largest

    def write(
        self,
        leaves: Histograms,
        record: ReleaseRecord,
        *,
        output: str,
        view: str | None,
        overwrite: bool,
        append: Callable[[ReleaseRecord, Sequence[str]], ReleaseRecord],
    ) -> ReleaseRecord:
        """Save the released leaf histograms and their levels view, then ``append`` the ledger
        row (both dropped again if that fails)."""
        if self._coded is None:
            raise SpecError("code the domain first")  # pragma: no cover - stage order
        chain = list(self.request.chain)
        leaf = depth_code(0, len(chain))
        released = from_driver(  # as Arrow, in few parts
            self.spark,
            pa.table(
                {
                    "__leaf": pa.array(np.asarray(leaves.node, np.int64)),
                    "size": pa.array(np.asarray(leaves.size, np.int64)),
                    "groups": pa.array(np.asarray(leaves.count, np.int64)),
                }
            ),
        )
        codes = self._coded.codes.select(*[quote(c) for c in chain], leaf)
        table = released.join(self._coded.joinable(codes), F.col("__leaf") == F.col(leaf)).select(
            *[quote(c) for c in chain], "size", "groups"
        )
        describe(self.spark, "write: the released leaf histograms")
        try:
            table.write.mode("overwrite" if overwrite else "errorifexists").saveAsTable(output)
            try:
                if view is not None:
                    self.spark.sql(levels_view_sql(chain, view, output))
                return append(record, [output] if view is None else [output, view])
            except BaseException:
                if view is not None:
                    self.spark.sql(f"DROP VIEW IF EXISTS {view}")
                self.spark.sql(f"DROP TABLE IF EXISTS {output}")
                raise
        finally:
            describe(self.spark, None)

    # ------------------------------------------------------------------------------- errors

    def _region(self, coded: CodedChain, leaf: int) -> str:
        """``county='Y'`` of a leaf code (public: from the groups table)."""
        chain = self.request.chain
        found = coded.codes.where(F.col(depth_code(0, len(chain))) == leaf).first()
        return f"{chain[-1]}={found[chain[-1]]!r}" if found else "?"

    def _outside(self, found: pa.Table, prefix: Sequence[str], n: int) -> None:
        src, groups = self.sources
        bad = found.filter(found.column("node").is_null())
        example = ", ".join(f"{c}={bad.column(c)[0].as_py()!r}" for c in prefix)
        nulls = any(bad.column(c).null_count for c in prefix)
        what = "a NULL region" if nulls else "a region the groups table does not list"
        raise DomainError(
            f"the {src.description} has {what} at level {prefix[-1]!r} "
            f"({n} (region, size) row(s) of its histograms), e.g. {example}; the "
            f"{groups.description} must list every leaf region of the input, with the same "
            f"{', '.join(prefix[:-1]) or 'path'} above it",
            param="groups",
        )

    def _disagree(self, over: int, under: int, src: SparkSource, groups: SparkSource) -> None:
        req = self.request
        cols = ", ".join(quote(c) for c in req.chain)
        hint = (
            f"SELECT {cols}, g.{quote(self._groups_column)} AS listed, count(DISTINCT p."
            f"{quote(req.group)}) AS found FROM <groups table> g LEFT JOIN <input> p USING "
            f"({cols}) GROUP BY ALL HAVING found <> listed"
        )
        parts: list[Part] = [f"the {src.description} and the {groups.description} disagree: "]
        if over:
            parts.append(f"{over} region(s) hold more groups than the groups table lists")
        if under:
            parts += [
                "; " if over else "",
                f"{under} region(s) hold fewer groups than it lists (with ",
                Arg("min_size", req.min_size),
                " every listed group must hold someone; pass ",
                Arg("min_size", 0),
                " if groups may be empty)",
            ]
        parts.append(f". Find them with: {hint}")
        raise InputDataError(*parts, param="groups")


def levels_view_sql(chain: Sequence[str], view: str, output: str) -> str:
    """Every level of the release as sums of its leaves: ``level`` (0 = root),
    ``level_name``, the region columns, ``size`` and ``groups``.

    ``grouping_id()`` numbers the grouping columns in their order of first appearance in the
    sets (Spark's rule): ``size`` (in every set, so its bit is 0), then the region columns; a
    level of depth ``d`` groups the first ``d`` of them.
    """
    k = len(chain)
    cases = " ".join(f"WHEN {(1 << (k - d)) - 1} THEN {d}" for d in range(k + 1))
    names = " ".join(
        f"WHEN {(1 << (k - d)) - 1} THEN '{'root' if d == 0 else chain[d - 1]}'"
        for d in range(k + 1)
    )
    cols = ", ".join(quote(c) for c in chain)
    sets = ", ".join(
        "(" + ", ".join(["size", *(quote(c) for c in chain[:d])]) + ")" for d in range(k + 1)
    )
    return (
        f"CREATE OR REPLACE VIEW {view} AS\n"
        f"SELECT CASE grouping_id() {cases} END AS level,\n"
        f"       CASE grouping_id() {names} END AS level_name,\n"
        f"       {cols}, size,\n"
        f"       CAST(sum(groups) AS BIGINT) AS groups\n"
        f"FROM {output}\n"
        f"GROUP BY GROUPING SETS ({sets})"
    )


class CocStages:
    """The count-of-counts stages of :class:`~inftda_sql.engines.spark.engine.SparkEngine`
    (the :class:`~inftda_sql.engines.base.CountOfCountsEngine` methods)."""

    spark: SparkSession
    _request: Any
    _ledger_given: Any
    _ledger: FileLedger | None
    _reservation: Reservation | None
    _reads: BaseTables
    _coc: SparkCountOfCounts | None

    @property
    def ledger(self) -> FileLedger:  # pragma: no cover - SparkEngine's
        raise NotImplementedError

    def _charge(self) -> tuple[list[str], str | None]:  # pragma: no cover - SparkEngine's
        raise NotImplementedError

    def recheck_budget(  # pragma: no cover - SparkEngine's
        self, record: ReleaseRecord, guarantee: Guarantee
    ) -> ReleaseRecord:
        raise NotImplementedError

    def append(  # pragma: no cover - SparkEngine's
        self, record: ReleaseRecord, made: Sequence[str]
    ) -> ReleaseRecord:
        raise NotImplementedError

    def _counts(self) -> SparkCountOfCounts:
        if self._coc is None:
            if getattr(self._request, "kind", None) != "count_of_counts":
                raise InternalError("a count-of-counts stage ran on another kind of release")
            self._coc = SparkCountOfCounts(self.spark, self._request)
        return self._coc

    @property
    def groups_description(self) -> str:
        return self._counts().groups_description

    def prepare_count_of_counts(self) -> str | None:
        """Open the ledger; resolve the input and the PUBLIC groups table down to what they
        read; refuse a groups table that reads the input, outputs that would destroy what the
        release reads or exist without ``overwrite``; reserve the budget of every base table the
        input reads. Before any private data is read."""
        req, coc = self._request, self._counts()
        self._ledger = open_ledger(self.spark, self._ledger_given)
        inp, groups = coc.resolve_names()
        self._reads = base_tables(inp.df)
        group_reads = base_tables(groups.df)
        check_domain_reads(self._reads, [("groups table", groups.description, group_reads)])
        check_targets(
            self.spark,
            [(inp, self._reads, "the input"), (groups, group_reads, "the groups table")],
            (req.output, req.levels_view),
            overwrite=req.overwrite,
        )
        keys, outside = self._charge()
        note, self._reservation = self.ledger.reserve(
            keys, outside, req.budget, Guarantee.PURE_DP, override=req.budget_override
        )
        return note

    def resolve_groups(self) -> None:
        self._counts().resolve()

    def code_groups(self) -> tuple[ChainTree, I64]:
        return self._counts().domain()

    def coc_counts(self, max_size: int | None) -> tuple[list[CocLevel], int]:
        return self._counts().scan(max_size)

    def write_count_of_counts(self, leaves: Histograms, record: ReleaseRecord) -> ReleaseRecord:
        """Check the budget again, save the leaf histograms and their levels view, then append
        the ledger row; return it as written."""
        req = self._request
        record = self.recheck_budget(record, Guarantee.PURE_DP)
        return self._counts().write(
            leaves,
            record,
            output=sql_name(req.output),
            view=sql_name(req.levels_view) if req.levels_view else None,
            overwrite=req.overwrite,
            append=self.append,
        )
