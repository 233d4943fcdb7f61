"""engines/duckdb/domain.py: a chain's public domain fetched, checked, coded and registered."""

from __future__ import annotations

import duckdb
import pytest

from inftda_sql import DomainError
from inftda_sql.engines.duckdb import compile as _compile
from inftda_sql.engines.duckdb.domain import build_chain

NAMES = _compile.TempNames("__inftda_u_")
CHAIN = ("region", "province", "mun")


def _views(con: duckdb.DuckDBPyConnection) -> list[str]:
    return [
        r[0]
        for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()
    ]


def _domain(con: duckdb.DuckDBPyConnection, rows: str) -> str:
    con.execute("CREATE TABLE geo (region VARCHAR, province VARCHAR, mun VARCHAR)").fetchall()
    if rows:
        con.execute(f"INSERT INTO geo VALUES {rows}").fetchall()
    return '"geo"'


def test_a_nested_domain_is_coded_and_registered(con: duckdb.DuckDBPyConnection) -> None:
    geo = _domain(
        con,
        "('S','S1','s1b'), ('N','N1','n1a'), ('N','N2','n2a'), ('N','N1','n1b'), ('S','S1','s1a')",
    )
    tree = build_chain(con, NAMES, 0, CHAIN, geo, ["VARCHAR"] * 3, "domain").tree
    assert tree.sizes == (1, 2, 3, 5)
    # root: regions 0..1; N: provinces 0..1, S: 2; N1: muns 0..1, N2: 2, S1: 3..4
    assert [o.tolist() for o in tree.child_offsets[1:]] == [[0, 2], [0, 2, 3], [0, 2, 3, 5]]
    assert _views(con) == [NAMES.codes(0)]  # registered Arrow table: a temporary view
    got = con.execute(f'SELECT * FROM "{NAMES.codes(0)}"').fetchall()
    assert got == [  # sorted paths with one code column per depth
        ("N", "N1", "n1a", 0, 0, 0),
        ("N", "N1", "n1b", 0, 0, 1),
        ("N", "N2", "n2a", 0, 1, 2),
        ("S", "S1", "s1a", 1, 2, 3),
        ("S", "S1", "s1b", 1, 2, 4),
    ]
    columns = [r[0] for r in con.execute(f'DESCRIBE "{NAMES.codes(0)}"').fetchall()]
    assert columns == [*CHAIN, "__d1", "__d2", "__d3"]


def test_repeated_paths_are_listed_once(con: duckdb.DuckDBPyConnection) -> None:
    geo = _domain(con, "('N','N1','a'), ('N','N1','a'), ('N','N1','b'), ('N','N1','a')")
    tree = build_chain(con, NAMES, 1, CHAIN, geo, ["VARCHAR"] * 3, "domain").tree
    assert tree.sizes == (1, 1, 1, 2)
    assert con.execute(f'SELECT mun, __d3 FROM "{NAMES.codes(1)}"').fetchall() == [
        ("a", 0),
        ("b", 1),
    ]


def test_values_are_cast_to_the_inputs_types(con: duckdb.DuckDBPyConnection) -> None:
    geo = _domain(con, "('1','10','100'), ('1','10','101'), ('2','20','200')")
    build_chain(con, NAMES, 0, CHAIN, geo, ["INTEGER", "INTEGER", "BIGINT"], "domain")
    types = [r[1] for r in con.execute(f'DESCRIBE "{NAMES.codes(0)}"').fetchall()]
    assert types[:3] == ["INTEGER", "INTEGER", "BIGINT"]


def test_a_value_under_two_parents_is_named(con: duckdb.DuckDBPyConnection) -> None:
    geo = _domain(con, "('N','N1','a'), ('N','N2','b'), ('S','S1','c'), ('S','N2','d')")
    with pytest.raises(DomainError) as info:
        build_chain(con, NAMES, 0, CHAIN, geo, ["VARCHAR"] * 3, "domain of chain 1")
    assert str(info.value) == (
        "the domain of chain 1 is not nested: province='N2' is listed under region='N' and "
        "region='S'; every value must have one parent (use codes unique across the whole domain, "
        "e.g. prefix province with its region)"
    )
    assert _views(con) == []  # neither the codes nor the diagnostics' registration stay behind


def test_a_leaf_under_two_parents_deeper_down(con: duckdb.DuckDBPyConnection) -> None:
    geo = _domain(con, "('N','N1','a'), ('N','N2','a')")
    with pytest.raises(
        DomainError, match="mun='a' is listed under province='N1' and province='N2'"
    ):
        build_chain(con, NAMES, 0, CHAIN, geo, ["VARCHAR"] * 3, "domain")


def test_an_empty_domain(con: duckdb.DuckDBPyConnection) -> None:
    geo = _domain(con, "")
    with pytest.raises(DomainError) as info:
        build_chain(con, NAMES, 0, CHAIN, geo, ["VARCHAR"] * 3, "domain")
    assert (
        str(info.value)
        == "the domain is empty; it must list every valid path of region, province, mun"
    )


def test_null_in_a_domain(con: duckdb.DuckDBPyConnection) -> None:
    geo = _domain(con, "('N','N1','a'), ('N',NULL,'b'), ('S',NULL,'c')")
    with pytest.raises(DomainError) as info:
        build_chain(con, NAMES, 0, CHAIN, geo, ["VARCHAR"] * 3, "domain")
    assert str(info.value) == (
        "the domain has 2 row(s) with NULL in 'province'; every listed path must be complete"
    )
    assert _views(con) == []


def test_values_that_do_not_convert(con: duckdb.DuckDBPyConnection) -> None:
    geo = _domain(con, "('1','10','x100')")
    with pytest.raises(DomainError) as info:
        build_chain(con, NAMES, 0, CHAIN, geo, ["INTEGER", "INTEGER", "INTEGER"], "domain")
    assert str(info.value).startswith(
        "the domain has values that do not convert to the input's column types "
        "(region INTEGER, province INTEGER, mun INTEGER): "
    )
    assert "x100" in str(info.value)
