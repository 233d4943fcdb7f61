-- The two bookkeeping tables of a database: the ledger of releases and the stored budgets.
-- Their columns are spelled once, as the fields of ReleaseRecord and BudgetRecord in
-- inftda_sql/engines/duckdb/ledger.py; these statements take them as $columns, $names and $params.

-- name: create
CREATE TABLE IF NOT EXISTS $table (
$columns
)

-- name: add_column
ALTER TABLE $table ADD COLUMN IF NOT EXISTS $column

-- name: insert
INSERT INTO $table ($names) VALUES ($params)

-- name: upsert
INSERT OR REPLACE INTO $table ($names) VALUES ($params)

-- name: next_release_id
SELECT coalesce(max(release_id), 0) + 1 FROM $table

-- name: select
SELECT $names FROM $table WHERE $where ORDER BY $order

-- name: delete_budget
DELETE FROM $table WHERE input_table = $$input
