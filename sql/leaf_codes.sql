-- Replace every chain's values by its integer codes (one row per non-empty leaf cell).
CREATE TEMP TABLE $keys AS
SELECT $code_cols, l.__n::BIGINT AS n
FROM $leaf AS l
$joins
