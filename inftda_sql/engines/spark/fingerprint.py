"""Content fingerprints on Spark: what a release wrote, recorded in its ledger row.

The same idea and JSON shape as :mod:`inftda_sql.engines.duckdb.fingerprint` (read that first),
in Spark's functions: a table's digest is the md5 of its columns with their types, its number
of rows, and the sum and xor of ``xxhash64`` of every row's values, aggregated by Spark over
the table as written; a view's is the md5 of its definition (``SHOW CREATE TABLE``). It is
taken after the output and view are written and before the ledger row is appended, so a later
``publish()`` on Spark can check that the table is still what the release wrote
(:func:`changes`). A release's output is not read back for it: the aggregates are observed by
the job that writes the table (:func:`observed`, :func:`written`). The method differs from
DuckDB's (another hash), and says so.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from .catalog import full_name, quote

__all__ = ["METHOD", "Change", "changes", "observed", "take", "written"]

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


def _columns(schema: T.StructType) -> str:
    return ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in schema.fields)


#: a row hash's sum is taken in three 64-bit sums of its top 22 bits (signed) and two 21-bit
#: parts, exact below 2**41 rows and far cheaper than a decimal sum (:func:`_total`)
_PARTS = (("top", 42, None), ("mid", 21, (1 << 21) - 1), ("low", 0, (1 << 21) - 1))


def _aggregates(frame: DataFrame) -> list[Column]:
    """A table digest's aggregates over ``frame``: rows, sum (in parts) and xor of every row's
    hash."""
    h = F.xxhash64(*[F.col(quote(c)) for c in frame.columns])
    parts = []
    for name, shift, mask in _PARTS:
        part = F.shiftright(h, shift) if shift else h
        parts.append(F.sum(part if mask is None else part.bitwiseAND(F.lit(mask))).alias(name))
    return [F.count(F.lit(1)).alias("n"), *parts, F.bit_xor(h).alias("xor")]


def _total(parts: Mapping[str, Any]) -> int:
    """The exact sum of the rows' hashes from the sums of its parts (:data:`_PARTS`)."""
    return sum(int(parts[name] or 0) << shift for name, shift, _ in _PARTS)


def _table_digest(columns: str, count: object, total: object, xor: object) -> str:
    return _md5(f"{columns}|{count or 0}|{total or 0}|{xor or 0}")


def _digest(spark: SparkSession, name: str, kind: str) -> str:
    if kind == "view":
        first = spark.sql(f"SHOW CREATE TABLE {name}").first()
        return _md5(str(first[0] if first else ""))
    df = spark.table(name)
    row = df.agg(*_aggregates(df)).first()
    found = row.asDict() if row else {}
    return _table_digest(_columns(df.schema), found.get("n"), _total(found), found.get("xor"))


def observed(frame: DataFrame) -> tuple[DataFrame, Observation]:
    """``frame`` with a table digest's aggregates observed: the action that writes it computes
    them in the same pass (no job reads the table back); :func:`written` makes the digest."""
    observation = Observation(f"inftda_fingerprint_{uuid.uuid4().hex}")
    return frame.observe(observation, *_aggregates(frame)), observation


def written(
    spark: SparkSession, name: str, frame: DataFrame, observation: Observation
) -> str | None:
    """The digest of table ``name`` that :func:`take` would compute by reading it back, from
    the aggregates ``observation`` collected while ``frame`` was written to it: the same rows,
    hashed by the same function of the same values. None (read it back) when the table's
    columns and types are not the frame's or the write reported no aggregates."""
    try:
        stored = spark.table(name).schema
    except AnalysisException:
        return None
    if _columns(stored) != _columns(frame.schema):
        return None
    jo = observation._jo
    if jo is None or not jo.future().isCompleted():
        return None
    metrics = observation.get
    return _table_digest(_columns(stored), metrics["n"], _total(metrics), metrics["xor"])


def take(
    spark: SparkSession, names: Sequence[str], known: Mapping[str, str] | None = None
) -> str | None:
    """The fingerprint of the tables and views ``names`` (SQL names) as they are now;
    ``known``: digests of some of them already computed as they were written (:func:`written`),
    which are not read back."""
    objects = []
    for name in names:
        kind = _kind(spark, name)
        if kind is None:
            continue
        key = full_name(spark, name) or name
        digest = (known or {}).get(name) if kind == "table" else None
        digest = digest or _digest(spark, name, kind)
        objects.append({"name": key, "kind": kind, "digest": digest})
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
