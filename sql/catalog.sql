-- The catalog: what a name is, what a relation's columns are, temporary objects dropped.

-- name: object_kind
-- 'BASE TABLE', 'VIEW' or 'LOCAL TEMPORARY' of a (possibly schema-qualified) name, any case
SELECT table_type FROM information_schema.tables
WHERE lower(table_name) = lower($$table)
  AND ($$schema IS NULL OR lower(table_schema) = lower($$schema))
  AND table_catalog = current_database()

-- name: some_tables
SELECT table_name FROM information_schema.tables
WHERE table_catalog = current_database()
ORDER BY table_name
LIMIT 20

-- name: describe
DESCRIBE SELECT * FROM $source

-- name: describe_table
DESCRIBE $table

-- name: drop_view
DROP VIEW IF EXISTS $view

-- name: drop_table
DROP TABLE IF EXISTS $table

-- name: drop_object
DROP $kind $name

-- name: storage_version
SELECT tags FROM duckdb_databases() WHERE database_name = coalesce($$db, current_database())

-- name: current_database
SELECT current_database()
