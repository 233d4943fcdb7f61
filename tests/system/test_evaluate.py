"""evaluate() end to end: exact releases score zero, noisy ones match a plain-Python oracle."""

from __future__ import annotations

import re
import struct
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb
import pytest

import inftda_sql
from inftda_sql._errors import InputDataError, SpecError
from inftda_sql._evaluate import evaluate
from inftda_sql._plot import plot_evaluation, plot_zoom
from inftda_sql.core.spec import parse_hierarchy
from inftda_sql.synthetic import paper_dataset
from tests.conftest import shared_path
from tests.system.helpers import make_geo, make_od, make_persons

INF = float("inf")
GEO = ["region", "province", "mun"]
OD = [["o_reg", "o_mun"], ["d_reg", "d_prov", "d_mun"]]


def _rows(rel: duckdb.DuckDBPyRelation) -> list[dict[str, Any]]:
    return [dict(zip(rel.columns, r, strict=True)) for r in rel.fetchall()]


def _assert_exact(rows: list[dict[str, Any]], n_levels: int) -> None:
    assert [r["level"] for r in rows] == list(range(n_levels + 1))
    for r in rows:
        assert r["max_abs_error"] == 0 and r["mean_abs_error"] == 0.0
        assert r["false_discovery_rate"] == 0.0 and r["false_negative_rate"] == 0.0
        assert r["cells_true"] == r["cells_released"]
        assert r["total_true"] == r["total_released"]


def oracle(
    con: duckdb.DuckDBPyConnection,
    truth_sql: str,
    released_sql: str,
    chains: Sequence[Sequence[str]],
    levels: Sequence[Sequence[int]],
) -> list[dict[str, Any]]:
    """The metrics in plain Python: dictionaries of cells per level, no SQL aggregation."""
    cols = [c for chain in chains for c in chain]
    sides = []
    for sql in (truth_sql, released_sql):
        leaves = con.execute(f"SELECT {', '.join(cols)}, v FROM {sql}").fetchall()
        sides.append(leaves)
    out = []
    for level, depths in enumerate(levels):
        idx = []
        offset = 0
        for chain, depth in zip(chains, depths, strict=True):
            idx += list(range(offset, offset + depth))
            offset += len(chain)
        agg: list[dict[tuple[Any, ...], int]] = []
        for leaves in sides:
            d: dict[tuple[Any, ...], int] = defaultdict(int)
            for row in leaves:
                d[tuple(row[i] for i in idx)] += row[-1]
            agg.append(d)
        t, r = agg
        cells = {k for k in (*t, *r) if t.get(k, 0) != 0 or r.get(k, 0) != 0} or {()}
        errs = [abs(t.get(k, 0) - r.get(k, 0)) for k in cells]
        rel_pos = [k for k in cells if r.get(k, 0) > 0]
        true_pos = [k for k in cells if t.get(k, 0) > 0]
        out.append(
            {
                "level": level,
                "cells_true": len(true_pos),
                "cells_released": len(rel_pos),
                "max_abs_error": max(errs),
                "mean_abs_error": sum(errs) / len(errs),
                "false_discovery_rate": (
                    sum(1 for k in rel_pos if t.get(k, 0) == 0) / len(rel_pos) if rel_pos else 0.0
                ),
                "false_negative_rate": (
                    sum(1 for k in true_pos if r.get(k, 0) <= 0) / len(true_pos)
                    if true_pos
                    else 0.0
                ),
                "total_true": sum(t.values()),
                "total_released": sum(r.values()),
            }
        )
    return out


def _compare(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        for key, value in w.items():
            assert g[key] == pytest.approx(value), (g["level"], key)


def test_exact_release_one_chain(con: duckdb.DuckDBPyConnection) -> None:
    make_geo(con)
    make_persons(con)
    inftda_sql.release(con, "persons", hierarchy=GEO, domain="geo", rho=INF)
    rows = _rows(evaluate(con, "persons", "persons_private", hierarchy=GEO))
    _assert_exact(rows, 3)
    assert [r["level_name"] for r in rows] == ["root", "region", "province", "mun"]
    assert [r["cells_true"] for r in rows] == [1, 2, 3, 4]


@pytest.mark.parametrize("tree", ["destination", "origin"])
def test_exact_release_od_trees(con: duckdb.DuckDBPyConnection, tree: str) -> None:
    make_od(con)
    inftda_sql.release(
        con, "od", hierarchy=OD, domain=["geo_o", "geo_d"], tree=tree, rho=INF, count="n",
        output="out",
    )  # fmt: skip
    ev = evaluate(con, "od", "out", hierarchy=OD, tree=tree, count="n")
    rows = _rows(ev)
    _assert_exact(rows, 5)
    spec = parse_hierarchy(OD, tree)
    assert [r["level_name"] for r in rows] == [spec.level_name(lv) for lv in range(6)]
    if tree == "destination":
        assert [r["level_name"] for r in rows] == [
            "root", "d_reg", "o_reg x d_reg", "o_reg x d_prov", "o_mun x d_prov", "o_mun x d_mun",
        ]  # fmt: skip
        # destination regions X (14) and Y (9); then (A,X) (A,Y) (B,X) (B,Y) ...
        assert [r["cells_true"] for r in rows] == [1, 2, 4, 5, 5, 5]


def test_od_destination_levels_by_hand(con: duckdb.DuckDBPyConnection) -> None:
    """A hand-perturbed O/D release: every level checked against numbers worked out by hand."""
    make_od(con)
    # truth leaves: a1>x1a 4, a1>y1a 2, a2>x2a 9, b1>x1b 1, b1>y1a 7
    con.execute(
        """CREATE TABLE rel AS SELECT * FROM (VALUES
            ('A','a1','X','x1','x1a', 5), ('A','a2','X','x2','x2a', 9),
            ('B','b1','X','x1','x1b', 2), ('B','b1','Y','y1','y1a', 7)
        ) t(o_reg, o_mun, d_reg, d_prov, d_mun, "count")"""
    ).fetchall()
    rows = _rows(evaluate(con, "od", "rel", hierarchy=OD, tree="destination", count="n"))
    # level 1 (d_reg): X 14 vs 16, Y 9 vs 7
    assert (rows[1]["max_abs_error"], rows[1]["mean_abs_error"]) == (2, 2.0)
    # level 2 (o_reg x d_reg): AX 13/14, AY 2/0, BX 1/2, BY 7/7 -> 1, 2, 1, 0
    assert (rows[2]["max_abs_error"], rows[2]["mean_abs_error"]) == (2, 1.0)
    assert rows[2]["false_negative_rate"] == 0.25 and rows[2]["false_discovery_rate"] == 0.0
    # level 3 (o_reg x d_prov): A x1 4/5, A x2 9/9, A y1 2/0, B x1 1/2, B y1 7/7
    assert (rows[3]["max_abs_error"], rows[3]["cells_true"], rows[3]["cells_released"]) == (2, 5, 4)
    # leaves: errors 1, 2, 0, 1, 0 over 5 cells
    assert (rows[5]["max_abs_error"], rows[5]["mean_abs_error"]) == (2, 0.8)
    assert rows[5]["false_negative_rate"] == 0.2
    assert [r["total_released"] for r in rows] == [23] * 6


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("tree", ["destination", "origin"])
def test_noisy_release_matches_python_oracle(
    con: duckdb.DuckDBPyConnection, seed: int, tree: str
) -> None:
    make_od(con)
    inftda_sql.release(
        con, "od", hierarchy=OD, domain=["geo_o", "geo_d"], tree=tree, rho=0.5, count="n",
        output="out", seed=seed, overwrite=True,
    )  # fmt: skip
    got = _rows(evaluate(con, "od_micro", "out", hierarchy=OD, tree=tree))
    spec = parse_hierarchy(OD, tree)
    want = oracle(
        con,
        "(SELECT *, n AS v FROM od)",
        '(SELECT *, "count" AS v FROM out)',
        spec.chains,
        spec.levels,
    )
    _compare(got, want)


def test_noisy_release_one_chain_sparse(con: duckdb.DuckDBPyConnection) -> None:
    """A sparse input at a small budget: false discoveries do occur and are counted right."""
    con.execute(
        "CREATE TABLE base AS SELECT i, 'r' || (i // 10) AS region, 'm' || i AS mun "
        "FROM range(60) t(i)"
    ).fetchall()
    con.execute("CREATE VIEW geo AS SELECT region, mun FROM base").fetchall()
    # one area in six has records, 1..23 of them
    con.execute(
        "CREATE TABLE p AS SELECT region, mun, (i * 7) % 23 + 1 AS n FROM base WHERE i % 6 = 0"
    ).fetchall()
    fdr_seen = 0.0
    for seed in range(5):
        inftda_sql.release(
            con, "p", hierarchy=["region", "mun"], domain="geo", rho=0.05, count="n",
            output="p_out", seed=seed, overwrite=True,
        )  # fmt: skip
        got = _rows(evaluate(con, "p", "p_out", hierarchy=["region", "mun"], count="n"))
        spec = parse_hierarchy(["region", "mun"])
        want = oracle(
            con, "(SELECT *, n AS v FROM p)", '(SELECT *, "count" AS v FROM p_out)',
            spec.chains, spec.levels,
        )  # fmt: skip
        _compare(got, want)
        fdr_seen = max(fdr_seen, got[-1]["false_discovery_rate"])
    assert fdr_seen > 0  # the oracle comparison covered non-trivial false discoveries


def test_never_writes(con: duckdb.DuckDBPyConnection) -> None:
    make_geo(con)
    make_persons(con)
    inftda_sql.release(con, "persons", hierarchy=GEO, domain="geo", rho=1.0, seed=0)
    before = con.execute(
        "SELECT table_name, table_type FROM information_schema.tables ORDER BY ALL"
    ).fetchall()
    ledger = con.execute("SELECT count(*) FROM inftda_releases").fetchall()
    evaluate(con, "persons", "persons_private", hierarchy=GEO).fetchall()
    after = con.execute(
        "SELECT table_name, table_type FROM information_schema.tables ORDER BY ALL"
    ).fetchall()
    assert before == after
    assert con.execute("SELECT count(*) FROM inftda_releases").fetchall() == ledger


@pytest.mark.shared
def test_exact_release_portugal(con: duckdb.DuckDBPyConnection) -> None:
    data = shared_path("data", "pt_census2021_commuting_muni.parquet")
    geo = shared_path("data", "pt_census2021_commuting_muni_geo.parquet")
    con.execute(f"CREATE VIEW pt AS SELECT * FROM '{data}'").fetchall()
    for side in ("o", "d"):
        con.execute(
            f"CREATE VIEW geo_{side} AS SELECT country AS {side}_country, district AS "
            f"{side}_district, municipality AS {side}_municipality FROM '{geo}'"
        ).fetchall()
    hier = [[f"{s}_country", f"{s}_district", f"{s}_municipality"] for s in ("o", "d")]
    inftda_sql.release(
        con, "pt", hierarchy=hier, domain=["geo_o", "geo_d"], tree="destination", rho=INF,
        count="count", output="pt_out",
    )  # fmt: skip
    rows = _rows(evaluate(con, "pt", "pt_out", hierarchy=hier, tree="destination", count="count"))
    _assert_exact(rows, 6)
    assert rows[-1]["cells_true"] == 17_265 and rows[0]["total_true"] == 1_884_550


# --- plots (matplotlib is optional; these need it) -------------------------------------------

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def _noisy_od_runs(con: duckdb.DuckDBPyConnection, runs: int) -> list[duckdb.DuckDBPyRelation]:
    out = []
    for seed in range(runs):
        inftda_sql.release(
            con, "od", hierarchy=OD, domain=["geo_o", "geo_d"], tree="destination", rho=0.2,
            count="n", output="out", seed=seed, overwrite=True,
        )  # fmt: skip
        out.append(evaluate(con, "od", "out", hierarchy=OD, tree="destination", count="n"))
    return out


def test_plot_evaluation_single_and_compared(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    pytest.importorskip("matplotlib")
    make_od(con)
    runs = _noisy_od_runs(con, 4)
    one = plot_evaluation(runs[0], tmp_path / "one.png", title="one run", label="inftda")
    many = plot_evaluation(
        runs, tmp_path / "sub" / "many.png", label=["a", "a", "b", "b"],
        metrics=("max_abs_error", "false_discovery_rate", "false_negative_rate"),
    )  # fmt: skip
    for path in (one, many):
        assert path.exists() and path.stat().st_size > 20_000
    width, height = _png_size(many)
    assert width > _png_size(one)[0] and height > 300  # three panels are wider than two


def test_plot_zoom(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    d = paper_dataset(con, "random", "sparse")
    inftda_sql.release(
        con, d.trips, hierarchy=d.hierarchy, domain=[d.geo_origin, d.geo_destination],
        tree="destination", rho=0.05, count=d.count, output="out", seed=0,
    )  # fmt: skip
    path = plot_zoom(
        con, d.trips, "out", tmp_path / "zoom.png", hierarchy=d.hierarchy, tree="destination",
        count=d.count, max_points_per_level=300,
    )  # fmt: skip
    assert path == tmp_path / "zoom.png" and path.stat().st_size > 50_000
    width, height = _png_size(path)
    assert width > height > 400  # 8 levels: two rows of four panels


def test_plot_errors(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    make_od(con)
    runs = _noisy_od_runs(con, 2)
    with pytest.raises(SpecError, match="one label per evaluation: 2 evaluation"):
        plot_evaluation(runs, tmp_path / "x.png", label=["a"])
    with pytest.raises(SpecError, match=r"ending in \.png"):
        plot_evaluation(runs[0], tmp_path / "x.pdf")
    with pytest.raises(SpecError, match="metric 'rmse' is not a column"):
        plot_evaluation(runs[0], tmp_path / "x.png", metrics=["rmse"])
    with pytest.raises(SpecError, match="relation evaluate"):
        plot_evaluation([1, 2], tmp_path / "x.png")
    with pytest.raises(SpecError, match="max_points_per_level must be at least 100"):
        plot_zoom(con, "od", "out", tmp_path / "z.png", hierarchy=OD, count="n",
                  max_points_per_level=10)  # fmt: skip
    with pytest.raises(InputDataError, match="released table 'nope'"):
        plot_zoom(con, "od", "nope", tmp_path / "z.png", hierarchy=OD, count="n")
    assert not list(tmp_path.iterdir())


def test_plot_without_matplotlib(
    con: duckdb.DuckDBPyConnection, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_od(con)
    ev = evaluate(con, "od", "od", hierarchy=OD, count="n", released_count="n")
    for name in ("matplotlib", "matplotlib.figure", "matplotlib.backends.backend_agg"):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(ImportError, match=re.escape("pip install 'inftda-sql[plot]'")):
        plot_evaluation(ev, tmp_path / "x.png")


def test_an_evaluation_prints_every_column(
    con: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Printed on an 80-column terminal (or shown in a notebook) an evaluation shows all its
    columns and rows (DuckDB's display of a relation drops those that do not fit: "10 columns
    (7 shown)"); it still reads as the relation it was, and as an Arrow stream."""
    import pyarrow as pa

    monkeypatch.setenv("COLUMNS", "80")
    make_geo(con)
    make_persons(con)
    inftda_sql.release(con, "persons", hierarchy=GEO, domain="geo", rho=INF)
    ev = evaluate(con, "persons", "persons_private", hierarchy=GEO)
    lines = str(ev).splitlines()
    assert lines[0].split() == list(ev.columns) and len(ev.columns) == 10
    assert [line.split()[:2] for line in lines[1:]] == [
        ["0", "root"], ["1", "region"], ["2", "province"], ["3", "mun"]
    ]  # fmt: skip
    assert repr(ev) == str(ev) and "shown" not in str(ev)
    html = ev._repr_html_()
    assert all(f"<th>{c}</th>" in html for c in ev.columns)
    # the relation's API, and an Arrow stream DuckDB scans
    assert ev.project("level").fetchall() == [(0,), (1,), (2,), (3,)]
    assert pa.table(ev).column_names == ev.columns
    assert con.sql("SELECT max(max_abs_error) FROM ev").fetchall() == [(0,)]


def test_evaluate_count_of_counts_reads_the_release_settings_from_the_ledger(
    con: duckdb.DuckDBPyConnection,
) -> None:
    """As docs/how-to/count-of-counts.md shows: evaluate_count_of_counts(con, "persons",
    "household_sizes"); the explicit arguments still work, and a table that is no such release
    says what to pass."""
    con.execute(
        "CREATE TABLE persons AS SELECT * FROM (VALUES (1, 'A', 'a1'), (1, 'A', 'a1'), "
        "(2, 'A', 'a2')) t(household_id, state, county)"
    ).fetchall()
    con.execute(
        "CREATE TABLE households_per_county AS SELECT * FROM (VALUES ('A', 'a1', 1), "
        "('A', 'a2', 1)) t(state, county, households)"
    ).fetchall()
    inftda_sql.release_count_of_counts(
        con, "persons", group="household_id", hierarchy=["state", "county"],
        groups="households_per_county", max_size=5, epsilon=INF, output="household_sizes",
    )  # fmt: skip
    found = inftda_sql.evaluate_count_of_counts(con, "persons", "household_sizes").fetchall()
    given = inftda_sql.evaluate_count_of_counts(
        con, "persons", "household_sizes", group="household_id", hierarchy=["state", "county"]
    ).fetchall()
    assert found == given and [r[3] for r in found] == [0.0, 0.0, 0.0]  # exact: no error
    with pytest.raises(SpecError, match="pass group= and hierarchy="):
        inftda_sql.evaluate_count_of_counts(con, "persons", "households_per_county")
