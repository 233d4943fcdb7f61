-- domain_path_hashes(<codes 0>, ['o_reg'], 2)
-- Per leaf of a chain's PUBLIC code table, its code and the hash of its ancestors: the hash
-- leaf_counts takes of an input row whose ancestors are those the domain gives the leaf.
SELECT __d2 AS code, hash("o_reg") AS h
FROM "__inftda_g_codes_0";
