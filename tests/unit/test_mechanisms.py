"""mechanisms/: the registry, what a Mechanism declares, and adding one (a module and an entry)."""

from __future__ import annotations

import dataclasses
import importlib
import json
import pkgutil
from typing import Any

import duckdb
import numpy as np
import pytest

import inftda_sql
from inftda_sql import BudgetError, SpecError
from inftda_sql import mechanisms as _mechanisms
from inftda_sql.core.accounting import Accounting, Budget
from inftda_sql.core.spec import parse_hierarchy
from inftda_sql.core.tree import ChainTree, LevelStats, TopDownResult, key_strides
from inftda_sql.mechanisms import (
    MECHANISMS,
    REGISTRY,
    FeatureMechanism,
    Mechanism,
    MechanismContext,
    check_full_domain,
    get,
    noised_levels,
)
from tests.system.helpers import PERSONS, leaf_truth, make_geo, make_persons

SPEC = parse_hierarchy(["region", "mun"])
CHAINS = [ChainTree.from_parents([np.zeros(2, np.int64), np.array([0, 0, 1], np.int64)])]
BUDGET = Budget.from_args(rho=1.0)


def test_every_entry_is_a_mechanism_named_as_its_key() -> None:
    assert REGISTRY
    assert tuple(REGISTRY) == MECHANISMS
    assert MECHANISMS[0] == "inftda"  # the default comes first
    for key, mech in REGISTRY.items():
        assert mech.name == key and mech.summary
        if isinstance(
            mech, FeatureMechanism
        ):  # releases features: its guarantee follows the budget
            assert mech.guarantee_for(Budget.from_args(epsilon=1.0, pure=True)) == "pureDP"
            assert mech.guarantee_for(Budget.from_args(rho=1.0)) == "zCDP"
            assert mech.pure_budget and mech.bytes_per_cell > 0
            continue
        assert isinstance(mech, Mechanism)
        assert not mech.pure_budget
        assert mech.guarantee in ("zCDP", "approxDP")
        assert mech.noises in ("tree", "leaves")
        assert mech.full_domain in (None, "leaves", "tree")
    assert len({m.name for m in REGISTRY.values()}) == len(REGISTRY)


def test_every_mechanism_module_is_registered() -> None:
    """One module per mechanism, each with one MECHANISM, and every one of them in REGISTRY."""
    found = {}
    for info in pkgutil.iter_modules(_mechanisms.__path__):
        module = importlib.import_module(f"{_mechanisms.__name__}.{info.name}")
        if hasattr(module, "MECHANISM"):
            found[info.name] = module.MECHANISM
    assert set(found) == set(REGISTRY)
    assert all(REGISTRY[name] is mech for name, mech in found.items())


def test_mechanisms_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        REGISTRY["inftda"].name = "other"  # type: ignore[misc]


@pytest.mark.parametrize("name", ["magic", None, 3, "INFTDA"])
def test_get_lists_the_names(name: object) -> None:
    with pytest.raises(SpecError) as info:
        get(name)
    assert str(info.value) == (f"mechanism must be one of {', '.join(MECHANISMS)}; got {name!r}")
    assert get("tda_l2") is REGISTRY["tda_l2"]


def test_noised_levels_follow_noises() -> None:
    for name, mech in REGISTRY.items():
        if isinstance(mech, FeatureMechanism):  # no levels: a hierarchy question is refused
            with pytest.raises(SpecError, match=f"mechanism '{name}' releases features"):
                noised_levels(name, SPEC)
            continue
        expected = ["region", "mun"] if mech.noises == "tree" else ["mun"]
        assert noised_levels(name, SPEC) == mech.noised_levels(SPEC) == expected
        assert mech.releases_root == (mech.noises == "tree")


@pytest.mark.parametrize(
    ("noises", "kw", "names"),
    [
        ("tree", {}, ("region", "mun")),
        ("tree", {"privacy": "unbounded"}, ("root", "region", "mun")),
        ("tree", {"contribution": 2}, ("root", "region", "mun")),  # N is no longer public
        ("leaves", {}, ("mun",)),
        ("leaves", {"privacy": "unbounded"}, ("mun",)),  # no budget for a root never released
        ("leaves", {"contribution": 2}, ("mun",)),
    ],
)
def test_account_per_noises(noises: str, kw: dict[str, Any], names: tuple[str, ...]) -> None:
    mech = Mechanism(name="m", summary="s", run=lambda ctx: None, noises=noises)  # type: ignore[arg-type,return-value]
    acct = mech.account(BUDGET, SPEC, **kw)
    assert acct.level_names == names
    assert sum(acct.level_rho) == pytest.approx(1.0)


def test_full_domain_cells() -> None:
    # 1 root, 2 regions, 3 municipalities: 3 leaf cells, 6 nodes
    assert check_full_domain("inftda", SPEC, CHAINS, 1) == [1, 2, 3]  # never refuses
    assert check_full_domain("vanilla_gauss", SPEC, CHAINS, 3) == [1, 2, 3]
    assert check_full_domain("hierarchical", SPEC, CHAINS, 6) == [1, 2, 3]
    with pytest.raises(SpecError) as info:
        check_full_domain("vanilla_gauss", SPEC, CHAINS, 2)
    assert str(info.value) == (
        "mechanism 'vanilla_gauss' noises every cell of the full domain: 3 leaf cells (the full "
        "domain) exceed max_cells=2; raise max_cells= or use mechanism='inftda'"
    )
    with pytest.raises(
        SpecError, match=r": 6 nodes \(all levels of the full domain tree\) exceed max_cells=5;"
    ):
        check_full_domain("hierarchical", SPEC, CHAINS, 5)


def test_check_runs_the_requirement() -> None:
    seen: list[Budget] = []
    mech = Mechanism(name="m", summary="s", run=lambda ctx: None, requires=seen.append)  # type: ignore[arg-type,return-value]
    mech.check(BUDGET)
    assert seen == [BUDGET]
    REGISTRY["inftda"].check(BUDGET)  # no requirement: nothing happens
    with pytest.raises(BudgetError, match=r"pass epsilon= and delta= instead of rho=1\.0"):
        REGISTRY["stability_histogram"].check(BUDGET)


# ----------------------------------------------------------------------------- adding one


def run_exact_leaves(ctx: MechanismContext) -> TopDownResult:
    """A trivial (and NOT private) mechanism: the true leaf counts, as they are."""
    spec, level = ctx.spec, ctx.spec.n_levels
    strides = key_strides(spec, level, [ch.sizes for ch in ctx.chains])
    keys, counts = ctx.true_level(level, strides)
    codes = tuple((keys // s) % ch.sizes[-1] for s, ch in zip(strides, ctx.chains, strict=True))
    stats = tuple(
        LevelStats(lv, spec.level_name(lv), 0, 0, 0 if lv < level else keys.size, 0.0, 0.0)
        for lv in range(level + 1)
    )
    return TopDownResult(codes=codes, counts=counts, levels=stats)


def _parameters(acct: Accounting) -> dict[str, Any]:
    return {"leaf_sigma": acct.level_sigma[-1]}


EXACT = Mechanism(
    name="exact_leaves",
    summary="the true leaf counts (a test double)",
    run=run_exact_leaves,
    noises="leaves",
    parameters=_parameters,
)


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> Mechanism:
    """Adding a mechanism: its module (above) and one entry in the registry."""
    monkeypatch.setitem(REGISTRY, EXACT.name, EXACT)
    return EXACT


def test_a_new_mechanism_runs_through_release(
    con: duckdb.DuckDBPyConnection, registered: Mechanism
) -> None:
    make_geo(con)
    make_persons(con)
    seen: list[LevelStats] = []
    r = inftda_sql.release(
        con,
        "persons",
        hierarchy=["region", "province", "mun"],
        domain="geo",
        rho=0.5,
        mechanism="exact_leaves",
        progress=seen.append,
    )
    cols = ["region", "province", "mun"]
    assert leaf_truth(con, "persons_private", cols, "count") == leaf_truth(con, "persons", cols)
    assert r.mechanism == "exact_leaves" and r.total == len(PERSONS)
    assert r.accounting.level_names == ("mun",)  # noises="leaves": all of rho on the leaves
    assert r.mechanism_params == {"leaf_sigma": r.accounting.level_sigma[-1]}
    (row,) = con.execute(
        "SELECT mechanism, guarantee, level_names, rho, details FROM inftda_releases"
    ).fetchall()
    assert row[:4] == ("exact_leaves", "zCDP", ["mun"], 0.5)
    assert json.loads(row[4])["mechanism_params"] == r.mechanism_params
    assert con.execute(
        "SELECT count(*) FROM persons_private_levels WHERE level = 0"
    ).fetchall() == [(1,)]
    assert seen == []  # this mechanism reports no progress: nothing is made up for it


def test_a_new_mechanisms_requirement_is_checked_before_any_data(
    con: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(budget: Budget) -> None:
        raise BudgetError(f"exact_leaves refuses rho={budget.rho}")

    monkeypatch.setitem(REGISTRY, "exact_leaves", dataclasses.replace(EXACT, requires=refuse))
    with pytest.raises(BudgetError, match=r"exact_leaves refuses rho=0\.5"):
        # the input does not even exist: the requirement comes first
        inftda_sql.release(
            con, "nothing", hierarchy=["a"], domain="g", rho=0.5, mechanism="exact_leaves"
        )


@pytest.mark.parametrize("name", ["inftda", "tda_l2"])
def test_a_topdown_step_is_what_run_runs(name: str) -> None:
    """An engine that runs ``topdown_step`` in its own tasks releases what ``run`` releases."""
    from inftda_sql.core.rng import SeededSource
    from inftda_sql.core.topdown import topdown

    mech = _mechanisms.get(name)
    assert mech.topdown_step is not None
    spec = parse_hierarchy(["region", "city"])
    tree = ChainTree.from_parents([np.zeros(3, np.int64), np.array([0, 0, 1, 1, 2], np.int64)])
    keys = {1: (np.arange(3), np.array([5, 9, 4])), 2: (np.arange(5), np.array([1, 4, 6, 3, 4]))}

    def true_level(level: int, strides: tuple[int, ...]) -> tuple[Any, Any]:
        k, n = keys[level]
        return k.astype(np.int64), n.astype(np.int64)

    acct = mech.account(Budget.from_args(rho=2.0), spec)
    ctx = MechanismContext(spec, [tree], true_level, 18, acct, SeededSource(4))
    got = mech.run(ctx)
    want = topdown(
        spec, [tree], true_level, ctx.tree_sigmas, 18, source=SeededSource(4),
        optimizer=mech.topdown_step,
    )  # fmt: skip
    assert got.codes[0].tolist() == want.codes[0].tolist()
    assert got.counts.tolist() == want.counts.tolist()
    assert [getattr(m, "topdown_step", None) is not None for m in _mechanisms.REGISTRY.values()] == [
        True, False, False, True, True, False, False,
    ]  # fmt: skip
