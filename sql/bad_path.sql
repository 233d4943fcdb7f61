-- Diagnostics, on the error path only: an input row whose ancestors disagree with the domain.
SELECT $cols
FROM $input
WHERE $leaf_match
EXCEPT
SELECT $cols FROM $codes
LIMIT 1
