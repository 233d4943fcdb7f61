-- feature_unmatched(NAMES, lattice, ...)
-- Diagnostics, on the error path only: an input leaf the domain does not list, and how many.
SELECT *, count(*) OVER () AS __n
FROM (SELECT DISTINCT i."o_mun", i."d_mun", i."t" FROM "ftrips" AS i LEFT JOIN "__inftda_g_part_0" AS c0 ON i."o_mun" = c0."o_mun" AND i."d_mun" = c0."d_mun"
    LEFT JOIN "__inftda_g_part_1" AS c1 ON i."t" = c1."t" WHERE c0.__q3 IS NULL OR c1.__q3 IS NULL) AS u
ORDER BY ALL
LIMIT 1;
