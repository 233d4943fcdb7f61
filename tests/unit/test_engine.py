"""engines/duckdb/engine.py: the stages of one release in order, and close() cleaning up."""

from __future__ import annotations

from typing import Any

import duckdb
import pytest

from inftda_sql import (
    BudgetExceededError,
    DomainError,
    InftdaError,
    InputDataError,
    OutputExistsError,
    SpecError,
)
from inftda_sql._budget import set_budget
from inftda_sql._request import ReleaseRequest
from inftda_sql.engines.base import Engine, FeatureEngine, Scan
from inftda_sql.engines.duckdb import write as _write
from inftda_sql.engines.duckdb.engine import DuckDBEngine
from inftda_sql.engines.duckdb.ledger import read_releases
from inftda_sql.mechanisms import MechanismContext
from tests.system.helpers import make_geo, make_persons, snapshot
from tests.unit.helpers import RELEASE_ARGS, release_record

GEO = ["region", "province", "mun"]


@pytest.fixture
def db(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    make_geo(con)
    make_persons(con)
    return con


def _request(table: object = "persons", **changes: Any) -> ReleaseRequest:
    args = {**RELEASE_ARGS, "hierarchy": GEO, "rho": float("inf"), "seed": 1, **changes}
    return ReleaseRequest.from_args(table, **args)


def _temporary(con: duckdb.DuckDBPyConnection, engine: DuckDBEngine) -> list[str]:
    """Every table or view (registered Arrow tables included) the release created."""
    prefix = engine.names.prefix
    found = con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE starts_with(table_name, $p) "
        "UNION ALL SELECT view_name FROM duckdb_views() WHERE starts_with(view_name, $p) "
        "ORDER BY 1",
        {"p": prefix},
    ).fetchall()
    return [r[0][len(prefix) :] for r in found]


def test_the_stages_in_order(db: duckdb.DuckDBPyConnection) -> None:
    req = _request(
        domain={
            "region": ["North", "North", "North", "South", "South", "South", "East"],
            "province": ["N1", "N1", "N2", "S1", "S1", "S1", "E1"],
            "mun": ["n1a", "n1b", "n2a", "s1a", "s1b", "s1c", "e1a"],
        }
    )
    engine = DuckDBEngine(db, req)
    # the interface the pipeline asks for (a Protocol: not runtime-checkable, so by name)
    wanted = {name for name in vars(Engine) if not name.startswith("_")}
    wanted |= {name for name in vars(FeatureEngine) if not name.startswith("_")}
    assert wanted == {
        "domain_description",
        "input_description",
        "prepare",
        "resolve",
        "code_domains",
        "scan",
        "level_counts",
        "run_mechanism",
        "released",
        "released_table",
        "write",
        # a feature release (CBDP): its domain, its one GROUPING SETS scan, its write
        "resolve_features",
        "code_lattice",
        "feature_counts",
        "write_features",
        "close",
    }
    assert wanted <= set(dir(engine))
    with engine:
        with pytest.raises(SpecError, match="call prepare\\(\\) first"):
            _ = engine.input
        assert engine.prepare() is None  # no budget stored
        assert engine.input.description == "table 'persons'"  # resolved in the catalog
        assert _temporary(db, engine) == ["domain_0"]
        engine.resolve()
        assert engine.domain_description == "the declared domain"
        assert _temporary(db, engine) == ["domain_0"]
        (tree,) = engine.code_domains()
        assert tree.sizes == (1, 3, 4, 7)
        assert _temporary(db, engine) == ["codes_0", "domain_0"]
        found = engine.scan()
        assert found == Scan(total=16, diagnostics={})
        assert _temporary(db, engine) == ["codes_0", "domain_0", "leaf"]
        keys, counts = engine.level_counts(1, (1,))
        assert (keys.tolist(), counts.tolist()) == ([1, 2], [8, 8])  # North, South (East 0)
        result = req.mechanism.run(
            MechanismContext(
                spec=req.spec,
                chains=[tree],
                true_level=engine.level_counts,
                total=found.total,
                accounting=req.account([tree]),  # made once the domain is coded
                source=req.source,
            )
        )
        written = engine.write(result, release_record())
        assert (written.release_id, written.base_tables) == (1, ["main.persons"])
    assert _temporary(db, engine) == []
    assert db.execute("SELECT mun, count FROM persons_private ORDER BY 1").fetchall() == [
        ("n1a", 5),
        ("n2a", 3),
        ("s1a", 1),
        ("s1c", 7),
    ]
    assert [r.release_id for r in read_releases(db)] == [1]


def test_a_relation_input_and_domain_from_data(db: duckdb.DuckDBPyConnection) -> None:
    req = _request(
        db.sql("SELECT * FROM persons WHERE region = 'North'"),
        output="north",
        domain=None,
        domain_from_data=True,
    )
    with DuckDBEngine(db, req) as engine:
        assert engine.prepare() is None  # a relation has no stored budget
        engine.resolve()
        assert engine.domain_description == "FROM DATA (not private)"
        (tree,) = engine.code_domains()
        assert tree.sizes == (1, 1, 2, 2)  # only what the data holds
        assert engine.scan().total == 8
        assert _temporary(db, engine) == ["codes_0", "input", "leaf"]
    assert _temporary(db, engine) == []


def _run_all(db: duckdb.DuckDBPyConnection, engine: DuckDBEngine, seen: list[list[str]]) -> None:
    """Every stage of a release, noting the temporary objects after each."""
    req = engine.request
    engine.prepare()
    engine.resolve()
    seen.append(_temporary(db, engine))
    trees = engine.code_domains()
    seen.append(_temporary(db, engine))
    found = engine.scan()
    seen.append(_temporary(db, engine))
    ctx = MechanismContext(
        req.spec, trees, engine.level_counts, found.total, req.account(trees), req.source
    )
    engine.write(req.mechanism.run(ctx), release_record())


NOT_NESTED = {"region": ["N", "S"], "province": ["x", "x"], "mun": ["a", "b"]}
TOO_SMALL = {"region": ["North"], "province": ["N1"], "mun": ["n1a"]}


@pytest.mark.parametrize(
    ("changes", "error", "stages"),
    [
        ({"count": "nope"}, InputDataError, 0),  # resolve: after the input's view was made
        ({"domain": NOT_NESTED}, DomainError, 1),  # code_domains: after the domain's
        ({"domain": TOO_SMALL}, DomainError, 2),  # scan: after the codes were registered
        ({}, RuntimeError, 3),  # write: after the scan's tables were made
    ],
    ids=["resolve", "code_domains", "scan", "write"],
)
def test_close_drops_everything_after_a_failure(
    db: duckdb.DuckDBPyConnection,
    monkeypatch: pytest.MonkeyPatch,
    changes: dict[str, Any],
    error: type[Exception],
    stages: int,
) -> None:
    def fail(*args: object) -> None:
        raise RuntimeError("injected failure in the write stage")

    monkeypatch.setattr(_write, "insert_release", fail)
    req = _request(db.sql("SELECT * FROM persons"), output="out", **changes)
    before = snapshot(db)
    seen: list[list[str]] = []
    with pytest.raises(error), DuckDBEngine(db, req) as engine:
        _run_all(db, engine, seen)
    assert len(seen) == stages and all(seen)  # temporary objects existed when it failed
    assert _temporary(db, engine) == []
    assert snapshot(db) == before  # no output, view or ledger row either
    engine.close()  # a second close is harmless


def test_prepare_checks_the_transaction_then_the_output_then_the_budget(
    db: duckdb.DuckDBPyConnection,
) -> None:
    db.execute("CREATE TABLE persons_private AS SELECT 1 AS x").fetchall()
    set_budget(db, "persons", rho=0.5)
    db.execute("BEGIN TRANSACTION").fetchall()
    with pytest.raises(InftdaError, match="the connection has an open transaction"):
        DuckDBEngine(db, _request(rho=1.0)).prepare()
    db.execute("ROLLBACK").fetchall()
    with pytest.raises(
        OutputExistsError, match="'persons_private' already exists; pass overwrite=True"
    ):
        DuckDBEngine(db, _request(rho=1.0)).prepare()
    with pytest.raises(BudgetExceededError):
        DuckDBEngine(db, _request(rho=1.0, overwrite=True)).prepare()
    note = DuckDBEngine(db, _request(rho=1.0, overwrite=True, budget_override=True)).prepare()
    assert note == "budget override: spent rho 1 exceeds the budget rho 0.5 of 'main.persons'"
    assert DuckDBEngine(db, _request(rho=0.5, overwrite=True)).prepare() is None


def test_released_table_of_cells_in_code_order_needs_no_sort(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # cells that come from TopDown in code order, chain 0 first, are decoded as they are (no
    # sort), the same table as cells out of order give once sorted; one chain and two
    import numpy as np
    import pyarrow as pa

    from inftda_sql.core import cells as _cells
    from inftda_sql.core.spec import parse_hierarchy
    from inftda_sql.core.tree import TopDownResult

    spec = parse_hierarchy(["region", "city"])
    geo = pa.table({"region": pa.chunked_array([["N", "N"], ["S"]]), "city": ["a", "b", "c"]})
    shuffled = TopDownResult((np.array([2, 0]),), np.array([4, 1]), ())
    expected = _write.released_table(spec, shuffled, [geo])
    od = parse_hierarchy([["o_region", "o_city"], ["d_region", "d_city"]], "destination")
    o_geo, d_geo = (geo.rename_columns([f"{side}_region", f"{side}_city"]) for side in "od")
    pair = TopDownResult((np.array([2, 0, 2]), np.array([0, 1, 2])), np.array([4, 1, 3]), ())
    expected_od = _write.released_table(od, pair, [o_geo, d_geo])

    def no_sort(*args: Any) -> Any:
        raise AssertionError("sorted cells sorted again")

    monkeypatch.setattr(_cells, "sort_order", no_sort)
    monkeypatch.setattr(_cells.np, "lexsort", no_sort)
    ordered = TopDownResult((np.array([0, 2]),), np.array([1, 4]), ())
    assert _write.released_table(spec, ordered, [geo]).equals(expected)
    pair = TopDownResult((np.array([0, 2, 2]), np.array([1, 0, 2])), np.array([1, 4, 3]), ())
    assert _write.released_table(od, pair, [o_geo, d_geo]).equals(expected_od)
    assert expected_od.column("count").to_pylist() == [1, 4, 3]
