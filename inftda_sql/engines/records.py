"""The bookkeeping rows every engine writes: a release in the ledger, a stored budget.

Spelled once, here, as dataclass fields: the fields of :class:`ReleaseRecord` are the columns of
the ledger table ``inftda_releases`` and those of :class:`BudgetRecord` the columns of
``inftda_budgets``, each with its SQL type (DuckDB's spelling) in the field's metadata. An engine
derives its table schema from them (:mod:`inftda_sql.engines.duckdb.ledger`,
:mod:`inftda_sql.engines.spark.ledger`); nothing here touches a database.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DIAGNOSTICS_PREFIX", "BudgetRecord", "ReleaseRecord"]

#: keys of a release's ``details`` that describe the private input (never published): facts
#: about the input and the times of the stages and levels, which depend on the data
DIAGNOSTICS_PREFIX = "diagnostics"
#: keys of ``details.levels[]`` that older rows hold and that are not private (wall times)
_PRIVATE_LEVEL_KEYS = frozenset({"seconds"})


def _column(sql_type: str, comment: str = "", *, nullable_default: bool = False) -> Any:
    if nullable_default:  # a column added later: None unless given
        return field(default=None, metadata={"sql": sql_type, "comment": comment})
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
    guarantee: str = _column(
        "VARCHAR NOT NULL", "zCDP or pureDP (rho composes by adding) or approxDP"
    )
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
    base_tables: list[str] | None = _column(
        "VARCHAR[]",
        "the base tables read, charged: schema.table (NULL in files from before)",
        nullable_default=True,
    )
    fingerprint: str | None = _column(
        "VARCHAR",
        "JSON: digests of the released table and its view as written (public: from released "
        "values); publish() ships the release only while they hold (NULL in files from before)",
        nullable_default=True,
    )

    @classmethod
    def columns(cls) -> tuple[str, ...]:
        """The ledger's column names, in table order."""
        return tuple(f.name for f in dataclasses.fields(cls))

    def values(self) -> dict[str, Any]:
        """Column name -> value, as stored."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def public(self) -> ReleaseRecord:
        """This row without what describes the private input: the diagnostics in ``details``
        (facts about the input, times), and the per-level ``seconds`` that rows written before
        the times moved into the diagnostics still carry in ``details.levels``."""
        details = json.loads(self.details or "{}")
        kept = {k: v for k, v in details.items() if not k.startswith(DIAGNOSTICS_PREFIX)}
        if isinstance(kept.get("levels"), list):
            kept["levels"] = [
                {k: v for k, v in lv.items() if k not in _PRIVATE_LEVEL_KEYS}
                if isinstance(lv, dict)
                else lv
                for lv in kept["levels"]
            ]
        return dataclasses.replace(self, details=json.dumps(kept))


@dataclass(frozen=True)
class BudgetRecord:
    """One row of the budgets table: the total privacy budget allowed for an input."""

    input_table: str = _column("VARCHAR PRIMARY KEY", "a base table: schema.table")
    rho: float = _column("DOUBLE NOT NULL", "zCDP: releases compose by adding their rho")
    epsilon: float = _column("DOUBLE NOT NULL", "the same budget as (epsilon, delta)-DP")
    delta: float = _column("DOUBLE NOT NULL")
    conversion: str = _column("VARCHAR NOT NULL")
    set_at: dt.datetime = _column("TIMESTAMP NOT NULL", "UTC")

    def values(self) -> dict[str, Any]:
        """Column name -> value, as stored."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
