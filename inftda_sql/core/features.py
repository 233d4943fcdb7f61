"""Features: the GROUP BY column sets a CBDP release measures, and the lattice they form.

A *feature* is a partition of the leaf cells given by a set of columns: ``{"period": ["period"],
"zones": ["o_zone", "d_zone", "period"], "trip": ["o_stop", "d_stop", "period"]}``. Features
are listed coarse to fine and **the last one is the leaf**: the cells the release publishes.
Every other feature must be a *coarsening* of the leaf: each leaf cell lies in exactly one cell
of it. That is a property of the PUBLIC domain (a table listing every leaf cell with the
columns of every feature, or several tables whose product is the domain), checked here, engine
free: :func:`parse_features` validates the specification before any data is read and
:func:`code_lattice` codes the domain and reports a leaf cell that breaks the rule.

Features need not be nested: ``zones`` and ``mode`` are both coarser than a trip and both finer
than a period, yet neither refines the other (the paper's lattice ``F1 < F4 < F3 < F2`` and
``F1 < F5 < F3 < F2``). The *structure* says which queries are noised:

* ``"flat"`` (CBDP): the features themselves.
* ``"hierarchical"`` (the paper's ablation, and the tree of Hay et al.): the cumulative meets of
  the features in the order given, ``period``, ``period & zones``, ``period & zones & mode``...,
  i.e. the GROUP BY of the union of their columns: a tree whose every level refines the one
  above.

Empty column lists are allowed for the total (one cell). Names and columns are compared
case-insensitively, as DuckDB does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._errors import DomainError, SpecError
from .arrays import I64, mixed_radix_strides
from .lsq import combine_codes
from .spec import OUTPUT_COUNT_COLUMN

__all__ = [
    "STRUCTURES",
    "WEIGHTINGS",
    "DomainPart",
    "Feature",
    "FeatureSpec",
    "Lattice",
    "code_lattice",
    "parse_features",
]

#: ``structure=``: the features themselves, or the tree of their cumulative meets
STRUCTURES = ("flat", "hierarchical")
#: ``weights=``: ``1 / cells`` per feature (the paper's), or 1 for every feature
WEIGHTINGS = ("cells", "uniform")


@dataclass(frozen=True)
class Feature:
    """One query of a release: a name and the columns it groups by (empty: the total)."""

    name: str
    columns: tuple[str, ...]

    @property
    def is_total(self) -> bool:
        return not self.columns

    def as_dict(self) -> dict[str, object]:
        return {"name": self.name, "columns": list(self.columns)}


@dataclass(frozen=True)
class FeatureSpec:
    """A validated ``features=`` specification (see the module docstring).

    Attributes:
        features: the features as given, coarse to fine; the last is the leaf.
        structure: ``"flat"`` or ``"hierarchical"``.
        weights: ``"cells"`` (``1 / n_f``) or ``"uniform"``.
    """

    features: tuple[Feature, ...]
    structure: str = "flat"
    weights: str = "cells"

    @property
    def leaf(self) -> Feature:
        return self.features[-1]

    @property
    def columns(self) -> tuple[str, ...]:
        """Every feature column once: the leaf's first, then the others in order."""
        seen: dict[str, str] = {}
        for f in (self.leaf, *self.features[:-1]):
            for col in f.columns:
                seen.setdefault(col.lower(), col)
        return tuple(seen.values())

    @property
    def queries(self) -> tuple[Feature, ...]:
        """The noised queries, coarse to fine (the leaf last), per the structure."""
        if self.structure == "flat":
            return self.features
        out: list[Feature] = []
        names: list[str] = []
        columns: dict[str, str] = {}
        for f in self.features[:-1]:
            before = set(columns)
            for col in f.columns:
                columns.setdefault(col.lower(), col)
            if f.is_total and not columns:
                out.append(f)
                continue
            names.append(f.name)
            if set(columns) == before:  # refines nothing: the same level again
                continue
            out.append(Feature(" & ".join(names), tuple(columns.values())))
        leaf_cols = {c.lower() for c in self.leaf.columns}
        for q in out:
            if leaf_cols <= {c.lower() for c in q.columns}:
                raise SpecError(
                    f"with structure='hierarchical' the level {q.name!r} groups by every column "
                    f"of the leaf {self.leaf.name!r} ({', '.join(q.columns)}): it is not coarser "
                    "than the leaf; drop or reorder features, or use structure='flat'"
                )
        return (*out, self.leaf)

    def as_dict(self) -> dict[str, object]:
        return {
            "features": {f.name: list(f.columns) for f in self.features},
            "structure": self.structure,
            "weights": self.weights,
        }


def _columns(name: str, value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        raise SpecError(
            f"feature {name!r} must list its columns, got the string {value!r}; write "
            f"{{{name!r}: {[c.strip() for c in value.split(',') if c.strip()]!r}}}"
        )
    if not isinstance(value, Sequence):
        raise SpecError(
            f"feature {name!r} must be a list of column names ([] for the total), got {value!r}"
        )
    cols = tuple(value)
    seen: set[str] = set()
    for col in cols:
        if not isinstance(col, str) or not col:
            raise SpecError(
                f"feature {name!r} has {col!r}, which is not a column name; columns are "
                "non-empty strings"
            )
        if col.lower() in seen:
            raise SpecError(f"feature {name!r} lists column {col!r} twice")
        if col.lower() == OUTPUT_COUNT_COLUMN:
            raise SpecError(
                f"feature {name!r} groups by a column named {OUTPUT_COUNT_COLUMN!r}, the name of "
                "the output's count column; rename it in a view first"
            )
        seen.add(col.lower())
    return cols


def parse_features(
    features: object, *, structure: object = "flat", weights: object = "cells"
) -> FeatureSpec:
    """Validate ``features=`` (with ``structure=`` and ``weights=``).

    Example:
        >>> spec = parse_features({"total": [], "period": ["period"],
        ...                        "trip": ["o", "d", "period"]})
        >>> spec.leaf.name, spec.columns
        ('trip', ('o', 'd', 'period'))
        >>> [q.name for q in parse_features({"a": ["a"], "b": ["b"], "leaf": ["a", "b", "c"]},
        ...                                 structure="hierarchical").queries]
        ['a', 'a & b', 'leaf']
    """
    if not isinstance(features, Mapping) or not features:
        raise SpecError(
            "features must be a non-empty mapping {name: [columns]}, coarse to fine with the "
            "leaf last, e.g. {'total': [], 'period': ['period'], 'trip': ['o', 'd', 'period']}; "
            f"got {features!r}"
        )
    if structure not in STRUCTURES:
        raise SpecError(f"structure must be one of {', '.join(STRUCTURES)}; got {structure!r}")
    if weights not in WEIGHTINGS:
        raise SpecError(f"weights must be one of {', '.join(WEIGHTINGS)}; got {weights!r}")
    parsed: list[Feature] = []
    names: dict[str, str] = {}
    sets: dict[frozenset[str], str] = {}
    for name, value in features.items():
        if not isinstance(name, str) or not name:
            raise SpecError(f"feature names must be non-empty strings, got {name!r}")
        if name.lower() in names:
            raise SpecError(f"feature name {name!r} is used twice (names are case-insensitive)")
        names[name.lower()] = name
        cols = _columns(name, value)
        key = frozenset(c.lower() for c in cols)
        if key in sets:
            raise SpecError(
                f"features {sets[key]!r} and {name!r} group by the same columns; keep one"
            )
        sets[key] = name
        parsed.append(Feature(name, cols))
    leaf = parsed[-1]
    if leaf.is_total:
        raise SpecError(
            f"the last feature is the leaf (the cells released), but {leaf.name!r} has no "
            "columns; list the features coarse to fine, the finest last"
        )
    leaf_cols = {c.lower() for c in leaf.columns}
    for f in parsed[:-1]:
        if leaf_cols < {c.lower() for c in f.columns}:
            raise SpecError(
                f"feature {f.name!r} groups by every column of the leaf {leaf.name!r} and more, "
                "so it is not coarser than the leaf; list the features coarse to fine, the "
                "finest (the leaf) last"
            )
    spec = FeatureSpec(tuple(parsed), str(structure), str(weights))
    spec.queries  # noqa: B018 - validates the hierarchical levels early
    return spec


# ---------------------------------------------------------------------------------------------
# the lattice on the public domain


@dataclass(frozen=True)
class DomainPart:
    """One table of the public domain (the domain is the product of its parts), coded.

    After validation the leaf columns of the table determine its row: the part's *leaf code*
    numbers its distinct rows.

    Attributes:
        rows: the distinct rows of the table's feature columns (in any order).
        row_leaf: the leaf code of every row.
        codes: per query, the code of its sub-cell (dense in ``[0, sizes[q])``) for every
            leaf code of this part.
        sizes: per query, the number of distinct sub-cells in this part.
        description: the table, for messages.
    """

    rows: pa.Table
    row_leaf: I64
    codes: tuple[I64, ...]
    sizes: tuple[int, ...]
    description: str

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(self.rows.column_names)

    @property
    def n_rows(self) -> int:
        return int(self.rows.num_rows)

    def row_codes(self, q: int) -> I64:
        """The code of query ``q``'s sub-cell for every row (in row order)."""
        return self.codes[q][self.row_leaf]


@dataclass(frozen=True)
class Lattice:
    """The queries of a release coded on the public domain.

    Leaf cells are numbered in mixed radix over the parts (the last part fastest); a query's
    cells likewise, from its per-part sub-cells, so every query's cells are dense codes.
    """

    spec: FeatureSpec
    queries: tuple[Feature, ...]
    parts: tuple[DomainPart, ...]

    @property
    def leaf(self) -> int:
        """Index of the leaf query (the last)."""
        return len(self.queries) - 1

    @property
    def n_leaf(self) -> int:
        n = 1
        for part in self.parts:
            n *= part.n_rows
        return n

    def size(self, q: int) -> int:
        """Cells of query ``q``."""
        n = 1
        for part in self.parts:
            n *= part.sizes[q]
        return n

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(self.size(q) for q in range(len(self.queries)))

    def leaf_strides(self) -> tuple[int, ...]:
        return mixed_radix_strides([p.n_rows for p in self.parts])

    def strides(self, q: int) -> tuple[int, ...]:
        """Mixed-radix strides of query ``q``'s cell code over the parts."""
        return mixed_radix_strides([p.sizes[q] for p in self.parts])

    def cell_map(self, q: int) -> I64:
        """The cell of query ``q`` of every leaf, in leaf-code order (``n_leaf`` entries)."""
        out = np.zeros(1, dtype=np.int64)
        for part, stride in zip(self.parts, self.strides(q), strict=True):
            out = (out[:, None] + (part.codes[q] * stride)[None, :]).ravel()
        return out

    def part_codes(self, leaf: I64) -> list[I64]:
        """The row of every part of each leaf code."""
        return [
            (leaf // stride) % part.n_rows
            for part, stride in zip(self.parts, self.leaf_strides(), strict=True)
        ]

    def refines(self, a: int, b: int) -> bool:
        """Whether every cell of query ``a`` lies in one cell of query ``b``."""
        return all(_function_of(p.codes[a], p.sizes[a], p.codes[b]) for p in self.parts)


def _function_of(a: I64, n_a: int, b: I64) -> bool:
    """Whether ``b`` is a function of ``a`` (equal ``a`` codes always carry equal ``b``)."""
    image = np.zeros(n_a, dtype=np.int64)
    image[a] = b
    return bool(np.array_equal(image[a], b))


def _dense(
    table: pa.Table, columns: Sequence[str], cache: dict[str, tuple[I64, int]] | None = None
) -> tuple[I64, int]:
    """Dense codes of the tuples of ``columns`` over the rows of ``table`` (``cache`` keeps
    each column's own codes between calls on the same table)."""
    code = np.zeros(table.num_rows, dtype=np.int64)
    n = 1
    for col in columns:
        if cache is not None and col in cache:
            values, size = cache[col]
        else:
            encoded = pc.dictionary_encode(table.column(col)).combine_chunks()
            values = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
            size = len(encoded.dictionary)
            if cache is not None:
                cache[col] = (values, size)
        code, n = combine_codes(code, n, values, size)
    return code, n


def _show(table: pa.Table, row: int, columns: Sequence[str]) -> str:
    return ", ".join(f"{c}={table.column(c)[row].as_py()!r}" for c in columns)


def _first_rows(code: I64, n: int) -> I64:
    """The first row of every code, in row order."""
    first = np.full(n, code.size, dtype=np.int64)
    np.minimum.at(first, code, np.arange(code.size, dtype=np.int64))
    return np.sort(first)


def _code_part(
    spec: FeatureSpec, queries: Sequence[Feature], table: pa.Table, description: str
) -> DomainPart:
    """Code one domain table: distinct rows, the leaf columns a key, a code per query."""
    names = {c.lower(): c for c in table.column_names}
    leaf_cols = [names[c.lower()] for c in spec.leaf.columns if c.lower() in names]
    cache: dict[str, tuple[I64, int]] = {}
    leaf_code, n_leaf = _dense(table, leaf_cols, cache)
    if n_leaf != table.num_rows:  # repeated leaves: drop repeated rows, then check again
        row_code, n_rows = _dense(table, table.column_names, cache)
        if n_rows != table.num_rows:
            keep = _first_rows(row_code, n_rows)
            table = table.take(pa.array(keep))
            leaf_code = leaf_code[keep]
            cache = {}
    if not leaf_cols and table.num_rows > 1:
        raise DomainError(
            f"domain {description} holds none of the leaf's columns "
            f"({', '.join(spec.leaf.columns)}) but {table.num_rows} distinct rows, so a leaf "
            "cell would lie in several of its cells; every feature must be a coarsening of the "
            "leaf: join it to a table holding leaf columns"
        )
    if n_leaf != table.num_rows:
        order = np.argsort(leaf_code, kind="stable")
        same = np.flatnonzero(leaf_code[order][1:] == leaf_code[order][:-1])
        i, j = int(order[same[0]]), int(order[same[0] + 1])
        for f in spec.features:
            cols = [names[c.lower()] for c in f.columns if c.lower() in names]
            if any(table.column(c)[i].as_py() != table.column(c)[j].as_py() for c in cols):
                raise DomainError(
                    f"domain {description} puts leaf cell ({_show(table, i, leaf_cols)}) in two "
                    f"cells of feature {f.name!r}: ({_show(table, i, cols)}) and "
                    f"({_show(table, j, cols)}); every leaf cell must lie in exactly one cell "
                    "of every feature (fix the domain, or drop the feature)"
                )
        raise AssertionError("unreachable: distinct rows differ in some feature column")
    codes, sizes = [], []
    for q in queries:
        code, n = _dense(table, [names[c.lower()] for c in q.columns if c.lower() in names], cache)
        by_leaf = np.empty(n_leaf, dtype=np.int64)
        by_leaf[leaf_code] = code
        codes.append(by_leaf)
        sizes.append(n)
    return DomainPart(table, leaf_code, tuple(codes), tuple(sizes), description)


def code_lattice(
    spec: FeatureSpec, tables: Sequence[pa.Table], descriptions: Sequence[str]
) -> Lattice:
    """Code the public domain (one table, or several whose product it is) for ``spec``.

    Each table holds some of the feature columns (each column in exactly one table); extra
    columns are ignored. Raises a DomainError naming a leaf cell that lies in two cells of a
    feature, a feature with the same partition as the leaf, or two features with the same
    partition.

    Example:
        >>> import pyarrow as pa
        >>> spec = parse_features({"zone": ["zone"], "stop": ["stop"]})
        >>> geo = pa.table({"stop": ["a", "b", "c"], "zone": ["N", "N", "S"]})
        >>> lat = code_lattice(spec, [geo], ["geo"])
        >>> lat.sizes, lat.cell_map(0).tolist()
        ((2, 3), [0, 0, 1])
    """
    queries = spec.queries
    if not tables:
        raise DomainError("the domain is empty: pass at least one table of leaf cells")
    owner: dict[str, int] = {}
    selected: list[pa.Table] = []
    for i, (table, desc) in enumerate(zip(tables, descriptions, strict=True)):
        cols = []
        for name in table.column_names:
            key = name.lower()
            if key not in {c.lower() for c in spec.columns}:
                continue
            if key in owner:
                raise DomainError(
                    f"column {name!r} is in domain {descriptions[owner[key]]} and in domain "
                    f"{desc}; with several domain tables (their product is the domain) each "
                    "feature column must be in exactly one"
                )
            owner[key] = i
            cols.append(name)
        if not cols:
            raise DomainError(
                f"domain {desc} holds none of the feature columns ({', '.join(spec.columns)}); "
                "drop it from domain="
            )
        if table.num_rows == 0:
            raise DomainError(f"domain {desc} is empty; it must list every valid leaf cell")
        selected.append(table.select(cols))
    missing = [c for c in spec.columns if c.lower() not in owner]
    if missing:
        raise DomainError(
            f"feature column(s) {', '.join(map(repr, missing))} are in no domain table; the "
            "public domain must hold every feature's columns (a table of all leaf cells, or "
            "several tables whose product is the domain)"
        )
    for table, desc in zip(selected, descriptions, strict=True):
        for name in table.column_names:
            nulls = table.column(name).null_count
            if nulls:
                raise DomainError(
                    f"domain {desc} has {nulls} row(s) with NULL in {name!r}; every listed leaf "
                    "cell must be complete"
                )
    # sorted by their columns: the codes (first appearance) are then the same whatever order
    # an engine fetched the rows in, so a seeded release is the same table on every engine
    parts = tuple(
        _code_part(spec, queries, t.sort_by([(c, "ascending") for c in t.column_names]), d)
        for t, d in zip(selected, descriptions, strict=True)
    )
    lattice = Lattice(spec, queries, parts)
    sizes = lattice.sizes
    leaf = lattice.leaf
    for q, feature in enumerate(queries[:-1]):
        if sizes[q] == sizes[leaf]:
            raise DomainError(
                f"feature {feature.name!r} has as many cells as the leaf {queries[leaf].name!r} "
                f"({sizes[q]:,}) on the domain: it is the same partition, not a coarsening; "
                "drop it"
            )
        for p in range(q):
            if sizes[p] == sizes[q] and lattice.refines(p, q) and lattice.refines(q, p):
                raise DomainError(
                    f"features {queries[p].name!r} and {feature.name!r} partition the domain "
                    "identically; keep one"
                )
    return lattice
