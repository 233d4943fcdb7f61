-- nesting_check(codes, 'o_reg', 'o_mun')
-- A value of "o_mun" listed under more than one "o_reg": the domain is not nested.
SELECT "o_mun", min("o_reg") AS first_parent, max("o_reg") AS second_parent
FROM (SELECT DISTINCT "o_reg", "o_mun" FROM "__inftda_g_codes_0_nesting") AS p
GROUP BY "o_mun"
HAVING count(*) > 1
ORDER BY "o_mun"
LIMIT 1;
