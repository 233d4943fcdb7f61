"""What a Spark plan leaf outside the catalog reads, without a JVM: JDBC URLs lose their
credentials; a leaf of an unknown kind, or one whose identity cannot be read, has none; and the
domain check refuses a domain only when an unidentified source meets one of the same kind."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed: pip install -e '.[test]'")

from py4j.protocol import Py4JError  # type: ignore[import-untyped]

from inftda_sql import DomainError
from inftda_sql.engines.spark.catalog import BaseTables, check_domain_reads
from inftda_sql.engines.spark.leaves import Leaf, identify, redacted_url


@pytest.mark.parametrize(
    ("url", "want"),
    [
        ("jdbc:postgresql://h:5432/db?user=bob&password=x&ssl=true", "jdbc:postgresql://h:5432/db?ssl=true"),
        ("jdbc:mysql://bob:p@ss:w0rd@h/db", "jdbc:mysql://h/db"),
        ("jdbc:sqlserver://h;databaseName=trips;password=x;integratedSecurity=true", "jdbc:sqlserver://h;databaseName=trips;integratedSecurity=true"),
        ("jdbc:oracle:oci:scott/tiger@db", "jdbc:oracle:oci:db"),
        ("jdbc:derby:memory:db;create=true", "jdbc:derby:memory:db;create=true"),
        ("jdbc:sqlite:/data/trips.db", "jdbc:sqlite:/data/trips.db"),
        ("jdbc:postgresql://h/db?apiToken=x&sslkey=/k&sslmode=require", "jdbc:postgresql://h/db?sslmode=require"),
    ],
)  # fmt: skip
def test_a_jdbc_url_keeps_no_credential(url: str, want: str) -> None:
    assert redacted_url(url) == want


class _Node:
    """A stand-in for a py4j plan node: attributes are methods returning what was given, or
    raising Py4JError (a method the JVM object lacks)."""

    def __init__(self, **methods: Any) -> None:
        self._methods = methods

    def __getattr__(self, name: str) -> Any:
        if name not in self._methods:
            raise AttributeError(name)
        value = self._methods[name]

        def call(*args: object) -> Any:
            if isinstance(value, Exception):
                raise value
            return value

        return call


def _class(name: str) -> _Node:
    return _Node(getClass=_Node(getName=name))


def test_leaves_without_an_identity() -> None:
    missing = Py4JError("no such method")
    custom = _Node(relation=_class("com.example.KafkaRelation"))
    assert identify(None, custom, "LogicalRelation") == Leaf(
        "LogicalRelation of com.example.KafkaRelation", None
    )
    assert identify(None, _Node(rdd=missing), "StreamingRelation") == Leaf(
        "StreamingRelation", None
    )
    assert identify(None, _Node(data=missing), "LocalRelation") == Leaf("LocalRelation", None)
    # an empty LocalRelation reads no rows: nothing to compare
    assert identify(None, _Node(data=_Node(isEmpty=True)), "LocalRelation") == Leaf(
        "LocalRelation", ()
    )


def _jdbc(options: dict[str, str]) -> _Node:
    params = _Node(get=None)
    params.get = lambda key: _Node(  # type: ignore[method-assign]
        isDefined=key in options, get=options.get(key)
    )
    jdbc_options = _Node(url=options["url"], parameters=params)
    relation = _Node(getClass=_Node(getName="x.jdbc.JDBCRelation"), jdbcOptions=jdbc_options)
    return _Node(relation=relation)


def test_a_jdbc_table_is_named_a_query_is_not() -> None:
    url = "jdbc:postgresql://u:pw@h/db"
    table = identify(None, _jdbc({"url": url, "dbtable": 'public."Trips"'}), "LogicalRelation")
    assert table == Leaf(
        "the JDBC database jdbc:postgresql://h/db",
        ("the JDBC table Trips of jdbc:postgresql://h/db",),
    )
    for options in ({"query": "SELECT 1"}, {"dbtable": "(SELECT * FROM trips) t"}):
        leaf = identify(None, _jdbc({"url": url, **options}), "LogicalRelation")
        assert leaf == Leaf("the JDBC database jdbc:postgresql://h/db", None)


DB = "the JDBC database jdbc:derby:memory:db"


def _check(inp: BaseTables, dom: BaseTables) -> None:
    check_domain_reads(inp, [("domain", "the domain DataFrame", dom)])


def test_only_an_unidentified_source_of_the_same_kind_is_refused() -> None:
    rows = BaseTables(memory=("the in-memory rows of LocalRelation #1",), kinds=("LocalRelation",))
    other = BaseTables(memory=("the in-memory rows of LocalRelation #2",), kinds=("LocalRelation",))
    kafka = BaseTables(kinds=("LogicalRelation of K",), unidentified=("LogicalRelation of K",))
    query = BaseTables(kinds=(DB,), unidentified=(DB,))
    table = BaseTables(memory=(f"the JDBC table trips of {DB[18:]}",), kinds=(DB,))
    geo = BaseTables(memory=(f"the JDBC table geo of {DB[18:]}",), kinds=(DB,))
    for inp, dom in ((rows, other), (rows, kafka), (kafka, rows), (table, geo), (kafka, query)):
        _check(inp, dom)
        _check(dom, inp)
    with pytest.raises(DomainError, match="LocalRelation #1, which the input reads too"):
        _check(rows, rows)
    with pytest.raises(DomainError, match="both read LogicalRelation of K") as info:
        _check(kafka, kafka)
    assert "domain_from_data=True" in str(info.value) and "catalog table or a file" in str(
        info.value
    )
    for inp, dom in ((table, query), (query, table), (query, query)):
        with pytest.raises(DomainError, match=f"both read {DB}"):
            _check(inp, dom)
