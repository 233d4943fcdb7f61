"""A drop-in for the ``inf-tda`` package: ``from inftda_sql.pandas import inf_tda``.

The published ``inf-tda`` 0.1 package releases a pandas Series of counts whose MultiIndex levels
are the hierarchy (coarse to fine) with ``inf_tda(data, budget, contribution, privacy_type,
distinct_tuples)``. :func:`inf_tda` takes the same arguments and returns the same thing, a
Series of the positive released cells indexed like ``data``, but runs on this package's engine
(an in-memory DuckDB), accounting (:mod:`inftda_sql.core.accounting`: the sensitivity table as
the paper defines it, the tight (epsilon, delta) conversion by default) and CSPRNG noise. The
documentation's "Migrating from inf-tda" (``docs/how-to/inf-tda.md``) lists every difference.

How the Series reaches the engine, without a Python loop: the index's levels are ranked in
sorted order and every path gets a mixed-radix key (one multiply-add per level); the key of a
path's first ``k`` levels, which names that prefix uniquely, is its level-``k`` column. Those
int64 columns are nested by construction (a value has one parent even when the index reuses a
label under two parents, as ``("A", "a"), ("B", "a")`` does) and go to DuckDB as zero-copy Arrow
arrays; the released leaf keys are mapped back to rows of the index with one binary search.
pandas is an optional dependency (``pip install 'inftda-sql[pandas]'``), imported when
:func:`inf_tda` is called.
"""

from __future__ import annotations

import itertools
import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import duckdb
import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ._errors import Arg, DomainError, InputDataError, SpecError
from ._frames import require
from ._release import Release, release
from .core.accounting import Budget
from .core.arrays import I64
from .engines.duckdb.connection import require_open

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["inf_tda", "release_series"]

#: the count column of the table handed to the engine
_VALUE = "value"
#: mixed-radix keys stay below this (int64, with room for the engine's own keys)
_KEY_LIMIT = 2**62


def inf_tda(
    data: pd.Series,
    budget: tuple[float, float] | Budget,
    contribution: int,
    privacy_type: str = "bounded",
    distinct_tuples: bool = True,
    *,
    domain: object = None,
    conversion: str = "tight",
    seed: int | None = None,
    con: duckdb.DuckDBPyConnection | None = None,
) -> pd.Series:
    """InfTDA on a pandas Series with a MultiIndex: the drop-in for ``inf-tda``'s ``inf_tda``.

    The MultiIndex levels are the hierarchy, coarse to fine, and the index is the PUBLIC
    domain: every path it lists is a cell of the release, zero-count ones included (noise goes
    to them too). Pass ``domain=`` instead to give the public paths separately; ``data`` may
    then hold only its non-zero cells.

    Args:
        data: counts (non-negative integers) indexed by a MultiIndex (or a plain Index: one
            level). Rows with the same path are added up.
        budget: ``(epsilon, delta)``, converted to rho-zCDP with ``conversion``; or a
            :class:`~inftda_sql.Budget` (e.g. ``Budget.from_args(rho=0.5)``).
        contribution: how many records (tuples) one person contributes at most (m).
        privacy_type: ``"bounded"`` (replace one person; the total is public and not noised)
            or ``"unbounded"`` (add or remove one; the total is noised too).
        distinct_tuples: a person's m records fall in m distinct leaf cells. The leaf level
            then has sensitivity sqrt(2m) (bounded) or sqrt(m) (unbounded); coarser levels,
            where distinct leaves can share a cell, keep sqrt(2)*m or m.
        domain: the public paths when ``data`` lacks some (its zeros): a MultiIndex, a
            DataFrame with one column per level (named as ``data``'s index levels, or in level
            order when those have no names) or a list of tuples. Every row of ``data`` must be
            one of its paths.
        conversion: ``"tight"`` (Canonne-Kamath-Steinke 2020, default) or ``"simple"``
            (Bun-Steinke 2016, what ``inf-tda`` uses: the same noise as the package at the
            same ``(epsilon, delta)``).
        seed: TESTS ONLY: reproducible, non-cryptographic noise (not a private release).
        con: run on this DuckDB connection instead of a new in-memory one; the release's
            ledger row is then recorded in its database (whose budget rules apply).

    Returns:
        A Series of int64: the released leaf cells whose count is positive (the others are
        released as 0 and left out, as ``inf-tda`` does), indexed like ``data`` (same level
        names), sorted by the index, named as ``data``. The released counts add up, at every
        level, to the released counts of their parents; without ``privacy_type="unbounded"``
        their total is the true total.

    Example:
        >>> import pandas as pd
        >>> from inftda_sql import Budget
        >>> from inftda_sql.pandas import inf_tda
        >>> index = pd.MultiIndex.from_tuples([("A", "a"), ("A", "b"), ("B", "a"), ("B", "b")])
        >>> data = pd.Series([10, 0, 30, 40], index=index)
        >>> inf_tda(data, Budget.from_args(rho=float("inf")), 1).to_dict()  # no noise
        {('A', 'a'): 10, ('B', 'a'): 30, ('B', 'b'): 40}
    """
    return release_series(
        data,
        budget,
        contribution,
        privacy_type,
        distinct_tuples,
        domain=domain,
        conversion=conversion,
        seed=seed,
        con=con,
    )[0]


def release_series(
    data: pd.Series,
    budget: tuple[float, float] | Budget,
    contribution: int,
    privacy_type: str = "bounded",
    distinct_tuples: bool = True,
    *,
    domain: object = None,
    conversion: str = "tight",
    seed: int | None = None,
    con: duckdb.DuckDBPyConnection | None = None,
) -> tuple[pd.Series, Release]:
    """:func:`inf_tda`, also returning the :class:`~inftda_sql.Release` (budget, per-level
    sensitivity, rho and sigma, cells noised and kept, timings: for the data owner)."""
    if con is not None:
        require_open(con, "inf_tda")
    pd = require("pandas", param=None)
    if not isinstance(data, pd.Series):
        raise SpecError(
            f"data must be a pandas Series of counts with a MultiIndex, got {type(data).__name__}",
            param="data",
        )
    budget_args = _budget_args(budget, conversion)
    privacy = _choice("privacy_type", privacy_type, ("bounded", "unbounded"))
    if not isinstance(distinct_tuples, (bool, np.bool_)):
        raise SpecError(
            f"distinct_tuples must be True or False, got {distinct_tuples!r}",
            param="distinct_tuples",
        )
    if (
        isinstance(contribution, bool)
        or not isinstance(contribution, numbers.Integral)
        or contribution < 1
    ):
        raise SpecError(
            f"contribution must be an integer >= 1 (records per person), got {contribution!r}",
            param="contribution",
        )
    index = _as_multiindex(pd, data.index)
    values = _counts(pd, data)
    if domain is None:
        public, rows = index, None
    else:
        public = _domain_index(pd, domain, index)
        rows = _positions(public, index)
    layout = _layout(public)
    # zero rows add nothing (the domain lists their cells); row numbers, not a boolean mask:
    # one pass finds them, then every column is a gather (a mask would be scanned per column)
    keep = np.flatnonzero(values)
    names = [f"level_{k + 1}" for k in range(len(layout.sizes))]
    input_table = pa.table(
        {
            **dict(zip(names, layout.columns(keep if rows is None else rows[keep]), strict=True)),
            _VALUE: values[keep],
        }
    )
    hierarchy = [names[start:end] for start, end in layout.groups]
    domains = layout.chain_tables(names)
    own = con is None
    connection = duckdb.connect() if con is None else con
    try:
        result = release(
            connection,
            input_table,
            hierarchy=hierarchy if len(hierarchy) > 1 else hierarchy[0],
            domain=domains if len(domains) > 1 else domains[0],
            tree="chain" if len(hierarchy) == 1 else "sequential",
            count=_VALUE,
            privacy=privacy,
            contribution=int(contribution),
            distinct=bool(distinct_tuples),
            seed=seed,
            levels_view=False,
            return_as="arrow",
            **budget_args,
        )
    finally:
        if own:
            connection.close()
    released = result.to_arrow()
    leaves = [released.column(chain[-1]).to_numpy() for chain in hierarchy]
    counts = released.column("count").to_numpy().astype(np.int64, copy=False)
    positions = layout.rows_of(leaves)
    out_index = pd.MultiIndex(
        levels=public.levels,
        codes=[np.asarray(c)[positions] for c in public.codes],
        names=index.names,
        verify_integrity=False,
    ).remove_unused_levels()
    series = pd.Series(counts, index=out_index, dtype=np.int64, name=data.name)
    return series, result


def _choice(name: str, value: object, allowed: Sequence[str]) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise SpecError(
            f"{name} must be one of {', '.join(map(repr, allowed))}, got {value!r}", param=name
        )
    return value


def _budget_args(budget: object, conversion: str) -> dict[str, Any]:
    """``release()``'s budget arguments for ``inf-tda``'s ``budget=(epsilon, delta)``."""
    if isinstance(budget, Budget):
        return budget.release_args()
    if (
        isinstance(budget, (tuple, list))
        and len(budget) == 2
        and all(isinstance(b, numbers.Real) and not isinstance(b, (bool, np.bool_)) for b in budget)
    ):
        return {"epsilon": float(budget[0]), "delta": float(budget[1]), "conversion": conversion}
    raise SpecError(
        "budget must be (epsilon, delta), e.g. (1.0, 1e-8), or an inftda_sql.Budget such as "
        f"Budget.from_args(rho=0.5); got {budget!r}",
        param="budget",
    )


def _as_multiindex(pd: Any, index: Any) -> pd.MultiIndex:
    if isinstance(index, pd.MultiIndex):
        return index
    if isinstance(index, pd.Index) and not isinstance(index, pd.RangeIndex):
        return pd.MultiIndex.from_arrays([index], names=[index.name])
    raise SpecError(
        "data must be indexed by the hierarchy: a MultiIndex whose levels are its columns, "
        f"coarse to fine (e.g. data.set_index(['region', 'city'])['count']); got a "
        f"{type(index).__name__}",
        param="data",
    )


def _counts(pd: Any, data: pd.Series) -> I64:
    """The values as int64, refused (by how many, never which) unless non-negative integers."""
    if len(data) == 0:
        raise InputDataError(
            "data is empty; it must list the public domain (every path, zeros included) or pass ",
            Arg("domain"),
            param="data",
        )
    if not (pd.api.types.is_numeric_dtype(data.dtype) and not pd.api.types.is_bool_dtype(data)):
        raise InputDataError(
            f"data must hold counts (integers), got dtype {data.dtype}", param="data"
        )
    raw = data.to_numpy(dtype=np.float64, na_value=np.nan) if data.hasnans else data.to_numpy()
    values: I64
    if raw.dtype.kind in "iu":
        values = raw.astype(np.int64, copy=False)
        if raw.dtype == np.uint64 and bool(np.any(raw > np.iinfo(np.int64).max)):
            raise InputDataError("data has counts beyond the int64 range", param="data")
    else:
        floats = np.asarray(raw, dtype=np.float64)
        bad = ~np.isfinite(floats)
        if bad.any():
            raise InputDataError(
                f"data has {int(bad.sum())} missing or infinite value(s); counts must be "
                "integers (fill missing cells with 0)",
                param="data",
            )
        whole = floats == np.round(floats)
        if not whole.all():
            raise InputDataError(
                f"data has {int((~whole).sum())} value(s) that are not whole numbers; counts "
                "must be integers",
                param="data",
            )
        values = floats.astype(np.int64)
    negative = int((values < 0).sum())
    if negative:
        raise InputDataError(
            f"data has {negative} negative value(s); counts must be >= 0", param="data"
        )
    return values


def _domain_index(pd: Any, domain: object, index: pd.MultiIndex) -> pd.MultiIndex:
    """``domain=`` as a MultiIndex with ``index``'s levels, in order."""
    depth = index.nlevels
    found: Any = None
    if isinstance(domain, pd.MultiIndex):
        found = domain
    elif isinstance(domain, pd.Index) and depth == 1:
        found = pd.MultiIndex.from_arrays([domain])
    elif isinstance(domain, pd.DataFrame):
        names = list(index.names)
        if all(isinstance(n, str) for n in names) and set(names) <= set(domain.columns):
            found = pd.MultiIndex.from_frame(domain[names])
        elif domain.shape[1] == depth:
            found = pd.MultiIndex.from_frame(domain)
        else:
            raise DomainError(
                f"domain has columns {list(domain.columns)}, but data's index has levels "
                f"{names}: name the domain's columns as the levels (or give exactly {depth} "
                "columns in level order)",
                param="domain",
            )
    elif isinstance(domain, (list, tuple)) and domain:
        found = pd.MultiIndex.from_tuples(list(domain))
    if found is None:
        raise DomainError(
            "domain must be a MultiIndex, a DataFrame with one column per level or a list of "
            f"tuples; got {type(domain).__name__}",
            param="domain",
        )
    if found.nlevels != depth:
        raise DomainError(
            f"domain has {found.nlevels} level(s) but data's index has {depth}", param="domain"
        )
    if len(found) == 0:
        raise DomainError("domain is empty; it must list every public path", param="domain")
    if not found.is_unique:
        found = found.drop_duplicates()
    return found.set_names(index.names)


@dataclass(frozen=True)
class _Layout:
    """A MultiIndex's paths laid out for the engine.

    Every level's values are ranked in sorted order (``sizes[k]`` values at level ``k``; the
    index's own codes when its levels are sorted, as pandas keeps them) and a path's key is the
    mixed-radix number of its ranks, so keys sort as the index does. The levels are cut into
    ``groups`` of consecutive levels, one chain each, wherever the paths are the product of the
    paths above and below the cut (a full ``from_product`` index is cut at every level); a
    chain's column at a level is the mixed-radix number of the path's ranks from the group's
    first level down to that level, which names the prefix uniquely, so chains are nested by
    construction. Chains refined one after the other have exactly the levels, cells and
    children of the one chain they replace, but the engine then codes their small domains
    instead of every leaf path.
    """

    ranks: tuple[npt.NDArray[np.integer[Any]], ...]  # per level, every row's rank
    sizes: tuple[int, ...]
    groups: tuple[tuple[int, int], ...]
    distinct: I64  # the distinct keys, ascending
    rows: npt.NDArray[np.intp] | None  # a row holding each distinct key; None: key i at row i

    def _span(self, start: int, end: int) -> int:
        return math.prod(self.sizes[start:end])

    def columns(self, select: npt.NDArray[Any]) -> list[npt.NDArray[np.integer[Any]]]:
        """The level columns (every chain's, coarse to fine) of the rows ``select`` picks (row
        numbers)."""
        out: list[npt.NDArray[np.integer[Any]]] = []
        for start, end in self.groups:
            column = self.ranks[start][select]
            out.append(column)
            for level in range(start + 1, end):
                column = column.astype(np.int64) * self.sizes[level] + self.ranks[level][select]
                out.append(column)
        return out

    def chain_tables(self, names: Sequence[str]) -> list[pa.Table]:
        """Per chain, its public domain: one row per path, one column per level."""
        depth, n = len(self.sizes), self.distinct.size
        tables = []
        for start, end in self.groups:
            if end - start == 1 and n == math.prod(self.sizes):  # every value of the level
                group = np.arange(self.sizes[start], dtype=np.int64)
            elif (start, end) == (0, depth):
                group = self.distinct
            else:
                keys = self.distinct // self._span(end, depth) % self._span(start, end)
                group = _distinct(keys, self._span(start, end), n)
            columns = {
                names[level]: group // self._span(level + 1, end) for level in range(start, end)
            }
            tables.append(pa.table(columns))
        return tables

    def rows_of(self, leaves: Sequence[npt.NDArray[Any]]) -> npt.NDArray[np.intp]:
        """The rows of the index of the paths whose chains' leaf columns are ``leaves``."""
        depth = len(self.sizes)
        keys = np.zeros(len(leaves[0]) if leaves else 0, dtype=np.int64)
        for (_, end), leaf in zip(self.groups, leaves, strict=True):
            keys += np.asarray(leaf, dtype=np.int64) * self._span(end, depth)
        if self.rows is None and self.distinct.size == math.prod(self.sizes):
            return keys  # every path once, in order: a path's key is its row
        pos = np.searchsorted(self.distinct, keys)
        return pos if self.rows is None else self.rows[pos]


def _distinct(values: I64, span: int, n: int) -> I64:
    """The distinct values of ``values`` in ``[0, span)``, sorted."""
    if span <= 4 * n + (1 << 20):
        return np.flatnonzero(np.bincount(values, minlength=span)).astype(np.int64)
    return np.unique(values)


def _layout(index: pd.MultiIndex) -> _Layout:
    """Rank each level's values in sorted order, key every path and cut the levels into chains
    (vectorised, no Python loop over rows; few arrays as long as the index: fresh memory is
    slow to touch)."""
    ranks: list[npt.NDArray[np.integer[Any]]] = []
    sizes: list[int] = []
    for k in range(index.nlevels):
        codes = np.asarray(index.codes[k])
        if codes.size and int(codes.min()) < 0:
            raise DomainError(
                f"level {k + 1} ({index.names[k]!r}) of the index has "
                f"{int((codes < 0).sum())} missing value(s) (NaN/None); every path must be "
                "complete",
                param="domain",
            )
        level = index.levels[k]
        try:
            if level.is_monotonic_increasing:
                ranks.append(codes)
            else:
                order = np.asarray(level.argsort())
                rank = np.empty(len(level), dtype=np.int64)
                rank[order] = np.arange(len(level), dtype=np.int64)
                ranks.append(rank[codes])
        except TypeError as exc:
            raise DomainError(
                f"the values of level {k + 1} ({index.names[k]!r}) cannot be sorted ({exc}); "
                "give each level values of one type",
                param="domain",
            ) from exc
        sizes.append(max(len(level), 1))
    if math.prod(sizes) >= _KEY_LIMIT:
        raise SpecError(
            f"the index has {math.prod(sizes):,} possible paths (the product of its levels' "
            "value counts), more than a 64-bit key can index; split the hierarchy",
            param="data",
        )
    keys: I64 = ranks[0].astype(np.int64)
    for level_ranks, size in zip(ranks[1:], sizes[1:], strict=True):
        np.multiply(keys, size, out=keys)
        np.add(keys, level_ranks, out=keys)
    rows: npt.NDArray[np.intp] | None = None
    distinct = keys
    if keys.size > 1 and not bool(np.all(keys[1:] > keys[:-1])):
        order = np.argsort(keys, kind="stable")
        ordered = keys[order]
        first = np.ones(ordered.size, dtype=bool)
        np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
        distinct, rows = ordered[first], order[first]
    return _Layout(tuple(ranks), tuple(sizes), _groups(distinct, tuple(sizes)), distinct, rows)


def _groups(distinct: I64, sizes: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    """Cut the levels where the paths are the product of their prefixes and their suffixes."""
    depth, n = len(sizes), distinct.size
    if n == math.prod(sizes):  # every combination: a product at every level
        cuts = list(range(1, depth))
    else:
        cuts = []
        for k in range(1, depth):
            stride = math.prod(sizes[k:])
            prefixes = distinct // stride
            n_prefixes = 1 + int(np.count_nonzero(prefixes[1:] != prefixes[:-1]))
            n_suffixes = _distinct(distinct % stride, stride, n).size
            if n_prefixes * n_suffixes == n:
                cuts.append(k)
    bounds = [0, *cuts, depth]
    return tuple(itertools.pairwise(bounds))


def _positions(public: pd.MultiIndex, index: pd.MultiIndex) -> npt.NDArray[np.intp]:
    """The row of ``public`` (the domain, without repeated paths) holding each row of ``index``
    (the data), or a DomainError counting the rows whose path the domain does not list."""
    found = np.asarray(public.get_indexer(index))
    missing = found < 0
    if missing.any():
        example = index[int(np.argmax(missing))]
        raise DomainError(
            f"{int(missing.sum())} row(s) of data have a path the domain does not list, e.g. "
            f"{example!r}; add it to the domain (if it is a public category) or drop those rows",
            param="domain",
        )
    return found.astype(np.intp)
