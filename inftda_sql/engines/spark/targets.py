"""The outputs of a release on Spark checked before any work: not a name the library owns, not
what the release reads (its input, its domains, and the tables and views either reads, from
Spark's analyzed plan), replaced only with ``overwrite``. Every release kind calls
:func:`check_targets`; the checks themselves are the engine-neutral ones of
:mod:`inftda_sql.engines.checks`."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import SparkSession

from ...core.names import split_name
from ..checks import check_not_read, check_not_reserved, check_output_free
from ..records import LIBRARY_TABLES, is_library_name
from .catalog import BaseTables, SparkSource, full_name

__all__ = ["check_targets"]


def check_targets(
    spark: SparkSession,
    named: Sequence[tuple[SparkSource, BaseTables, str]],
    targets: Sequence[str | None],
    *,
    overwrite: bool,
) -> None:
    """Refuse an output (``targets``: names as given) that is one of the ``named`` sources
    (with what it reads and its role), a table or view they read, or a name the library owns;
    an existing one needs ``overwrite``."""
    protected: list[tuple[str, str, str]] = []
    for src, reads, role in named:
        if src.key is not None:
            protected.append((src.key.lower(), src.key, role))
        protected += [(t.lower(), t, f"a table {role} reads") for t in reads.tables]
        protected += [(v.lower(), v, f"a view {role} reads") for v in reads.views]
    for target in targets:
        if target is None:
            continue
        check_not_reserved(target, is_library_name(split_name(target)[-1]), LIBRARY_TABLES)
        key = full_name(spark, target)
        if key is None:
            continue
        check_not_read(target, key.lower(), protected)
        check_output_free(target, True, overwrite)
