-- drop_temp_view('x_input')
DROP VIEW IF EXISTS "x_input";
