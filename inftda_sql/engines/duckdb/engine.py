"""One release on a DuckDB connection: the engine stages strung together."""

from __future__ import annotations

import contextlib
import uuid
from types import TracebackType

import duckdb

from ..._errors import Arg, DomainError, OutputExistsError, SpecError
from ..._request import ReleaseRequest
from ...core.arrays import I64
from ...core.tree import ChainTree, TopDownResult
from ..base import Scan
from . import compile as _compile
from .catalog import (
    Source,
    check_domain_types,
    count_column,
    drop_temp,
    join_type,
    object_kind,
    resolve_source,
)
from .domain import build_chain
from .ledger import ReleaseRecord, check_budget
from .scan import level_counts, scan
from .sql import run
from .write import begin_transaction, write_release

__all__ = ["DuckDBEngine"]


class DuckDBEngine:
    """One release on a DuckDB connection (see :class:`inftda_sql.engines.Engine`).

    Use it as a context manager: leaving it drops every temporary object the release made.
    """

    def __init__(self, con: duckdb.DuckDBPyConnection, request: ReleaseRequest) -> None:
        self.con = con
        self.request = request
        self.names = _compile.TempNames(f"__inftda_{uuid.uuid4().hex[:12]}_")
        self._sources: list[Source] = []
        self._input: Source | None = None
        self._count: str | None = None
        self._count_is_integer = True
        self._domain_sql: list[str] = []
        self._domain_desc: list[str] = []

    def __enter__(self) -> DuckDBEngine:
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
    def input(self) -> Source:
        if self._input is None:
            raise SpecError("the input is not resolved yet: call resolve() first")
        return self._input

    def prepare(self) -> str | None:
        req = self.request
        for name in (req.output, req.levels_view):
            if name and object_kind(self.con, name) is not None and not req.overwrite:
                raise OutputExistsError(
                    f"{name!r} already exists; pass ",
                    Arg("overwrite", True),
                    " to replace it or choose another ",
                    Arg("output"),
                    " name",
                    param="output",
                )
        # fail fast (before any work) if the caller left a transaction open
        begin_transaction(self.con)
        run(self.con, "ROLLBACK")
        if req.input_name is None:
            return None
        return check_budget(
            self.con,
            req.input_name,
            req.budget,
            req.mechanism.guarantee,
            override=req.budget_override,
        )

    def resolve(self) -> None:
        req, spec = self.request, self.request.spec
        inp = resolve_source(self.con, req.table, role="input table", temp_name=self.names.input)
        self._sources.append(inp)
        self._input = inp
        for col in spec.columns:
            inp.column(col, "hierarchy column")
        if req.count is not None:
            self._count, self._count_is_integer = count_column(inp, req.count)
            if req.count.lower() in {c.lower() for c in spec.columns}:
                raise SpecError(
                    f"count column {req.count!r} is also a hierarchy column", param="count"
                )
        for c, chain in enumerate(spec.chains):
            role = f"domain of chain {c + 1}" if len(spec.chains) > 1 else "domain"
            if req.domains is None:
                self._domain_sql.append(_compile.distinct_paths(chain, inp.sql))
                self._domain_desc.append("FROM DATA (not private)")
                continue
            dom = resolve_source(
                self.con,
                req.domains[c],
                role=role,
                temp_name=self.names.domain(c),
                error=DomainError,
            )
            self._sources.append(dom)
            for col in chain:
                dom.column(col, f"hierarchy column of the {role}", DomainError)
            check_domain_types(inp, dom, chain, role)
            self._domain_sql.append(dom.sql)
            self._domain_desc.append(dom.description)

    def code_domains(self) -> list[ChainTree]:
        spec, inp = self.request.spec, self.input
        trees = []
        for c, chain in enumerate(spec.chains):
            role = f"domain of chain {c + 1}" if len(spec.chains) > 1 else "domain"
            types = [join_type(inp.columns[col.lower()]) for col in chain]
            trees.append(
                build_chain(self.con, self.names, c, chain, self._domain_sql[c], types, role)
            )
        return trees

    def scan(self) -> Scan:
        req = self.request
        return scan(
            self.con,
            self.names,
            req.spec,
            self.input,
            count=req.count,
            count_is_integer=self._count_is_integer,
            privacy_unit=req.privacy_unit,
            contribution=req.contribution,
            distinct=req.distinct,
            source=req.source,
        )

    def level_counts(self, level: int, strides: tuple[int, ...]) -> tuple[I64, I64]:
        return level_counts(self.con, self.names, self.request.spec, level, strides)

    def write(self, result: TopDownResult, record: ReleaseRecord) -> int:
        req = self.request
        return write_release(
            self.con,
            self.names,
            req.spec,
            result,
            output=req.output,
            view=req.levels_view,
            overwrite=req.overwrite,
            record=record,
        )

    def close(self) -> None:
        for src in self._sources:
            drop_temp(self.con, src)
        for table in (self.names.leaf, self.names.keys):
            with contextlib.suppress(duckdb.Error):
                run(self.con, _compile.drop_temp_table(table))
        n_chains = len(self.request.spec.chains)
        for registered in [self.names.released, *(self.names.codes(c) for c in range(n_chains))]:
            with contextlib.suppress(duckdb.Error):
                self.con.unregister(registered)
