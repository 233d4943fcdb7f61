-- levels_view(SPEC, '"out_levels"', '"out"')
-- Every level of the release as sums of its leaves (consistent by construction).
CREATE VIEW "out_levels" AS
SELECT CASE grouping("o_reg", "o_mun", "d_reg", "d_mun") WHEN 15 THEN 0 WHEN 13 THEN 1 WHEN 5 THEN 2 WHEN 4 THEN 3 WHEN 0 THEN 4 END AS level,
       CASE grouping("o_reg", "o_mun", "d_reg", "d_mun") WHEN 15 THEN 'root' WHEN 13 THEN 'd_reg' WHEN 5 THEN 'o_reg x d_reg' WHEN 4 THEN 'o_reg x d_mun' WHEN 0 THEN 'o_mun x d_mun' END AS level_name,
       "o_reg", "o_mun", "d_reg", "d_mun",
       coalesce(sum("count"), 0)::BIGINT AS "count"
FROM "out"
GROUP BY GROUPING SETS ((), ("d_reg"), ("o_reg", "d_reg"), ("o_reg", "d_reg", "d_mun"), ("o_reg", "o_mun", "d_reg", "d_mun"));
