-- leaf_of_code(NAMES, 0, ('o_reg', 'o_mun'))
SELECT "o_mun" FROM "__inftda_g_codes_0" WHERE __d2 = $code;
