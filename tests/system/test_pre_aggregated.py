"""A pre-aggregated input without its count column stops before any noise, on every front end;
an evaluation reads a release's own input as the release read it (issue 23, item 3).

Counted one row per record, a table of counts gives the number of its rows instead of the
records they stand for, silently, and the budget is spent on it. The check reads the schema
only (names and types). The Spark engine's case is in test_spark.py, the messages of every
front end in test_errors_that_teach.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

import inftda_sql
from inftda_sql._errors import InputDataError, SpecError
from inftda_sql.cli import main
from inftda_sql.engines import checks
from tests.system.helpers import make_geo, make_persons, snapshot

INF = float("inf")
GEO = ["region", "province", "mun"]


@pytest.fixture
def agg(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """geo, persons (microdata) and trips (pre-aggregated: its counts in ``people``)."""
    make_geo(con)
    make_persons(con)
    con.execute(
        "CREATE TABLE trips AS SELECT *, count(*)::BIGINT AS people FROM persons GROUP BY ALL"
    ).fetchall()
    return con


@pytest.mark.parametrize(
    "name",
    ["count", "N", "cnt", "people", "n_trips", "trips_total", "FlowCount", "num_persons", "Freq"],
)
def test_names_that_say_count(name: str) -> None:
    assert checks.looks_like_count(name)


@pytest.mark.parametrize("name", ["age", "year", "income", "id", "range", "mun_code", "hh_id"])
def test_names_of_attributes(name: str) -> None:
    assert not checks.looks_like_count(name)


def test_refused_before_any_noise_and_accepted_with_count_or_microdata(
    agg: duckdb.DuckDBPyConnection,
) -> None:
    before = snapshot(agg)
    with pytest.raises(InputDataError) as info:
        inftda_sql.release(agg, "trips", hierarchy=GEO, domain="geo", rho=1.0)
    assert "'people'" in str(info.value) and info.value.param == "count"
    assert snapshot(agg) == before  # no output, no ledger row, nothing spent
    r = inftda_sql.release(agg, "trips", hierarchy=GEO, domain="geo", rho=INF, count="people")
    assert r.total == 16
    r = inftda_sql.release(
        agg, "trips", hierarchy=GEO, domain="geo", rho=INF, microdata=True, overwrite=True
    )
    assert r.total == 4  # what the caller asked for: one record per row (4 rows)
    details = json.loads(agg.execute("SELECT details FROM inftda_releases").fetchall()[-1][0])
    assert details["count"] is None and details["microdata"] is True


def test_microdata_with_attributes_and_used_columns_passes(
    agg: duckdb.DuckDBPyConnection,
) -> None:
    """Numeric attributes are no count; a count-like name the release uses (a hierarchy column,
    the privacy unit) is not refused either."""
    agg.execute(
        "CREATE TABLE people AS SELECT *, 40 AS age, 2020 AS year, "
        "(row_number() OVER ())::INTEGER AS person_n FROM persons"
    ).fetchall()
    r = inftda_sql.release(
        agg, "people", hierarchy=GEO, domain="geo", rho=INF, privacy_unit="person_n"
    )
    assert r.total == 16


def test_count_and_microdata_together_are_refused(agg: duckdb.DuckDBPyConnection) -> None:
    with pytest.raises(SpecError, match="pass one of them"):
        inftda_sql.release(
            agg, "trips", hierarchy=GEO, domain="geo", rho=1.0, count="people", microdata=True
        )


def _od_files(folder: Path) -> None:
    """od.parquet (pre-aggregated, counts in ``count``) and geo.parquet, as in the issue."""
    with duckdb.connect() as con:
        make_geo(con)
        make_persons(con)
        con.execute(
            f"COPY (SELECT *, count(*)::BIGINT AS count FROM persons GROUP BY ALL) "
            f"TO '{folder / 'od.parquet'}'"
        ).fetchall()
        con.execute(f"COPY geo TO '{folder / 'geo.parquet'}'").fetchall()


def test_cli_refuses_a_file_of_counts_without_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's command: exit 1 with the fix, no database file left behind; --microdata
    and a TOML ``microdata = true`` say it is microdata."""
    monkeypatch.chdir(tmp_path)
    _od_files(tmp_path)
    argv = ["release", "out.duckdb", "od.parquet", "--hierarchy", "region,province,mun"]
    argv += ["--domain", "geo.parquet", "--rho", "inf", "--quiet"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "'count'" in err and "--count count" in err and "--microdata" in err
    assert not (tmp_path / "out.duckdb").exists()
    assert main([*argv, "--microdata"]) == 0
    (tmp_path / "release.toml").write_text("microdata = true\n", encoding="utf-8")
    assert main([*argv, "--config", "release.toml", "--output", "again"]) == 0
    with duckdb.connect("out.duckdb", read_only=True) as con:
        assert con.execute("SELECT sum(count) FROM od_private").fetchall() == [(4,)]
        assert con.execute("SELECT sum(count) FROM again").fetchall() == [(4,)]


def test_cli_evaluate_reads_the_truth_with_the_recorded_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`inftda-sql evaluate pt.duckdb od.parquet od_private` after a release with --count: the
    true side is the people, not the rows; another --count is refused."""
    monkeypatch.chdir(tmp_path)
    _od_files(tmp_path)
    argv = ["release", "out.duckdb", "od.parquet", "--hierarchy", "region,province,mun"]
    argv += ["--domain", "geo.parquet", "--rho", "inf", "--quiet", "--count", "count"]
    assert main(argv) == 0
    capsys.readouterr()
    assert main(["evaluate", "out.duckdb", "od.parquet", "od_private", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["total_true"], r["total_released"], r["max_abs_error"]) for r in rows] == [
        (16, 16, 0)
    ] * 4
    assert main(["evaluate", "out.duckdb", "od.parquet", "od_private", "--count", "mun"]) == 1
    assert "--count count" in capsys.readouterr().err


def test_evaluate_takes_the_count_and_hierarchy_from_the_ledger(
    agg: duckdb.DuckDBPyConnection,
) -> None:
    inftda_sql.release(agg, "trips", hierarchy=GEO, domain="geo", rho=INF, count="people")
    ev = inftda_sql.evaluate(agg, "trips", "trips_private")
    assert ev.project("total_true, total_released, max_abs_error").fetchall() == [(16, 16, 0)] * 4
    same = inftda_sql.evaluate(agg, "trips", "trips_private", hierarchy=GEO, count="PEOPLE")
    assert same.fetchall() == ev.fetchall()
    with pytest.raises(SpecError, match="count='people'"):
        inftda_sql.evaluate(agg, "trips", "trips_private", hierarchy=GEO, count="province")
    # another table: read as asked (the microdata of the same people)
    other = inftda_sql.evaluate(agg, "persons", "trips_private", hierarchy=GEO)
    assert other.project("total_true").fetchall()[0] == (16,)


def test_evaluate_refuses_a_truth_whose_total_is_not_what_the_release_read(
    agg: duckdb.DuckDBPyConnection,
) -> None:
    inftda_sql.release(agg, "trips", hierarchy=GEO, domain="geo", rho=1.0, count="people")
    agg.execute("UPDATE trips SET people = people + 1 WHERE mun = 'n1a'").fetchall()
    with pytest.raises(InputDataError, match="not the total release #1 read") as info:
        inftda_sql.evaluate(agg, "trips", "trips_private")
    assert "17" not in str(info.value) and "16" not in str(info.value)  # no private count
