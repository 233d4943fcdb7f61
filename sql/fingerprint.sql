-- The content fingerprint of a release: taken over what the write wrote, inside its
-- transaction, and checked again by publish(). Order-independent: the number of rows, the sum
-- and the xor of a hash of every row's values, and the columns with their types.

-- name: table
SELECT md5(concat_ws('|',
    (SELECT string_agg(column_name || ' ' || data_type, ', ' ORDER BY column_index)
     FROM duckdb_columns()
     WHERE database_name = $$database AND schema_name = $$schema AND table_name = $$name),
    count(*),
    coalesce(sum(hash(*COLUMNS(*))), 0),
    coalesce(bit_xor(hash(*COLUMNS(*))), 0)))
FROM $table

-- name: view
-- the definition as DuckDB keeps it (normalized, without the database's name)
SELECT md5(sql) FROM duckdb_views()
WHERE database_name = $$database AND schema_name = $$schema AND view_name = $$name
