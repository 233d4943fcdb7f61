"""``release()``: read a DuckDB table, write a private, consistent table of counts back.

Stages (one module each): spec (:mod:`._spec`) -> compile (:mod:`._compile`, ``sql/``) ->
measure and optimise (:mod:`._topdown` with :mod:`._noise` and :mod:`._intopt`) -> write
(:mod:`._write`). Accounting lives in :mod:`._accounting` only.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import html
import json
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb
import numpy as np

from ._budget import check_budget
from ._errors import DomainError, InputDataError, InternalError, OutputExistsError, SpecError
from ._ledger import ReleaseRecord
from ._tables import html_table, text_table
from ._version import __version__
from .core.accounting import Accounting, Budget
from .core.rng import as_source
from .core.spec import TreeSpec, parse_hierarchy
from .core.tree import ChainTree, LevelStats
from .engines.duckdb import compile as _compile
from .engines.duckdb.catalog import (
    Source,
    check_domain_types,
    drop_temp,
    object_kind,
    resolve_source,
    type_family,
)
from .engines.duckdb.domain import build_chain
from .engines.duckdb.sql import arrow, ident, rows, run, scalar
from .engines.duckdb.write import begin_transaction, write_release
from .mechanisms import DEFAULT_MAX_CELLS, MECHANISMS, MechanismContext
from .mechanisms import get as get_mechanism

__all__ = ["MECHANISMS", "Release", "release"]

PRIVACY_MODELS = ("bounded", "unbounded")


@dataclass(frozen=True)
class Release:
    """What a release made and spent. Printing it gives a readable summary.

    Attributes:
        output: name of the private leaf table (non-zero cells; positive for InfTDA).
        levels_view: name of the view with every level as sums of the leaves (or None).
        release_id: the row of this release in the ledger table ``inftda_releases``.
        accounting: budget, (epsilon, delta), per-level sensitivity, rho and sigma.
        levels: per level: parents, noised cells, surviving cells, sigma, seconds.
        timings: seconds per stage.
        seeded: True if noise came from a test seed (NOT a private release).
        non_private: reasons why this release is not private (empty for a private one).
    """

    output: str
    levels_view: str | None
    release_id: int
    input: str
    spec: TreeSpec
    mechanism: str
    accounting: Accounting
    levels: tuple[LevelStats, ...]
    total: int
    timings: dict[str, float] = field(default_factory=dict)
    seeded: bool = False
    non_private: tuple[str, ...] = ()
    guarantee: str = "zCDP"
    mechanism_params: dict[str, Any] = field(default_factory=dict)
    diagnostics: dict[str, Any] = field(default_factory=dict)
    """Facts about the private input for the data owner only (e.g. rows dropped by the
    contribution bound). NOT differentially private: never publish them."""

    @property
    def is_private(self) -> bool:
        return not self.non_private

    def relation(self, con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyRelation:
        """The released table as a DuckDB relation."""
        return con.table(self.output)

    def as_dict(self) -> dict[str, Any]:
        return {
            "release_id": self.release_id,
            "input": self.input,
            "output": self.output,
            "levels_view": self.levels_view,
            "hierarchy": self.spec.as_dict(),
            "mechanism": self.mechanism,
            "guarantee": self.guarantee,
            "mechanism_params": dict(self.mechanism_params),
            "budget": self.accounting.as_dict(),
            "levels": [lv.as_dict() for lv in self.levels],
            "total": self.total,
            "timings": {k: round(v, 4) for k, v in self.timings.items()},
            "seeded": self.seeded,
            "non_private": list(self.non_private),
            "diagnostics (not private)": dict(self.diagnostics),
        }

    def _level_rows(self) -> list[tuple[str, ...]]:
        return [
            (
                str(lv.level),
                lv.name,
                f"{lv.sigma:.3g}",
                f"{lv.parents:,}",
                f"{lv.noised_cells:,}",
                f"{lv.surviving_cells:,}",
                f"{lv.seconds:.2f}",
            )
            for lv in self.levels
        ]

    _HEADER = ("level", "cells of", "sigma", "parents", "noised", "kept", "s")

    def _budget_line(self) -> str:
        b = self.accounting.budget
        tail = f"; released total {self.total:,}; {sum(self.timings.values()):.2f} s"
        if self.guarantee != "zCDP":
            p = self.mechanism_params
            return (
                f"budget: (epsilon={b.epsilon:.6g}, delta={b.delta:.3g})-DP; discrete Laplace "
                f"scale {p.get('scale', float('nan')):.4g}, threshold {p.get('threshold')}{tail}"
            )
        return (
            f"budget: rho={b.rho:.6g} ~ (epsilon={b.epsilon:.6g}, delta={b.delta:.3g}) "
            f"[{b.conversion} conversion]{tail}"
        )

    def __str__(self) -> str:
        warn = ""
        if self.non_private:
            warn = "NOT PRIVATE: " + "; ".join(self.non_private) + "\n"
        lines = [
            f"{warn}release #{self.release_id}: {self.input} -> {self.output} "
            f"({self.mechanism}, {self.spec.tree} tree, {self.accounting.privacy} DP)",
            self._budget_line(),
        ]
        lines += text_table(self._HEADER, self._level_rows(), left=1)
        if self.levels_view:
            lines.append(f"every level: SELECT * FROM {self.levels_view} WHERE level = <n>")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        warn = ""
        if self.non_private:
            warn = f"<p><b>NOT PRIVATE</b>: {html.escape('; '.join(self.non_private))}</p>"
        summary = html.escape(str(self).splitlines()[int(bool(self.non_private))])
        return html_table(self._HEADER, self._level_rows(), before=f"{warn}<p>{summary}</p>")


def _normalise_domains(domain: object, spec: TreeSpec) -> list[object]:
    n = len(spec.chains)
    if n == 1:
        if isinstance(domain, (list, tuple)) and len(domain) == 1:
            return list(domain)
        return [domain]
    if not isinstance(domain, (list, tuple)) or len(domain) != n:
        raise DomainError(
            f"the hierarchy has {n} chains, so domain must be a list of {n} domains (one per "
            f"chain, columns named as the chain), got {domain!r}"
        )
    return list(domain)


def _check_int(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise SpecError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _join_type(duck_type: str) -> str:
    """The type domain values are cast to: the input's, but ENUMs compare as VARCHAR."""
    return "VARCHAR" if duck_type.upper().startswith("ENUM") else duck_type


def _example(values: Sequence[object], cols: Sequence[str]) -> str:
    return ", ".join(f"{c}={v!r}" for c, v in zip(cols, values, strict=False))


def release(
    con: duckdb.DuckDBPyConnection,
    table: str | duckdb.DuckDBPyRelation,
    /,
    *,
    hierarchy: Sequence[str] | Sequence[Sequence[str]],
    domain: object = None,
    tree: str | None = None,
    rho: float | None = None,
    epsilon: float | None = None,
    delta: float | None = None,
    conversion: str = "tight",
    privacy: str = "bounded",
    privacy_unit: str | None = None,
    contribution: int = 1,
    distinct: bool = False,
    split: Sequence[float] | None = None,
    count: str | None = None,
    output: str | None = None,
    overwrite: bool = False,
    mechanism: str = "inftda",
    seed: int | None = None,
    domain_from_data: bool = False,
    budget_override: bool = False,
    levels_view: bool = True,
    max_cells: int = DEFAULT_MAX_CELLS,
    progress: Callable[[LevelStats], None] | None = None,
) -> Release:
    """Release a differentially private, consistent, non-negative table of counts.

    Reads ``table`` (microdata: one row per record, or pre-aggregated with ``count=``), builds
    the hierarchical tree of counts in SQL, runs InfTDA (discrete Gaussian noise, then IntOpt per
    parent) level by level, and writes the positive leaf cells to ``output`` together with a row
    in the ledger table ``inftda_releases``, atomically. The input is never modified.

    Args:
        con: an open DuckDB connection (read-write).
        table: input table or view name, or a DuckDB relation.
        hierarchy: one chain of columns coarse to fine (``["region", "province", "mun"]``) or a
            list of chains (``[["o_region", "o_mun"], ["d_region", "d_mun"]]``).
        domain: the PUBLIC categories: per chain a table/view name, a relation or a mapping
            ``{column: [values...]}`` listing every valid path, columns named as the chain. A
            list with one entry per chain when there are several chains.
        tree: ``"chain"``/``"sequential"`` (chains refined in order; default) or, for two chains
            (origin, destination), ``"destination"`` or ``"origin"``.
        rho: the zCDP budget (``float("inf")`` = no noise, the exactness oracle). Or:
        epsilon, delta: an (epsilon, delta)-DP budget converted to rho with ``conversion``
            (``"tight"``: Canonne-Kamath-Steinke 2020; ``"simple"``: Bun-Steinke 2016).
        privacy: ``"bounded"`` (replace one unit; the total N is public) or ``"unbounded"``
            (add/remove one unit; the root is noised too).
        privacy_unit: column identifying the privacy unit (a person, a household). Each unit
            then keeps at most ``contribution`` of its records (with ``distinct=True``: at most
            that many distinct leaf cells), chosen uniformly at random in SQL before counting.
            Without it every row is its own unit and ``contribution`` states a bound the caller
            guarantees.
        contribution: records per privacy unit (m), with ``distinct`` if they fall in distinct
            leaf cells. With m > 1 the root total is noised too (it is no longer public).
        split: per-level weights of rho (uniform by default).
        count: name of the count column of a pre-aggregated input.
        output: output table (default ``<table>_private``); ``overwrite=True`` replaces it.
        mechanism: ``"inftda"`` (default), or a baseline to compare with: ``"vanilla_gauss"``,
            ``"stability_histogram"`` ((epsilon, delta)-DP: needs epsilon and delta),
            ``"tda_l2"``, ``"tda_linf_solver"`` (needs the ``solver`` extra) or
            ``"hierarchical"``. InfTDA and the TopDown baselines write positive, consistent
            counts; ``vanilla_gauss`` and ``hierarchical`` may write negative counts and (after
            rounding) ``hierarchical`` is not exactly consistent.
        seed: TESTS AND BENCHMARKS ONLY: reproducible, non-cryptographic noise; the release is
            then recorded as seeded and not private.
        domain_from_data: take the categories from the private data instead of a public domain.
            NOT PRIVATE (which cells exist leaks); recorded as such in the ledger.
        budget_override: release even if it exceeds the budget stored for the input with
            :func:`set_budget` (recorded in the ledger as an override).
        levels_view: also create the view ``<output>_levels`` with every level.
        max_cells: mechanisms that noise every cell of the full domain (``vanilla_gauss``,
            ``hierarchical``) refuse domains with more cells than this.
        progress: called with each level's statistics as it completes.

    Returns:
        A :class:`Release` describing the output, the budget spent, and per-level statistics.

    Example:
        >>> import duckdb, inftda_sql
        >>> con = duckdb.connect()
        >>> _ = con.execute("CREATE TABLE geo (region VARCHAR, city VARCHAR)")
        >>> _ = con.execute("INSERT INTO geo VALUES ('N', 'a'), ('N', 'b'), ('S', 'c')")
        >>> _ = con.execute("CREATE TABLE persons AS SELECT * FROM geo, range(2) WHERE city <> 'b'")
        >>> r = inftda_sql.release(con, "persons", hierarchy=["region", "city"], domain="geo",
        ...                        rho=float("inf"))
        >>> con.execute("SELECT * FROM persons_private").fetchall()
        [('N', 'a', 2), ('S', 'c', 2)]
    """
    t_start = time.perf_counter()
    timings: dict[str, float] = {}
    spec = parse_hierarchy(hierarchy, tree)
    if privacy not in PRIVACY_MODELS:
        raise SpecError(f"privacy must be 'bounded' or 'unbounded', got {privacy!r}")
    contribution = _check_int("contribution", contribution, 1)
    if not isinstance(distinct, bool):
        raise SpecError(f"distinct must be True or False, got {distinct!r}")
    budget = Budget.from_args(rho=rho, epsilon=epsilon, delta=delta, conversion=conversion)
    mech = get_mechanism(mechanism)
    mech.check(budget)
    max_cells = _check_int("max_cells", max_cells, 1)
    acct = mech.account(
        budget, spec, privacy=privacy, contribution=contribution, distinct=distinct, split=split
    )
    source = as_source(seed)
    if domain is None and not domain_from_data:
        raise DomainError(
            "no domain given: the categories of every hierarchy column must come from a PUBLIC "
            "list (a geography table, declared categories), otherwise which cells exist leaks "
            "the private data. Pass domain='geo' (a table with the hierarchy columns) or "
            "domain={'sex': ['F', 'M']}; or opt in to domain_from_data=True, which takes them "
            "from the data and records the release as NOT private"
        )
    if domain is not None and domain_from_data:
        raise DomainError("pass domain= or domain_from_data=True, not both")

    names = _compile.TempNames(f"__inftda_{uuid.uuid4().hex[:12]}_")
    input_desc = table if isinstance(table, str) else "<relation>"
    if output is None:
        if not isinstance(table, str):
            raise SpecError("output= is required when the input is a relation")
        output = f"{table}_private"
    if not isinstance(output, str) or not output or len(output.split(".")) > 2:
        raise SpecError(f"output must be a table name, got {output!r}")
    view_name = f"{output}_levels" if levels_view else None
    if isinstance(table, str) and output.lower() == table.lower():
        raise SpecError(f"output {output!r} is the input table; choose another name")
    for name in (output, view_name):
        if name and object_kind(con, name) is not None and not overwrite:
            raise OutputExistsError(
                f"{name!r} already exists; pass overwrite=True to replace it or choose another "
                "output= name"
            )

    # fail fast (before any work) if the caller left a transaction open
    begin_transaction(con)
    run(con, "ROLLBACK")
    budget_note = None
    if isinstance(table, str):
        budget_note = check_budget(
            con, table, budget, mech.guarantee, override=bool(budget_override)
        )

    sources: list[Source] = []
    temp_tables = [names.leaf, names.keys]
    try:
        t0 = time.perf_counter()
        inp = resolve_source(con, table, role="input table", temp_name=names.input)
        sources.append(inp)
        for col in spec.columns:
            inp.column(col, "hierarchy column")
        count_is_integer = True
        if count is not None:
            if not isinstance(count, str):
                raise SpecError(f"count must be a column name, got {count!r}")
            stored = inp.column(count, "count column")
            fam = type_family(inp.columns[count.lower()])
            if fam not in ("integer", "fractional"):
                raise InputDataError(
                    f"count column {stored!r} has type {inp.columns[count.lower()]}, not a "
                    "number; pass the column holding the number of records per row, or CAST it "
                    f"in a view: SELECT * REPLACE (CAST({stored} AS BIGINT) AS {stored}) FROM ..."
                )
            count_is_integer = fam == "integer"
            if count.lower() in {c.lower() for c in spec.columns}:
                raise SpecError(f"count column {count!r} is also a hierarchy column")

        domain_desc: list[str] = []
        chain_trees: list[ChainTree] = []
        domains = _normalise_domains(domain, spec) if domain is not None else None
        for c, chain in enumerate(spec.chains):
            role = f"domain of chain {c + 1}" if len(spec.chains) > 1 else "domain"
            if domains is None:
                dom_sql = f"(SELECT DISTINCT {', '.join(ident(x) for x in chain)} FROM {inp.sql})"
                domain_desc.append("FROM DATA (not private)")
            else:
                dom = resolve_source(
                    con, domains[c], role=role, temp_name=names.domain(c), error=DomainError
                )
                sources.append(dom)
                for col in chain:
                    dom.column(col, f"hierarchy column of the {role}", DomainError)
                check_domain_types(inp, dom, chain, role)
                dom_sql = dom.sql
                domain_desc.append(dom.description)
            types = [_join_type(inp.columns[col.lower()]) for col in chain]
            chain_trees.append(build_chain(con, names, c, chain, dom_sql, types, role))
        timings["domain"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        scan_sql, scan_params = inp.sql, None
        if privacy_unit is not None:
            unit = _check_unit(con, inp, privacy_unit, spec, count)
            salt = source.words(4).tobytes().hex()  # 256-bit secret for the random choice
            scan_sql = _compile.bound_units(spec, inp.sql, unit, distinct=distinct, m=contribution)
            scan_params = {"salt": salt}
        enums = frozenset(
            c for c in spec.columns if _join_type(inp.columns[c.lower()]) != inp.columns[c.lower()]
        )
        leaf_sql = _compile.leaf_counts(
            names,
            spec,
            scan_sql,
            count and inp.column(count, "count"),
            count_is_integer,
            enums,
            bounded=privacy_unit is not None,
        )
        run(con, leaf_sql, scan_params)
        timings["scan"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        _validate_input(con, names, spec, count, inp)
        run(con, _compile.leaf_codes(names, spec))
        _check_paths(con, names, spec, inp)
        total = int(scalar(con, f"SELECT coalesce(sum(n), 0) FROM {ident(names.keys)}"))
        diagnostics: dict[str, Any] = {}
        if privacy_unit is not None:
            rows_in = int(scalar(con, f"SELECT count(*) FROM {inp.sql}"))
            diagnostics = {
                "privacy_unit": privacy_unit,
                "contribution_bound": contribution,
                "distinct": distinct,
                "rows_in": rows_in,
                "rows_kept": total,
                "rows_dropped": rows_in - total,
            }
        timings["validate"] = time.perf_counter() - t0

        t0 = time.perf_counter()

        def true_level(level: int, strides: tuple[int, ...]) -> tuple[Any, Any]:
            tab = arrow(con, _compile.level_counts(names, spec, level, strides))
            return (
                tab.column("key").to_numpy().astype(np.int64, copy=False),
                tab.column("n").to_numpy().astype(np.int64, copy=False),
            )

        ctx = MechanismContext(
            spec=spec,
            chains=chain_trees,
            true_level=true_level,
            total=total,
            accounting=acct,
            source=source,
            progress=progress,
            max_cells=max_cells,
        )
        result = mech.run(ctx)
        timings["topdown"] = time.perf_counter() - t0

        mechanism_params = mech.parameters(acct) if mech.parameters else {}
        non_private = []
        if budget.non_private:
            non_private.append("infinite budget (no noise)")
        if domain_from_data:
            non_private.append("domain taken from the data")
        if source.seeded:
            non_private.append("seeded noise (tests and benchmarks only)")
        if budget_note:
            non_private.append(budget_note)
        t0 = time.perf_counter()
        record = ReleaseRecord(
            release_id=0,  # assigned by the write stage, inside its transaction
            created_at=dt.datetime.now(dt.UTC).replace(tzinfo=None),
            input_table=input_desc,
            output_table=output,
            hierarchy=json.dumps(spec.as_dict()),
            tree=spec.tree,
            domain_source="; ".join(domain_desc),
            mechanism=mechanism,
            guarantee=mech.guarantee,
            privacy=acct.privacy,
            rho=budget.rho if mech.guarantee == "zCDP" else None,
            epsilon=budget.epsilon,
            delta=budget.delta,
            conversion=budget.conversion,
            budget_given=budget.given,
            contribution=acct.contribution,
            distinct_records=acct.distinct,
            level_names=list(acct.level_names),
            level_sensitivity=list(acct.level_sensitivity),
            level_rho=list(acct.level_rho),
            level_sigma=list(acct.level_sigma),
            seeded=source.seeded,
            non_private=non_private,
            library_version=__version__,
            details=json.dumps(
                {
                    "levels": [lv.as_dict() for lv in result.levels],
                    "levels_view": view_name,
                    "mechanism_params": mechanism_params,
                    "diagnostics (not private, for the data owner only)": diagnostics,
                }
            ),
        )
        release_id = write_release(
            con,
            names,
            spec,
            result,
            output=output,
            view=view_name,
            overwrite=overwrite,
            record=record,
        )
        timings["write"] = time.perf_counter() - t0
        timings["other"] = max(0.0, time.perf_counter() - t_start - sum(timings.values()))
        return Release(
            output=output,
            levels_view=view_name,
            release_id=release_id,
            input=input_desc,
            spec=spec,
            mechanism=mechanism,
            accounting=acct,
            levels=result.levels,
            total=int(result.counts.sum()),
            timings=timings,
            seeded=source.seeded,
            non_private=tuple(non_private),
            diagnostics=diagnostics,
            guarantee=mech.guarantee,
            mechanism_params=mechanism_params,
        )
    finally:
        for src in sources:
            drop_temp(con, src)
        for t in temp_tables:
            with contextlib.suppress(duckdb.Error):
                run(con, f"DROP TABLE IF EXISTS {ident(t)}")
        for registered in [names.released, *(names.codes(c) for c in range(len(spec.chains)))]:
            with contextlib.suppress(duckdb.Error):
                con.unregister(registered)


def _validate_input(
    con: duckdb.DuckDBPyConnection,
    names: _compile.TempNames,
    spec: TreeSpec,
    count: str | None,
    inp: Source,
) -> None:
    """Checks before any noise: NULL leaves, bad counts, leaf values outside the domain."""
    leaf = ident(names.leaf)
    cols = spec.leaf_columns
    null_exprs = ", ".join(f"count(*) FILTER ({ident(c)} IS NULL)" for c in cols)
    stats = rows(
        con,
        f"SELECT {null_exprs}, coalesce(sum(__nulls), 0), min(__min), "
        f"coalesce(bool_or(__frac), false) FROM {leaf}",
    )[0]
    for col, n_null in zip(cols, stats[: len(cols)], strict=True):
        if n_null:
            _null_error(col, inp)
    n_nulls, minimum, frac = stats[len(cols) :]
    if count is not None:
        if n_nulls:
            raise InputDataError(
                f"count column {count!r} has {n_nulls} NULL value(s); use 0 or drop those rows"
            )
        if minimum is not None and minimum < 0:
            ex = rows(
                con,
                f"SELECT {', '.join(ident(c) for c in cols)}, __min FROM {leaf} "
                "WHERE __min < 0 LIMIT 1",
            )[0]
            raise InputDataError(
                f"count column {count!r} has negative values, e.g. {ex[-1]} at "
                f"({_example(ex, cols)}); counts must be non-negative integers: fix or drop those "
                f"rows in a view first (e.g. WHERE {count} >= 0)"
            )
        if frac:
            raise InputDataError(
                f"count column {count!r} has non-integer values; counts must "
                "be whole numbers (CAST or ROUND them in a view)"
            )


def _check_unit(
    con: duckdb.DuckDBPyConnection, inp: Source, unit: object, spec: TreeSpec, count: str | None
) -> str:
    """The privacy-unit column: present, not a hierarchy or count column, never NULL."""
    if not isinstance(unit, str) or not unit:
        raise SpecError(f"privacy_unit must be a column name, got {unit!r}")
    stored = inp.column(unit, "privacy unit")
    if unit.lower() in {c.lower() for c in spec.columns}:
        raise SpecError(
            f"privacy_unit {unit!r} is also a hierarchy column; name the column that "
            "identifies a person or household"
        )
    if count is not None:
        raise SpecError(
            "privacy_unit= bounds the records of each unit and needs one row per record, but "
            f"count={count!r} says rows are pre-aggregated; expand them first "
            f"(SELECT t.* EXCLUDE ({count}) FROM t, range(t.{count})) or drop privacy_unit="
        )
    nulls = scalar(con, f"SELECT count(*) FROM {inp.sql} WHERE {ident(stored)} IS NULL")
    if nulls:
        raise InputDataError(
            f"privacy unit column {stored!r} has {nulls} NULL value(s); every "
            "record must belong to a unit (drop or label them in a view)"
        )
    return stored


def _null_error(col: str, inp: Source) -> None:
    raise InputDataError(
        f"hierarchy column {col!r} of {inp.description} has NULL values; every record needs a "
        "value in every hierarchy column (filter or fill them in a view first)"
    )


def _check_paths(
    con: duckdb.DuckDBPyConnection, names: _compile.TempNames, spec: TreeSpec, inp: Source
) -> None:
    """Leaf values must be in the domain, and every input row's ancestors must be those the
    domain gives its leaf (the offending row is looked up only on error)."""
    keys = ident(names.keys)
    for c, chain in enumerate(spec.chains):
        code = ident(f"__c{c}_d{len(chain)}")
        missing = rows(
            con,
            f"SELECT {ident(chain[-1])}, count(*) OVER () FROM {keys} "
            f"WHERE {code} IS NULL ORDER BY 1 LIMIT 1",
        )
        if missing:
            value, n_values = missing[0]
            raise DomainError(
                f"{n_values} value(s) of {chain[-1]!r} in the input are not in the domain, e.g. "
                f"{chain[-1]}={value!r}; add them to the public domain table or fix the input"
            )
    if not _compile.ancestors(spec):
        return
    if not scalar(con, f"SELECT count(*) FILTER (NOT path_ok) FROM {keys}"):
        return
    leaf_codes = ", ".join(ident(f"__c{c}_d{len(ch)}") for c, ch in enumerate(spec.chains))
    bad_codes = rows(con, f"SELECT {leaf_codes} FROM {keys} WHERE NOT path_ok LIMIT 1")[0]
    for c, chain in enumerate(spec.chains):
        if len(chain) == 1:
            continue
        leaf_value = scalar(
            con,
            f"SELECT {ident(chain[-1])} FROM {ident(names.codes(c))} "
            f"WHERE {_compile.depth_code(len(chain))} = $code",
            {"code": bad_codes[c]},
        )
        ex = rows(con, _compile.bad_path(names, c, chain, inp.sql), {"leaf": leaf_value})
        if ex:
            for col, value in zip(chain, ex[0], strict=True):
                if value is None:
                    _null_error(col, inp)
            raise DomainError(
                f"input path ({_example(ex[0], chain)}) is not in the domain: the domain puts "
                f"{chain[-1]}={leaf_value!r} under other ancestors; fix the input's "
                f"{', '.join(chain[:-1])} or the domain"
            )
    raise InternalError("an input path failed the domain check but no offending row was found")
