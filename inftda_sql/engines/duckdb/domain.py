"""Domain coding on DuckDB: a chain's public domain fetched once, coded in numpy, cached.

The domain is read as the input's types (``sql/domain_paths.sql``), fetched as Arrow, checked
(no NULL, no NaN, nested) and coded by :func:`~inftda_sql.core.tree.code_paths` (engine-free);
with a code column per depth added it is registered back as the chain's code table, which the
scan joins the input's leaves to (or, for integer leaves increasing in code order, codes them
without a join: :attr:`CodedChain.leaf_index`). A domain that is read already sorted (most
geography tables are stored in code order) is not sorted again, nor keyed, nor cached: coding
sorted paths costs less than reading a stored coding back. A large domain stored out of order
has its coded paths kept in the database (:mod:`.cache`) under a key of its contents, so the
next release reads them back instead of sorting and coding again. The SQL query that names an
offending value runs only when the domain is not nested. Nothing here reads the private data.

A domain whose columns are named otherwise than the chain's (one geography ``region, lad,
msoa`` for the chains ``o_region, o_lad, o_msoa`` and ``d_region, d_lad, d_msoa``) is read
through :func:`chain_source`: a projection that renames its columns, decided by
:func:`~inftda_sql.core.domains.match_columns` (explicit mapping, same names, or a common
prefix).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import duckdb
import pyarrow as pa

from ..._errors import DomainError, Part
from ...core.domains import match_columns
from ...core.leaf_index import LeafIndex
from ...core.tree import ChainTree, code_paths, paths_sorted
from ..checks import check_domain_paths, empty_domain, reversal_hint
from . import cache as _cache
from . import compile as _compile
from .cache import DomainKey, domain_key, find_domain
from .catalog import Source
from .sql import arrow, ident, render, rows

__all__ = ["CodedChain", "build_chain", "chain_source"]


def chain_source(
    src: Source,
    chain: Sequence[str],
    explicit: Mapping[str, str],
    *,
    role: str,
    shared: int = 1,
) -> Source:
    """The domain ``src`` read as the chain ``chain``: itself when it has the chain's columns,
    else a projection naming each domain column as the chain column it stands for (``region AS
    o_region``). ``shared``: how many chains read this domain (for the error's advice)."""
    what = f"{role} ({src.description}{f', one domain for {shared} chains' if shared > 1 else ''})"
    columns = match_columns(chain, list(src.names.values()), explicit, role=what, shared=shared)
    if all(source.lower() == name.lower() for name, source in columns.items()):
        return src
    read_as = ", ".join(f"{name}={source}" for name, source in columns.items())
    return Source(
        _compile.chain_columns(columns, src.sql),
        f"{src.description} read as {read_as}",
        {name.lower(): src.columns[source.lower()] for name, source in columns.items()},
        {name.lower(): name for name in columns},
        src.resolved,
    )


@dataclass(frozen=True)
class CodedChain:
    """A chain's coded public domain.

    ``paths`` holds the chain's columns (and, read from the cache, a code column per depth),
    one row per distinct path in code order (row ``i`` is the leaf of code ``i``);
    ``table_sql`` names (quoted) the code table the scan joins: the paths with a code column
    per depth (``__d1`` ...), registered by ``register`` before the first SQL that reads it (a
    release whose leaves are coded by :attr:`leaf_index` never makes it: three arrays as long
    as the domain); ``store`` is True when the coded paths should be kept in the cache after
    the release. ``content`` gives the domain's content key (:attr:`key`), computed on first
    use only: a domain read in code order is neither looked up nor stored.
    """

    tree: ChainTree
    paths: pa.Table
    table_sql: str
    content: Callable[[], DomainKey]
    store: bool = False
    register: Callable[[], None] = lambda: None

    @property
    def key(self) -> DomainKey:
        """The domain's content key (one hash aggregate over the domain, the first time)."""
        return self.content()

    @functools.cached_property
    def leaf_index(self) -> LeafIndex | None:
        """The leaves' codes as a function of their values, when they are integers increasing
        in code order (the scan then codes its cells without joining the code table)."""
        return LeafIndex.of(self.paths.column(self.tree_depth - 1))

    @property
    def tree_depth(self) -> int:
        """The number of levels of the chain (its columns)."""
        return len(self.tree.sizes) - 1


def _conversion_error(
    role: str, chain: Sequence[str], types: Sequence[str], exc: Exception
) -> DomainError:
    return DomainError(
        f"the {role} has values that do not convert to the input's column types "
        f"({', '.join(f'{c} {t}' for c, t in zip(chain, types, strict=True))}): {exc}"
    )


def build_chain(
    con: duckdb.DuckDBPyConnection,
    names: _compile.TempNames,
    index: int,
    chain: Sequence[str],
    domain_sql: str,
    types: Sequence[str],
    role: str,
    hierarchy: Sequence[Sequence[str]] | None = None,
    *,
    source: str | None = None,
    definitions: Callable[[], Sequence[tuple[str, str]]] = tuple,
    domains: Sequence[tuple[str, Sequence[str]]] = (),
    lazy: bool = False,
) -> CodedChain:
    """Validate and code one chain's domain, read from the cache when it is there; register the
    code table as ``names.codes(index)`` otherwise (``lazy``, for leaves that
    :attr:`CodedChain.leaf_index` codes: only when the caller calls
    :attr:`CodedChain.register`, which it must do before any SQL reads the code table).
    ``source`` describes the domain (for the cache's bookkeeping); None never uses the cache
    (a domain taken from the data). ``definitions``: those of the views the domain is read
    through (part of its cache key), asked only when the key is (a catalog read).

    A named domain is first read as it is stored: in code order already (most geography
    tables are), it is coded at once, without a sort and without the cache (coding sorted
    paths is cheaper than reading a stored coding back). Only a large domain that is not
    stored in code order is looked up in the cache under its content key, and stored there.

    ``hierarchy`` (every chain) lets a domain that is not nested because its chain was given
    fine to coarse suggest the hierarchy to type instead; ``domains`` (the domain SQL and
    column types of every chain, in the order of ``hierarchy``) lets that hint reverse every
    other chain given fine to coarse too, not only this one.
    """

    @functools.cache
    def content() -> DomainKey:
        if source is None:
            return DomainKey("", 0, "")
        try:
            return domain_key(con, chain, domain_sql, types, source, definitions())
        except duckdb.ConversionException as exc:
            raise _conversion_error(role, chain, types, exc) from exc

    casts = ", ".join(
        f"CAST({ident(c)} AS {t}) AS {ident(c)}" for c, t in zip(chain, types, strict=True)
    )
    store = False
    try:
        paths = None
        if source is not None:  # read as it is stored: sorted only if it is not sorted
            sql = render("cache.domain_paths_unsorted", casts=casts, domain=domain_sql)
            # kept in the chunks DuckDB fetched (combining them would copy every column into
            # new memory): the order check, the coding and the leaf index read them in place
            paths = arrow(con, sql)
            if paths.num_rows == 0:
                raise empty_domain(role, chain)
            if not paths_sorted(paths):
                if paths.num_rows >= _cache.MIN_CACHED_PATHS:
                    found = find_domain(con, content(), chain)
                    if found is not None:
                        return CodedChain(found.tree, found.paths, found.table_sql, content)
                    store = True
                paths = None
        if paths is None:
            paths = arrow(con, _compile.domain_paths(chain, domain_sql, types))
    except duckdb.ConversionException as exc:
        raise _conversion_error(role, chain, types, exc) from exc
    check_domain_paths(paths, role, chain)
    coded = code_paths(paths)
    if coded.tree is None:
        hint = _reversed_hint(con, coded.paths, chain, index, hierarchy or [chain], domains)
        _nesting_error(con, coded.paths, chain, coded.not_nested or 2, role, index, names, hint)
        raise AssertionError("unreachable")  # pragma: no cover
    codes_name = names.codes(index)

    @functools.cache
    def register() -> None:
        table = coded.paths
        for d, code in enumerate(coded.codes, start=1):
            table = table.append_column(_compile.depth_code(d), pa.array(code))
        # Registered, not copied: DuckDB joins the Arrow table in place for the rest of the
        # release (the caller unregisters it).
        con.register(codes_name, table)

    chain_coded = CodedChain(coded.tree, coded.paths, ident(codes_name), content, store, register)
    # made now unless the leaf index may spare it (a coding to store is read from the code
    # table after the release; leaves without an index are joined to it by the scan)
    if not lazy or store or chain_coded.leaf_index is None:
        register()
    return chain_coded


def _nesting_error(
    con: duckdb.DuckDBPyConnection,
    paths: pa.Table,
    chain: Sequence[str],
    depth: int,
    role: str,
    index: int,
    names: _compile.TempNames,
    hint: Sequence[Part] = (),
) -> None:
    arrow_name = f"{names.codes(index)}_nesting"
    con.register(arrow_name, paths)
    try:
        bad = rows(con, _compile.nesting_check(arrow_name, chain[depth - 2], chain[depth - 1]))
    finally:
        con.unregister(arrow_name)
    value, p1, p2 = bad[0] if bad else ("?", "?", "?")
    problem = (
        f"the {role} is not nested: {chain[depth - 1]}={value!r} is listed under "
        f"{chain[depth - 2]}={p1!r} and {chain[depth - 2]}={p2!r}; "
    )
    if hint:
        raise DomainError(problem, *hint, param="hierarchy")
    raise DomainError(
        problem,
        f"every value must have one parent (use codes unique across the whole domain, e.g. "
        f"prefix {chain[depth - 1]} with its {chain[depth - 2]})",
    )


def _reversed_hint(
    con: duckdb.DuckDBPyConnection,
    paths: pa.Table,
    chain: Sequence[str],
    index: int,
    hierarchy: Sequence[Sequence[str]],
    domains: Sequence[tuple[str, Sequence[str]]] = (),
) -> tuple[Part, ...]:
    """The fix of a chain given fine to coarse (:func:`..checks.reversal_hint`), reading the
    other chains' domains from ``domains`` (their SQL and column types)."""

    def read(j: int) -> pa.Table | None:
        if j >= len(domains):
            return None
        sql, types = domains[j]
        try:
            return arrow(con, _compile.domain_paths(hierarchy[j], sql, types))
        except duckdb.Error:  # only a hint: a domain that cannot be read says nothing
            return None

    chains = [list(c) for c in hierarchy]
    if index >= len(chains) or [c.lower() for c in chains[index]] != [c.lower() for c in chain]:
        chains, index = [list(chain)], 0
    return reversal_hint(paths, index, chains, read)
