"""End to end: the noise of EVERY level of a release has the variance the accounting promises.

The privacy audit (test_privacy_audit.py) exercises the root; this test catches a noise that is
too small (or too large) by a factor sqrt(2) at any single level of a real ``release()``.

Set-up: a three-level hierarchy (50 regions > 3 provinces > 3 municipalities) with about a
million records per municipality, released with bounded DP and contribution 1, so the root is
exact and the three levels below it each get rho / 3 and, by the model (computed here, not
read from the library), sigma = sqrt(2) / sqrt(2 rho / 3). Counts are so large that IntOpt
never clips at zero: it only shifts each parent's noisy children by a common integer so that they
sum to the parent (and moves at most ``children - 1`` units among them). Within a parent, the
children's errors (released minus true) are then the noises minus their mean, so the sum over
parents of their squared deviations from the parent's mean error, divided by sigma^2, is
chi-square with sum(children - 1) degrees of freedom. IntOpt's integer rounding changes it by
well under 1% at this sigma, far inside the test's resolution.

Each level is tested two-sided with a fixed p-value floor of 1e-6 (a correct release fails with
probability below 3e-6 in all): with 539 or more degrees of freedom per level, a sigma off by a
factor sqrt(2) either way gives p-values far below 1e-12.
"""

from __future__ import annotations

import math

import duckdb
import numpy as np
import pytest

import inftda_sql
from inftda_sql.core.accounting import account

REGIONS, PROVINCES, MUNS = 50, 3, 3
RELEASES = 11  # (REGIONS - 1) * RELEASES = 539 degrees of freedom at the coarsest level
SIGMA = 1000.0
RHO = 3.0 / SIGMA**2  # bounded DP, m = 1: sigma_l = sqrt(2) / sqrt(2 rho_l), rho_l = rho / 3
P_FLOOR = 1e-6


@pytest.fixture
def db(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    con.execute(
        f"""CREATE TABLE geo AS
        SELECT 'r' || r AS region, 'r' || r || 'p' || p AS province,
               'r' || r || 'p' || p || 'm' || m AS mun
        FROM range({REGIONS}) a(r), range({PROVINCES}) b(p), range({MUNS}) c(m)"""
    ).fetchall()
    # about a million records per municipality, all different (no ties for IntOpt's order)
    con.execute(
        "CREATE TABLE agg AS SELECT *, 1000000 + (row_number() OVER (ORDER BY mun)) * 37 % 5000 "
        "AS n FROM geo"
    ).fetchall()
    return con


def _p_two_sided(statistic: float, dof: int) -> float:
    from scipy.stats import chi2

    return float(2.0 * min(chi2.cdf(statistic, dof), chi2.sf(statistic, dof)))


def _within_parent(errors: np.ndarray, parent: np.ndarray) -> tuple[float, int]:
    """Sum of squared deviations of ``errors`` from their parent's mean, and the dof."""
    sums = np.bincount(parent, weights=errors)
    sizes = np.bincount(parent)
    dev = errors - (sums / sizes)[parent]
    return float((dev * dev).sum()), int((sizes - 1).sum())


@pytest.mark.slow
def test_every_level_has_the_promised_noise(db: duckdb.DuckDBPyConnection) -> None:
    truth = np.array(
        [n for (n,) in db.execute("SELECT n FROM agg ORDER BY region, province, mun").fetchall()],
        dtype=np.float64,
    )
    leaf = np.arange(truth.size)
    province = leaf // MUNS
    region = province // PROVINCES
    stats = {level: [0.0, 0] for level in (1, 2, 3)}
    for _ in range(RELEASES):
        r = inftda_sql.release(
            db,
            "agg",
            hierarchy=["region", "province", "mun"],
            domain="geo",
            rho=RHO,
            count="n",
            output="released",
            overwrite=True,
            levels_view=False,
        )
        rows = db.execute(
            "SELECT a.n, r.count FROM agg a LEFT JOIN released r USING (region, province, mun) "
            "ORDER BY a.region, a.province, a.mun"
        ).fetchall()
        released = np.array([x for _, x in rows], dtype=np.float64)
        assert not np.isnan(released).any(), "a municipality vanished: IntOpt clipped"
        e3 = released - truth
        e2 = np.bincount(province, weights=e3)  # province error = sum of its municipalities'
        e1 = np.bincount(region[::MUNS], weights=e2)
        for level, errors, parent in (
            (1, e1, np.zeros(REGIONS, dtype=np.int64)),  # all regions share the (exact) root
            (2, e2, np.arange(REGIONS * PROVINCES) // PROVINCES),
            (3, e3, province),
        ):
            s, dof = _within_parent(errors, parent)
            stats[level][0] += s
            stats[level][1] += dof
        assert r.accounting.level_names == ("region", "province", "mun")
    for level, (s, dof) in stats.items():
        ratio = s / (dof * SIGMA**2)  # the measured variance over the promised one
        p = _p_two_sided(s / SIGMA**2, int(dof))
        assert p >= P_FLOOR, (
            f"level {level}: noise variance {ratio:.3f} x sigma^2 over {dof} degrees of freedom "
            f"(p = {p:.2g}); the noise of this level is not sigma = {SIGMA}"
        )


def test_the_accounting_promises_the_model_sigma() -> None:
    """The sigma the test above checks the noise against is the accounting's, to 1e-12."""
    got = account(inftda_sql.Budget.from_args(rho=RHO), ["region", "province", "mun"])
    assert got.level_sigma == pytest.approx([SIGMA] * 3, rel=1e-12)
    assert got.level_sensitivity == pytest.approx([math.sqrt(2.0)] * 3, rel=1e-15)
