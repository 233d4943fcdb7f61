"""Compile a hierarchy spec into DuckDB SQL (the templates in ``sql/`` filled with identifiers).

Every function returns SQL text only; :mod:`inftda_sql._release` executes it. Identifiers come
from a :class:`~inftda_sql.core.spec.TreeSpec` whose columns were checked against the catalog, and
are quoted by :func:`~inftda_sql.engines.duckdb.sql.ident`.

The data flow it encodes: one ``GROUP BY`` scan of the input (:func:`leaf_counts`) aggregates the
private data to its leaf cells; their leaf values are replaced by dense integer codes of the
public domain and fetched once (:func:`leaf_codes`); every tree level's counts are sums of those
cells (:mod:`inftda_sql.core.cells`, in numpy). The released leaf codes are decoded from the
coded domain and written in code order (:func:`write_output`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ...core.features import FeatureSpec, Lattice
from ...core.spec import TreeSpec
from .sql import ident, render, template

__all__ = [
    "TempNames",
    "ancestors",
    "attach",
    "bad_path",
    "bound_units",
    "chain_columns",
    "coc_disagree_hint",
    "coc_evaluate",
    "coc_group_sizes",
    "coc_histograms",
    "coc_levels_view",
    "coc_node_codes",
    "coc_public_groups",
    "coc_split_groups",
    "coc_write_output",
    "copy_table",
    "depth_code",
    "describe",
    "describe_table",
    "detach",
    "distinct_paths",
    "domain_paths",
    "drop_object",
    "drop_temp_table",
    "drop_temp_view",
    "evaluate_cells",
    "explain",
    "feature_counts",
    "feature_output",
    "feature_part",
    "feature_read_back",
    "feature_set_mask",
    "feature_unmatched",
    "features_view",
    "insertion_order",
    "leaf_code",
    "leaf_codes",
    "leaf_counts",
    "leaf_of_code",
    "leaf_stats",
    "level_cell_columns",
    "levels_view",
    "missing_leaf",
    "nan_leaves",
    "nesting_check",
    "node_counts",
    "not_whole",
    "offending_rows",
    "query_code",
    "read_files",
    "row_count",
    "set_explain_output",
    "string_literal",
    "unit_nulls",
    "use",
    "write_output",
    "zoom_cells",
]


@dataclass(frozen=True)
class TempNames:
    """Names of the temporary objects of one release (unique per release)."""

    prefix: str

    def codes(self, chain: int) -> str:
        return f"{self.prefix}codes_{chain}"

    def domain(self, chain: int) -> str:
        return f"{self.prefix}domain_{chain}"

    @property
    def input(self) -> str:
        return f"{self.prefix}input"

    @property
    def leaf(self) -> str:
        return f"{self.prefix}leaf"

    @property
    def released(self) -> str:
        return f"{self.prefix}released"

    def part(self, index: int) -> str:
        """The code table of one table of a feature release's domain."""
        return f"{self.prefix}part_{index}"


def _code_tables(names: TempNames, n_chains: int, codes: Sequence[str] | None) -> list[str]:
    """The (quoted) code table of every chain: ``codes`` when given (a cached domain), else the
    release's registered ones."""
    return list(codes) if codes is not None else [ident(names.codes(c)) for c in range(n_chains)]


def _cols(cols: Sequence[str], alias: str = "") -> str:
    pre = f"{alias}." if alias else ""
    return ", ".join(pre + ident(c) for c in cols)


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
    collects (min and max of their hash per leaf cell, see :func:`leaf_codes`); none by default.

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
    paths = ""
    if check:
        path = _path_hash(check, as_varchar=as_varchar)
        paths = f",\n       min({path}) AS __hmin,\n       max({path}) AS __hmax"
    return render(
        "leaf_counts",
        leaf=ident(names.leaf),
        leaf_cols=_cols(spec.leaf_columns),
        input=input_sql,
        paths=paths,
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
    with ``check`` (the ancestor columns :func:`leaf_counts` hashed) also ``path_ok``."""
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
        path_ok = f",\n       (l.__hmin = l.__hmax AND l.__hmin = {expected}) AS path_ok"
    return render(
        "leaf_codes",
        leaf=ident(names.leaf),
        code_cols=", ".join(code_cols),
        path_ok=path_ok,
        joins="\n".join(joins),
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


def levels_view(spec: TreeSpec, view_sql: str, output_sql: str) -> str:
    """A view with every level of the release (level 0 = root) as sums of the leaves."""
    all_cols = spec.columns
    sets, cases, labels = [], [], []
    for level, depths in enumerate(spec.levels):
        in_set = {col for chain, d in zip(spec.chains, depths, strict=True) for col in chain[:d]}
        mask = 0
        for col in all_cols:
            mask = (mask << 1) | (0 if col in in_set else 1)
        sets.append("(" + _cols([c for c in all_cols if c in in_set]) + ")")
        cases.append(f"WHEN {mask} THEN {level}")
        name = spec.level_name(level).replace("'", "''")
        labels.append(f"WHEN {mask} THEN '{name}'")
    return render(
        "levels_view",
        view=view_sql,
        cols=_cols(all_cols),
        cases=" ".join(cases),
        names=" ".join(labels),
        output=output_sql,
        sets=", ".join(sets),
    )


# ---------------------------------------------------------------------------------------------
# checks of the private input (sql/checks.sql), before any noise


def leaf_stats(names: TempNames, leaf_cols: Sequence[str], limit: int) -> str:
    """NULL rows per leaf column, then the count column's NULL, negative, non-whole and
    beyond-int64 rows, and the leaf cells whose count exceeds ``limit``."""
    nulls = ", ".join(f"count(*) FILTER ({ident(c)} IS NULL)" for c in leaf_cols)
    return render(
        "checks.leaf_stats", null_counts=nulls, leaf=ident(names.leaf), limit=str(int(limit))
    )


def nan_leaves(names: TempNames, nan_cols: Sequence[str]) -> str:
    """The leaf cells whose value is NaN, per floating-point leaf column ``nan_cols``."""
    checks = ", ".join(f"count(*) FILTER (isnan({ident(c)}))" for c in nan_cols)
    return render("checks.nan_leaves", checks=checks, leaf=ident(names.leaf))


def offending_rows(input_sql: str, condition: str) -> str:
    """The rows of the input for which ``condition`` holds (shown to the data owner as the
    query to run; never executed by a release)."""
    return render("checks.offending_rows", input=input_sql, condition=condition).strip()


def unit_nulls(input_sql: str, unit: str) -> str:
    """Rows whose privacy unit is NULL."""
    return render("checks.unit_nulls", input=input_sql, unit=ident(unit))


def missing_leaf(
    names: TempNames, chain_index: int, chain: Sequence[str], codes: str | None = None
) -> str:
    """A leaf value of the input the domain does not list, and how many there are."""
    return render(
        "checks.missing_leaf",
        leaf_col=ident(chain[-1]),
        leaf=ident(names.leaf),
        codes=codes or ident(names.codes(chain_index)),
    )


def leaf_of_code(
    names: TempNames, chain_index: int, chain: Sequence[str], codes: str | None = None
) -> str:
    """The leaf value of chain ``chain_index`` whose code is the bound ``$code``."""
    return render(
        "checks.leaf_of_code",
        leaf_col=ident(chain[-1]),
        codes=codes or ident(names.codes(chain_index)),
        code=depth_code(len(chain)),
    )


def row_count(input_sql: str) -> str:
    """Rows of the input."""
    return render("checks.row_count", input=input_sql)


def distinct_paths(chain: Sequence[str], input_sql: str) -> str:
    """The distinct paths of a chain in the input (the domain from the data: NOT private)."""
    return render("checks.distinct_paths", cols=_cols(chain), input=input_sql)


# ---------------------------------------------------------------------------------------------
# evaluate() and plot_zoom(): the true and released cells of every level (sql/evaluate_cells.sql)


def level_cell_columns(spec: TreeSpec, level: int) -> tuple[str, ...]:
    """The columns that identify a cell of ``level``: every column of each chain down to the
    depth the level refines it to (ancestors included, so equal codes under different parents
    stay distinct)."""
    return tuple(
        col
        for chain, depth in zip(spec.chains, spec.levels[level], strict=True)
        for col in chain[:depth]
    )


def evaluate_cells(
    spec: TreeSpec,
    truth_sql: str,
    released_sql: str,
    truth_sum: str,
    released_sum: str,
) -> str:
    """A ``WITH`` clause defining ``cells`` (``level``, true count ``t``, released count ``r``):
    one row per cell of the union of both sides, every level (the root always)."""
    parts = [template("evaluate_cells.root").rstrip()]
    for level in range(1, spec.n_levels + 1):
        cols = level_cell_columns(spec, level)
        on = " AND ".join(f"tl.{ident(c)} IS NOT DISTINCT FROM rl.{ident(c)}" for c in cols)
        parts.append(
            render("evaluate_cells.level", level=str(level), cols=_cols(cols), on=on).rstrip()
        )
    return render(
        "evaluate_cells",
        cols=_cols(spec.columns),
        truth=truth_sql,
        released=released_sql,
        truth_sum=truth_sum,
        released_sum=released_sum,
        cells="\n    UNION ALL\n".join(parts),
    ).rstrip()


def zoom_cells(cells_cte: str) -> str:
    """Every non-root cell's level, true and released count (plot_zoom())."""
    return render("evaluate_cells.zoom", cte=cells_cte)


def node_counts(chain: Sequence[str], domain_sql: str) -> str:
    """The number of nodes of every depth of a chain's domain (one row, one column per depth)."""
    counts = ", ".join(
        f"count(DISTINCT ({_cols(chain[:d])}))" if d > 1 else f"count(DISTINCT {ident(chain[0])})"
        for d in range(1, len(chain) + 1)
    )
    return render("domain_paths.node_counts", counts=counts, domain=domain_sql)


# ---------------------------------------------------------------------------------------------
# the catalog (sql/catalog.sql)


def drop_object(kind: str, name_sql: str) -> str:
    """``DROP TABLE`` or ``DROP VIEW`` of an already-quoted name (``kind``: table or view)."""
    return render("catalog.drop_object", kind="VIEW" if kind == "view" else "TABLE", name=name_sql)


def drop_temp_view(name: str) -> str:
    return render("catalog.drop_view", view=ident(name))


def drop_temp_table(name: str) -> str:
    return render("catalog.drop_table", table=ident(name))


def describe(source_sql: str) -> str:
    """The columns and types of a readable source."""
    return render("catalog.describe", source=source_sql)


def explain(source_sql: str) -> str:
    """The plans (JSON) of reading a source, for the tables it reads."""
    return render("catalog.explain", source=source_sql)


def set_explain_output(value: str) -> str:
    """``SET explain_output`` (DuckDB cannot bind a setting's value as a parameter)."""
    return render("catalog.set_explain_output", value=string_literal(value))


def describe_table(name: str) -> str:
    return render("catalog.describe_table", table=ident(name))


# ---------------------------------------------------------------------------------------------
# publish() (sql/publish.sql)


def string_literal(text: str) -> str:
    """A SQL string literal (quotes doubled); for the few places DuckDB cannot bind a value,
    such as the path of ``ATTACH``."""
    return "'" + text.replace("'", "''") + "'"


#: DuckDB's reader of each file format (resolve_files() decides the format)
_READERS = {"parquet": "read_parquet", "csv": "read_csv"}


def read_files(file_format: str, paths: Sequence[str]) -> str:
    """A table function reading exactly ``paths`` (absolute, resolved) in ``file_format``."""
    files = ", ".join(string_literal(p) for p in paths)
    return render("catalog.read_files", reader=_READERS[file_format], files=files).strip()


def attach(path: str, alias: str, storage_version: str | None) -> str:
    """Attach a new database file under ``alias`` (in an older storage format if asked)."""
    options = (
        "" if storage_version is None else (f" (STORAGE_VERSION {string_literal(storage_version)})")
    )
    return render("publish.attach", path=string_literal(path), alias=ident(alias), options=options)


def copy_table(target_sql: str, source_sql: str) -> str:
    return render("publish.copy_table", target=target_sql, source=source_sql)


def use(database: str) -> str:
    return render("publish.use", database=ident(database))


def detach(alias: str) -> str:
    return render("publish.detach", alias=ident(alias))


# ---------------------------------------------------------------------------------------------
# feature releases (sql/features.sql)


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


# ---------------------------------------------------------------------------------------------
# count-of-counts histograms (sql/count_of_counts.sql)


def _rollup_level(chain: Sequence[str]) -> str:
    """``CASE grouping(cols) ...`` giving the level (0 = root) of a ROLLUP row over ``chain``."""
    cases = " ".join(f"WHEN {(1 << (len(chain) - d)) - 1} THEN {d}" for d in range(len(chain) + 1))
    return f"CASE grouping({_cols(chain)}) {cases} END"


def coc_public_groups(
    chain: Sequence[str], table_sql: str, groups: str, codes: str, leaf_type: str
) -> str:
    """The public groups table per leaf code: listed rows, groups, NULLs, fractions."""
    leaf = ident(chain[-1])
    return render(
        "count_of_counts.public_groups",
        leaf_code=depth_code(len(chain)),
        groups=ident(groups),
        table=table_sql,
        leaf_col=leaf,
        codes=ident(codes),
        leaf_match=f"CAST(g.{leaf} AS {leaf_type}) = c.{leaf}",
    )


def coc_group_sizes(sizes: str, chain: Sequence[str], group: str, input_sql: str) -> str:
    """A: one row per group of the input (its id, its region columns, its size)."""
    return render(
        "count_of_counts.group_sizes",
        sizes=ident(sizes),
        group=ident(group),
        cols=_cols(chain),
        input=input_sql,
    )


def coc_split_groups(sizes: str) -> str:
    """Groups listed in more than one leaf, and rows with a NULL group id."""
    return render("count_of_counts.split_groups", sizes=ident(sizes))


def coc_histograms(histograms: str, sizes: str, chain: Sequence[str]) -> str:
    """H of every node of every level: ``GROUP BY ROLLUP (<levels>), size``, into a table."""
    return render(
        "count_of_counts.histograms",
        histograms=ident(histograms),
        grouping=_rollup_level(chain),
        cols=_cols(chain),
        sizes=ident(sizes),
    )


def coc_node_codes(histograms: str, codes: str, chain: Sequence[str], level: int) -> str:
    """The histograms of ``level`` keyed by node code (NULL where a region is not in the
    domain); the leaf level also returns its region columns, for the error message."""
    cols = chain[:level]
    if level == 0:
        return render("count_of_counts.root_histogram", histograms=ident(histograms))
    return render(
        "count_of_counts.node_codes",
        code=depth_code(level),
        histograms=ident(histograms),
        codes=ident(codes),
        checks="".join(f", h.{ident(c)}" for c in cols),
        level_cols=_cols(cols),
        match=" AND ".join(f"h.{ident(c)} = c.{ident(c)}" for c in cols),
        level=str(level),
    )


def coc_write_output(output_sql: str, released: str, codes: str, chain: Sequence[str]) -> str:
    """The output table: region columns of every level, size, groups (leaf rows, groups > 0)."""
    return render(
        "count_of_counts.write_output",
        output=output_sql,
        cols=_cols(chain),
        released=ident(released),
        codes=ident(codes),
        leaf_code=depth_code(len(chain)),
    )


def coc_levels_view(chain: Sequence[str], view_sql: str, output_sql: str) -> str:
    """Every level of a count-of-counts release (level 0 = root) as sums of the leaves."""
    sets, cases, labels = [], [], []
    for level in range(len(chain) + 1):
        mask = (1 << (len(chain) - level)) - 1
        sets.append("(" + ", ".join([*(ident(c) for c in chain[:level]), "size"]) + ")")
        cases.append(f"WHEN {mask} THEN {level}")
        name = (chain[level - 1] if level else "root").replace("'", "''")
        labels.append(f"WHEN {mask} THEN '{name}'")
    return render(
        "count_of_counts.levels_view",
        view=view_sql,
        cols=_cols(chain),
        cases=" ".join(cases),
        names=" ".join(labels),
        output=output_sql,
        sets=", ".join(sets),
    )


def coc_disagree_hint(
    chain: Sequence[str], table_sql: str, groups: str, input_sql: str, group: str
) -> str:
    """A query the data owner can run: regions whose groups in the input differ from the table."""
    text = render(
        "count_of_counts.disagree_hint",
        cols=_cols(chain),
        groups=ident(groups),
        table=table_sql,
        input=input_sql,
        group=ident(group),
    )
    # without the template's comment: the query is shown on one line in an error message
    return "\n".join(line for line in text.splitlines() if not line.startswith("--")) + "\n"


def coc_evaluate(
    chain: Sequence[str],
    truth_sql: str,
    group: str,
    released_sql: str,
    released_size: str,
    released_groups: str,
    groups_sql: str | None = None,
    groups_column: str | None = None,
) -> str:
    """Per level: nodes, mean and largest earthmover's distance of a count-of-counts release
    against the truth; with a groups table, the listed groups the truth lacks are size 0."""
    cols = _cols(chain)
    empty = ""
    if groups_sql is not None and groups_column is not None:
        found = f"(SELECT {cols}, count(*) AS found FROM sizes GROUP BY ALL)"
        empty = (
            f"\n    UNION ALL\n    SELECT {_cols(chain, 'g')}, 0 AS size, "
            f"g.{ident(groups_column)} - coalesce(f.found, 0) AS groups\n"
            f"    FROM {groups_sql} AS g LEFT JOIN {found} AS f USING ({cols})\n"
            f"    WHERE g.{ident(groups_column)} > coalesce(f.found, 0)"
        )
    return render(
        "count_of_counts.evaluate",
        group=ident(group),
        cols=cols,
        truth=truth_sql,
        empty_groups=empty,
        grouping=_rollup_level(chain),
        released=released_sql,
        released_size=ident(released_size),
        released_groups=ident(released_groups),
        coalesced=", ".join(f"coalesce(t.{ident(c)}, r.{ident(c)}) AS {ident(c)}" for c in chain),
        on="".join(f" AND t.{ident(c)} IS NOT DISTINCT FROM r.{ident(c)}" for c in chain),
    )
