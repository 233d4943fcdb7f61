-- Synthetic data sets (inftda_sql.synthetic): a geography, its per-side views, a trips table.

-- name: geography
CREATE TABLE $geo AS SELECT $select FROM $source ORDER BY $order

-- name: side_view
CREATE VIEW $view AS SELECT $renamed FROM $geo

-- name: trips_microdata
CREATE TABLE $trips AS SELECT $cols FROM $pairs, range(n) AS r(i)

-- name: trips_counts
CREATE TABLE $trips AS SELECT * FROM $pairs

-- name: table_from
CREATE TABLE $table AS SELECT * FROM $source ORDER BY ALL

-- name: odmts_cells
-- every leaf cell of an ODMTS day: every ordered pair of stops in every period, with the
-- pair's zones and mode (the public mapping) and the period
CREATE VIEW $cells AS
SELECT p.o_stop, p.d_stop, t.period, p.o_zone, p.d_zone, p.mode
FROM $pairs AS p CROSS JOIN $periods AS t

-- name: odmts_trips
-- one row per trip (o_stop, d_stop, period) from per-cell counts
CREATE TABLE $trips AS
SELECT o_stop, d_stop, period FROM $counts, range(n) AS r(i) ORDER BY o_stop, d_stop, period

-- name: groups_table
-- the PUBLIC groups table of a count-of-counts data set: every leaf region, its groups
CREATE TABLE $groups AS SELECT $cols, groups::BIGINT AS groups FROM $geo ORDER BY leaf

-- name: persons
-- one row per person: n groups of each (leaf, size), numbered from first_gid, size persons each
CREATE TABLE $persons AS
SELECT (h.first_gid + k.i)::BIGINT AS $group, $cols
FROM $hist AS h
JOIN $geo AS g USING (leaf),
     range(h.n) AS k(i),
     range(h.size) AS p(j)
