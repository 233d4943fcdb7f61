"""``release()``: read a DuckDB table, write a private, consistent table of counts back.

The front door of DuckDB releases of a hierarchy or of features: the arguments checked into a
request (:mod:`._request`: every argument, the accounting's included), then the request run on a
DuckDB engine through the one pipeline every release kind shares
(:func:`~._pipeline.run_release`; the kinds' stages in :mod:`.kinds`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import duckdb
import pyarrow as pa

from ._interrupts import Scope, settle_imports
from ._pipeline import run_release
from ._progress import reporter
from ._request import ReleaseRequest
from ._result import Release
from .core.tree import LevelStats
from .engines.duckdb.connection import require_open
from .engines.duckdb.engine import DuckDBEngine
from .engines.duckdb.write import DEFAULT_TIMEOUT, check_timeout, write_timeout
from .mechanisms import DEFAULT_MAX_CELLS, MECHANISMS

__all__ = ["MECHANISMS", "Release", "release"]


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
    microdata: bool = False,
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
    measurements: bool = False,
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
        count: name of the count column of a pre-aggregated input (each row stands for that
            many records). Without it every row is one record, and an input with a numeric
            column named like a count (``count``, ``n``, ``people``, ``n_trips``, ... see
            :data:`~inftda_sql.engines.checks.COUNT_WORDS`) that the release does not use is
            refused before any noise, as it looks pre-aggregated.
        microdata: True says every row is one record although the input has such a column
            (an attribute, e.g. a person's ``household_size``): it is then not refused.
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
        measurements: also write ``<output>_measurements``, every noisy value the TopDown
            mechanism drew before post-processing (:mod:`inftda_sql.core.measurements`), in the
            same transaction and ledger row; no extra budget. TopDown mechanisms only.

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
    require_open(con, "release")
    t_start = time.perf_counter()
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
        microdata=microdata,
        measurements=measurements,
    )
    timeout = check_timeout(timeout)
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
    """The stages of a checked request on DuckDB (:func:`~._pipeline.run_release`)."""
    with DuckDBEngine(con, request) as engine:
        return run_release(engine, request, progress, t_start)
