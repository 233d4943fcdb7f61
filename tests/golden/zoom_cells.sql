-- zoom_cells('WITH cells AS (...)')
WITH cells AS (SELECT 1 AS level, 2 AS t, 3 AS r)
SELECT level, t, r FROM cells WHERE level > 0 ORDER BY level;
