-- coc_levels_view(CHAIN, '"out_levels"', '"out"')
-- every level of the release as sums of its leaves (consistent by construction)
CREATE VIEW "out_levels" AS
SELECT CASE grouping("state", "county") WHEN 3 THEN 0 WHEN 1 THEN 1 WHEN 0 THEN 2 END AS level,
       CASE grouping("state", "county") WHEN 3 THEN 'root' WHEN 1 THEN 'state' WHEN 0 THEN 'county' END AS level_name,
       "state", "county",
       size,
       sum(groups)::BIGINT AS groups
FROM "out"
GROUP BY GROUPING SETS ((size), ("state", size), ("state", "county", size));
