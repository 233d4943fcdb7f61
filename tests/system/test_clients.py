"""A released database opens in other DuckDB clients, including older embedded engines.

DuckDB 2.0 writes its own storage format by default, which DuckDB 1.x (the engine inside the
Node client, SQL IDEs' JDBC drivers, older Python wheels) cannot read. Files created with
``storage_version="v1.0.0"`` (the default of ``inftda-sql demo``) can, and keep that format
through later releases. These tests open such a file with the DuckDB Node client from npm and
with an old DuckDB Python wheel, and run the join of the README on it. Each installs its client
itself and skips, with the reason, when it cannot (no node/npm, no network, no wheel).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest

import inftda_sql
from inftda_sql._compat import connect, storage_version
from inftda_sql.cli import main
from inftda_sql.synthetic import italy_like

ROOT = Path(__file__).resolve().parents[2]
#: git-ignored cache of the Node client (about 70 MB, installed once)
NODE_CACHE = ROOT / ".cache" / "node-duckdb"
NODE_PACKAGE = "@duckdb/node-api@1.5.6-r.1"  # bundles DuckDB 1.5.6
OLD_WHEEL = "duckdb==1.1.3"

JOIN = (
    "SELECT g.name AS origin, h.name AS destination, CAST(p.count AS BIGINT) AS trips "
    "FROM trips_private p JOIN geo g ON g.municipality = p.o_mun "
    "JOIN geo h ON h.municipality = p.d_mun "
    "ORDER BY p.count DESC, origin, destination LIMIT 10"
)
LEVELS = (
    "SELECT level, CAST(sum(count) AS BIGINT) AS total, CAST(count(*) AS BIGINT) AS cells "
    "FROM trips_private_levels GROUP BY level ORDER BY level"
)
LEDGER = "SELECT release_id, output_table, rho FROM inftda_releases ORDER BY release_id"
QUERIES = {"join": JOIN, "levels": LEVELS, "ledger": LEDGER}

OD = [
    "--hierarchy", "o_region,o_province,o_mun", "--hierarchy", "d_region,d_province,d_mun",
    "--domain", "geo_origin", "--domain", "geo_destination", "--tree", "destination",
]  # fmt: skip


def _expected(db: Path) -> dict[str, list[list[Any]]]:
    with duckdb.connect(str(db), read_only=True) as con:
        return {k: [list(r) for r in con.execute(q).fetchall()] for k, q in QUERIES.items()}


@pytest.fixture(scope="module")
def compatible_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`inftda-sql demo` (compatible format by default), then a second `inftda-sql release`."""
    db = tmp_path_factory.mktemp("clients") / "demo.duckdb"
    assert main(["demo", "--db", str(db), "--scale", "0.01", "--quiet"]) == 0
    argv = ["release", str(db), "trips", *OD, "--rho", "1", "--output", "again", "--quiet"]
    assert main(argv) == 0
    return db


@pytest.fixture(scope="module")
def latest_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same data in DuckDB 2.0's own storage format (no compatibility setting)."""
    db = tmp_path_factory.mktemp("clients") / "latest.duckdb"
    con = connect(db)
    try:
        data = italy_like(con, scale=0.01)
        inftda_sql.release(
            con,
            data.trips,
            hierarchy=data.hierarchy,
            domain=[data.geo_origin, data.geo_destination],
            tree="destination",
            rho=1.0,
        )
    finally:
        con.close()
    return db


def test_the_file_reports_the_compatible_storage_version(compatible_db: Path) -> None:
    with duckdb.connect(str(compatible_db), read_only=True) as con:
        assert storage_version(con) == "v1.0.0"
        assert con.execute("SELECT count(*) FROM inftda_releases").fetchall() == [(2,)]
    with duckdb.connect(str(compatible_db), read_only=True) as con:
        (tags,) = con.execute(
            "SELECT tags FROM duckdb_databases() WHERE database_name = current_database()"
        ).fetchall()[0]
        assert tags == {"storage_version": "v1.0.0+"}


def test_python_helper_creates_compatible_files(tmp_path: Path) -> None:
    con = connect(tmp_path / "a.duckdb", storage_version="v1.0.0")
    con.execute("CREATE TABLE t AS SELECT 1 AS x").fetchall()
    con.close()
    con = connect(tmp_path / "a.duckdb")  # reopened without the setting: the format stays
    con.execute("CREATE TABLE u AS SELECT range AS x FROM range(100000)").fetchall()
    con.execute("CHECKPOINT").fetchall()
    assert storage_version(con) == "v1.0.0"
    con.close()
    con = connect(tmp_path / "b.duckdb")
    assert storage_version(con) == "v2.0.0"
    con.close()
    assert storage_version(connect()) is None  # in memory
    with pytest.raises(inftda_sql.SpecError, match="not a DuckDB version this DuckDB"):
        connect(tmp_path / "c.duckdb", storage_version="v9.9.9")


# ---------------------------------------------------------------------------------- Node

NODE_SCRIPT = """\
import { DuckDBInstance } from '@duckdb/node-api';
const [path, queries] = [process.argv[2], JSON.parse(process.argv[3])];
try {
  const instance = await DuckDBInstance.create(path, { access_mode: 'READ_ONLY' });
  const con = await instance.connect();
  const out = { version: (await con.runAndReadAll('SELECT version()')).getRows()[0][0] };
  for (const [name, sql] of Object.entries(queries)) {
    out[name] = (await con.runAndReadAll(sql)).getRowsJS();
  }
  console.log(JSON.stringify(out, (k, v) => (typeof v === 'bigint' ? Number(v) : v)));
} catch (e) {
  console.error(e.message.split('\\n')[0]);
  process.exit(3);
}
"""


@pytest.fixture(scope="module")
def node_client() -> Path:
    """The DuckDB Node client installed with npm into the git-ignored cache (once)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node and npm are needed to test the DuckDB Node client")
    NODE_CACHE.mkdir(parents=True, exist_ok=True)
    with open(NODE_CACHE / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one installer at a time
        marker = NODE_CACHE / ".installed"
        if not marker.exists() or marker.read_text() != NODE_PACKAGE:
            (NODE_CACHE / "package.json").write_text('{"private": true}\n')
            try:
                proc = subprocess.run(
                    [npm, "install", "--no-audit", "--no-fund", "--no-save", "--silent",
                     "--prefix", str(NODE_CACHE), NODE_PACKAGE],
                    capture_output=True, text=True, timeout=600, check=False,
                )  # fmt: skip
            except subprocess.TimeoutExpired:
                pytest.skip(f"npm install {NODE_PACKAGE} timed out")
            if proc.returncode != 0:
                last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
                pytest.skip(f"npm install {NODE_PACKAGE} failed: {last}")
            marker.write_text(NODE_PACKAGE)
    script = NODE_CACHE / "query.mjs"
    if not script.exists() or script.read_text() != NODE_SCRIPT:
        script.write_text(NODE_SCRIPT)
    return script


def _node(script: Path, db: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["node", str(script), str(db), json.dumps(QUERIES)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "NODE_NO_WARNINGS": "1"},
    )


@pytest.mark.network
def test_node_client_opens_the_release_and_runs_the_join(
    node_client: Path, compatible_db: Path
) -> None:
    proc = _node(node_client, compatible_db)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["version"].startswith("v1.")  # an older engine than ours
    expected = _expected(compatible_db)
    for name in QUERIES:
        assert result[name] == expected[name], name
    assert len(result["join"]) == 10
    assert [r[1] for r in result["ledger"]] == ["trips_private", "again"]


@pytest.mark.network
def test_node_client_cannot_open_duckdb_2_storage(node_client: Path, latest_db: Path) -> None:
    """Why the setting matters: without it the older engine refuses the file."""
    proc = _node(node_client, latest_db)
    assert proc.returncode == 3
    assert "created with a newer version of DuckDB" in proc.stderr or "version number" in (
        proc.stderr
    ), proc.stderr


# ---------------------------------------------------------------------------------- old wheel

OLD_SCRIPT = """\
import json, sys, duckdb
con = duckdb.connect(sys.argv[1], read_only=True)
out = {"version": duckdb.__version__}
for name, sql in json.loads(sys.argv[2]).items():
    out[name] = [list(r) for r in con.execute(sql).fetchall()]
print(json.dumps(out))
"""


@pytest.mark.network
def test_an_old_duckdb_wheel_opens_the_release(tmp_path: Path, compatible_db: Path) -> None:
    venv = tmp_path / "old-duckdb"
    made = subprocess.run(
        [sys.executable, "-m", "venv", str(venv)], capture_output=True, text=True, check=False
    )
    if made.returncode != 0:
        pytest.skip(f"cannot create a virtualenv: {made.stderr.strip()[-200:]}")
    python = venv / "bin" / "python"
    try:
        pip = subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
             "--only-binary", ":all:", OLD_WHEEL],
            capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.skip(f"pip install {OLD_WHEEL} timed out")
    if pip.returncode != 0:
        last = (pip.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"pip install {OLD_WHEEL} failed: {last}")
    proc = subprocess.run(
        [str(python), "-c", OLD_SCRIPT, str(compatible_db), json.dumps(QUERIES)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    assert result["version"] == OLD_WHEEL.split("==")[1]
    expected = _expected(compatible_db)
    for name in QUERIES:
        assert result[name] == expected[name], name
