-- leaf_stats(NAMES, ('o_mun', 'd_mun'), 1)
-- per leaf column its NULL rows, then the count column's rows that are NULL, negative, not
-- whole numbers or beyond int64, and the leaf cells whose sum exceeds the limit (from the
-- per-cell aggregates of sql/leaf_counts.sql); numbers of rows and cells only, never a count
SELECT count(*) FILTER ("o_mun" IS NULL), count(*) FILTER ("d_mun" IS NULL),
       coalesce(sum(__nulls), 0), coalesce(sum(__neg), 0), coalesce(sum(__frac), 0),
       coalesce(sum(__big), 0), count(*) FILTER (__n > 1)
FROM "__inftda_g_leaf";
