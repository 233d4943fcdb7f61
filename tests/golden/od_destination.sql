-- Dense integer codes for one chain of the PUBLIC domain.
-- __d<k> numbers the distinct paths of depth k in (parent path, value) order, so the children
-- of every node form one contiguous code range: the engine expands a parent into its children
-- from the domain alone, zero-count children included, without looking at the private data.
CREATE TEMP TABLE "__inftda_t_codes_0" AS
SELECT "o_reg", "o_mun", (dense_rank() OVER (ORDER BY "o_reg") - 1)::BIGINT AS __d1, (dense_rank() OVER (ORDER BY "o_reg", "o_mun") - 1)::BIGINT AS __d2
FROM (SELECT DISTINCT "o_reg", "o_mun" FROM "geo_o") AS d;

-- Dense integer codes for one chain of the PUBLIC domain.
-- __d<k> numbers the distinct paths of depth k in (parent path, value) order, so the children
-- of every node form one contiguous code range: the engine expands a parent into its children
-- from the domain alone, zero-count children included, without looking at the private data.
CREATE TEMP TABLE "__inftda_t_codes_1" AS
SELECT "d_reg", "d_prov", "d_mun", (dense_rank() OVER (ORDER BY "d_reg") - 1)::BIGINT AS __d1, (dense_rank() OVER (ORDER BY "d_reg", "d_prov") - 1)::BIGINT AS __d2, (dense_rank() OVER (ORDER BY "d_reg", "d_prov", "d_mun") - 1)::BIGINT AS __d3
FROM (SELECT DISTINCT "d_reg", "d_prov", "d_mun" FROM "geo_d") AS d;

-- The one scan of the private input: its count per distinct hierarchy path, plus what the
-- checks before noise need (NULL and negative / fractional counts). Everything after works on
-- this aggregate, which is at most as large as the number of distinct paths.
CREATE TEMP TABLE "__inftda_t_leaf" AS
SELECT "o_reg", "o_mun", "d_reg", "d_prov", "d_mun",
       sum("n")::BIGINT AS __n,
       min("n") AS __min,
       false AS __frac,
       count(*) FILTER ("n" IS NULL) AS __nulls
FROM "od"
GROUP BY "o_reg", "o_mun", "d_reg", "d_prov", "d_mun";

-- Replace every chain's values by its integer codes (one row per non-empty leaf cell).
CREATE TEMP TABLE "__inftda_t_keys" AS
SELECT c0.__d1 AS "__c0_d1", c0.__d2 AS "__c0_d2", c1.__d1 AS "__c1_d1", c1.__d2 AS "__c1_d2", c1.__d3 AS "__c1_d3", l.__n::BIGINT AS n
FROM "__inftda_t_leaf" AS l
JOIN "__inftda_t_codes_0" AS c0 USING ("o_reg", "o_mun")
JOIN "__inftda_t_codes_1" AS c1 USING ("d_reg", "d_prov", "d_mun");

-- True counts of one tree level, keyed by the mixed-radix code of its cell, sorted by key.
SELECT ("__c1_d1" * 1)::BIGINT AS key, sum(n)::BIGINT AS n
FROM "__inftda_t_keys"
GROUP BY 1
ORDER BY 1;

-- True counts of one tree level, keyed by the mixed-radix code of its cell, sorted by key.
SELECT ("__c0_d1" * 2 + "__c1_d1" * 1)::BIGINT AS key, sum(n)::BIGINT AS n
FROM "__inftda_t_keys"
GROUP BY 1
ORDER BY 1;

-- True counts of one tree level, keyed by the mixed-radix code of its cell, sorted by key.
SELECT ("__c0_d1" * 3 + "__c1_d2" * 1)::BIGINT AS key, sum(n)::BIGINT AS n
FROM "__inftda_t_keys"
GROUP BY 1
ORDER BY 1;

-- True counts of one tree level, keyed by the mixed-radix code of its cell, sorted by key.
SELECT ("__c0_d2" * 3 + "__c1_d2" * 1)::BIGINT AS key, sum(n)::BIGINT AS n
FROM "__inftda_t_keys"
GROUP BY 1
ORDER BY 1;

-- True counts of one tree level, keyed by the mixed-radix code of its cell, sorted by key.
SELECT ("__c0_d2" * 4 + "__c1_d3" * 1)::BIGINT AS key, sum(n)::BIGINT AS n
FROM "__inftda_t_keys"
GROUP BY 1
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
       sum("count")::BIGINT AS "count"
FROM "out"
GROUP BY GROUPING SETS ((), ("d_reg"), ("o_reg", "d_reg"), ("o_reg", "d_reg", "d_prov"), ("o_reg", "o_mun", "d_reg", "d_prov"), ("o_reg", "o_mun", "d_reg", "d_prov", "d_mun"));
