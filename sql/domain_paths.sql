-- The distinct paths of one chain of the PUBLIC domain, cast to the input's types, sorted.
-- Sorted (parent path, value) order makes the children of every node one contiguous run, so
-- dense codes per depth follow from where neighbouring rows change.
SELECT DISTINCT $casts
FROM $domain
ORDER BY ALL
