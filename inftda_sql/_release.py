"""``release()``: read a DuckDB table, write a private, consistent table of counts back.

A release is a short pipeline of named stages: check the request (:mod:`._request`: every
argument, the accounting's included), resolve the inputs and code the public domain, make the
accounting (by :mod:`.core.accounting` only; levels the public domain determines spend nothing),
scan the private input, run the mechanism (:mod:`.mechanisms`, engine-free numpy), write the
output and its ledger row atomically. The stages that touch the data are the engine's
(:mod:`.engines`; DuckDB here). The pipeline dispatches on the mechanism's kind: a hierarchy
(TopDown and its baselines) or a lattice of features (CBDP), whose scan is one GROUPING SETS
query that counts every feature.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import html
import json
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb
import pyarrow as pa

from ._errors import Arg, SpecError
from ._frames import convert
from ._interrupts import Scope, settle_imports
from ._progress import reporter
from ._request import ReleaseRequest
from ._tables import html_table, text_table
from ._version import __version__
from .core.accounting import Accounting, Guarantee
from .core.features import FeatureSpec
from .core.spec import TreeSpec
from .core.tree import LevelStats
from .engines.base import Engine, R, Scan
from .engines.duckdb.engine import DuckDBEngine
from .engines.duckdb.write import DEFAULT_TIMEOUT, check_timeout, write_timeout
from .engines.records import ReleaseRecord
from .mechanisms import (
    DEFAULT_MAX_CELLS,
    MECHANISMS,
    FeatureContext,
    FeatureMechanism,
    MechanismContext,
)

__all__ = ["MECHANISMS", "Release", "release"]


@dataclass(frozen=True)
class Release:
    """What a release made and spent. Printing it gives a readable summary.

    Attributes:
        output: name of the private leaf table (non-zero cells; positive for InfTDA and CBDP), or
            None when the release was returned in memory only (``return_as=`` without
            ``output=``).
        levels_view: name of the view with every level (or, for a feature release, every
            feature: ``<output>_features``) as sums of the leaves (or None).
        release_id: the row of this release in the ledger table ``inftda_releases``.
        accounting: budget, (epsilon, delta), per-level sensitivity, rho and sigma.
        levels: per level: parents, noised cells, surviving cells, sigma (public) and
            seconds (NOT private).
        timings: seconds per stage (NOT private).
        seeded: True if noise came from a test seed (NOT a private release).
        non_private: reasons why this release is not private (empty for a private one).
        diagnostics: facts about the private input (NOT private).
        data: the released table (hierarchy or leaf columns and ``count``, as written) in the
            form ``return_as`` asked for: a pandas or polars DataFrame or an Arrow table; None
            when it was only written. :meth:`to_arrow`, :meth:`to_pandas` and :meth:`to_polars`
            convert it.

    What is public and what is not: the released table, the budget and the per-level facts
    derived from released values may be shared. Times and diagnostics are for the data owner
    only: a level's time grows with the number of its true non-empty cells, which the release
    hides. :meth:`as_dict` keeps them under one key that says so, the printed summary marks the
    times, and the ledger keeps them in its diagnostics, which :func:`~inftda_sql.publish` and
    :func:`~inftda_sql.ledger` leave out.
    """

    output: str | None
    levels_view: str | None
    release_id: int
    input: str
    spec: TreeSpec | FeatureSpec
    mechanism: str
    accounting: Accounting
    levels: tuple[LevelStats, ...]
    total: int
    timings: dict[str, float] = field(default_factory=dict)
    seeded: bool = False
    non_private: tuple[str, ...] = ()
    guarantee: Guarantee = Guarantee.ZCDP
    mechanism_params: dict[str, Any] = field(default_factory=dict)
    diagnostics: dict[str, Any] = field(default_factory=dict)
    """Facts about the private input for the data owner only (e.g. rows dropped by the
    contribution bound). NOT differentially private: never publish them."""
    return_as: str | None = None
    released: pa.Table | None = field(default=None, repr=False, compare=False)
    """The released table as Arrow, when it was returned in memory (``return_as=``)."""

    @property
    def is_private(self) -> bool:
        return not self.non_private

    @functools.cached_property
    def data(self) -> Any:
        """The released table in the form ``return_as`` asked for (converted once), or None."""
        if self.released is None or self.return_as is None:
            return None
        return convert(self.released, self.return_as)

    def to_arrow(self) -> pa.Table:
        """The released table as an Arrow table (``return_as=`` must have been given)."""
        if self.released is None:
            raise SpecError(
                "this release was written to ",
                repr(self.output),
                ", not returned in memory: read it with con.table(...).arrow(), or release with ",
                Arg("return_as", "arrow"),
                param="return_as",
            )
        return self.released

    def to_pandas(self) -> Any:
        """The released table as a pandas DataFrame (needs the ``pandas`` extra)."""
        if self.return_as == "pandas":
            return self.data
        return convert(self.to_arrow(), "pandas")

    def to_polars(self) -> Any:
        """The released table as a polars DataFrame (needs the ``polars`` extra)."""
        if self.return_as == "polars":
            return self.data
        return convert(self.to_arrow(), "polars")

    def relation(self, con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyRelation:
        """The released table as a DuckDB relation (the written table, or the one returned in
        memory)."""
        if self.output is None:
            return con.from_arrow(self.to_arrow())
        return con.table(self.output)

    def as_dict(self) -> dict[str, Any]:
        """The release as plain data; what is not private sits under the key
        :attr:`NOT_PRIVATE` (times and diagnostics), everything else may be shared."""
        return {
            "release_id": self.release_id,
            "input": self.input,
            "output": self.output,
            "returned_as": self.return_as,
            "levels_view": self.levels_view,
            "hierarchy": self.spec.as_dict(),
            "mechanism": self.mechanism,
            "guarantee": str(self.guarantee),
            "mechanism_params": dict(self.mechanism_params),
            "budget": self.accounting.as_dict(),
            "levels": [lv.as_dict() for lv in self.levels],
            "total": self.total,
            "seeded": self.seeded,
            "non_private": list(self.non_private),
            self.NOT_PRIVATE: {
                "seconds_per_stage": {k: round(v, 4) for k, v in self.timings.items()},
                "seconds_per_level": [round(lv.seconds, 4) for lv in self.levels],
                "diagnostics": dict(self.diagnostics),
            },
        }

    #: the key of :meth:`as_dict` that holds what must not be published
    NOT_PRIVATE = "not private (for the data owner only)"

    def _level_rows(self) -> list[tuple[str, ...]]:
        rows: list[tuple[str, ...]] = [
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
        if isinstance(self.spec, FeatureSpec):  # features have no parents: no such column
            return [row[:3] + row[4:] for row in rows]
        return rows

    _HEADER = ("level", "cells of", "sigma", "parents", "noised", "kept", "s*")
    _FEATURE_HEADER = ("query", "name", "noise sd", "noised", "kept", "s*")

    @property
    def _header(self) -> tuple[str, ...]:
        return self._FEATURE_HEADER if isinstance(self.spec, FeatureSpec) else self._HEADER

    def _shape(self) -> str:
        if isinstance(self.spec, FeatureSpec):
            return f"{len(self.spec.features)} features, {self.spec.structure} structure"
        return f"{self.spec.tree} tree"

    def _budget_line(self) -> str:
        line = Guarantee(self.guarantee).budget_line(self.accounting.budget, self.mechanism_params)
        return f"budget: {line}; released total {self.total:,}"

    def __str__(self) -> str:
        warn = ""
        if self.non_private:
            warn = "NOT PRIVATE: " + "; ".join(self.non_private) + "\n"
        lines = [
            f"{warn}release #{self.release_id}: {self.input} -> "
            f"{self.output if self.output is not None else f'(in memory, {self.return_as})'} "
            f"({self.mechanism}, {self._shape()}, {self.accounting.privacy} DP)",
            self._budget_line(),
        ]
        lines += text_table(self._header, self._level_rows(), left=1)
        if self.levels_view and isinstance(self.spec, FeatureSpec):
            lines.append(
                f"every feature: SELECT * FROM {self.levels_view} WHERE feature = '<name>'"
            )
        elif self.levels_view:
            lines.append(f"every level: SELECT * FROM {self.levels_view} WHERE level = <n>")
        lines.append(self._timing_note())
        return "\n".join(lines)

    def _timing_note(self) -> str:
        return (
            f"* seconds ({sum(self.timings.values()):.2f} s in all) depend on the private data: "
            "for the data owner only, never published"
        )

    def _repr_html_(self) -> str:
        warn = ""
        if self.non_private:
            warn = f"<p><b>NOT PRIVATE</b>: {html.escape('; '.join(self.non_private))}</p>"
        summary = html.escape(str(self).splitlines()[int(bool(self.non_private))])
        table = html_table(self._header, self._level_rows(), before=f"{warn}<p>{summary}</p>")
        return f"{table}<p>{html.escape(self._timing_note())}</p>"


def release(
    con: duckdb.DuckDBPyConnection,
    table: str | os.PathLike[str] | duckdb.DuckDBPyRelation | pa.Table | Any,
    /,
    *,
    hierarchy: Sequence[str] | Sequence[Sequence[str]] | None = None,
    features: Mapping[str, Sequence[str]] | None = None,
    domain: object = None,
    tree: str | None = None,
    structure: str | None = None,
    weights: str | None = None,
    rho: float | None = None,
    epsilon: float | None = None,
    delta: float | None = None,
    conversion: str = "tight",
    privacy: str = "bounded",
    privacy_unit: str | None = None,
    contribution: int = 1,
    distinct: bool = False,
    split: Sequence[float] | Mapping[str, float] | None = None,
    count: str | None = None,
    output: str | None = None,
    overwrite: bool = False,
    mechanism: str = "inftda",
    seed: int | None = None,
    domain_from_data: bool = False,
    budget_override: bool = False,
    levels_view: bool = True,
    max_cells: int = DEFAULT_MAX_CELLS,
    progress: Callable[[LevelStats], None] | bool | None = None,
    return_as: str | None = None,
    check_ancestors: str = "full",
    timeout: float | None = DEFAULT_TIMEOUT,
) -> Release:
    """Release a differentially private, consistent, non-negative table of counts.

    Reads ``table`` (microdata: one row per record, or pre-aggregated with ``count=``), builds
    the hierarchical tree of counts in SQL, runs InfTDA (discrete Gaussian noise, then IntOpt per
    parent) level by level, and writes the positive leaf cells to ``output`` together with a row
    in the ledger table ``inftda_releases``, atomically. The input is never modified.

    Args:
        con: an open DuckDB connection (read-write: the ledger row is always written).
        table: input table or view name, a DuckDB relation of ``con``, a parquet/CSV file: a
            path or glob (``"od.parquet"``, ``"flows_*.csv"``, a ``pathlib.Path``), read
            directly and charged to its resolved absolute path (a glob to each file it
            matches), or a data frame: a pandas or polars DataFrame or an Arrow table, read
            where it lies (a temporary view of the connection, dropped afterwards; zero-copy
            where DuckDB can). A data frame is not a table of the database, so it is refused
            while the database stores budgets (see :func:`set_budget`;
            ``budget_override=True`` lets it through, recorded).
        hierarchy: one chain of columns coarse to fine (``["region", "province", "mun"]``) or a
            list of chains (``[["o_region", "o_mun"], ["d_region", "d_mun"]]``).
        features: for ``mechanism="cbdp"`` instead of ``hierarchy``: the GROUP BY column sets
            to measure, ``{name: [columns]}`` coarse to fine with the leaf (the cells
            released) last, e.g. ``{"total": [], "period": ["period"], "zones": ["o_zone",
            "d_zone", "period"], "trip": ["o_stop", "d_stop", "period"]}``. Every feature must
            be a coarsening of the leaf on the public domain. With a pure ``epsilon`` (no
            ``delta``) the noise is discrete Laplace (pure epsilon-DP, as the paper); with
            ``rho`` or ``epsilon`` and ``delta`` it is discrete Gaussian (zCDP).
        domain: the PUBLIC categories listing every valid path: a table/view name, a
            parquet/CSV file, a relation, a data frame or a mapping ``{column: [values...]}``.
            One domain serves every chain: each reads the columns of its own names, or those
            one common prefix leads to (``o_region`` -> ``region``); :class:`~inftda_sql.Domain`
            maps the others (``Domain("geo", columns={"home": "msoa"})``). Or a list with one
            domain per chain. For features: one table of every leaf cell, or a list of tables
            whose product is the domain, columns named as the features'.
        tree: ``"chain"``/``"sequential"`` (chains refined in order; default) or, for two chains
            (origin, destination), ``"destination"`` or ``"origin"``.
        structure: CBDP only: ``"flat"`` (the features themselves, default) or
            ``"hierarchical"`` (the tree of their cumulative meets: the paper's ablation).
        weights: CBDP only: ``"cells"`` (each feature's squared distance divided by its
            number of cells, the paper's, default) or ``"uniform"``.
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
        split: per-level weights of rho (uniform by default); for CBDP per-feature weights of
            the budget, a list (one per noised feature) or ``{feature: weight}``.
        count: name of the count column of a pre-aggregated input.
        output: output table (default ``<table>_private``, for a file ``<file name>_private``);
            ``overwrite=True`` replaces it. With ``return_as=`` and no ``output`` nothing is
            written but the ledger row (in memory only; a feature release always writes its
            table, ``<table>_private`` by default, and returns what it wrote).
        return_as: also return the released table in memory as ``Release.data``:
            ``"arrow"`` (an Arrow table), ``"pandas"`` or ``"polars"`` (a DataFrame; needs the
            ``pandas``/``polars`` extra). It has the columns and rows of the written table.
            Default: None for a named input, a file or a relation; for a data frame, a data
            frame of the same kind (unless ``output=`` is given).
        mechanism: ``"inftda"`` (default), or a baseline to compare with: ``"vanilla_gauss"``,
            ``"stability_histogram"`` ((epsilon, delta)-DP: needs epsilon and delta),
            ``"tda_l2"``, ``"tda_linf_solver"`` (needs the ``solver`` extra) or
            ``"hierarchical"``. InfTDA and the TopDown baselines write positive, consistent
            counts; ``hierarchical`` writes consistent counts that may be negative, and
            ``vanilla_gauss`` noisy leaves that may be negative. ``"cbdp"`` (with ``features``)
            writes non-negative integer leaves fitted to every feature's noisy counts.
        seed: TESTS AND BENCHMARKS ONLY: reproducible, non-cryptographic noise; the release is
            then recorded as seeded and not private.
        domain_from_data: take the categories from the private data instead of a public domain.
            NOT PRIVATE (which cells exist leaks); recorded as such in the ledger.
        budget_override: release even if it exceeds the budget stored for the input with
            :func:`set_budget` (recorded in the ledger as an override).
        levels_view: also create the view ``<output>_levels`` with every level.
        check_ancestors: the input needs only the leaf column of every chain (a star schema:
            the domain gives every leaf its ancestors, and the output takes them from there).
            Ancestor columns the input does have are checked against the domain, every row:
            ``"full"`` (default) on every release; ``"cached"`` once per version of the input
            as the catalog sees it (its tables' ids and row counts, its view definitions: an
            ``UPDATE`` in place is NOT seen, so only for inputs changed by ``INSERT``,
            ``DELETE`` or ``CREATE OR REPLACE``); ``"off"`` never (they are not read at all).
            The check reports an inconsistent input; it never changes what is released.
        max_cells: mechanisms that noise every cell of the full domain (``vanilla_gauss``,
            ``hierarchical``) or optimise over it (``cbdp``) refuse domains with more cells
            than this.
        progress: called with each level's statistics as it completes; ``True`` draws a
            progress bar (tqdm: a widget in a notebook), ``False`` nothing; ``None`` (the
            default) draws one when run in a Jupyter kernel with tqdm installed.
        timeout: seconds to keep retrying the write when other writers (threads releasing into
            the same database) change it at the same moment (default 30): the write is one
            transaction, retried with the same released cells and the budget checked again;
            None or 0 fails at once. Past it, :class:`~inftda_sql.ConcurrentWriteError`.

    Returns:
        A :class:`Release` describing the output, the budget spent, and per-level statistics.

    Ctrl-C before the output and its ledger row are committed cancels the release: nothing is
    written or recorded. Once the commit has begun the release completes (its temporary objects
    are dropped), then ``KeyboardInterrupt`` is raised: the release is recorded.

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
    timeout = check_timeout(timeout)
    request = ReleaseRequest.from_args(
        table,
        hierarchy=hierarchy,
        features=features,
        structure=structure,
        weights=weights,
        domain=domain,
        tree=tree,
        rho=rho,
        epsilon=epsilon,
        delta=delta,
        conversion=conversion,
        privacy=privacy,
        privacy_unit=privacy_unit,
        contribution=contribution,
        distinct=distinct,
        split=split,
        count=count,
        output=output,
        overwrite=overwrite,
        mechanism=mechanism,
        seed=seed,
        domain_from_data=domain_from_data,
        budget_override=budget_override,
        levels_view=levels_view,
        max_cells=max_cells,
        return_as=return_as,
        check_ancestors=check_ancestors,
    )
    settle_imports()  # pyarrow's lazy import of pandas, never cut by Ctrl-C
    levels = getattr(request.spec, "n_levels", None)
    with (
        Scope(),
        write_timeout(timeout),  # Ctrl-C after the commit waits for the cleanup
        reporter(progress, None if levels is None else levels + 1) as report,
    ):
        return _run(con, request, report, t_start)


def _run(
    con: duckdb.DuckDBPyConnection,
    request: ReleaseRequest,
    progress: Callable[[LevelStats], None] | None,
    t_start: float,
) -> Release:
    """The stages of a checked request on DuckDB."""
    if isinstance(request.mechanism, FeatureMechanism):
        return _release_features(con, request, _Stages(), progress, t_start)
    with DuckDBEngine(con, request) as engine:
        return run_release(engine, request, progress, t_start)


def run_release(
    engine: Engine[R],
    request: ReleaseRequest,
    progress: Callable[[LevelStats], None] | None,
    t_start: float,
) -> Release:
    """The stages of a hierarchy release on any engine: prepare, domain (and the accounting,
    from the public domain only), scan, mechanism, write."""
    mechanism = request.mechanism
    if isinstance(mechanism, FeatureMechanism):  # the callers dispatch feature releases before
        raise TypeError(f"{mechanism.name} releases features, not a hierarchy")
    stages = _Stages()
    budget_note = engine.prepare()
    with stages("domain"):
        engine.resolve()
        chains = engine.code_domains()
        accounting = request.account(chains)  # public domain only: no data read yet
    with stages("scan"):
        scan = engine.scan()
    with stages("topdown"):
        result = engine.run_mechanism(
            mechanism,
            MechanismContext(
                spec=request.tree,
                chains=chains,
                true_level=engine.level_counts,
                total=scan.total,
                accounting=accounting,
                source=request.source,
                progress=progress,
                max_cells=request.max_cells,
            ),
        )
    levels, total = engine.released(result)
    non_private = request.non_private_reasons(budget_note)
    with stages("write"):
        details = {"levels": [lv.as_dict() for lv in levels], **_level_notes(accounting)}
        record = _record(
            request,
            accounting,
            engine.input_description,
            engine.domain_description,
            details,
            scan,
            non_private,
            (stages.seconds, [lv.seconds for lv in levels]),
        )
        record = engine.write(result, record)
        released = engine.released_table(result) if request.return_as else None
    return Release(
        output=request.output,
        levels_view=request.levels_view,
        release_id=record.release_id,
        input=record.input_table,
        spec=request.spec,
        mechanism=request.mechanism.name,
        accounting=accounting,
        levels=levels,
        total=total,
        timings=stages.done(time.perf_counter() - t_start),
        seeded=request.source.seeded,
        non_private=tuple(record.non_private),
        diagnostics=dict(scan.diagnostics),
        guarantee=request.guarantee,
        mechanism_params=record_parameters(request, accounting),
        return_as=request.return_as,
        released=released,
    )


def _release_features(
    con: duckdb.DuckDBPyConnection,
    request: ReleaseRequest,
    stages: _Stages,
    progress: Callable[[LevelStats], None] | None,
    t_start: float,
) -> Release:
    """The pipeline of a feature release: domain (coded and checked), accounting, one GROUPING
    SETS scan, the mechanism, the write."""
    mech = request.mechanism
    if not isinstance(mech, FeatureMechanism):  # pragma: no cover - dispatched on it
        raise TypeError("a feature release needs a feature mechanism")
    with DuckDBEngine(con, request) as engine:
        budget_note = engine.prepare()
        with stages("domain"):
            engine.resolve_features()
            lattice = engine.code_lattice()
            mech.check_size(lattice, request.max_cells)
            acct = request.account()  # public domain only: no data read yet
        with stages("scan"):
            scan, true_counts = engine.feature_counts(lattice)
        with stages("mechanism"):
            result = mech.run(
                FeatureContext(
                    lattice=lattice,
                    true_counts=true_counts,
                    total=scan.total,
                    accounting=acct,
                    source=request.source,
                    progress=progress,
                    max_cells=request.max_cells,
                )
            )
        del true_counts
        non_private = request.non_private_reasons(budget_note)
        with stages("write"):
            details: dict[str, Any] = {
                # per query: cells noised and released non-zero, noise sd
                "levels": [lv.as_dict() for lv in result.levels],
                "noise": acct.noise,
                "exact_levels": list(acct.exact_levels),
                "mechanism_params": result.parameters,
            }
            if acct.noise == "laplace":
                details["level_epsilon"] = list(acct.level_epsilon)
            record = _record(
                request,
                acct,
                engine.input_description,
                engine.domain_description,
                details,
                scan,
                non_private,
                (
                    {**stages.seconds, **{f"mechanism: {k}": v for k, v in result.timings.items()}},
                    [lv.seconds for lv in result.levels],
                ),
            )
            record = engine.write_features(lattice, result, record)
            released = engine.read_features_output() if request.return_as else None
    timings = stages.done(time.perf_counter() - t_start)
    return Release(
        output=request.output,
        levels_view=request.levels_view,
        release_id=record.release_id,
        input=record.input_table,
        spec=request.spec,
        mechanism=mech.name,
        accounting=acct,
        levels=result.levels,
        total=int(result.counts.sum()),
        timings={**timings, **{f"mechanism: {k}": v for k, v in result.timings.items()}},
        seeded=request.source.seeded,
        non_private=tuple(record.non_private),
        diagnostics=dict(scan.diagnostics),
        guarantee=request.guarantee,
        mechanism_params=dict(result.parameters),
        return_as=request.return_as,
        released=released,
    )


def _level_notes(acct: Accounting) -> dict[str, Any]:
    """Why some levels spend nothing (for the ledger's details), if any does."""
    notes = {n: note for n, note in zip(acct.level_names, acct.level_notes, strict=True) if note}
    return {"level_notes": notes} if notes else {}


class _Stages:
    """Seconds per stage of a release (for the data owner's summary, never published)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextlib.contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - t0

    def done(self, elapsed: float) -> dict[str, float]:
        return {**self.seconds, "other": max(0.0, elapsed - sum(self.seconds.values()))}


def record_parameters(request: ReleaseRequest, accounting: Accounting) -> dict[str, Any]:
    """The mechanism's own parameters (e.g. a threshold), derived from the accounting."""
    mech = request.mechanism
    if isinstance(mech, FeatureMechanism) or mech.parameters is None:
        return {}
    return mech.parameters(accounting)


def _record(
    request: ReleaseRequest,
    acct: Accounting,
    input_table: str,
    domain_source: str,
    details: dict[str, Any],
    scan: Scan,
    non_private: list[str],
    seconds: tuple[dict[str, float], Sequence[float]],
) -> ReleaseRecord:
    """The ledger row of a release (its id is assigned when it is written). ``details`` holds
    what the mechanism did (per level or query), derived from noisy values only; ``seconds``
    the times per stage and per level (or query).

    Its ``details`` keep what is not private (the input's diagnostics, the times) under keys
    that start with ``diagnostics``: the public view of the row
    (:meth:`~inftda_sql.engines.duckdb.ledger.ReleaseRecord.public`) leaves them out.
    """
    budget, mech = request.budget, request.mechanism
    spec = request.spec
    guarantee = request.guarantee
    return ReleaseRecord(
        release_id=0,
        created_at=dt.datetime.now(dt.UTC).replace(tzinfo=None),
        input_table=input_table,
        output_table=request.output_description,
        hierarchy=json.dumps(spec.as_dict()),
        tree=spec.tree if isinstance(spec, TreeSpec) else "features",
        domain_source=domain_source,
        mechanism=mech.name,
        guarantee=guarantee.value,
        privacy=acct.privacy,
        rho=guarantee.charged_rho(budget.rho),
        epsilon=budget.epsilon,
        delta=budget.delta,
        conversion=budget.conversion,
        budget_given=budget.given,
        contribution=acct.contribution,
        distinct_records=acct.distinct,
        privacy_unit=scan.privacy_unit,
        level_names=list(acct.level_names),
        level_sensitivity=list(acct.level_sensitivity),
        level_rho=list(acct.level_rho),
        level_sigma=list(acct.level_sigma),
        seeded=request.source.seeded,
        non_private=non_private,
        library_version=__version__,
        details=json.dumps(
            {
                "levels_view": request.levels_view,
                "mechanism_params": record_parameters(request, acct),
                **details,
                "diagnostics (not private, for the data owner only)": dict(scan.diagnostics),
                "diagnostics: seconds (not private: they depend on the data)": {
                    "per_level": [round(t, 4) for t in seconds[1]],
                    "per_stage": {k: round(v, 4) for k, v in seconds[0].items()},
                },
            }
        ),
    )
