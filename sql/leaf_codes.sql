-- The leaf cells with the public domain's leaf code of every chain instead of their values (a
-- leaf value the domain does not list gets no code: NULL), fetched once; every level's counts
-- are sums of these cells. When the release checks the input's ancestors, path_ok tells
-- whether the cell's ancestors hash to those the domain gives its leaf (a cell split by its
-- ancestors is several rows: every one of them is ok only if they all carry the domain's).
SELECT $code_cols, l.__n::BIGINT AS n$path_ok
FROM $leaf AS l
$joins

-- name: leaf_values
-- The leaf cells with their leaf values, fetched once, when every chain's leaf code is a
-- function of its value computed outside SQL (integer leaves increasing in code order: a
-- lookup in the PUBLIC domain's leaves instead of a join to its code table).
SELECT $leaf_cols, l.__n::BIGINT AS n
FROM $leaf AS l

-- name: coded_cells
-- The leaf cells of a scan that grouped by the leaf codes (leaf_counts.coded), fetched once.
SELECT $code_cols, l.__n::BIGINT AS n
FROM $leaf AS l

-- name: ancestor_hashes
-- The PUBLIC domain's side of the ancestor check of a scan grouped by leaf codes: one hash of a
-- chain's ancestor columns per leaf, in code order.
SELECT $hash AS h
FROM $codes
ORDER BY $code
