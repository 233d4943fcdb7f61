-- Checks of the private input, run after the scan and before any noise. Their results go to
-- the data owner's error messages only (never into a released table).

-- name: leaf_stats
-- the count column's rows that are NULL, negative, not whole numbers or beyond int64 (from the
-- per-cell aggregates of sql/leaf_counts.sql; zeros where the scan counted records), the leaf
-- cells whose sum exceeds the limit, then per leaf column its NULL rows (none for a table
-- grouped by leaf codes); numbers of rows and cells only, never a count
SELECT $count_checks, count(*) FILTER (__n > $limit)$null_counts
FROM $leaf

-- name: nan_leaves
-- per floating-point leaf column, its leaf cells holding NaN (NaN is no category)
SELECT $checks FROM $leaf

-- name: offending_rows
SELECT * FROM $input WHERE $condition

-- name: unit_nulls
SELECT count(*) FROM $input WHERE $unit IS NULL

-- name: missing_leaf
-- a leaf value of the input the domain does not list, and how many such values there are
SELECT v, count(*) OVER ()
FROM (SELECT DISTINCT l.$leaf_col AS v FROM $leaf AS l ANTI JOIN $codes AS c ON c.$leaf_col = l.$leaf_col)
ORDER BY 1
LIMIT 1

-- name: leaf_of_code
SELECT $leaf_col FROM $codes WHERE $code = $$code

-- name: row_count
SELECT count(*) FROM $input

-- name: distinct_paths
(SELECT DISTINCT $cols FROM $input)
