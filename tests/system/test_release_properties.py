"""Property tests: invariants of a release on random hierarchies and random data."""

from __future__ import annotations

import duckdb
import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import inftda_sql


@st.composite
def worlds(draw: st.DrawFn) -> tuple[list[tuple[str, str, str]], list[tuple[str, str, str, int]]]:
    """A random 3-level domain (paths) and random counts on some of its leaves."""
    paths = []
    for r in range(draw(st.integers(1, 3))):
        for p in range(draw(st.integers(1, 3))):
            for m in range(draw(st.integers(1, 4))):
                paths.append((f"R{r}", f"R{r}P{p}", f"R{r}P{p}M{m}"))
    counts = draw(st.lists(st.integers(0, 30), min_size=len(paths), max_size=len(paths)))
    data = [(*path, n) for path, n in zip(paths, counts, strict=True) if n > 0]
    return paths, data


def _load(
    con: duckdb.DuckDBPyConnection,
    paths: list[tuple[str, str, str]],
    data: list[tuple[str, str, str, int]],
) -> None:
    con.register(
        "g_arrow", pa.table({k: [p[i] for p in paths] for i, k in enumerate(("r", "p", "m"))})
    )
    con.execute("CREATE TABLE geo AS SELECT * FROM g_arrow").fetchall()
    cols = {k: [row[i] for row in data] for i, k in enumerate(("r", "p", "m", "n"))}
    con.register(
        "d_arrow",
        pa.table(
            cols,
            schema=pa.schema(
                [("r", pa.string()), ("p", pa.string()), ("m", pa.string()), ("n", pa.int64())]
            ),
        ),
    )
    con.execute("CREATE TABLE t AS SELECT * FROM d_arrow").fetchall()


SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(worlds())
def test_infinite_budget_is_exact(world: tuple[list, list]) -> None:
    paths, data = world
    con = duckdb.connect()
    _load(con, paths, data)
    inftda_sql.release(
        con, "t", hierarchy=["r", "p", "m"], domain="geo", count="n", rho=float("inf")
    )
    got = con.execute("SELECT r, p, m, count FROM t_private ORDER BY ALL").fetchall()
    assert got == sorted(data)


@SETTINGS
@given(
    worlds(),
    st.sampled_from([0.01, 0.3, 2.0]),
    st.integers(0, 2**32),
    st.sampled_from(["bounded", "unbounded"]),
)
def test_finite_budget_invariants(
    world: tuple[list, list], rho: float, seed: int, privacy: str
) -> None:
    paths, data = world
    con = duckdb.connect()
    _load(con, paths, data)
    r = inftda_sql.release(
        con,
        "t",
        hierarchy=["r", "p", "m"],
        domain="geo",
        count="n",
        rho=rho,
        seed=seed,
        privacy=privacy,
    )
    out = con.execute("SELECT r, p, m, count FROM t_private").fetchall()
    assert all(isinstance(c, int) and c > 0 for *_, c in out)
    assert {row[:3] for row in out} <= set(paths)
    total = sum(c for *_, c in out)
    assert total == r.total
    if privacy == "bounded":
        assert total == sum(n for *_, n in data)
    per_level = con.execute("SELECT level, sum(count) FROM t_private_levels GROUP BY 1").fetchall()
    assert all(s == total for _, s in per_level) or total == 0
