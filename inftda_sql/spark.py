"""Releases on Apache Spark: the same spec, accounting, mechanisms, ledger and errors.

Install the extra (``pip install 'inftda-sql[spark]'``: pyspark with pandas and pyarrow; Spark
needs a Java 17+ runtime) and pass a ``SparkSession`` where the DuckDB API takes a connection::

    from pyspark.sql import SparkSession
    import inftda_sql.spark

    spark = SparkSession.builder.getOrCreate()
    r = inftda_sql.spark.release(
        spark, "trips",
        hierarchy=[["o_region", "o_province", "o_mun"], ["d_region", "d_province", "d_mun"]],
        domain=["geo_origin", "geo_destination"], rho=1.0,
    )
    spark.table(r.output)        # a table of the catalog, joinable with the geography

The ledger and the budgets live in a folder of small files that outlives the session
(:mod:`inftda_sql.engines.spark.ledger`): ``ledger=``, else the Spark conf
``spark.inftda.ledger``, else ``inftda_ledger`` beside the warehouse. :func:`set_budget`,
:func:`budget_of` and :func:`ledger` read and write it as their DuckDB namesakes read a database.

Every argument means what it means for :func:`inftda_sql.release` (the same
:class:`~inftda_sql._request.ReleaseRequest` checks them, the same accounting prices them, the
same ledger fields record them). The level counts are Spark SQL ``GROUP BY`` s; the noise and
IntOpt of InfTDA (and of the TopDown baselines) run in Spark's tasks on blocks of parents
(:mod:`inftda_sql.engines.spark.topdown`), never on the driver; the full-domain baselines
(``vanilla_gauss``, ``stability_histogram``, ``hierarchical``) collect their level counts to the
driver, as their ``max_cells`` bound allows. Under a test ``seed`` a release is the same table
as the DuckDB engine's, whatever the partitioning.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

try:
    from pyspark.sql import SparkSession
except ImportError as exc:  # pragma: no cover - the extra is missing
    raise ImportError(
        "inftda_sql.spark needs pyspark (with pandas and pyarrow): pip install 'inftda-sql[spark]'"
    ) from exc

from ._budget import Ledger, summarize
from ._coc_request import DEFAULT_MAX_SIZE_SHARE, CountOfCountsRequest
from ._errors import SpecError
from ._pipeline import run_release
from ._progress import reporter
from ._request import ReleaseRequest
from ._result import CountOfCountsRelease, Release
from .core.accounting import Budget, RhoZCDPBudget
from .core.coc import DEFAULT_CHUNK, CocLevelStats
from .core.tree import LevelStats
from .engines.records import BudgetRecord, is_library_name
from .engines.spark.catalog import full_name
from .engines.spark.engine import SparkEngine
from .engines.spark.ledger import open_ledger, register_views
from .mechanisms import DEFAULT_MAX_CELLS

__all__ = [
    "Ledger",
    "budget_of",
    "budgets",
    "ledger",
    "release",
    "release_count_of_counts",
    "set_budget",
]

#: a ledger folder, a path the driver mounts (:func:`.engines.spark.ledger.ledger_location`)
LedgerPath = str | os.PathLike[str] | None


def release(
    spark: SparkSession,
    table: Any,
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
    split: Sequence[float] | None = None,
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
    scratch: str | None = None,
    ledger: LedgerPath = None,
) -> Release:
    """Release a differentially private, consistent, non-negative table of counts on Spark.

    Args:
        spark: the SparkSession whose catalog holds the input, the domain and the output.
        table: a table or view name of the catalog, or a Spark DataFrame.
        domain: per chain a table name, a DataFrame or a mapping ``{column: [values...]}``;
            for ``features`` (``mechanism="cbdp"``) one table of every leaf cell or a list of
            tables whose product is the domain, as for :func:`inftda_sql.release`.
        scratch: a folder every executor can write (the survivors of each level; removed at
            the end); the warehouse folder by default.
        ledger: the ledger folder (a local or shared path every driver mounts); by default the
            Spark conf ``spark.inftda.ledger``, else ``<spark.sql.warehouse.dir>/inftda_ledger``.
            Opened and checked, and the workers checked, before any data is read.
        **rest: as :func:`inftda_sql.release`.

    Returns:
        A :class:`~inftda_sql.Release`; read the output with ``spark.table(r.output)`` (its
        ``relation()`` is DuckDB's). The ledger row is in the ledger folder (:func:`ledger`; the
        session's temporary view ``inftda_releases`` shows it too).
    """
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
        microdata=microdata,
    )
    levels = getattr(request.spec, "n_levels", None)
    with (
        reporter(progress, None if levels is None else levels + 1) as report,
        SparkEngine(spark, request, scratch=scratch, ledger=ledger) as engine,
    ):
        return run_release(engine, request, report, t_start)


def _budget_key(spark: SparkSession, table: object) -> str:
    if not isinstance(table, str) or not table:
        raise SpecError(f"set_budget needs the input table's name, got {table!r}", param="table")
    key = full_name(spark, table)
    if key is None:
        raise SpecError(
            f"{table!r} is not a table or view of the catalog; a budget belongs to an input table",
            param="table",
        )
    if is_library_name(key.rsplit(".", 1)[-1]):
        raise SpecError(
            f"{table!r} is a name inftda_sql keeps for its own bookkeeping; a budget belongs to "
            "an input table",
            param="table",
        )
    return key


def set_budget(
    spark: SparkSession,
    table: str,
    /,
    *,
    rho: float | None = None,
    epsilon: float | None = None,
    delta: float | None = None,
    conversion: str = "tight",
    ledger: LedgerPath = None,
) -> Budget:
    """Store (or replace) the total privacy budget of input ``table``, as
    :func:`inftda_sql.set_budget` does on DuckDB; it is kept under the table's full name
    (``catalog.database.table``) in the ledger folder, so every session and application that
    uses that folder sees it and is refused a release that would exceed it."""
    key = _budget_key(spark, table)
    budget = Budget.from_args(rho=rho, epsilon=epsilon, delta=delta, conversion=conversion)
    found = open_ledger(spark, ledger)
    found.set_budget(
        BudgetRecord(
            input_table=key,
            rho=budget.rho,
            epsilon=budget.epsilon,
            delta=budget.delta,
            conversion=budget.conversion,
            set_at=dt.datetime.now(dt.UTC).replace(tzinfo=None),
        )
    )
    register_views(spark, found)
    return budget


def budget_of(spark: SparkSession, table: str, *, ledger: LedgerPath = None) -> Budget | None:
    """The stored budget of ``table`` (resolved in the catalog), or None."""
    stored = open_ledger(spark, ledger).budgets().get(_budget_key(spark, table).lower())
    if stored is None:
        return None
    return _budget(stored)


def budgets(spark: SparkSession, *, ledger: LedgerPath = None) -> dict[str, Budget]:
    """Every stored budget, by the full name of its table (the newest setting holds)."""
    return {b.input_table: _budget(b) for b in open_ledger(spark, ledger).budgets().values()}


def _budget(stored: BudgetRecord) -> Budget:
    """A stored budget (always a zCDP rho) as a :class:`~inftda_sql.core.accounting.Budget`."""
    return RhoZCDPBudget(
        rho=stored.rho, epsilon=stored.epsilon, delta=stored.delta, conversion=stored.conversion
    )


def release_count_of_counts(
    spark: SparkSession,
    table: Any,
    /,
    *,
    group: str,
    hierarchy: Sequence[str],
    groups: Any,
    epsilon: float,
    max_size: int | None = None,
    groups_column: str | None = None,
    min_size: int = 1,
    method: str = "cumulative",
    consistency: str = "topdown",
    merge: str = "weighted",
    split: Sequence[float] | None = None,
    max_size_share: float = DEFAULT_MAX_SIZE_SHARE,
    output: str | None = None,
    overwrite: bool = False,
    levels_view: bool = True,
    seed: int | None = None,
    budget_override: bool = False,
    chunk: int = DEFAULT_CHUNK,
    progress: Callable[[CocLevelStats], None] | None = None,
    microdata: bool = False,
    ledger: LedgerPath = None,
) -> CountOfCountsRelease:
    """Release private hierarchical count-of-counts histograms on Spark.

    Every argument means what it means for :func:`inftda_sql.release_count_of_counts` (the
    same request checks them, the same estimators run on the driver, the same ledger fields
    record them); ``table`` and ``groups`` are tables or views of the catalog or Spark
    DataFrames. Spark computes the group sizes and every level's histograms; the noise, the
    isotonic fits and the consistency run on the driver (a node's histogram is at most
    ``max_size`` entries, bounded before any data is read). Under a test ``seed`` the release
    is the same table as DuckDB's. ``ledger``: as for :func:`release`.
    """
    t_start = time.perf_counter()
    request = CountOfCountsRequest.from_args(
        table,
        group=group,
        hierarchy=hierarchy,
        groups=groups,
        epsilon=epsilon,
        max_size=max_size,
        groups_column=groups_column,
        min_size=min_size,
        method=method,
        consistency=consistency,
        merge=merge,
        split=split,
        max_size_share=max_size_share,
        output=output,
        overwrite=overwrite,
        levels_view=levels_view,
        seed=seed,
        budget_override=budget_override,
        chunk=chunk,
        microdata=microdata,
    )
    with SparkEngine(spark, request, ledger=ledger) as engine:
        return run_release(engine, request, progress, t_start)


def ledger(
    spark: SparkSession, *, ledger: LedgerPath = None, include_diagnostics: bool = False
) -> Ledger:
    """The releases in the ledger folder and, per base table, the budget spent and remaining:
    the :class:`~inftda_sql.Ledger` :func:`inftda_sql.ledger` gives on DuckDB (print it for a
    table). Each release's ``details`` leave out its diagnostics (facts about the private
    input) unless ``include_diagnostics=True``. Also (re)makes the session's temporary views
    ``inftda_releases`` and ``inftda_budgets`` over the folder."""
    found = open_ledger(spark, ledger)
    register_views(spark, found)
    records = found.read_releases()
    releases = [(r if include_diagnostics else r.public()).values() for r in records]
    charges = [(r.base_tables or [r.input_table], r.rho, r.guarantee) for r in records]
    stored = {k: (b.input_table, b) for k, b in found.budgets().items()}
    return Ledger(releases=releases, inputs=summarize(charges, stored))
