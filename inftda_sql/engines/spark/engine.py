"""One release on a SparkSession: the engine stages strung together."""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType

import numpy as np
import pyarrow as pa
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession

from ..._coc_request import CountOfCountsRequest
from ..._errors import Arg, DomainError, InputDataError, InternalError, SpecError
from ..._request import ReleaseRequest
from ...core.accounting import Guarantee
from ...core.arrays import I64
from ...core.cells import LeafCells
from ...core.domains import match_columns, unwrap
from ...core.names import key_identity
from ...core.tree import ChainTree, LevelStats, TopDownResult
from ...mechanisms import Mechanism, MechanismContext
from ..base import Scan
from ..checks import check_not_aggregated
from ..records import ReleaseRecord
from . import fingerprint
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
    type_family,
)
from .count_of_counts import CocStages, SparkCountOfCounts
from .domain import CodedChain, build_chain, distinct_paths
from .driver import cells_frame, collect_cells, driver_children
from .features import FeatureStages
from .frames import from_driver
from .ledger import FileLedger, Reservation, open_ledger, register_views
from .scan import describe, level_counts, scan
from .targets import check_targets
from .topdown import SparkLeaves, remove_folder, run_topdown, scratch_folder
from .workers import check_workers, warn_slow_settings
from .write import decode, with_base_tables, write_release

__all__ = ["SparkEngine", "SparkResult", "sql_name"]

#: what the mechanism stage gives on Spark: distributed leaves, or a driver-side result
SparkResult = SparkLeaves | TopDownResult


class SparkEngine(FeatureStages, CocStages):
    """One release on a SparkSession (see :class:`inftda_sql.engines.Engine`).

    ``scratch`` is a folder every executor can write (HDFS, an object store, a shared disk; the
    warehouse by default) for the survivors of every level; it is removed when the release ends.
    ``ledger`` is the ledger folder (:func:`~.ledger.ledger_location`). Use the engine as a
    context manager.
    """

    def __init__(
        self,
        spark: SparkSession,
        request: ReleaseRequest | CountOfCountsRequest,
        *,
        scratch: str | None = None,
        ledger: str | os.PathLike[str] | None = None,
    ) -> None:
        self.spark = spark
        self._request = request
        self.scratch = scratch_folder(spark, scratch)
        self._ledger_given = ledger
        self._ledger: FileLedger | None = None
        self._reservation: Reservation | None = None
        self._input: SparkSource | None = None
        self._domains: list[SparkSource] = []
        self._columns: list[dict[str, str]] = []  # per chain: the explicit column mapping
        self._shared: list[int] = []  # per chain: how many chains read its domain
        self._reads_as: list[int] = []  # per chain: the first chain reading the same domain paths
        self._domain_frames: list[DataFrame] = []
        self._code_frames: list[DataFrame] = []  # a feature release's code tables
        self._coc: SparkCountOfCounts | None = None  # a count-of-counts release's stages
        self._domain_desc: list[str] = []
        self._chains: list[CodedChain] = []
        self._cells: DataFrame | None = None
        self._cached: DataFrame | None = None  # what Spark caches the cells in
        self._leaf_cells: LeafCells | None = None  # the cells on the driver, when few enough
        self._on_driver = 0  # levels of up to this many children run on the driver
        self._workers_checked = False  # the Python workers were checked (or never needed)
        self._background = ThreadPoolExecutor(1, thread_name_prefix="inftda-workers-check")
        self._probe: Future[None] | None = None  # the workers' check, started early
        self._count: str | None = None
        self._count_is_integer = True
        self._reads = BaseTables()  # what the input reads
        self._domain_reads: list[BaseTables] = []  # per chain: what its domain reads

    def __enter__(self) -> SparkEngine:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def request(self) -> ReleaseRequest:
        """The request of a hierarchy or feature release."""
        if not isinstance(self._request, ReleaseRequest):
            raise InternalError("a hierarchy or feature stage ran on a count-of-counts release")
        return self._request

    @property
    def domain_description(self) -> str:
        return "; ".join(self._domain_desc)

    @property
    def input_description(self) -> str:
        """The input for the ledger: its name as given, ``<relation>`` for a DataFrame."""
        return self.request.input_description

    @property
    def input(self) -> SparkSource:
        if self._input is None:
            raise SpecError("the input is not resolved yet: call prepare() first")
        return self._input

    @property
    def output(self) -> str:
        """The output table's name (a Spark release always writes one)."""
        if self.request.output is None:  # pragma: no cover - spark.release() sets no return_as
            raise SpecError("a Spark release writes a table: pass ", Arg("output"), param="output")
        return self.request.output

    def released_table(self, result: SparkResult) -> pa.Table:
        """Not on Spark: the released table stays in the cluster (``spark.table(r.output)``)."""
        raise SpecError(
            "a Spark release is not returned in memory; read spark.table(r.output)",
            param="return_as",
        )

    def _domain_role(self, chain: int) -> str:
        req = self.request
        if req.kind == "features":  # a feature release: the tables of a product
            return f"domain table {chain + 1}" if len(req.domains or []) > 1 else "domain"
        return f"domain of chain {chain + 1}" if len(req.tree.chains) > 1 else "domain"

    @property
    def ledger(self) -> FileLedger:
        if self._ledger is None:
            raise SpecError("the ledger is not open yet: call prepare() first")
        return self._ledger

    def prepare(self) -> str | None:
        req = self.request
        # before anything reads the data: the ledger can be written
        self._ledger = open_ledger(self.spark, self._ledger_given)
        self._input = resolve_source(self.spark, req.table, role="input table", param="table")
        resolved: dict[int, SparkSource] = {}  # one geography serving several chains: read once
        for c, given in enumerate(req.domains or ()):
            source, columns = unwrap(given)
            dom = resolved.get(id(source))
            if dom is None:
                dom = resolve_source(
                    self.spark, source, role=self._domain_role(c), error=DomainError, param="domain"
                )
                resolved[id(source)] = dom
            self._domains.append(dom)
            self._columns.append(dict(columns))
        self._shared = [sum(d is dom for d in self._domains) for dom in self._domains]
        # what each source reads, from Spark's analyzed plan (no data read)
        self._reads = base_tables(self.input.df)
        reads = {id(dom): base_tables(dom.df) for dom in resolved.values()}
        self._domain_reads = [reads[id(dom)] for dom in self._domains]
        self._check_domains_are_not_the_input()
        self._check_targets()
        self._on_driver = driver_children(self.spark)
        # the refusals above read the catalog only; the first Spark job checks the workers,
        # still before any private data is read, when a level may run in Spark's tasks and the
        # public domain cannot tell before the scan (see _check_workers_before_scan)
        if self._may_run_in_tasks() and (self._on_driver == 0 or req.domains is None):
            check_workers(self.spark)
            self._workers_checked = True
        keys, outside = self._charge()
        note, self._reservation = self.ledger.reserve(
            keys,
            outside,
            req.budget,
            req.guarantee,
            override=req.budget_override,
        )
        return note

    def _may_run_in_tasks(self) -> bool:
        """Whether a level of this release may run in Spark's tasks, the only stage that runs
        Python on the executors: a hierarchy release by a TopDown mechanism (a feature release
        and a full-domain baseline run on the driver)."""
        req = self._request
        return (
            isinstance(req, ReleaseRequest)
            and req.kind == "hierarchy"
            and isinstance(req.mechanism, Mechanism)
            and req.mechanism.topdown_step is not None
        )

    def _check_workers_before_scan(self) -> None:
        """Check the Python workers (:func:`~.workers.check_workers`) before the scan unless
        every level is certain to run on the driver: a level has at most as many children as
        its nodes in the PUBLIC domain (every parent surviving), so when no level has more than
        ``spark.inftda.driverChildren`` nodes (the leaf level has the most: every node has a
        child), no Python worker is ever started. The check started while the domains were
        coded (:meth:`_start_worker_check`) is waited for here."""
        if self._workers_checked or not self._may_run_in_tasks():
            return
        if self._probe is not None:
            self._probe.result()  # its error, if any
        elif not self._cells_fit_driver():
            check_workers(self.spark)
        self._workers_checked = True

    def _start_worker_check(self, paths: Sequence[int]) -> None:
        """Start :func:`~.workers.check_workers` in a thread of its own as soon as the number
        of every chain's domain paths is known (``paths``, PUBLIC: at least its leaves), when
        the leaf cells they allow exceed ``spark.inftda.driverChildren`` and a level may run in
        Spark's tasks: the workers start while the driver codes the domains and plans the
        scan, instead of after."""
        if not self._may_run_in_tasks() or self._fits_driver(math.prod(paths)):
            return
        self._probe = self._background.submit(check_workers, self.spark)

    def _charge(self) -> tuple[list[str], str | None]:
        """The base tables (or files) the input reads, which its budget is charged to (with a
        budgeted table whose data files it reads through hard links), and what it reads from
        outside them (rows given in memory, an RDD, a JDBC source), or None."""
        reads = self._reads
        outside = None
        if reads.outside:
            what = ", ".join(reads.outside)
            outside = f"read (partly) from outside the catalog's tables and files ({what})"
        keys = list(reads.keys)
        return keys + self._linked_budgets(keys), outside

    def _linked_budgets(self, keys: Sequence[str]) -> list[str]:
        """The budgeted tables, not among ``keys``, whose data files the input reads under
        other names (hard links elsewhere): it reads their data, so it is charged to them too.
        A table's budget is keyed by its name, so only its files' device and inode tell
        (:func:`~inftda_sql.core.names.key_identity`); a table that no longer exists is
        skipped."""
        files = self._reads.files
        if not files:
            return []
        mine = {key_identity(k) for k in keys}
        wanted = {key_identity(f) for f in files}
        found = []
        for budget in self.ledger.budgets().values():
            table = budget.input_table
            if key_identity(table) in mine:
                continue
            try:
                theirs = base_tables(self.spark.table(table)).files
            except AnalysisException:
                continue
            if any(key_identity(f) in wanted for f in theirs):
                found.append(table)
        return found

    def _check_domains_are_not_the_input(self) -> None:
        """A domain that reads what the input reads (a table, a file, the same rows in memory,
        an RDD, a JDBC table: through any view or DataFrame) would take the categories from
        the private data while the release is recorded as private: refused, as on DuckDB."""
        check_domain_reads(
            self._reads,
            [
                (self._domain_role(c), dom.description, self._domain_reads[c])
                for c, dom in enumerate(self._domains)
            ],
        )

    def _chain_source(
        self, c: int, chain: Sequence[str], role: str
    ) -> tuple[SparkSource, tuple[str, ...]]:
        """Chain ``c``'s domain read as the chain's columns (itself when it has them, else the
        domain columns its explicit mapping or a common prefix leads to, renamed), and the
        domain columns it reads, in the chain's order."""
        src, shared = self._domains[c], self._shared[c]
        what = (
            f"{role} ({src.description}{f', one domain for {shared} chains' if shared > 1 else ''})"
        )
        columns = match_columns(chain, src.df.columns, self._columns[c], role=what, shared=shared)
        read = tuple(source.lower() for source in columns.values())
        if all(source.lower() == name.lower() for name, source in columns.items()):
            return src, read
        read_as = ", ".join(f"{name}={source}" for name, source in columns.items())
        return SparkSource(
            src.df.select(*[src.df[quote(source)].alias(name) for name, source in columns.items()]),
            f"{src.description} read as {read_as}",
            src.key,
        ), read

    def _check_targets(self) -> None:
        """The output and its levels view must not be the input, a domain, a table or view
        either reads, or a name the library owns; an existing one needs ``overwrite``."""
        req = self.request
        named = [(self.input, self._reads, "the input")]
        named += [
            (d, self._domain_reads[c], f"the {self._domain_role(c)}")
            for c, d in enumerate(self._domains)
        ]
        check_targets(self.spark, named, (req.output, req.levels_view), overwrite=req.overwrite)

    def resolve(self) -> None:
        req, spec, inp = self.request, self.request.tree, self.input
        for col in spec.columns:
            inp.column(col, "hierarchy column")
            check_scalar_type(inp, col, "hierarchy column", InputDataError)
        if req.count is not None:
            self._count, self._count_is_integer = count_column(inp, req.count)
            if req.count.lower() in {c.lower() for c in spec.columns}:
                raise SpecError(
                    f"count column {req.count!r} is also a hierarchy column", param="count"
                )
        check_not_aggregated(  # from the schema only, before any noise
            [
                (f.name, f.dataType.simpleString())
                for f in inp.df.schema.fields
                if type_family(f.dataType) in ("integer", "fractional")
            ],
            [*spec.columns, *([req.privacy_unit] if req.privacy_unit else [])],
            count=req.count,
            microdata=req.microdata,
            description=f"the input {inp.description}",
        )
        seen: list[tuple[int, object]] = []  # (chain, what it reads from its domain)
        for c, chain in enumerate(spec.chains):
            role = self._domain_role(c)
            if req.domains is None:
                self._reads_as.append(c)
                self._domain_frames.append(
                    inp.df.select(*[quote(inp.names[x.lower()]) for x in chain])
                )
                self._domain_desc.append("FROM DATA (not private)")
                continue
            dom, read = self._chain_source(c, chain, role)
            same = (id(self._domains[c]), read, tuple(str(inp.types[x.lower()]) for x in chain))
            self._reads_as.append(next((d for d, key in seen if key == same), c))
            seen.append((c, same))
            for col in chain:
                dom.column(col, f"hierarchy column of the {role}", DomainError)
                check_scalar_type(dom, col, f"hierarchy column of the {role}", DomainError)
            check_domain_types(inp, dom, chain, role)
            self._domain_frames.append(dom.df.select(*[quote(dom.names[x.lower()]) for x in chain]))
            self._domain_desc.append(dom.description)

    def code_domains(self) -> list[ChainTree]:
        spec, inp = self.request.tree, self.input
        self._chains = []
        types = [[inp.types[col.lower()] for col in chain] for chain in spec.chains]
        frames = [f.toDF(*ch) for f, ch in zip(self._domain_frames, spec.chains, strict=True)]
        # every chain in one query; chains reading the same columns of one domain (origins and
        # destinations from one geography table) read and fetch them once
        first = sorted(set(self._reads_as))
        fetched = distinct_paths(
            [frames[c] for c in first], [spec.chains[c] for c in first], [types[c] for c in first]
        )
        found = [
            fetched[first.index(self._reads_as[c])].rename_columns([*chain, "__lost"])
            for c, chain in enumerate(spec.chains)
        ]
        self._start_worker_check([paths.num_rows for paths in found])
        for c, chain in enumerate(spec.chains):
            self._chains.append(
                build_chain(
                    self.spark,
                    c,
                    frames[c],
                    chain,
                    types[c],
                    self._domain_role(c),
                    spec.chains,
                    frames,
                    found=found[c],
                )
            )
        return [ch.tree for ch in self._chains]

    def scan(self) -> Scan:
        req = self.request
        self._check_workers_before_scan()  # before any private data is read
        warn_slow_settings(self.spark, self.input.df)
        found, table = scan(
            req.tree,
            self.input,
            self._chains,
            count=self._count,
            count_is_integer=self._count_is_integer,
            privacy_unit=req.privacy_unit,
            contribution=req.contribution,
            distinct=req.distinct,
            source=req.source,
            to_driver=self._fetch_cells(),
        )
        if table.leaf is not None:  # fetched by the scan's own job: Spark keeps nothing
            self._leaf_cells = table.leaf
            return found
        assert table.frame is not None  # kept in Spark
        self._cells, self._cached = table.frame, table.cached
        if self._on_driver > 0 and table.rows <= self._on_driver:  # one fetch serves every level
            self._leaf_cells = collect_cells(
                table.frame, req.tree, [ch.tree for ch in self._chains]
            )
        return found

    def _cells_fit_driver(self) -> bool:
        """Whether every leaf cell the PUBLIC domain allows (the product of its chains' leaves)
        fits on the driver: then every level runs there."""
        return self._fits_driver(math.prod(ch.tree.sizes[-1] for ch in self._chains))

    def _fits_driver(self, leaves: int) -> bool:
        """Whether ``leaves`` cells (PUBLIC: counted in the domain) fit
        ``spark.inftda.driverChildren``; 0 of them (nothing known yet) never does."""
        return 0 < leaves <= self._on_driver

    def _fetch_cells(self) -> bool:
        """Whether the scan fetches its cells to the driver in the job that makes them, instead
        of caching them in Spark: when they fit ``spark.inftda.driverChildren`` by the public
        domain, or else by the input's rows (a cell holds one row at least). Counting the rows
        is one job, which reads the footers of Parquet and ORC files, not their data; the
        count decides where the cells are kept, nothing else (the released table is the same
        either way). A level that then runs in Spark's tasks gets the cells from the driver
        (:attr:`cells`), so the input is not read again."""
        if self._cells_fit_driver():
            return True
        if self._on_driver <= 0:
            return False
        describe(self.spark, "scan: the input's rows (do its cells fit the driver?)")
        try:
            return self.input.df.count() <= self._on_driver
        finally:
            describe(self.spark, None)

    @property
    def cells(self) -> DataFrame:
        """The cells table in Spark: the scan's, or made from the cells it fetched."""
        if self._cells is None and self._leaf_cells is not None:
            self._cells = cells_frame(self.spark, self._leaf_cells, self.request.tree)
        if self._cells is None:
            raise SpecError("the input is not scanned yet: call scan() first")
        return self._cells

    def level_counts(self, level: int, strides: tuple[int, ...]) -> tuple[I64, I64]:
        if self._leaf_cells is not None:
            return self._leaf_cells.level(self.request.tree, level, strides)
        return level_counts(self.cells, self.request.tree, level, strides)

    def run_mechanism(self, mechanism: Mechanism, ctx: MechanismContext) -> SparkResult:
        if mechanism.topdown_step is None:
            return mechanism.run(ctx)  # a full-domain baseline: bounded by max_cells
        if mechanism.requires is not None:
            mechanism.requires(ctx.accounting.budget)
        return run_topdown(
            self.spark,
            ctx.spec,
            ctx.chains,
            lambda: self.cells,
            ctx.tree_sigmas,
            ctx.total,
            source=ctx.source,
            step=mechanism.topdown_step,
            scratch=self.scratch,
            progress=ctx.progress,
            true_level=ctx.true_level,
            on_driver=self._on_driver,
            threads=ctx.threads,
        )

    def released(self, result: SparkResult) -> tuple[tuple[LevelStats, ...], int]:
        if isinstance(result, SparkLeaves):
            return result.levels, result.total
        return result.levels, int(result.counts.sum())

    def _leaves(self, result: SparkResult) -> DataFrame:
        if isinstance(result, SparkLeaves):
            return self.spark.read.parquet(result.path)
        k = len(self.request.tree.chains)
        table = pa.table(
            {
                **{f"c{j}": pa.array(np.asarray(result.codes[j], np.int64)) for j in range(k)},
                "v": pa.array(np.asarray(result.counts, np.int64)),
            }
        )
        return from_driver(self.spark, table)

    def _decoded(self, result: TopDownResult) -> DataFrame:
        """A driver-side result as the released table: a leaf code is its row of the chain's
        coded paths (typed as the input's columns), so ``take`` decodes it."""
        spec = self.request.tree
        columns: dict[str, pa.Array | pa.ChunkedArray] = {}
        for c, (chain, coded) in enumerate(zip(spec.chains, self._chains, strict=True)):
            assert coded.paths is not None
            leaf = pa.array(np.asarray(result.codes[c], np.int64))
            decoded = coded.paths.select(list(range(len(chain)))).take(leaf)
            columns.update(zip(chain, decoded.columns, strict=True))
        table = pa.table(
            [
                *(columns[col] for col in spec.columns),
                pa.array(np.asarray(result.counts, np.int64)),
            ],
            names=[*spec.columns, "count"],
        )
        return from_driver(self.spark, table)

    def recheck_budget(self, record: ReleaseRecord, guarantee: Guarantee) -> ReleaseRecord:
        """Check the budget again just before writing (this release's reservation aside); the
        record charged to the input's base tables, with the note of an override."""
        budget, override = self._request.budget, self._request.budget_override
        keys, outside = self._charge()
        note = self.ledger.check_budget(
            keys, outside, budget, guarantee, override=override, besides=self._reservation
        )
        if note and note not in record.non_private:
            record = dataclasses.replace(record, non_private=[*record.non_private, note])
        return with_base_tables(record, keys)

    def append(
        self, record: ReleaseRecord, made: Sequence[str], known: Mapping[str, str] | None = None
    ) -> ReleaseRecord:
        """Append the ledger row of what was written (``made``: the output and its view, whose
        fingerprint it records; ``known``: digests taken as they were written, not read back);
        the session's ledger views follow it."""
        taken = fingerprint.take(self.spark, made, known)
        record = dataclasses.replace(record, fingerprint=taken)
        written = self.ledger.append_release(record, self._reservation)
        register_views(self.spark, self.ledger)
        return written

    def write(self, result: SparkResult, record: ReleaseRecord) -> ReleaseRecord:
        req = self.request
        record = self.recheck_budget(record, req.guarantee)
        if isinstance(result, TopDownResult) and all(ch.paths is not None for ch in self._chains):
            released = self._decoded(result)  # decoded on the driver: no join, no Spark job
        else:
            released = decode(self._leaves(result), req.tree, self._chains)
        return write_release(
            self.spark,
            released,
            req.tree,
            output=sql_name(self.output),
            view=sql_name(req.levels_view) if req.levels_view else None,
            overwrite=req.overwrite,
            record=record,
            append=self.append,
        )

    def close(self) -> None:
        self._background.shutdown(wait=True)  # a check started early ends before the release
        if self._ledger is not None:
            self._ledger.withdraw(self._reservation)  # recorded (the row names it) or not
        if self._cached is not None:
            with contextlib.suppress(Exception):
                self._cached.unpersist()
        with contextlib.suppress(Exception):
            remove_folder(self.spark, self.scratch)
