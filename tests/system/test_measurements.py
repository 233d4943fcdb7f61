"""measurements=True (issue 25): the noisy measurements of a TopDown release, written with it,
recorded in its ledger row, published with it, and enough to reproduce it by post-processing."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pytest

import inftda_sql
from inftda_sql.core.intopt import intopt
from inftda_sql.core.spec import parse_hierarchy
from tests.system.helpers import make_geo, make_od, make_persons

GEO = ["region", "province", "mun"]
OD = [["o_reg", "o_mun"], ["d_reg", "d_prov", "d_mun"]]


def _cells(con: duckdb.DuckDBPyConnection, sql: str) -> dict[Any, Any]:
    return {tuple(r[:-1]): r[-1] for r in con.execute(sql).fetchall()}


def _reproduce(con: duckdb.DuckDBPyConnection, output: str, hierarchy: Any, tree: str) -> int:
    """Post-process the measurements with IntOpt level by level and compare with the levels
    view; returns the number of measured values."""
    spec = parse_hierarchy(hierarchy, tree)
    cols = spec.columns
    collist = ", ".join(cols)
    released = _cells(con, f"SELECT level, {collist}, count FROM {output}_levels WHERE level > 0")
    rows = con.execute(
        f"SELECT level, {collist}, noisy, parent_count FROM {output}_measurements"
    ).fetchall()  # in level, then cell order: the order TopDown saw them in
    assert rows
    set_at = [
        {col for chain, d in zip(spec.chains, depths, strict=True) for col in chain[:d]}
        for depths in spec.levels
    ]
    groups: dict[Any, list[tuple[Any, int, int]]] = defaultdict(list)
    for level, *rest in rows:
        values = dict(zip(cols, rest[:-2], strict=True))
        noisy, parent_count = rest[-2], rest[-1]
        parent = (level - 1, *(values[c] if c in set_at[level - 1] else None for c in cols))
        child = (level, *rest[:-2])
        groups[parent].append((child, noisy, parent_count))
    measured = set()
    for parent, children in groups.items():
        target = children[0][2]
        assert all(c[2] == target for c in children)
        if parent[0] > 0:  # the parent's released value is the one the children were fit to
            assert released[parent] == target
        y = np.array([c[1] for c in children], dtype=np.int64)
        x = intopt(y, np.array([target], dtype=np.int64), np.array([0], dtype=np.int64))
        for (child, _, _), value in zip(children, x, strict=True):
            assert released.get(child, 0) == value, child
            measured.add(child)
    for cell, value in released.items():  # what was not measured is an only child
        if cell not in measured:
            level = cell[0]
            values = dict(zip(cols, cell[1:], strict=True))
            parent = (level - 1, *(values[c] if c in set_at[level - 1] else None for c in cols))
            assert parent[0] == 0 or released[parent] == value, cell
    return len(rows)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_intopt_on_the_measurements_reproduces_the_release(seed: int) -> None:
    con = duckdb.connect()
    make_geo(con)
    make_persons(con)
    r = inftda_sql.release(
        con, "persons", hierarchy=GEO, domain="geo", rho=0.3, seed=seed, measurements=True
    )
    n = _reproduce(con, "persons_private", GEO, "chain")
    sigmas = dict(zip(r.accounting.level_names, r.accounting.level_sigma, strict=True))
    for name, sigma in con.execute(
        "SELECT DISTINCT level_name, sigma FROM persons_private_measurements"
    ).fetchall():
        assert sigma == sigmas[name]
    noised = sum(lv.noised_cells for lv in r.levels)
    assert n == noised  # every noisy value drawn, and nothing else


@pytest.mark.parametrize("tree", ["destination", "origin"])
def test_od_trees_reproduce_too(tree: str) -> None:
    con = duckdb.connect()
    make_od(con)
    inftda_sql.release(
        con,
        "od",
        hierarchy=OD,
        domain=["geo_o", "geo_d"],
        tree=tree,
        count="n",
        rho=0.5,
        seed=5,
        measurements=True,
        output="od_private",
    )
    assert _reproduce(con, "od_private", OD, tree) > 0


def test_unbounded_measures_the_root() -> None:
    con = duckdb.connect()
    make_geo(con)
    make_persons(con)
    inftda_sql.release(
        con,
        "persons",
        hierarchy=GEO,
        domain="geo",
        rho=0.3,
        seed=4,
        privacy="unbounded",
        measurements=True,
    )
    root = con.execute(
        "SELECT noisy, parent_count FROM persons_private_measurements WHERE level = 0"
    ).fetchall()
    assert len(root) == 1 and root[0][1] is None
    total = con.execute("SELECT count FROM persons_private_levels WHERE level = 0").fetchall()
    assert total == [(max(root[0][0], 0),)]


def test_measurements_are_one_transaction_one_ledger_row_and_published(tmp_path: Path) -> None:
    con = duckdb.connect(str(tmp_path / "work.duckdb"))
    make_geo(con)
    make_persons(con)
    inftda_sql.release(con, "persons", hierarchy=GEO, domain="geo", rho=0.5, measurements=True)
    (details,) = con.execute("SELECT details FROM inftda_releases").fetchall()[0]
    assert json.loads(details)["measurements"] == "persons_private_measurements"
    assert con.execute("SELECT count(*) FROM inftda_releases").fetchall() == [(1,)]
    out = inftda_sql.publish(con, "persons_private", tmp_path / "public.duckdb")
    with duckdb.connect(str(out), read_only=True) as pub:
        shared = pub.execute("SELECT * FROM persons_private_measurements ORDER BY ALL").fetchall()
    assert (
        shared == con.execute("SELECT * FROM persons_private_measurements ORDER BY ALL").fetchall()
    )
    # an edited measurements table is not what the release wrote: publish refuses it
    con.execute("UPDATE persons_private_measurements SET noisy = noisy + 1").fetchall()
    with pytest.raises(inftda_sql.InftdaError):
        inftda_sql.publish(con, "persons_private", tmp_path / "again.duckdb")


def test_a_failed_write_leaves_no_measurements(monkeypatch: pytest.MonkeyPatch) -> None:
    from inftda_sql.engines.duckdb import compile as _compile

    con = duckdb.connect()
    make_geo(con)
    make_persons(con)

    def broken_view(*args: object, **kw: object) -> str:
        return "CREATE VIEW this is not sql"

    monkeypatch.setattr(_compile, "levels_view", broken_view)
    with pytest.raises(duckdb.Error):
        inftda_sql.release(con, "persons", hierarchy=GEO, domain="geo", rho=1.0, measurements=True)
    names = {
        r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()
    }
    assert not any(n.startswith("persons_private") for n in names)


@pytest.mark.parametrize(
    ("kw", "fragment"),
    [
        ({"mechanism": "vanilla_gauss"}, "has no TopDown measurements"),
        ({"return_as": "arrow", "output": None}, "writes <output>_measurements"),
        ({"measurements": "yes"}, "measurements must be True or False"),
    ],
)
def test_bad_measurements_requests(kw: dict[str, Any], fragment: str) -> None:
    con = duckdb.connect()
    make_geo(con)
    make_persons(con)
    args: dict[str, Any] = {"hierarchy": GEO, "domain": "geo", "rho": 1.0, "measurements": True}
    args.update(kw)
    with pytest.raises(inftda_sql.SpecError, match=fragment):
        inftda_sql.release(con, "persons", **args)
    assert con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name LIKE 'persons_private%'"
    ).fetchall() == [(0,)]
