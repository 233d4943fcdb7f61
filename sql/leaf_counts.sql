-- The one scan of the private input, grouped by the leaf column of every chain (in a nested
-- domain the leaf determines its ancestors). The ancestor columns are not grouped on (hashing
-- strings of every row is what a scan pays for most); instead min and max of one hash of them
-- per leaf cell let the next step check every row's path against the domain.
CREATE TEMP TABLE $leaf AS
SELECT $leaf_cols,
       $count_sum AS __n,
       $count_min AS __min,
       $count_frac AS __frac,
       $count_nulls AS __nulls,
       $path_min AS __hmin,
       $path_max AS __hmax
FROM $input
GROUP BY $leaf_cols
