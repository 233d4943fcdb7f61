"""The Spark engine: a release's stages on a SparkSession (the extra ``inftda-sql[spark]``).

Its rooms, in the order a release walks through them:

* ``catalog.py``: tables of the catalog, DataFrames and declared values as sources; column and
  type checks in Spark's type names;
* ``domain.py``: each chain's public domain collected once and coded on the driver (the same
  codes as DuckDB's), sent back as a small code table;
* ``scan.py``: one Spark SQL ``GROUP BY`` of the private input, its checks, the coded cells;
* ``topdown.py``: the TopDown pass in Spark's tasks: blocks of parents co-grouped with their
  true counts, noise and IntOpt vectorised per block (``applyInArrow``), the survivors of each
  level written once;
* ``write.py`` and ``ledger.py``: the released table and its levels view, then the ledger row
  (the ledger and budgets: a folder of small files that outlives sessions);
* ``workers.py``: before any data is read, one tiny job that checks the Python workers import this
  package at this version; a warning for a slow shuffle setting.

``engine.py`` (:class:`~.engine.SparkEngine`) strings them together behind
:class:`inftda_sql.engines.Engine`; :func:`inftda_sql.spark.release` is the entry point.
"""
