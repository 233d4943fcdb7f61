-- read_files('parquet', ['/data/od 1.parquet', "/data/it's.parquet"])
read_parquet(['/data/od 1.parquet', '/data/it''s.parquet']);

-- read_files('csv', ['/data/geo.csv'])
read_csv(['/data/geo.csv']);
