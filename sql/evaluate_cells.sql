-- evaluate() and plot_zoom(): the cells of every level of a release's tree, with their TRUE
-- count t and released count r (not private: for the data owner only). Each side is scanned
-- once and grouped to its leaf cells; every level is a GROUP BY of those, and the two sides
-- meet over the UNION of their cells (FULL OUTER JOIN; a cell missing on one side counts 0).
WITH
truth_leaf AS MATERIALIZED (
    SELECT $cols, $truth_sum AS __n FROM $truth GROUP BY ALL
),
released_leaf AS MATERIALIZED (
    SELECT $cols, $released_sum AS __n FROM $released GROUP BY ALL
),
cells AS (
$cells
)
