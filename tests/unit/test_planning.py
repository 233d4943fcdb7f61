from __future__ import annotations

import math
from pathlib import Path

import duckdb
import pytest

import inftda_sql
from inftda_sql._planning import plan
from inftda_sql.core.accounting import Budget, account
from inftda_sql.core.bounds import noise_quantile, noise_tail
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
        ({"hierarchy": ["a"]}, "and domain="),
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


def test_the_bound_is_explained_next_to_the_simulation() -> None:
    """The bound is the sum the text spells out (2 x the per-level noise bounds, plus the root's
    when it is noised), the text says what it guarantees, and why the simulation is smaller."""
    p = plan([4, 16, 64], rho=0.3, simulations=3, total=10_000, beta=0.1)
    noise = [lv.noise_bound for lv in p.levels]
    assert p.root_noise_bound is None
    for i, lv in enumerate(p.levels):
        assert lv.bound == pytest.approx(2 * sum(noise[: i + 1]))
        # the exact discrete Gaussian tail, union over every node of the 3 levels (issue 25)
        assert lv.noise_bound == noise_quantile(lv.sigma, 0.1 / (3 * lv.nodes))
        assert noise_tail(int(lv.noise_bound), lv.sigma) <= 0.1 / (3 * lv.nodes)
        assert lv.noise_bound <= lv.sigma * (2 * math.log(2 * lv.nodes * 3 / 0.1)) ** 0.5
    text = " ".join(str(p).split("\n\n", 1)[1].split())  # the lines under the table
    last = p.levels[-1]
    assert text.startswith(
        "error bound: a guarantee. With probability >= 0.9, for any data and any tree of this "
        "shape, no node of any level is off by more than this."
    )
    assert (
        f"level 3: sigma {last.sigma:.3g} over 64 nodes gives T = {last.noise_bound:,.0f}" in text
    )
    assert "a union bound over every node of all 3 levels" in text
    assert f"{last.bound:,.0f} = 2 x ({' + '.join(f'{t:,.0f}' for t in noise)})." in text
    assert "simulated max error: what happened." in text
    assert "median (worst) of 3 runs" in text and "(10,000 records)" in text
    assert "a parent's error is spread over its children" in text
    assert "beta = 0.1 tail" in text
    assert "error bound: a guarantee" in p._repr_html_()
    # the root, when it is noised, adds its own noise bound once
    u = plan([4, 16], rho=0.3, privacy="unbounded", simulations=0)
    assert u.root_noise_bound is not None and u.root_noise_bound > 0
    assert u.levels[-1].bound == pytest.approx(
        u.root_noise_bound + 2 * sum(lv.noise_bound for lv in u.levels)
    )
    assert f"= {u.root_noise_bound:,.0f} + 2 x (" in str(u)
    assert "simulated max error:" not in str(u)  # no simulation, nothing to explain
    assert plan([3, 9], rho=float("inf"), simulations=0).explanation() == []
    # a last level the domain determines (one child per parent) draws no noise: T is shown
    # for the last level that does
    d = plan([3, 9, 9], rho=0.3, simulations=0)
    assert d.levels[-1].noise_bound == 0.0
    assert f"(level 2: sigma {d.levels[1].sigma:.3g} over 9 nodes" in " ".join(str(d).split())


def test_the_shape_can_come_from_a_file_without_a_database(tmp_path: Path) -> None:
    geo = tmp_path / "geo.csv"
    geo.write_text("region,city\nN,a\nN,b\nS,c\n", encoding="utf-8")
    p = plan(
        hierarchy=[["o_region", "o_city"], ["d_region", "d_city"]],
        domain=str(geo),
        tree="destination",
        rho=1.0,
        simulations=0,
    )
    assert [lv.nodes for lv in p.levels] == [2, 4, 6, 9]
