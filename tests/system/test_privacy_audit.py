"""Empirical privacy audit: the claimed epsilon holds on a fixed event, and the audit catches
a mechanism whose noise was deliberately halved (a test that cannot fail is a defect).

Two neighbouring datasets under unbounded DP: D1 has N records in one cell, D2 one unit more.
The release (the real TopDown engine: noised root, noised level, IntOpt) runs many times on
each with test seeds. For the fixed event E = {released total >= N + 2} (chosen a priori from
the exact pmf as the event where a halved-noise mechanism leaks most), (epsilon, delta)-DP
requires P[E | D2] <= e^epsilon P[E | D1] + delta. With Clopper-Pearson bounds at confidence
1 - 1e-6 per side, eps_lower = ln((lower(P2) - delta) / upper(P1)) is a lower confidence
bound on the privacy loss of E; it must stay at or below the claimed epsilon.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from inftda_sql.core.accounting import Budget, account
from inftda_sql.core.rng import SeededSource
from inftda_sql.core.spec import parse_hierarchy
from inftda_sql.core.topdown import topdown
from inftda_sql.core.tree import ChainTree

RHO, DELTA, N, RUNS = 0.2, 0.02, 10, 3000
ALPHA = 1e-6  # per-side confidence: a false alarm is practically impossible


def _released_totals(n_records: int, sigma_scale: float, seed: int) -> np.ndarray:
    spec = parse_hierarchy(["cell"])
    chain = ChainTree.from_parents([np.zeros(3, dtype=np.int64)])  # root -> 3 cells
    acct = account(
        Budget.from_args(rho=RHO, delta=DELTA), ["cell"], privacy="unbounded", split=[0.95, 0.05]
    )
    sigmas = [s * sigma_scale for s in acct.level_sigma]
    keys, counts = np.array([0], dtype=np.int64), np.array([n_records], dtype=np.int64)
    source = SeededSource(seed)
    out = np.empty(RUNS, dtype=np.int64)
    for i in range(RUNS):
        res = topdown(
            spec,
            [chain],
            lambda level, strides: (keys, counts),
            sigmas,
            n_records,
            source=source,
            threads=1,
        )
        out[i] = res.counts.sum()
    return out


def _audit(sigma_scale: float) -> tuple[float, float]:
    from scipy.stats import beta

    eps_claim = Budget.from_args(rho=RHO, delta=DELTA).epsilon
    k1 = int((_released_totals(N, sigma_scale, seed=1) >= N + 2).sum())
    k2 = int((_released_totals(N + 1, sigma_scale, seed=2) >= N + 2).sum())
    p1_upper = float(beta.ppf(1 - ALPHA, k1 + 1, RUNS - k1)) if k1 < RUNS else 1.0
    p2_lower = float(beta.ppf(ALPHA, k2, RUNS - k2 + 1)) if k2 > 0 else 0.0
    if p2_lower <= DELTA:
        return -math.inf, eps_claim
    return math.log((p2_lower - DELTA) / p1_upper), eps_claim


@pytest.mark.slow
def test_claimed_epsilon_holds_on_the_audited_event() -> None:
    eps_lower, eps_claim = _audit(sigma_scale=1.0)
    assert eps_lower <= eps_claim, (eps_lower, eps_claim)


@pytest.mark.slow
def test_audit_catches_halved_noise() -> None:
    eps_lower, eps_claim = _audit(sigma_scale=0.5)
    assert eps_lower > eps_claim, (eps_lower, eps_claim)
