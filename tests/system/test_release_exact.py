"""rho = inf reproduces the true leaf table exactly: the strongest end-to-end oracle."""

from __future__ import annotations

import duckdb
import pytest

import inftda_sql
from tests.conftest import shared_path
from tests.system.helpers import leaf_truth, make_geo, make_od, make_persons, released

INF = float("inf")
GEO = ["region", "province", "mun"]
OD_COLS = ["o_reg", "o_mun", "d_reg", "d_prov", "d_mun"]


def test_one_chain_microdata(con: duckdb.DuckDBPyConnection) -> None:
    make_geo(con)
    make_persons(con)
    r = inftda_sql.release(con, "persons", hierarchy=GEO, domain="geo", rho=INF)
    assert released(con, "persons_private", GEO) == leaf_truth(con, "persons", GEO)
    assert r.output == "persons_private" and r.total == 16
    assert r.non_private == ("infinite budget (no noise)",)


def test_one_chain_preaggregated(con: duckdb.DuckDBPyConnection) -> None:
    make_geo(con)
    make_persons(con)
    con.execute("CREATE TABLE agg AS SELECT *, count(*) AS n FROM persons GROUP BY ALL").fetchall()
    inftda_sql.release(con, "agg", hierarchy=GEO, domain="geo", rho=INF, count="n")
    assert released(con, "agg_private", GEO) == leaf_truth(con, "persons", GEO)


@pytest.mark.parametrize("tree", ["destination", "origin"])
@pytest.mark.parametrize("table,count", [("od", "n"), ("od_micro", None)])
def test_od_trees_of_different_depths(
    con: duckdb.DuckDBPyConnection, tree: str, table: str, count: str | None
) -> None:
    make_od(con)
    r = inftda_sql.release(
        con,
        table,
        hierarchy=[["o_reg", "o_mun"], ["d_reg", "d_prov", "d_mun"]],
        domain=["geo_o", "geo_d"],
        tree=tree,
        rho=INF,
        count=count,
        output="out",
    )
    assert released(con, "out", OD_COLS) == leaf_truth(con, "od", OD_COLS, "n")
    assert r.spec.n_levels == 5


def test_sequential_chains_with_declared_categories(con: duckdb.DuckDBPyConnection) -> None:
    make_geo(con)
    con.execute(
        "CREATE TABLE people AS SELECT * FROM (VALUES ('North','N1','n1a','0-17','F'),"
        "('North','N1','n1a','18-64','M'),('South','S1','s1c','65+','F'),"
        "('South','S1','s1c','65+','F'),('East','E1','e1a','18-64','X')) p(region, province, mun, age, sex)"
    ).fetchall()
    cols = [*GEO, "age", "sex"]
    inftda_sql.release(
        con,
        "people",
        hierarchy=[GEO, ["age"], ["sex"]],
        domain=["geo", {"age": ["0-17", "18-64", "65+"]}, {"sex": ["F", "M", "X"]}],
        rho=INF,
    )
    assert released(con, "people_private", cols) == leaf_truth(con, "people", cols)


def test_unbounded_exact(con: duckdb.DuckDBPyConnection) -> None:
    make_geo(con)
    make_persons(con)
    r = inftda_sql.release(
        con, "persons", hierarchy=GEO, domain="geo", rho=INF, privacy="unbounded"
    )
    assert released(con, "persons_private", GEO) == leaf_truth(con, "persons", GEO)
    assert r.accounting.level_names[0] == "root"


def test_relation_input_and_domain(con: duckdb.DuckDBPyConnection) -> None:
    make_geo(con)
    make_persons(con)
    rel = con.sql("SELECT * FROM persons WHERE region <> 'East'")
    inftda_sql.release(con, rel, hierarchy=GEO, domain=con.table("geo"), rho=INF, output="rel_out")
    assert released(con, "rel_out", GEO) == leaf_truth(con, "persons", GEO)
    assert con.execute(
        "SELECT count(*) FROM duckdb_views() WHERE view_name LIKE '__inftda%'"
    ).fetchall() == [(0,)]


def test_levels_view_matches_truth_at_every_level(con: duckdb.DuckDBPyConnection) -> None:
    make_od(con)
    inftda_sql.release(
        con,
        "od",
        hierarchy=[["o_reg", "o_mun"], ["d_reg", "d_prov", "d_mun"]],
        domain=["geo_o", "geo_d"],
        tree="destination",
        rho=INF,
        count="n",
        output="out",
    )
    got = con.execute(
        "SELECT level, o_reg, d_reg, count FROM out_levels WHERE level = 2 ORDER BY ALL"
    ).fetchall()
    want = con.execute(
        "SELECT 2, o_reg, d_reg, sum(n)::BIGINT FROM od GROUP BY ALL ORDER BY ALL"
    ).fetchall()
    assert got == want
    assert con.execute("SELECT count FROM out_levels WHERE level = 0").fetchall() == [(23,)]


@pytest.mark.shared
@pytest.mark.parametrize("tree", ["destination", "origin"])
def test_portugal_commuting_exact(con: duckdb.DuckDBPyConnection, tree: str) -> None:
    data = shared_path("data", "pt_census2021_commuting_muni.parquet")
    geo = shared_path("data", "pt_census2021_commuting_muni_geo.parquet")
    con.execute(f"CREATE TABLE pt AS SELECT * FROM '{data}'").fetchall()
    cols = [r[0] for r in con.execute("DESCRIBE pt").fetchall()]
    o_cols = sorted((c for c in cols if c.startswith("o_")), key=_depth_key)
    d_cols = sorted((c for c in cols if c.startswith("d_")), key=_depth_key)
    gcols = [r[0] for r in con.execute(f"DESCRIBE SELECT * FROM '{geo}'").fetchall()]
    o_sel = ", ".join(f"{c[2:]} AS {c}" for c in o_cols if c[2:] in gcols)
    d_sel = ", ".join(f"{c[2:]} AS {c}" for c in d_cols if c[2:] in gcols)
    con.execute(f"CREATE VIEW geo_o AS SELECT {o_sel} FROM '{geo}'").fetchall()
    con.execute(f"CREATE VIEW geo_d AS SELECT {d_sel} FROM '{geo}'").fetchall()
    r = inftda_sql.release(
        con,
        "pt",
        hierarchy=[o_cols, d_cols],
        domain=["geo_o", "geo_d"],
        tree=tree,
        rho=INF,
        count="count",
        output="pt_private",
    )
    assert released(con, "pt_private", o_cols + d_cols) == leaf_truth(
        con, "pt", o_cols + d_cols, "count"
    )
    assert r.total == 1_884_550


_ORDER = ["country", "region", "district", "lad", "municipality", "muni", "msoa"]


def _depth_key(col: str) -> int:
    name = col[2:]
    return _ORDER.index(name) if name in _ORDER else len(_ORDER)


def test_enum_and_integer_typed_hierarchies(con: duckdb.DuckDBPyConnection) -> None:
    """Domain values are cast to the input's types (ENUMs compare as text)."""
    con.execute("CREATE TYPE reg AS ENUM ('N', 'S')").fetchall()
    con.execute(
        "CREATE TABLE g AS SELECT * FROM (VALUES ('N', 11), ('N', 12), ('S', 21)) t(r, m)"
    ).fetchall()
    con.execute("CREATE TABLE p (r reg, m INTEGER)").fetchall()
    con.execute("INSERT INTO p VALUES ('N', 11), ('N', 11), ('S', 21)").fetchall()
    inftda_sql.release(con, "p", hierarchy=["r", "m"], domain="g", rho=INF)
    assert con.execute("SELECT r::VARCHAR, m, count FROM p_private ORDER BY ALL").fetchall() == [
        ("N", 11, 2),
        ("S", 21, 1),
    ]


def test_domain_listing_paths_twice_is_fine(con: duckdb.DuckDBPyConnection) -> None:
    make_geo(con)
    make_persons(con)
    con.execute("INSERT INTO geo SELECT * FROM geo").fetchall()
    r = inftda_sql.release(con, "persons", hierarchy=GEO, domain="geo", rho=INF)
    assert released(con, "persons_private", GEO) == leaf_truth(con, "persons", GEO)
    # the 5 leaves under the non-empty provinces N1 and S1, each once (10 if repeats were kept);
    # N2's only child n2a is N2 itself and is not noised
    assert r.levels[-1].noised_cells == 5
