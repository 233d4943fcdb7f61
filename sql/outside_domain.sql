-- Leaf values of one chain that the public domain does not list.
SELECT $col, count(*) OVER () AS n_values
FROM (SELECT DISTINCT $col FROM $leaf) AS l
ANTI JOIN $codes AS c USING ($col)
ORDER BY $col
LIMIT 1
