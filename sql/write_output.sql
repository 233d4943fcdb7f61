-- The released leaf table: the hierarchy columns decoded from the public domain's codes and the
-- positive counts, in the order of the leaf codes (chain after chain), which is the order of
-- the hierarchy columns (the domain is coded in that order). The rows come in that order, and
-- DuckDB keeps it (preserve_insertion_order, its default); without that setting the order is
-- spelled out.
CREATE TABLE $output AS
SELECT $cols, "count"::BIGINT AS "count"
FROM $released$order

-- name: insertion_order
SELECT current_setting('preserve_insertion_order')

-- name: settings
-- what a release's write asks before its transaction, at once: the insertion order as above,
-- and the file of the current database (NULL in memory), whose writers take turns
SELECT current_setting('preserve_insertion_order'), path
FROM duckdb_databases()
WHERE database_name = current_database()
