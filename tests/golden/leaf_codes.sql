-- leaf_codes(NAMES, SPEC, ('o_reg', 'd_reg'))
-- The leaf cells with the public domain's leaf code of every chain instead of their values (a
-- leaf value the domain does not list gets no code: NULL), fetched once; every level's counts
-- are sums of these cells. When the release checks the input's ancestors, path_ok tells
-- whether the cell's ancestors hash to those the domain gives its leaf (a cell split by its
-- ancestors is several rows: every one of them is ok only if they all carry the domain's).
SELECT c0.__d2 AS "__leaf0", c1.__d2 AS "__leaf1", l.__n::BIGINT AS n,
       (l.__h = hash(c0."o_reg", c1."d_reg")) AS path_ok
FROM "__inftda_g_leaf" AS l
LEFT JOIN "__inftda_g_codes_0" AS c0 ON c0."o_mun" = l."o_mun"
LEFT JOIN "__inftda_g_codes_1" AS c1 ON c1."d_mun" = l."d_mun";

-- leaf_codes(NAMES, SPEC)
-- The leaf cells with the public domain's leaf code of every chain instead of their values (a
-- leaf value the domain does not list gets no code: NULL), fetched once; every level's counts
-- are sums of these cells. When the release checks the input's ancestors, path_ok tells
-- whether the cell's ancestors hash to those the domain gives its leaf (a cell split by its
-- ancestors is several rows: every one of them is ok only if they all carry the domain's).
SELECT c0.__d2 AS "__leaf0", c1.__d2 AS "__leaf1", l.__n::BIGINT AS n
FROM "__inftda_g_leaf" AS l
LEFT JOIN "__inftda_g_codes_0" AS c0 ON c0."o_mun" = l."o_mun"
LEFT JOIN "__inftda_g_codes_1" AS c1 ON c1."d_mun" = l."d_mun";

-- leaf_codes(NAMES, SPEC, codes=['"cached_o"', '"cached_d"'])
-- The leaf cells with the public domain's leaf code of every chain instead of their values (a
-- leaf value the domain does not list gets no code: NULL), fetched once; every level's counts
-- are sums of these cells. When the release checks the input's ancestors, path_ok tells
-- whether the cell's ancestors hash to those the domain gives its leaf (a cell split by its
-- ancestors is several rows: every one of them is ok only if they all carry the domain's).
SELECT c0.__d2 AS "__leaf0", c1.__d2 AS "__leaf1", l.__n::BIGINT AS n
FROM "__inftda_g_leaf" AS l
LEFT JOIN "cached_o" AS c0 ON c0."o_mun" = l."o_mun"
LEFT JOIN "cached_d" AS c1 ON c1."d_mun" = l."d_mun";
