-- coc_split_groups(sizes)
-- groups (ids) that sit in more than one leaf (or whose id is NULL): an input error
SELECT count(gid) - count(DISTINCT gid), count(*) FILTER (gid IS NULL)
FROM "__inftda_g_sizes";
