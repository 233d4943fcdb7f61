"""Times depend on the private data (a level's time grows with its true non-empty cells): they
stay with the data owner, beside the diagnostics, and never reach a published file or the
ledger's default output."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

import inftda_sql
from inftda_sql._release import Release
from inftda_sql.cli import main
from tests.system.helpers import make_geo, make_persons

GEO = ["region", "province", "mun"]
#: words that would give a time away, in a key or anywhere in a text
TIME_WORDS = ("second", "timing", "elapsed", "duration")


def _keys(value: Any) -> list[str]:
    """Every key of a JSON value, however deep."""
    if isinstance(value, dict):
        return [k for k, v in value.items() for k in [k, *_keys(v)]]
    if isinstance(value, list):
        return [k for v in value for k in _keys(v)]
    return []


def _mentions_time(text: str) -> bool:
    return any(word in text.lower() for word in TIME_WORDS)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "work.duckdb"
    with duckdb.connect(str(path)) as con:
        make_geo(con)
        make_persons(con)
        con.execute(
            "CREATE TABLE people AS SELECT *, row_number() OVER () % 3 AS pid FROM persons"
        ).fetchall()
        inftda_sql.release(
            con,
            "people",
            hierarchy=GEO,
            domain="geo",
            rho=1.0,
            privacy_unit="pid",
            contribution=3,
            output="people_private",
        )
    return path


def _ledger_row(path: Path) -> dict[str, Any]:
    with duckdb.connect(str(path), read_only=True) as con:
        rel = con.sql("SELECT * FROM inftda_releases")
        return dict(zip(rel.columns, rel.fetchall()[0], strict=True))


def test_the_working_ledger_keeps_times_with_the_diagnostics(db: Path) -> None:
    details = json.loads(_ledger_row(db)["details"])
    assert "levels" in details and len(details["levels"]) == 4
    for level in details["levels"]:
        assert not any(_mentions_time(k) for k in _keys(level)), level
    timed = [k for k in details if _mentions_time(json.dumps(details[k])) or _mentions_time(k)]
    assert timed and all(k.startswith("diagnostics") for k in timed), timed
    seconds = next(v for k, v in details.items() if k.startswith("diagnostics: seconds"))
    assert len(seconds["per_level"]) == 4 and set(seconds["per_stage"]) >= {"scan", "topdown"}


def test_a_published_file_carries_no_time_anywhere(db: Path, tmp_path: Path) -> None:
    with duckdb.connect(str(db)) as con:
        out = inftda_sql.publish(con, "people_private", tmp_path / "public.duckdb")
    row = _ledger_row(out)
    assert not any(_mentions_time(str(v)) for v in row.values()), row
    details = json.loads(row["details"])
    assert not any(k.startswith("diagnostics") for k in details)
    assert [lv["level"] for lv in details["levels"]] == [0, 1, 2, 3]


def test_a_row_from_before_the_split_is_published_without_its_times(
    db: Path, tmp_path: Path
) -> None:
    """Rows written by earlier versions hold ``seconds`` in ``details.levels``."""
    with duckdb.connect(str(db)) as con:
        details = json.loads(con.execute("SELECT details FROM inftda_releases").fetchall()[0][0])
        old = {
            "levels": [{**lv, "seconds": 0.145} for lv in details["levels"]],
            "levels_view": details["levels_view"],
            "diagnostics (not private, for the data owner only)": {"rows_dropped": 1},
        }
        con.execute("UPDATE inftda_releases SET details = $d", {"d": json.dumps(old)}).fetchall()
        out = inftda_sql.publish(con, "people_private", tmp_path / "public.duckdb")
        python_view = inftda_sql.ledger(con).releases[0]["details"]
    assert not _mentions_time(_ledger_row(out)["details"])
    assert not _mentions_time(python_view)


def test_python_ledger_leaves_diagnostics_out_unless_asked(db: Path) -> None:
    with duckdb.connect(str(db), read_only=True) as con:
        default = inftda_sql.ledger(con).releases[0]
        full = inftda_sql.ledger(con, include_diagnostics=True).releases[0]
    assert not _mentions_time(json.dumps(default, default=str))
    assert "rows_dropped" not in default["details"]
    assert "rows_dropped" in full["details"] and _mentions_time(full["details"])
    assert {k: v for k, v in default.items() if k != "details"} == {
        k: v for k, v in full.items() if k != "details"
    }


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_cli_ledger_leaves_diagnostics_out_unless_asked(
    db: Path, fmt: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ledger", str(db), "--format", fmt]) == 0
    default = capsys.readouterr().out
    assert not _mentions_time(default) and "rows_dropped" not in default
    assert main(["ledger", str(db), "--format", fmt, "--include-diagnostics"]) == 0
    full = capsys.readouterr().out
    assert _mentions_time(full) and "rows_dropped" in full
    if fmt == "json":
        assert json.loads(default)["releases"][0]["output_table"] == "people_private"
    else:
        (row,) = csv.DictReader(io.StringIO(default))
        assert row["output_table"] == "people_private"


def test_the_release_object_labels_what_is_not_private(con: duckdb.DuckDBPyConnection) -> None:
    make_geo(con)
    make_persons(con)
    r = inftda_sql.release(con, "persons", hierarchy=GEO, domain="geo", rho=1.0)
    data = r.as_dict()
    private_part = data.pop(Release.NOT_PRIVATE)
    assert not _mentions_time(json.dumps(data, default=str)), data
    assert len(private_part["seconds_per_level"]) == len(r.levels)
    assert set(private_part) == {"seconds_per_stage", "seconds_per_level", "diagnostics"}
    text = str(r)
    header = next(line for line in text.splitlines() if line.split()[:1] == ["level"])
    assert header.split()[-1] == "s*"
    assert text.splitlines()[-1].startswith("* seconds (")
    assert "depend on the private data" in text.splitlines()[-1]
    assert "depend on the private data" in r._repr_html_()


#: what repr() must not show: the diagnostics' keys and the times' names
OWNER_ONLY = ("rows_in", "rows_kept", "rows_dropped", "timings", "diagnostics=", "seconds")


def _repr_is_safe(text: str, marked: bool = True) -> None:
    assert "\n" not in text
    assert not any(word in text for word in OWNER_ONLY), text
    assert not _mentions_time(text.replace("times", "")), text
    assert "not private" in text or not marked  # says what it left out, and where it is


def test_repr_leaves_out_what_is_not_private(db: Path) -> None:
    """repr() (what a notebook or a log shows of a Release) holds only what may be shared, for
    every kind of release; the NOT PRIVATE reasons stay in front."""
    with duckdb.connect(str(db)) as con:
        tree = inftda_sql.release(
            con, "people", hierarchy=GEO, domain="geo", rho=1.0, privacy_unit="pid",
            contribution=3, output="again", seed=1,
        )  # fmt: skip
        cbdp = inftda_sql.release(
            con, "people", mechanism="cbdp", features={"total": [], "leaf": GEO}, domain="geo",
            epsilon=1.0, privacy_unit="pid", contribution=3, output="features",
        )  # fmt: skip
        con.execute("CREATE TABLE hh AS SELECT *, 1 AS households FROM geo").fetchall()
        con.execute(
            "CREATE TABLE members AS SELECT * FROM (VALUES (1, 'North', 'N1', 'n1a'), "
            "(1, 'North', 'N1', 'n1a'), (2, 'South', 'S1', 's1a')) t(hh_id, region, province, mun)"
        ).fetchall()
        coc = inftda_sql.release_count_of_counts(
            con, "members", group="hh_id", hierarchy=GEO, groups="hh", epsilon=1.0,
            max_size=5, min_size=0,
        )  # fmt: skip
    assert tree.diagnostics["rows_dropped"] >= 0 and tree.timings and coc.timings
    for r in (tree, cbdp, coc):
        _repr_is_safe(repr(r))
        _repr_is_safe(repr(r.levels), marked=False)
    assert repr(tree).startswith("<Release #") and "NOT PRIVATE: seeded noise" in repr(tree)
    assert "NOT PRIVATE" not in repr(cbdp)
    text = str(coc)  # the count-of-counts summary marks its times as the release's does
    assert "s*" in text and "depend on the private data" in text.splitlines()[-1]
