-- offending_rows('"dirty"', '"n" < 0')
SELECT * FROM "dirty" WHERE "n" < 0;
