-- leaf_values(NAMES, SPEC)
-- The leaf cells with their leaf values, fetched once, when every chain's leaf code is a
-- function of its value computed outside SQL (integer leaves increasing in code order: a
-- lookup in the PUBLIC domain's leaves instead of a join to its code table).
SELECT l."o_mun", l."d_mun", l.__n::BIGINT AS n
FROM "__inftda_g_leaf" AS l;
