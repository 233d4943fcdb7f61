-- evaluate_cells(SPEC, '"trips"', '"out"', count(*), sum(count))
-- evaluate() and plot_zoom(): the cells of every level of a release's tree, with their TRUE
-- count t and released count r (not private: for the data owner only). Each side is scanned
-- once and grouped to its leaf cells; every level is a GROUP BY of those, and the two sides
-- meet over the UNION of their cells (FULL OUTER JOIN; a cell missing on one side counts 0).
WITH
truth_leaf AS MATERIALIZED (
    SELECT "o_reg", "o_mun", "d_reg", "d_mun", count(*)::BIGINT AS __n FROM "trips" GROUP BY ALL
),
released_leaf AS MATERIALIZED (
    SELECT "o_reg", "o_mun", "d_reg", "d_mun", sum("count")::BIGINT AS __n FROM "out" GROUP BY ALL
),
cells AS (
    SELECT 0 AS level, coalesce((SELECT sum(__n) FROM truth_leaf), 0) AS t,
           coalesce((SELECT sum(__n) FROM released_leaf), 0) AS r
    UNION ALL
    SELECT 1 AS level, coalesce(tl.__n, 0) AS t, coalesce(rl.__n, 0) AS r
    FROM (SELECT "d_reg", sum(__n) AS __n FROM truth_leaf GROUP BY ALL) AS tl
    FULL OUTER JOIN (SELECT "d_reg", sum(__n) AS __n FROM released_leaf GROUP BY ALL) AS rl
    ON tl."d_reg" IS NOT DISTINCT FROM rl."d_reg"
    WHERE coalesce(tl.__n, 0) <> 0 OR coalesce(rl.__n, 0) <> 0
    UNION ALL
    SELECT 2 AS level, coalesce(tl.__n, 0) AS t, coalesce(rl.__n, 0) AS r
    FROM (SELECT "o_reg", "d_reg", sum(__n) AS __n FROM truth_leaf GROUP BY ALL) AS tl
    FULL OUTER JOIN (SELECT "o_reg", "d_reg", sum(__n) AS __n FROM released_leaf GROUP BY ALL) AS rl
    ON tl."o_reg" IS NOT DISTINCT FROM rl."o_reg" AND tl."d_reg" IS NOT DISTINCT FROM rl."d_reg"
    WHERE coalesce(tl.__n, 0) <> 0 OR coalesce(rl.__n, 0) <> 0
    UNION ALL
    SELECT 3 AS level, coalesce(tl.__n, 0) AS t, coalesce(rl.__n, 0) AS r
    FROM (SELECT "o_reg", "d_reg", "d_mun", sum(__n) AS __n FROM truth_leaf GROUP BY ALL) AS tl
    FULL OUTER JOIN (SELECT "o_reg", "d_reg", "d_mun", sum(__n) AS __n FROM released_leaf GROUP BY ALL) AS rl
    ON tl."o_reg" IS NOT DISTINCT FROM rl."o_reg" AND tl."d_reg" IS NOT DISTINCT FROM rl."d_reg" AND tl."d_mun" IS NOT DISTINCT FROM rl."d_mun"
    WHERE coalesce(tl.__n, 0) <> 0 OR coalesce(rl.__n, 0) <> 0
    UNION ALL
    SELECT 4 AS level, coalesce(tl.__n, 0) AS t, coalesce(rl.__n, 0) AS r
    FROM (SELECT "o_reg", "o_mun", "d_reg", "d_mun", sum(__n) AS __n FROM truth_leaf GROUP BY ALL) AS tl
    FULL OUTER JOIN (SELECT "o_reg", "o_mun", "d_reg", "d_mun", sum(__n) AS __n FROM released_leaf GROUP BY ALL) AS rl
    ON tl."o_reg" IS NOT DISTINCT FROM rl."o_reg" AND tl."o_mun" IS NOT DISTINCT FROM rl."o_mun" AND tl."d_reg" IS NOT DISTINCT FROM rl."d_reg" AND tl."d_mun" IS NOT DISTINCT FROM rl."d_mun"
    WHERE coalesce(tl.__n, 0) <> 0 OR coalesce(rl.__n, 0) <> 0
);
