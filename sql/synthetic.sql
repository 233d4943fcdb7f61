-- Synthetic data sets (inftda_sql.synthetic): a geography, its per-side views, a trips table.

-- name: geography
CREATE TABLE $geo AS SELECT $select FROM $source ORDER BY $order

-- name: side_view
CREATE VIEW $view AS SELECT $renamed FROM $geo

-- name: trips_microdata
CREATE TABLE $trips AS SELECT $cols FROM $pairs, range(n) AS r(i)

-- name: trips_counts
CREATE TABLE $trips AS SELECT * FROM $pairs
