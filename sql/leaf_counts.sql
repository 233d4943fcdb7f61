-- The one scan of the private input, grouped by the leaf column of every chain (in a nested
-- domain the leaf determines its ancestors). The ancestor columns are not grouped on. When the
-- release checks them against the domain, min and max of one hash of them per leaf cell let
-- the next step check every row's path; hashing every row's ancestors is what such a scan pays
-- for most, so by default that check runs once per version of the input. The count checks
-- keep how many rows are wrong per cell (NULL, negative, not whole, beyond int64), never a
-- value: their messages name the number of rows, not a private count.
CREATE TEMP TABLE $leaf AS
SELECT $leaf_cols,
       $count_sum AS __n,
       $count_nulls AS __nulls,
       $count_neg AS __neg,
       $count_frac AS __frac,
       $count_big AS __big$paths
FROM $input
GROUP BY $leaf_cols
