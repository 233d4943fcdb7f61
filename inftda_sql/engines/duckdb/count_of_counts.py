"""A count-of-counts release on DuckDB: the public groups table, the two aggregations, the write.

The stages, in order, each run before any noise:

* :meth:`CocEngine.prepare`: every name resolved in the catalog (the input, the PUBLIC groups
  table, the outputs), no transaction open, the outputs neither what the release reads nor
  existing without ``overwrite``; then :meth:`CocEngine.check_budget` for every base table the
  input reads.
* :meth:`CocEngine.resolve`: the input (persons) and the groups table have the named columns.
* :meth:`CocEngine.domain`: the groups table coded as the hierarchy's public domain
  (:func:`~.domain.build_chain`) and its number of groups per leaf, checked (one row per leaf,
  non-negative integers).
* :meth:`CocEngine.scan`: the two aggregations of the issue, ``A = SELECT gid, <regions>,
  count(*) AS size FROM persons GROUP BY ALL`` and ``SELECT <levels>, size, count(*) FROM A
  GROUP BY ROLLUP (<levels>), size``; then the checks (a group in two leaves, NULL ids or regions,
  regions outside the groups table, groups found that the table does not list) and the true
  histograms of every level as numpy arrays.
* :meth:`CocEngine.write`: the budget checked again, the output table, its levels view and the
  ledger row, in one transaction.

Messages name columns, regions (public) and how many rows or regions are wrong; never a count
taken from the private data.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Sequence
from types import TracebackType

import duckdb
import numpy as np
import pyarrow as pa

from ..._coc_request import CountOfCountsRequest
from ..._errors import Arg, DomainError, InputDataError, Part, SpecError
from ...core.accounting import Budget, Guarantee
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
from ..checks import check_not_aggregated, looks_like_count
from . import compile as _compile
from .catalog import (
    Source,
    Target,
    check_domain_types,
    check_domains_not_input,
    check_scalar_type,
    count_column,
    drop_temp,
    join_type,
    resolve_source,
    resolve_target,
    type_family,
)
from .domain import build_chain
from .ledger import (
    ReleaseRecord,
    check_budget,
)
from .sql import arrow, rows, run
from .targets import check_targets
from .write import begin_transaction, record_release

__all__ = ["CocEngine", "truncate_sizes"]


class CocEngine:
    """One count-of-counts release on a DuckDB connection; a context manager that drops every
    temporary object it made."""

    def __init__(self, con: duckdb.DuckDBPyConnection, request: CountOfCountsRequest) -> None:
        self.con = con
        self.request = request
        self.names = _compile.TempNames(f"__inftda_coc_{uuid.uuid4().hex[:12]}_")
        self._sources: list[Source] = []
        self._input: Source | None = None
        self._groups: Source | None = None
        self._groups_column = ""
        self._output: Target | None = None
        self._view: Target | None = None
        self.tree: ChainTree | None = None
        self.groups_per_leaf: I64 | None = None

    def __enter__(self) -> CocEngine:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def sizes_table(self) -> str:
        return f"{self.names.prefix}sizes"

    @property
    def histograms_table(self) -> str:
        return f"{self.names.prefix}histograms"

    @property
    def groups_description(self) -> str:
        return self._groups.description if self._groups else "?"

    # ------------------------------------------------------------------------------- stages

    def prepare(self) -> None:
        """Resolve every name in the catalog and refuse outputs that would destroy what the
        release reads (or exist without ``overwrite``): before any work."""
        inp = self.request
        begin_transaction(self.con)  # fail fast if the caller left a transaction open
        run(self.con, "ROLLBACK")
        self._output = resolve_target(self.con, inp.output)
        if inp.levels_view:
            self._view = resolve_target(self.con, inp.levels_view)
        src = resolve_source(
            self.con, inp.table, role="input table", temp_name=self.names.input, param="table"
        )
        self._sources.append(src)
        self._input = src
        groups = resolve_source(
            self.con,
            inp.groups,
            role="groups table",
            temp_name=self.names.domain(0),
            error=DomainError,
            param="groups",
        )
        self._sources.append(groups)
        self._groups = groups
        # the PUBLIC groups table is the domain: one that reads the input would take the
        # regions and their groups from the private data
        check_domains_not_input(
            src.resolved, [("groups table", groups.description, groups.resolved)]
        )
        check_targets(
            self.con,
            [(src, "the input"), (groups, "the groups table")],
            (self._output, self._view),
            overwrite=inp.overwrite,
        )

    def check_budget(self, requested: Budget, *, override: bool) -> str | None:
        """Refuse a release that exceeds the budget of a base table the input reads (a pure
        epsilon-DP release is charged its ``rho``); the note an override records, or None."""
        src, _ = self._require()
        return check_budget(self.con, src.resolved, requested, Guarantee.PURE_DP, override=override)

    def resolve(self) -> None:
        """The input and the groups table have the named columns, of plain types."""
        inp = self.request
        src, groups = self._require()
        src.column(inp.group, "group column")
        check_scalar_type(src, inp.group, "group column", InputDataError)
        for col in inp.chain:
            src.column(col, "hierarchy column")
            check_scalar_type(src, col, "hierarchy column", InputDataError)
        if inp.group.lower() in {c.lower() for c in inp.chain}:
            raise SpecError(f"group column {inp.group!r} is also a hierarchy column", param="group")
        for col in inp.chain:
            groups.column(col, "hierarchy column of the groups table", DomainError)
            check_scalar_type(groups, col, "hierarchy column of the groups table", DomainError)
        check_domain_types(src, groups, inp.chain, "groups table")
        column = inp.groups_column
        if column is None:
            others = [n for k, n in groups.names.items() if k not in {c.lower() for c in inp.chain}]
            if len(others) != 1:
                raise DomainError(
                    f"the {groups.description} has {len(others)} columns besides the hierarchy "
                    f"({', '.join(others) or 'none'}); name the one holding the number of groups "
                    "with ",
                    Arg("groups_column"),
                    param="groups_column",
                )
            column = others[0]
        stored, _ = count_column(groups, column, "groups column")
        self._groups_column = stored
        self._check_not_aggregated(src)

    def _check_not_aggregated(self, src: Source) -> None:
        """A persons table is one row per person: one with a numeric column named like a count
        (``persons``, ``size``, ``n``...) looks like a table of groups with their sizes, which
        would be counted as groups of one. Refused from the schema, before any noise."""
        numeric = [
            (src.names[k], t)
            for k, t in src.columns.items()
            if type_family(t) in ("integer", "fractional")
        ]
        found = [n for n, _ in numeric if looks_like_count(n)] or ["n"]
        table = self.request.table if isinstance(self.request.table, str) else "<table>"
        check_not_aggregated(
            numeric,
            [self.request.group, *self.request.chain],
            count=None,
            microdata=self.request.microdata,
            description=f"the persons table {src.description}",
            fix=(
                "A count-of-counts release reads one row per person: if each row stands for "
                "that many persons, expand it first (CREATE VIEW persons AS SELECT t.* EXCLUDE "
                f"({found[0]}) FROM {table} t, range(t.{found[0]})); ",
            ),
        )

    def domain(self) -> tuple[ChainTree, I64]:
        """Code the groups table as the public domain; the public number of groups per leaf."""
        src, groups = self._require()
        chain = self.request.chain
        types = [join_type(src.columns[c.lower()]) for c in chain]
        tree = build_chain(self.con, self.names, 0, chain, groups.sql, types, "groups table").tree
        n_leaves = tree.sizes[-1]
        codes = self.names.codes(0)
        table = arrow(
            self.con,
            _compile.coc_public_groups(chain, groups.sql, self._groups_column, codes, types[-1]),
        )
        leaf = table.column("leaf").to_numpy()
        listed = table.column("listed").to_numpy()
        problems = {
            "is listed more than once": listed > 1,
            "has a NULL number of groups": table.column("nulls").to_numpy() > 0,
            "has a fractional number of groups": table.column("fractional").to_numpy(
                zero_copy_only=False
            ),
        }
        lo = table.column("groups").to_numpy(zero_copy_only=False)
        problems["has a negative number of groups"] = np.nan_to_num(lo.astype(float)) < 0
        for what, bad in problems.items():
            if np.any(bad):
                region = self._region(int(leaf[np.flatnonzero(bad)[0]]))
                raise DomainError(
                    f"the groups table ({groups.description}): {int(np.count_nonzero(bad))} "
                    f"region(s) where it {what}, e.g. {region}; list every leaf region once with "
                    f"its number of groups in {self._groups_column!r} (a non-negative integer)",
                    param="groups",
                )
        per_leaf = np.zeros(n_leaves, dtype=np.int64)
        per_leaf[leaf] = lo.astype(np.int64)
        self.tree, self.groups_per_leaf = tree, per_leaf
        return tree, per_leaf

    def scan(self, *, max_size: int | None) -> tuple[list[CocLevel], int]:
        """The two aggregations, the checks, and the true histograms of every level (root
        first, sizes truncated at ``max_size`` when given); also the largest group size."""
        src, groups = self._require()
        if self.tree is None or self.groups_per_leaf is None:
            raise SpecError("code the domain first: call domain()")  # pragma: no cover
        inp, chain, tree = self.request, self.request.chain, self.tree
        sizes, hist = self.sizes_table, self.histograms_table
        run(
            self.con,
            _compile.coc_group_sizes(sizes, chain, src.column(inp.group, "group column"), src.sql),
        )
        split, null_ids = rows(self.con, _compile.coc_split_groups(sizes))[0]
        if null_ids:
            raise InputDataError(
                f"{int(null_ids)} group(s) of the {src.description} have a NULL "
                f"{inp.group!r}; every person must belong to a group",
                param="group",
            )
        if split:
            raise InputDataError(
                f"{int(split)} group(s) of the {src.description} sit in more than one leaf "
                f"region ({inp.group!r} appears with different {', '.join(chain)}); a group "
                "must lie in one leaf: fix the data, or make the group id include the region",
                param="group",
            )
        run(self.con, _compile.coc_histograms(hist, sizes, chain))
        levels: list[CocLevel] = []
        leaf_groups = self.groups_per_leaf
        parents = node_parents(tree)
        public = public_groups(tree, leaf_groups)
        largest = 0
        for depth in range(len(chain) + 1):
            table = arrow(
                self.con, _compile.coc_node_codes(hist, self.names.codes(0), chain, depth)
            )
            node = table.column("node")
            if node.null_count:
                self._outside(table, chain, depth, int(node.null_count))
            n = node.to_numpy().astype(np.int64)
            size = table.column("size").to_numpy().astype(np.int64)
            count = table.column("groups").to_numpy().astype(np.int64)
            if size.size:
                largest = max(largest, int(size.max()))
            truth = Histograms.build(n, size, count)
            levels.append(
                CocLevel(
                    name="root" if depth == 0 else chain[depth - 1],
                    groups=public[depth],
                    parent=parents[depth],
                    truth=truth,
                )
            )
        self._check_found(levels[-1], src, groups)
        if inp.min_size == 0:
            levels = [with_empty_groups(lv) for lv in levels]
        elif levels[0].truth.size.size and int(levels[0].truth.size.min()) < inp.min_size:
            raise InputDataError(  # pragma: no cover - groups found hold >= 1 person
                f"groups smaller than min_size={inp.min_size} in the {src.description}"
            )
        if max_size is not None:
            levels = [truncate_sizes(lv, max_size) for lv in levels]
        return levels, largest

    def write(
        self, leaves: Histograms, record: ReleaseRecord, *, budget: Budget, override: bool
    ) -> ReleaseRecord:
        """Check the budget again, write the released leaf histograms, their levels view and
        the ledger row in one transaction; return the ledger row as written."""
        inp, chain = self.request, self.request.chain
        src, _ = self._require()
        if self._output is None:
            raise SpecError("the output is not resolved yet: call prepare() first")
        released = pa.table({"leaf": leaves.node, "size": leaves.size, "groups": leaves.count})
        output_sql = self._output.ref.sql
        statements = [
            _compile.coc_write_output(output_sql, self.names.released, self.names.codes(0), chain)
        ]
        if self._view is not None:
            statements.append(_compile.coc_levels_view(chain, self._view.ref.sql, output_sql))
        return record_release(
            self.con,
            registered=[(self.names.released, released)],
            targets=(self._output, self._view),
            statements=statements,
            overwrite=inp.overwrite,
            record=record,
            source=src.resolved,
            budget=budget,
            guarantee=Guarantee.PURE_DP,
            budget_override=override,
        )

    def close(self) -> None:
        for src in self._sources:
            drop_temp(self.con, src)
        for table in (self.sizes_table, self.histograms_table):
            with contextlib.suppress(duckdb.Error):
                run(self.con, _compile.drop_temp_table(table))
        for registered in (self.names.released, self.names.codes(0)):
            with contextlib.suppress(duckdb.Error):
                self.con.unregister(registered)

    # ------------------------------------------------------------------------------- helpers

    def _require(self) -> tuple[Source, Source]:
        if self._input is None or self._groups is None:
            raise SpecError("resolve the inputs first: call resolve()")  # pragma: no cover
        return self._input, self._groups

    def _region(self, leaf: int) -> str:
        """``state='X', county='Y'`` of a leaf code (public: from the groups table)."""
        chain = self.request.chain
        found = rows(self.con, _compile.leaf_of_code(self.names, 0, chain), {"code": leaf})
        return f"{chain[-1]}={found[0][0]!r}" if found else "?"

    def _outside(self, table: pa.Table, chain: Sequence[str], depth: int, n: int) -> None:
        """Regions of the input that the groups table does not list (or NULL ones)."""
        src, groups = self._require()
        bad = table.filter(table.column("node").is_null())
        example = ", ".join(f"{c}={bad.column(c)[0].as_py()!r}" for c in chain[:depth])
        nulls = any(bad.column(c).null_count for c in chain[:depth])
        what = "a NULL region" if nulls else "a region the groups table does not list"
        raise DomainError(
            f"the {src.description} has {what} at level {chain[depth - 1]!r} "
            f"({n} (region, size) row(s) of its histograms), e.g. {example}; the "
            f"{groups.description} must list every leaf region of the input, with the same "
            f"{', '.join(chain[: depth - 1]) or 'path'} above it",
            param="groups",
        )

    def _check_found(self, leaves: CocLevel, src: Source, groups: Source) -> None:
        """Groups found per leaf must not exceed the public number (nor fall short of it when
        groups cannot be empty). Only HOW MANY regions disagree is said, and a query to run."""
        over, under = found_vs_listed(leaves, self.request.min_size)
        if not over and not under:
            return
        inp = self.request
        hint = _compile.coc_disagree_hint(
            inp.chain, groups.sql, self._groups_column, src.sql, inp.group
        ).strip()
        parts: list[Part] = [f"the {src.description} and the {groups.description} disagree: "]
        if over:
            parts.append(f"{over} region(s) hold more groups than the groups table lists")
        if under:
            parts += [
                "; " if over else "",
                f"{under} region(s) hold fewer groups than it lists (with ",
                Arg("min_size", inp.min_size),
                " every listed group must hold someone; pass ",
                Arg("min_size", 0),
                " if groups may be empty)",
            ]
        parts.append(f". Find them with: {' '.join(hint.split())}")
        raise InputDataError(*parts, param="groups")
