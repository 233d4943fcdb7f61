-- coc_public_groups(('state', 'county'), '"hh"', 'n', codes, 'VARCHAR')
-- the PUBLIC groups table per leaf code: rows listing the leaf, its groups, NULLs and fractions
SELECT c.__d2 AS leaf,
       count(*) AS listed,
       min(g."n") AS groups,
       max(g."n") AS groups_hi,
       count(*) FILTER (g."n" IS NULL) AS nulls,
       coalesce(bool_or(g."n" <> trunc(g."n")), false) AS fractional
FROM "hh" AS g
JOIN (SELECT DISTINCT "county", __d2 FROM "__inftda_g_codes_0") AS c ON CAST(g."county" AS VARCHAR) = c."county"
GROUP BY 1
ORDER BY 1;
