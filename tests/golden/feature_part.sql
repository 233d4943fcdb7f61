-- feature_part(['o_mun', 'd_mun'], {'o_mun': 'VARCHAR'}, '"geo_pairs"')
-- the feature columns of one domain table (leaf columns cast to the input's types)
SELECT CAST("o_mun" AS VARCHAR) AS "o_mun", "d_mun" FROM "geo_pairs";
