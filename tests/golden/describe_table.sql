-- describe_table('geo_d')
DESCRIBE "geo_d";
