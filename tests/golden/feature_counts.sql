-- feature_counts(NAMES, lattice, '"ftrips"', leaf, None, True, False)
-- Every query's true counts in one scan of the private input. The input's leaf columns are
-- joined to the code tables of the PUBLIC domain (one per domain table), which give each row
-- the code of its cell in every query; GROUPING SETS counts every query's cells in the same
-- pass. A row whose leaf the domain does not list gets NULL codes and is counted under NULL in
-- the leaf's set (an error, raised before any noise). grouping() tells the sets apart.
SELECT grouping(__k0, __k1, __k2, __k3) AS __set, __k0, __k1, __k2, __k3,
       count(*)::BIGINT AS __n, 0 AS __nulls, 0 AS __neg, 0 AS __frac,
       0 AS __big
FROM (
    SELECT (0)::BIGINT AS __k0, (c0.__q1 * 1)::BIGINT AS __k1, (c0.__q2 * 1)::BIGINT AS __k2, (c0.__q3 * 2 + c1.__q3 * 1)::BIGINT AS __k3, 1 AS __one
    FROM "ftrips" AS i
    LEFT JOIN "__inftda_g_part_0" AS c0 ON i."o_mun" = c0."o_mun" AND i."d_mun" = c0."d_mun"
    LEFT JOIN "__inftda_g_part_1" AS c1 ON i."t" = c1."t"
) AS t
GROUP BY GROUPING SETS ((__k0), (__k1), (__k2), (__k3));

-- feature_counts(NAMES, lattice, '"ftrips"', leaf, 'n', True, False)
-- Every query's true counts in one scan of the private input. The input's leaf columns are
-- joined to the code tables of the PUBLIC domain (one per domain table), which give each row
-- the code of its cell in every query; GROUPING SETS counts every query's cells in the same
-- pass. A row whose leaf the domain does not list gets NULL codes and is counted under NULL in
-- the leaf's set (an error, raised before any noise). grouping() tells the sets apart.
SELECT grouping(__k0, __k1, __k2, __k3) AS __set, __k0, __k1, __k2, __k3,
       sum("__cnt") AS __n, count(*) FILTER ("__cnt" IS NULL) AS __nulls, count(*) FILTER ("__cnt" < 0) AS __neg, 0 AS __frac,
       0 AS __big
FROM (
    SELECT (0)::BIGINT AS __k0, (c0.__q1 * 1)::BIGINT AS __k1, (c0.__q2 * 1)::BIGINT AS __k2, (c0.__q3 * 2 + c1.__q3 * 1)::BIGINT AS __k3, i."n" AS __cnt
    FROM "ftrips" AS i
    LEFT JOIN "__inftda_g_part_0" AS c0 ON i."o_mun" = c0."o_mun" AND i."d_mun" = c0."d_mun"
    LEFT JOIN "__inftda_g_part_1" AS c1 ON i."t" = c1."t"
) AS t
GROUP BY GROUPING SETS ((__k0), (__k1), (__k2), (__k3));
