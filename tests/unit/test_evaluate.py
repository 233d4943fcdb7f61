"""evaluate() on hand-made tables whose per-level metrics were worked out by hand."""

from __future__ import annotations

import math
import re

import duckdb
import pytest

from inftda_sql._errors import InputDataError, SpecError
from inftda_sql._evaluate import EVALUATION_COLUMNS, evaluate, level_cell_columns
from inftda_sql.core.spec import parse_hierarchy

GEO = ["region", "city"]


def _tables(con: duckdb.DuckDBPyConnection) -> None:
    # truth (pre-aggregated, with an explicit zero row): (N,a)=5, (N,b)=0, (S,c)=3
    con.execute(
        "CREATE TABLE truth AS SELECT * FROM (VALUES ('N','a',5), ('N','b',0), ('S','c',3)) "
        "t(region, city, n)"
    ).fetchall()
    # released: (N,a)=4, (N,b)=2, (S,d)=1; (S,c) is missing
    con.execute(
        "CREATE TABLE rel AS SELECT * FROM (VALUES ('N','a',4), ('N','b',2), ('S','d',1)) "
        't(region, city, "count")'
    ).fetchall()


def _rows(rel: duckdb.DuckDBPyRelation) -> list[dict[str, object]]:
    return [dict(zip(rel.columns, r, strict=True)) for r in rel.fetchall()]


def test_hand_computed_metrics(con: duckdb.DuckDBPyConnection) -> None:
    _tables(con)
    ev = evaluate(con, "truth", "rel", hierarchy=GEO, count="n")
    assert tuple(ev.columns) == EVALUATION_COLUMNS
    rows = _rows(ev)
    # root: 8 vs 7
    assert rows[0] == {
        "level": 0, "level_name": "root", "cells_true": 1, "cells_released": 1,
        "max_abs_error": 1, "mean_abs_error": 1.0, "false_discovery_rate": 0.0,
        "false_negative_rate": 0.0, "total_true": 8, "total_released": 7,
    }  # fmt: skip
    # regions: N 5 vs 6, S 3 vs 1 -> errors 1 and 2
    assert rows[1] == {
        "level": 1, "level_name": "region", "cells_true": 2, "cells_released": 2,
        "max_abs_error": 2, "mean_abs_error": 1.5, "false_discovery_rate": 0.0,
        "false_negative_rate": 0.0, "total_true": 8, "total_released": 7,
    }  # fmt: skip
    # cities over the union {a, b, c, d}: |5-4|, |0-2|, |3-0|, |0-1| = 1, 2, 3, 1;
    # released > 0: a, b, d of which b and d are false discoveries; c is a false negative
    r2 = rows[2]
    assert r2["level_name"] == "city"
    assert (r2["cells_true"], r2["cells_released"]) == (2, 3)
    assert (r2["max_abs_error"], r2["mean_abs_error"]) == (3, 1.75)
    assert r2["false_discovery_rate"] == pytest.approx(2 / 3)
    assert r2["false_negative_rate"] == 0.5
    assert (r2["total_true"], r2["total_released"]) == (8, 7)


def test_microdata_truth_and_relations(con: duckdb.DuckDBPyConnection) -> None:
    _tables(con)
    micro = con.sql("SELECT region, city FROM truth, range(n)")
    released = con.sql("SELECT * FROM rel")
    ev = evaluate(con, micro, released, hierarchy=GEO)
    assert _rows(ev) == _rows(evaluate(con, "truth", "rel", hierarchy=GEO, count="n"))
    # nothing left behind in the catalog
    left = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name LIKE '__inftda%'"
    ).fetchall()
    assert left == [(0,)]


def test_result_is_materialised(con: duckdb.DuckDBPyConnection) -> None:
    _tables(con)
    ev = evaluate(con, "truth", "rel", hierarchy=GEO, count="n")
    con.execute("DROP TABLE rel").fetchall()
    assert [r[0] for r in ev.fetchall()] == [0, 1, 2]  # still readable, ordered by level


def test_negative_and_fractional_released_counts(con: duckdb.DuckDBPyConnection) -> None:
    _tables(con)
    con.execute(
        "CREATE TABLE noisy AS SELECT * FROM (VALUES ('N','a',5.5), ('N','b',-1.0), "
        "('S','c',3.0)) t(region, city, v)"
    ).fetchall()
    ev = evaluate(con, "truth", "noisy", hierarchy=GEO, count="n", released_count="v")
    leaf = _rows(ev)[2]
    # errors 0.5, 1, 0; a negative count is not a discovery
    assert leaf["max_abs_error"] == 1.0 and isinstance(leaf["max_abs_error"], float)
    assert leaf["mean_abs_error"] == pytest.approx(0.5)
    assert leaf["false_discovery_rate"] == 0.0 and leaf["cells_released"] == 2
    assert leaf["total_released"] == 7.5


def test_empty_release(con: duckdb.DuckDBPyConnection) -> None:
    _tables(con)
    con.execute("CREATE TABLE nothing AS SELECT * FROM rel WHERE false").fetchall()
    rows = _rows(evaluate(con, "truth", "nothing", hierarchy=GEO, count="n"))
    assert [r["false_discovery_rate"] for r in rows] == [0.0, 0.0, 0.0]
    assert [r["false_negative_rate"] for r in rows] == [1.0, 1.0, 1.0]
    assert [r["max_abs_error"] for r in rows] == [8, 5, 5]


def test_same_code_under_two_parents_stays_two_cells(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(
        "CREATE TABLE t2 AS SELECT * FROM (VALUES ('N','1',2), ('S','1',3)) t(region, city, n)"
    ).fetchall()
    con.execute(
        "CREATE TABLE r2 AS SELECT * FROM (VALUES ('N','1',3), ('S','1',2)) "
        't(region, city, "count")'
    ).fetchall()
    leaf = _rows(evaluate(con, "t2", "r2", hierarchy=GEO, count="n"))[2]
    assert leaf["max_abs_error"] == 1 and leaf["cells_true"] == 2


def test_level_cell_columns_destination_tree() -> None:
    spec = parse_hierarchy([["o_reg", "o_mun"], ["d_reg", "d_prov", "d_mun"]], "destination")
    got = [level_cell_columns(spec, lv) for lv in range(spec.n_levels + 1)]
    assert got == [
        (),
        ("d_reg",),
        ("o_reg", "d_reg"),
        ("o_reg", "d_reg", "d_prov"),
        ("o_reg", "o_mun", "d_reg", "d_prov"),
        ("o_reg", "o_mun", "d_reg", "d_prov", "d_mun"),
    ]


@pytest.mark.parametrize(
    "truth,released,kwargs,error,message",
    [
        ("nope", "rel", {"count": "n"}, InputDataError, "true table 'nope' is not a table"),
        ("truth", "nope", {"count": "n"}, InputDataError, "released table 'nope' is not a table"),
        ("truth", "rel", {"count": "m"}, InputDataError, "column 'm' (count column) not in"),
        ("truth", "rel", {"count": "n", "released_count": "x"}, InputDataError,
         "column 'x' (released count column) not in"),
        ("truth", "rel", {"count": "city"}, InputDataError, "not a number"),
        ("truth", "rel", {"count": "n", "hierarchy": ["region", "town"]}, InputDataError,
         "column 'town' (hierarchy column) not in table 'truth'"),
        ("truth", "rel", {"count": "n", "hierarchy": "region"}, SpecError,
         "hierarchy must be a list"),
        ("truth", "rel", {"count": "n", "tree": "destination"}, SpecError,
         "interleaves exactly two chains"),
        ("truth", "rel", {"count": "n", "released_count": "city"}, InputDataError,
         "not a number"),
        ("truth", "rel", {"count": 3}, SpecError, "count column must be a column name"),
    ],
)  # fmt: skip
def test_clear_errors(
    con: duckdb.DuckDBPyConnection,
    truth: str,
    released: str,
    kwargs: dict[str, object],
    error: type[Exception],
    message: str,
) -> None:
    _tables(con)
    args: dict[str, object] = {"hierarchy": GEO, **kwargs}
    with pytest.raises(error, match=re.escape(message)):
        evaluate(con, truth, released, **args)  # type: ignore[arg-type]


def test_type_mismatch(con: duckdb.DuckDBPyConnection) -> None:
    _tables(con)
    con.execute('CREATE TABLE rel_int AS SELECT 1 AS region, 2 AS city, 3 AS "count"').fetchall()
    with pytest.raises(InputDataError, match="column 'region' is VARCHAR in table 'truth' but"):
        evaluate(con, "truth", "rel_int", hierarchy=GEO, count="n")


def test_fdr_is_nan_free(con: duckdb.DuckDBPyConnection) -> None:
    _tables(con)
    rows = _rows(evaluate(con, "truth", "truth", hierarchy=GEO, count="n", released_count="n"))
    for r in rows:
        assert r["max_abs_error"] == 0
        assert not math.isnan(float(r["false_discovery_rate"]))  # type: ignore[arg-type]
