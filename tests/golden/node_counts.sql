-- node_counts(('o_reg', 'o_mun'), '"geo_o"')
-- the number of nodes of every depth of a chain's domain (plan())
SELECT count(DISTINCT "o_reg"), count(DISTINCT ("o_reg", "o_mun")) FROM "geo_o";

-- node_counts(('d_mun',), '"geo_d"')
-- the number of nodes of every depth of a chain's domain (plan())
SELECT count(DISTINCT "d_mun") FROM "geo_d";
