-- leaf_stats(NAMES, ('o_mun', 'd_mun'))
-- per leaf column its NULL rows, then the count column's NULLs, minimum and whether any value
-- is fractional (from the per-cell aggregates of sql/leaf_counts.sql)
SELECT count(*) FILTER ("o_mun" IS NULL), count(*) FILTER ("d_mun" IS NULL), coalesce(sum(__nulls), 0), min(__min), coalesce(bool_or(__frac), false)
FROM "__inftda_g_leaf";
