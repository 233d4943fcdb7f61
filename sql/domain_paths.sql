-- The paths of one chain of the PUBLIC domain, cast to the input's types, sorted.
-- Sorted (parent path, value) order makes the children of every node one contiguous run, so
-- dense codes per depth follow from where neighbouring rows change (and repeated rows, which
-- change nowhere, are dropped there: cheaper than a DISTINCT before the sort).
SELECT $casts
FROM $domain
ORDER BY ALL

-- name: node_counts
-- the number of nodes of every depth of a chain's domain (plan())
SELECT $counts FROM $domain

-- name: chain_columns
SELECT $cols FROM $domain
