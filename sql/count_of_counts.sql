-- Count-of-counts histograms (release_count_of_counts): the two aggregations of the private
-- input, the public groups table per leaf, the output table and its levels view.

-- name: public_groups
-- the PUBLIC groups table per leaf code: rows listing the leaf, its groups, NULLs and fractions
SELECT c.$leaf_code AS leaf,
       count(*) AS listed,
       min(g.$groups) AS groups,
       max(g.$groups) AS groups_hi,
       count(*) FILTER (g.$groups IS NULL) AS nulls,
       coalesce(bool_or(g.$groups <> trunc(g.$groups)), false) AS fractional
FROM $table AS g
JOIN (SELECT DISTINCT $leaf_col, $leaf_code FROM $codes) AS c ON $leaf_match
GROUP BY 1
ORDER BY 1

-- name: group_sizes
-- A: one row per group of the private input, with its region and its size
CREATE TEMP TABLE $sizes AS
SELECT $group AS gid, $cols, count(*) AS size
FROM $input
GROUP BY ALL

-- name: split_groups
-- groups (ids) that sit in more than one leaf (or whose id is NULL): an input error
SELECT count(gid) - count(DISTINCT gid), count(*) FILTER (gid IS NULL)
FROM $sizes

-- name: histograms
-- H: per node of every level (ROLLUP of the hierarchy) and size, the number of groups
CREATE TEMP TABLE $histograms AS
SELECT $grouping AS level, $cols, size, count(*) AS groups
FROM $sizes
GROUP BY ROLLUP ($cols), size

-- name: node_codes
-- the histograms of one level keyed by the nodes' codes (NULL: a value outside the domain)
SELECT c.$code AS node, h.size, h.groups$checks
FROM $histograms AS h
LEFT JOIN (SELECT DISTINCT $level_cols, $code FROM $codes) AS c ON $match
WHERE h.level = $level

-- name: root_histogram
-- the root's histogram (node 0)
SELECT 0::BIGINT AS node, size, groups
FROM $histograms
WHERE level = 0

-- name: write_output
-- the released leaf histograms: the hierarchy columns decoded from the leaf codes
CREATE TABLE $output AS
SELECT $cols, r.size::BIGINT AS size, r.groups::BIGINT AS groups
FROM $released AS r
JOIN $codes AS c ON c.$leaf_code = r.leaf
ORDER BY $cols, size

-- name: levels_view
-- every level of the release as sums of its leaves (consistent by construction)
CREATE VIEW $view AS
SELECT CASE grouping($cols) $cases END AS level,
       CASE grouping($cols) $names END AS level_name,
       $cols,
       size,
       sum(groups)::BIGINT AS groups
FROM $output
GROUP BY GROUPING SETS ($sets)

-- name: disagree_hint
-- for the data owner: the regions whose groups in the input differ from the groups table
SELECT $cols, g.$groups AS listed, count(DISTINCT p.$group) AS found
FROM $table AS g LEFT JOIN $input AS p USING ($cols)
GROUP BY ALL
HAVING found <> listed

-- name: evaluate
-- evaluate_count_of_counts(): earthmover's distance per node, averaged per level (NOT private)
WITH sizes AS (
    SELECT $group AS gid, $cols, count(*) AS size FROM $truth GROUP BY ALL
),
leaf_truth AS (
    SELECT $cols, size, count(*) AS groups FROM sizes GROUP BY ALL$empty_groups
),
t AS (
    SELECT $grouping AS level, $cols, size, sum(groups) AS groups
    FROM leaf_truth GROUP BY ROLLUP ($cols), size
),
r AS (
    SELECT $grouping AS level, $cols, $released_size AS size, sum($released_groups) AS groups
    FROM $released GROUP BY ROLLUP ($cols), $released_size
),
cells AS (
    SELECT coalesce(t.level, r.level) AS level, $coalesced,
           coalesce(t.size, r.size) AS size,
           coalesce(t.groups, 0) - coalesce(r.groups, 0) AS diff,
           coalesce(t.groups, 0) AS t_groups, coalesce(r.groups, 0) AS r_groups
    FROM t FULL OUTER JOIN r ON t.level = r.level AND t.size = r.size$on
),
cumulative AS (
    SELECT level, $cols, size, t_groups, r_groups,
           sum(diff) OVER w AS cum,
           coalesce(lead(size) OVER w - size, 0) AS width
    FROM cells
    WINDOW w AS (PARTITION BY level, $cols ORDER BY size)
),
per_node AS (
    SELECT level, $cols, sum(abs(cum) * width) AS emd,
           sum(t_groups) AS groups_true, sum(r_groups) AS groups_released
    FROM cumulative GROUP BY ALL
)
SELECT level::INTEGER AS level, count(*)::BIGINT AS nodes,
       avg(emd)::DOUBLE AS mean_emd, max(emd)::DOUBLE AS max_emd,
       sum(groups_true)::BIGINT AS groups_true, sum(groups_released)::BIGINT AS groups_released
FROM per_node
GROUP BY level
ORDER BY level
