-- The one scan of the private input: its count per distinct hierarchy path, plus what the
-- checks before noise need (NULL and negative / fractional counts). Everything after works on
-- this aggregate, which is at most as large as the number of distinct paths.
CREATE TEMP TABLE $leaf AS
SELECT $cols,
       $count_sum AS __n,
       $count_min AS __min,
       $count_frac AS __frac,
       $count_nulls AS __nulls
FROM $input
GROUP BY $cols
