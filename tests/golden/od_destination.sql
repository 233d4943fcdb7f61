-- The paths of one chain of the PUBLIC domain, cast to the input's types, sorted.
-- Sorted (parent path, value) order makes the children of every node one contiguous run, so
-- dense codes per depth follow from where neighbouring rows change (and repeated rows, which
-- change nowhere, are dropped there: cheaper than a DISTINCT before the sort).
SELECT CAST("o_reg" AS VARCHAR) AS "o_reg", CAST("o_mun" AS VARCHAR) AS "o_mun"
FROM "geo_o"
ORDER BY ALL;

-- The paths of one chain of the PUBLIC domain, cast to the input's types, sorted.
-- Sorted (parent path, value) order makes the children of every node one contiguous run, so
-- dense codes per depth follow from where neighbouring rows change (and repeated rows, which
-- change nowhere, are dropped there: cheaper than a DISTINCT before the sort).
SELECT CAST("d_reg" AS VARCHAR) AS "d_reg", CAST("d_prov" AS VARCHAR) AS "d_prov", CAST("d_mun" AS VARCHAR) AS "d_mun"
FROM "geo_d"
ORDER BY ALL;

-- The one scan of the private input, grouped by the leaf column of every chain (in a nested
-- domain the leaf determines its ancestors). The ancestor columns are not grouped on (hashing
-- strings of every row is what a scan pays for most); instead min and max of one hash of them
-- per leaf cell let the next step check every row's path against the domain. The count
-- checks keep how many rows are wrong per cell (NULL, negative, not whole, beyond int64),
-- never a value: their messages name the number of rows, not a private count.
CREATE TEMP TABLE "__inftda_t_leaf" AS
SELECT "o_mun", "d_mun",
       sum("n") AS __n,
       count(*) FILTER ("n" IS NULL) AS __nulls,
       count(*) FILTER ("n" < 0) AS __neg,
       0 AS __frac,
       0 AS __big,
       min(hash("o_reg", "d_reg", "d_prov")) AS __hmin,
       max(hash("o_reg", "d_reg", "d_prov")) AS __hmax
FROM "od"
GROUP BY "o_mun", "d_mun";

-- Replace every chain's values by its integer codes (one row per non-empty leaf cell), and
-- check the input against the domain in the same pass: a leaf value the domain does not list
-- has no code (NULL), and path_ok tells whether every input row's ancestors are those the
-- domain gives its leaf.
CREATE TEMP TABLE "__inftda_t_keys" AS
SELECT c0.__d1 AS "__c0_d1", c0.__d2 AS "__c0_d2", c1.__d1 AS "__c1_d1", c1.__d2 AS "__c1_d2", c1.__d3 AS "__c1_d3", l.__n::BIGINT AS n,
       (l.__hmin = l.__hmax AND l.__hmin = hash(c0."o_reg", c1."d_reg", c1."d_prov")) AS path_ok,
       l."o_mun", l."d_mun"
FROM "__inftda_t_leaf" AS l
LEFT JOIN "__inftda_t_codes_0" AS c0 ON c0."o_mun" = l."o_mun"
LEFT JOIN "__inftda_t_codes_1" AS c1 ON c1."d_mun" = l."d_mun";

-- True counts of one tree level, keyed by the mixed-radix code of its cell, sorted by key.
-- Non-zero counts only (the contract of Engine.level_counts): a leaf cell whose every record
-- was dropped by contribution bounding, or an explicit zero row of a count= input, stays in
-- the keys table for the checks of the input but never reaches a mechanism. Counts are
-- checked non-negative before this runs, so a level's sum over the kept rows is positive.
SELECT ("__c1_d1" * 1)::BIGINT AS key, sum(n)::BIGINT AS n
FROM "__inftda_t_keys"
WHERE n > 0
GROUP BY 1
ORDER BY 1;

-- True counts of one tree level, keyed by the mixed-radix code of its cell, sorted by key.
-- Non-zero counts only (the contract of Engine.level_counts): a leaf cell whose every record
-- was dropped by contribution bounding, or an explicit zero row of a count= input, stays in
-- the keys table for the checks of the input but never reaches a mechanism. Counts are
-- checked non-negative before this runs, so a level's sum over the kept rows is positive.
SELECT ("__c0_d1" * 1 + "__c1_d1" * 2)::BIGINT AS key, sum(n)::BIGINT AS n
FROM "__inftda_t_keys"
WHERE n > 0
GROUP BY 1
ORDER BY 1;

-- True counts of one tree level, keyed by the mixed-radix code of its cell, sorted by key.
-- Non-zero counts only (the contract of Engine.level_counts): a leaf cell whose every record
-- was dropped by contribution bounding, or an explicit zero row of a count= input, stays in
-- the keys table for the checks of the input but never reaches a mechanism. Counts are
-- checked non-negative before this runs, so a level's sum over the kept rows is positive.
SELECT ("__c0_d1" * 3 + "__c1_d2" * 1)::BIGINT AS key, sum(n)::BIGINT AS n
FROM "__inftda_t_keys"
WHERE n > 0
GROUP BY 1
ORDER BY 1;

-- True counts of one tree level, keyed by the mixed-radix code of its cell, sorted by key.
-- Non-zero counts only (the contract of Engine.level_counts): a leaf cell whose every record
-- was dropped by contribution bounding, or an explicit zero row of a count= input, stays in
-- the keys table for the checks of the input but never reaches a mechanism. Counts are
-- checked non-negative before this runs, so a level's sum over the kept rows is positive.
SELECT ("__c0_d2" * 1 + "__c1_d2" * 3)::BIGINT AS key, sum(n)::BIGINT AS n
FROM "__inftda_t_keys"
WHERE n > 0
GROUP BY 1
ORDER BY 1;

-- True counts of the finest level (every chain at its leaf), keyed by the mixed-radix code of
-- the leaf cell, sorted by key: the keys table has one row per leaf cell already (the scan
-- grouped by the leaf columns, and a nested domain gives each leaf value one path), so no
-- GROUP BY. Non-zero counts only, as for every level (sql/level_counts.sql).
SELECT ("__c0_d2" * 4 + "__c1_d3" * 1)::BIGINT AS key, n::BIGINT AS n
FROM "__inftda_t_keys"
WHERE n > 0
ORDER BY 1;

-- The released leaf table: hierarchy columns decoded from the codes, positive counts only.
CREATE TABLE "out" AS
SELECT c0."o_reg", c0."o_mun", c1."d_reg", c1."d_prov", c1."d_mun", r."count"::BIGINT AS "count"
FROM "__inftda_t_released" AS r
JOIN "__inftda_t_codes_0" AS c0 ON c0.__d2 = r."__leaf0"
JOIN "__inftda_t_codes_1" AS c1 ON c1.__d3 = r."__leaf1"
ORDER BY "o_reg", "o_mun", "d_reg", "d_prov", "d_mun";

-- Every level of the release as sums of its leaves (consistent by construction).
CREATE VIEW "out_levels" AS
SELECT CASE grouping("o_reg", "o_mun", "d_reg", "d_prov", "d_mun") WHEN 31 THEN 0 WHEN 27 THEN 1 WHEN 11 THEN 2 WHEN 9 THEN 3 WHEN 1 THEN 4 WHEN 0 THEN 5 END AS level,
       CASE grouping("o_reg", "o_mun", "d_reg", "d_prov", "d_mun") WHEN 31 THEN 'root' WHEN 27 THEN 'd_reg' WHEN 11 THEN 'o_reg x d_reg' WHEN 9 THEN 'o_reg x d_prov' WHEN 1 THEN 'o_mun x d_prov' WHEN 0 THEN 'o_mun x d_mun' END AS level_name,
       "o_reg", "o_mun", "d_reg", "d_prov", "d_mun",
       coalesce(sum("count"), 0)::BIGINT AS "count"
FROM "out"
GROUP BY GROUPING SETS ((), ("d_reg"), ("o_reg", "d_reg"), ("o_reg", "d_reg", "d_prov"), ("o_reg", "o_mun", "d_reg", "d_prov"), ("o_reg", "o_mun", "d_reg", "d_prov", "d_mun"));
