-- coc_disagree_hint(CHAIN, hh, 'n', persons, 'hh')
SELECT "state", "county", g."n" AS listed, count(DISTINCT p."hh") AS found
FROM "hh" AS g LEFT JOIN "persons" AS p USING ("state", "county")
GROUP BY ALL
HAVING found <> listed;
