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
-- function of its value computed outside SQL (integer leaves increasing in code order, or
-- strings: a lookup in the PUBLIC domain's leaves instead of a join to its code table); with
-- the path hash, compared with the domain's (domain_path_hashes, path_mismatches).
SELECT $leaf_cols, l.__n::BIGINT AS n$hashes
FROM $leaf AS l

-- name: domain_path_hashes
-- Per leaf of a chain's PUBLIC code table, its code and the hash of its ancestors: the hash
-- leaf_counts takes of an input row whose ancestors are those the domain gives the leaf.
SELECT $code AS code, $path_hash AS h
FROM $codes

-- name: path_mismatches
-- The leaf cells (registered from Arrow: row i, path hash h, the domain's hash e0, e1 ... of
-- each checked chain's ancestors for the cell's leaf) whose path hash is not the domain's: the
-- hash of the chains' hashes, as leaf_counts takes it. None when the input agrees.
SELECT i
FROM $table
WHERE h <> $expected
