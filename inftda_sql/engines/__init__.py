"""Engines: the stages of a release that touch the data, behind one small interface.

A release is a pipeline (:func:`inftda_sql.release`): check the request, plan the accounting,
then, through an engine, resolve the inputs in the catalog and code the public domain,
scan the private input, hand the true counts of each level to the mechanism (engine-free numpy
code), and write the released table with its ledger row. Accounting, noise, IntOpt and the
mechanisms never see an engine; an engine never decides a noise scale.

``base.py`` holds the interface (:class:`~.base.Engine`) and what a scan returns
(:class:`~.base.Scan`); the first engine is DuckDB (:mod:`inftda_sql.engines.duckdb`).
"""
