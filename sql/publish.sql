-- publish(): copy one release into a new database file, attached under an alias.

-- name: attach
ATTACH $path AS $alias$options

-- name: copy_table
CREATE TABLE $target AS FROM $source

-- name: use
USE $database

-- name: detach
DETACH $alias

-- name: database_files
-- the files of the attached databases (an in-memory database has none)
SELECT database_name, path FROM duckdb_databases() WHERE coalesce(path, '') <> ''
