-- distinct_paths(('d_reg', 'd_mun'), '"trips"')
(SELECT DISTINCT "d_reg", "d_mun" FROM "trips");
