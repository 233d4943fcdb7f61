-- Feature releases (CBDP): the public domain's tables, the ONE scan of the private input that
-- counts every query, the released leaf table and its features view.

-- name: part
-- the feature columns of one domain table (leaf columns cast to the input's types)
SELECT $casts FROM $domain

-- name: counts
-- Every query's true counts in one scan of the private input. The input's leaf columns are
-- joined to the code tables of the PUBLIC domain (one per domain table), which give each row
-- the code of its cell in every query; GROUPING SETS counts every query's cells in the same
-- pass. A row whose leaf the domain does not list gets NULL codes and is counted under NULL in
-- the leaf's set (an error, raised before any noise). grouping() tells the sets apart.
SELECT grouping($keys) AS __set, $keys,
       $count_sum AS __n, $count_nulls AS __nulls, $count_neg AS __neg, $count_frac AS __frac,
       $count_big AS __big
FROM (
    SELECT $key_exprs, $carried
    FROM $input AS i
    $joins
) AS t
GROUP BY GROUPING SETS ($sets)

-- name: unmatched
-- Diagnostics, on the error path only: an input leaf the domain does not list, and how many.
SELECT *, count(*) OVER () AS __n
FROM (SELECT DISTINCT $leaf_cols FROM $input AS i $joins WHERE $unmatched) AS u
ORDER BY ALL
LIMIT 1

-- name: output
-- The released leaf table: every feature column decoded from the domain, positive counts.
CREATE TABLE $output AS
SELECT $cols, r."count"::BIGINT AS "count"
FROM $released AS r
$joins
ORDER BY $order

-- name: view
-- Every feature's released counts as sums of the leaves (consistent by construction).
CREATE VIEW $view AS
SELECT CASE grouping($cols) $cases END AS feature,
       $cols,
       sum("count")::BIGINT AS "count"
FROM $output
GROUP BY GROUPING SETS ($sets)

-- name: read_back
-- The released leaf table as written (release(return_as=...) of a feature release).
SELECT * FROM $output ORDER BY $order
