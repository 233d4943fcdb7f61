"""The drop-in for the ``inf-tda`` package (issue 14): ``from inftda_sql.pandas import inf_tda``.

Exactness (infinite budget) on every shape of index the layout distinguishes, what the package
returns (positive cells only, sorted, int64, indexed like the input), our accounting (the
paper's sensitivities, both conversions), ``domain=`` instead of reindexing, and the errors.
The comparison of output distributions with the package itself is in test_pandas_reference.py.
"""

from __future__ import annotations

import math
from typing import Any

import duckdb
import numpy as np
import pytest

import inftda_sql
from inftda_sql import Budget, BudgetError, DomainError, InputDataError, SpecError
from inftda_sql.pandas import _layout, inf_tda, release_series

pd = pytest.importorskip("pandas")

EXACT = Budget.from_args(rho=float("inf"))


def _expected(data: Any) -> Any:
    """The exact release: the positive cells, summed per path, sorted like sort_index()."""
    summed = data.groupby(level=list(range(data.index.nlevels)), sort=True).sum()
    return summed[summed > 0].astype(np.int64)


def _same(got: Any, want: Any) -> None:
    assert got.dtype == np.int64
    assert list(got.index.names) == list(want.index.names)
    assert got.index.tolist() == want.index.tolist()
    assert got.tolist() == want.tolist()


def _product() -> Any:
    idx = pd.MultiIndex.from_product([["b", "a"], [3, 1, 2], ["y", "x"]], names=["r", "p", "m"])
    rng = np.random.default_rng(1)
    return pd.Series(rng.integers(0, 4, len(idx)), index=idx, name="trips")


def _nested() -> Any:
    """A geography: provinces nested in regions, unequal fan-outs, labels reused under two
    parents (('N', 'c') and ('S', 'c')), unsorted rows."""
    tuples = [("S", "c", "s1"), ("N", "a", "n1"), ("N", "c", "n3"), ("N", "a", "n2"),
              ("S", "d", "s2"), ("S", "c", "s0"), ("E", "e", "e1")]  # fmt: skip
    idx = pd.MultiIndex.from_tuples(tuples, names=["region", "province", "mun"])
    return pd.Series([4, 0, 2, 7, 1, 0, 3], index=idx)


def _partly() -> Any:
    """Nested region > city, crossed with every sex: a product at the last level only."""
    cities = [("N", "n1"), ("N", "n2"), ("S", "s1")]
    tuples = [(r, c, s) for r, c in cities for s in ("F", "M")]
    idx = pd.MultiIndex.from_tuples(tuples, names=["region", "city", "sex"])
    return pd.Series([3, 0, 5, 1, 0, 0], index=idx)


@pytest.mark.parametrize(
    ("make", "groups"),
    [(_product, ((0, 1), (1, 2), (2, 3))), (_nested, ((0, 3),)), (_partly, ((0, 2), (2, 3)))],
)
def test_exact_release_is_the_positive_cells_sorted(make: Any, groups: Any) -> None:
    data = make()
    assert _layout(data.index).groups == groups  # the three layouts are all exercised
    got = inf_tda(data, EXACT, 1)
    _same(got, _expected(data))
    assert got.name == data.name
    assert got.index.levels[0].tolist() == sorted(set(got.index.get_level_values(0)))


def test_unsorted_levels_duplicates_and_a_plain_index() -> None:
    cat = pd.CategoricalIndex(["z", "a", "z", "m"], categories=["z", "m", "a"], ordered=True)
    data = pd.Series([1, 2, 3, 0], index=pd.MultiIndex.from_arrays([cat, [1, 1, 2, 1]]))
    got = inf_tda(data, EXACT, 1)
    assert got.index.tolist() == [("z", 1), ("z", 2), ("a", 1)]  # categories' order
    assert got.tolist() == [1, 3, 2]
    dup = pd.Series([1, 2, 5], index=pd.MultiIndex.from_tuples([("a", 1), ("a", 1), ("b", 2)]))
    assert inf_tda(dup, EXACT, 1).to_dict() == {("a", 1): 3, ("b", 2): 5}  # rows add up
    flat = pd.Series([4, 0, 2], index=pd.Index(["x", "y", "z"], name="k"))
    got = inf_tda(flat, EXACT, 1)
    assert got.index.nlevels == 1 and got.index.names == ["k"]
    assert got.index.get_level_values(0).tolist() == ["x", "z"] and got.tolist() == [4, 2]


def test_all_zero_gives_an_empty_series_like_the_input() -> None:
    data = _nested() * 0
    got = inf_tda(data, EXACT, 1)
    assert len(got) == 0 and got.dtype == np.int64
    assert got.index.nlevels == 3 and list(got.index.names) == ["region", "province", "mun"]


def test_domain_instead_of_reindexing() -> None:
    full = _partly()
    sparse = full[full > 0]
    for domain in (
        full.index,
        full.index.to_frame(index=False)[["sex", "city", "region"]],  # named columns, any order
        list(full.index),
    ):
        _same(inf_tda(sparse, EXACT, 1, domain=domain), _expected(full))
    # the domain's cells are noised even where the data has no row (region S: no row at all)
    s, r = release_series(sparse, (5.0, 1e-6), 1, domain=full.index, seed=1)
    assert "S" not in set(sparse.index.get_level_values(0))
    assert r.levels[1].noised_cells == 2
    assert set(s.index) <= set(full.index) and s.sum() == full.sum()


def test_a_data_row_outside_the_domain_is_refused() -> None:
    data = _partly()
    domain = data.index[data.index.get_level_values("city") != "s1"]
    with pytest.raises(DomainError, match=r"2 row\(s\) of data have a path the domain") as err:
        inf_tda(data, (1.0, 1e-6), 1, domain=domain)
    assert "('S', 's1', 'F')" in str(err.value) and err.value.param == "domain"


def test_noisy_release_is_consistent_positive_and_private_by_default() -> None:
    data = _product() * 10
    s, r = release_series(data, (1.0, 1e-6), 1)
    assert r.is_private and not r.seeded and r.accounting.privacy == "bounded"
    assert (s > 0).all() and s.sum() == data.sum()  # bounded: the total is public
    assert set(s.index) <= set(data.index)
    assert s.index.is_monotonic_increasing
    assert r.levels[1].noised_cells == 2  # the root's children: every region of the index
    seeded = [inf_tda(data, (1.0, 1e-6), 1, seed=7) for _ in range(2)]
    assert seeded[0].equals(seeded[1])


def test_accounting_is_ours_with_the_package_conversion_as_an_option() -> None:
    """At contribution 1 the package and the paper agree on sqrt(2) per level; the package's
    Bun-Steinke conversion is conversion='simple' (same rho, same sigma), the tight one gives
    a larger rho, so less noise."""
    data = _product()
    eps, delta, levels = 1.0, 1e-6, 3
    _, simple = release_series(data, (eps, delta), 1, conversion="simple", seed=0)
    rho = math.log(1 / delta) * (math.sqrt(1 + eps / math.log(1 / delta)) - 1) ** 2
    assert simple.accounting.budget.rho == pytest.approx(rho, rel=1e-9)
    sigma = math.sqrt(2) / math.sqrt(2 * rho / levels)  # the package's scale, every level
    assert simple.accounting.level_sigma == pytest.approx([sigma] * levels, rel=1e-9)
    _, tight = release_series(data, (eps, delta), 1, seed=0)
    assert tight.accounting.budget.rho > simple.accounting.budget.rho
    assert all(
        t < s
        for t, s in zip(tight.accounting.level_sigma, simple.accounting.level_sigma, strict=True)
    )


def test_sensitivities_are_the_papers_not_the_packages() -> None:
    """m = 2: records distinct at the leaves can share a coarser cell, so only the leaf level
    gets sqrt(2m) (the package applies one figure to every level); a person holds 1..m records,
    so the total is not public and the root is noised with sensitivity m - 1."""
    _, r = release_series(_product(), (1.0, 1e-6), 2, distinct_tuples=True, seed=0)
    assert r.accounting.level_sensitivity == pytest.approx([1.0] + [2 * math.sqrt(2)] * 2 + [2.0])
    assert r.levels[0].noised_cells == 1
    _, r = release_series(_product(), (1.0, 1e-6), 2, distinct_tuples=False, seed=0)
    assert r.accounting.level_sensitivity == pytest.approx([1.0] + [2 * math.sqrt(2)] * 3)
    _, r = release_series(_product(), (1.0, 1e-6), 1, "unbounded", seed=0)
    assert r.accounting.privacy == "unbounded" and r.levels[0].noised_cells == 1
    assert r.accounting.level_sensitivity == pytest.approx([1.0] * 4)


def test_a_connection_records_the_ledger_and_its_budget_rules() -> None:
    con = duckdb.connect()
    inf_tda(_product(), (1.0, 1e-6), 1, con=con)
    assert con.execute("SELECT input_table, output_table FROM inftda_releases").fetchall() == [
        ("<Arrow table>", "(not written: returned as arrow)")
    ]
    con.execute("CREATE TABLE t AS SELECT 1 AS x").fetchall()
    inftda_sql.set_budget(con, "t", rho=1.0)
    with pytest.raises(BudgetError, match="the input is an Arrow table, not a table"):
        inf_tda(_product(), (1.0, 1e-6), 1, con=con)
    assert con.execute("SELECT count(*) FROM inftda_releases").fetchall() == [(1,)]


BAD: list[tuple[str, Any, dict[str, Any], type[Exception], str]] = [
    ("not a series", lambda d: d.to_frame(), {}, SpecError, "data must be a pandas Series"),
    ("range index", lambda d: d.reset_index(drop=True), {}, SpecError, "a MultiIndex"),
    ("negative", lambda d: -d, {}, InputDataError, r"\d+ negative value\(s\)"),
    ("nan", lambda d: d.astype(float).where(d % 2 == 0), {}, InputDataError, "missing or infinite"),
    ("fraction", lambda d: d + 0.5, {}, InputDataError, "not whole numbers"),
    ("bool", lambda d: d > 0, {}, InputDataError, "dtype bool"),
    ("text", lambda d: d.astype(str), {}, InputDataError, "must hold counts"),
    ("empty", lambda d: d.iloc[:0], {}, InputDataError, "data is empty"),
    ("budget", lambda d: d, {"budget": 1.0}, SpecError, r"budget must be \(epsilon, delta\)"),
    ("delta", lambda d: d, {"budget": (1.0, 2.0)}, BudgetError, "delta must be strictly"),
    ("privacy", lambda d: d, {"privacy_type": "add"}, SpecError, "privacy_type must be one of"),
    ("contribution", lambda d: d, {"contribution": 0}, SpecError, "contribution must be"),
    ("distinct", lambda d: d, {"distinct_tuples": "yes"}, SpecError, "distinct_tuples must be"),
    ("domain", lambda d: d, {"domain": 3}, DomainError, "domain must be a MultiIndex"),
    ("conversion", lambda d: d, {"conversion": "loose"}, BudgetError, "conversion must be"),
]


@pytest.mark.parametrize(("name", "change", "kw", "error", "match"), BAD, ids=[b[0] for b in BAD])
def test_errors_name_the_argument_and_never_a_count(
    name: str, change: Any, kw: dict[str, Any], error: type[Exception], match: str
) -> None:
    data = _product() * 1000 + 123457  # counts no message may print
    args: dict[str, Any] = {"budget": (1.0, 1e-6), "contribution": 1, **kw}
    with pytest.raises(error, match=match) as err:
        inf_tda(change(data), **args)
    assert "123457" not in str(err.value) and "124457" not in str(err.value)


def test_the_index_levels_may_hold_missing_values_nowhere() -> None:
    idx = pd.MultiIndex.from_arrays([["a", None, "b"], [1, 2, 3]])
    with pytest.raises(DomainError, match=r"level 1 .* 1 missing value"):
        inf_tda(pd.Series([1, 2, 3], index=idx), (1.0, 1e-6), 1)


def test_a_level_the_domain_determines_spends_nothing() -> None:
    """One value on top (a single country): its count is the total, so it gets no noise and
    no share of rho (the package spends rho/T on it)."""
    inner = _product()
    data = pd.concat({"all": inner}, names=["country"])
    _, r = release_series(data, (1.0, 1e-6), 1, conversion="simple", seed=0)
    _, three = release_series(inner, (1.0, 1e-6), 1, conversion="simple", seed=0)
    assert r.accounting.level_sigma[0] == 0.0
    assert r.accounting.level_sigma[1:] == three.accounting.level_sigma
