"""Privacy units: contribution bounding in SQL before counting, and its accounting."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

import inftda_sql
from inftda_sql.engines.duckdb.ledger import read_releases

INF = float("inf")


@pytest.fixture
def trips(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    con.execute(
        "CREATE TABLE geo AS SELECT * FROM (VALUES ('N','a'),('N','b'),('S','c')) g(r, c)"
    ).fetchall()
    # unit 1: 5 records over 3 cells; unit 2: 1 record; unit 3: 2 records in one cell
    con.execute(
        "CREATE TABLE trips AS SELECT * FROM (VALUES (1,'N','a'),(1,'N','a'),(1,'N','b'),(1,'S','c'),"
        "(1,'S','c'),(2,'N','b'),(3,'S','c'),(3,'S','c')) t(u, r, c)"
    ).fetchall()
    return con


def _per_unit_max(con: duckdb.DuckDBPyConnection) -> int:
    return int(
        con.execute("SELECT max(n) FROM (SELECT u, count(*) n FROM trips GROUP BY u)").fetchall()[
            0
        ][0]
    )


@pytest.mark.parametrize("m,kept", [(1, 3), (2, 5), (3, 6), (5, 8)])
def test_each_unit_keeps_at_most_m_records(
    trips: duckdb.DuckDBPyConnection, m: int, kept: int
) -> None:
    r = inftda_sql.release(
        trips,
        "trips",
        hierarchy=["r", "c"],
        domain="geo",
        rho=INF,
        privacy_unit="u",
        contribution=m,
        seed=1,
    )
    assert r.total == kept == r.diagnostics["rows_kept"]
    assert r.diagnostics["rows_dropped"] == 8 - kept
    assert trips.execute("SELECT count(*) FROM trips").fetchall() == [(8,)]  # input untouched


def test_distinct_keeps_at_most_m_distinct_cells(trips: duckdb.DuckDBPyConnection) -> None:
    r = inftda_sql.release(
        trips,
        "trips",
        hierarchy=["r", "c"],
        domain="geo",
        rho=INF,
        privacy_unit="u",
        contribution=2,
        distinct=True,
        seed=1,
    )
    # unit 1 -> 2 of its 3 cells, unit 2 -> 1, unit 3 -> its single cell once
    assert r.total == 4
    assert r.accounting.level_sensitivity[-1] == pytest.approx(2.0)  # sqrt(2m) at the leaves


def test_choice_is_random_and_seed_reproducible(trips: duckdb.DuckDBPyConnection) -> None:
    outs = set()
    for seed in range(12):
        inftda_sql.release(
            trips,
            "trips",
            hierarchy=["r", "c"],
            domain="geo",
            rho=INF,
            privacy_unit="u",
            contribution=1,
            seed=seed,
            output="o",
            overwrite=True,
        )
        outs.add(tuple(trips.execute("SELECT * FROM o ORDER BY ALL").fetchall()))
    assert len(outs) > 1  # unit 1's record is not always the same one
    inftda_sql.release(
        trips,
        "trips",
        hierarchy=["r", "c"],
        domain="geo",
        rho=INF,
        privacy_unit="u",
        contribution=1,
        seed=5,
        output="o",
        overwrite=True,
    )
    first = trips.execute("SELECT * FROM o ORDER BY ALL").fetchall()
    inftda_sql.release(
        trips,
        "trips",
        hierarchy=["r", "c"],
        domain="geo",
        rho=INF,
        privacy_unit="u",
        contribution=1,
        seed=5,
        output="o",
        overwrite=True,
    )
    assert trips.execute("SELECT * FROM o ORDER BY ALL").fetchall() == first


@pytest.mark.slow
def test_selection_is_uniform(con: duckdb.DuckDBPyConnection) -> None:
    """One unit with 4 records in 4 cells, m = 1: each cell is kept about 1/4 of the time."""
    con.execute(
        "CREATE TABLE g AS SELECT 'R' AS r, c FROM (VALUES ('a'),('b'),('c'),('d')) t(c)"
    ).fetchall()
    con.execute("CREATE TABLE t AS SELECT 7 AS u, 'R' AS r, c FROM g").fetchall()
    counts = dict.fromkeys("abcd", 0)
    n = 200
    for seed in range(n):
        inftda_sql.release(
            con,
            "t",
            hierarchy=["r", "c"],
            domain="g",
            rho=INF,
            privacy_unit="u",
            contribution=1,
            seed=seed,
            output="o",
            overwrite=True,
            levels_view=False,
        )
        (cell,) = con.execute("SELECT c FROM o").fetchall()[0]
        counts[cell] += 1
    from scipy.stats import chisquare

    assert chisquare(list(counts.values())).pvalue > 1e-4


def test_diagnostics_stay_out_of_the_output(trips: duckdb.DuckDBPyConnection) -> None:
    r = inftda_sql.release(
        trips,
        "trips",
        hierarchy=["r", "c"],
        domain="geo",
        rho=1.0,
        privacy_unit="u",
        contribution=2,
    )
    cols = [c[0] for c in trips.execute("DESCRIBE trips_private").fetchall()]
    assert cols == ["r", "c", "count"]
    assert "rows_dropped" in r.diagnostics
    details = trips.execute("SELECT details FROM inftda_releases").fetchall()[0][0]
    assert "not private" in details
    assert r.accounting.level_names[0] == "root"  # m > 1: N is not public, the root is noised


@pytest.mark.parametrize(
    "kw,error,fragment",
    [
        ({"privacy_unit": "person"}, inftda_sql.InputDataError, "'person'"),
        ({"privacy_unit": "c"}, inftda_sql.SpecError, "hierarchy column"),
        ({"privacy_unit": "u", "count": "u"}, inftda_sql.SpecError, "one row per record"),
    ],
)
def test_bad_units(trips: duckdb.DuckDBPyConnection, kw: dict, error: type, fragment: str) -> None:
    with pytest.raises(error, match=fragment):
        inftda_sql.release(trips, "trips", hierarchy=["r", "c"], domain="geo", rho=1.0, **kw)


def test_null_unit_is_rejected(trips: duckdb.DuckDBPyConnection) -> None:
    trips.execute("UPDATE trips SET u = NULL WHERE u = 2").fetchall()
    with pytest.raises(inftda_sql.InputDataError, match="NULL"):
        inftda_sql.release(
            trips, "trips", hierarchy=["r", "c"], domain="geo", rho=1.0, privacy_unit="u"
        )
    assert _per_unit_max(trips) == 5


def _ledger_units(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str | None]]:
    return con.execute(
        "SELECT output_table, privacy_unit FROM inftda_releases ORDER BY release_id"
    ).fetchall()


def test_ledger_records_whether_the_unit_was_enforced_or_assumed(
    trips: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    """privacy_unit holds the unit column (as the catalog spells it) when the bound was
    enforced, NULL when one record per unit was only assumed; publish() carries it over."""
    common = {"hierarchy": ["r", "c"], "domain": "geo", "rho": 1.0}
    inftda_sql.release(trips, "trips", **common, privacy_unit="U", output="enforced")
    inftda_sql.release(trips, "trips", **common, output="assumed")
    assert _ledger_units(trips) == [("enforced", "u"), ("assumed", None)]
    for output, unit in (("enforced", "u"), ("assumed", None)):
        path = inftda_sql.publish(trips, output, tmp_path / f"{output}.duckdb")
        with duckdb.connect(str(path), read_only=True) as pub:
            assert _ledger_units(pub) == [(output, unit)]


def test_an_older_ledger_gets_the_privacy_unit_column(trips: duckdb.DuckDBPyConnection) -> None:
    """A database written before the column existed: it is added, old rows read NULL."""
    common = {"hierarchy": ["r", "c"], "domain": "geo", "rho": 1.0}
    inftda_sql.release(trips, "trips", **common, output="old")
    trips.execute("ALTER TABLE inftda_releases DROP COLUMN privacy_unit").fetchall()
    assert [r.privacy_unit for r in read_releases(trips)] == [None]
    inftda_sql.release(trips, "trips", **common, privacy_unit="u", output="new")
    assert _ledger_units(trips) == [("old", None), ("new", "u")]
    assert [r["privacy_unit"] for r in inftda_sql.ledger(trips).releases] == [None, "u"]
