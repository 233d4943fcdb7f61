"""The scan that codes string leaves before grouping them (engines/duckdb/scan.py,
``_scan_by_codes``) against the scan by values: on every kind of bad input, alone and two at a
time, the release fails with the same error, word for word (the coded scan hands a cell without
a code back to the scan by values, and reads its count checks before any fetch converts a
count); on good inputs it releases the same table."""

from __future__ import annotations

from typing import Any

import duckdb
import pytest

import inftda_sql
from inftda_sql.engines.duckdb import scan as scan_module
from tests.system.helpers import PERSONS, make_geo

GEO = ["region", "province", "mun"]
#: (leaf, count) rows of a pre-aggregated input, and what is wrong with them, per count type
GOOD = [(mun, 2) for _, _, mun in PERSONS]
COMMON: dict[str, list[tuple[Any, Any]]] = {
    "a NULL leaf": [(None, 1)],
    "an unlisted leaf": [("x9z", 1)],
    "a NULL count": [("n1a", None)],
    "a negative count": [("n1a", -3)],
}
BAD: dict[str, dict[str, list[tuple[Any, Any]]]] = {
    "HUGEINT": {
        **COMMON,
        "a count beyond int64": [("n1a", 2**70)],
        "a cell beyond int64": [("s1c", 2**62), ("s1c", 2**62)],  # its sum: no BIGINT
    },
    "DOUBLE": {
        **COMMON,
        "a fractional count": [("n1a", 0.5)],
        "an infinite count": [("n1a", float("inf"))],
        "a NaN count": [("n1a", float("nan"))],
    },
}
FAULTS = [
    (kind, faults)
    for kind, bad in BAD.items()
    for faults in [(), *((f,) for f in bad), *((a, b) for a in bad for b in bad if a < b)]
]


def _table(
    con: duckdb.DuckDBPyConnection, rows: list[tuple[Any, Any]], wide: bool, kind: str = "HUGEINT"
) -> None:
    con.execute("DROP TABLE IF EXISTS trips").fetchall()
    con.execute(f"CREATE TABLE trips (mun VARCHAR, n {kind})").fetchall()
    con.executemany("INSERT INTO trips VALUES (?, ?)", rows)
    if wide:  # the ancestors from the domain, or 'Nowhere' where it does not list the leaf
        con.execute(
            "CREATE OR REPLACE TABLE trips AS SELECT coalesce(g.region, 'Nowhere') AS region, "
            "coalesce(g.province, 'P0') AS province, t.mun, t.n FROM trips t "
            "LEFT JOIN geo g USING (mun)"
        ).fetchall()


def _outcome(con: duckdb.DuckDBPyConnection, **kw: Any) -> tuple[str, Any]:
    try:
        inftda_sql.release(
            con, "trips", hierarchy=GEO, domain="geo", count="n", output="out", overwrite=True,
            **kw,
        )  # fmt: skip
    except inftda_sql.InftdaError as exc:
        return type(exc).__name__, str(exc)
    return "released", con.execute("SELECT * FROM out ORDER BY ALL").fetchall()


def _both(con: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch, **kw: Any) -> None:
    coded = _outcome(con, **kw)
    with monkeypatch.context() as m:
        m.setattr(scan_module, "_scan_by_codes", lambda *args, **kw: None)
        by_values = _outcome(con, **kw)
    assert coded == by_values


@pytest.mark.parametrize("wide", [False, True], ids=["star", "wide"])
@pytest.mark.parametrize(
    ("kind", "faults"),
    FAULTS,
    ids=[f"{kind}: {' + '.join(faults) or 'none'}" for kind, faults in FAULTS],
)
def test_the_same_error_as_the_scan_by_values(
    con: duckdb.DuckDBPyConnection,
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
    faults: tuple[str, ...],
    wide: bool,
) -> None:
    make_geo(con)
    _table(con, GOOD + [row for fault in faults for row in BAD[kind][fault]], wide, kind)
    _both(con, monkeypatch, rho=float("inf"))


@pytest.mark.parametrize("extra", [[], [("n1a", -3)]], ids=["alone", "with a negative count"])
def test_other_ancestors_fail_alike(
    con: duckdb.DuckDBPyConnection,
    monkeypatch: pytest.MonkeyPatch,
    extra: list[tuple[Any, Any]],
) -> None:
    """A row whose ancestors are not the domain's (n1a under South), or NULL, is named alike."""
    make_geo(con)
    _table(con, GOOD + extra, wide=True)
    for region in ("'South'", "NULL"):
        con.execute(f"INSERT INTO trips VALUES ({region}, 'N1', 'n1a', 1)").fetchall()
        _both(con, monkeypatch, rho=float("inf"))
        con.execute("DELETE FROM trips WHERE region IS DISTINCT FROM 'North' AND mun = 'n1a'")


def test_a_privacy_unit_scan_releases_alike(
    con: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Contribution bounding before the codes' join: the same seeded table either way."""
    make_geo(con)
    con.execute(
        "CREATE TABLE trips AS SELECT i % 5 AS u, mun FROM (VALUES "
        + ", ".join(f"({i}, '{mun}')" for i, (_, _, mun) in enumerate(PERSONS))
        + ") t(i, mun)"
    ).fetchall()
    kw: dict[str, Any] = {"privacy_unit": "u", "contribution": 2, "epsilon": 1.0, "delta": 1e-8}
    outcomes = []
    for forced in (False, True):
        with monkeypatch.context() as m:
            if forced:
                m.setattr(scan_module, "_scan_by_codes", lambda *args, **kw: None)
            inftda_sql.release(
                con, "trips", hierarchy=GEO, domain="geo", output="out", overwrite=True, seed=3,
                **kw,
            )  # fmt: skip
            outcomes.append(con.execute("SELECT * FROM out ORDER BY ALL").fetchall())
    assert outcomes[0] == outcomes[1]
