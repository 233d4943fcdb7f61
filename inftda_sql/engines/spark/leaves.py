"""What a leaf of an analyzed plan reads when it is neither a catalog table nor files.

Rows given in memory (``spark.createDataFrame`` of pandas, Arrow, or a list), an RDD, a JDBC
relation or a data source without a catalog name read no table the catalog knows, yet a domain
built from the input's own DataFrame reads the same data. :func:`identify` gives each such leaf
the identity of the data it reads, from the plan alone (no row is read, no job runs):

* ``LocalRelation``: its rows, the JVM object every DataFrame derived from it shares (a
  select, a filter, a temporary view, SQL over that view, an alias, a self-join's copy), by
  ``System.identityHashCode``; an empty one reads nothing.
* ``LogicalRDD`` (and any leaf holding an RDD): the RDDs its lineage starts from, by id, in
  their application. ``spark.createDataFrame(rdd)`` maps the RDD afresh each call, so the
  start of the lineage, not the leaf's own RDD, is what two DataFrames over one RDD share. A
  lineage that starts from a scan of files (``spark.createDataFrame(df.rdd)`` of a DataFrame
  over a table or files) reads those files: they are compared as the catalog's are.
* a JDBC relation: its table and database URL, with the user, password and every other
  credential removed; a query (or a subquery given as the table) cannot be identified.
* a data source without a catalog name (a Python data source): its name and options, the
  credentials removed.

Anything else is read without an identity, named by its kind: whether a domain reads what the
input reads then cannot be told (see
:func:`~inftda_sql.engines.checks.check_domain_sources_known`). A DataFrame turned into an RDD
and back (``spark.createDataFrame(df.rdd)``) from rows in memory, or checkpointed, is a copy,
as a table saved from the input would be: it has an identity of its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from py4j.protocol import Py4JError  # type: ignore[import-untyped]

__all__ = ["Leaf", "identify", "redacted_url"]

#: option and URL parameter names that hold credentials: never part of an identity or a message
_CREDENTIAL = re.compile(r"pass|pwd|secret|token|credential|auth|key|user|uid|cert|login", re.I)

#: the most RDDs a lineage walk visits before it gives up (the leaf is then not identified)
_LINEAGE_LIMIT = 10_000


@dataclass(frozen=True)
class Leaf:
    """A plan leaf outside the catalog's tables and files: its ``kind`` (the node's name, or
    the database a JDBC relation reads), the ``identities`` of the data it reads (empty: it
    reads no rows, or only ``files``), or None when they cannot be told, and the data files
    it reads (URIs: an RDD's lineage may start from a scan of files)."""

    kind: str
    identities: tuple[str, ...] | None
    files: tuple[str, ...] = ()


def _option(opt: Any) -> Any:
    return opt.get() if opt.isDefined() else None


def redacted_url(url: str) -> str:
    """A JDBC URL without its credentials: the ``user:password@`` part and every parameter
    whose name says it holds one (``password``, ``user``, ``token``, ``sslkey``, ...).

    Example:
        >>> redacted_url("jdbc:postgresql://bob:s3cret@db.example:5432/trips?ssl=true&password=x")
        'jdbc:postgresql://db.example:5432/trips?ssl=true'
        >>> redacted_url("jdbc:derby:memory:db;create=true;user=bob;password=s3cret")
        'jdbc:derby:memory:db;create=true'
        >>> redacted_url("jdbc:oracle:thin:scott/tiger@//db.example:1521/svc")
        'jdbc:oracle:thin://db.example:1521/svc'
    """
    cut = min((i for i in (url.find("?"), url.find(";")) if i >= 0), default=len(url))
    main, rest = url[:cut], url[cut:]
    at = main.rfind("@")
    if at >= 0:
        slashes = main.find("//")
        if 0 <= slashes < at:
            start = slashes + 2
        else:  # jdbc:oracle:thin:user/password@host: after the scheme's words
            scheme = re.match(r"(?:[A-Za-z][\w+.-]*:)+", main)
            start = scheme.end() if scheme else 0
        main = main[:start] + main[at + 1 :]
    kept = [
        (sep, part)
        for sep, part in re.findall(r"([?;&])([^?;&]*)", rest)
        if part and not _CREDENTIAL.search(part.split("=", 1)[0])
    ]
    if kept and main.find("?") < 0 and kept[0][0] == "&":
        kept[0] = ("?", kept[0][1])
    return main + "".join(sep + part for sep, part in kept)


def _lineage(kind: str, rdd: Any) -> Leaf:
    """The leaf of an RDD: the RDDs its lineage starts from (no dependencies) as identities,
    the files of those that scan files; no identity when the lineage is longer than
    :data:`_LINEAGE_LIMIT`. An empty RDD reads nothing."""
    app = str(rdd.context().applicationId())
    stack, seen = [rdd], set[int]()
    roots: dict[int, str] = {}
    files: dict[str, None] = {}
    while stack:
        node = stack.pop()
        rdd_id = int(node.id())
        if rdd_id in seen:
            continue
        seen.add(rdd_id)
        if len(seen) > _LINEAGE_LIMIT:
            return Leaf(kind, None)
        deps = node.dependencies()
        parents = [deps.apply(i).rdd() for i in range(deps.size())]
        stack.extend(parents)
        if parents:
            continue
        name = str(node.getClass().getSimpleName())
        if name == "FileScanRDD":  # a scan of a DataFrame's files: compared by its files
            partitions = node.filePartitions()
            for i in range(partitions.size()):
                for f in partitions.apply(i).files():  # a Java array
                    files.setdefault(str(f.filePath().urlEncoded()), None)
        elif name != "EmptyRDD":
            roots[rdd_id] = f"the RDD #{rdd_id} ({name}) of Spark application {app}"
    return Leaf(kind, tuple(roots[i] for i in sorted(roots)), tuple(files))


def _jdbc(relation: Any) -> Leaf:
    """A JDBC relation: the database (its URL without credentials) and the table it reads; a
    query or a subquery given as the table is read without an identity."""
    options = relation.jdbcOptions()
    url = redacted_url(str(options.url()))
    kind = f"the JDBC database {url}"
    table = _option(options.parameters().get("dbtable"))
    if table is None or re.search(r"[\s()]", str(table)):
        return Leaf(kind, None)
    name = re.sub(r"[\"`\[\]]", "", str(table)).rsplit(".", 1)[-1]  # any schema: conservative
    return Leaf(kind, (f"the JDBC table {name} of {url}",))


def _data_source(node: Any) -> Leaf:
    """A v2 data source without a catalog name: its table's name and class, and the options
    it was read with (credentials left out)."""
    table = node.table()
    kind = f"DataSourceV2Relation of {table.getClass().getName()}"
    options = node.options()
    shown = [
        f"{k}={options.get(k)}"
        for k in sorted(str(k) for k in options.keySet().toArray())
        if not _CREDENTIAL.search(k)
    ]
    what = f" ({', '.join(shown)})" if shown else ""
    return Leaf(kind, (f"the data source {table.name()}{what}",))


def identify(spark_jvm: Any, node: Any, kind: str) -> Leaf:
    """The :class:`Leaf` of a plan leaf ``node`` (of node name ``kind``) that is neither a
    catalog table nor a file index; ``spark_jvm`` is the session's py4j JVM view."""
    try:
        if kind == "LocalRelation":
            data = node.data()
            if data.isEmpty():
                return Leaf(kind, ())
            code = int(spark_jvm.java.lang.System.identityHashCode(data))
            return Leaf(kind, (f"the in-memory rows of LocalRelation #{code}",))
        if kind == "LogicalRelation":
            relation = node.relation()
            name = str(relation.getClass().getName())
            if name.endswith(".JDBCRelation"):
                return _jdbc(relation)
            return Leaf(f"LogicalRelation of {name}", None)
        if kind == "DataSourceV2Relation":
            return _data_source(node)
    except Py4JError:
        return Leaf(kind, None)
    try:
        rdd = node.rdd()  # a LogicalRDD, an ExternalRDD
    except Py4JError:
        return Leaf(kind, None)
    try:
        return _lineage(kind, rdd)
    except Py4JError:
        return Leaf(kind, None)
