"""Content fingerprints: what a release wrote, so that publish() ships it only while it is that.

The write stage (:func:`~inftda_sql.engines.duckdb.write.record_release`) takes the fingerprint
of every object it wrote, inside its transaction after writing them, and the ledger row keeps it
(``fingerprint``). :func:`~inftda_sql.publish` takes it again and refuses a release whose table
was replaced or edited (``CREATE OR REPLACE``, ``UPDATE``, ``INSERT``, ``DELETE``, ``ALTER``) or
whose view was replaced or dropped: the name would carry other content than the release's.

A table's digest is order-independent and computed in SQL over the table: the md5 of its
columns with their types, its number of rows, and the sum and xor of DuckDB's ``hash()`` of
every row's values. A view's is the md5 of its definition as DuckDB keeps it (normalized, without
the database's name, so a file attached under another name keeps its fingerprints). Both are
computed from released values and public parameters only, so the fingerprint is public: it is
not among the diagnostics and ``publish()`` ships it (taken again in the new file).

The stored text is JSON: ``{"method": ..., "objects": [{"name", "kind", "digest"}, ...]}``,
``name`` the object's key (``schema.name`` in the database holding the ledger, see
:meth:`~inftda_sql.engines.duckdb.catalog.TableRef.key`).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from dataclasses import dataclass

import duckdb

from ...core.names import split_name
from .catalog import TableRef, existing, home_database, lookup
from .sql import ident, render, scalar

__all__ = ["METHOD", "Change", "changes", "table_digest", "take"]

#: how the digests are computed; a fingerprint taken another way cannot be compared
METHOD = "duckdb-hash-md5/1"


@dataclass(frozen=True)
class Change:
    """An object of a release that is no longer what the release wrote: its ``name`` (as the
    ledger keys it), its ``kind`` then (``"table"``/``"view"``) and ``what`` happened to it."""

    name: str
    kind: str
    what: str


def _digest(con: duckdb.DuckDBPyConnection, ref: TableRef, kind: str) -> str:
    params = {"database": ref.database, "schema": ref.schema, "name": ref.name}
    if kind == "table":
        return str(scalar(con, render("fingerprint.table", table=ref.sql), params))
    return str(scalar(con, render("fingerprint.view"), params))


def take(con: duckdb.DuckDBPyConnection, refs: Sequence[TableRef]) -> str | None:
    """The fingerprint of the tables and views at ``refs`` as they are now (None without any);
    called inside the transaction that wrote them."""
    home = home_database(con)
    objects = []
    for ref in refs:
        kind = existing(con, ref)
        if kind is None:
            continue
        found = lookup(con, str(ref))  # the catalog's own spelling
        catalog_ref = ref if found is None else found[0]
        objects.append(
            {"name": ref.key(home), "kind": kind, "digest": _digest(con, catalog_ref, kind)}
        )
    if not objects:
        return None
    return json.dumps({"method": METHOD, "objects": objects})


def _find(con: duckdb.DuckDBPyConnection, key: str, home: str) -> tuple[TableRef, str] | None:
    """The object a ledger key names now (``schema.name`` lives in ``home``), or None."""
    with contextlib.suppress(ValueError, duckdb.Error):
        parts = split_name(key)
        if len(parts) == 2:
            parts = (home, *parts)
        if len(parts) == 3:
            return lookup(con, ".".join(ident(p) for p in parts))
    return None


def _objects(fingerprint: str) -> list[dict[str, str]]:
    stored = json.loads(fingerprint)
    if not isinstance(stored, dict) or stored.get("method") != METHOD:
        method = stored.get("method") if isinstance(stored, dict) else None
        raise ValueError(f"fingerprint method {method!r} is not {METHOD!r}")
    return [{k: str(v) for k, v in obj.items()} for obj in stored["objects"]]


def table_digest(fingerprint: str) -> str | None:
    """The digest of the (first) table a fingerprint covers: what a copy of it must match."""
    return next((o["digest"] for o in _objects(fingerprint) if o["kind"] == "table"), None)


def changes(
    con: duckdb.DuckDBPyConnection, fingerprint: str, *, table: TableRef | None = None
) -> list[Change]:
    """What is no longer as the fingerprint says: each object replaced, edited or dropped.
    ``table``: the table the caller will read as the release's (it must be the one the
    fingerprint names first, not another object found under its name, e.g. a temporary table;
    a release's other tables, such as its noisy measurements, follow it).

    Raises ValueError for a fingerprint this version cannot read or compare.
    """
    home = home_database(con)
    out = []
    objects = _objects(fingerprint)
    first = next((o["name"] for o in objects if o["kind"] == "table"), None)
    for obj in objects:
        name, kind = obj["name"], obj["kind"]
        found = _find(con, name, home)
        mine = kind == "table" and name == first and table is not None
        if mine and found is not None and table is not None and not found[0].same(table):
            out.append(Change(name, kind, f"is not what the name now denotes ({table})"))
            continue
        if found is None:
            out.append(Change(name, kind, "was dropped"))
        elif found[1] != kind:
            out.append(Change(name, kind, f"was replaced by a {found[1]}"))
        elif _digest(con, found[0], kind) != obj["digest"]:
            what = (
                "has other rows or columns than the release wrote (it was replaced or edited: "
                "CREATE OR REPLACE, UPDATE, INSERT, DELETE or ALTER)"
                if kind == "table"
                else "has another definition than the release wrote (it was replaced)"
            )
            out.append(Change(name, kind, what))
    return out
