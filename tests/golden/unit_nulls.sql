-- unit_nulls('"dirty"', 'u')
SELECT count(*) FROM "dirty" WHERE "u" IS NULL;
