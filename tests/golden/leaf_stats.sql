-- leaf_stats(NAMES, ('o_mun', 'd_mun'), 1)
-- the count column's rows that are NULL, negative, not whole numbers or beyond int64, the leaf
-- cells whose sum exceeds the limit (from the per-cell aggregates of sql/leaf_counts.sql), then
-- per leaf column its NULL rows (none for a table grouped by leaf codes); numbers of rows and
-- cells only, never a count
SELECT coalesce(sum(__nulls), 0), coalesce(sum(__neg), 0), coalesce(sum(__frac), 0),
       coalesce(sum(__big), 0), count(*) FILTER (__n > 1),
       count(*) FILTER ("o_mun" IS NULL),
       count(*) FILTER ("d_mun" IS NULL)
FROM "__inftda_g_leaf";
