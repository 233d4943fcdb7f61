-- Every level of the release as sums of its leaves (consistent by construction).
CREATE VIEW $view AS
SELECT CASE grouping($cols) $cases END AS level,
       CASE grouping($cols) $names END AS level_name,
       $cols,
       coalesce(sum("count"), 0)::BIGINT AS "count"$bounds
FROM $output
GROUP BY GROUPING SETS ($sets)

-- name: bounds
-- per level, public constants (inftda_sql.core.bounds): the bound of every cell of the level
-- with probability >= 1 - beta, and the typical largest error of the level (NULL: none)
CASE grouping($cols) $bound END::DOUBLE AS error_bound,
       CASE grouping($cols) $typical END::DOUBLE AS typical_error

-- name: per_level
-- plot_bounds(): per level of a levels view, its name, bound and typical error
SELECT level, any_value(level_name), any_value(error_bound), any_value(typical_error)
FROM $view
GROUP BY level
ORDER BY level

-- name: top_cells
-- plot_bounds(): the largest released counts of one level, with their bound
SELECT $label, "count", error_bound
FROM $view
WHERE level = $$level
ORDER BY "count" DESC
LIMIT $limit
