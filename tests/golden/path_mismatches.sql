-- path_mismatches('"cells"', 2)
-- The leaf cells (registered from Arrow: row i, path hash h, the domain's hash e0, e1 ... of
-- each checked chain's ancestors for the cell's leaf) whose path hash is not the domain's: the
-- hash of the chains' hashes, as leaf_counts takes it. None when the input agrees.
SELECT i
FROM "cells"
WHERE h <> hash(e0, e1);

-- path_mismatches('"cells"', 1)
-- The leaf cells (registered from Arrow: row i, path hash h, the domain's hash e0, e1 ... of
-- each checked chain's ancestors for the cell's leaf) whose path hash is not the domain's: the
-- hash of the chains' hashes, as leaf_counts takes it. None when the input agrees.
SELECT i
FROM "cells"
WHERE h <> e0;
