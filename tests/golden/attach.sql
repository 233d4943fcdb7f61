-- attach('pub.duckdb', '__inftda_pub', None)
ATTACH 'pub.duckdb' AS "__inftda_pub";

-- attach("it's.duckdb", '__inftda_pub', 'v1.0.0')
ATTACH 'it''s.duckdb' AS "__inftda_pub" (STORAGE_VERSION 'v1.0.0');
