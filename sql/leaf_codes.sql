-- Replace every chain's values by its integer codes (one row per non-empty leaf cell), and
-- check the input against the domain in the same pass: a leaf value the domain does not list
-- has no code (NULL), and path_ok tells whether every input row's ancestors are those the
-- domain gives its leaf.
CREATE TEMP TABLE $keys AS
SELECT $code_cols, l.__n::BIGINT AS n,
       (l.__hmin = l.__hmax AND l.__hmin = $expected) AS path_ok,
       $leaf_cols
FROM $leaf AS l
$joins
