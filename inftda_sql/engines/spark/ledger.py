"""The bookkeeping tables on Spark: ``inftda_releases`` and ``inftda_budgets`` in a catalog.

Their columns are the fields of :class:`~inftda_sql.engines.records.ReleaseRecord` and
:class:`~inftda_sql.engines.records.BudgetRecord` (spelled once), each SQL type mapped to
Spark's. They live in the database of the release's output (``catalog.database``), so a
release's row sits beside its table. A budget is stored under the input table's full name
(``catalog.database.table``) and charged with every release that read it, as on DuckDB; an
input given as a DataFrame cannot be charged and is refused while any budget is stored (or
overridden, recorded).

Spark has no transaction over two tables: a release writes its output first and appends its
ledger row only once the output is complete (:mod:`.write`); two releases into one database at
the same time may take the same ``release_id``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from ..._errors import Arg, BudgetError
from ...core.accounting import Budget, Guarantee, RhoZCDPBudget, budget_verdict
from ..records import BudgetRecord, ReleaseRecord

__all__ = [
    "BUDGET_TABLE",
    "LEDGER_TABLE",
    "append_release",
    "check_budget",
    "namespace_of",
    "read_budgets",
    "read_releases",
    "schema",
    "upsert_budget",
]

LEDGER_TABLE = "inftda_releases"
BUDGET_TABLE = "inftda_budgets"

_SPARK_TYPES = {
    "INTEGER": "int",
    "TIMESTAMP": "timestamp_ntz",
    "VARCHAR": "string",
    "DOUBLE": "double",
    "BOOLEAN": "boolean",
    "VARCHAR[]": "array<string>",
    "DOUBLE[]": "array<double>",
}


def schema(record: type[ReleaseRecord] | type[BudgetRecord]) -> str:
    """The Spark DDL schema of a bookkeeping table, from the record's fields."""
    out = []
    for f in dataclasses.fields(record):
        sql = f.metadata["sql"].replace(" PRIMARY KEY", "").replace(" NOT NULL", "")
        out.append(f"{f.name} {_SPARK_TYPES[sql]}")
    return ", ".join(out)


def namespace_of(spark: SparkSession, name: str) -> str:
    """The ``catalog.database`` a (possibly qualified) table name lives in."""
    from .catalog import quote

    parts = [p.strip("`") for p in _split(name)]
    if len(parts) >= 3:
        return ".".join(quote(p) for p in parts[:-1])
    if len(parts) == 2:
        return f"{quote(spark.catalog.currentCatalog())}.{quote(parts[0])}"
    return f"{quote(spark.catalog.currentCatalog())}.{quote(spark.catalog.currentDatabase())}"


def _split(name: str) -> list[str]:
    from ...core.names import split_name

    return list(split_name(name))


def _table(namespace: str, table: str) -> str:
    return f"{namespace}.{table}"


def _exists(spark: SparkSession, name: str) -> bool:
    return bool(spark.catalog.tableExists(name))


def read_releases(spark: SparkSession, namespace: str) -> list[ReleaseRecord]:
    """Every ledger row of ``namespace`` (``catalog.database``), in release order."""
    name = _table(namespace, LEDGER_TABLE)
    if not _exists(spark, name):
        return []
    rows = spark.table(name).orderBy("release_id").collect()
    return [ReleaseRecord(**row.asDict()) for row in rows]


def append_release(spark: SparkSession, namespace: str, record: ReleaseRecord) -> ReleaseRecord:
    """Append a release's row with the next ``release_id``; return it as written."""
    name = _table(namespace, LEDGER_TABLE)
    next_id = 1
    if _exists(spark, name):
        last = spark.table(name).agg(F.max("release_id")).first()
        next_id = int((last[0] if last else 0) or 0) + 1
    record = dataclasses.replace(record, release_id=next_id)
    row = spark.createDataFrame([tuple(record.values().values())], schema(ReleaseRecord))
    row.write.mode("append").saveAsTable(name)
    return record


def read_budgets(spark: SparkSession, namespace: str) -> list[BudgetRecord]:
    """Every stored budget of ``namespace``."""
    name = _table(namespace, BUDGET_TABLE)
    if not _exists(spark, name):
        return []
    return [BudgetRecord(**row.asDict()) for row in spark.table(name).collect()]


def upsert_budget(spark: SparkSession, namespace: str, record: BudgetRecord) -> None:
    """Store (or replace) the budget row of an input table."""
    kept = [b for b in read_budgets(spark, namespace) if b.input_table != record.input_table]
    rows = [tuple(b.values().values()) for b in [*kept, record]]
    df = spark.createDataFrame(rows, schema(BudgetRecord))
    df.write.mode("overwrite").saveAsTable(_table(namespace, BUDGET_TABLE))


def _as_budget(record: BudgetRecord) -> Budget:
    return RhoZCDPBudget(
        rho=record.rho, epsilon=record.epsilon, delta=record.delta, conversion=record.conversion
    )


def check_budget(
    spark: SparkSession,
    namespace: str,
    keys: Sequence[str],
    outside: str | None,
    requested: Budget,
    guarantee: str,
    *,
    override: bool,
) -> str | None:
    """Refuse a release that would exceed the budget stored for its input table (see
    :func:`~inftda_sql.core.accounting.budget_verdict`); None when it fits or has none, else
    the note an override records. ``outside`` describes an input that is no catalog table."""
    budgets = {b.input_table.lower(): b for b in read_budgets(spark, namespace)}
    if not budgets:
        return None
    notes = []
    if outside is not None:
        if not override:
            raise BudgetError(
                f"this database stores privacy budgets ({BUDGET_TABLE}), but the input is "
                f"{outside}, so what the release spends cannot be charged to a table; save it "
                "as a table and release it by name, or pass ",
                Arg("budget_override", True),
                " (recorded in the ledger)",
                param="budget_override",
            )
        notes.append(f"budget override: input is {outside}, not charged to a table")
    found = read_releases(spark, namespace)
    for key in keys:
        stored = budgets.get(key.lower())
        if stored is None:
            continue
        rho, n = _spent(found, key)
        note = budget_verdict(
            key, _as_budget(stored), rho, n, requested, guarantee, override=override
        )
        if note:
            notes.append(note)
    return "; ".join(notes) or None


def _spent(found: Sequence[ReleaseRecord], key: str) -> tuple[float, int]:
    rho, n = 0.0, 0
    for r in found:
        if key.lower() in (k.lower() for k in (r.base_tables or [])):
            n += 1
            charged = Guarantee(r.guarantee).charged_rho(r.rho)
            if charged is not None:
                rho += charged
    return rho, n
