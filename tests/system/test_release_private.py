"""Finite budgets: the released table is private, consistent, non-negative and in the domain."""

from __future__ import annotations

import json

import duckdb
import numpy as np
import pytest

import inftda_sql
from tests.system.helpers import make_geo, make_od, make_persons, released

GEO = ["region", "province", "mun"]
OD = [["o_reg", "o_mun"], ["d_reg", "d_prov", "d_mun"]]
OD_COLS = [c for chain in OD for c in chain]


def _sparse_world(con: duckdb.DuckDBPyConnection) -> None:
    """A wide domain (400 leaves) with records in a handful of cells."""
    con.execute(
        "CREATE TABLE wgeo AS SELECT 'R' || (i // 100) AS region, 'P' || (i // 10) AS province, "
        "'M' || i AS mun FROM range(400) r(i)"
    ).fetchall()
    con.execute(
        "CREATE TABLE wpeople AS SELECT 'R' || (i // 100) AS region, 'P' || (i // 10) AS province, "
        "'M' || i AS mun FROM range(400) r(i), range(30) k(j) WHERE i % 37 = 0"
    ).fetchall()


def test_positive_integers_total_and_domain(con: duckdb.DuckDBPyConnection) -> None:
    _sparse_world(con)
    r = inftda_sql.release(con, "wpeople", hierarchy=GEO, domain="wgeo", rho=0.5, seed=1)
    rows = released(con, "wpeople_private", GEO)
    counts = np.array([row[-1] for row in rows])
    assert counts.dtype.kind == "i" and (counts > 0).all()
    assert counts.sum() == 330 == r.total  # bounded DP: the root N is public and kept
    outside = con.execute(
        "SELECT count(*) FROM wpeople_private p ANTI JOIN wgeo g USING (region, province, mun)"
    ).fetchall()
    assert outside == [(0,)]
    types = dict(
        con.execute(
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_name = 'wpeople_private'"
        ).fetchall()
    )
    assert types["count"] == "BIGINT"


def test_zero_cells_of_the_domain_can_be_released(con: duckdb.DuckDBPyConnection) -> None:
    """Children come from the public domain: empty cells are noised and may survive."""
    _sparse_world(con)
    false_positive = 0
    for seed in range(5):
        inftda_sql.release(
            con,
            "wpeople",
            hierarchy=GEO,
            domain="wgeo",
            rho=0.05,
            seed=seed,
            output="o",
            overwrite=True,
        )
        false_positive += con.execute(
            "SELECT count(*) FROM o ANTI JOIN (SELECT DISTINCT * FROM wpeople) USING (region, province, mun)"
        ).fetchall()[0][0]
    assert false_positive > 0


def test_consistency_every_level_sums(con: duckdb.DuckDBPyConnection) -> None:
    make_od(con)
    inftda_sql.release(
        con,
        "od",
        hierarchy=OD,
        domain=["geo_o", "geo_d"],
        tree="destination",
        rho=0.1,
        count="n",
        seed=3,
        output="out",
    )
    per_level = con.execute(
        "SELECT level, sum(count) FROM out_levels GROUP BY 1 ORDER BY 1"
    ).fetchall()
    assert {total for _, total in per_level} == {23}
    assert len(per_level) == 6


@pytest.mark.parametrize("tree", ["destination", "origin"])
def test_microdata_and_preaggregated_identical_under_seed(
    con: duckdb.DuckDBPyConnection, tree: str
) -> None:
    make_od(con)
    kw = dict(hierarchy=OD, domain=["geo_o", "geo_d"], tree=tree, rho=0.2, seed=42)
    inftda_sql.release(con, "od", count="n", output="a", **kw)
    inftda_sql.release(con, "od_micro", output="b", **kw)
    assert released(con, "a", OD_COLS) == released(con, "b", OD_COLS)


def test_ledger_row_matches_result(con: duckdb.DuckDBPyConnection) -> None:
    make_geo(con)
    make_persons(con)
    r = inftda_sql.release(
        con, "persons", hierarchy=GEO, domain="geo", epsilon=1.0, delta=1e-8, seed=7
    )
    row = con.execute(
        "SELECT * FROM inftda_releases WHERE release_id = $id", {"id": r.release_id}
    ).fetchall()
    cols = [d[0] for d in con.execute("DESCRIBE inftda_releases").fetchall()]
    led = dict(zip(cols, row[0], strict=True))
    b = r.accounting.budget
    assert led["input_table"] == "persons" and led["output_table"] == "persons_private"
    assert led["rho"] == b.rho and led["epsilon"] == b.epsilon and led["delta"] == b.delta == 1e-8
    assert led["conversion"] == "tight" and led["budget_given"] == "epsilon_delta"
    assert led["level_rho"] == list(r.accounting.level_rho)
    assert led["level_sigma"] == list(r.accounting.level_sigma)
    assert led["level_sensitivity"] == list(r.accounting.level_sensitivity)
    assert led["seeded"] is True and r.seeded
    assert led["non_private"] == ["seeded noise (tests and benchmarks only)"]
    assert led["privacy"] == "bounded" and led["contribution"] == 1
    assert json.loads(led["hierarchy"]) == {"chains": [GEO], "tree": "chain"}
    assert led["library_version"] == inftda_sql.__version__
    assert abs(sum(led["level_rho"]) - b.rho) < 1e-12


def test_default_release_is_unseeded_and_private(con: duckdb.DuckDBPyConnection) -> None:
    make_geo(con)
    make_persons(con)
    r = inftda_sql.release(con, "persons", hierarchy=GEO, domain="geo", rho=1.0)
    assert not r.seeded and r.is_private and r.non_private == ()
    assert con.execute("SELECT seeded, non_private FROM inftda_releases").fetchall() == [
        (False, [])
    ]
    text = str(r)
    assert "release #1" in text and "NOT PRIVATE" not in text


def test_unbounded_noises_the_root(con: duckdb.DuckDBPyConnection) -> None:
    make_geo(con)
    make_persons(con)
    totals = set()
    for seed in range(6):
        r = inftda_sql.release(
            con,
            "persons",
            hierarchy=GEO,
            domain="geo",
            rho=0.05,
            privacy="unbounded",
            seed=seed,
            overwrite=True,
        )
        totals.add(r.total)
        assert r.levels[0].noised_cells == 1
    assert len(totals) > 1


def test_domain_from_data_is_recorded_not_private(con: duckdb.DuckDBPyConnection) -> None:
    make_persons(con)
    r = inftda_sql.release(con, "persons", hierarchy=GEO, domain_from_data=True, rho=1.0)
    assert "domain taken from the data" in r.non_private
    src, flags = con.execute("SELECT domain_source, non_private FROM inftda_releases").fetchall()[0]
    assert "FROM DATA" in src and "domain taken from the data" in flags


def test_overwrite_replaces_and_records_twice(con: duckdb.DuckDBPyConnection) -> None:
    make_geo(con)
    make_persons(con)
    inftda_sql.release(con, "persons", hierarchy=GEO, domain="geo", rho=1.0)
    r2 = inftda_sql.release(con, "persons", hierarchy=GEO, domain="geo", rho=1.0, overwrite=True)
    assert r2.release_id == 2
    assert con.execute("SELECT count(*) FROM inftda_releases").fetchall() == [(2,)]


def test_thread_count_does_not_change_a_seeded_release(
    con: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chunks get their own spawned streams, so parallelism cannot change the output."""
    from inftda_sql.core import topdown as _topdown

    _sparse_world(con)
    monkeypatch.setattr(_topdown, "CHUNK_CHILDREN", 16)  # many chunks on a small level
    outputs = []
    for threads in (1, 2, 4):
        real = _topdown.topdown

        def with_threads(
            *a: object, _n: int = threads, _real: object = real, **kw: object
        ) -> object:
            kw["threads"] = _n
            return _real(*a, **kw)  # type: ignore[operator]

        monkeypatch.setattr("inftda_sql.mechanisms.base.topdown", with_threads)
        inftda_sql.release(
            con,
            "wpeople",
            hierarchy=GEO,
            domain="wgeo",
            rho=0.3,
            seed=11,
            output="t",
            overwrite=True,
        )
        outputs.append(released(con, "t", GEO))
    assert outputs[0] == outputs[1] == outputs[2]
    assert len(outputs[0]) > 5
