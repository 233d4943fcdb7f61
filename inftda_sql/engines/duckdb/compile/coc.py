"""Count-of-counts histograms (``sql/count_of_counts.sql``)."""

from __future__ import annotations

from collections.abc import Sequence

from ..sql import ident, render
from ._common import _cols
from .release import depth_code


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
