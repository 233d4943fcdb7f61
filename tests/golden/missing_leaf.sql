-- missing_leaf(NAMES, 0, ('o_reg', 'o_mun'))
-- a leaf value of the input the domain does not list, and how many such values there are
SELECT v, count(*) OVER ()
FROM (SELECT DISTINCT l."o_mun" AS v FROM "__inftda_g_leaf" AS l ANTI JOIN "__inftda_g_codes_0" AS c ON c."o_mun" = l."o_mun")
ORDER BY 1
LIMIT 1;

-- missing_leaf(NAMES, 1, ('d_reg', 'd_mun'))
-- a leaf value of the input the domain does not list, and how many such values there are
SELECT v, count(*) OVER ()
FROM (SELECT DISTINCT l."d_mun" AS v FROM "__inftda_g_leaf" AS l ANTI JOIN "__inftda_g_codes_1" AS c ON c."d_mun" = l."d_mun")
ORDER BY 1
LIMIT 1;
