"""Error bounds from public parameters (inftda_sql.core.bounds, issue 25): the exact tail, the
propagation per analysis, and the same numbers in plan(), the release, its levels view, its
ledger row and the published file."""

from __future__ import annotations

import json
import math
from pathlib import Path

import duckdb
import numpy as np
import pytest

import inftda_sql
from inftda_sql._planning import plan
from inftda_sql.core.bounds import (
    error_bounds,
    noise_quantile,
    noise_tail,
    simulate,
    view_bounds,
)
from inftda_sql.core.noise import discrete_gaussian_pmf
from tests.system.helpers import make_geo, make_persons

GEO = ["region", "province", "mun"]


@pytest.mark.parametrize("sigma", [0.3, 1.0, 2.5, 17.0, 400.0])
@pytest.mark.parametrize("p", [0.5, 1e-3, 1e-9])
def test_the_quantile_is_the_smallest_integer_of_the_exact_tail(sigma: float, p: float) -> None:
    t = noise_quantile(sigma, p)
    xs = np.arange(-(t + 60 * math.ceil(sigma) + 60), t + 60 * math.ceil(sigma) + 61)
    pmf = discrete_gaussian_pmf(xs, sigma)

    def tail(u: int) -> float:
        return float(pmf[np.abs(xs) > u].sum())

    assert tail(t) <= p * (1 + 1e-9) and (t == 0 or tail(t - 1) > p)
    assert noise_tail(t, sigma) == pytest.approx(tail(t), rel=1e-9, abs=1e-300)
    assert t <= sigma * math.sqrt(2 * math.log(2 / p)) + 1  # never above the sub-Gaussian one


def test_the_continuous_tail_bounds_a_huge_sigma_from_above() -> None:
    sigma = 1e6
    t = noise_quantile(sigma, 1e-6)
    assert t == pytest.approx(4.8916e6, rel=1e-3)  # z(1 - 5e-7) sigma
    assert noise_tail(t, sigma) <= 1e-6


def test_propagation_per_analysis() -> None:
    names, cells, sig = ["a", "b", "c"], [3, 9, 27], [2.0, 0.0, 3.0]  # b is determined
    linf = error_bounds("linf", names, cells, sig, beta=0.1)
    t1, t3 = noise_quantile(2.0, 0.1 / 6), noise_quantile(3.0, 0.1 / 54)
    assert linf.noise == (t1, 0, t3)
    assert linf.bound == (2 * t1, 2 * t1, 2 * t1 + 2 * t3)  # a determined level adds nothing
    l2 = error_bounds("l2_rounded", names, cells, sig, beta=0.1)
    assert l2.bound == (2 * t1 + 1, 2 * t1 + 1, 2 * t1 + 2 * t3 + 2)
    root = error_bounds("linf", ["root", *names], [1, *cells], [5.0, *sig], root_noised=True)
    assert root.bound[0] == root.noise[0] > 0
    assert root.bound[1] == root.noise[0] + 2 * root.noise[1]
    leaf = error_bounds(
        "leaf_sums", ["root", *names], [1, *cells], [4.0] * 4, leaves_per_cell=[27, 9, 3, 1]
    )
    assert leaf.bound[-1] == noise_quantile(4.0, 0.05 / 27)
    assert leaf.bound[0] == math.floor(4.0 * math.sqrt(2 * 27 * math.log(2 / 0.05)))
    none = error_bounds(None, names, cells, sig)
    assert none.bound == (None, None, None) and "no per-cell bound" in none.reason
    with pytest.raises(inftda_sql.SpecError, match="beta must be in"):
        error_bounds("linf", names, cells, sig, beta=1.5)


def test_simulation_reads_only_its_synthetic_data() -> None:
    out = simulate([4, 16, 64], [3.0, 3.0, 3.0], 10_000, 4, seed=1)
    assert out is not None
    typical, maxima = out
    assert maxima.shape == (4, 3) and typical.runs == 4
    assert all(a <= b for a, b in zip(typical.max_median, typical.max_p90, strict=True))
    assert all(a <= b for a, b in zip(typical.cell_median, typical.cell_p90, strict=True))
    assert simulate([4, 16, 64], [3.0] * 3, 10_000, 4, seed=1, max_cells=10) is None


def test_plan_release_view_ledger_and_publish_state_the_same_bounds(tmp_path: Path) -> None:
    con = duckdb.connect(str(tmp_path / "work.duckdb"))
    make_geo(con)
    make_persons(con)
    planned = plan(con=con, hierarchy=GEO, domain="geo", rho=0.5, simulations=0)
    r = inftda_sql.release(con, "persons", hierarchy=GEO, domain="geo", rho=0.5)
    assert r.error_bounds is not None and r.error_bounds.analysis == "linf"
    released = dict(zip(r.error_bounds.names, r.error_bounds.bound, strict=True))
    assert released["root"] == 0.0  # bounded DP: the total is exact
    for lv in planned.levels:
        assert released[lv.name] == lv.bound > 0
    view = con.execute(
        "SELECT DISTINCT level_name, error_bound FROM persons_private_levels"
    ).fetchall()
    assert dict(view) == released
    details = json.loads(con.execute("SELECT details FROM inftda_releases").fetchall()[0][0])
    assert details["error_bounds"]["bound"] == list(r.error_bounds.bound)
    assert details["error_bounds"]["beta"] == 0.05
    assert view_bounds(details) is not None
    text = str(r)
    assert "error bound" in text.splitlines()[2] and f"+-{released['mun']:,.0f}" in text
    out = inftda_sql.publish(con, "persons_private", tmp_path / "public.duckdb")
    with duckdb.connect(str(out), read_only=True) as pub:
        shared = pub.execute(
            "SELECT DISTINCT level_name, error_bound, typical_error FROM persons_private_levels"
        ).fetchall()
    here = con.execute(
        "SELECT DISTINCT level_name, error_bound, typical_error FROM persons_private_levels"
    ).fetchall()
    assert sorted(shared) == sorted(here)
    con.close()


@pytest.mark.parametrize(
    ("mechanism", "analysis"),
    [("vanilla_gauss", "leaf_sums"), ("tda_l2", "l2_rounded"), ("hierarchical", None)],
)
def test_every_mechanism_says_what_its_analysis_gives(mechanism: str, analysis: str | None) -> None:
    con = duckdb.connect()
    make_geo(con)
    make_persons(con)
    r = inftda_sql.release(
        con, "persons", hierarchy=GEO, domain="geo", rho=0.5, mechanism=mechanism
    )
    assert r.error_bounds is not None and r.error_bounds.analysis == analysis
    bounds = con.execute(
        "SELECT level, any_value(error_bound) FROM persons_private_levels GROUP BY 1 ORDER BY 1"
    ).fetchall()
    if analysis is None:
        assert all(b is None for _, b in bounds)
        assert "error bound: none for this mechanism" in str(r)
    else:
        values = [b for _, b in bounds]
        assert all(b is not None and b >= 0 for b in values)
        assert values[-1] > 0


def test_plot_bounds_reads_only_the_levels_view(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="the plot extra is not installed")
    con = duckdb.connect()
    make_geo(con)
    make_persons(con)
    inftda_sql.release(con, "persons", hierarchy=GEO, domain="geo", rho=0.5)
    out = inftda_sql.plot_bounds(con, "persons_private_levels", tmp_path / "b.png", cells=5)
    assert out.stat().st_size > 10_000 and out.read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(inftda_sql.SpecError, match="level 9 is not in"):
        inftda_sql.plot_bounds(con, "persons_private_levels", tmp_path / "c.png", level=9)
    with pytest.raises(inftda_sql.SpecError, match="has no error_bound column"):
        inftda_sql.plot_bounds(con, "persons", tmp_path / "d.png")
