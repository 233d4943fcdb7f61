-- not_whole('w')
SELECT NOT (isfinite("w") AND "w" = trunc("w"));
