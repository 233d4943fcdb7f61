-- A value of $child listed under more than one $parent: the domain is not nested.
SELECT $child, min($parent) AS first_parent, max($parent) AS second_parent
FROM (SELECT DISTINCT $parent, $child FROM $codes) AS p
GROUP BY $child
HAVING count(*) > 1
ORDER BY $child
LIMIT 1
