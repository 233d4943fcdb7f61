-- True counts of the finest level (every chain at its leaf), keyed by the mixed-radix code of
-- the leaf cell, sorted by key: the keys table has one row per leaf cell already (the scan
-- grouped by the leaf columns, and a nested domain gives each leaf value one path), so no
-- GROUP BY. Non-zero counts only, as for every level (sql/level_counts.sql).
SELECT ($key)::BIGINT AS key, n::BIGINT AS n
FROM $keys
WHERE n > 0
ORDER BY 1
