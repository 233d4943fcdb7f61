"""What a release remembers in its database to skip work the next time: coded public domains
and inputs whose ancestor columns passed the check against the domain.

**Coded domains** (``__inftda_domains``, one ``__inftda_domain_<key>`` table per entry). Sorting
and coding a large public domain costs more than the rest of a release on small inputs, and the
domain rarely changes, so a chain's coded paths are kept in the database under a *content key*
(only those of a domain not stored in code order: one that is gets coded without a sort, faster
than its stored coding is read back, see :func:`.domain.build_chain`). The key
(:func:`domain_key`) is the number of rows of the domain as the release reads it (values cast to
the input's types) and two sums of 64-bit row hashes, hashed with the chain's columns and types.
Any changed, inserted or deleted row, a replaced table, another view definition or other types
give another key (a collision needs two different row multisets with equal row counts and equal
sums of both hashes), so a stale entry is never used; reordered rows keep the key, and give the
same coded domain. Computing the key is one hash aggregate over the domain, far cheaper than
the sort it saves. Domains below :data:`MIN_CACHED_PATHS` rows are coded every time (fast), so
small databases get no cache tables. When an entry is stored, older entries of the same domain
and chain are dropped, and only the :data:`KEEP_DOMAINS` newest entries are kept in all. A
domain read through views also keys on their definitions: another definition is another key
even where it reads the same rows (a fresh coding, never a stale one).

**Checked inputs** (``__inftda_checks``). Checking that every input row's ancestor columns agree
with the domain costs about one more GROUP BY of the input. With ``check_ancestors="cached"`` a
release remembers that an input *version* passed (with this hierarchy and domain), and the next
release of the same version skips the check. DuckDB exposes no version of a table's contents,
and hashing the contents costs as much as the check itself, so the version is a cheap
fingerprint (:func:`input_version`): the definitions of the views it reads (a changed one
changes it), and the catalog id (changed by ``CREATE OR REPLACE``) and row count (changed by
``INSERT``/``DELETE``) of every base table it reads. **It does not see an
``UPDATE`` that keeps the row count** (nor can DuckDB's storage metadata, cheaply or surely),
which is why ``"full"`` is the default and ``"cached"`` is for inputs changed only by
``INSERT``, ``DELETE`` or being replaced (the documentation says so). Inputs read from outside
the catalog
(files, Arrow tables, data frames) or given as relations have no fingerprint: they are checked
every time.

Neither cache holds anything private beyond what the working database already holds (coded
public domains; hashed fingerprints), and ``publish()`` copies neither. Both are written after
the release's own transaction committed, in a transaction of their own, and a failure to write
them (a read-only database, a concurrent writer) is ignored: the next release recomputes.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass

import duckdb
import numpy as np
import pyarrow as pa

from ...core.tree import ChainTree
from . import compile as _compile
from .catalog import Resolved
from .sql import arrow, ident, render, rows, run, scalar

__all__ = [
    "CHECKS_TABLE",
    "DOMAINS_TABLE",
    "KEEP_DOMAINS",
    "MIN_CACHED_PATHS",
    "CachedDomain",
    "DomainKey",
    "check_passed",
    "domain_key",
    "find_domain",
    "input_version",
    "remember",
    "view_definitions",
]

DOMAINS_TABLE = "__inftda_domains"
CHECKS_TABLE = "__inftda_checks"
#: domains with fewer rows are coded every time (milliseconds) and never stored
MIN_CACHED_PATHS = 50_000
#: coded domains kept in a database at most (the newest)
KEEP_DOMAINS = 8
#: changes whenever the coded form changes, so older entries are never read
_FORMAT = "inftda-domain-v1"


@dataclass(frozen=True)
class DomainKey:
    """A chain's domain as a release reads it: its content ``key``, its rows (repeats
    included) and where it came from (``source``: for replacing older entries)."""

    key: str
    rows: int
    source: str

    @property
    def cacheable(self) -> bool:
        return self.rows >= MIN_CACHED_PATHS

    @property
    def table(self) -> str:
        """The name of the table holding this domain's coded paths."""
        return f"__inftda_domain_{self.key[:24]}"


@dataclass(frozen=True)
class CachedDomain:
    """A coded domain found in the cache: its table (quoted), paths with codes, tree."""

    table_sql: str
    paths: pa.Table
    tree: ChainTree


def _digest(parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()


def domain_key(
    con: duckdb.DuckDBPyConnection,
    chain: Sequence[str],
    domain_sql: str,
    types: Sequence[str],
    source: str,
    definitions: Sequence[tuple[str, str]] = (),
) -> DomainKey:
    """The content key of a chain's domain (one hash aggregate; a value that does not convert
    to the input's type raises DuckDB's ConversionException, as the sorted read would), with
    the ``definitions`` of the views it is read through (:func:`view_definitions`)."""
    casts = ", ".join(f"CAST({ident(c)} AS {t})" for c, t in zip(chain, types, strict=True))
    n, h1, h2 = rows(con, render("cache.domain_key", casts=casts, domain=domain_sql))[0]
    views = [list(d) for d in definitions]
    key = _digest([_FORMAT, list(chain), list(types), int(n), str(h1), str(h2), views])
    return DomainKey(key, int(n), f"{source} as {', '.join(chain)}")


def _missing_table(exc: duckdb.Error) -> bool:
    return isinstance(exc, duckdb.CatalogException)


def find_domain(
    con: duckdb.DuckDBPyConnection, key: DomainKey, chain: Sequence[str]
) -> CachedDomain | None:
    """The coded domain stored under ``key``, or None (not stored, or not as expected)."""
    try:
        found = rows(con, render("cache.find_domain", table=ident(DOMAINS_TABLE)), {"key": key.key})
    except duckdb.CatalogException:
        return None
    if not found:
        return None
    table, n_paths, offsets = str(found[0][0]), int(found[0][1]), found[0][2]
    table_sql = ident(table)
    try:
        paths = arrow(con, render("cache.read_domain", domain=table_sql)).combine_chunks()
    except duckdb.CatalogException:
        return None
    depth_cols = [_compile.depth_code(d) for d in range(1, len(chain) + 1)]
    if paths.column_names != [*chain, *depth_cols] or paths.num_rows != n_paths:
        return None
    leaf = paths.column(depth_cols[-1]).to_numpy()
    if bool((leaf != np.arange(leaf.size)).any()):  # rows not in code order: not ours
        return None
    try:
        tree = _stored_tree(offsets, n_paths, len(chain))
    except (TypeError, ValueError):  # a damaged entry is recomputed, never trusted
        return None
    return CachedDomain(table_sql, paths, tree)


def _stored_tree(offsets: object, n_paths: int, depth: int) -> ChainTree:
    """The tree stored with a coded domain (its child offsets per depth), checked for shape:
    ``offsets[d][-1]`` is the number of depth-``d`` nodes, the next depth's offsets have one
    more entry than that, and the leaves are the paths."""
    if not isinstance(offsets, list) or len(offsets) != depth + 1:
        raise ValueError("not the offsets of this chain")
    arrays = [np.asarray(o, dtype=np.int64) for o in offsets]
    sizes = [1, *(int(o[-1]) for o in arrays[1:])]
    if arrays[0].tolist() != [0] or sizes[-1] != n_paths:
        raise ValueError("not the offsets of this chain")
    for d in range(1, depth + 1):
        off = arrays[d]
        if off.size != sizes[d - 1] + 1 or off[0] != 0 or bool((np.diff(off) <= 0).any()):
            raise ValueError("not the offsets of this chain")
    return ChainTree(sizes=tuple(sizes), child_offsets=tuple(arrays))


def input_version(
    con: duckdb.DuckDBPyConnection, source_sql: str, resolved: Resolved
) -> str | None:
    """A fingerprint of the input's version (see the module docstring), or None when the input
    has none (files, Arrow tables, data frames, relations)."""
    if resolved.ref is None or resolved.outside or not resolved.reads:
        return None
    wanted = {ref.folded for ref in resolved.reads}
    oids = sorted(
        (f"{d}.{s}.{t}".lower(), int(oid))
        for d, s, t, oid in rows(con, render("cache.table_versions"))
        if (str(d).lower(), str(s).lower(), str(t).lower()) in wanted
    )
    counts = rows(
        con,
        render(
            "cache.row_counts",
            counts=", ".join(f"(SELECT count(*) FROM {r.sql})" for r in resolved.reads),
        ),
    )[0]
    return _digest([source_sql, oids, [int(c) for c in counts], view_definitions(con, resolved)])


def view_definitions(con: duckdb.DuckDBPyConnection, resolved: Resolved) -> list[tuple[str, str]]:
    """The definitions of the views the input may read: the input itself if it is a view,
    then every view whose name occurs in the text of one already taken (a superset of those
    it reads; one too many only makes a version change more often)."""
    ref = resolved.ref
    if ref is None or "view" not in resolved.kind:
        return []
    views = {
        (str(d).lower(), str(s).lower(), str(n).lower()): str(sql)
        for d, s, n, sql in rows(con, render("cache.view_definitions"))
    }
    taken = {ref.folded} & views.keys()
    todo = list(taken)
    while todo:
        text = views[todo.pop()].lower()
        for key in views.keys() - taken:
            if key[2] in text:
                taken.add(key)
                todo.append(key)
    return sorted((".".join(key), views[key]) for key in taken)


def check_key(
    version: str, chains: Sequence[Sequence[str]], checked: Sequence[str], domains: Sequence[str]
) -> str:
    """The key under which a passed ancestor check is remembered."""
    return _digest([version, [list(c) for c in chains], list(checked), list(domains)])


def check_passed(con: duckdb.DuckDBPyConnection, key: str) -> bool:
    """Whether the ancestor check passed before under ``key``."""
    try:
        found = scalar(con, render("cache.find_check", table=ident(CHECKS_TABLE)), {"key": key})
    except duckdb.CatalogException:
        return False
    return bool(found)


def remember(
    con: duckdb.DuckDBPyConnection,
    domains: Sequence[tuple[DomainKey, str, ChainTree]],
    check: str | None,
) -> None:
    """Store coded domains (``(key, the registered Arrow table of its coded paths, its tree)``)
    and a passed check, in one transaction of their own; any failure is ignored (caching is
    optional)."""
    if not domains and check is None:
        return
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    try:
        run(con, "BEGIN TRANSACTION")
    except duckdb.Error:
        return
    try:
        for key, registered, tree in domains:
            run(con, render("cache.create_domains", table=ident(DOMAINS_TABLE)))
            stale = rows(
                con,
                render("cache.stale_domains", table=ident(DOMAINS_TABLE), keep=str(KEEP_DOMAINS)),
                {"key": key.key, "source": key.source},
            )
            for old_key, old_table in stale:
                run(con, _compile.drop_temp_table(str(old_table)))
                run(con, render("cache.drop_domain", table=ident(DOMAINS_TABLE)), {"key": old_key})
            run(con, _compile.drop_temp_table(key.table))
            run(
                con,
                render("cache.store_domain", target=ident(key.table), source=ident(registered)),
            )
            run(
                con,
                render("cache.add_domain", table=ident(DOMAINS_TABLE)),
                {
                    "key": key.key,
                    "table_name": key.table,
                    "source": key.source,
                    "paths": tree.sizes[-1],
                    "offsets": [o.tolist() for o in tree.child_offsets],
                    "created_at": now,
                },
            )
        if check is not None:
            run(con, render("cache.create_checks", table=ident(CHECKS_TABLE)))
            run(
                con,
                render("cache.add_check", table=ident(CHECKS_TABLE)),
                {"key": check, "checked_at": now},
            )
        run(con, "COMMIT")
    except duckdb.Error:
        with contextlib.suppress(duckdb.Error):
            run(con, "ROLLBACK")
