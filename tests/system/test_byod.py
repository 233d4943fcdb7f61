"""Bring your own data: parquet/CSV files as inputs, domains and public tables, and one
geography serving every chain of a release (issue 17).

The world: a folder holding ``od.parquet`` (pre-aggregated O/D flows, columns ``o_region,
o_lad, o_msoa, d_region, d_lad, d_msoa, count``: the UK census layout) and ``geo.parquet``
(every MSOA with its LAD and region, and names), nothing else.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import duckdb
import pytest

import inftda_sql
from inftda_sql import Domain
from inftda_sql.cli import main

INF = float("inf")
#: every MSOA of the public geography: (region, lad, msoa); m5 has no flow at all
GEO = [
    ("R1", "L1", "m1"),
    ("R1", "L1", "m2"),
    ("R1", "L2", "m3"),
    ("R2", "L3", "m4"),
    ("R2", "L3", "m5"),
]
#: (origin msoa, destination msoa, count)
FLOWS = [("m1", "m1", 5), ("m1", "m3", 2), ("m2", "m4", 7), ("m4", "m1", 1), ("m3", "m3", 4)]
ORIGIN = ["o_region", "o_lad", "o_msoa"]
DESTINATION = ["d_region", "d_lad", "d_msoa"]
OD = [ORIGIN, DESTINATION]


def _path(msoa: str) -> tuple[str, str, str]:
    return next(g for g in GEO if g[2] == msoa)


def write_files(folder: Path, *, od: str = "od.parquet", geo: str = "geo.parquet") -> None:
    """The two files of the world, written by DuckDB (CSV or parquet by their ending)."""
    with duckdb.connect() as con:
        con.execute(
            "CREATE TABLE geo (region VARCHAR, lad VARCHAR, msoa VARCHAR, msoa_name VARCHAR)"
        ).fetchall()
        con.executemany("INSERT INTO geo VALUES (?, ?, ?, ?)", [(*g, f"{g[2]} town") for g in GEO])
        con.execute(
            "CREATE TABLE od (o_region VARCHAR, o_lad VARCHAR, o_msoa VARCHAR, d_region VARCHAR, "
            "d_lad VARCHAR, d_msoa VARCHAR, count BIGINT)"
        ).fetchall()
        con.executemany(
            "INSERT INTO od VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(*_path(o), *_path(d), n) for o, d, n in FLOWS],
        )
        con.execute(f"COPY od TO '{folder / od}'").fetchall()
        con.execute(f"COPY geo TO '{folder / geo}'").fetchall()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The current folder, holding only od.parquet and geo.parquet."""
    write_files(tmp_path)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def db(folder: Path) -> Any:
    con = duckdb.connect(str(folder / "out.duckdb"))
    yield con
    con.close()


def objects(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str]]:
    """Every table and view of the connection, temporary ones included."""
    return con.execute(
        "SELECT table_name, table_type FROM information_schema.tables ORDER BY ALL"
    ).fetchall()


def truth_leaves() -> list[tuple[Any, ...]]:
    return sorted((*_path(o), *_path(d), n) for o, d, n in FLOWS)


def _release(con: duckdb.DuckDBPyConnection, table: Any = "od.parquet", **kw: Any) -> Any:
    args: dict[str, Any] = {
        "hierarchy": OD,
        "domain": "geo.parquet",
        "count": "count",
        "rho": INF,
        **kw,
    }
    return inftda_sql.release(con, table, **args)


def released(con: duckdb.DuckDBPyConnection, table: str = "od_private") -> list[tuple[Any, ...]]:
    return con.execute(f"SELECT * FROM {table} ORDER BY ALL").fetchall()


# ------------------------------------------------------------------------------- releases


def test_two_files_to_a_private_table_joined_with_the_geography(
    db: duckdb.DuckDBPyConnection, folder: Path
) -> None:
    before = {p.name: digest(p) for p in folder.glob("*.parquet")}
    r = _release(db, tree="destination")
    # one geography, both chains matched by the o_/d_ prefix; exact under an infinite budget
    assert r.output == "od_private" and released(db) == truth_leaves()
    # what a user runs next: the private table joined with the geography file
    joined = db.execute(
        "SELECT g.msoa_name, h.msoa_name, p.count FROM od_private p "
        "JOIN 'geo.parquet' g ON g.msoa = p.o_msoa JOIN 'geo.parquet' h ON h.msoa = p.d_msoa "
        "ORDER BY p.count DESC LIMIT 1"
    ).fetchall()
    assert joined == [("m2 town", "m4 town", 7)]
    # the ledger names the files by their resolved paths
    row = db.execute(
        "SELECT input_table, base_tables, domain_source FROM inftda_releases"
    ).fetchall()
    od, geo = str(folder.resolve() / "od.parquet"), str(folder.resolve() / "geo.parquet")
    assert row == [
        (
            od,
            [od],
            f"parquet file {geo!r} read as o_region=region, o_lad=lad, o_msoa=msoa; parquet "
            f"file {geo!r} read as d_region=region, d_lad=lad, d_msoa=msoa",
        )
    ]
    assert r.input == od
    # nothing else is left in the database (no views of the geography), the files are unchanged
    assert objects(db) == [
        ("inftda_releases", "BASE TABLE"),
        ("od_private", "BASE TABLE"),
        ("od_private_levels", "VIEW"),
    ]
    assert {p.name: digest(p) for p in folder.glob("*.parquet")} == before
    names = sorted(p.name for p in folder.iterdir() if p.suffix != ".wal")
    assert names == ["geo.parquet", "od.parquet", "out.duckdb"]


def test_a_private_release_from_files_is_consistent(db: duckdb.DuckDBPyConnection) -> None:
    r = _release(db, rho=None, epsilon=1.0, delta=1e-8, tree="destination")
    assert r.is_private
    total = db.execute("SELECT sum(count) FROM od_private").fetchall()[0][0]
    assert total == sum(n for _, _, n in FLOWS)  # bounded DP: the total is public
    # every released cell is a path of the public geography, on both sides
    outside = db.execute(
        "SELECT count(*) FROM od_private p WHERE NOT EXISTS (SELECT 1 FROM 'geo.parquet' g "
        "WHERE (g.region, g.lad, g.msoa) = (p.o_region, p.o_lad, p.o_msoa)) OR NOT EXISTS "
        "(SELECT 1 FROM 'geo.parquet' g WHERE (g.region, g.lad, g.msoa) = "
        "(p.d_region, p.d_lad, p.d_msoa))"
    ).fetchall()
    assert outside == [(0,)]


def test_one_geography_serves_any_number_of_chains(db: duckdb.DuckDBPyConnection) -> None:
    db.execute(
        "CREATE TABLE visits AS SELECT o_region AS home_region, o_msoa AS home_msoa, "
        "d_region AS work_region, d_msoa AS work_msoa, o_region AS x_region, count FROM "
        "'od.parquet'"
    ).fetchall()
    hierarchy = [["home_region", "home_msoa"], ["work_region", "work_msoa"], ["x_region"]]
    _release(db, "visits", hierarchy=hierarchy, output="three")
    got = db.execute("SELECT * FROM three ORDER BY ALL").fetchall()
    want = db.execute(
        "SELECT home_region, home_msoa, work_region, work_msoa, x_region, sum(count) "
        "FROM visits GROUP BY ALL ORDER BY ALL"
    ).fetchall()
    assert got == want and len(got) == len(FLOWS)


def test_an_explicit_mapping_when_the_names_differ(db: duckdb.DuckDBPyConnection) -> None:
    db.execute(
        "CREATE TABLE commutes AS SELECT o_region AS rgn_home, o_msoa AS area_home, "
        "d_region AS d_region, d_msoa AS d_msoa, count FROM 'od.parquet'"
    ).fetchall()
    # the origin chain follows no prefix: mapped; the destination chain still by its prefix
    geo = Domain("geo.parquet", columns={"rgn_home": "region", "area_home": "msoa"})
    hierarchy = [["rgn_home", "area_home"], ["d_region", "d_msoa"]]
    _release(db, "commutes", hierarchy=hierarchy, domain=geo, output="mapped")
    assert len(released(db, "mapped")) == len(FLOWS)
    # without the mapping the error lists the geography's columns and spells the mapping
    with pytest.raises(inftda_sql.DomainError) as info:
        _release(db, "commutes", hierarchy=hierarchy, output="unmapped")
    message = str(info.value)
    assert "has no columns for rgn_home, area_home: its columns are region, lad, msoa" in message
    assert "Domain(..., columns={'rgn_home': '...', 'area_home': '...'})" in message
    assert not db.execute("SELECT * FROM duckdb_tables() WHERE table_name = 'unmapped'").fetchall()


def test_per_chain_domains_still_work_and_may_be_files(db: duckdb.DuckDBPyConnection) -> None:
    db.execute(
        "COPY (SELECT region AS o_region, lad AS o_lad, msoa AS o_msoa FROM 'geo.parquet') "
        "TO 'geo_o.csv'"
    ).fetchall()
    _release(db, domain=["geo_o.csv", Domain("geo.parquet")])
    assert released(db) == truth_leaves()


def test_csv_and_glob_inputs(db: duckdb.DuckDBPyConnection, folder: Path) -> None:
    db.execute("COPY (FROM 'od.parquet' WHERE o_region = 'R1') TO 'part_1.csv'").fetchall()
    db.execute("COPY (FROM 'od.parquet' WHERE o_region <> 'R1') TO 'part_2.csv'").fetchall()
    r = _release(db, "part_*.csv", output="parts")
    assert released(db, "parts") == truth_leaves()
    files = [str(folder.resolve() / f"part_{i}.csv") for i in (1, 2)]
    assert r.input == str(folder.resolve() / "part_*.csv")
    assert db.execute("SELECT base_tables FROM inftda_releases").fetchall() == [(files,)]


def test_evaluate_and_plan_read_files_too(db: duckdb.DuckDBPyConnection) -> None:
    _release(db, tree="destination")
    rel = inftda_sql.evaluate(
        db, "od.parquet", "od_private", hierarchy=OD, tree="destination", count="count"
    )
    assert {row[0]: row[-1] for row in rel.fetchall()}  # one row per level
    plan = inftda_sql.plan(
        hierarchy=OD, domain="geo.parquet", tree="destination", rho=1.0, simulations=0
    )
    # destination first: 2 regions, 2 x 2, 2 x 3 lads, 3 x 3, 3 x 5 msoas, 5 x 5
    assert [lv.nodes for lv in plan.levels] == [2, 4, 6, 9, 15, 25]


# ------------------------------------------------------------------------------- budgets


def test_a_budget_is_bound_to_the_resolved_path(
    db: duckdb.DuckDBPyConnection, folder: Path
) -> None:
    (folder / "sub").mkdir()
    (folder / "alias.parquet").symlink_to(folder / "od.parquet")
    inftda_sql.set_budget(db, "od.parquet", rho=1.0)
    od = str(folder.resolve() / "od.parquet")
    assert db.execute("SELECT input_table FROM inftda_budgets").fetchall() == [(od,)]
    _release(db, rho=0.6, output="first")
    # any other spelling of the same file is the same budget: refused, nothing written
    for spelling in (od, "sub/../od.parquet", "alias.parquet", Path("od.parquet")):
        with pytest.raises(inftda_sql.BudgetExceededError):
            _release(db, spelling, rho=0.6, output="second")
    assert db.execute("SELECT count(*) FROM inftda_releases").fetchall() == [(1,)]
    entry = next(i for i in inftda_sql.ledger(db).inputs if i["input_table"] == od)
    assert entry["spent_rho"] == pytest.approx(0.6) and entry["remaining_rho"] == pytest.approx(0.4)
    _release(db, rho=0.4, output="second")  # what remains still fits
    # a view or relation reading the file (named in its SQL) is charged to it: spent
    db.execute("CREATE VIEW od_v AS FROM read_parquet(['od.parquet'])")
    for through in ("od_v", db.sql("FROM 'od.parquet'")):
        with pytest.raises(inftda_sql.BudgetExceededError, match=r"od\.parquet"):
            _release(db, through, rho=0.1, output="third")
    # a file read by a computed path cannot be charged: refused while budgets exist
    db.execute("CREATE TABLE geo_t AS FROM 'geo.parquet'")  # (a file domain would be refused)
    with pytest.raises(inftda_sql.BudgetError, match="release a parquet or CSV file by its path"):
        computed = db.sql("FROM read_parquet('od' || '.parquet')")
        _release(db, computed, domain="geo_t", rho=0.1, output="third")
    assert db.execute("SELECT count(*) FROM inftda_releases").fetchall() == [(2,)]
    # another file's budget does not stop a view over this one, which is charged to this one
    inftda_sql.set_budget(db, "od.parquet", rho=2.0)
    _release(db, "od_v", rho=0.5, output="third")
    entry = next(i for i in inftda_sql.ledger(db).inputs if i["input_table"] == od)
    assert entry["spent_rho"] == pytest.approx(1.5)


def _hard_link(source: Path, link: Path) -> None:
    try:
        os.link(source, link)
    except OSError as exc:  # pragma: no cover - a filesystem without hard links
        pytest.skip(f"this filesystem makes no hard link ({exc})")


def test_a_hard_link_is_the_same_file(db: duckdb.DuckDBPyConnection, folder: Path) -> None:
    """A hard link is another name of the same file, which resolving its path does not reveal
    (a symbolic link does): as the domain of its file it is refused, a release through it
    spends the file's budget, and publish() will not copy it as public."""
    _hard_link(folder / "od.parquet", folder / "copy.parquet")
    with pytest.raises(inftda_sql.DomainError, match=r"as .*od\.parquet: the same file"):
        _release(db, domain=["copy.parquet", "geo.parquet"], output="t")
    assert objects(db) == []
    inftda_sql.set_budget(db, "od.parquet", rho=1.0)
    _release(db, rho=0.6, output="first")
    with pytest.raises(inftda_sql.BudgetExceededError, match=r"only rho=0\.4 "):
        _release(db, "copy.parquet", rho=0.6, output="second")
    _release(db, "copy.parquet", rho=0.4, output="second")  # what remains fits
    od = str(folder.resolve() / "od.parquet")
    entry = next(i for i in inftda_sql.ledger(db).inputs if i["input_table"] == od)
    assert entry["spent_rho"] == pytest.approx(1.0)
    with pytest.raises(inftda_sql.InftdaError, match="a private input of a release"):
        inftda_sql.publish(db, "first", "public.duckdb", public_tables=["copy.parquet"])


def test_a_glob_budget_holds_for_each_file(db: duckdb.DuckDBPyConnection, folder: Path) -> None:
    db.execute("COPY (FROM 'od.parquet' WHERE o_region = 'R1') TO 'part_1.parquet'").fetchall()
    db.execute("COPY (FROM 'od.parquet' WHERE o_region <> 'R1') TO 'part_2.parquet'").fetchall()
    inftda_sql.set_budget(db, "part_*.parquet", rho=1.0)
    assert sorted(
        r[0] for r in db.execute("SELECT input_table FROM inftda_budgets").fetchall()
    ) == [str(folder.resolve() / f"part_{i}.parquet") for i in (1, 2)]
    _release(db, "part_*.parquet", rho=0.7, output="both")
    # one file alone, by its own path, composes with the glob that read it
    with pytest.raises(inftda_sql.BudgetExceededError):
        _release(db, "part_2.parquet", rho=0.7, output="one")


def test_a_file_that_a_release_read_is_not_public(
    db: duckdb.DuckDBPyConnection, folder: Path
) -> None:
    _release(db, rho=None, epsilon=1.0, delta=1e-8)
    with pytest.raises(inftda_sql.InftdaError, match="a private input of a release"):
        inftda_sql.publish(db, "od_private", folder / "x.duckdb", public_tables=["./od.parquet"])
    assert not (folder / "x.duckdb").exists()
    out = inftda_sql.publish(db, "od_private", "public.duckdb", public_tables=["geo.parquet"])
    with duckdb.connect(str(out), read_only=True) as shared:
        assert sorted(r[0] for r in shared.execute("SHOW TABLES").fetchall()) == [
            "geo",
            "inftda_releases",
            "od_private",
            "od_private_levels",
        ]
        assert shared.execute("SELECT count(*) FROM geo").fetchall() == [(len(GEO),)]


# ------------------------------------------------------------------------------- command line


RELEASE_LINE = [
    "release", "out.duckdb", "od.parquet", "--domain", "geo.parquet",
    "--hierarchy", "o_region,o_lad,o_msoa", "--hierarchy", "d_region,d_lad,d_msoa",
    "--count", "count", "--epsilon", "1", "--delta", "1e-8", "--quiet",
]  # fmt: skip


def test_the_command_line_creates_the_database(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(RELEASE_LINE) == 0
    out = capsys.readouterr().out
    assert out.startswith("created out.duckdb\nrelease #1: ")
    assert f"{folder.resolve() / 'od.parquet'} -> od_private" in out
    with duckdb.connect("out.duckdb", read_only=True) as con:
        assert inftda_sql.storage_version(con) == "v1.0.0"  # DBeaver's driver opens it
        assert con.execute("SELECT input_table FROM inftda_releases").fetchall() == [
            (str(folder.resolve() / "od.parquet"),)
        ]
    # again: the database is opened, not created; the output exists
    assert main(RELEASE_LINE) == 1
    assert "'od_private' already exists; pass --overwrite" in capsys.readouterr().err
    assert main([*RELEASE_LINE, "--overwrite"]) == 0
    assert "created" not in capsys.readouterr().out


def test_a_failed_first_release_leaves_no_database(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = [*RELEASE_LINE]
    line[line.index("o_region,o_lad,o_msoa")] = "o_region,o_lad,o_mosa"
    assert main(line) == 1
    assert "o_mosa" in capsys.readouterr().err
    assert sorted(p.name for p in folder.iterdir()) == ["geo.parquet", "od.parquet"]
    # a table input needs an existing database: not created
    assert main(["release", "new.duckdb", "trips", "--hierarchy", "a", "--rho", "1"]) == 1
    assert "does not exist" in capsys.readouterr().err
    assert not (folder / "new.duckdb").exists()


def test_the_command_line_maps_columns_and_budgets_files(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with duckdb.connect() as con:
        con.execute(
            "COPY (SELECT o_region AS home_r, o_msoa AS home_m, d_region AS work_r, "
            "d_msoa AS work_m, count FROM 'od.parquet') TO 'commutes.csv'"
        ).fetchall()
    line = [
        "release", "work.duckdb", "commutes.csv", "--domain", "geo.parquet",
        "--hierarchy", "home_r,home_m", "--hierarchy", "work_r,work_m", "--count", "count",
        "--domain-columns", "home_r=region,home_m=msoa", "--domain-columns", "work_r=region",
        "--domain-columns", "work_m=msoa", "--rho", "0.5", "--quiet",
    ]  # fmt: skip
    assert main(["budget", "work.duckdb", "commutes.csv", "--rho", "0.8"]) == 1  # no database
    capsys.readouterr()
    assert main(line) == 0
    assert "commutes_private" in capsys.readouterr().out
    assert main(["budget", "work.duckdb", "commutes.csv", "--rho", "0.8"]) == 0
    assert "remaining rho=0.3" in capsys.readouterr().out
    assert main([*line, "--output", "again"]) == 1
    err = capsys.readouterr().err
    assert "would spend --rho 0.5" in err, err
    assert main(["plan", "--hierarchy", "work_r,work_m", "--domain", "geo.parquet",
                 "--domain-columns", "work_r=region,work_m=msoa", "--rho", "1",
                 "--simulations", "0"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "work_r" in out and "work_m" in out
    assert os.path.exists("commutes.csv")


def test_the_input_is_no_domain(db: duckdb.DuckDBPyConnection) -> None:
    """od.parquet has the o_/d_ columns of both chains: as its own domain it would match by
    name and take the categories from the private data, recorded as private. Refused."""
    for domain in ("od.parquet", ["geo.parquet", "./od.parquet"]):
        with pytest.raises(inftda_sql.DomainError, match="which the input reads too") as info:
            _release(db, domain=domain)
        assert "domain_from_data=True" in str(info.value)
    db.execute("CREATE TABLE od AS FROM 'od.parquet'").fetchall()
    db.execute("CREATE VIEW od_places AS SELECT DISTINCT o_region, o_lad, o_msoa FROM od")
    with pytest.raises(inftda_sql.DomainError, match=r"reads main\.od, which the input reads too"):
        _release(db, "od", domain=["od_places", "geo.parquet"], output="t")
    assert objects(db) == [("od", "BASE TABLE"), ("od_places", "VIEW")]


def test_a_view_over_the_input_file_is_no_domain(db: duckdb.DuckDBPyConnection) -> None:
    """DuckDB's plan does not say which file a view reads; the view's SQL does. A view, a view
    of another schema through a view, and a relation over od.parquet (any spelling of its path)
    are refused as a domain of od.parquet, and the file as a domain of a view over it; a view
    whose file cannot be named (a computed path, a table macro) is refused beside a file input;
    views over geo.parquet serve as before."""
    db.execute(
        "CREATE VIEW od_places AS SELECT DISTINCT o_region, o_lad, o_msoa FROM './od.parquet'"
    )
    db.execute("CREATE SCHEMA s")
    db.execute(
        "CREATE VIEW s.inner_v AS SELECT o_region, o_lad, o_msoa FROM read_parquet(['od.parquet'])"
    )
    db.execute("CREATE VIEW s.outer_v AS WITH od AS (SELECT 1) SELECT * FROM inner_v")  # bound in s
    relation = db.sql(f"SELECT DISTINCT o_region, o_lad, o_msoa FROM '{os.getcwd()}/od.parquet'")
    for domain in ("od_places", "s.outer_v", relation):
        with pytest.raises(inftda_sql.DomainError, match=r"od\.parquet, which the input reads too"):
            _release(db, domain=[domain, "geo.parquet"], output="t")
    db.execute("CREATE VIEW od_v AS FROM 'od.parquet'")
    with pytest.raises(inftda_sql.DomainError, match=r"od\.parquet, which the input reads too"):
        _release(db, "od_v", domain=["od.parquet", "geo.parquet"], output="t")
    db.execute("CREATE VIEW computed AS FROM read_parquet('od' || '.parquet')")
    db.execute("CREATE MACRO od_rows() AS TABLE FROM 'od.parquet'")
    db.execute("CREATE VIEW by_macro AS FROM od_rows()")
    for domain in ("computed", "by_macro"):
        with pytest.raises(inftda_sql.DomainError, match="reads files it does not name") as info:
            _release(db, domain=[domain, "geo.parquet"], output="t")
        assert "domain_from_data=True" in str(info.value)
    db.execute("CREATE VIEW geo_v AS FROM 'geo.parquet'")
    _release(db, "od_v", domain="geo_v", output="t")
    assert released(db, "t") == truth_leaves()
    # the ledger names the view as given and charges the file it reads
    row = db.execute(
        "SELECT input_table, base_tables FROM inftda_releases ORDER BY release_id DESC LIMIT 1"
    ).fetchall()
    assert row == [("od_v", [os.path.join(os.getcwd(), "od.parquet")])]


def test_a_path_written_as_sql_says_how_to_write_it(db: duckdb.DuckDBPyConnection) -> None:
    """A path in SQL quotes, or a reader call, names no table or file: the error gives the path
    to pass, with or without an output named (before a default output is named after it)."""
    for output in (None, "t"):
        with pytest.raises(inftda_sql.InputDataError, match=r"without SQL quotes: 'od\.parquet'"):
            _release(db, "'od.parquet'", output=output)
        with pytest.raises(inftda_sql.InputDataError, match=r"path itself \('od\.parquet'\)"):
            _release(db, "read_parquet('od.parquet')", output=output)
        with pytest.raises(
            inftda_sql.InputDataError, match=r"without SQL quotes: '\./od\.parquet'"
        ):
            _release(db, "'./od.parquet'", output=output)
    assert objects(db) == []
