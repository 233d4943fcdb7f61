-- leaf_codes(NAMES, SPEC)
-- Replace every chain's values by its integer codes (one row per non-empty leaf cell), and
-- check the input against the domain in the same pass: a leaf value the domain does not list
-- has no code (NULL), and path_ok tells whether every input row's ancestors are those the
-- domain gives its leaf.
CREATE TEMP TABLE "__inftda_g_keys" AS
SELECT c0.__d1 AS "__c0_d1", c0.__d2 AS "__c0_d2", c1.__d1 AS "__c1_d1", c1.__d2 AS "__c1_d2", l.__n::BIGINT AS n,
       (l.__hmin = l.__hmax AND l.__hmin = hash(c0."o_reg", c1."d_reg")) AS path_ok,
       l."o_mun", l."d_mun"
FROM "__inftda_g_leaf" AS l
LEFT JOIN "__inftda_g_codes_0" AS c0 ON c0."o_mun" = l."o_mun"
LEFT JOIN "__inftda_g_codes_1" AS c1 ON c1."d_mun" = l."d_mun";
