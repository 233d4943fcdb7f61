-- feature_output(NAMES, lattice, '"fout"')
-- The released leaf table: every feature column decoded from the domain, positive counts.
CREATE TABLE "fout" AS
SELECT c0."o_mun" AS "o_mun", c0."d_mun" AS "d_mun", c1."t" AS "t", c0."o_reg" AS "o_reg", c0."d_reg" AS "d_reg", r."count"::BIGINT AS "count"
FROM "__inftda_g_released" AS r
JOIN "__inftda_g_part_0" AS c0 ON c0.__q3 = r.__p0
JOIN "__inftda_g_part_1" AS c1 ON c1.__q3 = r.__p1
ORDER BY "o_mun", "d_mun", "t";
