-- leaf_counts(NAMES, SPEC, ...): microdata
-- The one scan of the private input, grouped by the leaf column of every chain (in a nested
-- domain the leaf determines its ancestors). The ancestor columns are not grouped on (hashing
-- strings of every row is what a scan pays for most); instead min and max of one hash of them
-- per leaf cell let the next step check every row's path against the domain.
CREATE TEMP TABLE "__inftda_g_leaf" AS
SELECT "o_mun", "d_mun",
       count(*)::BIGINT AS __n,
       1 AS __min,
       false AS __frac,
       0 AS __nulls,
       min(hash("o_reg", "d_reg")) AS __hmin,
       max(hash("o_reg", "d_reg")) AS __hmax
FROM "trips"
GROUP BY "o_mun", "d_mun";

-- leaf_counts(NAMES, SPEC, ...): integer count column n
-- The one scan of the private input, grouped by the leaf column of every chain (in a nested
-- domain the leaf determines its ancestors). The ancestor columns are not grouped on (hashing
-- strings of every row is what a scan pays for most); instead min and max of one hash of them
-- per leaf cell let the next step check every row's path against the domain.
CREATE TEMP TABLE "__inftda_g_leaf" AS
SELECT "o_mun", "d_mun",
       sum("n")::BIGINT AS __n,
       min("n") AS __min,
       false AS __frac,
       count(*) FILTER ("n" IS NULL) AS __nulls,
       min(hash("o_reg", "d_reg")) AS __hmin,
       max(hash("o_reg", "d_reg")) AS __hmax
FROM "trips"
GROUP BY "o_mun", "d_mun";

-- leaf_counts(NAMES, SPEC, ...): fractional count column w
-- The one scan of the private input, grouped by the leaf column of every chain (in a nested
-- domain the leaf determines its ancestors). The ancestor columns are not grouped on (hashing
-- strings of every row is what a scan pays for most); instead min and max of one hash of them
-- per leaf cell let the next step check every row's path against the domain.
CREATE TEMP TABLE "__inftda_g_leaf" AS
SELECT "o_mun", "d_mun",
       sum("w")::DOUBLE AS __n,
       min("w") AS __min,
       coalesce(bool_or("w" <> trunc("w")), false) AS __frac,
       count(*) FILTER ("w" IS NULL) AS __nulls,
       min(hash("o_reg", "d_reg")) AS __hmin,
       max(hash("o_reg", "d_reg")) AS __hmax
FROM "trips"
GROUP BY "o_mun", "d_mun";

-- leaf_counts(NAMES, SPEC, ...): an ENUM ancestor
-- The one scan of the private input, grouped by the leaf column of every chain (in a nested
-- domain the leaf determines its ancestors). The ancestor columns are not grouped on (hashing
-- strings of every row is what a scan pays for most); instead min and max of one hash of them
-- per leaf cell let the next step check every row's path against the domain.
CREATE TEMP TABLE "__inftda_g_leaf" AS
SELECT "o_mun", "d_mun",
       count(*)::BIGINT AS __n,
       1 AS __min,
       false AS __frac,
       0 AS __nulls,
       min(hash(CAST("o_reg" AS VARCHAR), "d_reg")) AS __hmin,
       max(hash(CAST("o_reg" AS VARCHAR), "d_reg")) AS __hmax
FROM "trips_enum"
GROUP BY "o_mun", "d_mun";

-- leaf_counts(NAMES, SPEC, ...): bound_units() input
-- The one scan of the private input, grouped by the leaf column of every chain (in a nested
-- domain the leaf determines its ancestors). The ancestor columns are not grouped on (hashing
-- strings of every row is what a scan pays for most); instead min and max of one hash of them
-- per leaf cell let the next step check every row's path against the domain.
CREATE TEMP TABLE "__inftda_g_leaf" AS
SELECT "o_mun", "d_mun",
       (count(*) FILTER (WHERE __keep))::BIGINT AS __n,
       1 AS __min,
       false AS __frac,
       0 AS __nulls,
       min(hash("o_reg", "d_reg")) AS __hmin,
       max(hash("o_reg", "d_reg")) AS __hmax
FROM (-- Contribution bounding, before anything is counted: every privacy unit keeps at most 1 of its
-- records, chosen uniformly at random. Within a unit that has more than 1, records are ranked
-- by a keyed SHA-256 of (unit, record rank) under a secret 256-bit salt drawn from the release's
-- random source (the OS CSPRNG unless a test seed is given): unpredictable without the salt.
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
GROUP BY "o_mun", "d_mun";
