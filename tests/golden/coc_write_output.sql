-- coc_write_output('"out"', released, codes, CHAIN)
-- the released leaf histograms: the hierarchy columns decoded from the leaf codes
CREATE TABLE "out" AS
SELECT "state", "county", r.size::BIGINT AS size, r.groups::BIGINT AS groups
FROM "__inftda_g_released" AS r
JOIN "__inftda_g_codes_0" AS c ON c.__d2 = r.leaf
ORDER BY "state", "county", size;
