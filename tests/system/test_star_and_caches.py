"""Star-schema inputs, the ancestor check's modes, the domain cache, the output's order."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import duckdb
import pytest

import inftda_sql
from inftda_sql import DomainError, InputDataError, SpecError
from inftda_sql.core import tree as tree_module
from inftda_sql.engines.duckdb import cache as cache_module
from inftda_sql.engines.duckdb import domain as domain_module

from .helpers import make_geo, make_od, make_persons

GEO = ["region", "province", "mun"]
OD = [["o_reg", "o_mun"], ["d_reg", "d_prov", "d_mun"]]
EXACT: dict[str, Any] = {"rho": float("inf"), "overwrite": True}


def _out(con: duckdb.DuckDBPyConnection, table: str = "out") -> list[tuple[Any, ...]]:
    return con.execute(f"SELECT * FROM {table}").fetchall()


# ----------------------------------------------------------------------------- star schema


def test_a_star_schema_input_gets_its_ancestors_from_the_domain(
    con: duckdb.DuckDBPyConnection,
) -> None:
    make_od(con)
    con.execute("CREATE TABLE od_star AS SELECT o_mun, d_mun, n FROM od").fetchall()
    kw = {"hierarchy": OD, "domain": ["geo_o", "geo_d"], "tree": "destination", "count": "n"}
    inftda_sql.release(con, "od", output="whole", **kw, **EXACT)
    r = inftda_sql.release(con, "od_star", output="star", **kw, **EXACT)
    assert _out(con, "star") == _out(con, "whole")
    assert [c for c in con.table("star").columns] == [*OD[0], *OD[1], "count"]
    assert r.total == 23
    levels = con.execute("SELECT level, sum(count) FROM star_levels GROUP BY 1 ORDER BY 1")
    assert levels.fetchall() == [(lv, 23) for lv in range(6)]


def test_some_ancestors_present(con: duckdb.DuckDBPyConnection) -> None:
    """An input with the leaf and some ancestors: those present are checked, the rest come
    from the domain."""
    make_geo(con)
    make_persons(con)
    con.execute("CREATE TABLE part AS SELECT region, mun FROM persons").fetchall()
    inftda_sql.release(con, "persons", hierarchy=GEO, domain="geo", output="whole", **EXACT)
    inftda_sql.release(con, "part", hierarchy=GEO, domain="geo", output="part_out", **EXACT)
    assert _out(con, "part_out") == _out(con, "whole")
    con.execute("UPDATE part SET region = 'South' WHERE mun = 'n2a'").fetchall()
    with pytest.raises(DomainError, match=r"input path \(region='South', mun='n2a'\)"):
        inftda_sql.release(
            con, "part", hierarchy=GEO, domain="geo", output="x", check_ancestors="full", **EXACT
        )


def test_the_leaf_column_is_required(con: duckdb.DuckDBPyConnection) -> None:
    make_geo(con)
    con.execute("CREATE TABLE no_leaf AS SELECT region, province FROM geo").fetchall()
    with pytest.raises(InputDataError, match=r"column 'mun' \(hierarchy column\) not in"):
        inftda_sql.release(con, "no_leaf", hierarchy=GEO, domain="geo", **EXACT)


def test_a_domain_from_the_data_needs_every_column(con: duckdb.DuckDBPyConnection) -> None:
    make_persons(con)
    con.execute("CREATE TABLE star AS SELECT mun FROM persons").fetchall()
    with pytest.raises(InputDataError, match=r"column 'region' \(hierarchy column\) not in"):
        inftda_sql.release(con, "star", hierarchy=GEO, domain_from_data=True, **EXACT)


# ----------------------------------------------------------------------------- the check


@pytest.fixture
def persons(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    make_geo(con)
    make_persons(con)
    return con


def _release(con: duckdb.DuckDBPyConnection, table: object = "persons", **kw: Any) -> None:
    kw.setdefault("domain", "geo")
    inftda_sql.release(con, table, hierarchy=GEO, output="out", **EXACT, **kw)


def _checked(con: duckdb.DuckDBPyConnection) -> int:
    try:
        return int(con.execute("SELECT count(*) FROM __inftda_checks").fetchall()[0][0])
    except duckdb.CatalogException:
        return 0


WRONG = "UPDATE persons SET region = 'South' WHERE mun = 'n2a'"


def test_full_checks_every_release(persons: duckdb.DuckDBPyConnection) -> None:
    _release(persons, check_ancestors="full")
    assert _checked(persons) == 0  # nothing remembered
    persons.execute(WRONG).fetchall()
    with pytest.raises(DomainError, match="the domain puts mun='n2a' under other ancestors"):
        _release(persons, check_ancestors="full")


@pytest.mark.parametrize(
    "change",
    [
        WRONG,  # in place: the row count and the table's id stay
        "INSERT INTO persons VALUES ('South', 'N2', 'n2a')",
        "UPDATE persons SET region = 'South' WHERE rowid = (SELECT max(rowid) FROM persons "
        "WHERE mun = 'n2a')",
    ],
    ids=["update", "insert", "update-one-row"],
)
def test_the_default_checks_every_changed_input(
    persons: duckdb.DuckDBPyConnection, change: str
) -> None:
    """The default never lets a changed input skip the check, whatever DuckDB's catalog sees
    of the change (nothing, for an UPDATE in place)."""
    for _ in range(2):
        _release(persons)
    assert _checked(persons) == 0  # the default remembers nothing
    persons.execute(change).fetchall()
    with pytest.raises(DomainError, match="the domain puts mun='n2a' under other ancestors"):
        _release(persons)


def test_off_never_reads_the_ancestors(persons: duckdb.DuckDBPyConnection) -> None:
    _release(persons)
    right = _out(persons)
    persons.execute(WRONG).fetchall()
    persons.execute("UPDATE persons SET province = NULL WHERE mun = 's1a'").fetchall()
    _release(persons, check_ancestors="off")
    assert _out(persons) == right  # every leaf's ancestors are the domain's


CACHED: dict[str, Any] = {"check_ancestors": "cached"}


def test_cached_checks_once_per_input_version(persons: duckdb.DuckDBPyConnection) -> None:
    _release(persons, **CACHED)
    assert _checked(persons) == 1
    _release(persons, **CACHED)  # the same version: not checked again, nothing new remembered
    assert _checked(persons) == 1
    # a new row (the row count changes): checked again
    persons.execute("INSERT INTO persons VALUES ('North', 'N1', 'n1a')").fetchall()
    _release(persons, **CACHED)
    assert _checked(persons) == 2
    persons.execute("INSERT INTO persons VALUES ('South', 'N2', 'n2a')").fetchall()
    with pytest.raises(DomainError, match="other ancestors"):
        _release(persons, **CACHED)
    persons.execute("DELETE FROM persons WHERE region = 'South' AND mun = 'n2a'").fetchall()
    _release(persons, **CACHED)  # the version that passed before
    # a replaced table with the same row count and wrong ancestors: a new version
    persons.execute(
        "CREATE OR REPLACE TABLE persons AS SELECT * REPLACE "
        "(CASE WHEN mun = 'n2a' THEN 'South' ELSE region END AS region) FROM persons"
    ).fetchall()
    with pytest.raises(DomainError, match="other ancestors"):
        _release(persons, **CACHED)


def test_cached_sees_a_changed_view_and_another_domain(
    persons: duckdb.DuckDBPyConnection,
) -> None:
    persons.execute("CREATE VIEW pv AS SELECT * FROM persons").fetchall()
    _release(persons, "pv", **CACHED)
    persons.execute(
        "CREATE OR REPLACE VIEW pv AS SELECT * REPLACE "
        "(CASE WHEN mun = 'n2a' THEN 'South' ELSE region END AS region) FROM persons"
    ).fetchall()
    with pytest.raises(DomainError, match="other ancestors"):
        _release(persons, "pv", **CACHED)
    persons.execute("CREATE OR REPLACE VIEW pv AS SELECT * FROM persons").fetchall()
    _release(persons, "pv", **CACHED)
    # the same input against another domain (n2a moved to the South): checked again
    persons.execute("UPDATE geo SET region = 'South' WHERE mun = 'n2a'").fetchall()
    with pytest.raises(DomainError, match="other ancestors"):
        _release(persons, "pv", **CACHED)


def test_cached_does_not_see_an_update_in_place(persons: duckdb.DuckDBPyConnection) -> None:
    """Why 'cached' is not the default: an UPDATE that keeps the row count keeps the version
    DuckDB's catalog shows (it has no version of a table's contents); 'full' sees it. The
    release is right either way: the domain's ancestors."""
    _release(persons, **CACHED)
    right = _out(persons)
    persons.execute(WRONG).fetchall()
    _release(persons, **CACHED)
    assert _out(persons) == right
    with pytest.raises(DomainError, match="other ancestors"):
        _release(persons, check_ancestors="full")


def test_inputs_without_a_fingerprint_are_checked_every_time(
    persons: duckdb.DuckDBPyConnection,
) -> None:
    persons.execute(WRONG).fetchall()
    relation = persons.sql("SELECT * FROM persons")
    for _ in range(2):
        with pytest.raises(DomainError, match="other ancestors"):
            _release(persons, relation, **CACHED)
    assert _checked(persons) == 0


def test_check_ancestors_is_validated(persons: duckdb.DuckDBPyConnection) -> None:
    with pytest.raises(SpecError, match="check_ancestors must be one of 'full', 'cached', 'off'"):
        _release(persons, check_ancestors="sometimes")


# ----------------------------------------------------------------------------- the domain cache


@pytest.fixture
def small_cache(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Cache every domain, and count how often one is coded from scratch."""
    monkeypatch.setattr(cache_module, "MIN_CACHED_PATHS", 1)
    coded: list[int] = []
    real = tree_module.code_paths

    def counting(paths: Any) -> Any:
        coded.append(paths.num_rows)
        return real(paths)

    monkeypatch.setattr(domain_module, "code_paths", counting)
    yield coded


def _entries(con: duckdb.DuckDBPyConnection) -> list[tuple[str, int]]:
    return con.execute("SELECT table_name, paths FROM __inftda_domains").fetchall()


def _cache_tables(con: duckdb.DuckDBPyConnection) -> list[str]:
    return [
        r[0]
        for r in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE starts_with(table_name, "
            "'__inftda_domain_') ORDER BY 1"
        ).fetchall()
    ]


def test_a_cached_domain_is_read_back(
    persons: duckdb.DuckDBPyConnection, small_cache: list[int]
) -> None:
    _release(persons)
    first = _out(persons)
    assert small_cache == [7] and len(_entries(persons)) == 1
    assert _cache_tables(persons) == [_entries(persons)[0][0]]
    _release(persons)
    assert small_cache == [7]  # not coded again
    assert _out(persons) == first


@pytest.mark.parametrize(
    "change",
    [
        "UPDATE geo SET mun = 'n1z' WHERE mun = 'n1b'",  # one value
        "INSERT INTO geo VALUES ('East', 'E1', 'e1b')",
        "DELETE FROM geo WHERE mun = 'e1a'",
        "CREATE OR REPLACE TABLE geo AS SELECT * FROM geo WHERE mun <> 's1b'",
        "CREATE OR REPLACE TABLE geo AS SELECT * REPLACE (lower(region) AS region) FROM geo",
    ],
    ids=["update", "insert", "delete", "replace", "replace-same-size"],
)
def test_any_change_of_the_domain_recodes_it(
    persons: duckdb.DuckDBPyConnection, small_cache: list[int], change: str
) -> None:
    _release(persons)
    persons.execute(change).fetchall()
    expected = persons.execute("SELECT count(DISTINCT mun) FROM geo").fetchall()[0][0]
    if "lower" in change:
        persons.execute("UPDATE persons SET region = lower(region)").fetchall()
    _release(persons)
    assert small_cache == [7, expected]  # coded again, from the changed domain
    assert len(_entries(persons)) == 1  # the stale entry was dropped with its table
    assert len(_cache_tables(persons)) == 1
    truth = persons.execute(
        "SELECT region, province, mun, count(*) FROM persons GROUP BY ALL ORDER BY ALL"
    ).fetchall()
    assert _out(persons) == truth


def test_a_changed_view_definition_recodes_the_domain(
    persons: duckdb.DuckDBPyConnection, small_cache: list[int]
) -> None:
    """A domain read through a view: another definition is a fresh coding, also where it
    lists the same rows; one changed category is coded afresh and released as such."""
    persons.execute("CREATE VIEW gv AS SELECT * FROM geo").fetchall()
    _release(persons, domain="gv")
    _release(persons, domain="gv")
    assert small_cache == [7]
    persons.execute("CREATE OR REPLACE VIEW gv AS SELECT * FROM geo WHERE true").fetchall()
    _release(persons, domain="gv")
    assert small_cache == [7, 7]
    persons.execute(
        "CREATE OR REPLACE VIEW gv AS SELECT * REPLACE "
        "(CASE WHEN province = 'N1' THEN 'N9' ELSE province END AS province) FROM geo"
    ).fetchall()
    _release(persons, domain="gv", check_ancestors="off")
    assert small_cache == [7, 7, 7]
    assert ("North", "N9", "n1a", 5) in _out(persons)
    assert "N1" not in {r[1] for r in _out(persons)}


def test_a_changed_domain_file_recodes_it(
    persons: duckdb.DuckDBPyConnection, small_cache: list[int], tmp_path: Any
) -> None:
    path = tmp_path / "geo.parquet"
    persons.execute(f"COPY geo TO '{path}'").fetchall()
    _release(persons, domain=persons.read_parquet(str(path)))
    _release(persons, domain=persons.read_parquet(str(path)))
    assert small_cache == [7]
    persons.execute(
        f"COPY (SELECT * REPLACE (CASE WHEN mun = 'e1a' THEN 'e1z' ELSE mun END AS mun) "
        f"FROM geo) TO '{path}'"
    ).fetchall()
    _release(persons, domain=persons.read_parquet(str(path)))
    assert small_cache == [7, 7]


def test_a_reordered_domain_keeps_its_entry(
    persons: duckdb.DuckDBPyConnection, small_cache: list[int]
) -> None:
    _release(persons)
    persons.execute("CREATE OR REPLACE TABLE geo AS SELECT * FROM geo ORDER BY mun DESC")
    _release(persons)
    assert small_cache == [7]


def test_a_damaged_entry_is_recoded(
    persons: duckdb.DuckDBPyConnection, small_cache: list[int]
) -> None:
    _release(persons)
    (table, _), *_ = _entries(persons)
    persons.execute(f"DELETE FROM \"{table}\" WHERE mun = 's1c'").fetchall()
    _release(persons)
    assert small_cache == [7, 7]
    persons.execute(f'DROP TABLE "{table}"').fetchall()
    _release(persons)
    assert small_cache == [7, 7, 7]
    persons.execute("UPDATE __inftda_domains SET offsets = [[0], [0, 7]]").fetchall()
    _release(persons)
    assert small_cache == [7, 7, 7, 7]
    _release(persons)
    assert small_cache == [7, 7, 7, 7]  # stored again, whole


def test_an_unsorted_large_domain_is_sorted(
    con: duckdb.DuckDBPyConnection, small_cache: list[int]
) -> None:
    """A cacheable domain is read as stored and sorted only when it is not sorted already:
    either way the same codes."""
    make_geo(con)
    make_persons(con)
    con.execute("CREATE TABLE geo_sorted AS SELECT * FROM geo ORDER BY ALL").fetchall()
    inftda_sql.release(con, "persons", hierarchy=GEO, domain="geo", output="a", **EXACT)
    inftda_sql.release(con, "persons", hierarchy=GEO, domain="geo_sorted", output="b", **EXACT)
    assert _out(con, "a") == _out(con, "b")


def test_small_domains_are_not_stored(persons: duckdb.DuckDBPyConnection) -> None:
    _release(persons)
    assert _cache_tables(persons) == []


# ----------------------------------------------------------------------------- the output order


@pytest.mark.parametrize("keep_order", [True, False])
def test_the_output_is_in_the_order_of_its_columns(
    con: duckdb.DuckDBPyConnection, keep_order: bool
) -> None:
    make_od(con)
    con.execute(f"SET preserve_insertion_order = {str(keep_order).lower()}").fetchall()
    con.execute(
        "CREATE TABLE big AS SELECT o.o_reg, o.o_mun, d.d_reg, d.d_prov, d.d_mun FROM "
        "geo_o o, geo_d d, range(3) ORDER BY random()"
    ).fetchall()
    inftda_sql.release(
        con,
        "big",
        hierarchy=OD,
        domain=["geo_o", "geo_d"],
        tree="destination",
        output="out",
        **EXACT,
    )
    rows = _out(con)
    assert len(rows) == 12
    assert rows == sorted(rows)
