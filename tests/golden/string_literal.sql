-- string_literal('out.duckdb')
'out.duckdb';

-- string_literal("it's; --")
'it''s; --';
