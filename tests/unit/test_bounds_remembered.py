"""core/bounds.py: the simulated typical error of a release depends on public parameters only,
so a repeated release (same shape, sigmas, total) pays the simulation once per process
(issue 26, item 3: the fixed cost of a small release)."""

from __future__ import annotations

import numpy as np
import pytest

from inftda_sql.core import bounds
from inftda_sql.core.intopt import intopt
from inftda_sql.core.spec import parse_hierarchy
from inftda_sql.core.topdown import Optimizer
from inftda_sql.core.tree import ChainTree
from inftda_sql.mechanisms.inftda import intopt_step

SPEC = parse_hierarchy(["region", "city"])
CHAIN = ChainTree.from_parents([np.zeros(2, np.int64), np.array([0, 0, 1, 1], np.int64)])


def _bounds(optimizer: Optimizer | None, total: int = 100) -> bounds.ErrorBounds:
    return bounds.for_release(
        "linf", SPEC, [CHAIN], ["region", "city"], [2.0, 2.0], total=total, optimizer=optimizer
    )


@pytest.mark.parametrize("optimizer", [None, intopt_step])
def test_the_package_s_simulation_runs_once_per_public_parameters(
    monkeypatch: pytest.MonkeyPatch, optimizer: Optimizer | None
) -> None:
    bounds._typical_remembered.cache_clear()
    runs: list[int] = []
    real = bounds.simulate

    def counted(*args: object, **kw: object) -> object:
        runs.append(1)
        return real(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(bounds, "simulate", counted)
    first, again = _bounds(optimizer), _bounds(optimizer)
    assert first == again and first.typical is not None
    assert len(runs) == 1
    _bounds(optimizer, total=101)  # another total: simulated again
    assert len(runs) == 2
    monkeypatch.undo()
    bounds._typical_remembered.cache_clear()
    assert _bounds(optimizer) == first  # the same as simulated afresh


def test_a_caller_s_optimizer_is_simulated_every_time(monkeypatch: pytest.MonkeyPatch) -> None:
    runs: list[int] = []

    def mine(y: np.ndarray, t: np.ndarray, o: np.ndarray) -> np.ndarray:
        runs.append(1)
        return intopt(y, t, o)

    _bounds(mine)
    first = len(runs)
    _bounds(mine)
    assert first > 0 and len(runs) == 2 * first
