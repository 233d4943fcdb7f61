-- coc_group_sizes(sizes, CHAIN, 'hh', persons)
-- A: one row per group of the private input, with its region and its size
CREATE TEMP TABLE "__inftda_g_sizes" AS
SELECT "hh" AS gid, "state", "county", count(*) AS size
FROM "persons"
GROUP BY ALL;
