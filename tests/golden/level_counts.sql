-- level_counts(NAMES, SPEC, 1, (2, 1)): d_reg
-- True counts of one tree level, keyed by the mixed-radix code of its cell, sorted by key.
-- Non-zero counts only (the contract of Engine.level_counts): a leaf cell whose every record
-- was dropped by contribution bounding, or an explicit zero row of a count= input, stays in
-- the keys table for the checks of the input but never reaches a mechanism. Counts are
-- checked non-negative before this runs, so a level's sum over the kept rows is positive.
SELECT ("__c1_d1" * 1)::BIGINT AS key, sum(n)::BIGINT AS n
FROM "__inftda_g_keys"
WHERE n > 0
GROUP BY 1
ORDER BY 1;

-- level_counts(NAMES, SPEC, 2, (1, 2)): o_reg x d_reg
-- True counts of one tree level, keyed by the mixed-radix code of its cell, sorted by key.
-- Non-zero counts only (the contract of Engine.level_counts): a leaf cell whose every record
-- was dropped by contribution bounding, or an explicit zero row of a count= input, stays in
-- the keys table for the checks of the input but never reaches a mechanism. Counts are
-- checked non-negative before this runs, so a level's sum over the kept rows is positive.
SELECT ("__c0_d1" * 1 + "__c1_d1" * 2)::BIGINT AS key, sum(n)::BIGINT AS n
FROM "__inftda_g_keys"
WHERE n > 0
GROUP BY 1
ORDER BY 1;

-- level_counts(NAMES, SPEC, 3, (3, 1)): o_reg x d_mun
-- True counts of one tree level, keyed by the mixed-radix code of its cell, sorted by key.
-- Non-zero counts only (the contract of Engine.level_counts): a leaf cell whose every record
-- was dropped by contribution bounding, or an explicit zero row of a count= input, stays in
-- the keys table for the checks of the input but never reaches a mechanism. Counts are
-- checked non-negative before this runs, so a level's sum over the kept rows is positive.
SELECT ("__c0_d1" * 3 + "__c1_d2" * 1)::BIGINT AS key, sum(n)::BIGINT AS n
FROM "__inftda_g_keys"
WHERE n > 0
GROUP BY 1
ORDER BY 1;

-- level_counts(NAMES, SPEC, 4, (1, 3)): o_mun x d_mun
-- True counts of the finest level (every chain at its leaf), keyed by the mixed-radix code of
-- the leaf cell, sorted by key: the keys table has one row per leaf cell already (the scan
-- grouped by the leaf columns, and a nested domain gives each leaf value one path), so no
-- GROUP BY. Non-zero counts only, as for every level (sql/level_counts.sql).
SELECT ("__c0_d2" * 1 + "__c1_d2" * 3)::BIGINT AS key, n::BIGINT AS n
FROM "__inftda_g_keys"
WHERE n > 0
ORDER BY 1;
