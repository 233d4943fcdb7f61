"""Feature releases (CBDP, ``sql/features.sql``): per-query counts, the output, its view."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ....core.features import FeatureSpec, Lattice
from ..sql import ident, render
from ._common import TempNames, _cols, string_literal
from .release import _count_parts


def query_code(query: int) -> str:
    """Name of the column holding a row's sub-cell of query ``query`` in a part's code table."""
    return f"__q{query}"


def _part_of(lattice: Lattice) -> dict[str, tuple[int, str]]:
    """Lower-case feature column -> (the domain table holding it, its stored name there)."""
    return {col.lower(): (t, col) for t, part in enumerate(lattice.parts) for col in part.columns}


def feature_part(columns: Sequence[str], types: Mapping[str, str], domain_sql: str) -> str:
    """The feature ``columns`` of one domain table; those in ``types`` (lower-case name ->
    DuckDB type: the leaf columns the input holds) cast to the input's type."""
    casts = ", ".join(
        f"CAST({ident(c)} AS {types[c.lower()]}) AS {ident(c)}" if c.lower() in types else ident(c)
        for c in columns
    )
    return render("features.part", casts=casts, domain=domain_sql)


def _part_joins(names: TempNames, lattice: Lattice, input_leaf: Mapping[str, str]) -> str:
    """LEFT JOIN every part's code table on the leaf columns it holds (``input_leaf``: lower
    leaf column -> the input's stored name)."""
    joins = []
    for t, part in enumerate(lattice.parts):
        on = [
            f"i.{ident(input_leaf[c.lower()])} = c{t}.{ident(c)}"
            for c in part.columns
            if c.lower() in input_leaf
        ]
        joins.append(
            f"LEFT JOIN {ident(names.part(t))} AS c{t} ON {' AND '.join(on) if on else 'true'}"
        )
    return "\n    ".join(joins)


def _query_key(lattice: Lattice, q: int) -> str:
    terms = [
        f"c{t}.{query_code(q)} * {stride}"
        for t, (part, stride) in enumerate(zip(lattice.parts, lattice.strides(q), strict=True))
        if part.sizes[q] > 1 or q == lattice.leaf
    ]
    return " + ".join(terms) or "0"


def feature_counts(
    names: TempNames,
    lattice: Lattice,
    input_sql: str,
    input_leaf: Mapping[str, str],
    count: str | None,
    count_is_integer: bool,
    bounded: bool,
    wide: bool = False,
) -> str:
    """The ONE scan of the private input that counts every query's cells (GROUPING SETS).

    ``count`` is the input's count column (stored name) of a pre-aggregated input; ``bounded``
    means the input is :func:`bound_units` output; ``wide`` as for :func:`leaf_counts`. Every
    set also counts, per cell, the rows whose count is NULL, negative, not whole or beyond
    int64 (the leaf set's are checked before any noise; never a count).
    """
    k = len(lattice.queries)
    keys = [f"__k{q}" for q in range(k)]
    key_exprs = ", ".join(f"({_query_key(lattice, q)})::BIGINT AS __k{q}" for q in range(k))
    if bounded:
        carried, agg_count = "i.__keep AS __keep", None
    elif count is not None:
        carried, agg_count = f"i.{ident(count)} AS __cnt", "__cnt"
    else:
        carried, agg_count = "1 AS __one", None
    return render(
        "features.counts",
        keys=", ".join(keys),
        key_exprs=key_exprs,
        carried=carried,
        input=input_sql,
        joins=_part_joins(names, lattice, input_leaf),
        sets=", ".join(f"({key})" for key in keys),
        **_count_parts(agg_count, count_is_integer, bounded=bounded, wide=wide),
    )


def feature_set_mask(lattice: Lattice, q: int) -> int:
    """The ``grouping()`` value of query ``q``'s grouping set in :func:`feature_counts`."""
    k = len(lattice.queries)
    return (1 << k) - 1 - (1 << (k - 1 - q))


def feature_unmatched(
    names: TempNames, lattice: Lattice, input_sql: str, input_leaf: Mapping[str, str]
) -> str:
    """An input leaf that no row of the domain lists, with the number of such leaves."""
    cols = ", ".join(f"i.{ident(c)}" for c in input_leaf.values())
    code = query_code(lattice.leaf)
    unmatched = " OR ".join(f"c{t}.{code} IS NULL" for t in range(len(lattice.parts)))
    return render(
        "features.unmatched",
        leaf_cols=cols,
        input=input_sql,
        joins=_part_joins(names, lattice, input_leaf),
        unmatched=unmatched,
    )


def feature_output(names: TempNames, lattice: Lattice, output_sql: str) -> str:
    """Decode the released leaves (one row code per part) into every feature column."""
    where = _part_of(lattice)
    spec = lattice.spec
    cols = ", ".join(
        f"c{where[c.lower()][0]}.{ident(where[c.lower()][1])} AS {ident(c)}" for c in spec.columns
    )
    code = query_code(lattice.leaf)
    joins = "\n".join(
        f"JOIN {ident(names.part(t))} AS c{t} ON c{t}.{code} = r.__p{t}"
        for t in range(len(lattice.parts))
    )
    return render(
        "features.output",
        output=output_sql,
        cols=cols,
        released=ident(names.released),
        joins=joins,
        order=_cols(spec.leaf.columns),
    )


def feature_read_back(spec: FeatureSpec, output_sql: str) -> str:
    """The released leaf table as written, in its order (for ``return_as=``)."""
    return render("features.read_back", output=output_sql, order=_cols(spec.leaf.columns))


def features_view(spec: FeatureSpec, view_sql: str, output_sql: str) -> str:
    """A view with every feature's released counts (``feature`` names it) as leaf sums."""
    all_cols = spec.columns
    sets, cases = [], []
    for f in spec.features:
        mine = {c.lower() for c in f.columns}
        mask = 0
        for col in all_cols:
            mask = (mask << 1) | (0 if col.lower() in mine else 1)
        sets.append("(" + _cols([c for c in all_cols if c.lower() in mine]) + ")")
        cases.append(f"WHEN {mask} THEN " + string_literal(f.name))
    return render(
        "features.view",
        view=view_sql,
        cols=_cols(all_cols),
        cases=" ".join(cases),
        output=output_sql,
        sets=", ".join(sets),
    )
