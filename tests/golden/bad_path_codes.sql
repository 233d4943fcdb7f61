-- bad_path_codes(NAMES, SPEC)
SELECT "__c0_d2", "__c1_d2" FROM "__inftda_g_keys" WHERE NOT path_ok LIMIT 1;
