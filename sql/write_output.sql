-- The released leaf table: hierarchy columns decoded from the codes, positive counts only.
CREATE TABLE $output AS
SELECT $cols, r."count"::BIGINT AS "count"
FROM $released AS r
$joins
ORDER BY $order
