"""What the ledger recorded of a release, for the evaluations: how to read the truth as the
release read it.

:func:`~inftda_sql.evaluate` and :func:`~inftda_sql.evaluate_count_of_counts` take from here
what the caller leaves out (the hierarchy and tree, the count column, a count-of-counts
release's group column) and refuse what contradicts the record: a count column other than the
one the release read from the same input, or a truth whose total is not the total the release
read (the input changed since, or is another table). NOT PRIVATE, like the evaluations: the
records read here include the owner-only diagnostics.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

import duckdb

from ._errors import Arg, InputDataError, SpecError
from .engines.duckdb.catalog import drop_temp, resolve_source
from .engines.duckdb.ledger import read_releases

__all__ = ["Recorded", "recorded_release", "truth_reading"]

#: the key of a ledger row's details that holds the owner-only diagnostics
_DIAGNOSTICS = "diagnostics (not private, for the data owner only)"


@dataclass(frozen=True)
class Recorded:
    """The ledger row of the latest release written to a table, as the evaluations need it.

    ``chains`` and ``tree`` are the release's hierarchy (None for a feature release);
    ``count_known`` is False for rows written before the count column was recorded (then
    ``count`` says nothing); ``total_read`` is the total the release read from its input, when
    recorded and comparable (no privacy unit: a bounded scan keeps fewer records than the
    truth holds); ``group`` the group column of a count-of-counts release.
    """

    release_id: int
    kind: str
    chains: list[list[str]] | None
    tree: str | None
    count: str | None
    count_known: bool
    base_tables: tuple[str, ...]
    total_read: int | None
    group: str | None

    @property
    def hierarchy(self) -> list[str] | list[list[str]] | None:
        """The hierarchy as ``release(hierarchy=...)`` takes it."""
        if self.chains is None:
            return None
        return self.chains[0] if len(self.chains) == 1 else self.chains

    def reads(self, con: duckdb.DuckDBPyConnection, truth: object) -> bool:
        """Whether ``truth`` reads exactly the base tables (or files) the release read, as the
        catalog resolves them (never by spelling)."""
        if not self.base_tables:
            return False
        src = resolve_source(
            con, truth, role="true table", temp_name=f"__inftda_eval_{uuid.uuid4().hex[:12]}_t"
        )
        try:
            keys = {k.lower() for k in src.resolved.keys}
        finally:
            drop_temp(con, src)
        return keys == {k.lower() for k in self.base_tables}

    def count_for(self, count: str | None) -> str | None:
        """The count column to read the release's own input with: the recorded one; ``count``
        if given must be it."""
        if not self.count_known:
            return count
        recorded = self.count
        if count is None:
            return recorded
        if recorded is None:
            raise SpecError(
                f"release #{self.release_id} read this input one row per record (no count "
                "column), but ",
                Arg("count", count),
                " would read it otherwise and compare other numbers: leave out ",
                Arg("count"),
                param="count",
            )
        if recorded.lower() != count.lower():
            raise SpecError(
                f"release #{self.release_id} read this input with count column {recorded!r}, but ",
                Arg("count", count),
                " would read it otherwise and compare other numbers: pass ",
                Arg("count", recorded),
                " or leave it out (the ledger's is used)",
                param="count",
            )
        return count

    def check_total(self, truth_total: float | int, count: str | None) -> None:
        """Refuse a truth whose total is not the total the release read (when recorded)."""
        if self.total_read is None or int(truth_total) == self.total_read:
            return
        how = f"the sum of {count!r}" if count else "its number of rows"
        raise InputDataError(
            f"the true table's total ({how}) is not the total release #{self.release_id} read "
            "from its input: the input changed since the release, or this is another table, or "
            "it is read otherwise. Evaluate against the release's input as it was read"
            + (" (with the count column the release used)" if self.count else ""),
            param="truth",
        )


def truth_reading(
    con: duckdb.DuckDBPyConnection, truth: object, released: object, count: str | None
) -> tuple[str | None, Recorded | None]:
    """How to read ``truth`` to compare it with ``released``: the count column, and the record
    to check its total against (None when ``truth`` is not the recorded release's input, or
    ``released`` is no recorded release: then ``count`` as given)."""
    recorded = recorded_release(con, released)
    if recorded is None or not recorded.reads(con, truth):
        return count, None
    return recorded.count_for(count), recorded


def recorded_release(con: duckdb.DuckDBPyConnection, released: object) -> Recorded | None:
    """The record of the latest release written to the table ``released`` (a name), or None."""
    if not isinstance(released, str):
        return None
    found = read_releases(con, output=released, latest=True)
    if not found:
        return None
    row = found[0]
    details: dict[str, Any] = json.loads(row.details or "{}")
    shape = json.loads(row.hierarchy or "{}")
    total = details.get(_DIAGNOSTICS, {}).get("total_read")
    params = details.get("mechanism_params") or {}
    return Recorded(
        release_id=row.release_id,
        kind=str(details.get("kind", "features" if "chains" not in shape else "hierarchy")),
        chains=shape.get("chains"),
        tree=row.tree if "chains" in shape else None,
        count=details.get("count"),
        count_known="count" in details,
        base_tables=tuple(row.base_tables or ()),
        total_read=int(total) if total is not None and row.privacy_unit is None else None,
        group=params.get("group") if isinstance(params, dict) else None,
    )
