"""The baseline mechanisms end to end: release(..., mechanism=...) on in-memory DuckDB."""

from __future__ import annotations

import sys
from typing import Any

import duckdb
import numpy as np
import pytest

import inftda_sql
from inftda_sql.core.accounting import stability_histogram
from tests.system.helpers import leaf_truth, make_geo, make_od, make_persons, released, snapshot

INF = float("inf")
GEO = ["region", "province", "mun"]
OD = [["o_reg", "o_mun"], ["d_reg", "d_prov", "d_mun"]]
OD_COLS = [c for chain in OD for c in chain]
ZCDP_BASELINES = ["vanilla_gauss", "tda_l2", "tda_linf_solver", "hierarchical"]
TOPDOWN = ["tda_l2", "tda_linf_solver"]


def _ledger(con: duckdb.DuckDBPyConnection, release_id: int) -> dict[str, Any]:
    cols = [d[0] for d in con.execute("DESCRIBE inftda_releases").fetchall()]
    row = con.execute(
        "SELECT * FROM inftda_releases WHERE release_id = $id", {"id": release_id}
    ).fetchall()[0]
    return dict(zip(cols, row, strict=True))


def _sparse_world(con: duckdb.DuckDBPyConnection) -> None:
    """A 400-leaf domain with records in 11 cells (30 each)."""
    con.execute(
        "CREATE TABLE wgeo AS SELECT 'R' || (i // 100) AS region, 'P' || (i // 10) AS province, "
        "'M' || i AS mun FROM range(400) r(i)"
    ).fetchall()
    con.execute(
        "CREATE TABLE wpeople AS SELECT 'R' || (i // 100) AS region, 'P' || (i // 10) AS "
        "province, 'M' || i AS mun FROM range(400) r(i), range(30) k(j) WHERE i % 37 = 0"
    ).fetchall()


def _od(con: duckdb.DuckDBPyConnection, mechanism: str, tree: str, **kw: Any) -> Any:
    return inftda_sql.release(
        con,
        "od",
        hierarchy=OD,
        domain=["geo_o", "geo_d"],
        tree=tree,
        count="n",
        mechanism=mechanism,
        output="out",
        overwrite=True,
        **kw,
    )


# ------------------------------------------------------------------------------------------------
# infinite budget: the exact leaf table
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mechanism", ZCDP_BASELINES)
def test_exact_one_chain(con: duckdb.DuckDBPyConnection, mechanism: str) -> None:
    make_geo(con)
    make_persons(con)
    r = inftda_sql.release(
        con, "persons", hierarchy=GEO, domain="geo", rho=INF, mechanism=mechanism
    )
    assert released(con, "persons_private", GEO) == leaf_truth(con, "persons", GEO)
    assert r.total == 16 and r.mechanism == mechanism
    assert r.non_private == ("infinite budget (no noise)",)


@pytest.mark.parametrize("tree", ["destination", "origin"])
@pytest.mark.parametrize("mechanism", ZCDP_BASELINES)
def test_exact_od_trees(con: duckdb.DuckDBPyConnection, mechanism: str, tree: str) -> None:
    make_od(con)
    r = _od(con, mechanism, tree, rho=INF)
    assert released(con, "out", OD_COLS) == leaf_truth(con, "od", OD_COLS, "n")
    assert len(r.levels) == 6 and r.total == 23


@pytest.mark.parametrize("mechanism", ZCDP_BASELINES)
def test_exact_unbounded_and_several_records_per_unit(
    con: duckdb.DuckDBPyConnection, mechanism: str
) -> None:
    """A noised root in the accounting (unbounded, or m > 1) changes nothing at rho = inf."""
    make_od(con)
    for kw in ({"privacy": "unbounded"}, {"contribution": 3}):
        _od(con, mechanism, "destination", rho=INF, **kw)
        assert released(con, "out", OD_COLS) == leaf_truth(con, "od", OD_COLS, "n")


def test_stability_histogram_exact_above_threshold(con: duckdb.DuckDBPyConnection) -> None:
    """Huge epsilon, tiny delta: true counts at or above the threshold come out exactly."""
    make_geo(con)
    make_persons(con)
    sh = stability_histogram(19.0, 1e-9)
    assert sh.threshold == 4  # persons: counts 5, 3, 7, 1 -> only 5 and 7 pass
    inftda_sql.release(
        con,
        "persons",
        hierarchy=GEO,
        domain="geo",
        epsilon=19.0,
        delta=1e-9,
        mechanism="stability_histogram",
        seed=5,
    )
    truth = [row for row in leaf_truth(con, "persons", GEO) if row[-1] >= sh.threshold]
    assert released(con, "persons_private", GEO) == truth
    assert len(truth) == 2
    # epsilon = inf is the noise-free limit: threshold m + 1
    inftda_sql.release(
        con,
        "persons",
        hierarchy=GEO,
        domain="geo",
        epsilon=INF,
        delta=1e-9,
        mechanism="stability_histogram",
        contribution=3,
        output="o3",
    )
    assert released(con, "o3", GEO) == [
        row for row in leaf_truth(con, "persons", GEO) if row[-1] >= 4
    ]


# ------------------------------------------------------------------------------------------------
# finite budgets: what each mechanism guarantees
# ------------------------------------------------------------------------------------------------


def _outside_domain(con: duckdb.DuckDBPyConnection, table: str) -> int:
    return int(
        con.execute(
            f"SELECT count(*) FROM {table} ANTI JOIN wgeo USING (region, province, mun)"
        ).fetchall()[0][0]
    )


def _false_positives(con: duckdb.DuckDBPyConnection, table: str) -> int:
    return int(
        con.execute(
            f"SELECT count(*) FROM {table} ANTI JOIN (SELECT DISTINCT * FROM wpeople) "
            "USING (region, province, mun)"
        ).fetchall()[0][0]
    )


@pytest.mark.parametrize("mechanism", TOPDOWN)
def test_topdown_baselines_consistent_non_negative(
    con: duckdb.DuckDBPyConnection, mechanism: str
) -> None:
    _sparse_world(con)
    for seed in range(3):
        r = inftda_sql.release(
            con,
            "wpeople",
            hierarchy=GEO,
            domain="wgeo",
            rho=0.5,
            mechanism=mechanism,
            seed=seed,
            output="o",
            overwrite=True,
        )
        counts = np.array([row[-1] for row in released(con, "o", GEO)])
        assert counts.dtype.kind == "i" and (counts > 0).all()
        assert counts.sum() == 330 == r.total  # bounded: N kept
        assert _outside_domain(con, "o") == 0
        # every level of the TopDown pass is exactly the sums of the released leaves
        per_level = dict(
            con.execute(
                "SELECT level, count(*) FILTER (count > 0) FROM o_levels GROUP BY 1"
            ).fetchall()
        )
        assert per_level == {lv.level: lv.surviving_cells for lv in r.levels}
        assert r.levels[1].parents == 1 and r.levels[1].noised_cells == 4


def test_vanilla_gauss_negative_and_false_positive(con: duckdb.DuckDBPyConnection) -> None:
    _sparse_world(con)
    negative = false_pos = 0
    for seed in range(3):
        r = inftda_sql.release(
            con,
            "wpeople",
            hierarchy=GEO,
            domain="wgeo",
            rho=0.5,
            mechanism="vanilla_gauss",
            seed=seed,
            output="o",
            overwrite=True,
        )
        rows = released(con, "o", GEO)
        counts = np.array([row[-1] for row in rows])
        assert counts.dtype.kind == "i" and (counts != 0).all()
        assert _outside_domain(con, "o") == 0
        assert r.levels[-1].noised_cells == 400 and r.levels[-1].parents == 40
        assert r.levels[-1].surviving_cells == len(rows)
        assert r.levels[-1].sigma == r.accounting.level_sigma[-1]
        negative += int((counts < 0).sum())
        false_pos += _false_positives(con, "o")
    assert negative > 0 and false_pos > 0  # the baseline's nature


def test_stability_histogram_no_false_positives(con: duckdb.DuckDBPyConnection) -> None:
    _sparse_world(con)
    sh = stability_histogram(2.0, 1e-6)
    kept = 0
    for seed in range(3):
        r = inftda_sql.release(
            con,
            "wpeople",
            hierarchy=GEO,
            domain="wgeo",
            epsilon=2.0,
            delta=1e-6,
            mechanism="stability_histogram",
            seed=seed,
            output="o",
            overwrite=True,
        )
        counts = np.array([row[-1] for row in released(con, "o", GEO)], dtype=np.int64)
        assert (counts >= sh.threshold).all()
        assert _false_positives(con, "o") == 0
        kept += counts.size
        assert r.levels[-1].noised_cells == 0  # how many cells are positive is private
        led = _ledger(con, r.release_id)
        assert led["guarantee"] == "approxDP" and led["rho"] is None
        assert (led["epsilon"], led["delta"]) == (2.0, 1e-6)
        assert led["mechanism"] == "stability_histogram"
    assert kept > 0 and sh.threshold < 30


def test_hierarchical_integers_in_domain(con: duckdb.DuckDBPyConnection) -> None:
    _sparse_world(con)
    totals = set()
    negative = 0
    for seed in range(3):
        r = inftda_sql.release(
            con,
            "wpeople",
            hierarchy=GEO,
            domain="wgeo",
            rho=0.5,
            mechanism="hierarchical",
            seed=seed,
            output="o",
            overwrite=True,
        )
        counts = np.array([row[-1] for row in released(con, "o", GEO)])
        assert counts.dtype.kind == "i" and (counts != 0).all()
        assert _outside_domain(con, "o") == 0
        assert [lv.noised_cells for lv in r.levels] == [0, 4, 40, 400]
        assert [lv.parents for lv in r.levels] == [0, 1, 4, 40]
        negative += int((counts < 0).sum())
        totals.add(int(counts.sum()))
    # the exact root makes the estimates sum to N, and the top-down rounding keeps the sum
    assert totals == {330} and negative > 0


@pytest.mark.parametrize(
    ("mechanism", "guarantee"),
    [*((m, "zCDP") for m in ZCDP_BASELINES), ("stability_histogram", "approxDP")],
)
def test_ledger_guarantee_and_progress(
    con: duckdb.DuckDBPyConnection, mechanism: str, guarantee: str
) -> None:
    make_od(con)
    seen: list[Any] = []
    r = _od(con, mechanism, "destination", epsilon=2.0, delta=1e-6, seed=1, progress=seen.append)
    led = _ledger(con, r.release_id)
    assert led["mechanism"] == mechanism and led["guarantee"] == guarantee
    assert (led["rho"] is None) == (guarantee == "approxDP")
    assert tuple(seen) == r.levels and [lv.level for lv in seen] == list(range(6))
    assert con.execute("SELECT count(*) FROM out").fetchall()[0][0] == seen[-1].surviving_cells


# ------------------------------------------------------------------------------------------------
# refusals: nothing is written
# ------------------------------------------------------------------------------------------------


def _huge_od(con: duckdb.DuckDBPyConnection) -> None:
    """7,264 x 7,264 = 52,765,696 leaf cells, a few trips."""
    for side in ("o", "d"):
        con.execute(
            f"CREATE TABLE big_{side} AS SELECT 'R' AS {side}_reg, 'm' || i AS {side}_mun "
            "FROM range(7264) r(i)"
        ).fetchall()
    con.execute(
        "CREATE TABLE trips AS SELECT * FROM (VALUES ('R', 'm1', 'R', 'm2'), ('R', 'm5', 'R', "
        "'m1')) t(o_reg, o_mun, d_reg, d_mun)"
    ).fetchall()


@pytest.mark.parametrize(
    ("mechanism", "message"),
    [
        (
            "vanilla_gauss",
            "mechanism 'vanilla_gauss' noises every cell of the full domain: 52,765,696 leaf "
            "cells (the full domain) exceed max_cells=50,000,000; raise max_cells= or use "
            "mechanism='inftda'",
        ),
        (
            "hierarchical",
            "mechanism 'hierarchical' noises every cell of the full domain: 52,772,963 nodes "
            "(all levels of the full domain tree) exceed max_cells=50,000,000; raise max_cells= "
            "or use mechanism='inftda'",
        ),
    ],
)
def test_full_domain_refusal_writes_nothing(
    con: duckdb.DuckDBPyConnection, mechanism: str, message: str
) -> None:
    _huge_od(con)
    before = snapshot(con)
    with pytest.raises(inftda_sql.SpecError) as err:
        inftda_sql.release(
            con,
            "trips",
            hierarchy=[["o_reg", "o_mun"], ["d_reg", "d_mun"]],
            domain=["big_o", "big_d"],
            tree="destination",
            rho=1.0,
            mechanism=mechanism,
        )
    assert str(err.value) == message
    assert snapshot(con) == before


def test_stability_histogram_refuses_rho(con: duckdb.DuckDBPyConnection) -> None:
    make_geo(con)
    make_persons(con)
    before = snapshot(con)
    with pytest.raises(
        inftda_sql.BudgetError, match=r"pass epsilon= and delta= instead of rho=0.5"
    ):
        inftda_sql.release(
            con, "persons", hierarchy=GEO, domain="geo", rho=0.5, mechanism="stability_histogram"
        )
    assert snapshot(con) == before


def test_solver_missing(con: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch) -> None:
    make_geo(con)
    make_persons(con)
    before = snapshot(con)
    monkeypatch.setitem(sys.modules, "scipy", None)
    with pytest.raises(inftda_sql.SpecError, match=r"pip install 'inftda-sql\[solver\]'"):
        inftda_sql.release(
            con, "persons", hierarchy=GEO, domain="geo", rho=0.5, mechanism="tda_linf_solver"
        )
    assert snapshot(con) == before


def test_max_cells_passed_through_release(con: duckdb.DuckDBPyConnection) -> None:
    """release(max_cells=) reaches the mechanism (regression: it was once ignored)."""
    make_geo(con)
    make_persons(con)
    before = snapshot(con)
    with pytest.raises(inftda_sql.SpecError, match=r"7 leaf cells.*max_cells=3"):
        inftda_sql.release(
            con,
            "persons",
            hierarchy=GEO,
            domain="geo",
            rho=1.0,
            mechanism="vanilla_gauss",
            max_cells=3,
        )
    assert snapshot(con) == before
    inftda_sql.release(
        con, "persons", hierarchy=GEO, domain="geo", rho=1.0, mechanism="vanilla_gauss", max_cells=7
    )


@pytest.mark.parametrize("mechanism", ["vanilla_gauss", "stability_histogram"])
def test_leaf_only_mechanisms_spend_nothing_on_a_root(
    con: duckdb.DuckDBPyConnection, mechanism: str
) -> None:
    make_geo(con)
    make_persons(con)
    r = inftda_sql.release(
        con,
        "persons",
        hierarchy=GEO,
        domain="geo",
        epsilon=1.0,
        delta=1e-6,
        mechanism=mechanism,
        privacy="unbounded",
        contribution=2,
    )
    assert r.accounting.level_names == ("mun",)
    assert sum(r.accounting.level_rho) == pytest.approx(r.accounting.budget.rho)
