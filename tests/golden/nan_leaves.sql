-- nan_leaves(NAMES, ['w'])
-- per floating-point leaf column, its leaf cells holding NaN (NaN is no category)
SELECT count(*) FILTER (isnan("w")) FROM "__inftda_g_leaf";
