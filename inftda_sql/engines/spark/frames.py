"""DataFrames made from Arrow tables held on the driver: a released table decoded there, the
cells a scan fetched, the domains' code tables.

Spark's ``createDataFrame`` of an Arrow table keeps a table under
``spark.sql.execution.arrow.localRelationThreshold`` (48 MB) as rows in the plan (a
``LocalRelation``): the driver converts every row, and every query that reads the table plans
the rows and ships them inside its tasks again (half a million rows: seconds; a census
domain's code table of 156,000 paths, about a second of planning per query). It also cuts the
table in batches of ``spark.sql.execution.arrow.maxRecordsPerBatch`` rows, one partition (and
one output file) each. :func:`from_driver` hands the table over as Arrow batches instead, in a
few parts.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from .workers import session_settings

__all__ = ["ROWS_PER_TASK", "from_driver"]

#: a table of the driver goes to Spark in parts of at most this many rows, each read by one
#: task (and written as one file of an output made from it)
ROWS_PER_TASK = 1 << 20
#: the session settings :func:`from_driver` sets for one call (and puts back)
_LOCAL_RELATION = "spark.sql.execution.arrow.localRelationThreshold"
_BATCH_ROWS = "spark.sql.execution.arrow.maxRecordsPerBatch"


def from_driver(spark: SparkSession, table: pa.Table) -> DataFrame:
    """An Arrow table of the driver as a DataFrame of ``ceil(rows / ROWS_PER_TASK)``
    partitions, one Arrow batch each, never rows in the plan. Both settings of the module's
    docstring are changed for this one call only (performance settings: whoever reads them
    meanwhile gets the same rows)."""
    rows = table.num_rows
    parts = max(1, -(-rows // ROWS_PER_TASK))
    settings = {_LOCAL_RELATION: "0", _BATCH_ROWS: str(max(1, -(-rows // parts)))}
    with session_settings(spark, settings):
        # one chunk per column: batches are cut at chunk boundaries too
        return spark.createDataFrame(table.combine_chunks())
