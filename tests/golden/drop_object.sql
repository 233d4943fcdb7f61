-- drop_object('table', '"xt"')
DROP TABLE "xt";

-- drop_object('view', '"xv"')
DROP VIEW "xv";
