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

import time
from collections.abc import Callable, Sequence
from typing import Any

try:
    from pyspark.sql import SparkSession
except ImportError as exc:  # pragma: no cover - the extra is missing
    raise ImportError(
        "inftda_sql.spark needs pyspark (with pandas and pyarrow): pip install 'inftda-sql[spark]'"
    ) from exc

from ._progress import reporter
from ._release import Release, run_release
from ._request import ReleaseRequest
from .core.tree import LevelStats
from .engines.records import ReleaseRecord
from .engines.spark.engine import SparkEngine
from .engines.spark.ledger import namespace_of, read_releases
from .mechanisms import DEFAULT_MAX_CELLS

__all__ = ["ledger", "release"]


def release(
    spark: SparkSession,
    table: Any,
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
    progress: Callable[[LevelStats], None] | bool | None = None,
    scratch: str | None = None,
) -> Release:
    """Release a differentially private, consistent, non-negative table of counts on Spark.

    Args:
        spark: the SparkSession whose catalog holds the input, the domain and the output.
        table: a table or view name of the catalog, or a Spark DataFrame.
        domain: per chain a table name, a DataFrame or a mapping ``{column: [values...]}``.
        scratch: a folder every executor can write (the survivors of each level; removed at
            the end); the warehouse folder by default.
        **rest: as :func:`inftda_sql.release`.

    Returns:
        A :class:`~inftda_sql.Release`; read the output with ``spark.table(r.output)`` (its
        ``relation()`` is DuckDB's). The ledger row is in ``inftda_releases`` of the output's
        database (:func:`ledger`).
    """
    t_start = time.perf_counter()
    request = ReleaseRequest.from_args(
        table,
        hierarchy=hierarchy,
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
    )
    levels = getattr(request.spec, "n_levels", None)
    with (
        reporter(progress, None if levels is None else levels + 1) as report,
        SparkEngine(spark, request, scratch=scratch) as engine,
    ):
        return run_release(engine, request, report, t_start)


def ledger(spark: SparkSession, database: str | None = None) -> list[ReleaseRecord]:
    """The ledger rows of a database (the current one by default), in release order."""
    where = f"{database}.x" if database else "x"
    return read_releases(spark, namespace_of(spark, where))
