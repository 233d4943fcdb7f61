"""publish(): a shareable file with the released values only."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

import inftda_sql
from tests.system.helpers import make_geo, make_persons

GEO = ["region", "province", "mun"]


@pytest.fixture
def db(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(str(tmp_path / "work.duckdb"))
    make_geo(con)
    make_persons(con)
    con.execute(
        "CREATE TABLE people AS SELECT *, row_number() OVER () % 3 AS pid FROM persons"
    ).fetchall()
    yield con
    con.close()


def _tables(path: Path) -> list[tuple[str, str]]:
    with duckdb.connect(str(path), read_only=True) as pub:
        return pub.execute(
            "SELECT table_name, table_type FROM information_schema.tables ORDER BY 1"
        ).fetchall()


def test_published_file_holds_only_released_values(
    db: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    inftda_sql.release(
        db,
        "people",
        hierarchy=GEO,
        domain="geo",
        rho=1.0,
        privacy_unit="pid",
        contribution=3,
        output="people_private",
    )
    out = inftda_sql.publish(
        db, "people_private", tmp_path / "public.duckdb", public_tables=["geo"]
    )
    assert _tables(out) == [
        ("geo", "BASE TABLE"),
        ("inftda_releases", "BASE TABLE"),
        ("people_private", "BASE TABLE"),
        ("people_private_levels", "VIEW"),
    ]
    with duckdb.connect(str(out), read_only=True) as pub:
        assert (
            pub.execute("SELECT * FROM people_private ORDER BY ALL").fetchall()
            == db.execute("SELECT * FROM people_private ORDER BY ALL").fetchall()
        )
        levels = pub.execute(
            "SELECT level, sum(count) FROM people_private_levels GROUP BY 1"
        ).fetchall()
        assert len(levels) == 4
        details = json.loads(pub.execute("SELECT details FROM inftda_releases").fetchall()[0][0])
        assert "levels" in details and not any(k.startswith("diagnostics") for k in details)
        assert "rows_dropped" not in json.dumps(details)
        assert inftda_sql.storage_version(pub) == "v1.0.0"
    # the working database still has the diagnostics for the data owner
    assert "rows_dropped" in db.execute("SELECT details FROM inftda_releases").fetchall()[0][0]


def test_non_private_release_is_not_published(
    db: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    inftda_sql.release(db, "persons", hierarchy=GEO, domain="geo", rho=1.0, seed=3)
    with pytest.raises(inftda_sql.InftdaError, match="not private: seeded"):
        inftda_sql.publish(db, "persons_private", tmp_path / "p.duckdb")
    assert not (tmp_path / "p.duckdb").exists()
    inftda_sql.publish(db, "persons_private", tmp_path / "p.duckdb", allow_non_private=True)


def test_refusals(db: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    inftda_sql.release(db, "persons", hierarchy=GEO, domain="geo", rho=1.0)
    with pytest.raises(inftda_sql.SpecError, match="not a table"):
        inftda_sql.publish(db, "nope", tmp_path / "a.duckdb")
    with pytest.raises(inftda_sql.SpecError, match="no ledger row"):
        inftda_sql.publish(db, "geo", tmp_path / "a.duckdb")
    with pytest.raises(inftda_sql.InftdaError, match="private input"):
        inftda_sql.publish(db, "persons_private", tmp_path / "a.duckdb", public_tables=["persons"])
    inftda_sql.publish(db, "persons_private", tmp_path / "a.duckdb")
    with pytest.raises(inftda_sql.OutputExistsError):
        inftda_sql.publish(db, "persons_private", tmp_path / "a.duckdb")
    inftda_sql.publish(db, "persons_private", tmp_path / "a.duckdb", overwrite=True)


def test_private_inputs_are_refused_by_any_name(
    db: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    """public_tables is resolved in the catalog: the input, by any spelling or through views,
    and any table with a budget are refused; nothing is written."""
    db.execute("CREATE VIEW pv AS SELECT * FROM persons").fetchall()
    db.execute("CREATE VIEW pvv AS SELECT region FROM pv").fetchall()
    db.execute("CREATE TABLE secret AS SELECT 1 AS x").fetchall()
    inftda_sql.set_budget(db, "secret", rho=1.0)
    inftda_sql.release(db, db.table("pv"), hierarchy=GEO, domain="geo", rho=1.0, output="rel")
    target = tmp_path / "pub.duckdb"
    for name in ("main.persons", "PERSONS", "work.main.persons", "pv", "pvv", "secret"):
        with pytest.raises(inftda_sql.InftdaError, match="cannot be published") as info:
            inftda_sql.publish(db, "rel", target, public_tables=[name])
        assert info.value.param == "public_tables"
        assert not target.exists()
    for name in ("inftda_releases", "rel"):
        with pytest.raises(inftda_sql.SpecError, match="copied by publish"):
            inftda_sql.publish(db, "rel", target, public_tables=[name])
    with pytest.raises(inftda_sql.SpecError, match="list of table names"):
        inftda_sql.publish(db, "rel", target, public_tables="geo")  # type: ignore[arg-type]
    inftda_sql.publish(db, "main.REL", target, public_tables=["main.geo"])
    assert _tables(target) == [
        ("geo", "BASE TABLE"),
        ("inftda_releases", "BASE TABLE"),
        ("rel", "BASE TABLE"),
        ("rel_levels", "VIEW"),
    ]


@pytest.mark.parametrize(
    "version",
    [
        "v1.0.0'); DROP TABLE persons; --",
        "v1.0.0' ) ; DROP TABLE persons ; SELECT ('",
        "v1.0.0\n",
        "1.0.0",
        "",
        None,
        1.0,
    ],
)
def test_storage_version_is_validated_before_attach(
    db: duckdb.DuckDBPyConnection, tmp_path: Path, version: object
) -> None:
    """A crafted storage_version once ran arbitrary SQL through ATTACH (it dropped the input)."""
    inftda_sql.release(db, "persons", hierarchy=GEO, domain="geo", rho=1.0)
    rows_before = db.execute("SELECT count(*) FROM persons").fetchall()
    with pytest.raises(inftda_sql.SpecError) as info:
        inftda_sql.publish(db, "persons_private", tmp_path / "x.duckdb", storage_version=version)  # type: ignore[arg-type]
    assert info.value.param == "storage_version"
    assert db.execute("SELECT count(*) FROM persons").fetchall() == rows_before
    assert not (tmp_path / "x.duckdb").exists()
    attached = db.execute("SELECT database_name FROM duckdb_databases() WHERE NOT internal")
    assert [r[0] for r in attached.fetchall()] == ["work"]


def test_the_attach_literal_stays_quoted() -> None:
    from inftda_sql.engines.duckdb.compile import attach

    sql = attach("it's.duckdb", "pub", "v1.0.0")
    assert "'it''s.duckdb'" in sql and "(STORAGE_VERSION 'v1.0.0')" in sql
