from __future__ import annotations

import duckdb
import pytest

import inftda_sql
from inftda_sql._planning import plan
from inftda_sql.core.accounting import Budget, account
from tests.system.helpers import make_od


def test_sigma_comes_from_the_accounting() -> None:
    p = plan([4, 16, 64], rho=0.3, simulations=0)
    acct = account(Budget.from_args(rho=0.3), ["level 1", "level 2", "level 3"])
    assert [lv.sigma for lv in p.levels] == list(acct.level_sigma)
    assert [lv.rho for lv in p.levels] == list(acct.level_rho)


def test_bound_grows_with_depth_and_holds_in_simulation() -> None:
    p = plan([10, 60, 400], rho=0.05, simulations=30, total=50_000, seed=4)
    bounds = [lv.bound for lv in p.levels]
    assert bounds == sorted(bounds) and bounds[0] > 0
    for lv in p.levels:
        assert lv.simulated is not None and lv.simulated_worst is not None
        assert 0 < lv.simulated <= lv.simulated_worst <= lv.bound  # beta = 0.05, 30 runs


def test_infinite_budget_simulates_exactly() -> None:
    p = plan([3, 9], rho=float("inf"), simulations=3, total=1_000)
    assert [lv.simulated for lv in p.levels] == [0.0, 0.0]
    assert [lv.bound for lv in p.levels] == [0.0, 0.0]


def test_optimal_split_helps_the_target_level() -> None:
    uniform = plan([20, 107, 7900], epsilon=1.0, delta=1e-8, simulations=0)
    target1 = plan(
        [20, 107, 7900], epsilon=1.0, delta=1e-8, simulations=0, split="optimal", target_levels=[1]
    )
    assert target1.levels[0].bound < uniform.levels[0].bound
    assert sum(target1.split) == pytest.approx(1.0)
    leaves = plan(
        [20, 107, 7900],
        epsilon=1.0,
        delta=1e-8,
        simulations=0,
        split="optimal",
        target_levels=["level 3"],
    )
    assert leaves.levels[2].bound <= uniform.levels[2].bound + 1e-9


def test_unbounded_plans_the_root_too() -> None:
    p = plan([5, 25], rho=1.0, privacy="unbounded", simulations=2, total=1000)
    assert p.accounting.level_names[0] == "root"
    assert len(p.levels) == 2


def test_shape_from_a_domain(con: duckdb.DuckDBPyConnection) -> None:
    make_od(con)
    p = plan(
        con=con,
        hierarchy=[["o_reg", "o_mun"], ["d_reg", "d_prov", "d_mun"]],
        domain=["geo_o", "geo_d"],
        tree="destination",
        rho=1.0,
        simulations=0,
    )
    # origin 2 > 3 nodes, destination 2 > 3 > 4 nodes, destination tree
    assert [lv.nodes for lv in p.levels] == [2, 4, 6, 9, 12]
    assert p.levels[-1].name == "o_mun x d_mun"


@pytest.mark.parametrize(
    "kw,fragment",
    [
        ({"shape": [3, 0]}, "positive integers"),
        ({"shape": "3,9"}, "nodes per level"),
        ({"shape": [3, 9], "split": "best"}, "'optimal'"),
        ({"shape": [3, 9], "target_levels": [1]}, "split='optimal'"),
        ({"shape": [3, 9], "split": "optimal", "target_levels": [7]}, "1..2"),
        ({"shape": [9, 3]}, "non-decreasing"),
        ({}, "shape="),
    ],
)
def test_bad_plans(kw: dict, fragment: str) -> None:
    with pytest.raises(inftda_sql.SpecError, match=fragment):
        plan(rho=1.0, **kw)


def test_levels_with_one_child_per_parent_spend_nothing() -> None:
    """A shape whose level repeats the one above (18 -> 18) is a level of one child per parent:
    rho 0 there, and the other levels share the budget."""
    p = plan([1, 18, 18, 278], rho=0.4, simulations=3, total=10_000)
    assert [lv.rho for lv in p.levels] == [0.0, pytest.approx(0.2), 0.0, pytest.approx(0.2)]
    assert [lv.sigma for lv in p.levels][::2] == [0.0, 0.0]
    assert p.levels[0].bound == 0.0 and p.levels[0].simulated == 0.0
    assert p.levels[2].bound == p.levels[1].bound  # a repeated level adds no error
    assert p.split == pytest.approx((0.0, 0.5, 0.0, 0.5))
    best = plan([1, 18, 18, 278], rho=0.4, simulations=0, split="optimal", target_levels=[1, 3])
    assert best.levels[0].rho == 0.0 and best.levels[2].rho == 0.0
    assert best.levels[1].rho > best.levels[3].rho  # level 3's bound is level 2's


def test_domain_plan_knows_the_determined_levels(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(
        "CREATE TABLE g AS SELECT 'PT' AS country, 'd' || (i // 3) AS district, 'm' || i AS mun "
        "FROM range(9) t(i)"
    ).fetchall()
    p = plan(con=con, hierarchy=["country", "district", "mun"], domain="g", rho=0.2, simulations=0)
    assert [lv.nodes for lv in p.levels] == [1, 3, 9]
    assert [lv.rho for lv in p.levels] == [0.0, pytest.approx(0.1), pytest.approx(0.1)]
