-- The library's caches in a database: coded public domains, and inputs whose ancestor columns
-- passed the check against the domain. Both are tables with the reserved prefix __inftda, so
-- no output can ever be written over them; dropping them only costs the next release the work.

-- name: domain_key
-- the content key of one chain's domain as the release reads it (values cast to the input's
-- types): the number of rows and two sums of row hashes. Any changed, added or removed row
-- changes it (the order of rows does not, and does not change the coded domain either).
SELECT count(*), coalesce(sum(h), 0)::VARCHAR, coalesce(sum(hash(h)), 0)::VARCHAR
FROM (SELECT hash($casts) AS h FROM $domain)

-- name: domain_paths_unsorted
-- the paths of one chain's domain in the order it is read (often already sorted: then no sort)
SELECT $casts FROM $domain

-- name: create_domains
CREATE TABLE IF NOT EXISTS $table (
    "key" VARCHAR PRIMARY KEY,  -- the domain's content key (domain_key), hashed
    "table_name" VARCHAR NOT NULL,  -- the table holding its coded paths
    "source" VARCHAR NOT NULL,  -- the domain and chain it was read as (for eviction)
    "paths" BIGINT NOT NULL,  -- its distinct paths
    "offsets" BIGINT[][] NOT NULL,  -- per depth, the first child code of every parent (the tree)
    "created_at" TIMESTAMP NOT NULL  -- UTC
)

-- name: find_domain
SELECT "table_name", "paths", "offsets" FROM $table WHERE "key" = $$key

-- name: read_domain
SELECT * FROM $domain

-- name: store_domain
CREATE TABLE $target AS SELECT * FROM $source

-- name: add_domain
INSERT OR REPLACE INTO $table VALUES ($$key, $$table_name, $$source, $$paths, $$offsets, $$created_at)

-- name: stale_domains
-- the entries to drop when a new one is stored: older ones of the same source, and all but the
-- newest $keep entries
SELECT "key", "table_name" FROM $table
WHERE "key" <> $$key
  AND ("source" = $$source
       OR "key" NOT IN (SELECT "key" FROM $table ORDER BY "created_at" DESC LIMIT $keep))

-- name: drop_domain
DELETE FROM $table WHERE "key" = $$key

-- name: create_checks
CREATE TABLE IF NOT EXISTS $table (
    "key" VARCHAR PRIMARY KEY,  -- input version, hierarchy and domain that passed, hashed
    "checked_at" TIMESTAMP NOT NULL  -- UTC
)

-- name: find_check
SELECT count(*) FROM $table WHERE "key" = $$key

-- name: add_check
INSERT OR REPLACE INTO $table VALUES ($$key, $$checked_at)

-- name: row_counts
-- the row count of every base table an input reads (from table metadata: no scan)
SELECT $counts

-- name: table_versions
-- the catalog identity of the base tables an input reads
SELECT database_name, schema_name, table_name, table_oid FROM duckdb_tables()

-- name: view_definitions
SELECT database_name, schema_name, view_name, sql FROM duckdb_views() WHERE NOT internal
