-- evaluate(): per-level accuracy over the cells of every level (sql/evaluate_cells.sql, put first).
$cells_cte,
per_level AS (
    SELECT level,
           count(*) FILTER (WHERE t > 0) AS cells_true,
           count(*) FILTER (WHERE r > 0) AS cells_released,
           max(abs(t - r)) AS max_abs_error,
           avg(abs(t - r)) AS mean_abs_error,
           count(*) FILTER (WHERE r > 0 AND t = 0) AS false_discoveries,
           count(*) FILTER (WHERE t > 0 AND r <= 0) AS false_negatives,
           sum(t) AS total_true,
           sum(r) AS total_released
    FROM cells
    GROUP BY level
)
SELECT lv.level::INTEGER AS level,
       coalesce(p.cells_true, 0)::BIGINT AS cells_true,
       coalesce(p.cells_released, 0)::BIGINT AS cells_released,
       coalesce(p.max_abs_error, 0)::$value_type AS max_abs_error,
       coalesce(p.mean_abs_error, 0)::DOUBLE AS mean_abs_error,
       coalesce(p.false_discoveries / nullif(p.cells_released, 0), 0)::DOUBLE
           AS false_discovery_rate,
       coalesce(p.false_negatives / nullif(p.cells_true, 0), 0)::DOUBLE AS false_negative_rate,
       coalesce(p.total_true, 0)::$value_type AS total_true,
       coalesce(p.total_released, 0)::$value_type AS total_released
FROM range(0, $n_levels) AS lv(level)
LEFT JOIN per_level AS p USING (level)
ORDER BY lv.level
