-- Every level of the release as sums of its leaves (consistent by construction).
CREATE VIEW $view AS
SELECT CASE grouping($cols) $cases END AS level,
       CASE grouping($cols) $names END AS level_name,
       $cols,
       coalesce(sum("count"), 0)::BIGINT AS "count"
FROM $output
GROUP BY GROUPING SETS ($sets)
