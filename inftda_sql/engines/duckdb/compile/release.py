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


def nesting_check(codes_table: str, parent: str, child: str) -> str:
    """A query returning one child value listed under two parents, if any."""
    return render("nesting", codes=ident(codes_table), parent=ident(parent), child=ident(child))


def count_checks(count: str | None, *, bounded: bool) -> bool:
    """Whether a scan's leaf table keeps per-cell count checks (``__nulls``, ``__neg``,
    ``__frac``, ``__big``): only for a count column, the records not bounded per privacy unit.
    Records counted one by one have nothing to check, and their table no such columns
    (:func:`~.checks.leaf_stats` reads zeros instead: four constant columns cost Italy's scan
    of 28.8M rows ~7 ms)."""
    return count is not None and not bounded


def _checks_sql(parts: dict[str, str], counted: bool) -> str:
    """The count checks' columns of a scan (``counted``: :func:`count_checks`), or nothing."""
    if not counted:
        return ""
    names = ("nulls", "neg", "frac", "big")
    return "".join(f",\n       {parts['count_' + n]} AS __{n}" for n in names)


def _count_parts(
    count: str | None, count_is_integer: bool, *, bounded: bool, wide: bool, flag: bool = False
) -> dict[str, str]:
    """The aggregates of a scan (see :func:`leaf_counts`): the records counted (``count`` is
    the count column, or None for one row per record), and the number of rows whose count is
    NULL, negative, not whole or beyond int64: never a count. ``flag`` (the scan by codes):
    ``__nulls`` is 1 for a cell holding a NULL or negative count, one aggregate instead of two
    counts of rows, and ``__neg`` is 0."""
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
        "count_nulls": (
            f"(min(coalesce({n}, -1)) < 0)::BIGINT" if flag else f"count(*) FILTER ({n} IS NULL)"
        ),
        "count_neg": "0" if flag else f"count(*) FILTER ({n} < 0)",
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
    collects: one hash of them per row, grouped on beside the leaf columns (``__h``; a leaf cell
    whose rows disagree is split in several rows, see :func:`leaf_codes`); none by default.

    ``as_varchar`` names input columns (ENUMs) whose domain values are compared as VARCHAR;
    ``bounded`` means the input is :func:`bound_units` output (records flagged ``__keep``);
    ``wide`` means the count column's type can overflow 128-bit sums (see
    :func:`~inftda_sql.engines.duckdb.catalog.is_wide_number`): values beyond int64 are then
    counted in ``__big`` instead of summed, so no overflow error (which would print private
    values) can occur. Per cell it keeps, besides the sum ``__n``, the number of input rows
    with a NULL (``__nulls``), negative (``__neg``) or non-whole (``__frac``: fractional, NaN,
    infinite) count, where there is a count to check (:func:`count_checks`): the checks report
    how many rows are wrong, never a count.
    """
    parts = _count_parts(count, count_is_integer, bounded=bounded, wide=wide)
    checks = _checks_sql(parts, count_checks(count, bounded=bounded))
    path = path_key = ""
    if check:
        path_hash = _path_hash(check, as_varchar=as_varchar)
        path, path_key = f",\n       {path_hash} AS __h", f", {path_hash}"
    return render(
        "leaf_counts",
        leaf=ident(names.leaf),
        leaf_cols=_cols(spec.leaf_columns),
        input=input_sql,
        path=path,
        path_key=path_key,
        count_sum=parts["count_sum"],
        count_checks=checks,
    )


def coded_leaf_counts(
    names: TempNames,
    spec: TreeSpec,
    input_sql: str,
    count: str | None,
    count_is_integer: bool,
    *,
    bounded: bool = False,
    wide: bool = False,
    codes: Sequence[str] | None = None,
    check: Sequence[str] = (),
    as_varchar: frozenset[str] = frozenset(),
) -> str:
    """The single scan of the private input with every chain's leaf coded first: each row
    joined to its leaf's code in the chain's code table (``codes``, else the release's), then
    grouped by the codes (``__leaf0``, ...). The count checks are :func:`leaf_counts`', except
    that ``__nulls`` flags a cell holding a NULL or negative count (one aggregate instead of
    two counts of rows: 11-14 ms less on UK's 1.8M rows) and ``__neg`` is 0: a flagged cell
    sends the release to the scan by values, whose checks count those rows for the message. A
    leaf value the domain does not list, or NULL, groups under a NULL code.

    ``check`` names the input's ancestor columns to check against the domain: one hash of a
    row's ancestors per chain, combined by xor (``__h``), is a grouping key too (a cell whose
    rows disagree splits, as in :func:`leaf_counts`); the release compares it with the xor of
    the domain's per-leaf hashes (:func:`ancestor_hashes`), so the cells need no join."""
    tables = _code_tables(names, len(spec.chains), codes)
    code_cols, keys, joins = [], [], []
    for c, chain in enumerate(spec.chains):
        a, code = f"c{c}", ident(leaf_code(c))
        code_cols.append(f"{a}.{code}")
        keys.append(f"{a}.{code}")
        joins.append(
            f"LEFT JOIN (SELECT {ident(chain[-1])} AS __k, {depth_code(len(chain))} AS {code} "
            f"FROM {tables[c]}) AS {a} ON {a}.__k = __i.{ident(chain[-1])}"
        )
    if check:
        chain_hash = _chain_hash(spec, check, as_varchar)
        code_cols.append(f"{chain_hash} AS __h")
        keys.append(chain_hash)
    parts = _count_parts(count, count_is_integer, bounded=bounded, wide=wide, flag=True)
    return render(
        "leaf_counts.coded",
        leaf=ident(names.leaf),
        code_cols=", ".join(code_cols),
        code_keys=", ".join(keys),
        input=input_sql,
        joins="\n".join(joins),
        count_sum=parts["count_sum"],
        count_checks=_checks_sql(parts, count_checks(count, bounded=bounded)),
    )


def coded_cells(names: TempNames, spec: TreeSpec, check: bool = False) -> str:
    """The leaf cells of :func:`coded_leaf_counts` (a leaf code per chain, the ancestors' hash
    ``__h`` when ``check``, and ``n``), to fetch."""
    cols = [f"l.{ident(leaf_code(c))}" for c in range(len(spec.chains))]
    return render(
        "leaf_codes.coded_cells",
        leaf=ident(names.leaf),
        code_cols=", ".join([*cols, "l.__h"] if check else cols),
    )


def ancestor_hashes(
    names: TempNames, chain_index: int, chain: Sequence[str], cols: Sequence[str], codes: str | None
) -> str:
    """The hash of the ancestor columns ``cols`` of every leaf of chain ``chain_index``'s code
    table (``codes``, else the release's), in code order: the PUBLIC side of the check of
    :func:`coded_leaf_counts`."""
    return render(
        "leaf_codes.ancestor_hashes",
        hash=_path_hash(cols),
        codes=codes or ident(names.codes(chain_index)),
        code=depth_code(len(chain)),
    )


def _chain_hash(spec: TreeSpec, check: Sequence[str], as_varchar: frozenset[str]) -> str:
    """The xor of one hash per chain of its ``check`` columns (chains without any add
    nothing): :func:`coded_leaf_counts`' ``__h``."""
    hashes = [
        _path_hash(cols, as_varchar=as_varchar)
        for chain in spec.chains
        if (cols := [col for col in check if col in chain])
    ]
    combined = hashes[0]
    for h in hashes[1:]:
        combined = f"xor({combined}, {h})"
    return combined


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
    row's ancestors hash to the domain's for its leaf (false on every row of a cell the scan
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
        expected = _path_hash(check, alias)
        path_ok = f",\n       (l.__h = {expected}) AS path_ok"
    return render(
        "leaf_codes",
        leaf=ident(names.leaf),
        code_cols=", ".join(code_cols),
        path_ok=path_ok,
        joins="\n".join(joins),
    )


def leaf_values(names: TempNames, spec: TreeSpec) -> str:
    """The leaf cells with every chain's leaf value (its column) and count ``n``, to fetch and
    code outside SQL (:class:`~inftda_sql.core.leaf_index.LeafIndex`)."""
    return render(
        "leaf_codes.leaf_values",
        leaf=ident(names.leaf),
        leaf_cols=", ".join(f"l.{ident(col)}" for col in spec.leaf_columns),
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
    for level in range(len(spec.levels)):
        mask = spec.grouping_mask(level, all_cols)
        sets.append("(" + _cols(spec.grouped_columns(level)) + ")")
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
