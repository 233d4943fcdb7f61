-- leaf_counts(NAMES, SPEC, ...): microdata, ancestors not checked
-- The one scan of the private input, grouped by the leaf column of every chain (in a nested
-- domain the leaf determines its ancestors). When the release checks the input's ancestor
-- columns against the domain, one hash of them per row is a grouping key too: a leaf cell
-- whose rows all carry the same ancestors stays one group, and the next step compares its hash
-- with the domain's; a cell whose rows disagree splits into several groups, one of which, at
-- least, differs from the domain's. A key costs DuckDB's hash table less than aggregates of the
-- hash would (min and max per cell). With a count column, the count checks keep how many rows
-- are wrong per cell (NULL, negative, not whole, beyond int64), never a value: their messages
-- name the number of rows, not a private count; records counted one by one have none.
CREATE TEMP TABLE "__inftda_g_leaf" AS
SELECT "o_mun", "d_mun",
       count(*)::BIGINT AS __n
FROM "trips"
GROUP BY "o_mun", "d_mun";

-- leaf_counts(NAMES, SPEC, ...): microdata
-- The one scan of the private input, grouped by the leaf column of every chain (in a nested
-- domain the leaf determines its ancestors). When the release checks the input's ancestor
-- columns against the domain, one hash of them per row is a grouping key too: a leaf cell
-- whose rows all carry the same ancestors stays one group, and the next step compares its hash
-- with the domain's; a cell whose rows disagree splits into several groups, one of which, at
-- least, differs from the domain's. A key costs DuckDB's hash table less than aggregates of the
-- hash would (min and max per cell). With a count column, the count checks keep how many rows
-- are wrong per cell (NULL, negative, not whole, beyond int64), never a value: their messages
-- name the number of rows, not a private count; records counted one by one have none.
CREATE TEMP TABLE "__inftda_g_leaf" AS
SELECT "o_mun", "d_mun",
       hash("o_reg", "d_reg") AS __h,
       count(*)::BIGINT AS __n
FROM "trips"
GROUP BY "o_mun", "d_mun", hash("o_reg", "d_reg");

-- leaf_counts(NAMES, SPEC, ...): integer count column n
-- The one scan of the private input, grouped by the leaf column of every chain (in a nested
-- domain the leaf determines its ancestors). When the release checks the input's ancestor
-- columns against the domain, one hash of them per row is a grouping key too: a leaf cell
-- whose rows all carry the same ancestors stays one group, and the next step compares its hash
-- with the domain's; a cell whose rows disagree splits into several groups, one of which, at
-- least, differs from the domain's. A key costs DuckDB's hash table less than aggregates of the
-- hash would (min and max per cell). With a count column, the count checks keep how many rows
-- are wrong per cell (NULL, negative, not whole, beyond int64), never a value: their messages
-- name the number of rows, not a private count; records counted one by one have none.
CREATE TEMP TABLE "__inftda_g_leaf" AS
SELECT "o_mun", "d_mun",
       hash("o_reg", "d_reg") AS __h,
       sum("n") AS __n,
       count(*) FILTER ("n" IS NULL) AS __nulls,
       count(*) FILTER ("n" < 0) AS __neg,
       0 AS __frac,
       0 AS __big
FROM "trips"
GROUP BY "o_mun", "d_mun", hash("o_reg", "d_reg");

-- leaf_counts(NAMES, SPEC, ...): fractional count column w
-- The one scan of the private input, grouped by the leaf column of every chain (in a nested
-- domain the leaf determines its ancestors). When the release checks the input's ancestor
-- columns against the domain, one hash of them per row is a grouping key too: a leaf cell
-- whose rows all carry the same ancestors stays one group, and the next step compares its hash
-- with the domain's; a cell whose rows disagree splits into several groups, one of which, at
-- least, differs from the domain's. A key costs DuckDB's hash table less than aggregates of the
-- hash would (min and max per cell). With a count column, the count checks keep how many rows
-- are wrong per cell (NULL, negative, not whole, beyond int64), never a value: their messages
-- name the number of rows, not a private count; records counted one by one have none.
CREATE TEMP TABLE "__inftda_g_leaf" AS
SELECT "o_mun", "d_mun",
       hash("o_reg", "d_reg") AS __h,
       sum("w"::DOUBLE) AS __n,
       count(*) FILTER ("w" IS NULL) AS __nulls,
       count(*) FILTER ("w" < 0) AS __neg,
       count(*) FILTER (NOT (isfinite("w") AND "w" = trunc("w"))) AS __frac,
       0 AS __big
FROM "trips"
GROUP BY "o_mun", "d_mun", hash("o_reg", "d_reg");

-- leaf_counts(NAMES, SPEC, ...): a 128-bit count column n (wide)
-- The one scan of the private input, grouped by the leaf column of every chain (in a nested
-- domain the leaf determines its ancestors). When the release checks the input's ancestor
-- columns against the domain, one hash of them per row is a grouping key too: a leaf cell
-- whose rows all carry the same ancestors stays one group, and the next step compares its hash
-- with the domain's; a cell whose rows disagree splits into several groups, one of which, at
-- least, differs from the domain's. A key costs DuckDB's hash table less than aggregates of the
-- hash would (min and max per cell). With a count column, the count checks keep how many rows
-- are wrong per cell (NULL, negative, not whole, beyond int64), never a value: their messages
-- name the number of rows, not a private count; records counted one by one have none.
CREATE TEMP TABLE "__inftda_g_leaf" AS
SELECT "o_mun", "d_mun",
       hash("o_reg", "d_reg") AS __h,
       sum(TRY_CAST("n" AS BIGINT)) AS __n,
       count(*) FILTER ("n" IS NULL) AS __nulls,
       count(*) FILTER ("n" < 0) AS __neg,
       0 AS __frac,
       count(*) FILTER ("n" IS NOT NULL AND TRY_CAST("n" AS BIGINT) IS NULL) AS __big
FROM "trips"
GROUP BY "o_mun", "d_mun", hash("o_reg", "d_reg");

-- leaf_counts(NAMES, SPEC, ...): an ENUM ancestor
-- The one scan of the private input, grouped by the leaf column of every chain (in a nested
-- domain the leaf determines its ancestors). When the release checks the input's ancestor
-- columns against the domain, one hash of them per row is a grouping key too: a leaf cell
-- whose rows all carry the same ancestors stays one group, and the next step compares its hash
-- with the domain's; a cell whose rows disagree splits into several groups, one of which, at
-- least, differs from the domain's. A key costs DuckDB's hash table less than aggregates of the
-- hash would (min and max per cell). With a count column, the count checks keep how many rows
-- are wrong per cell (NULL, negative, not whole, beyond int64), never a value: their messages
-- name the number of rows, not a private count; records counted one by one have none.
CREATE TEMP TABLE "__inftda_g_leaf" AS
SELECT "o_mun", "d_mun",
       hash(CAST("o_reg" AS VARCHAR), "d_reg") AS __h,
       count(*)::BIGINT AS __n
FROM "trips_enum"
GROUP BY "o_mun", "d_mun", hash(CAST("o_reg" AS VARCHAR), "d_reg");

-- leaf_counts(NAMES, SPEC, ...): bound_units() input
-- The one scan of the private input, grouped by the leaf column of every chain (in a nested
-- domain the leaf determines its ancestors). When the release checks the input's ancestor
-- columns against the domain, one hash of them per row is a grouping key too: a leaf cell
-- whose rows all carry the same ancestors stays one group, and the next step compares its hash
-- with the domain's; a cell whose rows disagree splits into several groups, one of which, at
-- least, differs from the domain's. A key costs DuckDB's hash table less than aggregates of the
-- hash would (min and max per cell). With a count column, the count checks keep how many rows
-- are wrong per cell (NULL, negative, not whole, beyond int64), never a value: their messages
-- name the number of rows, not a private count; records counted one by one have none.
CREATE TEMP TABLE "__inftda_g_leaf" AS
SELECT "o_mun", "d_mun",
       hash("o_reg", "d_reg") AS __h,
       (count(*) FILTER (WHERE __keep))::BIGINT AS __n
FROM (-- Contribution bounding, before anything is counted: every privacy unit keeps at most 1 of its
-- records, chosen uniformly at random. Within a unit that has more than 1, records are ranked
-- by a keyed SHA-256 of (unit, record rank) under a secret 256-bit salt drawn from the release's
-- random source (the CSPRNG unless a test seed is given): unpredictable without the salt.
SELECT *, (__c <= 1 OR row_number() OVER (PARTITION BY __u ORDER BY __k) <= 1) AS __keep
FROM (
    SELECT "o_reg", "o_mun", "d_reg", "d_mun",
           "u" AS __u,
           count(*) OVER (PARTITION BY "u") AS __c,
           CASE WHEN count(*) OVER (PARTITION BY "u") > 1
                THEN sha256($salt || '|' || CAST("u" AS VARCHAR) || '|'
                            || CAST(row_number() OVER (PARTITION BY "u" ORDER BY "o_reg", "o_mun", "d_reg", "d_mun") AS VARCHAR))
           END AS __k
    FROM "trips"
) AS ranked)
GROUP BY "o_mun", "d_mun", hash("o_reg", "d_reg");
