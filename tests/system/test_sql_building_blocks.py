"""The script "One InfTDA level in plain SQL" (docs/how-to/sql-building-blocks.md), run as
printed: its IntOpt is the library's on the same noisy values, and without noise its output is
release()'s."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

import inftda_sql
from inftda_sql.core.accounting import account
from tests.system.helpers import make_geo, make_persons

ROOT = Path(__file__).resolve().parents[2]
FIRST_LINE = "-- persons(region, province) is private, geo(region, province) the public domain."
BUDGET = "SET VARIABLE epsilon = 1.0;"


def readme_script() -> str:
    """The ```sql block of the page that starts with FIRST_LINE."""
    text = (ROOT / "docs" / "how-to" / "sql-building-blocks.md").read_text(encoding="utf-8")
    blocks = [b.split("```", 1)[0] for b in text.split("```sql\n")[1:]]
    (script,) = [b for b in blocks if b.startswith(FIRST_LINE)]
    assert script.count(BUDGET) == 1
    return script


@pytest.fixture
def con() -> Iterator[duckdb.DuckDBPyConnection]:
    connection = duckdb.connect()
    make_geo(connection)
    make_persons(connection)
    inftda_sql.register(connection)
    yield connection
    connection.close()


def rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[tuple[object, ...]]:
    return con.execute(sql).fetchall()


def test_without_noise_the_sql_level_is_release(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(readme_script().replace(BUDGET, "SET VARIABLE epsilon = 'inf';"))
    assert rows(con, "SELECT getvariable('sigma')") == [(0.0,)]
    inftda_sql.release(
        con, "persons", hierarchy=["region", "province"], domain="geo", rho=float("inf")
    )
    mine = rows(con, "SELECT region, province, count FROM persons_sql ORDER BY ALL")
    theirs = rows(con, "SELECT region, province, count FROM persons_private ORDER BY ALL")
    assert mine == theirs == [("North", "N1", 5), ("North", "N2", 3), ("South", "S1", 8)]


def test_the_sql_intopt_is_the_librarys_on_the_same_noise(
    con: duckdb.DuckDBPyConnection,
) -> None:
    con.execute(readme_script())
    # the script's sigma is the one a release of these two levels uses, bit for bit
    acct = account(inftda_sql.Budget.from_args(epsilon=1.0, delta=1e-8), ["region", "province"])
    assert rows(con, "SELECT getvariable('sigma')") == [(acct.level_sigma[0],)]

    # level 1: IntOpt of the drawn region counts under the public total N
    regions = rows(con, "SELECT region, noisy FROM noisy_region ORDER BY region")
    assert [r for r, _ in regions] == ["East", "North", "South"]  # every region of the domain
    total = rows(con, "SELECT count(*) FROM persons")[0][0]
    level1 = inftda_sql.intopt([y for _, y in regions], total).tolist()
    assert rows(con, "SELECT region, count FROM region_level ORDER BY region") == [
        (r, x) for (r, _), x in zip(regions, level1, strict=True)
    ]

    # level 2: the children of every surviving region, IntOpt per parent in one segmented call
    children = rows(
        con, "SELECT region, province, noisy FROM noisy_province ORDER BY region, province"
    )
    survivors = sorted(r for (r, _), x in zip(regions, level1, strict=True) if x > 0)
    assert sorted({r for r, _, _ in children}) == survivors
    domain = rows(con, "SELECT DISTINCT region, province FROM geo ORDER BY ALL")
    assert [(r, p) for r, p, _ in children] == [d for d in domain if d[0] in survivors]
    parents = sorted({r for r, _, _ in children})
    offsets = [[r for r, _, _ in children].index(p) for p in parents]
    targets = [dict(zip([r for r, _ in regions], level1, strict=True))[p] for p in parents]
    level2 = inftda_sql.intopt([y for _, _, y in children], targets, offsets=offsets).tolist()
    expected_rows = sorted(
        (r, p, x) for (r, p, _), x in zip(children, level2, strict=True) if x > 0
    )
    assert rows(con, "SELECT region, province, count FROM persons_sql ORDER BY ALL") == (
        expected_rows
    )

    # consistent and non-negative, like a release
    for region, count in zip([r for r, _ in regions], level1, strict=True):
        kids = [x for (r, _, _), x in zip(children, level2, strict=True) if r == region]
        assert sum(kids) == (count if count > 0 else 0)
    assert sum(level1) == total and min(level1) >= 0 and min(level2, default=0) >= 0


def test_the_draws_are_made_once_and_kept(con: duckdb.DuckDBPyConnection) -> None:
    """Reading the noisy tables twice shows the same values: the script drew each once."""
    con.execute(readme_script())
    first = rows(con, "SELECT * FROM noisy_province ORDER BY ALL")
    assert rows(con, "SELECT * FROM noisy_province ORDER BY ALL") == first
