"""Checks made before a Spark release reads any data: the Python workers, and a slow setting.

A release runs the noise and IntOpt in Spark's Python workers (``applyInArrow``), which import
this package. A worker whose interpreter cannot (no ``PYSPARK_PYTHON`` set while the driver runs
in a virtualenv, a cluster without the package) would fail only after the domain and the scan,
in a raw ``PythonException``. :func:`check_workers` runs one tiny job first (one partition, no
data) that imports the package on a worker and returns its version and interpreter; a failure or
another version is one line naming the fix. Its answer is kept per application and interpreter.
The engine runs it only for a release with a level that may run in Spark's tasks (by the public
domain's size against ``spark.inftda.driverChildren``), and always before the scan: a release
whose every level runs on the driver starts no Python worker at all.

:func:`warn_slow_settings` names, in a warning, a setting that makes a release slow: many more
shuffle partitions than the cluster has cores on a small input (Spark's default 200 on a laptop
gives 200 tasks per level). The engine does not change the user's settings for good (other jobs
may share the session); the warning says what to set. Its own queries may run with performance
settings changed for one block and put back (:func:`session_settings`: the scan's hash map, the
released table's Arrow batches). Arrow needs no check: the engine's transfers use
Arrow whatever ``spark.sql.execution.arrow.pyspark.enabled`` says (``toArrow``,
``createDataFrame`` of an Arrow table, ``applyInArrow``).
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections.abc import Iterator, Mapping
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from ..._errors import InftdaWarning, SpecError
from ..._version import __version__

__all__ = ["check_workers", "session_settings", "warn_slow_settings", "workers_report"]

#: the probe, compiled outside any module of this package so that Spark pickles it by value: a
#: worker without the package can still run it and say so
_PROBE_SOURCE = """
def probe(_rows):
    import sys
    version = ""
    try:
        import inftda_sql
        version = str(getattr(inftda_sql, "__version__", "?"))
        from inftda_sql.engines.spark import topdown  # what the release's tasks import
        yield (version, sys.executable, "")
    except BaseException as exc:
        yield (version, sys.executable, f"{type(exc).__name__}: {exc}")
"""
_namespace: dict[str, Any] = {"__name__": "inftda_sql_worker_probe"}
exec(compile(_PROBE_SOURCE, "<inftda_sql worker probe>", "exec"), _namespace)
_probe = _namespace["probe"]

#: (application id, worker interpreter) -> the package version its workers import
_CHECKED: dict[tuple[str, str], str] = {}

#: a shuffle partition of less than this on average is too small to pay for its task
_SMALL_PARTITION_BYTES = 1 << 20


def _fix() -> str:
    return (
        f"set PYSPARK_PYTHON (or the Spark conf spark.pyspark.python) to an interpreter that has "
        f"inftda-sql=={__version__} (the driver runs {sys.executable}), or ship the package to "
        "the workers (spark-submit --py-files, spark.submit.pyFiles, or a packed virtualenv "
        "with spark.archives)"
    )


def workers_report(spark: SparkSession) -> tuple[str, str, str]:
    """(package version, interpreter, error) as a worker sees them; runs one tiny job."""
    rows = spark.sparkContext.parallelize([0], 1).mapPartitions(_probe).collect()
    version, executable, error = rows[0]
    return str(version), str(executable), str(error)


def check_workers(spark: SparkSession) -> None:
    """Refuse to start a release whose Python workers cannot import this package at this
    version (one tiny job, once per application and interpreter), with the fix."""
    sc = spark.sparkContext
    python = str(getattr(sc, "pythonExec", None) or "python3")
    key = (str(sc.applicationId), python)
    if _CHECKED.get(key) == __version__:
        return
    try:
        version, executable, error = workers_report(spark)
    except Exception as exc:  # the worker did not start, or died before the probe ran
        lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
        cause = next(
            (ln for ln in lines if "Error" in ln or "Cannot run program" in ln),
            lines[0] if lines else type(exc).__name__,
        )
        raise SpecError(
            f"Spark's Python workers ({python}) failed to start: {cause[:300]}; {_fix()}",
            param="spark",
        ) from None
    if version and version != __version__:
        raise SpecError(
            f"Spark's Python workers ({executable}) import inftda-sql {version}, the driver "
            f"{__version__}: the two must match (the noise is drawn on the workers); {_fix()}",
            param="spark",
        )
    if error:
        error = " ".join(error.split())[:200]  # one line
        raise SpecError(
            f"Spark's Python workers ({executable}) cannot import inftda_sql ({error}); {_fix()}",
            param="spark",
        )
    _CHECKED[key] = version


def warn_slow_settings(spark: SparkSession, frame: DataFrame) -> None:
    """Warn when ``spark.sql.shuffle.partitions`` is far above the cluster's cores for an input
    this small (by the optimizer's size estimate, no job): every level then runs that many tiny
    tasks. The message does not state the size (a fact about the private input)."""
    try:
        partitions = int(spark.conf.get("spark.sql.shuffle.partitions") or "200")
        cores = int(spark.sparkContext.defaultParallelism)
        size = int(str(frame._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()))
    except Exception:  # no estimate (a connect session, an unusual plan): nothing to say
        return
    if partitions <= 4 * cores or size >= partitions * _SMALL_PARTITION_BYTES:
        return
    suggested = max(cores, 1) * 2
    warnings.warn(
        InftdaWarning(
            f"spark.sql.shuffle.partitions is {partitions} on a cluster of {cores} cores and a "
            f"small input: every level of the release runs up to {partitions} tiny tasks, which "
            f'is slow; set it near the cores: spark.conf.set("spark.sql.shuffle.partitions", '
            f'"{suggested}")',
            param="spark",
        ),
        stacklevel=5,
    )


@contextlib.contextmanager
def session_settings(
    spark: SparkSession, settings: Mapping[str, str], *, keep_given: bool = False
) -> Iterator[None]:
    """The session's ``settings`` changed for the ``with`` block, then as they were (unset
    again when they were not set). ``keep_given``: a setting the user gave is left as it is."""
    before = {key: spark.conf.get(key, None) for key in settings}
    changed = {k: v for k, v in settings.items() if not (keep_given and before[k] is not None)}
    for key, value in changed.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key in changed:
            was = before[key]
            if was is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, was)
