-- features_view(FEATURES, ...)
-- Every feature's released counts as sums of the leaves (consistent by construction).
CREATE VIEW "fout_features" AS
SELECT CASE grouping("o_mun", "d_mun", "t", "o_reg", "d_reg") WHEN 31 THEN 'total' WHEN 28 THEN 'zones' WHEN 7 THEN 'pair' WHEN 3 THEN 'leaf' END AS feature,
       "o_mun", "d_mun", "t", "o_reg", "d_reg",
       sum("count")::BIGINT AS "count"
FROM "fout"
GROUP BY GROUPING SETS ((), ("o_reg", "d_reg"), ("o_mun", "d_mun"), ("o_mun", "d_mun", "t"));
