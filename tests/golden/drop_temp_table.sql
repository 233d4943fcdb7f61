-- drop_temp_table('x_keys')
DROP TABLE IF EXISTS "x_keys";
