-- row_count('"trips"')
SELECT count(*) FROM "trips";
