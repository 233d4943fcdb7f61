-- bound_units(SPEC.columns, '"trips"', 'u', distinct=False, m=2)
(-- Contribution bounding, before anything is counted: every privacy unit keeps at most 2 of its
-- records, chosen uniformly at random. Within a unit that has more than 2, records are ranked
-- by a keyed SHA-256 of (unit, record rank) under a secret 256-bit salt drawn from the release's
-- random source (the CSPRNG unless a test seed is given): unpredictable without the salt.
SELECT *, (__c <= 2 OR row_number() OVER (PARTITION BY __u ORDER BY __k) <= 2) AS __keep
FROM (
    SELECT "o_reg", "o_mun", "d_reg", "d_mun",
           "u" AS __u,
           count(*) OVER (PARTITION BY "u") AS __c,
           CASE WHEN count(*) OVER (PARTITION BY "u") > 2
                THEN sha256($salt || '|' || CAST("u" AS VARCHAR) || '|'
                            || CAST(row_number() OVER (PARTITION BY "u" ORDER BY "o_reg", "o_mun", "d_reg", "d_mun") AS VARCHAR))
           END AS __k
    FROM "trips"
) AS ranked);

-- bound_units(SPEC.columns, '"trips"', 'u', distinct=True, m=1)
(-- Contribution bounding, before anything is counted: every privacy unit keeps at most 1 of its
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
    FROM (SELECT DISTINCT "u", "o_reg", "o_mun", "d_reg", "d_mun" FROM "trips")
) AS ranked);
