"""The SQL of a hierarchy release: the public domain coded, one ``GROUP BY`` scan of the input
(:func:`leaf_counts`) to its leaf cells, their codes fetched once (:func:`leaf_codes`), the
released leaves decoded and written in code order (:func:`write_output`), the levels view.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ....core.bounds import sql_constant
from ....core.spec import TreeSpec
from ..sql import ident, render
from ._common import TempNames, _code_tables, _cols


def depth_code(depth: int) -> str:
    """Name of the code column of depth ``depth`` in a chain's code table."""
    return f"__d{depth}"


def domain_paths(chain: Sequence[str], domain_sql: str, types: Sequence[str]) -> str:
    """The paths of a chain's domain, cast to the input's ``types``, sorted (with repeats)."""
    casts = ", ".join(
        f"CAST({ident(c)} AS {t}) AS {ident(c)}" for c, t in zip(chain, types, strict=True)
    )
    return render("domain_paths", casts=casts, domain=domain_sql)


def chain_columns(columns: Mapping[str, str], domain_sql: str) -> str:
    """A domain read as one chain: each chain column (key) from a domain column (value), e.g.
    ``o_region`` from ``region``; a subquery, so nothing is created in the catalog."""
    cols = ", ".join(f"{ident(source)} AS {ident(name)}" for name, source in columns.items())
    return f"({render('domain_paths.chain_columns', cols=cols, domain=domain_sql).strip()})"


def bound_units(
    columns: Sequence[str], input_sql: str, unit: str, *, distinct: bool, m: int
) -> str:
    """The input with a ``__keep`` flag: at most ``m`` records (or distinct cells of
    ``columns``) per unit. The secret salt is the bound parameter ``$salt``.
    """
    cols = _cols(columns)
    source = f"(SELECT DISTINCT {ident(unit)}, {cols} FROM {input_sql})" if distinct else input_sql
    text = render(
        "bound_units", cols=cols, unit=ident(unit), source=source, m=str(int(m)), salt="$salt"
    )
    return f"({text.strip()})"


def ancestors(spec: TreeSpec) -> list[str]:
    """All non-leaf hierarchy columns, chain after chain (the order of the path hash)."""
    return [col for chain in spec.chains for col in chain[:-1]]


def _path_hash(
    cols: Sequence[str],
    alias: dict[str, str] | None = None,
    as_varchar: frozenset[str] = frozenset(),
) -> str:
    if not cols:
        return "0::UBIGINT"
    alias = alias or {}
    terms = [alias.get(c, "") + ident(c) for c in cols]
    terms = [
        f"CAST({t} AS VARCHAR)" if c in as_varchar else t for c, t in zip(cols, terms, strict=True)
    ]
    return "hash(" + ", ".join(terms) + ")"


def checked_chains(spec: TreeSpec, check: Sequence[str]) -> list[tuple[int, list[str]]]:
    """Every chain with ancestor columns in ``check``: its index and those columns (in the
    order of ``check``), one chain hash each (:func:`leaf_counts`)."""
    out = []
    for c, chain in enumerate(spec.chains):
        cols = [col for col in check if col in chain[:-1]]
        if cols:
            out.append((c, cols))
    return out


def _path_key(
    spec: TreeSpec,
    check: Sequence[str],
    alias: dict[str, str] | None = None,
    as_varchar: frozenset[str] = frozenset(),
) -> str:
    """The path hash ``__h`` of :func:`leaf_counts`: the hash of each checked chain's ancestor
    columns, and with several chains the hash of those hashes (one key; the domain's is a
    function of the chains' leaves: :func:`domain_path_hashes`, :func:`path_mismatches`)."""
    hashes = [_path_hash(cols, alias, as_varchar) for _, cols in checked_chains(spec, check)]
    return hashes[0] if len(hashes) == 1 else "hash(" + ", ".join(hashes) + ")"


def nesting_check(codes_table: str, parent: str, child: str) -> str:
    """A query returning one child value listed under two parents, if any."""
    return render("nesting", codes=ident(codes_table), parent=ident(parent), child=ident(child))


def _count_parts(
    count: str | None, count_is_integer: bool, *, bounded: bool, wide: bool
) -> dict[str, str]:
    """The aggregates of a scan (see :func:`leaf_counts`): the records counted (``count`` is
    the count column, or None for one row per record), and the number of rows whose count is
    NULL, negative, not whole or beyond int64: never a count."""
    zero = {"count_nulls": "0", "count_neg": "0", "count_frac": "0", "count_big": "0"}
    if bounded:  # input from bound_units(): count the records each unit keeps
        return {**zero, "count_sum": "(count(*) FILTER (WHERE __keep))::BIGINT"}
    if count is None:
        return {**zero, "count_sum": "count(*)::BIGINT"}
    n = ident(count)
    if count_is_integer and wide:
        count_sum = f"sum(TRY_CAST({n} AS BIGINT))"
        count_big = f"count(*) FILTER ({n} IS NOT NULL AND TRY_CAST({n} AS BIGINT) IS NULL)"
    else:
        count_sum = f"sum({n})" if count_is_integer else f"sum({n}::DOUBLE)"
        count_big = "0"
    return {
        "count_sum": count_sum,
        "count_nulls": f"count(*) FILTER ({n} IS NULL)",
        "count_neg": f"count(*) FILTER ({n} < 0)",
        "count_frac": "0" if count_is_integer else f"count(*) FILTER ({not_whole(count)})",
        "count_big": count_big,
    }


def leaf_counts(
    names: TempNames,
    spec: TreeSpec,
    input_sql: str,
    count: str | None,
    count_is_integer: bool,
    as_varchar: frozenset[str] = frozenset(),
    bounded: bool = False,
    wide: bool = False,
    check: Sequence[str] = (),
) -> str:
    """The single scan of the private input, grouped by the leaf column of every chain.

    ``check`` names the input's ancestor columns whose agreement with the domain the scan
    collects: one hash per row, grouped on beside the leaf columns (``__h``; a leaf cell whose
    rows disagree is split in several rows, see :func:`leaf_codes`); none by default. With
    several chains it is the hash of each chain's hash of its ancestors (:func:`_path_key`),
    so that the domain's is computed from each leaf's (:func:`domain_path_hashes`) without a
    join.

    ``as_varchar`` names input columns (ENUMs) whose domain values are compared as VARCHAR;
    ``bounded`` means the input is :func:`bound_units` output (records flagged ``__keep``);
    ``wide`` means the count column's type can overflow 128-bit sums (see
    :func:`~inftda_sql.engines.duckdb.catalog.is_wide_number`): values beyond int64 are then
    counted in ``__big`` instead of summed, so no overflow error (which would print private
    values) can occur. Per cell it keeps, besides the sum ``__n``, the number of input rows
    with a NULL (``__nulls``), negative (``__neg``) or non-whole (``__frac``: fractional, NaN,
    infinite) count: the checks report how many rows are wrong, never a count.
    """
    parts = _count_parts(count, count_is_integer, bounded=bounded, wide=wide)
    path = path_key = ""
    if check:
        path_hash = _path_key(spec, check, as_varchar=as_varchar)
        path, path_key = f",\n       {path_hash} AS __h", f", {path_hash}"
    return render(
        "leaf_counts",
        leaf=ident(names.leaf),
        leaf_cols=_cols(spec.leaf_columns),
        input=input_sql,
        path=path,
        path_key=path_key,
        **parts,
    )


def not_whole(count: str) -> str:
    """The condition on a fractional count column that holds for a value that is not a whole
    number (fractional, NaN or infinite)."""
    n = ident(count)
    return f"NOT (isfinite({n}) AND {n} = trunc({n}))"


def bad_path(
    names: TempNames,
    chain_index: int,
    chain: Sequence[str],
    input_sql: str,
    codes: str | None = None,
) -> str:
    """Diagnostics: an input path of a chain (``chain``: the chain's columns the input has, the
    leaf last), for the leaf value ``$leaf``, not in the domain."""
    return render(
        "bad_path",
        cols=_cols(chain),
        input=input_sql,
        leaf_match=f"{ident(chain[-1])} = $leaf",
        codes=codes or ident(names.codes(chain_index)),
    )


def leaf_codes(
    names: TempNames,
    spec: TreeSpec,
    check: Sequence[str] = (),
    codes: Sequence[str] | None = None,
) -> str:
    """The leaf cells with every chain's leaf code (``__leaf0``, ...) and count ``n``, to fetch;
    with ``check`` (the ancestor columns :func:`leaf_counts` hashed) also ``path_ok``: the
    row's ancestors hash to the domain's for its leaves (false on every row of a cell the scan
    split by disagreeing ancestors but one at most)."""
    tables = _code_tables(names, len(spec.chains), codes)
    code_cols = []
    joins = []
    alias: dict[str, str] = {}
    for c, chain in enumerate(spec.chains):
        a = f"c{c}"
        code_cols.append(f"{a}.{depth_code(len(chain))} AS {ident(leaf_code(c))}")
        leaf = ident(chain[-1])
        joins.append(f"LEFT JOIN {tables[c]} AS {a} ON {a}.{leaf} = l.{leaf}")
        alias.update({col: f"{a}." for col in chain})
    path_ok = ""
    if check:
        path_ok = f",\n       (l.__h = {_path_key(spec, check, alias)}) AS path_ok"
    return render(
        "leaf_codes",
        leaf=ident(names.leaf),
        code_cols=", ".join(code_cols),
        path_ok=path_ok,
        joins="\n".join(joins),
    )


def leaf_values(names: TempNames, spec: TreeSpec, check: Sequence[str] = ()) -> str:
    """The leaf cells with every chain's leaf value (its column) and count ``n``, to fetch and
    code outside SQL (:func:`~inftda_sql.core.leaf_index.leaf_coder`); with ``check`` also the
    path hash ``__h`` (:func:`leaf_counts`), to compare with the domain's
    (:func:`domain_path_hashes`, :func:`path_mismatches`)."""
    hashes = ", l.__h" if check else ""
    return render(
        "leaf_codes.leaf_values",
        leaf=ident(names.leaf),
        leaf_cols=", ".join(f"l.{ident(col)}" for col in spec.leaf_columns),
        hashes=hashes,
    )


def domain_path_hashes(codes: str, cols: Sequence[str], depth: int) -> str:
    """Per leaf of a chain's code table ``codes`` (quoted; its leaves at ``depth``), its code
    and the hash of its ancestors ``cols``: what :func:`leaf_counts` hashes of an input row
    whose ancestors are the domain's (the same expression, on the PUBLIC domain)."""
    return render(
        "leaf_codes.domain_path_hashes",
        code=depth_code(depth),
        path_hash=_path_hash(cols),
        codes=codes,
    )


def path_mismatches(table: str, n_chains: int) -> str:
    """The rows ``i`` of ``table`` (quoted: per leaf cell ``i``, its path hash ``h`` and, per
    checked chain, the domain's hash ``e0``, ``e1`` ... of its leaf's ancestors) whose path hash
    is not the domain's: the hash of the chains' hashes, as :func:`leaf_counts` takes it."""
    chains = [f"e{c}" for c in range(n_chains)]
    return render(
        "leaf_codes.path_mismatches",
        table=table,
        expected=chains[0] if n_chains == 1 else "hash(" + ", ".join(chains) + ")",
    )


def leaf_code(chain: int) -> str:
    """Name of the column holding chain ``chain``'s leaf code (fetched cells, released cells)."""
    return f"__leaf{chain}"


def write_output(spec: TreeSpec, output_sql: str, released: str, *, ordered: bool) -> str:
    """The released table from ``released`` (decoded hierarchy columns and counts, in leaf code
    order); ``ordered``: DuckDB keeps that order by itself, else it is spelled out."""
    order = "" if ordered else f"\nORDER BY {_cols(spec.columns)}"
    return render(
        "write_output",
        output=output_sql,
        cols=_cols(spec.columns),
        released=ident(released),
        order=order,
    )


def insertion_order() -> str:
    """Whether DuckDB keeps the order in which rows are read (``preserve_insertion_order``)."""
    return render("write_output.insertion_order")


def levels_view(
    spec: TreeSpec,
    view_sql: str,
    output_sql: str,
    bounds: Mapping[str, tuple[float | None, float | None]] | None = None,
) -> str:
    """A view with every level of the release (level 0 = root) as sums of the leaves.

    ``bounds``: per level name, ``(error bound, typical error)`` (public constants, see
    :mod:`inftda_sql.core.bounds`; None is NULL), written as the columns ``error_bound`` and
    ``typical_error``; without it the view has no such columns.
    """
    all_cols = spec.columns
    sets, cases, labels, bound, typical = [], [], [], [], []
    for level, depths in enumerate(spec.levels):
        in_set = {col for chain, d in zip(spec.chains, depths, strict=True) for col in chain[:d]}
        mask = 0
        for col in all_cols:
            mask = (mask << 1) | (0 if col in in_set else 1)
        sets.append("(" + _cols([c for c in all_cols if c in in_set]) + ")")
        cases.append(f"WHEN {mask} THEN {level}")
        name = spec.level_name(level).replace("'", "''")
        labels.append(f"WHEN {mask} THEN '{name}'")
        if bounds is not None:
            b, t = bounds.get(spec.level_name(level), (None, None))
            bound.append(f"WHEN {mask} THEN {sql_constant(b)}")
            typical.append(f"WHEN {mask} THEN {sql_constant(t)}")
    extra = ""
    if bounds is not None:
        extra = (
            ",\n       "
            + render(
                "levels_view.bounds",
                cols=_cols(all_cols),
                bound=" ".join(bound),
                typical=" ".join(typical),
            ).strip()
        )
    return render(
        "levels_view",
        view=view_sql,
        cols=_cols(all_cols),
        cases=" ".join(cases),
        names=" ".join(labels),
        output=output_sql,
        sets=", ".join(sets),
        bounds=extra,
    )
