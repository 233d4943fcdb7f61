-- copy_table('"__inftda_pub".main."trips"', '"trips"')
CREATE TABLE "__inftda_pub".main."trips" AS FROM "trips";
