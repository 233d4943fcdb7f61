-- True counts of one tree level, keyed by the mixed-radix code of its cell, sorted by key.
SELECT ($key)::BIGINT AS key, sum(n)::BIGINT AS n
FROM $keys
GROUP BY 1
ORDER BY 1
