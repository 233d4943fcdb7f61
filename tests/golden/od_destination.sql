-- The paths of one chain of the PUBLIC domain, cast to the input's types, sorted.
-- Sorted (parent path, value) order makes the children of every node one contiguous run, so
-- dense codes per depth follow from where neighbouring rows change (and repeated rows, which
-- change nowhere, are dropped there: cheaper than a DISTINCT before the sort).
SELECT CAST("o_reg" AS VARCHAR) AS "o_reg", CAST("o_mun" AS VARCHAR) AS "o_mun"
FROM "geo_o"
ORDER BY ALL;

-- The paths of one chain of the PUBLIC domain, cast to the input's types, sorted.
-- Sorted (parent path, value) order makes the children of every node one contiguous run, so
-- dense codes per depth follow from where neighbouring rows change (and repeated rows, which
-- change nowhere, are dropped there: cheaper than a DISTINCT before the sort).
SELECT CAST("d_reg" AS VARCHAR) AS "d_reg", CAST("d_prov" AS VARCHAR) AS "d_prov", CAST("d_mun" AS VARCHAR) AS "d_mun"
FROM "geo_d"
ORDER BY ALL;

-- The one scan of the private input, grouped by the leaf column of every chain (in a nested
-- domain the leaf determines its ancestors). When the release checks the input's ancestor
-- columns against the domain, one hash of them per row is a grouping key too: a leaf cell
-- whose rows all carry the same ancestors stays one group, and the next step compares its hash
-- with the domain's; a cell whose rows disagree splits into several groups, one of which, at
-- least, differs from the domain's. A key costs DuckDB's hash table less than aggregates of the
-- hash would (min and max per cell). With a count column, the count checks keep how many rows
-- are wrong per cell (NULL, negative, not whole, beyond int64), never a value: their messages
-- name the number of rows, not a private count; records counted one by one have none.
CREATE TEMP TABLE "__inftda_t_leaf" AS
SELECT "o_mun", "d_mun",
       hash("o_reg", "d_reg", "d_prov") AS __h,
       sum("n") AS __n,
       count(*) FILTER ("n" IS NULL) AS __nulls,
       count(*) FILTER ("n" < 0) AS __neg,
       0 AS __frac,
       0 AS __big
FROM "od"
GROUP BY "o_mun", "d_mun", hash("o_reg", "d_reg", "d_prov");

-- The leaf cells with the public domain's leaf code of every chain instead of their values (a
-- leaf value the domain does not list gets no code: NULL), fetched once; every level's counts
-- are sums of these cells. When the release checks the input's ancestors, path_ok tells
-- whether the cell's ancestors hash to those the domain gives its leaf (a cell split by its
-- ancestors is several rows: every one of them is ok only if they all carry the domain's).
SELECT c0.__d2 AS "__leaf0", c1.__d3 AS "__leaf1", l.__n::BIGINT AS n,
       (l.__h = hash(c0."o_reg", c1."d_reg", c1."d_prov")) AS path_ok
FROM "__inftda_t_leaf" AS l
LEFT JOIN "__inftda_t_codes_0" AS c0 ON c0."o_mun" = l."o_mun"
LEFT JOIN "__inftda_t_codes_1" AS c1 ON c1."d_mun" = l."d_mun";

-- The released leaf table: the hierarchy columns decoded from the public domain's codes and the
-- positive counts, in the order of the leaf codes (chain after chain), which is the order of
-- the hierarchy columns (the domain is coded in that order). The rows come in that order, and
-- DuckDB keeps it (preserve_insertion_order, its default); without that setting the order is
-- spelled out.
CREATE TABLE "out" AS
SELECT "o_reg", "o_mun", "d_reg", "d_prov", "d_mun", "count"::BIGINT AS "count"
FROM "__inftda_t_released";

-- Every level of the release as sums of its leaves (consistent by construction).
CREATE VIEW "out_levels" AS
SELECT CASE grouping("o_reg", "o_mun", "d_reg", "d_prov", "d_mun") WHEN 31 THEN 0 WHEN 27 THEN 1 WHEN 11 THEN 2 WHEN 9 THEN 3 WHEN 1 THEN 4 WHEN 0 THEN 5 END AS level,
       CASE grouping("o_reg", "o_mun", "d_reg", "d_prov", "d_mun") WHEN 31 THEN 'root' WHEN 27 THEN 'd_reg' WHEN 11 THEN 'o_reg x d_reg' WHEN 9 THEN 'o_reg x d_prov' WHEN 1 THEN 'o_mun x d_prov' WHEN 0 THEN 'o_mun x d_mun' END AS level_name,
       "o_reg", "o_mun", "d_reg", "d_prov", "d_mun",
       coalesce(sum("count"), 0)::BIGINT AS "count"
FROM "out"
GROUP BY GROUPING SETS ((), ("d_reg"), ("o_reg", "d_reg"), ("o_reg", "d_reg", "d_prov"), ("o_reg", "o_mun", "d_reg", "d_prov"), ("o_reg", "o_mun", "d_reg", "d_prov", "d_mun"));
