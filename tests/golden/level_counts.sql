-- level_counts(NAMES, SPEC, 1, (2, 1)): d_reg
-- True counts of one tree level, keyed by the mixed-radix code of its cell, sorted by key.
SELECT ("__c1_d1" * 1)::BIGINT AS key, sum(n)::BIGINT AS n
FROM "__inftda_g_keys"
GROUP BY 1
ORDER BY 1;

-- level_counts(NAMES, SPEC, 2, (1, 2)): o_reg x d_reg
-- True counts of one tree level, keyed by the mixed-radix code of its cell, sorted by key.
SELECT ("__c0_d1" * 1 + "__c1_d1" * 2)::BIGINT AS key, sum(n)::BIGINT AS n
FROM "__inftda_g_keys"
GROUP BY 1
ORDER BY 1;

-- level_counts(NAMES, SPEC, 3, (3, 1)): o_reg x d_mun
-- True counts of one tree level, keyed by the mixed-radix code of its cell, sorted by key.
SELECT ("__c0_d1" * 3 + "__c1_d2" * 1)::BIGINT AS key, sum(n)::BIGINT AS n
FROM "__inftda_g_keys"
GROUP BY 1
ORDER BY 1;

-- level_counts(NAMES, SPEC, 4, (1, 3)): o_mun x d_mun
-- True counts of one tree level, keyed by the mixed-radix code of its cell, sorted by key.
SELECT ("__c0_d2" * 1 + "__c1_d2" * 3)::BIGINT AS key, sum(n)::BIGINT AS n
FROM "__inftda_g_keys"
GROUP BY 1
ORDER BY 1;
