-- coc_evaluate(CHAIN, persons, 'hh', rel, 'size', 'groups')
-- evaluate_count_of_counts(): earthmover's distance per node, averaged per level (NOT private)
WITH sizes AS (
    SELECT "hh" AS gid, "state", "county", count(*) AS size FROM "persons" GROUP BY ALL
),
leaf_truth AS (
    SELECT "state", "county", size, count(*) AS groups FROM sizes GROUP BY ALL
),
t AS (
    SELECT CASE grouping("state", "county") WHEN 3 THEN 0 WHEN 1 THEN 1 WHEN 0 THEN 2 END AS level, "state", "county", size, sum(groups) AS groups
    FROM leaf_truth GROUP BY ROLLUP ("state", "county"), size
),
r AS (
    SELECT CASE grouping("state", "county") WHEN 3 THEN 0 WHEN 1 THEN 1 WHEN 0 THEN 2 END AS level, "state", "county", "size" AS size, sum("groups") AS groups
    FROM "rel" GROUP BY ROLLUP ("state", "county"), "size"
),
cells AS (
    SELECT coalesce(t.level, r.level) AS level, coalesce(t."state", r."state") AS "state", coalesce(t."county", r."county") AS "county",
           coalesce(t.size, r.size) AS size,
           coalesce(t.groups, 0) - coalesce(r.groups, 0) AS diff,
           coalesce(t.groups, 0) AS t_groups, coalesce(r.groups, 0) AS r_groups
    FROM t FULL OUTER JOIN r ON t.level = r.level AND t.size = r.size AND t."state" IS NOT DISTINCT FROM r."state" AND t."county" IS NOT DISTINCT FROM r."county"
),
cumulative AS (
    SELECT level, "state", "county", size, t_groups, r_groups,
           sum(diff) OVER w AS cum,
           coalesce(lead(size) OVER w - size, 0) AS width
    FROM cells
    WINDOW w AS (PARTITION BY level, "state", "county" ORDER BY size)
),
per_node AS (
    SELECT level, "state", "county", sum(abs(cum) * width) AS emd,
           sum(t_groups) AS groups_true, sum(r_groups) AS groups_released
    FROM cumulative GROUP BY ALL
)
SELECT level::INTEGER AS level, count(*)::BIGINT AS nodes,
       avg(emd)::DOUBLE AS mean_emd, max(emd)::DOUBLE AS max_emd,
       sum(groups_true)::BIGINT AS groups_true, sum(groups_released)::BIGINT AS groups_released
FROM per_node
GROUP BY level
ORDER BY level;

-- coc_evaluate(..., groups table hh, 'n'): empty groups
-- evaluate_count_of_counts(): earthmover's distance per node, averaged per level (NOT private)
WITH sizes AS (
    SELECT "hh" AS gid, "state", "county", count(*) AS size FROM "persons" GROUP BY ALL
),
leaf_truth AS (
    SELECT "state", "county", size, count(*) AS groups FROM sizes GROUP BY ALL
    UNION ALL
    SELECT g."state", g."county", 0 AS size, g."n" - coalesce(f.found, 0) AS groups
    FROM "hh" AS g LEFT JOIN (SELECT "state", "county", count(*) AS found FROM sizes GROUP BY ALL) AS f USING ("state", "county")
    WHERE g."n" > coalesce(f.found, 0)
),
t AS (
    SELECT CASE grouping("state", "county") WHEN 3 THEN 0 WHEN 1 THEN 1 WHEN 0 THEN 2 END AS level, "state", "county", size, sum(groups) AS groups
    FROM leaf_truth GROUP BY ROLLUP ("state", "county"), size
),
r AS (
    SELECT CASE grouping("state", "county") WHEN 3 THEN 0 WHEN 1 THEN 1 WHEN 0 THEN 2 END AS level, "state", "county", "size" AS size, sum("groups") AS groups
    FROM "rel" GROUP BY ROLLUP ("state", "county"), "size"
),
cells AS (
    SELECT coalesce(t.level, r.level) AS level, coalesce(t."state", r."state") AS "state", coalesce(t."county", r."county") AS "county",
           coalesce(t.size, r.size) AS size,
           coalesce(t.groups, 0) - coalesce(r.groups, 0) AS diff,
           coalesce(t.groups, 0) AS t_groups, coalesce(r.groups, 0) AS r_groups
    FROM t FULL OUTER JOIN r ON t.level = r.level AND t.size = r.size AND t."state" IS NOT DISTINCT FROM r."state" AND t."county" IS NOT DISTINCT FROM r."county"
),
cumulative AS (
    SELECT level, "state", "county", size, t_groups, r_groups,
           sum(diff) OVER w AS cum,
           coalesce(lead(size) OVER w - size, 0) AS width
    FROM cells
    WINDOW w AS (PARTITION BY level, "state", "county" ORDER BY size)
),
per_node AS (
    SELECT level, "state", "county", sum(abs(cum) * width) AS emd,
           sum(t_groups) AS groups_true, sum(r_groups) AS groups_released
    FROM cumulative GROUP BY ALL
)
SELECT level::INTEGER AS level, count(*)::BIGINT AS nodes,
       avg(emd)::DOUBLE AS mean_emd, max(emd)::DOUBLE AS max_emd,
       sum(groups_true)::BIGINT AS groups_true, sum(groups_released)::BIGINT AS groups_released
FROM per_node
GROUP BY level
ORDER BY level;
