"""One release on a DuckDB connection: the engine stages strung together."""

from __future__ import annotations

import contextlib
import functools
import uuid
from collections.abc import Sequence
from types import TracebackType

import duckdb
import numpy as np
import pyarrow as pa

from ..._coc_request import CountOfCountsRequest
from ..._errors import DomainError, InputDataError, InternalError, SpecError
from ..._interrupts import critical
from ..._request import ReleaseRequest
from ...core.arrays import I64
from ...core.cells import LeafCells
from ...core.coc import CocLevel, Histograms
from ...core.domains import unwrap
from ...core.features import Lattice
from ...core.measurements import Collector
from ...core.sorting import lex_order
from ...core.tree import ChainTree, LevelStats, TopDownResult
from ...mechanisms import Mechanism, MechanismContext
from ...mechanisms.base import FeatureResult
from ..base import Scan
from ..checks import check_not_aggregated
from . import cache as _cache
from . import compile as _compile
from . import features as _features
from .catalog import (
    Source,
    Target,
    check_domain_types,
    check_domains_not_input,
    check_ledger_writable,
    check_scalar_type,
    count_column,
    drop_temp,
    file_spelling,
    join_type,
    remember,
    resolve_source,
    resolve_target,
    split_name,
    type_family,
)
from .count_of_counts import CocEngine
from .domain import CodedChain, build_chain, chain_source
from .ledger import (
    LIBRARY_TABLES,
    ReleaseRecord,
    check_budget,
)
from .scan import scan
from .sql import arrow, run
from .targets import check_targets
from .write import begin_transaction, write_release

__all__ = ["DuckDBEngine", "check_targets"]


class DuckDBEngine:
    """One release on a DuckDB connection (see :class:`inftda_sql.engines.Engine`).

    Use it as a context manager: leaving it drops every temporary object the release made.
    """

    def __init__(
        self, con: duckdb.DuckDBPyConnection, request: ReleaseRequest | CountOfCountsRequest
    ) -> None:
        self.con = con
        self._request = request
        self._coc: CocEngine | None = None  # the stages of a count-of-counts release
        self.names = _compile.TempNames(f"__inftda_{uuid.uuid4().hex[:12]}_")
        self._sources: list[Source] = []
        self._input: Source | None = None
        self._domains: list[Source] = []
        self._columns: list[dict[str, str]] = []  # per chain: the explicit column mapping
        self._shared: list[int] = []  # per chain: how many chains read its domain
        self._output: Target | None = None
        self._view: Target | None = None
        self._measurements: Target | None = None  # <output>_measurements (measurements=True)
        self._measured: Collector | None = None  # what the mechanism drew (measurements=True)
        self._count: str | None = None
        self._count_is_integer = True
        self._domain_sql: list[str] = []
        self._domain_desc: list[str] = []
        self._domain_types: list[list[str]] = []
        self._coded: list[CodedChain] = []
        self._cells: LeafCells | None = None
        self._check_key: str | None = None  # an ancestor check to remember once released
        self._write_settings: tuple[bool, str | None] | None = None  # read by prepare()

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
        """The input for the ledger: a file's resolved path (or glob), else its name as given."""
        if self._input is not None and self._input.resolved.kind.endswith(" file"):
            return self._input.resolved.spelling  # a file named by its path (or glob)
        return self._request.input_description

    @property
    def input(self) -> Source:
        if self._input is None:
            raise SpecError("the input is not resolved yet: call prepare() first")
        return self._input

    def prepare(self) -> str | None:
        """Resolve every name in the catalog, refuse outputs that would destroy what the release
        reads, and check the budget of every base table the input reads: before any work.

        The catalog is read once for all of it (:func:`.catalog.remember`), and again only
        after a statement that may have changed it; every name is resolved as before."""
        req = self.request
        # fail fast (before any work) if the caller left a transaction open
        with critical():  # Ctrl-C between the two would leave the probe's transaction open
            begin_transaction(self.con)
            run(self.con, "ROLLBACK")
        given = [req.output, req.levels_view, req.measurements, req.table]
        given += [unwrap(d)[0] for d in req.domains or ()]
        names = [*_last_parts(given), *LIBRARY_TABLES]
        with remember(self.con, names, explain=True) as memo:
            note = self._prepare()
            self._write_settings = memo.write_settings()  # the write's, from the same read
            return note

    def _prepare(self) -> str | None:
        req = self.request
        if req.output is not None:
            self._output = resolve_target(self.con, req.output)
        else:  # returned in memory: the ledger row is still written, to this database
            check_ledger_writable(self.con)
        if req.levels_view:
            self._view = resolve_target(self.con, req.levels_view)
        if req.measurements:
            self._measurements = resolve_target(self.con, req.measurements)
        inp = resolve_source(
            self.con, req.table, role="input table", temp_name=self.names.input, param="table"
        )
        self._sources.append(inp)
        self._input = inp
        resolved: dict[int, Source] = {}  # one geography serving several chains is read once
        for c, given in enumerate(req.domains or ()):
            source, columns = unwrap(given)
            dom = resolved.get(id(source))
            if dom is None:
                dom = resolve_source(
                    self.con,
                    source,
                    role=self._domain_role(c),
                    temp_name=self.names.domain(c),
                    error=DomainError,
                    param="domain",
                )
                resolved[id(source)] = dom
                self._sources.append(dom)
            self._domains.append(dom)
            self._columns.append(dict(columns))
        self._shared = [sum(d is dom for d in self._domains) for dom in self._domains]
        self._check_domains_are_not_the_input()
        self._check_targets()
        return check_budget(
            self.con,
            inp.resolved,
            req.budget,
            req.guarantee,
            override=req.budget_override,
        )

    def _check_domains_are_not_the_input(self) -> None:
        """A domain that reads what the input reads (the same table or file) would take the
        categories from the private data while the release is recorded as private: refused."""
        check_domains_not_input(
            self.input.resolved,
            [
                (self._domain_role(c), dom.description, dom.resolved)
                for c, dom in enumerate(self._domains)
            ],
        )

    def _domain_role(self, index: int) -> str:
        req = self.request
        if req.kind == "features":  # a feature release: the tables of a product
            return f"domain table {index + 1}" if len(req.domains or []) > 1 else "domain"
        return f"domain of chain {index + 1}" if len(req.tree.chains) > 1 else "domain"

    def _check_targets(self) -> None:
        """The output and its levels view must not be the input, a table it reads, a domain
        table (or a view either reads), or a name the library owns."""
        named = [(self.input, "the input")]
        named += [(d, f"the {self._domain_role(c)}") for c, d in enumerate(self._domains)]
        check_targets(
            self.con,
            named,
            (self._output, self._view, self._measurements),
            overwrite=self.request.overwrite,
        )

    def resolve(self) -> None:
        req, spec = self.request, self.request.tree
        inp = self.input
        # the leaf column of every chain is required; ancestor columns are optional (a star
        # schema: the domain gives every leaf its ancestors), but every column when the domain
        # comes from the data
        required = spec.columns if req.domains is None else spec.leaf_columns
        for col in spec.columns:
            if col in required or col.lower() in inp.columns:
                inp.column(col, "hierarchy column")
                check_scalar_type(inp, col, "hierarchy column", InputDataError)
        if req.count is not None:
            self._count, self._count_is_integer = count_column(inp, req.count)
            if req.count.lower() in {c.lower() for c in spec.columns}:
                raise SpecError(
                    f"count column {req.count!r} is also a hierarchy column", param="count"
                )
        self._check_not_aggregated(spec.columns)
        for c, chain in enumerate(spec.chains):
            role = self._domain_role(c)
            if req.domains is None:
                self._domain_sql.append(_compile.distinct_paths(chain, inp.sql))
                self._domain_desc.append("FROM DATA (not private)")
                self._domain_types.append([join_type(inp.columns[col.lower()]) for col in chain])
                continue
            dom = chain_source(
                self._domains[c], chain, self._columns[c], role=role, shared=self._shared[c]
            )
            for col in chain:
                dom.column(col, f"hierarchy column of the {role}", DomainError)
                check_scalar_type(dom, col, f"hierarchy column of the {role}", DomainError)
            check_domain_types(inp, dom, chain, role)
            self._domain_sql.append(dom.sql)
            self._domain_desc.append(dom.description)
            # values are read as the input's types; a column the input lacks as the domain's
            self._domain_types.append(
                [
                    join_type(inp.columns.get(col.lower()) or dom.columns[col.lower()])
                    for col in chain
                ]
            )

    def _check_not_aggregated(self, used: Sequence[str]) -> None:
        """Refuse an input that looks pre-aggregated when no count column was given: from its
        schema only, before any noise (:func:`..checks.check_not_aggregated`)."""
        req, inp = self.request, self.input
        check_not_aggregated(
            [
                (inp.names[k], t)
                for k, t in inp.columns.items()
                if type_family(t) in ("integer", "fractional")
            ],
            [*used, *([req.privacy_unit] if req.privacy_unit else [])],
            count=req.count,
            microdata=req.microdata,
            description=f"the input {inp.description}",
        )

    def code_domains(self) -> list[ChainTree]:
        spec, req = self.request.tree, self.request
        self._coded = []
        for c, chain in enumerate(spec.chains):
            source = None if req.domains is None else self._domain_desc[c]
            coded = build_chain(
                self.con,
                self.names,
                c,
                chain,
                self._domain_sql[c],
                self._domain_types[c],
                self._domain_role(c),
                spec.chains,
                source=source,
                lazy=True,  # the scan registers the code tables when it reads them
                domains=list(zip(self._domain_sql, self._domain_types, strict=True)),
                definitions=(
                    tuple
                    if source is None
                    else functools.partial(
                        _cache.view_definitions, self.con, self._domains[c].resolved
                    )
                ),
            )
            self._coded.append(coded)
        return [coded.tree for coded in self._coded]

    def _ancestors_to_check(self) -> list[str]:
        """The input's ancestor columns to check against the domain in this release's scan
        (none when the domain comes from the data: it agrees by construction)."""
        req, spec, inp = self.request, self.request.tree, self.input
        present = [col for chain in spec.chains for col in chain[:-1] if col.lower() in inp.columns]
        if not present or req.check_ancestors == "off" or req.domains is None:
            return []
        if req.check_ancestors == "full":
            return present
        version = _cache.input_version(self.con, inp.sql, inp.resolved)
        if version is None:  # no cheap fingerprint: checked every time
            return present
        key = _cache.check_key(
            version, spec.chains, present, [coded.key.key for coded in self._coded]
        )
        if _cache.check_passed(self.con, key):
            return []
        self._check_key = key
        return present

    def released_table(self, result: TopDownResult) -> pa.Table:
        """The released leaf cells as an Arrow table: the hierarchy columns (named and typed as
        the written table's) and ``count``, in the written table's order (by the hierarchy
        columns). Decoded from the code tables in memory: a leaf's code is its row there."""
        spec = self.request.tree
        if len(self._coded) != len(spec.chains):
            raise SpecError("the domain is not coded yet: call code_domains() first")
        codes = [np.asarray(c, dtype=np.int64) for c in result.codes]
        order = lex_order(codes, [coded.paths.num_rows for coded in self._coded])
        columns: dict[str, pa.ChunkedArray | pa.Array | I64] = {}
        for c, chain in enumerate(spec.chains):
            leaf = codes[c] if order is None else codes[c][order]
            decoded = self._coded[c].paths.select(list(range(len(chain)))).take(leaf)
            for name, column in zip(chain, decoded.columns, strict=True):
                columns[name] = column
        counts = np.asarray(result.counts, dtype=np.int64)
        columns["count"] = counts if order is None else counts[order]
        return pa.table(columns)

    def scan(self) -> Scan:
        req = self.request
        found = scan(
            self.con,
            self.names,
            req.tree,
            self.input,
            count=req.count,
            count_is_integer=self._count_is_integer,
            privacy_unit=req.privacy_unit,
            contribution=req.contribution,
            distinct=req.distinct,
            source=req.source,
            check=self._ancestors_to_check(),
            codes=[coded.table_sql for coded in self._coded],
            leaf_index=[coded.leaf_index for coded in self._coded],
            register_codes=self._register_codes,
        )
        self._cells = LeafCells(
            found.codes, found.counts, tuple(coded.tree for coded in self._coded)
        )
        return found.found

    def _register_codes(self) -> None:
        """Register every chain's code table, once (the scan calls it before SQL reads them)."""
        for coded in self._coded:
            coded.register()

    def level_counts(self, level: int, strides: tuple[int, ...]) -> tuple[I64, I64]:
        if self._cells is None:
            raise SpecError("the input is not scanned yet: call scan() first")
        return self._cells.level(self.request.tree, level, strides)

    def run_mechanism(self, mechanism: Mechanism, ctx: MechanismContext) -> TopDownResult:
        if isinstance(ctx.measure, Collector):  # written with the release (measurements=True)
            self._measured = ctx.measure
        return mechanism.run(ctx)

    def released(self, result: TopDownResult) -> tuple[tuple[LevelStats, ...], int]:
        return result.levels, int(result.counts.sum())

    def write(self, result: TopDownResult, record: ReleaseRecord) -> ReleaseRecord:
        """Write the released table (unless the release is returned in memory only) and the
        ledger row, atomically."""
        req = self.request
        if self._output is None and req.output is not None:
            raise SpecError("the output is not resolved yet: call prepare() first")
        written = write_release(
            self.con,
            self.names,
            req.tree,
            result,
            output=self._output,
            view=self._view,
            overwrite=req.overwrite,
            record=record,
            source=self.input.resolved,
            budget=req.budget,
            guarantee=req.guarantee,
            budget_override=req.budget_override,
            paths=[coded.paths for coded in self._coded],
            settings=self._write_settings,
            measured=None
            if self._measured is None or self._measurements is None
            else (self._measurements, self._measured, [coded.tree for coded in self._coded]),
        )
        # after the release committed: what the next release can skip (best effort, in a
        # transaction of its own that Ctrl-C waits for: cut, it would stay open)
        with critical():
            _cache.remember(
                self.con,
                [
                    (coded.key, self.names.codes(c), coded.tree)
                    for c, coded in enumerate(self._coded)
                    if coded.store
                ],
                self._check_key,
            )
        return written

    # --- feature releases (CBDP) ---------------------------------------------------------------

    def resolve_features(self) -> None:
        """Check the input holds the leaf's columns (and the count column); with the domain
        taken from the data, make it the input's distinct cells (NOT private)."""
        req, spec = self.request, self.request.features
        inp = self.input
        for col in _features.input_leaf_columns(spec, inp).values():
            check_scalar_type(inp, col, "leaf column", InputDataError)
        if req.count is not None:
            self._count, self._count_is_integer = count_column(inp, req.count)
            if req.count.lower() in {c.lower() for c in spec.leaf.columns}:
                raise SpecError(f"count column {req.count!r} is also a leaf column", param="count")
        self._check_not_aggregated(spec.columns)
        if req.domains is None:
            for col in spec.columns:
                inp.column(col, "feature column (the domain is taken from the data)")
            self._domains = [
                Source(
                    _compile.distinct_paths(spec.columns, inp.sql),
                    "the input's distinct cells (FROM DATA, not private)",
                    inp.columns,
                    inp.names,
                    inp.resolved,
                )
            ]
            self._domain_desc.append("FROM DATA (not private)")
            return
        for dom in self._domains:
            self._domain_desc.append(dom.description)

    def code_lattice(self) -> Lattice:
        """The features coded on the public domain (nothing private is read)."""
        return _features.code_domain(
            self.con, self.names, self.request.features, self.input, self._domains
        )

    def feature_counts(self, lattice: Lattice) -> tuple[Scan, list[I64]]:
        """The one GROUPING SETS scan of the private input: every query's true counts."""
        req = self.request
        return _features.scan(
            self.con,
            self.names,
            lattice,
            self.input,
            count=self._count,
            count_is_integer=self._count_is_integer,
            privacy_unit=req.privacy_unit,
            contribution=req.contribution,
            distinct=req.distinct,
            source=req.source,
        )

    def write_features(
        self, lattice: Lattice, result: FeatureResult, record: ReleaseRecord
    ) -> ReleaseRecord:
        """Check the budget again, write the released leaves, the features view and the ledger
        row atomically; return the ledger row as written."""
        req = self.request
        if self._output is None:
            raise SpecError("the output is not resolved yet: call prepare() first")
        return _features.write(
            self.con,
            self.names,
            lattice,
            result.leaves,
            result.counts,
            output=self._output,
            view=self._view,
            overwrite=req.overwrite,
            record=record,
            source=self.input.resolved,
            budget=req.budget,
            guarantee=req.guarantee,
            budget_override=req.budget_override,
        )

    def released_features(self, lattice: Lattice) -> pa.Table:
        """The released leaf table of a feature release as written (after :meth:`write_features`),
        for ``return_as=``."""
        if self._output is None:
            raise SpecError("the output is not resolved yet: call prepare() first")
        return arrow(
            self.con, _compile.feature_read_back(self.request.features, self._output.ref.sql)
        )

    # --- count-of-counts releases (:mod:`.count_of_counts`) -------------------------------------

    def _counts(self) -> CocEngine:
        if self._coc is None:
            if not isinstance(self._request, CountOfCountsRequest):
                raise InternalError("a count-of-counts stage ran on another kind of release")
            self._coc = CocEngine(self.con, self._request)
        return self._coc

    @property
    def groups_description(self) -> str:
        return self._counts().groups_description

    def prepare_count_of_counts(self) -> str | None:
        """Resolve every name, refuse outputs that would destroy what the release reads, and
        check the budget of every base table the input reads: before any work."""
        coc = self._counts()
        coc.prepare()
        return coc.check_budget(coc.request.budget, override=coc.request.budget_override)

    def resolve_groups(self) -> None:
        self._counts().resolve()

    def code_groups(self) -> tuple[ChainTree, I64]:
        return self._counts().domain()

    def coc_counts(self, max_size: int | None) -> tuple[list[CocLevel], int]:
        return self._counts().scan(max_size=max_size)

    def write_count_of_counts(self, leaves: Histograms, record: ReleaseRecord) -> ReleaseRecord:
        coc = self._counts()
        req = coc.request
        return coc.write(leaves, record, budget=req.budget, override=req.budget_override)

    def close(self) -> None:
        """Drop every temporary object of the release. Ctrl-C waits for it (a half-done cleanup
        would leave objects behind, and DuckDB would report the interrupt as an error that the
        cleanup ignores)."""
        with critical():
            if self._coc is not None:
                self._coc.close()
            self._drop_temporaries()

    def _drop_temporaries(self) -> None:
        for src in self._sources:
            drop_temp(self.con, src)
        with contextlib.suppress(duckdb.Error):
            run(self.con, _compile.drop_temp_table(self.names.leaf))
        # what may be registered: a code table per chain (resolved before it is coded), a table
        # per part of a product domain (features); unregistering another name does nothing
        for registered in [
            self.names.released,
            *(self.names.codes(c) for c in range(len(self._domain_sql))),
            *(self.names.part(t) for t in range(len(self._domains))),
        ]:
            with contextlib.suppress(duckdb.Error):
                self.con.unregister(registered)


def _last_parts(given: Sequence[object]) -> list[str]:
    """The table names among ``given`` (the last part of each name; files, frames and names
    that do not parse are left to the resolution, which explains them)."""
    out = []
    for name in given:
        if isinstance(name, str) and file_spelling(name) is None:
            with contextlib.suppress(ValueError):
                out.append(split_name(name)[-1])
    return out
