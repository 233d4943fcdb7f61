-- explain('"geo_d"')
-- the plans of reading a source; with explain_output = 'all' the first is the logical plan as
-- bound, before the optimizer removes anything (every table scanned is still there)
EXPLAIN (FORMAT json) SELECT * FROM "geo_d";
