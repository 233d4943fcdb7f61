"""The DuckDB engine: a release's stages on a DuckDB connection.

Its rooms, in the order a release walks through them:

* ``catalog.py``: names, relations and mappings resolved into readable sources;
* ``domain.py``: one sorted fetch of each chain's public domain, coded in numpy;
* ``scan.py``: the one scan of the private input, its checks, the per-level true counts;
* ``write.py``: the released table, its levels view and the ledger row in one transaction;
* ``compile.py`` and ``sql.py``: every SQL text (filled from the templates in ``sql/``) and the
  one identifier-quoting helper.

``engine.py`` (:class:`~.engine.DuckDBEngine`) strings them together behind
:class:`inftda_sql.engines.Engine`.
"""
