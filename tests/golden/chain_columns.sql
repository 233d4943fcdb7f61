-- chain_columns({'o_reg': 'reg', 'o_mun': 'mun'}, '"geography"')
(SELECT "reg" AS "o_reg", "mun" AS "o_mun" FROM "geography");
