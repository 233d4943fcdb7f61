-- bad_path(NAMES, 0, ('o_reg', 'o_mun'), '"bad"')
-- Diagnostics, on the error path only: an input row whose ancestors disagree with the domain.
SELECT "o_reg", "o_mun"
FROM "bad"
WHERE "o_mun" = $leaf
EXCEPT
SELECT "o_reg", "o_mun" FROM "__inftda_g_codes_0"
LIMIT 1;
