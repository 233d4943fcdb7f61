-- coc_node_codes(hist, codes, CHAIN, 0)
-- the root's histogram (node 0)
SELECT 0::BIGINT AS node, size, groups
FROM "__inftda_g_hist"
WHERE level = 0;

-- coc_node_codes(hist, codes, CHAIN, 1)
-- the histograms of one level keyed by the nodes' codes (NULL: a value outside the domain)
SELECT c.__d1 AS node, h.size, h.groups, h."state"
FROM "__inftda_g_hist" AS h
LEFT JOIN (SELECT DISTINCT "state", __d1 FROM "__inftda_g_codes_0") AS c ON h."state" = c."state"
WHERE h.level = 1;

-- coc_node_codes(hist, codes, CHAIN, 2)
-- the histograms of one level keyed by the nodes' codes (NULL: a value outside the domain)
SELECT c.__d2 AS node, h.size, h.groups, h."state", h."county"
FROM "__inftda_g_hist" AS h
LEFT JOIN (SELECT DISTINCT "state", "county", __d2 FROM "__inftda_g_codes_0") AS c ON h."state" = c."state" AND h."county" = c."county"
WHERE h.level = 2;
