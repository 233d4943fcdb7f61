-- coc_histograms(hist, sizes, CHAIN)
-- H: per node of every level (ROLLUP of the hierarchy) and size, the number of groups
CREATE TEMP TABLE "__inftda_g_hist" AS
SELECT CASE grouping("state", "county") WHEN 3 THEN 0 WHEN 1 THEN 1 WHEN 0 THEN 2 END AS level, "state", "county", size, count(*) AS groups
FROM "__inftda_g_sizes"
GROUP BY ROLLUP ("state", "county"), size;
