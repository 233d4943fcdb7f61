-- total(NAMES)
SELECT coalesce(sum(n), 0) FROM "__inftda_g_keys";
