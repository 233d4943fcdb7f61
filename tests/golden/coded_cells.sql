-- coded_cells(NAMES, SPEC)
-- The leaf cells of a scan that grouped by the leaf codes (leaf_counts.coded), fetched once.
SELECT l."__leaf0", l."__leaf1", l.__n::BIGINT AS n
FROM "__inftda_g_leaf" AS l;

-- coded_cells(NAMES, SPEC, check=True)
-- The leaf cells of a scan that grouped by the leaf codes (leaf_counts.coded), fetched once.
SELECT l."__leaf0", l."__leaf1", l.__h, l.__n::BIGINT AS n
FROM "__inftda_g_leaf" AS l;
