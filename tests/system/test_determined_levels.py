"""Levels the public domain determines (one child per parent) spend no budget (issue 16.2).

An O/D table over country > district > municipality with a single country has two such levels
in the destination tree (``d_country`` and ``o_country x d_country``): their counts are N. They
get rho 0 and sigma 0 in the ledger, with a note; the other levels share the whole budget.
"""

from __future__ import annotations

import json
import math
from typing import Any

import duckdb
import pytest

import inftda_sql
from inftda_sql.core.accounting import DETERMINED_NOTE, Budget, account
from tests.system.helpers import leaf_truth, released

TREE_MECHANISMS = ["inftda", "tda_l2", "tda_linf_solver", "hierarchical"]
HIERARCHY = [
    ["o_country", "o_district", "o_mun"],
    ["d_country", "d_district", "d_mun"],
]
LEAVES = ["o_country", "o_district", "o_mun", "d_country", "d_district", "d_mun"]


@pytest.fixture
def od(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    # one country, 3 districts with 3, 1 and 2 municipalities
    con.execute(
        "CREATE TABLE geo AS SELECT * FROM (VALUES ('PT', 'A', 'a1'), ('PT', 'A', 'a2'), "
        "('PT', 'A', 'a3'), ('PT', 'B', 'b1'), ('PT', 'C', 'c1'), ('PT', 'C', 'c2')) "
        "g(country, district, mun)"
    ).fetchall()
    for side in ("o", "d"):
        con.execute(
            f"CREATE VIEW geo_{side} AS SELECT country AS {side}_country, district AS "
            f"{side}_district, mun AS {side}_mun FROM geo"
        ).fetchall()
    con.execute(
        "CREATE TABLE trips AS SELECT o.*, d.*, (hash(o.o_mun || d.d_mun) % 7)::INTEGER AS n "
        "FROM geo_o o, geo_d d"
    ).fetchall()
    return con


def _release(con: duckdb.DuckDBPyConnection, mechanism: str = "inftda", **kw: Any) -> Any:
    return inftda_sql.release(
        con,
        "trips",
        hierarchy=HIERARCHY,
        domain=["geo_o", "geo_d"],
        tree="destination",
        count="n",
        mechanism=mechanism,
        output="out",
        overwrite=True,
        **kw,
    )


def _ledger(con: duckdb.DuckDBPyConnection, release_id: int) -> dict[str, Any]:
    cols = [d[0] for d in con.execute("DESCRIBE inftda_releases").fetchall()]
    row = con.execute(
        "SELECT * FROM inftda_releases WHERE release_id = $id", {"id": release_id}
    ).fetchall()[0]
    return dict(zip(cols, row, strict=True))


@pytest.mark.parametrize("mechanism", TREE_MECHANISMS)
def test_single_child_levels_spend_no_rho(od: duckdb.DuckDBPyConnection, mechanism: str) -> None:
    r = _release(od, mechanism, rho=0.3, seed=2)
    names = [lv.name for lv in r.levels[1:]]
    assert names[:2] == ["d_country", "o_country x d_country"]
    led = _ledger(od, r.release_id)
    assert led["level_names"] == names
    assert led["level_rho"][:2] == [0.0, 0.0] and led["level_sigma"][:2] == [0.0, 0.0]
    # the four other levels share all of rho: 0.3 / 4 each instead of 0.3 / 6
    assert led["level_rho"][2:] == pytest.approx([0.075] * 4, rel=1e-12)
    assert math.fsum(led["level_rho"]) == pytest.approx(0.3, rel=1e-12)
    before = account(Budget.from_args(rho=0.3), names)  # every level noised, as it used to be
    for new, old in zip(led["level_sigma"][2:], before.level_sigma[2:], strict=True):
        assert new == pytest.approx(old * math.sqrt(4 / 6), rel=1e-12)  # -18% noise
    notes = json.loads(led["details"])["level_notes"]
    assert notes == {"d_country": DETERMINED_NOTE, "o_country x d_country": DETERMINED_NOTE}
    assert [lv.noised_cells for lv in r.levels[1:3]] == [0, 0]
    assert [lv.sigma for lv in r.levels[1:3]] == [0.0, 0.0]
    assert "0 (determined)" in str(r.accounting)
    # the determined levels carry N (bounded DP: public), whatever the noise elsewhere
    assert od.execute("SELECT count FROM out_levels WHERE level IN (1, 2)").fetchall() == [
        (r.total,),
        (r.total,),
    ]


@pytest.mark.parametrize("mechanism", TREE_MECHANISMS)
def test_output_unchanged_under_an_infinite_budget(
    od: duckdb.DuckDBPyConnection, mechanism: str
) -> None:
    r = _release(od, mechanism, rho=math.inf)
    assert r.accounting.level_determined[:2] == (True, True)
    assert released(od, "out", LEAVES) == leaf_truth(od, "trips", LEAVES, "n")


def test_leaf_only_mechanisms_measure_their_leaves(od: duckdb.DuckDBPyConnection) -> None:
    r = _release(od, "vanilla_gauss", rho=0.3, seed=1)
    assert r.accounting.level_determined == (False,)
    assert r.accounting.level_rho == (0.3,)


def test_plan_of_the_domain_is_the_release_accounting(od: duckdb.DuckDBPyConnection) -> None:
    r = _release(od, rho=0.3, seed=2)
    p = inftda_sql.plan(
        con=od,
        hierarchy=HIERARCHY,
        domain=["geo_o", "geo_d"],
        tree="destination",
        rho=0.3,
        simulations=0,
    )
    assert [lv.sigma for lv in p.levels] == list(r.accounting.level_sigma)
    assert [lv.rho for lv in p.levels] == list(r.accounting.level_rho)


def test_split_weights_of_determined_levels_are_dropped(od: duckdb.DuckDBPyConnection) -> None:
    r = _release(od, rho=0.3, seed=2, split=[9, 9, 1, 1, 1, 3])
    assert r.accounting.level_rho[:2] == (0.0, 0.0)
    assert r.accounting.level_rho[2:] == pytest.approx((0.05, 0.05, 0.05, 0.15), rel=1e-12)
    with pytest.raises(inftda_sql.BudgetError, match="6 noised levels"):  # checked before data
        _release(od, rho=0.3, split=[1, 1, 1, 1])
