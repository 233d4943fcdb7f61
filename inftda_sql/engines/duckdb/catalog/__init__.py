"""Resolve user-named tables, views and relations against the DuckDB catalog: ONE step.

Every name the package is given (a release's input, domains and output, ``set_budget()``'s table,
``publish()``'s public tables, ``evaluate()``'s and ``plan()``'s sources) goes through here:

* :func:`lookup` finds what a name (``table``, ``schema.table`` or ``database.schema.table``, any
  case, double quotes for odd names) denotes, the way DuckDB binds it: an unqualified name is
  searched in the temporary objects first, then in the current schema, then the search path.
  It becomes a :class:`TableRef` (database, schema, name), and the SQL that reads it names it
  fully, so what is read is what was resolved.
* :func:`base_tables` asks DuckDB's binder which base tables a source reads: the logical plan of
  ``SELECT * FROM source`` as bound, before the optimizer prunes anything, lists every table
  scanned, through views (bound in their own schema, as DuckDB does), relations, subqueries and
  CTEs. A source that reads anything else (a file, an Arrow table, a data frame, a catalog
  function) reports it in ``outside``, so budgets can refuse what they cannot charge.
  (``duckdb.get_table_names`` is not used: it reports the names as spelled inside view bodies,
  which DuckDB resolves in the view's schema, so ``trips`` there may be ``s.trips``.)
* :func:`resolve_target` places an output: the database and schema ``CREATE TABLE`` would use,
  which must exist and be writable, and the object already there, if any.
* :func:`resolve_source` turns a name, a file, a relation, a data frame (pandas, polars, Arrow)
  or a ``{column: [values]}`` mapping into a :class:`Source`: SQL to read, columns, and its
  :class:`Resolved` identity. Relations, data frames and mappings are registered as a TEMPORARY
  view of the connection (never a view of the database), dropped when the caller is done.

**Files are base tables too.** A parquet or CSV file named by its path (:func:`file_spelling`:
a ``pathlib.Path``, or a string with a path separator, a glob character or a ``.parquet``,
``.csv`` or ``.tsv`` ending, optionally ``.gz``/``.zst``) is resolved by :func:`resolve_files`
to the absolute paths of the files it names (symbolic links followed; a glob to the files it
matches when the release starts, sorted), and read by exactly that list. Each resolved path is
a budget key, like ``schema.table`` for a table: a release of a glob is charged to every file it
read, as a join is charged to every table. (A view or relation that reads a file is still
"outside" the catalog in DuckDB's plan, which does not say which file it reads: its files are
read from its SQL instead, :mod:`.view_files`.) To name a table whose
name ends in ``.csv`` (schema ``s``, table ``csv``), quote it: ``s."csv"``.

The modules: :mod:`.names` (tables, views and output places), :mod:`.files` (files named by
their path), :mod:`.sources` (what a release reads, and column types) and :mod:`.memo` (a
release's stages ask the catalog through one read of it, read again after any change: the
same answers in fewer round trips). Import the names from this package, which re-exports them.
"""

from __future__ import annotations

from ....core.names import FILE_FORMATS, file_spelling, file_stem, is_file_key, split_name
from ...records import LIBRARY_PREFIX
from .files import FileInput, resolve_files
from .memo import Memo, active, remember
from .names import (
    Resolved,
    TableRef,
    Target,
    base_tables,
    check_ledger_writable,
    existing,
    home_database,
    lookup,
    object_kind,
    reads_view,
    resolve,
    resolve_target,
)
from .sources import (
    Source,
    check_domain_types,
    check_domains_not_input,
    check_scalar_type,
    count_column,
    drop_temp,
    is_wide_number,
    join_type,
    resolve_source,
    type_family,
)
from .view_files import FilesRead, files_read, reads_files

__all__ = [
    "FILE_FORMATS",
    "LIBRARY_PREFIX",
    "FileInput",
    "FilesRead",
    "Memo",
    "Resolved",
    "Source",
    "TableRef",
    "Target",
    "active",
    "base_tables",
    "check_domain_types",
    "check_domains_not_input",
    "check_ledger_writable",
    "check_scalar_type",
    "count_column",
    "drop_temp",
    "existing",
    "file_spelling",
    "file_stem",
    "files_read",
    "home_database",
    "is_file_key",
    "is_wide_number",
    "join_type",
    "lookup",
    "object_kind",
    "reads_files",
    "reads_view",
    "remember",
    "resolve",
    "resolve_files",
    "resolve_source",
    "resolve_target",
    "split_name",
    "type_family",
]
