-- bad_path_count(NAMES)
SELECT count(*) FILTER (NOT path_ok) FROM "__inftda_g_keys";
