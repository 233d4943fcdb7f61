-- feature_read_back(FEATURES, '"fback"')
-- The released leaf table as written (release(return_as=...) of a feature release).
SELECT * FROM "fback" ORDER BY "o_mun", "d_mun", "t";
