-- The catalog: what a name is, what a query reads, temporary objects dropped.

-- name: objects
-- every table and view (temporary ones included) of a name, any case
SELECT database_name, schema_name, table_name, 'table' AS kind
FROM duckdb_tables()
WHERE lower(table_name) = lower($$name)
UNION ALL
SELECT database_name, schema_name, view_name, 'view' AS kind
FROM duckdb_views()
WHERE NOT internal AND lower(view_name) = lower($$name)

-- name: snapshot
-- everything a release asks the catalog, in one read (see catalog/memo.py): where names are
-- looked up and created, the attached databases (and their type), the schemas, every table and view (with the
-- name lower-cased as DuckDB compares names), and the names asked about, lower-cased likewise;
-- and what a release's write asks before its transaction (see write_output.settings): whether
-- DuckDB keeps the insertion order (the context's flag) and each database's file (NULL in memory)
SELECT 'context' AS what, current_database() AS a, current_schema() AS b,
    current_setting('search_path') AS c, current_setting('explain_output') AS d,
    current_setting('preserve_insertion_order')::BOOLEAN AS flag
UNION ALL
SELECT 'database', database_name, type, path, NULL, readonly FROM duckdb_databases()
UNION ALL
SELECT 'schema', database_name, schema_name, NULL, NULL, NULL FROM duckdb_schemas()
UNION ALL
SELECT 'table', database_name, schema_name, table_name, lower(table_name), NULL
FROM duckdb_tables()
UNION ALL
SELECT 'view', database_name, schema_name, view_name, lower(view_name), NULL
FROM duckdb_views() WHERE NOT internal
UNION ALL
SELECT 'name', n, NULL, NULL, lower(n), NULL FROM unnest([$names]::VARCHAR[]) AS t(n)

-- name: context
-- where an unqualified name is looked up and created, and what else is searched
SELECT current_database(), current_schema(), current_setting('search_path')

-- name: schemas
SELECT database_name, schema_name FROM duckdb_schemas()

-- name: databases
SELECT database_name, readonly FROM duckdb_databases()

-- name: some_tables
SELECT name FROM (
    SELECT table_name AS name FROM duckdb_tables()
    UNION ALL
    SELECT view_name FROM duckdb_views() WHERE NOT internal
)
WHERE NOT starts_with(name, '__inftda')
ORDER BY name
LIMIT 20

-- name: explain_output
SELECT current_setting('explain_output')

-- name: set_explain_output
SET explain_output = $value

-- name: explain
-- the plans of reading a source; with explain_output = 'all' the first is the logical plan as
-- bound, before the optimizer removes anything (every table scanned is still there)
EXPLAIN (FORMAT json) SELECT * FROM $source

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

-- name: read_files
$reader([$files])
