-- domain_paths(('o_reg', 'o_mun'), '"geo_o"', ['VARCHAR', 'VARCHAR'])
-- The paths of one chain of the PUBLIC domain, cast to the input's types, sorted.
-- Sorted (parent path, value) order makes the children of every node one contiguous run, so
-- dense codes per depth follow from where neighbouring rows change (and repeated rows, which
-- change nowhere, are dropped there: cheaper than a DISTINCT before the sort).
SELECT CAST("o_reg" AS VARCHAR) AS "o_reg", CAST("o_mun" AS VARCHAR) AS "o_mun"
FROM "geo_o"
ORDER BY ALL;

-- domain_paths(('d_reg', 'd_mun'), '"geo_d"', ['VARCHAR', ENUM])
-- The paths of one chain of the PUBLIC domain, cast to the input's types, sorted.
-- Sorted (parent path, value) order makes the children of every node one contiguous run, so
-- dense codes per depth follow from where neighbouring rows change (and repeated rows, which
-- change nowhere, are dropped there: cheaper than a DISTINCT before the sort).
SELECT CAST("d_reg" AS VARCHAR) AS "d_reg", CAST("d_mun" AS ENUM('x1', 'x2', 'y1')) AS "d_mun"
FROM "geo_d"
ORDER BY ALL;
