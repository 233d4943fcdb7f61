"""One release on a SparkSession: the engine stages strung together."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Sequence
from types import TracebackType

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from ..._errors import Arg, DomainError, InputDataError, OutputExistsError, SpecError
from ..._request import ReleaseRequest
from ...core.arrays import I64
from ...core.domains import match_columns, unwrap
from ...core.names import split_name
from ...core.tree import ChainTree, LevelStats, TopDownResult
from ...mechanisms import Mechanism, MechanismContext
from ..base import Scan
from ..checks import check_not_aggregated
from ..duckdb.ledger import is_library_name
from ..records import ReleaseRecord
from .catalog import (
    SparkSource,
    check_domain_types,
    check_scalar_type,
    count_column,
    full_name,
    quote,
    resolve_source,
    type_family,
)
from .domain import CodedChain, build_chain
from .ledger import BUDGET_TABLE, LEDGER_TABLE, check_budget, namespace_of
from .scan import level_counts, scan
from .topdown import SparkLeaves, remove_folder, run_topdown, scratch_folder
from .write import decode, with_base_tables, write_release

__all__ = ["SparkEngine", "SparkResult", "sql_name"]

#: what the mechanism stage gives on Spark: distributed leaves, or a driver-side result
SparkResult = SparkLeaves | TopDownResult


def sql_name(name: str) -> str:
    """A (possibly qualified) table name as Spark SQL text, every part quoted."""
    return ".".join(quote(p) for p in split_name(name))


class SparkEngine:
    """One release on a SparkSession (see :class:`inftda_sql.engines.Engine`).

    ``scratch`` is a folder every executor can write (HDFS, an object store, a shared disk; the
    warehouse by default) for the survivors of every level; it is removed when the release ends.
    Use the engine as a context manager.
    """

    def __init__(
        self, spark: SparkSession, request: ReleaseRequest, *, scratch: str | None = None
    ) -> None:
        self.spark = spark
        self.request = request
        self.scratch = scratch_folder(spark, scratch)
        self._input: SparkSource | None = None
        self._domains: list[SparkSource] = []
        self._columns: list[dict[str, str]] = []  # per chain: the explicit column mapping
        self._shared: list[int] = []  # per chain: how many chains read its domain
        self._domain_frames: list[DataFrame] = []
        self._domain_desc: list[str] = []
        self._chains: list[CodedChain] = []
        self._cells: DataFrame | None = None
        self._count: str | None = None
        self._count_is_integer = True
        self._namespace = ""

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
        return f"domain of chain {chain + 1}" if len(self.request.tree.chains) > 1 else "domain"

    def prepare(self) -> str | None:
        req = self.request
        self._namespace = namespace_of(self.spark, self.output)
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
        self._check_domains_are_not_the_input()
        self._check_targets()
        inp = self.input
        return check_budget(
            self.spark,
            self._namespace,
            [inp.key] if inp.key else [],
            None if inp.key else "a DataFrame",
            req.budget,
            req.guarantee,
            override=req.budget_override,
        )

    def _check_domains_are_not_the_input(self) -> None:
        """A domain that is the input table would take the categories from the private data
        while the release is recorded as private: refused (as on DuckDB)."""
        key = self.input.key
        for c, dom in enumerate(self._domains):
            if key is not None and dom.key is not None and dom.key.lower() == key.lower():
                raise DomainError(
                    f"the {self._domain_role(c)} ({dom.description}) is the input table {key}: "
                    "its categories would come from the private data. Pass the PUBLIC "
                    "geography, or ",
                    Arg("domain_from_data", True),
                    " (recorded as not private)",
                    param="domain",
                )

    def _chain_source(self, c: int, chain: Sequence[str], role: str) -> SparkSource:
        """Chain ``c``'s domain read as the chain's columns: itself when it has them, else the
        domain columns its explicit mapping or a common prefix leads to, renamed."""
        src, shared = self._domains[c], self._shared[c]
        what = (
            f"{role} ({src.description}{f', one domain for {shared} chains' if shared > 1 else ''})"
        )
        columns = match_columns(chain, src.df.columns, self._columns[c], role=what, shared=shared)
        if all(source.lower() == name.lower() for name, source in columns.items()):
            return src
        read_as = ", ".join(f"{name}={source}" for name, source in columns.items())
        return SparkSource(
            src.df.select(*[src.df[quote(source)].alias(name) for name, source in columns.items()]),
            f"{src.description} read as {read_as}",
            src.key,
        )

    def _check_targets(self) -> None:
        req = self.request
        named = [(self.input, "the input")]
        named += [(d, f"the {self._domain_role(c)}") for c, d in enumerate(self._domains)]
        for target in (req.output, req.levels_view):
            if target is None:
                continue
            if is_library_name(split_name(target)[-1]):
                raise SpecError(
                    f"{target!r} is a name inftda_sql keeps for its own bookkeeping "
                    f"({LEDGER_TABLE}, {BUDGET_TABLE} and names starting with __inftda); choose "
                    "another ",
                    Arg("output"),
                    param="output",
                )
            key = full_name(self.spark, target)
            if key is None:
                continue
            for src, role in named:
                if src.key is not None and src.key.lower() == key.lower():
                    raise SpecError(
                        f"{target!r} is {role} ({key}); writing the release there would "
                        "destroy what it reads: choose another ",
                        Arg("output"),
                        param="output",
                    )
            if not req.overwrite:
                raise OutputExistsError(
                    f"{target!r} already exists; pass ",
                    Arg("overwrite", True),
                    " to replace it or choose another ",
                    Arg("output"),
                    " name",
                    param="output",
                )

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
        for c, chain in enumerate(spec.chains):
            role = self._domain_role(c)
            if req.domains is None:
                self._domain_frames.append(
                    inp.df.select(*[quote(inp.names[x.lower()]) for x in chain])
                )
                self._domain_desc.append("FROM DATA (not private)")
                continue
            dom = self._chain_source(c, chain, role)
            for col in chain:
                dom.column(col, f"hierarchy column of the {role}", DomainError)
                check_scalar_type(dom, col, f"hierarchy column of the {role}", DomainError)
            check_domain_types(inp, dom, chain, role)
            self._domain_frames.append(dom.df.select(*[quote(dom.names[x.lower()]) for x in chain]))
            self._domain_desc.append(dom.description)

    def code_domains(self) -> list[ChainTree]:
        spec, inp = self.request.tree, self.input
        self._chains = []
        for c, chain in enumerate(spec.chains):
            types = [inp.types[col.lower()] for col in chain]
            frame = self._domain_frames[c].toDF(*chain)
            self._chains.append(
                build_chain(
                    self.spark,
                    c,
                    frame,
                    chain,
                    types,
                    self._domain_role(c),
                    spec.chains,
                    [f.toDF(*ch) for f, ch in zip(self._domain_frames, spec.chains, strict=True)],
                )
            )
        return [ch.tree for ch in self._chains]

    def scan(self) -> Scan:
        req = self.request
        found, self._cells = scan(
            req.tree,
            self.input,
            self._chains,
            count=self._count,
            count_is_integer=self._count_is_integer,
            privacy_unit=req.privacy_unit,
            contribution=req.contribution,
            distinct=req.distinct,
            source=req.source,
        )
        return found

    @property
    def cells(self) -> DataFrame:
        if self._cells is None:
            raise SpecError("the input is not scanned yet: call scan() first")
        return self._cells

    def level_counts(self, level: int, strides: tuple[int, ...]) -> tuple[I64, I64]:
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
            self.cells,
            ctx.tree_sigmas,
            ctx.total,
            source=ctx.source,
            step=mechanism.topdown_step,
            scratch=self.scratch,
            progress=ctx.progress,
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
        schema = ", ".join([*(f"c{j} long" for j in range(k)), "v long"])
        return self.spark.createDataFrame(table, schema=schema)

    def write(self, result: SparkResult, record: ReleaseRecord) -> ReleaseRecord:
        req, inp = self.request, self.input
        note = check_budget(
            self.spark,
            self._namespace,
            [inp.key] if inp.key else [],
            None if inp.key else "a DataFrame",
            req.budget,
            req.guarantee,
            override=req.budget_override,
        )
        if note and note not in record.non_private:
            record = dataclasses.replace(record, non_private=[*record.non_private, note])
        released = decode(self._leaves(result), req.tree, self._chains)
        return write_release(
            self.spark,
            released,
            req.tree,
            output=sql_name(self.output),
            view=sql_name(req.levels_view) if req.levels_view else None,
            overwrite=req.overwrite,
            namespace=self._namespace,
            record=with_base_tables(record, [inp.key] if inp.key else []),
        )

    def close(self) -> None:
        if self._cells is not None:
            with contextlib.suppress(Exception):
                self._cells.unpersist()
        with contextlib.suppress(Exception):
            remove_folder(self.spark, self.scratch)
