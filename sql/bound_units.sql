-- Contribution bounding, before anything is counted: every privacy unit keeps at most $m of its
-- records, chosen uniformly at random. Within a unit that has more than $m, records are ranked
-- by a keyed SHA-256 of (unit, record rank) under a secret 256-bit salt drawn from the release's
-- random source (the CSPRNG unless a test seed is given): unpredictable without the salt.
SELECT *, (__c <= $m OR row_number() OVER (PARTITION BY __u ORDER BY __k) <= $m) AS __keep
FROM (
    SELECT $cols,
           $unit AS __u,
           count(*) OVER (PARTITION BY $unit) AS __c,
           CASE WHEN count(*) OVER (PARTITION BY $unit) > $m
                THEN sha256($salt || '|' || CAST($unit AS VARCHAR) || '|'
                            || CAST(row_number() OVER (PARTITION BY $unit ORDER BY $cols) AS VARCHAR))
           END AS __k
    FROM $source
) AS ranked
