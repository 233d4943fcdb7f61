"""Compile a hierarchy spec into DuckDB SQL (the templates in ``sql/`` filled with identifiers).

Every function returns SQL text only; :mod:`inftda_sql._release` executes it. Identifiers come
from a :class:`~inftda_sql.core.spec.TreeSpec` whose columns were checked against the catalog, and
are quoted by :func:`~inftda_sql.engines.duckdb.sql.ident`.

The data flow it encodes: one ``GROUP BY`` scan of the input (:func:`leaf_counts`) aggregates the
private data to its leaf cells; their leaf values are replaced by dense integer codes of the
public domain and fetched once (:func:`leaf_codes`); every tree level's counts are sums of those
cells (:mod:`inftda_sql.core.cells`, in numpy). The released leaf codes are decoded from the
coded domain and written in code order (:func:`write_output`).

The modules, one job each: :mod:`.release` (the hierarchy release), :mod:`.checks` (checks of
the private input), :mod:`.evaluate`, :mod:`.catalog`, :mod:`.publish`, :mod:`.features` (CBDP),
:mod:`.coc` (count-of-counts) and :mod:`._common` (temporary names, quoting). Callers use this
package (``from . import compile as _compile``), which re-exports every function.
"""

from __future__ import annotations

from ._common import TempNames, string_literal
from .catalog import (
    describe,
    describe_table,
    drop_object,
    drop_temp_table,
    drop_temp_view,
    explain,
    set_explain_output,
)
from .checks import (
    distinct_paths,
    leaf_of_code,
    leaf_stats,
    missing_leaf,
    nan_leaves,
    offending_rows,
    row_count,
    unit_nulls,
)
from .coc import (
    coc_disagree_hint,
    coc_evaluate,
    coc_group_sizes,
    coc_histograms,
    coc_levels_view,
    coc_node_codes,
    coc_public_groups,
    coc_split_groups,
    coc_write_output,
)
from .evaluate import evaluate_cells, level_cell_columns, node_counts, zoom_cells
from .features import (
    feature_counts,
    feature_output,
    feature_part,
    feature_read_back,
    feature_set_mask,
    feature_unmatched,
    features_view,
    query_code,
)
from .publish import attach, copy_table, detach, read_files, use
from .release import (
    ancestor_hashes,
    ancestors,
    bad_path,
    bound_units,
    chain_columns,
    coded_cells,
    coded_leaf_counts,
    count_checks,
    depth_code,
    domain_paths,
    insertion_order,
    leaf_code,
    leaf_codes,
    leaf_counts,
    leaf_values,
    levels_view,
    nesting_check,
    not_whole,
    write_output,
)

__all__ = [
    "TempNames",
    "ancestor_hashes",
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
    "coded_cells",
    "coded_leaf_counts",
    "copy_table",
    "count_checks",
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
    "leaf_values",
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
