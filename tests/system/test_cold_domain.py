"""A first release's domain work: integer leaves coded without the join, sorted domains coded
without the cache (issue 26, item 2)."""

from __future__ import annotations

from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import inftda_sql
from inftda_sql import DomainError, InputDataError
from inftda_sql.core import tree as tree_module
from inftda_sql.engines.duckdb import cache as cache_module
from inftda_sql.engines.duckdb import compile as compile_module
from inftda_sql.engines.duckdb import domain as domain_module
from inftda_sql.engines.duckdb import scan as scan_module

CHAIN = ["region", "province", "mun"]
SEEDED: dict[str, Any] = {"epsilon": 1.0, "delta": 1e-8, "seed": 7, "overwrite": True}


def _world(con: duckdb.DuckDBPyConnection, *, leaf_step: int = 1, sorted_geo: bool = True) -> None:
    """An integer domain of 3 x 4 x 5 paths (leaf values 100 + step * code) and records."""
    code = np.arange(60)
    geo = pa.table({"region": code // 20, "province": code // 5, "mun": 100 + leaf_step * code})
    if not sorted_geo:
        geo = geo.take(pa.array(np.random.default_rng(1).permutation(60)))
    con.register("g", geo)
    con.execute("CREATE TABLE geo AS SELECT * FROM g").fetchall()
    con.unregister("g")
    rng = np.random.default_rng(0)
    mun = 100 + leaf_step * rng.integers(0, 60, 500)
    con.register("p", pa.table({"mun": mun}))
    con.execute("CREATE TABLE persons AS SELECT * FROM p").fetchall()
    con.unregister("p")


def _release(con: duckdb.DuckDBPyConnection, **kw: Any) -> list[tuple[Any, ...]]:
    inftda_sql.release(con, "persons", hierarchy=CHAIN, domain="geo", output="out", **kw)
    return con.execute("SELECT * FROM out ORDER BY ALL").fetchall()


@pytest.fixture
def joins(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the scans that join the code tables: the leaf cells to them after a scan by
    values (``leaf_codes``), or the input's rows before a scan by codes
    (``coded_leaf_counts``)."""
    calls: list[int] = []
    for name in ("leaf_codes", "coded_leaf_counts"):
        real = getattr(compile_module, name)

        def counting(*args: Any, real: Any = real, **kw: Any) -> str:
            calls.append(1)
            return str(real(*args, **kw))

        monkeypatch.setattr(compile_module, name, counting)
    return calls


@pytest.mark.parametrize("leaf_step", [1, 3, 1000])  # contiguous, dense with gaps, sparse
def test_integer_leaves_are_coded_without_the_join(
    con: duckdb.DuckDBPyConnection,
    monkeypatch: pytest.MonkeyPatch,
    joins: list[int],
    leaf_step: int,
) -> None:
    """The same released table as through the join (seeded and exact), and no join."""
    _world(con, leaf_step=leaf_step)
    exact = _release(con, rho=float("inf"), overwrite=True)
    seeded = _release(con, **SEEDED)
    assert joins == []
    truth = con.execute(
        "SELECT region, province, mun, count(*) FROM persons JOIN geo USING (mun) "
        "GROUP BY ALL ORDER BY ALL"
    ).fetchall()
    assert [r for r in exact if r[-1]] == truth
    monkeypatch.setattr(domain_module.CodedChain, "leaf_index", None)  # every chain joins
    assert _release(con, rho=float("inf"), overwrite=True) == exact
    assert _release(con, **SEEDED) == seeded
    assert len(joins) == 2


def test_a_leaf_missing_from_an_integer_domain_is_named(
    con: duckdb.DuckDBPyConnection, joins: list[int]
) -> None:
    _world(con, leaf_step=3)
    con.execute("INSERT INTO persons VALUES (104), (104), (9999)").fetchall()
    with pytest.raises(DomainError, match=r"2 value\(s\) of 'mun' .* not in the domain"):
        _release(con, rho=float("inf"), overwrite=True)
    assert joins == []


def test_a_null_integer_leaf_is_named(con: duckdb.DuckDBPyConnection) -> None:
    _world(con)
    con.execute("INSERT INTO persons VALUES (NULL)").fetchall()
    with pytest.raises(InputDataError, match=r"'mun' .* has NULL values"):
        _release(con, rho=float("inf"), overwrite=True)


def test_ancestors_checked_in_the_scan_still_join(
    con: duckdb.DuckDBPyConnection, joins: list[int]
) -> None:
    """An input with ancestor columns checked against the domain: the join checks them."""
    _world(con)
    con.execute(
        "CREATE OR REPLACE TABLE persons AS SELECT region, province, mun FROM persons "
        "JOIN geo USING (mun)"
    ).fetchall()
    _release(con, rho=float("inf"), overwrite=True)
    assert len(joins) == 1


def _cache_entries(con: duckdb.DuckDBPyConnection) -> int:
    try:
        return int(con.execute("SELECT count(*) FROM __inftda_domains").fetchall()[0][0])
    except duckdb.CatalogException:
        return 0


def test_a_sorted_domain_is_neither_keyed_nor_stored(
    con: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large domain stored in code order is coded at once (cheaper than a stored coding read
    back); one stored out of order is still cached, and read back the next time."""
    monkeypatch.setattr(cache_module, "MIN_CACHED_PATHS", 1)
    keyed: list[str] = []
    real = cache_module.domain_key  # as domain.py imported it

    def counting(*args: Any, **kw: Any) -> Any:
        key = real(*args, **kw)
        keyed.append(key.key)
        return key

    monkeypatch.setattr(domain_module, "domain_key", counting)
    _world(con)
    first = _release(con, rho=float("inf"), overwrite=True)
    assert keyed == [] and _cache_entries(con) == 0
    con.execute("CREATE OR REPLACE TABLE geo AS SELECT * FROM geo ORDER BY mun DESC").fetchall()
    assert _release(con, rho=float("inf"), overwrite=True) == first
    assert len(keyed) == 1 and _cache_entries(con) == 1
    assert _release(con, rho=float("inf"), overwrite=True) == first
    assert len(keyed) == 2 and _cache_entries(con) == 1  # looked up, found


def test_a_check_remembered_per_domain_keys_a_sorted_domain(
    con: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    """check_ancestors="cached" remembers a passed check under the domain's content key: a
    sorted domain, never looked up in the cache, is keyed for it (and a changed domain
    checks again)."""
    _world(con)
    con.execute(
        "CREATE OR REPLACE TABLE persons AS SELECT region, province, mun FROM persons "
        "JOIN geo USING (mun)"
    ).fetchall()
    for _ in range(2):
        _release(con, rho=float("inf"), overwrite=True, check_ancestors="cached")
    assert con.execute("SELECT count(*) FROM __inftda_checks").fetchall() == [(1,)]
    con.execute("UPDATE geo SET region = 9 WHERE province = 11").fetchall()
    with pytest.raises(DomainError, match="under other ancestors"):
        _release(con, rho=float("inf"), overwrite=True, check_ancestors="cached")


def test_a_sorted_domain_is_coded_in_the_chunks_it_was_fetched_in(
    con: duckdb.DuckDBPyConnection,
) -> None:
    # 400K paths come from DuckDB in several Arrow chunks: the order check, the coding and the
    # leaf index read them where they are (no combined copy), with the codes of a combined read
    n = 400_000
    code = np.arange(n)
    con.register("g", pa.table({"region": code // 100_000, "province": code // 1000, "mun": code}))
    con.execute("CREATE TABLE geo AS SELECT * FROM g").fetchall()
    con.unregister("g")
    names = compile_module.TempNames("__inftda_test_")
    coded = domain_module.build_chain(
        con, names, 0, CHAIN, '"geo"', ["BIGINT"] * 3, "domain", source="geo"
    )
    assert coded.paths.column(0).num_chunks > 1
    assert coded.tree.sizes == (1, 4, 400, n)
    assert coded.leaf_index is not None and coded.leaf_index.leaves is None
    registered = con.execute(f"SELECT __d1, __d2, __d3 FROM {coded.table_sql} ORDER BY mun")
    assert registered.fetchall()[::99_999] == [
        (k // 100_000, k // 1000, k) for k in range(0, n, 99_999)
    ]


@pytest.mark.parametrize("leaf_step", [1, 3, 1000])  # contiguous, dense with gaps, sparse
def test_integer_leaves_coded_by_the_index_make_no_code_arrays(
    con: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch, leaf_step: int
) -> None:
    # the code table (the paths and a code array per depth, each as long as the domain) is
    # made only for SQL that reads it: a release whose leaves are coded by the leaf index never
    # makes it, and releases the same table
    _world(con, leaf_step=leaf_step)
    seeded = _release(con, **SEEDED)
    made: list[int] = []
    real = tree_module.CodedPaths.codes

    def counting(self: tree_module.CodedPaths) -> tuple[np.ndarray, ...]:
        made.append(1)
        return real.func(self)

    monkeypatch.setattr(tree_module.CodedPaths, "codes", property(counting))
    assert _release(con, **SEEDED) == seeded
    assert made == []
    # a leaf value the domain lacks: the error's query reads the code table, made then
    con.execute("INSERT INTO persons VALUES (99999)").fetchall()
    with pytest.raises(DomainError, match=r"mun=99999"):
        _release(con, **SEEDED)
    assert made


@pytest.mark.parametrize("count", [None, "n"])
def test_string_leaves_scanned_by_codes_release_as_scanned_by_values(
    con: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch, count: str | None
) -> None:
    """String leaves are joined to their codes before the scan groups them (by integer codes,
    not by the strings): the same released table, seeded and exact, as the scan by values
    followed by the join of its cells, for records and for a count column."""
    _world(con, leaf_step=3)
    for table in ("geo", "persons"):  # the same places under string names
        con.execute(
            f"CREATE OR REPLACE TABLE {table} AS SELECT * REPLACE ('m' || mun AS mun) FROM {table}"
        ).fetchall()
    con.execute("ALTER TABLE persons ADD COLUMN n BIGINT DEFAULT 2").fetchall()
    kw: dict[str, Any] = {"microdata": True} if count is None else {"count": count}
    used: list[bool] = []
    real = scan_module._scan_by_codes

    def spy(*args: Any, **kw: Any) -> Any:
        cells = real(*args, **kw)
        used.append(cells is not None)
        return cells

    monkeypatch.setattr(scan_module, "_scan_by_codes", spy)
    by_codes = [
        _release(con, rho=float("inf"), overwrite=True, **kw),
        _release(con, **SEEDED, **kw),
    ]
    assert sum(r[-1] for r in by_codes[0]) == 500 * (1 if count is None else 2)
    assert used == [True, True]  # no second scan
    monkeypatch.setattr(scan_module, "_scan_by_codes", lambda *args, **kw: None)  # by values
    by_values = [
        _release(con, rho=float("inf"), overwrite=True, **kw),
        _release(con, **SEEDED, **kw),
    ]
    assert by_codes == by_values
