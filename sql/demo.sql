-- inftda-sql demo: the marker of a file the demo made, the facts it prints, the flow it suggests.

-- name: create_marker
CREATE TABLE $marker AS SELECT 'made by inftda-sql demo' AS note

-- name: has_marker
SELECT count(*) FROM information_schema.tables WHERE table_name = $$marker

-- name: geography
-- provinces and municipalities of the demo's (public, synthetic) geography
SELECT count(DISTINCT province), count(*) FROM $geo

-- name: top_flow
-- the largest released flow between two different municipalities (a leaf lookup to try)
SELECT o_mun, d_mun FROM $released
WHERE o_mun <> d_mun
ORDER BY count DESC, o_mun, d_mun
LIMIT 1
