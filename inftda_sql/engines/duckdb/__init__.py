"""The DuckDB engine: a release's stages on a DuckDB connection.

Its rooms, in the order a release walks through them:

* ``catalog/``: the one resolution step: names (as DuckDB binds them), relations and mappings
  resolved into readable sources that know the base tables they read; outputs placed;
* ``domain.py``: one sorted fetch of each chain's public domain, coded in numpy;
* ``scan.py``: the one scan of the private input, its checks, the per-level true counts;
* ``write.py``: the budget checked again, the released table, its levels view and the ledger
  row, in one transaction;
* ``compile/`` and ``sql.py``: every SQL text (filled from the templates in ``sql/``) and the
  one identifier-quoting helper.

``engine.py`` (:class:`~.engine.DuckDBEngine`) strings them together behind
:class:`inftda_sql.engines.Engine`. Beside the release, ``functions.py``
(:func:`~.functions.register`) offers the building blocks themselves as SQL functions on a
connection (macros in ``sql/functions.sql``).
"""
