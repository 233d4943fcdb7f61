-- write_output(SPEC, '"out"', NAMES.released, ordered=True)
-- The released leaf table: the hierarchy columns decoded from the public domain's codes and the
-- positive counts, in the order of the leaf codes (chain after chain), which is the order of
-- the hierarchy columns (the domain is coded in that order). The rows come in that order, and
-- DuckDB keeps it (preserve_insertion_order, its default); without that setting the order is
-- spelled out.
CREATE TABLE "out" AS
SELECT "o_reg", "o_mun", "d_reg", "d_mun", "count"::BIGINT AS "count"
FROM "__inftda_g_released";

-- write_output(SPEC, '"out2"', NAMES.released, ordered=False)
-- The released leaf table: the hierarchy columns decoded from the public domain's codes and the
-- positive counts, in the order of the leaf codes (chain after chain), which is the order of
-- the hierarchy columns (the domain is coded in that order). The rows come in that order, and
-- DuckDB keeps it (preserve_insertion_order, its default); without that setting the order is
-- spelled out.
CREATE TABLE "out2" AS
SELECT "o_reg", "o_mun", "d_reg", "d_mun", "count"::BIGINT AS "count"
FROM "__inftda_g_released"
ORDER BY "o_reg", "o_mun", "d_reg", "d_mun";
