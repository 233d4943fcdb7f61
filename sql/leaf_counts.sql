-- The one scan of the private input, grouped by the leaf column of every chain (in a nested
-- domain the leaf determines its ancestors). When the release checks the input's ancestor
-- columns against the domain, one hash of them per row is a grouping key too: a leaf cell
-- whose rows all carry the same ancestors stays one group, and the next step compares its hash
-- with the domain's; a cell whose rows disagree splits into several groups, one of which, at
-- least, differs from the domain's. A key costs DuckDB's hash table less than aggregates of the
-- hash would (min and max per cell). With a count column, the count checks keep how many rows
-- are wrong per cell (NULL, negative, not whole, beyond int64), never a value: their messages
-- name the number of rows, not a private count; records counted one by one have none.
CREATE TEMP TABLE $leaf AS
SELECT $leaf_cols$path,
       $count_sum AS __n$count_checks
FROM $input
GROUP BY $leaf_cols$path_key

-- name: coded
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
CREATE TEMP TABLE $leaf AS
SELECT $code_cols,
       $count_sum AS __n$count_checks
FROM $input AS __i
$joins
GROUP BY $code_keys
