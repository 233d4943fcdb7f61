"""The bookkeeping tables of a database: the ledger of releases and the stored budgets.

Both are spelled once, in :mod:`inftda_sql.engines.records` (engine-neutral): the fields of
:class:`ReleaseRecord` (one row of
``inftda_releases`` per release: what was published and what it cost) and of
:class:`BudgetRecord` (one row of ``inftda_budgets`` per input: the total a data owner allows)
are the tables' columns, each with its SQL type in the field's metadata. Everything that writes
or reads them in DuckDB (the write stage, budgets, ``publish()``, the CLI) goes through the
functions below. The statements are in ``sql/ledger.sql``.

A database written by an older version of this package has fewer columns; :func:`ensure_tables`
adds the missing ones (NULL in old rows), so old files keep working. (An old row has no
``fingerprint``, so ``publish()`` refuses it: it cannot tell whether the table was edited since.)

**Budgets are kept per base table.** A release is charged to every base table it reads, as
resolved in the catalog (:mod:`.catalog`: through views, relations and subqueries), and the
ledger records them in ``base_tables`` by their key (``schema.table`` for a table of the
database holding the ledger, ``database.schema.table`` for another attached one). A budget is
stored under the same key. Rows from before ``base_tables`` existed (and budgets stored under
the spelling a user typed) are resolved through the catalog when they are read.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import duckdb

from ..._errors import Arg, BudgetError, Func, SpecError
from ..._frames import is_frame_label
from ...core.accounting import Budget, Guarantee, RhoZCDPBudget, budget_verdict
from ...core.names import key_identity
from ..records import (
    BUDGET_TABLE,
    DIAGNOSTICS_PREFIX,
    LEDGER_TABLE,
    LIBRARY_TABLES,
    BudgetRecord,
    ReleaseRecord,
    is_library_name,
)
from .catalog import (
    Resolved,
    active,
    base_tables,
    home_database,
    is_file_key,
    lookup,
    object_kind,
)
from .compile import describe_table
from .sql import ident, render, rows, run, scalar

__all__ = [
    "BUDGET_TABLE",
    "DIAGNOSTICS_PREFIX",
    "LEDGER_TABLE",
    "LIBRARY_TABLES",
    "BudgetRecord",
    "Charge",
    "ReleaseRecord",
    "budget_record",
    "charges",
    "check_budget",
    "delete_budgets",
    "ensure_tables",
    "insert_release",
    "is_library_name",
    "legacy_keys",
    "next_release_id",
    "read_budgets",
    "read_releases",
    "spent",
    "stored_budget",
    "stored_budgets",
    "upsert_budget",
]

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
    def read() -> set[str]:
        return {r[0].lower() for r in rows(con, describe_table(table))}

    memo = active(con)  # inside a release: read once while the catalog stays as it is
    if memo is None:
        return read()
    return set(memo.derived(f"columns of {table}", read, about=table))


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


def delete_budgets(con: duckdb.DuckDBPyConnection, spellings: Sequence[str]) -> None:
    """Remove the budget rows stored under these exact spellings."""
    for spelling in spellings:
        run(con, render("ledger.delete_budget", table=ident(BUDGET_TABLE)), {"input": spelling})


def legacy_keys(con: duckdb.DuckDBPyConnection, spelling: str, home: str) -> tuple[str, ...]:
    """The base-table keys an input named ``spelling`` in an older row stands for, resolved in
    the catalog now; the spelling itself when it names nothing (a relation, a dropped table)
    or is a file's absolute path (a file is its own key)."""
    if is_file_key(spelling):
        return (spelling,)
    try:
        found = lookup(con, spelling)
    except SpecError:  # an unparsable old spelling such as '<relation>'
        found = None
    if found is None:
        return (spelling,)
    ref, kind = found
    if kind == "table":
        return (ref.key(home),)
    reads, _ = base_tables(con, ref.sql)
    return tuple(r.key(home) for r in reads) or (spelling,)


def stored_budgets(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[str, BudgetRecord]]:
    """Every stored budget by the lower-case key of its base table: (key, row). Rows stored
    under an older spelling are resolved; of two rows for one table the newest holds."""
    home = home_database(con)
    out: dict[str, tuple[str, BudgetRecord]] = {}
    for record in sorted(read_budgets(con), key=lambda r: r.set_at):
        for key in legacy_keys(con, record.input_table, home):
            out[key.lower()] = (key, record)
    return out


def budget_record(con: duckdb.DuckDBPyConnection, table: str) -> BudgetRecord | None:
    """The stored budget row of base table ``table`` (a key or any name that resolves to one
    base table), or None."""
    keys = legacy_keys(con, table, home_database(con))
    found = stored_budgets(con)
    for key in keys:
        if key.lower() in found:
            return found[key.lower()][1]
    return None


@dataclass(frozen=True)
class Charge:
    """What one recorded release charged: the base-table keys, rho (None for an
    (epsilon, delta)-DP release) and its guarantee."""

    keys: tuple[str, ...]
    rho: float | None
    guarantee: str
    input_table: str

    @property
    def charged_rho(self) -> float | None:
        """The rho charged to stored budgets, or None (an (epsilon, delta)-DP release)."""
        return Guarantee(self.guarantee).charged_rho(self.rho)

    @functools.cached_property
    def identities(self) -> frozenset[Hashable]:
        """What its keys stand for (:func:`~inftda_sql.core.names.key_identity`: a file under
        any of its names), computed once however many budgets are checked against it."""
        return frozenset(key_identity(k) for k in self.keys)


def charges(con: duckdb.DuckDBPyConnection) -> list[Charge]:
    """Every recorded release's charge; older rows are resolved through the catalog."""
    home = home_database(con)
    columns = ("input_table", "base_tables", "rho", "guarantee")
    out = []
    for r in _select(con, LEDGER_TABLE, columns, order="release_id"):
        keys = r["base_tables"]
        if keys is None:
            keys = legacy_keys(con, r["input_table"], home)
        out.append(Charge(tuple(keys), r["rho"], r["guarantee"], r["input_table"]))
    return out


def spent(con: duckdb.DuckDBPyConnection, table: str) -> tuple[float, int, int]:
    """What the releases charged to base table ``table`` (a key) spent: (zCDP rho, releases,
    approxDP releases)."""
    return _spent(charges(con), table)


def _spent(found: Sequence[Charge], key: str) -> tuple[float, int, int]:
    """What the releases ``found`` charged to ``key``: under any of its names (a file's hard
    links too, :func:`~inftda_sql.core.names.key_identity`)."""
    rho, n, approx = 0.0, 0, 0
    target = key_identity(key)
    for charge in found:
        if target in charge.identities:
            n += 1
            charged = charge.charged_rho
            if charged is not None:
                rho += charged
            else:
                approx += 1
    return rho, n, approx


def _as_budget(record: BudgetRecord) -> Budget:
    return RhoZCDPBudget(
        rho=record.rho, epsilon=record.epsilon, delta=record.delta, conversion=record.conversion
    )


def stored_budget(con: duckdb.DuckDBPyConnection, table: str) -> Budget | None:
    """The budget stored for base table ``table`` (see :func:`budget_record`), or None."""
    found = budget_record(con, table)
    return None if found is None else _as_budget(found)


def check_budget(
    con: duckdb.DuckDBPyConnection,
    source: Resolved,
    requested: Budget,
    guarantee: str,
    *,
    override: bool,
) -> str | None:
    """Refuse a release that would exceed the budget of any base table it reads (see
    :func:`~inftda_sql.core.accounting.budget_verdict`); None when every one fits or has no
    budget, else the note an override records.

    While any budget is stored, an input that reads data the catalog cannot name (an Arrow
    table, a data frame, a file read by a computed path) cannot be charged and is refused (or
    overridden, recorded). A file is charged to its path, whether named as the input or read
    through a view or relation (:attr:`~.catalog.Resolved.named_in_full`).
    """
    budgets = stored_budgets(con)
    if not budgets:
        return None
    notes = []
    if not source.named_in_full:
        what = ", ".join(source.outside)
        frame = is_frame_label(source.kind)  # a data frame, read where it lies
        article = "an" if source.kind[:1].lower() in "aeiou" else "a"
        if not override:
            if frame:
                raise BudgetError(
                    f"this database stores privacy budgets ({BUDGET_TABLE}), but the input is "
                    f"{article} {source.kind}, not a table of this database, so what the release "
                    "spends cannot be charged to a budget (and the frame may hold rows of a table "
                    "that has one); load it into a table (CREATE TABLE t AS SELECT * FROM df), "
                    "give that table a budget with ",
                    Func("set_budget", command="budget"),
                    " if it needs one, and release it by name; or pass ",
                    Arg("budget_override", True),
                    " (recorded in the ledger)",
                    param="budget_override",
                )
            raise BudgetError(
                f"this database stores privacy budgets ({BUDGET_TABLE}), but the input reads data "
                f"from outside its tables ({what}), so what the release spends cannot be charged "
                "to a table; release a parquet or CSV file by its path, or a view that names "
                "its path (charged to the file), or load the data into a table (CREATE TABLE t "
                "AS SELECT ...) and release it by name, or pass ",
                Arg("budget_override", True),
                " (recorded in the ledger)",
                param="budget_override",
            )
        if frame:
            what = f"{article} {source.kind}"
        notes.append(f"budget override: input reads {what}, not charged to a table")
    found = charges(con)
    by_identity = {key_identity(stored): (stored, row) for stored, row in budgets.values()}
    for key in source.keys:
        entry = by_identity.get(key_identity(key))
        if entry is None:
            continue
        spent_rho, n_releases, _ = _spent(found, key)
        note = budget_verdict(
            entry[0],
            _as_budget(entry[1]),
            spent_rho,
            n_releases,
            requested,
            guarantee,
            override=override,
        )
        if note:
            notes.append(note)
    return "; ".join(notes) or None
