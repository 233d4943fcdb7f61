-- write_output(NAMES, SPEC, '"out"')
-- The released leaf table: hierarchy columns decoded from the codes, positive counts only.
CREATE TABLE "out" AS
SELECT c0."o_reg", c0."o_mun", c1."d_reg", c1."d_mun", r."count"::BIGINT AS "count"
FROM "__inftda_g_released" AS r
JOIN "__inftda_g_codes_0" AS c0 ON c0.__d2 = r."__leaf0"
JOIN "__inftda_g_codes_1" AS c1 ON c1.__d2 = r."__leaf1"
ORDER BY "o_reg", "o_mun", "d_reg", "d_mun";
