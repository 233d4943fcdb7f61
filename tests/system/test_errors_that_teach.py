"""The mistakes new users make most: each message says what is wrong and what to type instead.

Every mistake is made twice, through the Python API and through the command line. On the
command line the same message comes back as one line on stderr, exit code 1, no traceback, in
the command line's spelling (``--overwrite``, never ``overwrite=True``).
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pytest

import inftda_sql
from inftda_sql._compat import connect
from inftda_sql.cli import main
from tests.system.helpers import make_geo, make_od, make_persons, snapshot

GEO = ["region", "province", "mun"]
GEO_FLAGS = "--hierarchy region,province,mun --domain geo --rho 1"
#: Python spellings a command-line message must not contain
PYTHON_SPELLING = re.compile(
    r"(?<![\w-])(overwrite|domain_from_data|domain|delta|rho|epsilon|hierarchy|output|tree|count)="
)

Api = Callable[[duckdb.DuckDBPyConnection, Path], object]


def _release(table: str = "persons", **kw: Any) -> Api:
    options: dict[str, Any] = {"hierarchy": GEO, "domain": "geo", "rho": 1.0}
    options.update(kw)
    return lambda con, _: inftda_sql.release(con, table, **options)


def _too_new(path: Path) -> object:
    duckdb.connect(str(path)).close()  # DuckDB 2.0's own storage format
    return connect(path, storage_version="v1.0.0")


@dataclass(frozen=True)
class Mistake:
    """A mistake, how it is made in Python and on the command line, and what must be said."""

    name: str
    api: Api
    argv: str  # split on spaces; {db}, {dir} and {geo} (GEO_FLAGS) are filled in
    error: type[Exception]
    what: list[str]  # fragments naming the problem (both spellings)
    api_fix: list[str]  # what to type instead, Python spelling
    cli_fix: list[str]  # what to type instead, command-line spelling
    setup: str = ""  # SQL run on the database before the mistake
    files: dict[str, str | bytes] = field(default_factory=dict)  # files written to {dir}


MISTAKES = [
    Mistake(
        "wrong column name",
        _release(hierarchy=["region", "county"]),
        "release {db} persons --hierarchy region,county --domain geo --rho 1",
        inftda_sql.InputDataError,
        ["column 'county'", "not in table 'persons'"],
        ["available: region, province, mun"],
        ["available: region, province, mun"],
    ),
    Mistake(
        "missing domain",
        _release(domain=None),
        "release {db} persons --hierarchy region,province,mun --rho 1",
        inftda_sql.DomainError,
        ["no domain given", "PUBLIC"],
        ["domain='geo'", "domain_from_data=True"],
        ["--domain geo", "--domain-from-data"],
    ),
    Mistake(
        "epsilon without delta",
        _release(rho=None, epsilon=1.0),
        "release {db} persons --hierarchy region,province,mun --domain geo --epsilon 1",
        inftda_sql.BudgetError,
        ["needs a delta"],
        ["delta=1e-8", "rho=..."],
        ["--delta 1e-8", "--rho ..."],
    ),
    Mistake(
        "no budget at all",
        _release(rho=None),
        "release {db} persons --hierarchy region,province,mun --domain geo",
        inftda_sql.BudgetError,
        ["no privacy budget given"],
        ["rho=...", "epsilon=... with delta=..."],
        ["--rho ...", "--epsilon ... with --delta ..."],
    ),
    Mistake(
        "output exists",
        _release(),
        "release {db} persons {geo}",
        inftda_sql.OutputExistsError,
        ["'persons_private' already exists"],
        ["overwrite=True", "output= name"],
        ["--overwrite", "another --output name"],
        setup="CREATE TABLE persons_private AS SELECT 1 AS x",
    ),
    Mistake(
        "geography not nested",
        _release(),
        "release {db} persons {geo}",
        inftda_sql.DomainError,
        ["is not nested", "mun='n1a'"],
        ["codes unique across the whole domain"],
        ["codes unique across the whole domain"],
        setup="INSERT INTO geo VALUES ('South', 'S9', 'n1a')",
    ),
    Mistake(
        "hierarchy given fine to coarse",
        _release(hierarchy=["mun", "province", "region"]),
        "release {db} persons --hierarchy mun,province,region --domain geo --rho 1",
        inftda_sql.DomainError,
        ["is not nested", "look listed fine to coarse", "'mun' has more distinct values"],
        ["hierarchy=['region', 'province', 'mun']"],
        ["--hierarchy region,province,mun"],
    ),
    Mistake(
        "one chain of two given fine to coarse",
        lambda con, _: inftda_sql.release(
            con,
            "od_micro",
            hierarchy=[["o_reg", "o_mun"], ["d_mun", "d_prov", "d_reg"]],
            domain=["geo_o", "geo_d"],
            rho=1.0,
        ),
        "release {db} od_micro --hierarchy o_reg,o_mun --hierarchy d_mun,d_prov,d_reg "
        "--domain geo_o --domain geo_d --rho 1",
        inftda_sql.DomainError,
        ["domain of chain 2 is not nested", "'d_mun' has more distinct values than 'd_reg'"],
        ["hierarchy=[['o_reg', 'o_mun'], ['d_reg', 'd_prov', 'd_mun']]"],
        ["--hierarchy o_reg,o_mun --hierarchy d_reg,d_prov,d_mun"],
    ),
    Mistake(
        "a path that is not a DuckDB file",
        lambda con, d: connect(d / "trips.csv"),
        "release {dir}/trips.csv trips {geo}",
        inftda_sql.InputDataError,
        ["trips.csv' is not a DuckDB database file", "CSV"],
        ["duckdb data.duckdb -c \"CREATE TABLE trips AS FROM '"],
        ["duckdb data.duckdb -c \"CREATE TABLE trips AS FROM '"],
        files={"trips.csv": "region,province,mun\nNorth,N1,n1a\n"},
    ),
    Mistake(
        "a SQLite file",
        lambda con, d: connect(d / "trips.db"),
        "release {dir}/trips.db trips {geo}",
        inftda_sql.InputDataError,
        ["trips.db' is not a DuckDB database file", "SQLite"],
        ["CREATE TABLE trips AS FROM"],
        ["CREATE TABLE trips AS FROM"],
        files={"trips.db": b"SQLite format 3\x00" + bytes(100)},
    ),
    Mistake(
        "a database file that does not exist",
        lambda con, d: connect(d / "mobility.duckdb", read_only=True),
        "release {dir}/mobility.duckdb trips {geo}",
        inftda_sql.InputDataError,
        ["mobility.duckdb' does not exist"],
        ["inftda-sql demo"],
        ["inftda-sql demo"],
    ),
    Mistake(
        "missing table",
        _release(table="persns"),
        "release {db} persns {geo}",
        inftda_sql.InputDataError,
        ["input table 'persns' is not a table or view of this database"],
        ["existing: agg, agg_text, geo, geo_d, geo_o, od, od_micro, persons"],
        ["existing: agg, agg_text, geo, geo_d, geo_o, od, od_micro, persons"],
    ),
    Mistake(
        "wrong tree kind",
        _release(tree="od"),
        "release {db} persons --config {dir}/release.toml",
        inftda_sql.SpecError,
        ["got 'od'"],
        ["tree must be one of chain, sequential, destination, origin"],
        ["tree must be one of chain, sequential, destination, origin"],
        files={
            "release.toml": 'hierarchy = ["region", "province", "mun"]\ndomain = "geo"\n'
            'rho = 1.0\ntree = "od"\n'
        },
    ),
    Mistake(
        "an O/D tree on one chain",
        _release(tree="destination"),
        "release {db} persons {geo} --tree destination",
        inftda_sql.SpecError,
        ["interleaves exactly two chains", "got 1"],
        ["hierarchy=[[origin columns...], [destination columns...]]"],
        ["--hierarchy <origin columns> --hierarchy <destination columns>"],
    ),
    Mistake(
        "one domain for two chains",
        _release(
            table="od",
            hierarchy=[["o_reg", "o_mun"], ["d_reg", "d_prov", "d_mun"]],
            domain="geo_o",
            count="n",
        ),
        "release {db} od --hierarchy o_reg,o_mun --hierarchy d_reg,d_prov,d_mun --domain geo_o --count n --rho 1",
        inftda_sql.DomainError,
        [
            "domain of chain 2 (table 'geo_o', one domain for 2 chains) has no columns for "
            "d_reg, d_prov, d_mun: its columns are o_reg, o_mun",
        ],
        [
            "Domain(..., columns={'d_reg': '...', 'd_prov': '...', 'd_mun': '...'})",
            "domain=[...] with 2 entries",
        ],
        ["--domain-columns d_reg=...,d_prov=...,d_mun=...", "(--domain 2 times)"],
    ),
    Mistake(
        "a count column that is text",
        _release(table="agg_text", count="n"),
        "release {db} agg_text {geo} --count n",
        inftda_sql.InputDataError,
        ["count column 'n' has type VARCHAR, not a number"],
        ["the column holding the number of records per row"],
        ["the column holding the number of records per row"],
    ),
    Mistake(
        "negative counts",
        _release(table="agg", count="n"),
        "release {db} agg {geo} --count n",
        inftda_sql.InputDataError,
        ["count column 'n' has 1 row(s) with a negative value", 'WHERE "n" < 0'],
        ["counts must be non-negative integers"],
        ["counts must be non-negative integers"],
        setup="UPDATE agg SET n = -2 WHERE mun = 'n2a'",
    ),
    Mistake(
        "NULL in a hierarchy column",
        _release(),
        "release {db} persons {geo}",
        inftda_sql.InputDataError,
        ["hierarchy column 'province'", "has NULL values"],
        ["filter or fill them in a view first"],
        ["filter or fill them in a view first"],
        setup="UPDATE persons SET province = NULL WHERE mun = 'n2a'",
    ),
    Mistake(
        "a value missing from the domain",
        _release(),
        "release {db} persons {geo}",
        inftda_sql.DomainError,
        ["not in the domain, e.g. mun='zzz'"],
        ["add them to the public domain table or fix the input"],
        ["add them to the public domain table or fix the input"],
        setup="INSERT INTO persons VALUES ('North', 'N1', 'zzz')",
    ),
    Mistake(
        "a pre-aggregated table without its count column",
        _release(table="agg"),
        "release {db} agg {geo}",
        inftda_sql.InputDataError,
        ["numeric column 'n' (INTEGER)", "no count column was given", "ONE record"],
        ["count='n'", "microdata=True"],
        ["--count n", "--microdata"],
    ),
    Mistake(
        "a pre-aggregated table without its count column, options in a TOML file",
        _release(table="agg"),
        "release {db} agg --config {dir}/release.toml",
        inftda_sql.InputDataError,
        ["numeric column 'n' (INTEGER)", "no count column was given"],
        ["count='n'", "microdata=True"],
        ["--count n", "--microdata"],
        files={
            "release.toml": 'hierarchy = ["region", "province", "mun"]\ndomain = "geo"\nrho = 1.0\n'
        },
    ),
    Mistake(
        "features (CBDP) of a pre-aggregated table without its count column",
        lambda con, _: inftda_sql.release(
            con,
            "agg",
            mechanism="cbdp",
            features={"total": [], "leaf": GEO},
            domain="geo",
            epsilon=1.0,
        ),
        "release {db} agg --mechanism cbdp --features total: --features leaf:region,province,mun "
        "--domain geo --epsilon 1",
        inftda_sql.InputDataError,
        ["numeric column 'n' (INTEGER)", "no count column was given"],
        ["count='n'", "microdata=True"],
        ["--count n", "--microdata"],
    ),
    Mistake(
        "count of counts of a table of households with their sizes",
        lambda con, _: inftda_sql.release_count_of_counts(
            con,
            "hh",
            group="hh_id",
            hierarchy=GEO,
            groups="hh_groups",
            epsilon=1.0,
            max_size=10,
        ),
        "count-of-counts {db} hh --group hh_id --hierarchy region,province,mun --groups hh_groups "
        "--epsilon 1 --max-size 10",
        inftda_sql.InputDataError,
        ["numeric column 'persons' (INTEGER)", "one row per person"],
        ["EXCLUDE (persons) FROM hh t, range(t.persons)", "microdata=True"],
        ["EXCLUDE (persons) FROM hh t, range(t.persons)", "--microdata"],
        setup="CREATE TABLE hh_groups AS SELECT *, 1 AS households FROM geo; "
        "CREATE TABLE hh AS SELECT *, (row_number() OVER ())::INTEGER AS hh_id, 2 AS persons "
        "FROM geo",
    ),
    Mistake(
        "both chains given fine to coarse",
        lambda con, _: inftda_sql.release(
            con,
            "od_micro",
            hierarchy=[["o_mun", "o_reg"], ["d_mun", "d_prov", "d_reg"]],
            domain=["geo_o", "geo_d"],
            rho=1.0,
        ),
        "release {db} od_micro --hierarchy o_mun,o_reg --hierarchy d_mun,d_prov,d_reg "
        "--domain geo_o --domain geo_d --rho 1",
        inftda_sql.DomainError,
        ["domain of chain 1 is not nested", "look listed fine to coarse"],
        ["hierarchy=[['o_reg', 'o_mun'], ['d_reg', 'd_prov', 'd_mun']]"],
        ["--hierarchy o_reg,o_mun --hierarchy d_reg,d_prov,d_mun"],
    ),
    Mistake(
        "a file too new for the requested storage version",
        lambda con, d: _too_new(d / "other.duckdb"),
        "release {db} persons {geo} --storage-version v1.0.0",
        inftda_sql.InputDataError,
        ["was created in storage format v2.0.0", "keeps its format"],
        ["(STORAGE_VERSION 'v1.0.0'); COPY FROM DATABASE src TO dst;"],
        ["(STORAGE_VERSION 'v1.0.0'); COPY FROM DATABASE src TO dst;"],
    ),
]


def _make_db(folder: Path, mistake: Mistake) -> Path:
    db = folder / "data.duckdb"
    with duckdb.connect(str(db)) as con:  # DuckDB 2.0's own storage format
        make_geo(con)
        make_persons(con)
        make_od(con)
        con.execute(
            "CREATE TABLE agg AS SELECT *, count(*)::INTEGER AS n FROM persons GROUP BY ALL"
        ).fetchall()
        con.execute(
            "CREATE TABLE agg_text AS SELECT * REPLACE (n::VARCHAR AS n) FROM agg"
        ).fetchall()
        for stmt in filter(str.strip, mistake.setup.split(";")):
            con.execute(stmt).fetchall()
    for name, content in mistake.files.items():
        target = folder / name
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")
    return db


def _argv(mistake: Mistake, db: Path) -> list[str]:
    argv: list[str] = []
    for token in mistake.argv.split():
        if token == "{geo}":
            argv += GEO_FLAGS.split()
        else:
            argv.append(token.format(db=db, dir=db.parent))
    return argv


IDS = [m.name for m in MISTAKES]


@pytest.mark.parametrize("mistake", MISTAKES, ids=IDS)
def test_python_message_says_what_and_how(tmp_path: Path, mistake: Mistake) -> None:
    db = _make_db(tmp_path, mistake)
    con = duckdb.connect(str(db))
    before = snapshot(con)
    try:
        with pytest.raises(mistake.error) as info:
            mistake.api(con, tmp_path)
        assert snapshot(con) == before
    finally:
        con.close()
    message = str(info.value)
    assert "\n" not in message
    for fragment in [*mistake.what, *mistake.api_fix]:
        assert fragment in message, message


@pytest.mark.parametrize("mistake", MISTAKES, ids=IDS)
def test_cli_message_is_one_line_in_flag_spelling(
    tmp_path: Path, mistake: Mistake, capsys: pytest.CaptureFixture[str]
) -> None:
    db = _make_db(tmp_path, mistake)
    with duckdb.connect(str(db)) as con:
        before = snapshot(con)
    code = main(_argv(mistake, db))
    out, err = capsys.readouterr()
    assert code == 1, err
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    message = lines[0]
    assert message.startswith("error: ")
    assert "Traceback" not in message
    for fragment in [*mistake.what, *mistake.cli_fix]:
        assert fragment in message, message
    assert not PYTHON_SPELLING.search(message), message
    with duckdb.connect(str(db)) as con:
        assert snapshot(con) == before


def test_a_wrong_tree_flag_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On the command line the tree kinds are flag choices: exit 2, listing them."""
    db = _make_db(tmp_path, MISTAKES[0])
    assert main(["release", str(db), "persons", *GEO_FLAGS.split(), "--tree", "od"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "invalid choice: 'od'" in err
    assert "'chain', 'sequential', 'destination', 'origin'" in err


def test_a_real_process_prints_one_line_and_no_traceback(tmp_path: Path) -> None:
    """`python -m inftda_sql`: exit code 1, one line, and --debug brings the traceback back."""
    mistake = MISTAKES[4]  # output exists
    db = _make_db(tmp_path, mistake)
    argv = [sys.executable, "-m", "inftda_sql", *_argv(mistake, db)]
    plain = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert plain.returncode == 1
    assert plain.stdout == ""
    assert plain.stderr.count("\n") == 1, plain.stderr
    assert "--overwrite" in plain.stderr
    debug = subprocess.run(
        [*argv[:3], "--debug", *argv[3:]], capture_output=True, text=True, check=False
    )
    assert debug.returncode == 1
    assert "Traceback" in debug.stderr
    assert "OutputExistsError" in debug.stderr


def test_a_domain_that_is_not_nested_coarse_to_fine_gets_no_reversal_hint(
    con: duckdb.DuckDBPyConnection,
) -> None:
    """The hint to reverse a chain comes only when its first column has more distinct values
    than its last; a real nesting mistake keeps its own fix."""
    make_geo(con)
    make_persons(con)
    con.execute("INSERT INTO geo VALUES ('South', 'S9', 'n1a')").fetchall()
    with pytest.raises(inftda_sql.DomainError) as info:
        inftda_sql.release(con, "persons", hierarchy=GEO, domain="geo", rho=1.0)
    assert "codes unique across the whole domain" in str(info.value)
    assert "fine to coarse" not in str(info.value) and info.value.param is None
