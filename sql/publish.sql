-- publish(): copy one release into a new database file, attached under an alias.

-- name: attach
ATTACH $path AS $alias$options

-- name: copy_table
CREATE TABLE $target AS FROM $source

-- name: use
USE $database

-- name: detach
DETACH $alias
