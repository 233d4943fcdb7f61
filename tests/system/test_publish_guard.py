"""publish() ships a release only while it is what the release wrote, copies no public table
that reads private data, and never writes onto a file the working database uses."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import duckdb
import pytest

import inftda_sql
from inftda_sql import InftdaError, SpecError
from tests.system.helpers import make_geo, make_persons

GEO = ["region", "province", "mun"]
FEATURES = {"total": [], "cell": ["o", "d"]}


@pytest.fixture
def db(tmp_path: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    con = duckdb.connect(str(tmp_path / "work.duckdb"))
    make_geo(con)
    make_persons(con)
    yield con
    con.close()


def _hierarchy(con: duckdb.DuckDBPyConnection) -> tuple[str, str]:
    inftda_sql.release(con, "persons", hierarchy=GEO, domain="geo", rho=1.0, output="o")
    return "o", "o_levels"


def _cbdp(con: duckdb.DuckDBPyConnection) -> tuple[str, str]:
    con.execute(
        "CREATE TABLE cells AS SELECT o, d FROM (VALUES ('a'), ('b')) x(o), "
        "(VALUES ('a'), ('b'), ('c')) y(d)"
    ).fetchall()
    con.execute(
        "CREATE TABLE trips AS SELECT * FROM (VALUES ('a','b'),('a','b'),('b','c')) t(o, d)"
    ).fetchall()
    inftda_sql.release(
        con, "trips", mechanism="cbdp", features=FEATURES, domain="cells", epsilon=1.0, output="o"
    )
    return "o", "o_features"


def _count_of_counts(con: duckdb.DuckDBPyConnection) -> tuple[str, str]:
    con.execute(
        "CREATE TABLE people AS SELECT * FROM (VALUES (1,'North','n1a'),(1,'North','n1a'),"
        "(2,'North','n1b'),(3,'South','s1a')) t(hh, region, mun)"
    ).fetchall()
    con.execute(
        "CREATE TABLE places AS SELECT region, mun, count(DISTINCT hh) AS n FROM geo "
        "LEFT JOIN people USING (region, mun) GROUP BY ALL"
    ).fetchall()
    inftda_sql.release_count_of_counts(
        con,
        "people",
        group="hh",
        hierarchy=["region", "mun"],
        groups="places",
        max_size=4,
        epsilon=1.0,
        output="o",
    )
    return "o", "o_levels"


KINDS: dict[str, Callable[[duckdb.DuckDBPyConnection], tuple[str, str]]] = {
    "hierarchy": _hierarchy,
    "cbdp": _cbdp,
    "count_of_counts": _count_of_counts,
}

#: edits of a released table after the release: each must stop publish()
EDITS = {
    "replace_type": (
        "CREATE OR REPLACE TABLE o AS SELECT region, province, mun, count::DOUBLE AS count FROM o"
    ),
    # the true counts of every cell, zeros included: never what a release wrote (it writes
    # positive cells; the true positive cells alone equal a noisy release about once in 300)
    "replace_exact": (
        "CREATE OR REPLACE TABLE o AS SELECT region, province, mun, count(p.mun) AS count "
        "FROM geo LEFT JOIN persons p USING (region, province, mun) GROUP BY ALL"
    ),
    "update": "UPDATE o SET count = count + 1 WHERE rowid = 0",
    "insert": "INSERT INTO o SELECT * FROM o LIMIT 1",
    "delete": "DELETE FROM o WHERE rowid = 0",
    "alter": "ALTER TABLE o RENAME COLUMN mun TO municipality",
}


def _refused(con: duckdb.DuckDBPyConnection, target: Path, *what: str) -> str:
    with pytest.raises(InftdaError) as info:
        inftda_sql.publish(con, "o", target)
    message = str(info.value)
    assert "release #1" in message and "overwrite=True" in message, message
    for part in what:
        assert part in message, message
    assert not target.exists()
    return message


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_an_edited_table_is_not_published(
    db: duckdb.DuckDBPyConnection, tmp_path: Path, edit: str
) -> None:
    _hierarchy(db)
    db.execute(EDITS[edit]).fetchall()
    message = _refused(db, tmp_path / "pub.duckdb", "table main.o", "rows or columns")
    assert not any(ch.isdigit() for ch in message.replace("#1", "")), message  # no counts


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_release_kind_is_checked(
    db: duckdb.DuckDBPyConnection, tmp_path: Path, kind: str
) -> None:
    output, _ = KINDS[kind](db)
    first = inftda_sql.publish(db, output, tmp_path / "before.duckdb")  # untouched: published
    # the published file carries its own fingerprint: it can be published again
    with duckdb.connect(str(first)) as pub:
        inftda_sql.publish(pub, output, tmp_path / "again.duckdb")
    column = db.execute(f"SELECT * FROM {output} LIMIT 0").description[-1][0]
    db.execute(f'UPDATE {output} SET "{column}" = "{column}" + 1 WHERE rowid = 0').fetchall()
    _refused(db, tmp_path / "pub.duckdb", "table main.o")


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_replaced_view_is_not_published(
    db: duckdb.DuckDBPyConnection, tmp_path: Path, kind: str
) -> None:
    output, view = KINDS[kind](db)
    db.execute(f"CREATE OR REPLACE VIEW {view} AS SELECT * FROM {output}").fetchall()
    _refused(db, tmp_path / "pub.duckdb", f"view main.{view}", "definition")
    db.execute(f"DROP VIEW {view}").fetchall()
    _refused(db, tmp_path / "pub.duckdb", f"view main.{view}", "dropped")


def test_a_table_hiding_the_release_is_not_published(
    db: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    """A temporary table (or a view) of the release's name is what the name denotes first."""
    _hierarchy(db)
    exact = "SELECT region, province, mun, count(*) AS count FROM persons GROUP BY ALL"
    db.execute(f"CREATE TEMP TABLE o AS {exact}").fetchall()
    _refused(db, tmp_path / "pub.duckdb", "table main.o", "temp.main.o")
    db.execute("DROP TABLE temp.main.o").fetchall()
    db.execute(f"CREATE TEMP VIEW o AS {exact}").fetchall()
    with pytest.raises(SpecError, match="'o' is a view"):
        inftda_sql.publish(db, "o", tmp_path / "pub.duckdb")
    assert not (tmp_path / "pub.duckdb").exists()


def test_the_copy_is_checked_too(
    db: duckdb.DuckDBPyConnection, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What is copied is checked after the copy (another connection may write in between):
    with the first check skipped, an edited table is still not published."""
    from inftda_sql import _publish

    _hierarchy(db)
    db.execute(EDITS["update"]).fetchall()
    monkeypatch.setattr(_publish, "_check_unchanged", lambda *args: None)
    with pytest.raises(InftdaError, match="changed while publish"):
        inftda_sql.publish(db, "o", tmp_path / "pub.duckdb")
    assert not (tmp_path / "pub.duckdb").exists()


def test_the_fingerprint_is_public_and_taken_at_write_time(
    db: duckdb.DuckDBPyConnection,
) -> None:
    _hierarchy(db)
    inftda_sql.release(db, "persons", hierarchy=GEO, domain="geo", rho=1.0, return_as="arrow")
    (written, in_memory), details = (
        db.execute("SELECT fingerprint FROM inftda_releases ORDER BY release_id").fetchall(),
        db.execute("SELECT details FROM inftda_releases WHERE release_id = 1").fetchall()[0][0],
    )
    objects = json.loads(written[0])["objects"]
    assert [(o["name"], o["kind"]) for o in objects] == [
        ("main.o", "table"),
        ("main.o_levels", "view"),
    ]
    assert in_memory == (None,)  # nothing written, nothing to fingerprint
    assert "fingerprint" not in details  # not among the owner-only diagnostics


def test_an_old_ledger_row_without_fingerprint_is_refused(
    db: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    """A file from before fingerprints: the column is added (NULL in old rows) and publish()
    fails closed, since it cannot tell an edited table from an untouched one."""
    _hierarchy(db)
    db.execute("ALTER TABLE inftda_releases DROP COLUMN fingerprint").fetchall()
    _refused(db, tmp_path / "pub.duckdb", "older version", "without the fingerprint")
    inftda_sql.release(
        db, "persons", hierarchy=GEO, domain="geo", rho=1.0, output="o", overwrite=True
    )
    inftda_sql.publish(db, "o", tmp_path / "pub.duckdb")


# ------------------------------------------------------------------------------------------------
# public tables that read private data


@pytest.mark.parametrize(
    ("setup", "name", "reads"),
    [
        ("CREATE VIEW led AS SELECT * FROM inftda_releases", "led", "inftda_releases"),
        ("CREATE VIEW led AS SELECT details FROM main.INFTDA_RELEASES", "LED", "inftda_releases"),
        (
            "CREATE SCHEMA s; CREATE VIEW s.led AS SELECT * FROM main.inftda_releases",
            "s.led",
            "inftda_releases",
        ),
        ("CREATE VIEW b AS SELECT * FROM inftda_budgets", "b", "inftda_budgets"),
        (
            "CREATE VIEW l1 AS FROM inftda_releases; CREATE VIEW l2 AS FROM l1",
            "work.main.L2",
            "inftda_releases",
        ),
        ("CREATE TEMP VIEW t AS SELECT * FROM inftda_releases", "t", "inftda_releases"),
    ],
)
def test_a_view_of_the_bookkeeping_tables_is_refused(
    db: duckdb.DuckDBPyConnection, tmp_path: Path, setup: str, name: str, reads: str
) -> None:
    _hierarchy(db)
    inftda_sql.set_budget(db, "geo", rho=2.0)
    db.execute(setup).fetchall()
    with pytest.raises(InftdaError, match=f"{name!r} reads .*{reads}") as info:
        inftda_sql.publish(db, "o", tmp_path / "pub.duckdb", public_tables=[name])
    assert info.value.param == "public_tables"
    assert not (tmp_path / "pub.duckdb").exists()


def test_a_private_input_through_views_is_refused(
    db: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    _hierarchy(db)
    db.execute("CREATE SCHEMA s").fetchall()
    db.execute("CREATE VIEW s.v1 AS SELECT region FROM main.PERSONS").fetchall()
    db.execute("CREATE VIEW v2 AS SELECT * FROM s.v1").fetchall()
    db.register("rel", db.sql("SELECT * FROM v2"))
    for name in ("v2", "S.V1", "work.s.v1", "rel"):
        with pytest.raises(InftdaError, match=f"{name!r} is or reads main.persons"):
            inftda_sql.publish(db, "o", tmp_path / "pub.duckdb", public_tables=[name])


def test_a_private_file_read_through_a_view_is_refused(
    db: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    """DuckDB's plan does not say which file a view reads; its SQL does. While a release read a
    file, a public table that reads it through a view is refused by name, one that reads a
    file it cannot name (a computed path) is refused as unknown; the file by its path, and a
    view over a public file, are checked by their files and published."""
    private = tmp_path / "people.parquet"
    db.execute(f"COPY persons TO '{private}'").fetchall()
    inftda_sql.release(db, str(private), hierarchy=GEO, domain="geo", rho=1.0, output="o")
    db.execute(f"CREATE VIEW p AS SELECT * FROM read_parquet('{private}')").fetchall()
    with pytest.raises(InftdaError, match=r"'p' is or reads .*people\.parquet, a private input"):
        inftda_sql.publish(db, "o", tmp_path / "pub.duckdb", public_tables=["p"])
    db.execute(f"CREATE VIEW q AS SELECT * FROM read_parquet('{tmp_path}/' || 'people.parquet')")
    with pytest.raises(InftdaError, match="'q' reads data from outside"):
        inftda_sql.publish(db, "o", tmp_path / "pub.duckdb", public_tables=["q"])
    geo = tmp_path / "geo.parquet"
    db.execute(f"COPY geo TO '{geo}'").fetchall()
    inftda_sql.publish(db, "o", tmp_path / "pub.duckdb", public_tables=[str(geo)])
    db.execute(f"CREATE VIEW geo_v AS SELECT * FROM '{geo}'").fetchall()
    inftda_sql.publish(db, "o", tmp_path / "pub2.duckdb", public_tables=["geo_v"])
    shared = duckdb.connect(str(tmp_path / "pub2.duckdb"), read_only=True)
    assert (
        shared.execute("SELECT count(*) FROM geo_v").fetchall()
        == db.execute("SELECT count(*) FROM geo").fetchall()
    )
    shared.close()


# ------------------------------------------------------------------------------------------------
# the new file is not a file the working database uses


def test_publish_onto_the_working_database_is_refused(
    db: duckdb.DuckDBPyConnection, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _hierarchy(db)
    db.execute("CHECKPOINT").fetchall()
    other = tmp_path / "other.duckdb"
    db.execute(f"ATTACH '{other}' AS other").fetchall()
    db.execute("CREATE TABLE other.t AS SELECT 1 AS x").fetchall()
    (tmp_path / "link.duckdb").symlink_to(tmp_path / "work.duckdb")
    monkeypatch.chdir(tmp_path)
    before = (tmp_path / "work.duckdb").stat().st_size
    for target in (
        "work.duckdb",
        tmp_path / "work.duckdb",
        "./sub/../work.duckdb",
        "work.duckdb.wal",
        tmp_path / "work.duckdb.wal",
        "link.duckdb",
        "other.duckdb",
        "other.duckdb.wal",
    ):
        (tmp_path / "sub").mkdir(exist_ok=True)
        for overwrite in (False, True):
            with pytest.raises(SpecError, match="which this connection uses") as info:
                inftda_sql.publish(db, "o", target, overwrite=overwrite)
            assert info.value.param == "path"
    assert (tmp_path / "work.duckdb").stat().st_size == before
    assert db.execute("SELECT count(*) FROM o").fetchall()[0][0] > 0
    with pytest.raises(SpecError, match="is a directory"):
        inftda_sql.publish(db, "o", tmp_path / "sub")
    # a case-folding filesystem: another spelling of the same file is refused too
    if os.path.exists(tmp_path / "WORK.duckdb"):  # pragma: no cover - macOS, Windows
        with pytest.raises(SpecError, match="which this connection uses"):
            inftda_sql.publish(db, "o", "WORK.duckdb.WAL")
    inftda_sql.publish(db, "o", "pub.duckdb")  # any other path is fine


def test_publish_onto_a_private_input_file_is_refused(
    db: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    """overwrite=True once deleted whatever the path named, a release's input file too."""
    private = tmp_path / "people.parquet"
    db.execute(f"COPY persons TO '{private}'").fetchall()
    inftda_sql.release(db, str(private), hierarchy=GEO, domain="geo", rho=1.0, output="o")
    with pytest.raises(SpecError, match="private input"):
        inftda_sql.publish(db, "o", private, overwrite=True)
    assert private.exists()


def test_publish_onto_a_public_file_or_a_missing_folder_is_refused(
    db: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    _hierarchy(db)
    geo = tmp_path / "geo.parquet"
    db.execute(f"COPY geo TO '{geo}'").fetchall()
    size = geo.stat().st_size
    with pytest.raises(SpecError, match="public table named in public_tables"):
        inftda_sql.publish(db, "o", geo, public_tables=[str(geo)], overwrite=True)
    assert geo.stat().st_size == size
    with pytest.raises(SpecError, match="does not exist; create it first") as info:
        inftda_sql.publish(db, "o", tmp_path / "no" / "such" / "pub.duckdb")
    assert info.value.param == "path"
