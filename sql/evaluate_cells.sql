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

-- name: root
    SELECT 0 AS level, coalesce((SELECT sum(__n) FROM truth_leaf), 0) AS t,
           coalesce((SELECT sum(__n) FROM released_leaf), 0) AS r

-- name: level
    SELECT $level AS level, coalesce(tl.__n, 0) AS t, coalesce(rl.__n, 0) AS r
    FROM (SELECT $cols, sum(__n) AS __n FROM truth_leaf GROUP BY ALL) AS tl
    FULL OUTER JOIN (SELECT $cols, sum(__n) AS __n FROM released_leaf GROUP BY ALL) AS rl
    ON $on
    WHERE coalesce(tl.__n, 0) <> 0 OR coalesce(rl.__n, 0) <> 0

-- name: zoom
$cte
SELECT level, t, r FROM cells WHERE level > 0 ORDER BY level

