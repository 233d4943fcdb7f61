"""CBDP end to end: release(..., mechanism="cbdp", features=...) on in-memory DuckDB."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import inftda_sql
from inftda_sql import BudgetExceededError, DomainError, InputDataError, SpecError
from inftda_sql.core.noise import discrete_gaussian_pmf, discrete_laplace_pmf
from inftda_sql.mechanisms import cbdp
from inftda_sql.synthetic import odmts, odmts_features

scipy_stats = pytest.importorskip("scipy.stats", reason="chi-square tests of the noise")

INF = float("inf")
FEATURES = {
    "total": [],
    "period": ["period"],
    "zones": ["o_zone", "d_zone", "period"],
    "mode": ["mode", "period"],
    "trip": ["o_stop", "d_stop", "period"],
}


def small_world(con: duckdb.DuckDBPyConnection) -> None:
    """3 stops, 3 periods: a cells table (the domain), its two factors, and trips."""
    con.execute(
        "CREATE TABLE stops AS SELECT * FROM (VALUES ('a','N',false),('b','N',true),('c','S',true)) "
        "t(stop, zone, hub)"
    ).fetchall()
    con.execute(
        """CREATE TABLE pairs AS SELECT o.stop AS o_stop, d.stop AS d_stop, o.zone AS o_zone,
           d.zone AS d_zone, CASE WHEN o.stop = d.stop THEN 'walk' WHEN o.zone = d.zone
           THEN 'local' ELSE 'bus' END AS mode FROM stops o, stops d"""
    ).fetchall()
    con.execute("CREATE TABLE periods AS SELECT range::INTEGER AS period FROM range(3)").fetchall()
    con.execute("CREATE TABLE cells AS SELECT * FROM pairs, periods").fetchall()
    con.execute(
        """CREATE TABLE trips AS SELECT * FROM (VALUES ('a','b',0),('a','b',0),('a','c',1),
           ('c','c',2),('b','a',2),('b','a',2),('b','a',2)) t(o_stop, d_stop, period)"""
    ).fetchall()


def truth(con: duckdb.DuckDBPyConnection, table: str = "trips") -> dict[tuple[Any, ...], int]:
    return {
        r[:3]: r[3]
        for r in con.execute(
            f"SELECT o_stop, d_stop, period, count(*) FROM {table} GROUP BY ALL"
        ).fetchall()
    }


def released(con: duckdb.DuckDBPyConnection, table: str) -> dict[tuple[Any, ...], int]:
    return {
        r[:3]: r[3]
        for r in con.execute(f'SELECT o_stop, d_stop, period, "count" FROM {table}').fetchall()
    }


def ledger_row(con: duckdb.DuckDBPyConnection, release_id: int) -> dict[str, Any]:
    cols = [d[0] for d in con.execute("DESCRIBE inftda_releases").fetchall()]
    row = con.execute(
        "SELECT * FROM inftda_releases WHERE release_id = $id", {"id": release_id}
    ).fetchall()[0]
    return dict(zip(cols, row, strict=True))


# ------------------------------------------------------------------------------------------------
# exact output under an infinite budget


@pytest.mark.parametrize("domain", ["cells", ["pairs", "periods"]])
@pytest.mark.parametrize("structure", ["flat", "hierarchical"])
@pytest.mark.parametrize("weights", ["cells", "uniform"])
def test_infinite_budget_is_exact(
    con: duckdb.DuckDBPyConnection, domain: object, structure: str, weights: str
) -> None:
    small_world(con)
    r = inftda_sql.release(
        con,
        "trips",
        mechanism="cbdp",
        features=FEATURES,
        domain=domain,
        rho=INF,
        structure=structure,
        weights=weights,
    )
    assert released(con, "trips_private") == truth(con)
    assert r.non_private == ("infinite budget (no noise)",) and r.total == 7
    # every feature column is in the output, decoded from the domain
    cols = [d[0] for d in con.execute("DESCRIBE trips_private").fetchall()]
    assert cols == ["o_stop", "d_stop", "period", "o_zone", "d_zone", "mode", "count"]
    # the features view holds every feature's true counts
    view = con.execute(
        'SELECT feature, o_zone, d_zone, period, "count" FROM trips_private_features '
        "WHERE feature = 'zones' ORDER BY ALL"
    ).fetchall()
    expected = con.execute(
        """SELECT 'zones', p.o_zone, p.d_zone, t.period, count(*) FROM trips t JOIN pairs p
           USING (o_stop, d_stop) GROUP BY ALL ORDER BY ALL"""
    ).fetchall()
    assert view == expected
    names = {
        r[0] for r in con.execute("SELECT DISTINCT feature FROM trips_private_features").fetchall()
    }
    assert names == set(FEATURES)


def test_infinite_budget_pre_aggregated_input(con: duckdb.DuckDBPyConnection) -> None:
    small_world(con)
    con.execute(
        "CREATE TABLE agg AS SELECT o_stop, d_stop, period, count(*) AS n FROM trips GROUP BY ALL"
    ).fetchall()
    inftda_sql.release(
        con, "agg", mechanism="cbdp", features=FEATURES, domain="cells", rho=INF, count="n"
    )
    assert released(con, "agg_private") == truth(con)


# ------------------------------------------------------------------------------------------------
# private releases: integers, non-negative, consistent, recorded


def test_pure_release_is_recorded(con: duckdb.DuckDBPyConnection) -> None:
    small_world(con)
    r = inftda_sql.release(
        con, "trips", mechanism="cbdp", features=FEATURES, domain="cells", epsilon=1.0
    )
    assert r.guarantee == "pureDP" and r.is_private
    assert r.accounting.noise == "laplace" and r.accounting.exact_levels == ("total",)
    # bounded DP: the total is public and exact; 4 noised features share epsilon
    assert r.total == 7
    assert r.accounting.level_epsilon == pytest.approx((0.25,) * 4)
    row = ledger_row(con, r.release_id)
    assert (row["guarantee"], row["epsilon"], row["delta"], row["rho"]) == ("pureDP", 1.0, 0.0, 0.5)
    assert row["mechanism"] == "cbdp" and row["tree"] == "features"
    assert json.loads(row["hierarchy"])["features"] == FEATURES
    details = json.loads(row["details"])
    assert details["noise"] == "laplace" and details["exact_levels"] == ["total"]
    assert details["level_epsilon"] == pytest.approx([0.25] * 4)
    assert all("seconds" not in lv for lv in details["levels"])  # no timings in the ledger
    assert "pure DP, discrete Laplace noise" in str(r)


def test_zcdp_release_uses_gaussian_noise(con: duckdb.DuckDBPyConnection) -> None:
    small_world(con)
    r = inftda_sql.release(
        con,
        "trips",
        mechanism="cbdp",
        features=FEATURES,
        domain="cells",
        rho=0.5,
        privacy="unbounded",
        seed=3,
    )
    assert r.guarantee == "zCDP" and r.accounting.noise == "gaussian"
    assert r.accounting.level_rho == pytest.approx((0.1,) * 5)
    assert r.non_private == ("seeded noise (tests and benchmarks only)",)
    row = ledger_row(con, r.release_id)
    assert row["guarantee"] == "zCDP" and row["rho"] == pytest.approx(0.5)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    seed=st.integers(0, 2**31),
    epsilon=st.sampled_from([0.05, 0.5, 5.0]),
    privacy=st.sampled_from(["bounded", "unbounded"]),
    structure=st.sampled_from(["flat", "hierarchical"]),
    weights=st.sampled_from(["cells", "uniform"]),
)
def test_releases_are_consistent_non_negative_integers(
    con: duckdb.DuckDBPyConnection,
    seed: int,
    epsilon: float,
    privacy: str,
    structure: str,
    weights: str,
) -> None:
    if not con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'odmts_trips'"
    ).fetchall()[0][0]:
        odmts(con, stops=12, zones=3, period_minutes=240, trips=400, seed=1)
    r = inftda_sql.release(
        con,
        "odmts_trips",
        mechanism="cbdp",
        features=odmts_features(5),
        domain=["odmts_pairs", "odmts_periods"],
        epsilon=epsilon,
        privacy=privacy,
        structure=structure,
        weights=weights,
        seed=seed,
        output="out",
        overwrite=True,
    )
    counts = np.array([c for (c,) in con.execute('SELECT "count" FROM out').fetchall()])
    assert counts.dtype.kind == "i" and (counts >= 1).all()
    # every feature in the view is the sum of the released leaves
    for name, cols in odmts_features(5).items():
        keys = ", ".join(cols) if cols else "NULL"
        view = con.execute(
            f'SELECT {keys}, "count" FROM out_features WHERE feature = $f ORDER BY ALL', {"f": name}
        ).fetchall()
        group = f"GROUP BY {keys}" if cols else ""
        sums = con.execute(f'SELECT {keys}, sum("count") FROM out {group} ORDER BY ALL').fetchall()
        assert view == sums
    if privacy == "bounded":
        assert r.total == 400  # the public total, exactly
    deviation = r.mechanism_params["rounding_max_deviation"]
    assert list(deviation) == [lv.name for lv in r.levels]
    # the rounding chain the release reports (the whole tree when hierarchical) and the leaves
    # are within 1 of the optimum; off the chain, within a few counts
    chain = [*r.mechanism_params["rounding_chain"], "trip"]
    if structure == "hierarchical":
        assert chain == list(deviation)
    assert all(deviation[name] < 1 for name in chain)
    assert all(d < 5 for d in deviation.values())


def test_privacy_unit_bounds_contributions(con: duckdb.DuckDBPyConnection) -> None:
    small_world(con)
    con.execute(
        "CREATE TABLE rides AS SELECT *, 'p' || (row_number() OVER () % 2) AS rider FROM trips"
    ).fetchall()
    r = inftda_sql.release(
        con,
        "rides",
        mechanism="cbdp",
        features=FEATURES,
        domain="cells",
        rho=INF,
        privacy_unit="rider",
        contribution=2,
    )
    assert r.diagnostics["rows_kept"] == 4 and r.total == 4
    assert r.accounting.exact_levels == ()  # two records per unit: the total is noised too


# ------------------------------------------------------------------------------------------------
# budgets, ledger, publish


def test_budget_composes_pure_releases(con: duckdb.DuckDBPyConnection) -> None:
    small_world(con)
    inftda_sql.set_budget(con, "trips", rho=0.6)
    inftda_sql.release(
        con, "trips", mechanism="cbdp", features=FEATURES, domain="cells", epsilon=1.0
    )
    with pytest.raises(BudgetExceededError, match=r"would spend rho=0\.5"):
        inftda_sql.release(
            con,
            "trips",
            mechanism="cbdp",
            features=FEATURES,
            domain="cells",
            epsilon=1.0,
            output="again",
        )
    led = inftda_sql.ledger(con)
    assert led.inputs[0]["spent_rho"] == pytest.approx(0.5)


def test_publish_copies_the_features_view(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    small_world(con)
    inftda_sql.release(
        con, "trips", mechanism="cbdp", features=FEATURES, domain="cells", epsilon=1.0
    )
    path = inftda_sql.publish(
        con, "trips_private", tmp_path / "pub.duckdb", public_tables=["pairs"]
    )
    pub = duckdb.connect(str(path), read_only=True)
    try:
        assert (
            pub.execute("SELECT count(*) FROM trips_private").fetchall()
            == con.execute("SELECT count(*) FROM trips_private").fetchall()
        )
        assert pub.execute(
            "SELECT DISTINCT feature FROM trips_private_features ORDER BY 1"
        ).fetchall() == [(n,) for n in sorted(FEATURES)]
        assert pub.execute("SELECT mechanism FROM inftda_releases").fetchall() == [("cbdp",)]
    finally:
        pub.close()


# ------------------------------------------------------------------------------------------------
# errors that name the problem


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"mechanism": "cbdp", "features": None}, SpecError, "mechanism 'cbdp' needs features=..."),
        (
            {"mechanism": "cbdp", "hierarchy": ["period"]},
            SpecError,
            "mechanism 'cbdp' releases features, not a hierarchy",
        ),
        (
            {"mechanism": "inftda", "hierarchy": None},
            SpecError,
            "features= is for the mechanisms that release features (cbdp)",
        ),
        (
            {"mechanism": "inftda", "features": None, "hierarchy": ["period"], "structure": "flat"},
            SpecError,
            "structure= is an option of the feature mechanisms (cbdp), not of 'inftda'",
        ),
        (
            {"mechanism": "inftda", "features": None, "hierarchy": ["period"]},
            Exception,
            "needs a delta",
        ),
        (
            {
                "mechanism": "cbdp",
                "features": {**FEATURES, "trip": ["o_stop", "d_stop", "period", "x"]},
            },
            InputDataError,
            "column 'x' (leaf column of feature 'trip') not in table 'trips'",
        ),
        ({"mechanism": "cbdp", "max_cells": 10}, SpecError, "27 cells exceed max_cells=10"),
        ({"mechanism": "cbdp", "split": {"period": 1}}, Exception, "missing: zones, mode, trip"),
    ],
)
def test_errors(
    con: duckdb.DuckDBPyConnection, kwargs: dict[str, Any], error: type[Exception], message: str
) -> None:
    small_world(con)
    args: dict[str, Any] = {"features": FEATURES, "domain": "cells", "epsilon": 1.0, **kwargs}
    if args.get("features") is None:
        args.pop("features")
    with pytest.raises(error) as info:
        inftda_sql.release(con, "trips", **args)
    assert message in str(info.value)


def test_lattice_violation_names_the_cell(con: duckdb.DuckDBPyConnection) -> None:
    small_world(con)
    con.execute("INSERT INTO cells VALUES ('a', 'b', 'N', 'S', 'local', 0)").fetchall()
    with pytest.raises(DomainError) as info:
        inftda_sql.release(
            con, "trips", mechanism="cbdp", features=FEATURES, domain="cells", epsilon=1.0
        )
    msg = str(info.value)
    assert (
        "puts leaf cell (o_stop='a', d_stop='b', period=0) in two cells of feature 'zones'" in msg
    )
    assert "table 'cells'" in msg


def test_input_outside_the_domain_is_named(con: duckdb.DuckDBPyConnection) -> None:
    small_world(con)
    con.execute("INSERT INTO trips VALUES ('a', 'z', 1), ('a', 'z', 1), ('q', 'a', 0)").fetchall()
    with pytest.raises(
        DomainError,
        match=r"2 leaf cell\(s\) of the input are not in the domain, e.g. \(o_stop='a', d_stop='z', period=1\)",
    ):
        inftda_sql.release(
            con, "trips", mechanism="cbdp", features=FEATURES, domain="cells", epsilon=1.0
        )
    con.execute("DELETE FROM trips WHERE d_stop = 'z' OR o_stop = 'q'").fetchall()
    con.execute("INSERT INTO trips VALUES ('a', NULL, 1)").fetchall()
    with pytest.raises(InputDataError, match="the input has NULL leaf values"):
        inftda_sql.release(
            con, "trips", mechanism="cbdp", features=FEATURES, domain="cells", epsilon=1.0
        )


def test_too_large_a_domain_is_refused_before_the_scan(
    con: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    small_world(con)
    monkeypatch.setattr("inftda_sql.mechanisms.base.available_memory", lambda: 1000)
    with pytest.raises(
        SpecError,
        match=r"needs about 0.0 GiB for 27 leaf cells, but only 0.0 GiB of memory is available",
    ):
        inftda_sql.release(
            con, "trips", mechanism="cbdp", features=FEATURES, domain="cells", epsilon=1.0
        )


# ------------------------------------------------------------------------------------------------
# the noise scale: statistical tests with a fixed p-value floor (a wrong sensitivity, split or
# scale must fail them)

P_FLOOR = 1e-4


def _chi_square_p(sample: np.ndarray, pmf: Any) -> float:
    """Goodness of fit of integer ``sample`` to ``pmf`` (bins with expected count >= 5)."""
    values, counts = np.unique(sample, return_counts=True)
    lo, hi = int(values.min()), int(values.max())
    support = np.arange(lo - 50, hi + 51)
    expected = pmf(support) * sample.size
    observed = np.zeros(support.size)
    observed[values - support[0]] = counts
    bins_o, bins_e, acc_o, acc_e = [], [], 0.0, 0.0
    for o, e in zip(observed, expected, strict=True):
        acc_o += o
        acc_e += e
        if acc_e >= 5:
            bins_o.append(acc_o)
            bins_e.append(acc_e)
            acc_o = acc_e = 0.0
    bins_o[-1] += acc_o
    bins_e[-1] += acc_e
    bins_e = list(np.array(bins_e) * sum(bins_o) / sum(bins_e))
    return float(scipy_stats.chisquare(bins_o, bins_e).pvalue)


def _flat_world(con: duckdb.DuckDBPyConnection, cells: int) -> None:
    """``cells`` leaf cells with 10,000 records each (noise never reaches zero), in 40 groups."""
    con.execute(
        f"CREATE TABLE flat_dom AS SELECT range AS c, range % 40 AS g FROM range({cells})"
    ).fetchall()
    con.execute("CREATE TABLE flat AS SELECT c, 10000 AS n FROM flat_dom").fetchall()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("options", "scale"),
    [
        # scale = L1 sensitivity / epsilon, by hand: add/remove one record moves one cell by 1
        ({"epsilon": 1.0, "privacy": "unbounded"}, 1.0),
        # replace one record: it leaves one cell and enters another (L1 = 2)
        ({"epsilon": 1.0}, 2.0),
        # three records per unit, bounded: L1 = 2 * 3
        ({"epsilon": 2.0, "contribution": 3}, 3.0),
    ],
)
def test_laplace_noise_scale_of_released_leaves(
    con: duckdb.DuckDBPyConnection, options: dict[str, Any], scale: float
) -> None:
    """The Laplace baseline (the leaf as the only feature): released - true is the noise."""
    _flat_world(con, 20_000)
    inftda_sql.release(
        con,
        "flat",
        mechanism="cbdp",
        features={"cell": ["c"]},
        domain="flat_dom",
        count="n",
        seed=11,
        **options,
    )
    noise = np.array(
        [c for (c,) in con.execute('SELECT "count" - 10000 FROM flat_private').fetchall()]
    )
    assert noise.size == 20_000
    assert _chi_square_p(noise, lambda x: discrete_laplace_pmf(x, scale)) > P_FLOOR
    # the same test rejects half and twice the scale: it would catch a wrong sensitivity
    assert _chi_square_p(noise, lambda x: discrete_laplace_pmf(x, 2 * scale)) < P_FLOOR
    assert _chi_square_p(noise, lambda x: discrete_laplace_pmf(x, scale / 2)) < P_FLOOR


@pytest.mark.slow
@pytest.mark.parametrize("pure", [True, False])
def test_every_feature_gets_its_share(
    con: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch, pure: bool
) -> None:
    """Three features in unbounded DP, split 1:1:2. The noisy counts the optimiser receives
    are compared with the true ones: the noise of each feature has the scale computed by hand."""
    _flat_world(con, 20_000)
    seen: dict[str, Any] = {}
    real = cbdp.solve

    def capture(problem: Any) -> Any:
        seen["problem"] = problem
        return real(problem)

    monkeypatch.setattr(cbdp, "solve", capture)
    budget = {"epsilon": 4.0} if pure else {"rho": 2.0}
    inftda_sql.release(
        con,
        "flat",
        mechanism="cbdp",
        features={"total": [], "group": ["g"], "cell": ["c"]},
        domain="flat_dom",
        count="n",
        privacy="unbounded",
        split={"total": 1, "group": 1, "cell": 2},
        seed=5,
        **budget,
    )
    problem = seen["problem"]
    noise_cells = problem.targets[2] - 10_000
    if pure:  # epsilon 4 split 1:1:2 -> the leaf gets 2, L1 = 1: scale 1/2
        assert (
            _chi_square_p(noise_cells.astype(int), lambda x: discrete_laplace_pmf(x, 0.5)) > P_FLOOR
        )
        assert (
            _chi_square_p(noise_cells.astype(int), lambda x: discrete_laplace_pmf(x, 1.0)) < P_FLOOR
        )
    else:  # rho 2 split 1:1:2 -> the leaf gets 1, L2 = 1: sigma = 1 / sqrt(2)
        sigma = 1 / math.sqrt(2)
        assert (
            _chi_square_p(noise_cells.astype(int), lambda x: discrete_gaussian_pmf(x, sigma))
            > P_FLOOR
        )
        assert (
            _chi_square_p(noise_cells.astype(int), lambda x: discrete_gaussian_pmf(x, 2 * sigma))
            < P_FLOOR
        )
    # the 40 group cells get the coarse share: their noise has the variance of scale 1 (pure:
    # eps 1, L1 1) or sigma sqrt(1/2) (zCDP: rho 0.5, L2 1) -- 40 draws, a coarse check
    group_noise = problem.targets[1] - 500 * 10_000
    expected_var = 2 * math.exp(-1) / (1 - math.exp(-1)) ** 2 if pure else 1.0
    assert np.var(group_noise) < 4 * expected_var + 1


def test_domain_from_data_is_recorded_as_not_private(con: duckdb.DuckDBPyConnection) -> None:
    day = odmts(con, stops=12, zones=3, period_minutes=240, trips=400, seed=1)
    con.execute(
        f"CREATE TABLE wide AS SELECT t.*, p.o_zone, p.d_zone, p.mode FROM {day.trips} t "
        f"JOIN {day.pairs} p USING (o_stop, d_stop)"
    ).fetchall()
    chain = {k: v for k, v in FEATURES.items() if k != "mode"}  # on the data, mode ~ zones
    r = inftda_sql.release(
        con, "wide", mechanism="cbdp", features=chain, domain_from_data=True, rho=INF
    )
    assert released(con, "wide_private") == truth(con, day.trips)
    assert "domain taken from the data" in r.non_private
    assert "FROM DATA" in ledger_row(con, r.release_id)["domain_source"]
    # on a handful of cells the features can coincide: the lattice check says so
    small_world(con)
    con.execute(
        "CREATE TABLE tiny AS SELECT t.*, p.o_zone, p.d_zone, p.mode FROM trips t "
        "JOIN pairs p USING (o_stop, d_stop)"
    ).fetchall()
    with pytest.raises(DomainError, match="feature 'zones' has as many cells as the leaf 'trip'"):
        inftda_sql.release(
            con, "tiny", mechanism="cbdp", features=FEATURES, domain_from_data=True, rho=INF
        )


def test_parquet_input_and_domain(tmp_path: Path) -> None:
    """Files work as for a hierarchy: the input charged to its path, a Domain without a column
    mapping is the domain, a mapping is refused (it serves chains), and the input passed as its
    own domain is refused (its categories would come from the private data)."""
    con = duckdb.connect(str(tmp_path / "db.duckdb"))
    dom, trips = tmp_path / "dom.parquet", tmp_path / "trips.parquet"
    con.execute(f"COPY (SELECT * FROM (VALUES ('a','x'),('a','y'),('b','x')) t(g, c)) TO '{dom}'")
    con.execute(f"COPY (SELECT * FROM (VALUES ('a','x'),('a','x'),('b','x')) t(g, c)) TO '{trips}'")
    features = {"total": [], "g": ["g"], "leaf": ["g", "c"]}
    r = inftda_sql.release(
        con,
        trips,
        mechanism="cbdp",
        features=features,
        domain=inftda_sql.Domain(str(dom)),
        rho=float("inf"),
    )
    assert r.output == "trips_private" and r.input == str(trips)
    assert con.execute("SELECT * FROM trips_private ORDER BY ALL").fetchall() == [
        ("a", "x", 2),
        ("b", "x", 1),
    ]
    with pytest.raises(DomainError, match="column mapping serves hierarchy chains"):
        inftda_sql.release(
            con,
            trips,
            mechanism="cbdp",
            features=features,
            domain=inftda_sql.Domain(str(dom), columns={"g": "g"}),
            rho=1.0,
            overwrite=True,
        )
    with pytest.raises(DomainError, match="which the input reads too"):
        inftda_sql.release(
            con, trips, mechanism="cbdp", features=features, domain=trips, rho=1.0, overwrite=True
        )


def test_times_stay_with_the_data_owner(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    """As for a hierarchy: the times (stages, queries, the optimiser's steps) sit in the ledger's
    diagnostics and the Release's not-private part, never in a published file."""
    small_world(con)
    r = inftda_sql.release(
        con, "trips", mechanism="cbdp", features=FEATURES, domain="cells", epsilon=1.0
    )
    words = ("second", "timing", "elapsed", "duration")
    details = json.loads(ledger_row(con, r.release_id)["details"])
    timed = [k for k in details if any(w in (k + json.dumps(details[k])).lower() for w in words)]
    assert timed and all(k.startswith("diagnostics") for k in timed), timed
    seconds = next(v for k, v in details.items() if k.startswith("diagnostics: seconds"))
    assert len(seconds["per_level"]) == len(r.levels)
    assert {"scan", "mechanism"} <= set(seconds["per_stage"])
    data = r.as_dict()
    data.pop(type(r).NOT_PRIVATE)
    assert not any(w in json.dumps(data, default=str).lower() for w in words)
    assert str(r).splitlines()[-1].startswith("* seconds (")
    path = inftda_sql.publish(con, "trips_private", tmp_path / "pub.duckdb")
    pub = duckdb.connect(str(path), read_only=True)
    try:
        row = pub.execute("SELECT * FROM inftda_releases").fetchall()[0]
    finally:
        pub.close()
    assert not any(w in str(v).lower() for v in row for w in words), row


def test_summary_has_no_parents_column(con: duckdb.DuckDBPyConnection) -> None:
    """A feature has no parents: the summary shows no column for them (it once showed a column
    headed ``-`` of zeros), in text and in HTML."""
    small_world(con)
    r = inftda_sql.release(
        con, "trips", mechanism="cbdp", features=FEATURES, domain="cells", epsilon=1.0
    )
    header = str(r).splitlines()[2].split()
    assert header == ["query", "name", "noise", "sd", "noised", "kept", "s*"]
    assert "<th>-</th>" not in r._repr_html_() and "<th>noised</th>" in r._repr_html_()
