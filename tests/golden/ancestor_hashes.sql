-- ancestor_hashes(NAMES, 0, ORIGIN, ['o_reg'], None)
-- The PUBLIC domain's side of the ancestor check of a scan grouped by leaf codes: one hash of a
-- chain's ancestor columns per leaf, in code order.
SELECT hash("o_reg") AS h
FROM "__inftda_g_codes_0"
ORDER BY __d2;

-- ancestor_hashes(NAMES, 1, DESTINATION, ['d_reg'], '"cached_d"')
-- The PUBLIC domain's side of the ancestor check of a scan grouped by leaf codes: one hash of a
-- chain's ancestor columns per leaf, in code order.
SELECT hash("d_reg") AS h
FROM "cached_d"
ORDER BY __d2;
