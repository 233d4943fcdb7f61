-- leaf_stats(NAMES, ('o_mun', 'd_mun'), 1, counted=True)
-- the count column's rows that are NULL, negative, not whole numbers or beyond int64 (from the
-- per-cell aggregates of sql/leaf_counts.sql; zeros where the scan counted records), the leaf
-- cells whose sum exceeds the limit, then per leaf column its NULL rows (none for a table
-- grouped by leaf codes); numbers of rows and cells only, never a count
SELECT coalesce(sum(__nulls), 0), coalesce(sum(__neg), 0), coalesce(sum(__frac), 0), coalesce(sum(__big), 0), count(*) FILTER (__n > 1),
       count(*) FILTER ("o_mun" IS NULL),
       count(*) FILTER ("d_mun" IS NULL)
FROM "__inftda_g_leaf";

-- leaf_stats(NAMES, ('o_mun', 'd_mun'), 1, counted=False)
-- the count column's rows that are NULL, negative, not whole numbers or beyond int64 (from the
-- per-cell aggregates of sql/leaf_counts.sql; zeros where the scan counted records), the leaf
-- cells whose sum exceeds the limit, then per leaf column its NULL rows (none for a table
-- grouped by leaf codes); numbers of rows and cells only, never a count
SELECT 0, 0, 0, 0, count(*) FILTER (__n > 1),
       count(*) FILTER ("o_mun" IS NULL),
       count(*) FILTER ("d_mun" IS NULL)
FROM "__inftda_g_leaf";
