-- negative_example(NAMES, ('o_mun', 'd_mun'))
-- a leaf cell holding a negative count
SELECT "o_mun", "d_mun", __min FROM "__inftda_g_leaf" WHERE __min < 0 LIMIT 1;
