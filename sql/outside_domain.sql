-- Input paths of one chain that the public domain does not list.
SELECT $cols, count(*) OVER () AS n_paths
FROM (SELECT DISTINCT $cols FROM $leaf) AS l
ANTI JOIN $codes AS c USING ($cols)
ORDER BY $cols
LIMIT 1
