"""Content fingerprints on Spark: what a release wrote, recorded in its ledger row.

The same idea and JSON shape as :mod:`inftda_sql.engines.duckdb.fingerprint` (read that first),
in Spark's functions: a table's digest is the md5 of its columns with their types, its number
of rows, and the sum and xor of ``xxhash64`` of every row's values, aggregated by Spark over
the table as written; a view's is the md5 of its definition (``SHOW CREATE TABLE``). It is
taken after the output and view are written and before the ledger row is appended, so a later
``publish()`` on Spark can check that the table is still what the release wrote
(:func:`changes`). The method differs from DuckDB's (another hash), and says so.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from .catalog import full_name, quote

__all__ = ["METHOD", "Change", "changes", "take"]

#: how the digests are computed; a fingerprint taken another way cannot be compared
METHOD = "spark-xxhash64-md5/1"


@dataclass(frozen=True)
class Change:
    """An object of a release that is no longer what the release wrote."""

    name: str
    kind: str
    what: str


def _md5(text: str) -> str:
    return hashlib.md5(text.encode("utf-8"), usedforsecurity=False).hexdigest()


def _kind(spark: SparkSession, name: str) -> str | None:
    try:
        table = spark.catalog.getTable(name)
    except AnalysisException:
        return None
    return "view" if str(table.tableType).upper() in ("VIEW", "TEMPORARY") else "table"


def _digest(spark: SparkSession, name: str, kind: str) -> str:
    if kind == "view":
        first = spark.sql(f"SHOW CREATE TABLE {name}").first()
        return _md5(str(first[0] if first else ""))
    df = spark.table(name)
    columns = ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in df.schema.fields)
    h = F.xxhash64(*[F.col(quote(c)) for c in df.columns])
    row = df.agg(
        F.count(F.lit(1)),
        F.sum(h.cast("decimal(38,0)")),  # no overflow below 10**19 rows
        F.bit_xor(h),
    ).first()
    count, total, xor = (row[0], row[1], row[2]) if row else (0, None, None)
    return _md5(f"{columns}|{count}|{total or 0}|{xor or 0}")


def take(spark: SparkSession, names: Sequence[str]) -> str | None:
    """The fingerprint of the tables and views ``names`` (SQL names) as they are now."""
    objects = []
    for name in names:
        kind = _kind(spark, name)
        if kind is None:
            continue
        key = full_name(spark, name) or name
        objects.append({"name": key, "kind": kind, "digest": _digest(spark, name, kind)})
    return json.dumps({"method": METHOD, "objects": objects}) if objects else None


def changes(spark: SparkSession, fingerprint: str) -> list[Change]:
    """What is no longer as the fingerprint says (replaced, edited or dropped).

    Raises ValueError for a fingerprint this version cannot compare.
    """
    stored = json.loads(fingerprint)
    if not isinstance(stored, dict) or stored.get("method") != METHOD:
        raise ValueError(f"the fingerprint was not taken by {METHOD!r}")
    out = []
    for obj in stored["objects"]:
        name, kind = str(obj["name"]), str(obj["kind"])
        sql = ".".join(quote(p) for p in name.split("."))
        found = _kind(spark, sql)
        if found is None:
            out.append(Change(name, kind, "was dropped"))
        elif found != kind:
            out.append(Change(name, kind, f"was replaced by a {found}"))
        elif _digest(spark, sql, kind) != obj["digest"]:
            out.append(Change(name, kind, "is not what the release wrote"))
    return out
