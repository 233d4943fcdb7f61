-- missing_leaf(NAMES, 0, ('o_reg', 'o_mun'))
-- a leaf value of the input the domain does not list, and how many such values there are
SELECT "o_mun", count(*) OVER () FROM "__inftda_g_keys" WHERE "__c0_d2" IS NULL ORDER BY 1 LIMIT 1;

-- missing_leaf(NAMES, 1, ('d_reg', 'd_mun'))
-- a leaf value of the input the domain does not list, and how many such values there are
SELECT "d_mun", count(*) OVER () FROM "__inftda_g_keys" WHERE "__c1_d2" IS NULL ORDER BY 1 LIMIT 1;
