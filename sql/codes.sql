-- Dense integer codes for one chain of the PUBLIC domain.
-- __d<k> numbers the distinct paths of depth k in (parent path, value) order, so the children
-- of every node form one contiguous code range: the engine expands a parent into its children
-- from the domain alone, zero-count children included, without looking at the private data.
CREATE TEMP TABLE $codes AS
SELECT $cols, $ranks
FROM (SELECT DISTINCT $cols FROM $domain) AS d
