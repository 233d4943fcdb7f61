"""Name resolution on Spark: tables of the catalog, DataFrames and declared values as sources.

A :class:`SparkSource` is a DataFrame with the spelling of its columns (Spark resolves column
names case-insensitively by default, as DuckDB does) and, for a table of the catalog, its full
name (``catalog.database.table``): the key a budget is stored under and the ledger charges.
The column checks here (scalar types, a numeric count, joinable domain types) say the same as
the DuckDB engine's, in Spark's type names.

:func:`base_tables` says what a DataFrame reads, from Spark's analyzed plan (views, temporary
and global views, subqueries and CTEs unfolded): the catalog tables and files at its leaves, and
the identity of the data read from outside them (rows in memory, an RDD, a JDBC table: see
:mod:`.leaves`). The domain-vs-input check (:func:`check_domain_reads`) and the budgets look at
these, never at the name a source was given.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from py4j.protocol import Py4JError  # type: ignore[import-untyped]
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from ..._errors import DomainError, InftdaError, InputDataError, SpecError
from ..._frames import mapping_table
from ...core.names import split_name
from ..checks import check_domain_not_input, check_domain_sources_known
from .leaves import identify

__all__ = [
    "BaseTables",
    "SparkSource",
    "base_tables",
    "check_domain_reads",
    "check_domain_types",
    "check_scalar_type",
    "count_column",
    "full_name",
    "quote",
    "resolve_source",
    "sql_name",
    "type_family",
]


def quote(name: str) -> str:
    """A column or name part as a Spark SQL identifier (backticks, doubled inside)."""
    return "`" + name.replace("`", "``") + "`"


def sql_name(name: str) -> str:
    """A (possibly qualified) table name as Spark SQL text, every part quoted."""
    return ".".join(quote(p) for p in split_name(name))


def full_name(spark: SparkSession, name: str) -> str | None:
    """``catalog.database.table`` of a table or view of the catalog, None if it names none."""
    try:
        if not spark.catalog.tableExists(name):
            return None
        table = spark.catalog.getTable(name)
    except AnalysisException:
        return None
    parts = [table.catalog or "", *(table.namespace or []), table.name]
    return ".".join(p for p in parts if p)


#: leaves of an analyzed plan that read no stored data (a CTE's definition is walked where it
#: is defined)
_DATA_FREE = frozenset({"OneRowRelation", "Range", "CTERelationRef"})


@dataclass(frozen=True)
class BaseTables:
    """What a DataFrame reads, from the leaves of its analyzed plan.

    ``tables`` are the catalog tables read (``catalog.database.table`` as Spark's catalog spells
    them, the keys budgets are stored under), ``paths`` the absolute paths (a local path, or the
    URI of a remote one) of files and folders read by path rather than through a table,
    ``files`` every data file read (a table's too), ``views`` the views passed through, and
    ``outside`` the plan leaves that read rows from neither (a local or in-memory DataFrame, an
    RDD, a JDBC relation), by node name.

    What those leaves read (:mod:`.leaves`): ``memory`` the identities of that data, which
    name no value of it ("the in-memory rows of LocalRelation #12", "the RDD #3
    (ParallelCollectionRDD) of Spark application local-1", "the JDBC table trips of
    jdbc:derby:memory:db", credentials removed), ``kinds`` the kind of every such leaf (its
    node name, or the JDBC database it reads), and ``unidentified`` the kinds of those whose
    data has no identity (a JDBC query, a relation of an unknown kind).
    """

    tables: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    views: tuple[str, ...] = ()
    outside: tuple[str, ...] = ()
    memory: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    unidentified: tuple[str, ...] = ()

    @property
    def keys(self) -> tuple[str, ...]:
        """What a release of this source is charged to: its tables, then the paths it reads."""
        return self.tables + self.paths

    @property
    def reads(self) -> tuple[str, ...]:
        """Everything that identifies the data read: tables, paths, data files (a table and a
        path read the same data when they share a file), the identities of data read from
        outside them, then the views passed through (a view of inline rows, re-analysed at
        each use, reads no other identity)."""
        return self.tables + self.paths + self.files + self.memory + self._view_reads

    @property
    def _view_reads(self) -> tuple[str, ...]:
        return tuple(f"the view {v}" for v in self.views)


def _seq(seq: Any) -> Iterator[Any]:
    """The elements of a Scala ``Seq`` held through py4j."""
    for i in range(seq.size()):
        yield seq.apply(i)


def _option(opt: Any) -> Any:
    return opt.get() if opt.isDefined() else None


def _local(uri: str) -> str:
    """A local ``file:`` URI as an absolute path (symbolic links followed, as the DuckDB engine
    names files); any other URI as it is."""
    parts = urlsplit(uri)
    if parts.scheme in ("", "file"):
        return os.path.realpath(unquote(parts.path))
    return uri


def _identifier(ident: Any) -> str:
    """``catalog.database.table`` of a v1 ``TableIdentifier`` (a temporary view: its name)."""
    database = _option(ident.database())
    if database is None:
        return str(ident.table())
    catalog = _option(ident.catalog()) or "spark_catalog"
    return f"{catalog}.{database}.{ident.table()}"


def _v2_identifier(node: Any) -> str | None:
    ident, catalog = _option(node.identifier()), _option(node.catalog())
    if ident is None or catalog is None:
        return None
    return ".".join([str(catalog.name()), *(str(p) for p in ident.namespace()), str(ident.name())])


def _file_index(obj: Any, method: str) -> Any:
    """``obj.method()`` when ``obj`` (a JVM object) has that method, else None."""
    try:
        return getattr(obj, method)()
    except Py4JError:
        return None


def base_tables(df: DataFrame) -> BaseTables:
    """The catalog tables, files, and views ``df`` reads (see :class:`BaseTables`): the leaves
    of its analyzed plan (``LogicalRelation``, ``HiveTableRelation``, ``DataSourceV2Relation``)
    and the views on the way, every subquery included. Reads no data: the plan is analysed when
    the DataFrame is made, and a file index lists its files once. Leaves that read neither
    tables nor files are identified by :func:`.leaves.identify`."""
    try:
        plan = df._jdf.queryExecution().analyzed()
    except AttributeError:  # pragma: no cover - Spark Connect keeps the plan on the server
        raise SpecError(
            "the Spark engine reads the plan of its inputs to find the tables they read, which a "
            "Spark Connect session does not expose; use a classic SparkSession"
        ) from None
    tables: dict[str, str] = {}
    paths: dict[str, None] = {}
    files: dict[str, None] = {}
    views: dict[str, None] = {}
    outside: set[str] = set()
    memory: dict[str, None] = {}
    kinds: dict[str, None] = {}
    unidentified: dict[str, None] = {}
    jvm = df.sparkSession._jvm
    stack = [plan]
    while stack:
        node = stack.pop()
        kind = str(node.nodeName())
        children = [*_seq(node.children()), *_seq(node.subqueries())]
        stack.extend(children)
        if kind == "View":
            ident = node.desc().identifier()
            if node.isTempView():  # a temporary (or global temporary) view: as it is named
                name = ".".join([*filter(None, [_option(ident.database())]), str(ident.table())])
            else:
                name = _identifier(ident)
            views.setdefault(name, None)
        if children or kind in _DATA_FREE:
            continue
        key: str | None = None
        index: Any = None
        if kind == "LogicalRelation":
            table = _option(node.catalogTable())
            key = None if table is None else _identifier(table.identifier())
            index = _file_index(node.relation(), "location")  # a HadoopFsRelation
        elif kind == "HiveTableRelation":
            key = _identifier(node.tableMeta().identifier())
        elif kind == "DataSourceV2Relation":
            key = _v2_identifier(node)
            index = _file_index(node.table(), "fileIndex")  # a file source, v2 API
        if key is not None:
            tables.setdefault(key.lower(), key)
        if index is not None:
            if key is None:
                for root in _seq(index.rootPaths()):
                    paths.setdefault(_local(str(root.toString())), None)
            for f in index.inputFiles():  # a Java array
                files.setdefault(_local(str(f)), None)
        elif key is None:
            outside.add(kind)
            leaf = identify(jvm, node, kind)
            files.update(dict.fromkeys(_local(f) for f in leaf.files))
            kinds.setdefault(leaf.kind, None)
            if leaf.identities is None:
                unidentified.setdefault(leaf.kind, None)
            else:
                memory.update(dict.fromkeys(leaf.identities))
    return BaseTables(
        tuple(sorted(tables.values(), key=str.lower)),
        tuple(sorted(paths)),
        tuple(sorted(files)),
        tuple(sorted(views)),
        tuple(sorted(outside)),
        tuple(sorted(memory)),
        tuple(sorted(kinds)),
        tuple(sorted(unidentified)),
    )


def check_domain_reads(inp: BaseTables, domains: Sequence[tuple[str, str, BaseTables]]) -> None:
    """Refuse a domain (``domains``: role, description, what it reads) that reads what the
    input reads: a table, a file, the same rows in memory, RDD, JDBC table or view
    (:func:`~inftda_sql.engines.checks.check_domain_not_input`), or a source of a kind the
    input reads too that has no identity on one side
    (:func:`~inftda_sql.engines.checks.check_domain_sources_known`). From the plans alone,
    before any data is read."""
    check_domain_not_input(inp.reads, [(role, desc, reads.reads) for role, desc, reads in domains])
    check_domain_sources_known(
        (inp.kinds, inp.unidentified),
        [(role, desc, reads.kinds, reads.unidentified) for role, desc, reads in domains],
    )


@dataclass(frozen=True)
class SparkSource:
    """A readable input or domain: its DataFrame, how messages name it, its catalog key."""

    df: DataFrame
    description: str
    key: str | None  # catalog.database.table of a catalog table, None for a DataFrame

    @property
    def names(self) -> dict[str, str]:
        """Lower-case column name -> stored spelling."""
        return {c.lower(): c for c in self.df.columns}

    @property
    def types(self) -> dict[str, T.DataType]:
        """Lower-case column name -> Spark type."""
        return {f.name.lower(): f.dataType for f in self.df.schema.fields}

    def column(self, name: str, role: str, error: type[Exception] = InputDataError) -> str:
        """The stored spelling of column ``name``, or a clear error listing what exists."""
        try:
            return self.names[name.lower()]
        except KeyError:
            available = ", ".join(self.df.columns)
            raise error(
                f"column {name!r} ({role}) not in {self.description}; available: {available}"
            ) from None


def resolve_source(
    spark: SparkSession,
    obj: object,
    *,
    role: str,
    error: type[InftdaError] = InputDataError,
    param: str | None = None,
) -> SparkSource:
    """A table or view name, a Spark DataFrame or a column mapping as a :class:`SparkSource`."""
    if isinstance(obj, str):
        key = full_name(spark, obj)
        if key is None:
            tables = [t.name for t in spark.catalog.listTables()][:20]
            hint = ", ".join(tables) if tables else "(none)"
            raise error(
                f"{role} {obj!r} is not a table or view of this catalog; existing: {hint}",
                param=param,
            )
        return SparkSource(spark.table(obj), f"table {obj!r}", key)
    if isinstance(obj, DataFrame):
        return SparkSource(obj, f"the {role} DataFrame", None)
    if isinstance(obj, Mapping):
        return SparkSource(
            spark.createDataFrame(mapping_table(obj, role, error, param)),
            f"the declared {role}",
            None,
        )
    raise error(
        f"{role} must be a table or view name, a Spark DataFrame or a mapping "
        f"{{column: [values]}}; got {type(obj).__name__}",
        param=param,
    )


def type_family(dtype: T.DataType) -> str:
    """Coarse type class used to check that input and domain columns can be joined."""
    if isinstance(dtype, T.IntegralType):
        return "integer"
    if isinstance(dtype, T.DecimalType):
        return "integer" if dtype.scale == 0 else "fractional"
    if isinstance(dtype, T.FractionalType):
        return "fractional"
    if isinstance(dtype, (T.StringType, T.VarcharType, T.CharType)):
        return "string"
    return dtype.simpleString()


def check_scalar_type(src: SparkSource, column: str, role: str, error: type[InftdaError]) -> None:
    """Refuse a column of a nested type (ARRAY, STRUCT, MAP): a hierarchy level or a privacy
    unit needs one plain value per row."""
    dtype = src.types[column.lower()]
    if isinstance(dtype, (T.ArrayType, T.StructType, T.MapType)):
        stored = src.names[column.lower()]
        raise error(
            f"{role} {stored!r} of {src.description} has type {dtype.simpleString()}, a nested "
            "type; it needs one plain value (text, number, date) per row: pick a field or "
            f"explode it first (e.g. df.withColumn({stored!r}, df[{stored!r}][0]))"
        )


def count_column(src: SparkSource, name: object, role: str = "count column") -> tuple[str, bool]:
    """The stored name of a count column and whether it holds integers."""
    from ..._errors import SpecError

    if not isinstance(name, str) or not name:
        raise SpecError(f"{role} must be a column name, got {name!r}")
    stored = src.column(name, role)
    dtype = src.types[name.lower()]
    family = type_family(dtype)
    if family not in ("integer", "fractional"):
        raise InputDataError(
            f"{role} {stored!r} has type {dtype.simpleString()}, not a number (in "
            f"{src.description}); pass the column holding the number of records per row, or "
            f"cast it first: df.withColumn({stored!r}, df[{stored!r}].cast('bigint'))"
        )
    return stored, family == "integer"


def check_domain_types(inp: SparkSource, dom: SparkSource, chain: Sequence[str], role: str) -> None:
    """Input and domain columns of a chain must be joinable (same type family)."""
    for col in chain:
        it, dt = inp.types[col.lower()], dom.types[col.lower()]
        if type_family(it) != type_family(dt):
            raise DomainError(
                f"column {col!r} is {it.simpleString()} in the input but {dt.simpleString()} in "
                f"the {role}; cast one of them (e.g. df.withColumn({col!r}, "
                f"df[{col!r}].cast('string'))) so both have the same type"
            )
