-- True counts of one tree level, keyed by the mixed-radix code of its cell, sorted by key.
-- Non-zero counts only (the contract of Engine.level_counts): a leaf cell whose every record
-- was dropped by contribution bounding, or an explicit zero row of a count= input, stays in
-- the keys table for the checks of the input but never reaches a mechanism. Counts are
-- checked non-negative before this runs, so a level's sum over the kept rows is positive.
SELECT ($key)::BIGINT AS key, sum(n)::BIGINT AS n
FROM $keys
WHERE n > 0
GROUP BY 1
ORDER BY 1
