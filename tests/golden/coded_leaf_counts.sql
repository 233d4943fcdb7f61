-- coded_leaf_counts(NAMES, SPEC, ...): microdata
-- The one scan with the leaf columns coded first: every row joined to the code of its leaf in
-- the PUBLIC domain (a small hash table per chain), then grouped by the codes. For leaves the
-- release cannot code outside SQL (strings), an integer key costs DuckDB's hash table less than
-- the values, and the cells need no join after the scan. A leaf value the domain does not list,
-- or NULL, gets no code: those rows group under NULL, and the release scans by values instead
-- to name what is wrong (its checks read the leaf values). The count checks are the scan's by
-- values (the first statement of this file), except that __nulls flags a cell with a NULL or
-- negative count (1 or 0, one aggregate) and __neg is 0: such a cell also sends the release to
-- the scan by values, which counts the rows for its message. When the release checks the
-- input's ancestor columns, one hash of them per chain, xor-ed, is a grouping key too; the
-- release compares it with the domain's hashes of each leaf's ancestors
-- (leaf_codes.ancestor_hashes), xor-ed alike.
CREATE TEMP TABLE "__inftda_g_leaf" AS
SELECT c0."__leaf0", c1."__leaf1",
       count(*)::BIGINT AS __n
FROM "trips" AS __i
LEFT JOIN (SELECT "o_mun" AS __k, __d2 AS "__leaf0" FROM "__inftda_g_codes_0") AS c0 ON c0.__k = __i."o_mun"
LEFT JOIN (SELECT "d_mun" AS __k, __d2 AS "__leaf1" FROM "__inftda_g_codes_1") AS c1 ON c1.__k = __i."d_mun"
GROUP BY c0."__leaf0", c1."__leaf1";

-- coded_leaf_counts(NAMES, SPEC, ...): integer count column n
-- The one scan with the leaf columns coded first: every row joined to the code of its leaf in
-- the PUBLIC domain (a small hash table per chain), then grouped by the codes. For leaves the
-- release cannot code outside SQL (strings), an integer key costs DuckDB's hash table less than
-- the values, and the cells need no join after the scan. A leaf value the domain does not list,
-- or NULL, gets no code: those rows group under NULL, and the release scans by values instead
-- to name what is wrong (its checks read the leaf values). The count checks are the scan's by
-- values (the first statement of this file), except that __nulls flags a cell with a NULL or
-- negative count (1 or 0, one aggregate) and __neg is 0: such a cell also sends the release to
-- the scan by values, which counts the rows for its message. When the release checks the
-- input's ancestor columns, one hash of them per chain, xor-ed, is a grouping key too; the
-- release compares it with the domain's hashes of each leaf's ancestors
-- (leaf_codes.ancestor_hashes), xor-ed alike.
CREATE TEMP TABLE "__inftda_g_leaf" AS
SELECT c0."__leaf0", c1."__leaf1",
       sum("n") AS __n,
       (min(coalesce("n", -1)) < 0)::BIGINT AS __nulls,
       0 AS __neg,
       0 AS __frac,
       0 AS __big
FROM "trips" AS __i
LEFT JOIN (SELECT "o_mun" AS __k, __d2 AS "__leaf0" FROM "__inftda_g_codes_0") AS c0 ON c0.__k = __i."o_mun"
LEFT JOIN (SELECT "d_mun" AS __k, __d2 AS "__leaf1" FROM "__inftda_g_codes_1") AS c1 ON c1.__k = __i."d_mun"
GROUP BY c0."__leaf0", c1."__leaf1";

-- coded_leaf_counts(NAMES, SPEC, ...): fractional count column w
-- The one scan with the leaf columns coded first: every row joined to the code of its leaf in
-- the PUBLIC domain (a small hash table per chain), then grouped by the codes. For leaves the
-- release cannot code outside SQL (strings), an integer key costs DuckDB's hash table less than
-- the values, and the cells need no join after the scan. A leaf value the domain does not list,
-- or NULL, gets no code: those rows group under NULL, and the release scans by values instead
-- to name what is wrong (its checks read the leaf values). The count checks are the scan's by
-- values (the first statement of this file), except that __nulls flags a cell with a NULL or
-- negative count (1 or 0, one aggregate) and __neg is 0: such a cell also sends the release to
-- the scan by values, which counts the rows for its message. When the release checks the
-- input's ancestor columns, one hash of them per chain, xor-ed, is a grouping key too; the
-- release compares it with the domain's hashes of each leaf's ancestors
-- (leaf_codes.ancestor_hashes), xor-ed alike.
CREATE TEMP TABLE "__inftda_g_leaf" AS
SELECT c0."__leaf0", c1."__leaf1",
       sum("w"::DOUBLE) AS __n,
       (min(coalesce("w", -1)) < 0)::BIGINT AS __nulls,
       0 AS __neg,
       count(*) FILTER (NOT (isfinite("w") AND "w" = trunc("w"))) AS __frac,
       0 AS __big
FROM "trips" AS __i
LEFT JOIN (SELECT "o_mun" AS __k, __d2 AS "__leaf0" FROM "__inftda_g_codes_0") AS c0 ON c0.__k = __i."o_mun"
LEFT JOIN (SELECT "d_mun" AS __k, __d2 AS "__leaf1" FROM "__inftda_g_codes_1") AS c1 ON c1.__k = __i."d_mun"
GROUP BY c0."__leaf0", c1."__leaf1";

-- coded_leaf_counts(NAMES, SPEC, ...): a 128-bit count column n (wide)
-- The one scan with the leaf columns coded first: every row joined to the code of its leaf in
-- the PUBLIC domain (a small hash table per chain), then grouped by the codes. For leaves the
-- release cannot code outside SQL (strings), an integer key costs DuckDB's hash table less than
-- the values, and the cells need no join after the scan. A leaf value the domain does not list,
-- or NULL, gets no code: those rows group under NULL, and the release scans by values instead
-- to name what is wrong (its checks read the leaf values). The count checks are the scan's by
-- values (the first statement of this file), except that __nulls flags a cell with a NULL or
-- negative count (1 or 0, one aggregate) and __neg is 0: such a cell also sends the release to
-- the scan by values, which counts the rows for its message. When the release checks the
-- input's ancestor columns, one hash of them per chain, xor-ed, is a grouping key too; the
-- release compares it with the domain's hashes of each leaf's ancestors
-- (leaf_codes.ancestor_hashes), xor-ed alike.
CREATE TEMP TABLE "__inftda_g_leaf" AS
SELECT c0."__leaf0", c1."__leaf1",
       sum(TRY_CAST("n" AS BIGINT)) AS __n,
       (min(coalesce("n", -1)) < 0)::BIGINT AS __nulls,
       0 AS __neg,
       0 AS __frac,
       count(*) FILTER ("n" IS NOT NULL AND TRY_CAST("n" AS BIGINT) IS NULL) AS __big
FROM "trips" AS __i
LEFT JOIN (SELECT "o_mun" AS __k, __d2 AS "__leaf0" FROM "__inftda_g_codes_0") AS c0 ON c0.__k = __i."o_mun"
LEFT JOIN (SELECT "d_mun" AS __k, __d2 AS "__leaf1" FROM "__inftda_g_codes_1") AS c1 ON c1.__k = __i."d_mun"
GROUP BY c0."__leaf0", c1."__leaf1";

-- coded_leaf_counts(NAMES, SPEC, ...): a cached code table
-- The one scan with the leaf columns coded first: every row joined to the code of its leaf in
-- the PUBLIC domain (a small hash table per chain), then grouped by the codes. For leaves the
-- release cannot code outside SQL (strings), an integer key costs DuckDB's hash table less than
-- the values, and the cells need no join after the scan. A leaf value the domain does not list,
-- or NULL, gets no code: those rows group under NULL, and the release scans by values instead
-- to name what is wrong (its checks read the leaf values). The count checks are the scan's by
-- values (the first statement of this file), except that __nulls flags a cell with a NULL or
-- negative count (1 or 0, one aggregate) and __neg is 0: such a cell also sends the release to
-- the scan by values, which counts the rows for its message. When the release checks the
-- input's ancestor columns, one hash of them per chain, xor-ed, is a grouping key too; the
-- release compares it with the domain's hashes of each leaf's ancestors
-- (leaf_codes.ancestor_hashes), xor-ed alike.
CREATE TEMP TABLE "__inftda_g_leaf" AS
SELECT c0."__leaf0", c1."__leaf1",
       count(*)::BIGINT AS __n
FROM "trips" AS __i
LEFT JOIN (SELECT "o_mun" AS __k, __d2 AS "__leaf0" FROM "cached_o") AS c0 ON c0.__k = __i."o_mun"
LEFT JOIN (SELECT "d_mun" AS __k, __d2 AS "__leaf1" FROM "cached_d") AS c1 ON c1.__k = __i."d_mun"
GROUP BY c0."__leaf0", c1."__leaf1";

-- coded_leaf_counts(NAMES, SPEC, ...): ancestors checked
-- The one scan with the leaf columns coded first: every row joined to the code of its leaf in
-- the PUBLIC domain (a small hash table per chain), then grouped by the codes. For leaves the
-- release cannot code outside SQL (strings), an integer key costs DuckDB's hash table less than
-- the values, and the cells need no join after the scan. A leaf value the domain does not list,
-- or NULL, gets no code: those rows group under NULL, and the release scans by values instead
-- to name what is wrong (its checks read the leaf values). The count checks are the scan's by
-- values (the first statement of this file), except that __nulls flags a cell with a NULL or
-- negative count (1 or 0, one aggregate) and __neg is 0: such a cell also sends the release to
-- the scan by values, which counts the rows for its message. When the release checks the
-- input's ancestor columns, one hash of them per chain, xor-ed, is a grouping key too; the
-- release compares it with the domain's hashes of each leaf's ancestors
-- (leaf_codes.ancestor_hashes), xor-ed alike.
CREATE TEMP TABLE "__inftda_g_leaf" AS
SELECT c0."__leaf0", c1."__leaf1", xor(hash("o_reg"), hash("d_reg")) AS __h,
       count(*)::BIGINT AS __n
FROM "trips" AS __i
LEFT JOIN (SELECT "o_mun" AS __k, __d2 AS "__leaf0" FROM "__inftda_g_codes_0") AS c0 ON c0.__k = __i."o_mun"
LEFT JOIN (SELECT "d_mun" AS __k, __d2 AS "__leaf1" FROM "__inftda_g_codes_1") AS c1 ON c1.__k = __i."d_mun"
GROUP BY c0."__leaf0", c1."__leaf1", xor(hash("o_reg"), hash("d_reg"));

-- coded_leaf_counts(NAMES, SPEC, ...): an ENUM ancestor checked
-- The one scan with the leaf columns coded first: every row joined to the code of its leaf in
-- the PUBLIC domain (a small hash table per chain), then grouped by the codes. For leaves the
-- release cannot code outside SQL (strings), an integer key costs DuckDB's hash table less than
-- the values, and the cells need no join after the scan. A leaf value the domain does not list,
-- or NULL, gets no code: those rows group under NULL, and the release scans by values instead
-- to name what is wrong (its checks read the leaf values). The count checks are the scan's by
-- values (the first statement of this file), except that __nulls flags a cell with a NULL or
-- negative count (1 or 0, one aggregate) and __neg is 0: such a cell also sends the release to
-- the scan by values, which counts the rows for its message. When the release checks the
-- input's ancestor columns, one hash of them per chain, xor-ed, is a grouping key too; the
-- release compares it with the domain's hashes of each leaf's ancestors
-- (leaf_codes.ancestor_hashes), xor-ed alike.
CREATE TEMP TABLE "__inftda_g_leaf" AS
SELECT c0."__leaf0", c1."__leaf1", xor(hash(CAST("o_reg" AS VARCHAR)), hash("d_reg")) AS __h,
       count(*)::BIGINT AS __n
FROM "trips" AS __i
LEFT JOIN (SELECT "o_mun" AS __k, __d2 AS "__leaf0" FROM "__inftda_g_codes_0") AS c0 ON c0.__k = __i."o_mun"
LEFT JOIN (SELECT "d_mun" AS __k, __d2 AS "__leaf1" FROM "__inftda_g_codes_1") AS c1 ON c1.__k = __i."d_mun"
GROUP BY c0."__leaf0", c1."__leaf1", xor(hash(CAST("o_reg" AS VARCHAR)), hash("d_reg"));
