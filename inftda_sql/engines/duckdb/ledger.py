"""The bookkeeping tables of a database: the ledger of releases and the stored budgets.

Both are spelled once, here: the fields of :class:`ReleaseRecord` (one row of
``inftda_releases`` per release: what was published and what it cost) and of
:class:`BudgetRecord` (one row of ``inftda_budgets`` per input: the total a data owner allows)
are the tables' columns, each with its SQL type in the field's metadata. Everything that writes
or reads them (the write stage, budgets, ``publish()``, the CLI) goes through the functions
below. The statements are in ``sql/ledger.sql``.

A database written by an older version of this package has fewer columns; :func:`ensure_tables`
adds the missing ones (NULL in old rows), so old files keep working.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb

from ...core.accounting import Budget, budget_verdict
from .catalog import object_kind
from .compile import describe_table
from .sql import ident, render, rows, run, scalar

__all__ = [
    "BUDGET_TABLE",
    "DIAGNOSTICS_PREFIX",
    "LEDGER_TABLE",
    "LIBRARY_TABLES",
    "BudgetRecord",
    "ReleaseRecord",
    "budget_record",
    "check_budget",
    "ensure_tables",
    "insert_release",
    "next_release_id",
    "read_budgets",
    "read_releases",
    "spent",
    "stored_budget",
    "upsert_budget",
]

LEDGER_TABLE = "inftda_releases"
BUDGET_TABLE = "inftda_budgets"
#: the tables this package owns in a database
LIBRARY_TABLES = (LEDGER_TABLE, BUDGET_TABLE)
#: keys of a release's ``details`` that describe the private input (never published)
DIAGNOSTICS_PREFIX = "diagnostics"


def _column(sql_type: str, comment: str = "") -> Any:
    return field(metadata={"sql": sql_type, "comment": comment})


@dataclass(frozen=True)
class ReleaseRecord:
    """One row of the ledger: a release, what it published and what it cost."""

    release_id: int = _column("INTEGER PRIMARY KEY")
    created_at: dt.datetime = _column("TIMESTAMP NOT NULL", "UTC")
    input_table: str = _column("VARCHAR NOT NULL")
    output_table: str = _column("VARCHAR NOT NULL")
    hierarchy: str = _column("VARCHAR NOT NULL", "JSON: chains and tree")
    tree: str = _column("VARCHAR NOT NULL")
    domain_source: str = _column("VARCHAR NOT NULL")
    mechanism: str = _column("VARCHAR NOT NULL")
    guarantee: str = _column("VARCHAR NOT NULL", "zCDP (rho composes by adding) or approxDP")
    privacy: str = _column("VARCHAR NOT NULL", "bounded or unbounded")
    rho: float | None = _column("DOUBLE", "NULL for an (epsilon, delta)-DP mechanism")
    epsilon: float = _column("DOUBLE NOT NULL")
    delta: float = _column("DOUBLE NOT NULL")
    conversion: str = _column("VARCHAR NOT NULL")
    budget_given: str = _column("VARCHAR NOT NULL")
    contribution: int = _column("INTEGER NOT NULL")
    distinct_records: bool = _column("BOOLEAN NOT NULL")
    privacy_unit: str | None = _column(
        "VARCHAR",
        "the unit column whose records were bounded to contribution (enforced); "
        "NULL: one record per unit assumed, not enforced",
    )
    level_names: list[str] = _column("VARCHAR[] NOT NULL")
    level_sensitivity: list[float] = _column("DOUBLE[] NOT NULL")
    level_rho: list[float] = _column("DOUBLE[] NOT NULL")
    level_sigma: list[float] = _column("DOUBLE[] NOT NULL")
    seeded: bool = _column("BOOLEAN NOT NULL")
    non_private: list[str] = _column("VARCHAR[] NOT NULL")
    library_version: str = _column("VARCHAR NOT NULL")
    details: str = _column("VARCHAR NOT NULL", "JSON: levels, view, parameters, diagnostics")

    @classmethod
    def columns(cls) -> tuple[str, ...]:
        """The ledger's column names, in table order."""
        return tuple(f.name for f in dataclasses.fields(cls))

    def values(self) -> dict[str, Any]:
        """Column name -> value, as stored."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def public(self) -> ReleaseRecord:
        """This row without what describes the private input (the diagnostics in ``details``)."""
        details = json.loads(self.details or "{}")
        kept = {k: v for k, v in details.items() if not k.startswith(DIAGNOSTICS_PREFIX)}
        return dataclasses.replace(self, details=json.dumps(kept))


@dataclass(frozen=True)
class BudgetRecord:
    """One row of the budgets table: the total privacy budget allowed for an input."""

    input_table: str = _column("VARCHAR PRIMARY KEY")
    rho: float = _column("DOUBLE NOT NULL", "zCDP: releases compose by adding their rho")
    epsilon: float = _column("DOUBLE NOT NULL", "the same budget as (epsilon, delta)-DP")
    delta: float = _column("DOUBLE NOT NULL")
    conversion: str = _column("VARCHAR NOT NULL")
    set_at: dt.datetime = _column("TIMESTAMP NOT NULL", "UTC")

    def values(self) -> dict[str, Any]:
        """Column name -> value, as stored."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


_TABLES: dict[str, type[ReleaseRecord] | type[BudgetRecord]] = {
    LEDGER_TABLE: ReleaseRecord,
    BUDGET_TABLE: BudgetRecord,
}


def _definitions(fields: Sequence[dataclasses.Field[Any]]) -> str:
    """Column definitions of a CREATE TABLE, one per line, with their comments."""
    lines = []
    for i, f in enumerate(fields):
        comma = "," if i < len(fields) - 1 else ""
        comment = f"  -- {f.metadata['comment']}" if f.metadata["comment"] else ""
        lines.append(f"    {ident(f.name)} {f.metadata['sql']}{comma}{comment}")
    return "\n".join(lines)


def ensure_tables(con: duckdb.DuckDBPyConnection, *tables: str) -> None:
    """Create the bookkeeping ``tables`` (all by default) if missing; add missing columns."""
    for table in tables or LIBRARY_TABLES:
        fields = dataclasses.fields(_TABLES[table])
        if object_kind(con, table) is None:
            columns = _definitions(fields)
            run(con, render("ledger.create", table=ident(table), columns=columns))
            continue
        present = _present_columns(con, table)
        for f in fields:
            if f.name not in present:  # an older file: the column is nullable here
                sql_type = f.metadata["sql"].replace(" NOT NULL", "")
                column = f"{ident(f.name)} {sql_type}"
                run(con, render("ledger.add_column", table=ident(table), column=column))


def _present_columns(con: duckdb.DuckDBPyConnection, table: str) -> set[str]:
    return {r[0].lower() for r in rows(con, describe_table(table))}


def _insert(
    con: duckdb.DuckDBPyConnection, table: str, values: Mapping[str, Any], *, replace: bool
) -> None:
    names = ", ".join(ident(n) for n in values)
    params = ", ".join(f"${n}" for n in values)
    statement = "ledger.upsert" if replace else "ledger.insert"
    run(con, render(statement, table=ident(table), names=names, params=params), values)


def next_release_id(con: duckdb.DuckDBPyConnection) -> int:
    """The id the next release gets (the ledger table must exist)."""
    return int(scalar(con, render("ledger.next_release_id", table=ident(LEDGER_TABLE))))


def insert_release(con: duckdb.DuckDBPyConnection, record: ReleaseRecord) -> None:
    """Insert a release's row into the ledger (inside the caller's transaction)."""
    ensure_tables(con, LEDGER_TABLE)
    _insert(con, LEDGER_TABLE, record.values(), replace=False)


def upsert_budget(con: duckdb.DuckDBPyConnection, record: BudgetRecord) -> None:
    """Store (or replace) the budget row of an input."""
    ensure_tables(con, BUDGET_TABLE)
    _insert(con, BUDGET_TABLE, record.values(), replace=True)


def _select(
    con: duckdb.DuckDBPyConnection,
    table: str,
    columns: Sequence[str],
    where: str = "true",
    params: Mapping[str, Any] | None = None,
    order: str = "1",
) -> list[dict[str, Any]]:
    """Rows of a bookkeeping table as dicts; columns an older file lacks come back as None."""
    if object_kind(con, table) is None:
        return []
    present = _present_columns(con, table)
    exprs = ", ".join(ident(c) if c in present else f"NULL AS {ident(c)}" for c in columns)
    sql = render("ledger.select", names=exprs, table=ident(table), where=where, order=order)
    return [dict(zip(columns, r, strict=True)) for r in rows(con, sql, params)]


def read_releases(
    con: duckdb.DuckDBPyConnection, *, output: str | None = None, latest: bool = False
) -> list[ReleaseRecord]:
    """Ledger rows in release order (``output``: only releases written to that table;
    ``latest``: only the newest of them)."""
    where, params = "true", None
    if output is not None:
        where, params = "lower(output_table) = lower($output)", {"output": output}
    found = _select(
        con,
        LEDGER_TABLE,
        ReleaseRecord.columns(),
        where,
        params,
        order="release_id DESC" if latest else "release_id",
    )
    records = [ReleaseRecord(**r) for r in found]
    return records[:1] if latest else records


def read_budgets(con: duckdb.DuckDBPyConnection) -> list[BudgetRecord]:
    """Every stored budget."""
    names = tuple(f.name for f in dataclasses.fields(BudgetRecord))
    return [BudgetRecord(**r) for r in _select(con, BUDGET_TABLE, names)]


def budget_record(con: duckdb.DuckDBPyConnection, table: str) -> BudgetRecord | None:
    """The stored budget row of input ``table`` (any case), or None."""
    names = tuple(f.name for f in dataclasses.fields(BudgetRecord))
    found = _select(
        con, BUDGET_TABLE, names, "lower(input_table) = lower($input)", {"input": table}
    )
    return BudgetRecord(**found[0]) if found else None


def spent(con: duckdb.DuckDBPyConnection, table: str) -> tuple[float, int, int]:
    """What the releases of input ``table`` spent: (zCDP rho, releases, approxDP releases)."""
    if object_kind(con, LEDGER_TABLE) is None:
        return 0.0, 0, 0
    rho, n, approx = rows(con, render("ledger.spent", table=ident(LEDGER_TABLE)), {"input": table})[
        0
    ]
    return float(rho), int(n), int(approx)


def stored_budget(con: duckdb.DuckDBPyConnection, table: str) -> Budget | None:
    """The budget stored for input ``table`` (any case), or None."""
    found = budget_record(con, table)
    if found is None:
        return None
    return Budget(
        rho=found.rho,
        epsilon=found.epsilon,
        delta=found.delta,
        conversion=found.conversion,
        given="rho",
    )


def check_budget(
    con: duckdb.DuckDBPyConnection,
    table: str,
    requested: Budget,
    guarantee: str,
    *,
    override: bool,
) -> str | None:
    """Refuse a release of ``table`` that would exceed its stored budget (see
    :func:`~inftda_sql.core.accounting.budget_verdict`); None when no budget is stored."""
    budget = stored_budget(con, table)
    if budget is None:
        return None
    spent_rho, n_releases, _ = spent(con, table)
    return budget_verdict(
        table, budget, spent_rho, n_releases, requested, guarantee, override=override
    )
