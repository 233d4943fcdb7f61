"""``evaluate()``: per-level accuracy of a release, measured against the true data.

NOT PRIVATE. Evaluation reads the true (private) data, so it sits outside the privacy boundary:
its numbers are for the data owner choosing a budget or a mechanism, never for publication, and
nothing here touches the ledger. The comparison runs in DuckDB (``sql/evaluate_levels.sql``):
each side is scanned once and grouped to its leaf cells, every level of the release's tree is a
``GROUP BY`` of those, and the two sides meet in a ``FULL OUTER JOIN`` per level, so it scales
like a release does.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import duckdb
import pyarrow as pa

from ._errors import Arg, InputDataError, SpecError
from ._recorded import recorded_release, truth_reading
from ._tables import html_table, text_table
from .core.spec import TreeSpec, parse_hierarchy
from .engines.duckdb import compile as _compile
from .engines.duckdb.catalog import Source, count_column, drop_temp, resolve_source, type_family
from .engines.duckdb.compile import level_cell_columns
from .engines.duckdb.connection import require_open
from .engines.duckdb.sql import arrow, ident, render

__all__ = [
    "COC_EVALUATION_COLUMNS",
    "EVALUATION_COLUMNS",
    "Evaluation",
    "compared_cells",
    "evaluate",
    "evaluate_count_of_counts",
    "level_cell_columns",
]

#: the columns of the relation :func:`evaluate` returns, in order
EVALUATION_COLUMNS = (
    "level",
    "level_name",
    "cells_true",
    "cells_released",
    "max_abs_error",
    "mean_abs_error",
    "false_discovery_rate",
    "false_negative_rate",
    "total_true",
    "total_released",
)


class Evaluation:
    """What :func:`evaluate` and :func:`evaluate_count_of_counts` return: a DuckDB relation
    over a small in-memory table, printed in full.

    It does what the relation does (``fetchall()``, ``columns``, ``project()``, ``df()``,
    ``pl()``, ``to_arrow_table()``, ...: every other attribute is the relation's, which is also
    :attr:`relation`), and it is an Arrow stream (``pa.table(ev)``; DuckDB and polars read it
    as one). Printed (``print(ev)``, a notebook cell) it shows every column, where DuckDB's own
    display drops columns that do not fit the terminal.
    """

    def __init__(self, relation: duckdb.DuckDBPyRelation, table: pa.Table) -> None:
        self.relation = relation
        self.table = table

    def __getattr__(self, name: str) -> Any:
        return getattr(self.relation, name)

    def __arrow_c_stream__(self, requested_schema: object = None) -> object:
        return self.table.__arrow_c_stream__(requested_schema)

    def _rows(self) -> list[tuple[object, ...]]:
        return [tuple(row.values()) for row in self.table.to_pylist()]

    def __str__(self) -> str:
        return "\n".join(text_table(self.table.column_names, self._rows(), left=1))

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        return html_table(self.table.column_names, self._rows())


def evaluate(
    con: duckdb.DuckDBPyConnection,
    truth: str | duckdb.DuckDBPyRelation | pa.Table | Any,
    released: str | duckdb.DuckDBPyRelation | pa.Table | Any,
    /,
    *,
    hierarchy: Sequence[str] | Sequence[Sequence[str]] | None = None,
    tree: str | None = None,
    count: str | None = None,
    released_count: str = "count",
) -> Evaluation:
    """Per-level accuracy of a released table against the true data (NOT PRIVATE).

    **Outside the privacy boundary.** Evaluation reads the TRUE data, so its results are as
    sensitive as the data: they are for the data owner (to choose a budget or a mechanism) and
    must not be published. It never writes to the ledger, and it is not a release.

    The levels are exactly those of :func:`~inftda_sql.release` with the same ``hierarchy`` and
    ``tree`` (level 0 = the root, the total; the last level = the leaves); a cell of a level is
    identified by every column of each chain down to the depth that level refines it to. Per
    level the two tables are compared over the UNION of their cells (a cell missing on one side
    counts 0; cells zero on both sides are ignored, except the root).

    Args:
        con: the DuckDB connection holding both tables.
        truth: the true data: a table/view name, a relation or a data frame (pandas, polars,
            Arrow); microdata (one row per record) or pre-aggregated with ``count=``.
        released: the released table (as written by ``release()``): a name, a relation or a
            data frame (``Release.data`` of a release returned in memory).
        hierarchy: the hierarchy of the release (``release(hierarchy=...)``); None: the
            hierarchy (and tree) of the release the ledger records as written to ``released``.
        tree: the tree of the release (``release(tree=...)``).
        count: the count column of a pre-aggregated ``truth`` (None: one row per record).
            When ``truth`` is the input of the release recorded for ``released`` (the same
            base tables or files), the truth is read as that release read it: None takes the
            count column from its ledger row, another column is refused, and so is a truth
            whose total differs from the total the release read (the input changed since).
        released_count: the count column of ``released``.

    Returns:
        An :class:`Evaluation` (a relation, printed with all its columns) with one row per
        level, ordered by level: ``level``, ``level_name``,
        ``cells_true`` (cells with a true count > 0), ``cells_released`` (released count > 0),
        ``max_abs_error`` and ``mean_abs_error`` (over the union of cells),
        ``false_discovery_rate`` (share of released cells > 0 whose true count is 0; 0 when
        nothing is released), ``false_negative_rate`` (share of true cells > 0 released as
        0, negative or missing; 0 when there are none), ``total_true``, ``total_released``.
        Counts and errors are BIGINT when both count columns are integers, else DOUBLE. The
        result is computed once (one query) and held in memory as a small Arrow table; the
        relation reads that table, so it stays valid if the inputs change or are dropped, and
        nothing is added to the database's catalog.

    Example:
        >>> import duckdb, inftda_sql
        >>> con = duckdb.connect()
        >>> _ = con.execute("CREATE TABLE geo (region VARCHAR, city VARCHAR)")
        >>> _ = con.execute("INSERT INTO geo VALUES ('N', 'a'), ('N', 'b'), ('S', 'c')")
        >>> _ = con.execute("CREATE TABLE persons AS SELECT * FROM geo, range(2) WHERE city <> 'b'")
        >>> _ = inftda_sql.release(con, "persons", hierarchy=["region", "city"], domain="geo",
        ...                        rho=float("inf"))
        >>> ev = inftda_sql.evaluate(con, "persons", "persons_private",
        ...                          hierarchy=["region", "city"])
        >>> ev.project("level, level_name, cells_true, max_abs_error").fetchall()
        [(0, 'root', 1, 0), (1, 'region', 2, 0), (2, 'city', 2, 0)]
    """
    require_open(con, "evaluate")
    recorded = recorded_release(con, released)
    if hierarchy is None:
        if recorded is None or recorded.hierarchy is None:
            what = "a feature release" if recorded is not None else "not a release in the ledger"
            raise SpecError(
                f"{released!r} is {what}: pass ", Arg("hierarchy", ...), param="hierarchy"
            )
        hierarchy, tree = recorded.hierarchy, tree or recorded.tree
    count, same = truth_reading(con, truth, released, count)
    spec = parse_hierarchy(hierarchy, tree)
    with compared_cells(con, truth, released, spec, count, released_count) as (cte, value_type):
        sql = render(
            "evaluate_levels",
            cells_cte=cte,
            value_type=value_type,
            n_levels=str(spec.n_levels + 1),
        )
        table = arrow(con, sql)
    if same is not None:  # the release's own input: its total must be what the release read
        levels = table.column("level").to_pylist()
        same.check_total(table.column("total_true")[levels.index(0)].as_py() or 0, count)
    names = pa.array([spec.level_name(lv) for lv in range(spec.n_levels + 1)], pa.string())
    table = table.add_column(1, "level_name", names)
    table = table.select(list(EVALUATION_COLUMNS))
    return Evaluation(con.from_arrow(table), table)


@contextlib.contextmanager
def compared_cells(
    con: duckdb.DuckDBPyConnection,
    truth: object,
    released: object,
    spec: TreeSpec,
    count: str | None,
    released_count: str,
) -> Iterator[tuple[str, str]]:
    """Validate both sides and yield ``(cte, value_type)``: a ``WITH`` clause defining ``cells``
    (``level``, true count ``t``, released count ``r``, one row per cell of the union, every
    level) and the SQL type of the counts (BIGINT or DOUBLE). Temporary views made for relations
    are dropped on exit."""
    prefix = f"__inftda_eval_{uuid.uuid4().hex[:12]}_"
    sources: list[Source] = []
    try:
        t_src = resolve_source(con, truth, role="true table", temp_name=prefix + "truth")
        sources.append(t_src)
        r_src = resolve_source(con, released, role="released table", temp_name=prefix + "rel")
        sources.append(r_src)
        for col in spec.columns:
            t_src.column(col, "hierarchy column")
            r_src.column(col, "hierarchy column")
            t_type, r_type = t_src.columns[col.lower()], r_src.columns[col.lower()]
            if type_family(t_type) != type_family(r_type):
                raise InputDataError(
                    f"column {col!r} is {t_type} in {t_src.description} but {r_type} in "
                    f"{r_src.description}; cast one of them in a view so both have the same type"
                )
        if count is None:
            truth_sum, t_int = "count(*)", True
        else:
            t_count, t_int = count_column(t_src, count, "count column")
            if count.lower() in {c.lower() for c in spec.columns}:
                raise SpecError(f"count column {count!r} is also a hierarchy column")
            truth_sum = f"sum({ident(t_count)})"
        r_count, r_int = count_column(r_src, released_count, "released count column")
        if released_count.lower() in {c.lower() for c in spec.columns}:
            raise SpecError(f"released_count column {released_count!r} is a hierarchy column")
        value_type = "BIGINT" if t_int and r_int else "DOUBLE"
        cte = _compile.evaluate_cells(
            spec,
            t_src.sql,
            r_src.sql,
            f"{truth_sum}::{value_type}",
            f"sum({ident(r_count)})::{value_type}",
        )
        yield cte, value_type
    finally:
        for src in sources:
            drop_temp(con, src)


#: the columns of the relation :func:`evaluate_count_of_counts` returns, in order
COC_EVALUATION_COLUMNS = (
    "level",
    "level_name",
    "nodes",
    "mean_emd",
    "max_emd",
    "groups_true",
    "groups_released",
)


def evaluate_count_of_counts(
    con: duckdb.DuckDBPyConnection,
    truth: str | duckdb.DuckDBPyRelation,
    released: str | duckdb.DuckDBPyRelation,
    /,
    *,
    group: str | None = None,
    hierarchy: Sequence[str] | None = None,
    groups: str | duckdb.DuckDBPyRelation | None = None,
    groups_column: str = "groups",
    released_size: str = "size",
    released_groups: str = "groups",
) -> Evaluation:
    """Earthmover's distance of a count-of-counts release per level (NOT PRIVATE).

    **Outside the privacy boundary**: it reads the true persons table; for the data owner.
    For every node (region) the earthmover's distance between its true and released histograms
    is ``sum over j of |Hc_true[j] - Hc_released[j]|`` (``Hc``: groups of size <= j), the
    number of persons to add or remove to turn one into the other; per level the mean and the
    largest over the nodes present on either side (Kuo et al.'s error measure). True sizes are
    not truncated: a release's ``max_size`` below the largest group counts as error.

    Args:
        con: the connection holding both tables.
        truth: the persons table (one row per person) of the release.
        released: the released table (``release_count_of_counts``'s output).
        group: the group column of ``truth``; None: the group column of the release the
            ledger records as written to ``released``.
        hierarchy: the region columns of the release, coarse to fine; None: from the ledger,
            as ``group``.
        groups: the groups table, when groups may be empty (``min_size=0``): its groups that
            the truth does not hold count as groups of size 0.
        groups_column: the column of ``groups`` holding the number of groups.
        released_size, released_groups: the columns of ``released``.

    Returns:
        A relation with one row per level (0 = the root): ``level``, ``level_name``, ``nodes``,
        ``mean_emd``, ``max_emd``, ``groups_true``, ``groups_released``.

    Example:
        >>> import duckdb, inftda_sql
        >>> con = duckdb.connect()
        >>> _ = con.execute("CREATE TABLE persons AS SELECT * FROM (VALUES (1, 'A', 'a1'), "
        ...                 "(1, 'A', 'a1'), (2, 'A', 'a2')) t(hh, state, county)")
        >>> _ = con.execute("CREATE TABLE rel AS SELECT * FROM (VALUES ('A', 'a1', 1, 1), "
        ...                 "('A', 'a2', 1, 1)) t(state, county, size, groups)")
        >>> evaluate_count_of_counts(con, "persons", "rel", group="hh",
        ...     hierarchy=["state", "county"]).project("level, mean_emd").fetchall()
        [(0, 1.0), (1, 1.0), (2, 0.5)]
    """
    require_open(con, "evaluate_count_of_counts")
    if group is None or hierarchy is None:
        recorded = recorded_release(con, released)
        if recorded is None or recorded.kind != "count_of_counts":
            what = "not a count-of-counts release in the ledger"
            missing = "group" if group is None else "hierarchy"
            raise SpecError(
                f"{released!r} is {what}, so its settings cannot come from there: pass ",
                Arg("group"),
                " and ",
                Arg("hierarchy"),
                param=missing,
            )
        group = recorded.group if group is None else group
        if hierarchy is None and recorded.chains:
            hierarchy = recorded.chains[0]
    if not isinstance(group, str):
        raise SpecError(f"group must be a column name, got {group!r}", param="group")
    spec = parse_hierarchy(hierarchy)
    if len(spec.chains) != 1:
        raise SpecError("a count-of-counts release has one chain of region columns")
    chain = spec.chains[0]
    prefix = f"__inftda_eval_{uuid.uuid4().hex[:12]}_"
    sources: list[Source] = []
    try:
        t_src = resolve_source(con, truth, role="true table", temp_name=prefix + "truth")
        sources.append(t_src)
        r_src = resolve_source(con, released, role="released table", temp_name=prefix + "rel")
        sources.append(r_src)
        t_group = t_src.column(group, "group column")
        for col in chain:
            t_src.column(col, "hierarchy column")
            r_src.column(col, "hierarchy column")
        r_size, _ = count_column(r_src, released_size, "released size column")
        r_groups, _ = count_column(r_src, released_groups, "released groups column")
        g_sql, g_col = None, None
        if groups is not None:
            g_src = resolve_source(con, groups, role="groups table", temp_name=prefix + "groups")
            sources.append(g_src)
            g_col, _ = count_column(g_src, groups_column, "groups column")
            g_sql = g_src.sql
        sql = _compile.coc_evaluate(
            chain, t_src.sql, t_group, r_src.sql, r_size, r_groups, g_sql, g_col
        )
        table = arrow(con, sql)
    finally:
        for src in sources:
            drop_temp(con, src)
    names = ["root", *chain]
    levels = table.column("level").to_pylist()
    table = table.add_column(1, "level_name", pa.array([names[lv] for lv in levels], pa.string()))
    table = table.select(list(COC_EVALUATION_COLUMNS))
    return Evaluation(con.from_arrow(table), table)
