"""The SQL functions of inftda_sql.register(con): values, NULLs, errors, vectorisation, noise."""

from __future__ import annotations

import functools
import math
import subprocess
import sys
import threading
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import inftda_sql
from inftda_sql.core import rng as rng_module
from inftda_sql.core.accounting import (
    Budget,
    account,
    epsilon_to_rho,
    rho_to_epsilon,
    sigma_for,
)
from inftda_sql.core.intopt import intopt
from inftda_sql.core.noise import discrete_gaussian_pmf, discrete_laplace_pmf
from inftda_sql.engines.duckdb import functions as _functions
from inftda_sql.engines.duckdb.functions import SQL_FUNCTIONS, register
from inftda_sql.engines.duckdb.sql import template
from tests.unit.test_noise import P_FLOOR, _chisq_gof, _laplace_gof

ROOT = Path(__file__).resolve().parents[2]
NAMES = [
    "dp_rho",
    "dp_epsilon",
    "dp_sensitivity",
    "dp_sigma",
    "dp_discrete_gaussian",
    "dp_discrete_laplace",
    "intopt",
]


@pytest.fixture
def fcon() -> Iterator[duckdb.DuckDBPyConnection]:
    """An in-memory connection with the functions registered."""
    con = duckdb.connect()
    register(con)
    yield con
    con.close()


@pytest.fixture(scope="module")
def shared_fcon() -> Iterator[duckdb.DuckDBPyConnection]:
    """One registered connection for the examples of a property test."""
    con = duckdb.connect()
    register(con)
    yield con
    con.close()


def one(con: duckdb.DuckDBPyConnection, sql: str, params: Any = None) -> Any:
    return con.execute(sql, params).fetchall()[0][0]


def column(con: duckdb.DuckDBPyConnection, sql: str) -> npt.NDArray[np.int64]:
    values = con.sql(sql).fetchnumpy()
    return np.asarray(next(iter(values.values())), dtype=np.int64)


def fails(con: duckdb.DuckDBPyConnection, sql: str) -> str:
    """The message of the DuckDB Invalid Input Error that ``sql`` raises."""
    with pytest.raises(duckdb.InvalidInputException) as info:
        con.execute(sql).fetchall()
    return str(info.value)


# ---------------------------------------------------------------------------------- register


def test_register_returns_what_it_registered_and_is_idempotent() -> None:
    con = duckdb.connect()
    try:
        first = inftda_sql.register(con)
        assert [f.name for f in first] == NAMES
        assert inftda_sql.register(con) == first  # again: replaced, not duplicated
        assert one(con, "SELECT intopt([-20, 5, 5], 10)") == [0, 0, 10]
        macros = con.execute(
            "SELECT function_name, parameters, database_name FROM duckdb_functions() "
            "WHERE function_type = 'macro' AND function_name = ANY($names)",
            {"names": NAMES},
        ).fetchall()
        assert sorted(macros) == sorted(
            (f.name, [p for p, _, _ in f.parameters], "temp") for f in first
        )
        udfs = con.execute(
            "SELECT function_name, parameter_types, return_type, stability "
            "FROM duckdb_functions() WHERE function_name LIKE 'inftda_%'"
        ).fetchall()
        assert sorted(udfs) == sorted(
            (
                f.udf,
                [t for _, t, _ in f.parameters],
                f.returns,
                "VOLATILE" if f.volatile else "CONSISTENT",
            )
            for f in first
        )
    finally:
        con.close()


def test_signatures_and_str() -> None:
    by_name = {f.name: f for f in SQL_FUNCTIONS}
    assert str(by_name["dp_sigma"]) == "dp_sigma(rho DOUBLE, sensitivity DOUBLE) -> DOUBLE"
    assert by_name["intopt"].signature == (
        "intopt(noisy BIGINT[], target HUGEINT, descending BOOLEAN := false) -> BIGINT[]"
    )
    assert [f.name for f in SQL_FUNCTIONS if f.volatile] == [
        "dp_discrete_gaussian",
        "dp_discrete_laplace",
    ]


def test_the_macros_follow_the_signatures(fcon: duckdb.DuckDBPyConnection) -> None:
    """Each macro of sql/functions.sql passes its parameters, in order, to its UDF, and has
    the defaults its signature shows."""
    text = template("functions")
    for f in SQL_FUNCTIONS:
        definition = one(
            fcon,
            "SELECT macro_definition FROM duckdb_functions() WHERE function_name = $n "
            "AND function_type = 'macro'",
            {"n": f.name},
        )
        args = ",".join(p for p, _, _ in f.parameters)
        assert definition.replace(" ", "").replace('"', "") == f"{f.udf}({args})"
        params = ", ".join(p if d is None else f"{p} := {d}" for p, _, d in f.parameters)
        assert f"CREATE OR REPLACE TEMP MACRO {f.name}({params}) AS" in text


def test_register_needs_a_connection() -> None:
    with pytest.raises(inftda_sql.SpecError, match="register needs a DuckDB connection") as info:
        register("demo.duckdb")  # type: ignore[arg-type]
    assert info.value.param == "con"


def test_functions_live_on_their_connection_only(tmp_path: Path) -> None:
    path = str(tmp_path / "f.duckdb")
    with duckdb.connect(path) as con:
        con.execute("CREATE TABLE t AS SELECT 1 AS x").fetchall()
        register(con)
        assert one(con, "SELECT dp_discrete_gaussian(0.0) + x FROM t") == 1
        other = duckdb.connect(path)  # another connection to the same database
        with other, pytest.raises(duckdb.CatalogException, match="dp_discrete_gaussian"):
            other.execute("SELECT dp_discrete_gaussian(0.0)").fetchall()
    with duckdb.connect(path, read_only=True) as ro:  # nothing was written into the file
        assert not ro.execute(
            "SELECT * FROM duckdb_functions() WHERE function_name LIKE '%intopt%'"
        ).fetchall()
        register(ro)  # read-only connections work too
        assert one(ro, "SELECT intopt([1, 1], x + 1) FROM t") == [1, 1]


def test_connections_sharing_a_database_each_register(tmp_path: Path) -> None:
    """DuckDB keeps Python UDFs per database, macros per connection: a cursor and a second
    connection of the same file register too, and keep working when the first closes (its
    callables must outlive it: once they did not, and the second connection crashed)."""
    path = str(tmp_path / "shared.duckdb")
    first = duckdb.connect(path)
    second = duckdb.connect(path)
    cursor = first.cursor()
    try:
        for con in (first, second, cursor, first):
            assert [f.name for f in register(con)] == NAMES
        assert one(cursor, "SELECT dp_sigma(0.5, 1)") == 1.0
        first.close()  # it registered the UDFs last; the second connection still runs them
        assert one(second, "SELECT intopt([3, -1, 4], 6)") == [2, 0, 4]
        assert one(second, "SELECT dp_discrete_gaussian(0.0)") == 0
    finally:
        for con in (cursor, second, first):
            con.close()


def test_open_connections_leave_no_leak_report_at_exit(tmp_path: Path) -> None:
    """A script that never closes its connection exits quietly: the UDFs hold no reference
    to a connection (a cycle through one makes DuckDB's binding report leaked objects)."""
    script = tmp_path / "s.py"
    script.write_text(
        "import duckdb, inftda_sql\n"
        "con = duckdb.connect()\n"
        "inftda_sql.register(con)\n"
        "print(con.sql('SELECT dp_discrete_gaussian(1.0) IS NOT NULL').fetchall())\n"
    )
    out = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, check=False, cwd=ROOT
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[(True,)]"
    assert "leak" not in out.stderr, out.stderr[:500]


# ---------------------------------------------------------------------------------- accounting


def test_dp_rho_and_dp_epsilon_are_the_accounting_modules(fcon: duckdb.DuckDBPyConnection) -> None:
    b = Budget.from_args(epsilon=1.0, delta=1e-8)
    assert one(fcon, "SELECT dp_rho(1.0, 1e-8)") == b.rho
    assert one(fcon, "SELECT dp_rho(epsilon := 1, delta := 1e-8, conversion := 'tight')") == b.rho
    simple = epsilon_to_rho(1.0, 1e-6, "simple")
    assert one(fcon, "SELECT dp_rho(1.0, 1e-6, 'simple')") == simple
    assert one(fcon, "SELECT dp_rho(conversion := 'simple', delta := 1e-6, epsilon := 1)") == simple
    assert one(fcon, "SELECT dp_rho('inf', 1e-8)") == math.inf
    assert one(fcon, "SELECT dp_epsilon(0.5, 1e-6)") == rho_to_epsilon(0.5, 1e-6)
    assert one(fcon, "SELECT dp_epsilon(0.5, 1e-6, 'simple')") == rho_to_epsilon(
        0.5, 1e-6, "simple"
    )
    assert one(fcon, "SELECT dp_epsilon(dp_rho(2.0, 1e-7), 1e-7)") == pytest.approx(2.0, 1e-12)


def test_dp_sigma_equals_the_release_sigma_bit_for_bit(fcon: duckdb.DuckDBPyConnection) -> None:
    acct = account(
        Budget.from_args(epsilon=1.0, delta=1e-8),
        ["region", "province", "mun"],
        contribution=2,
        distinct=True,
        split=[1, 2, 2, 3],
    )
    for d, r, sigma in zip(acct.level_sensitivity, acct.level_rho, acct.level_sigma, strict=True):
        assert one(fcon, "SELECT dp_sigma(rho := $r, sensitivity := $d)", {"r": r, "d": d}) == sigma
    # the README's spelling: rho split uniformly over 2 levels, the default sensitivity
    two = account(Budget.from_args(epsilon=1.0, delta=1e-8), ["region", "province"])
    for level in (0, 1):
        assert (
            one(
                fcon,
                "SELECT dp_sigma(dp_rho(1.0, 1e-8) / 2, dp_sensitivity(leaf := $leaf))",
                {"leaf": level == 1},
            )
            == two.level_sigma[level]
        )
    assert one(fcon, "SELECT dp_sigma(rho := 'inf', sensitivity := 1)") == 0.0


@pytest.mark.parametrize("privacy", ["bounded", "unbounded"])
@pytest.mark.parametrize("m", [1, 2, 3, 6])
@pytest.mark.parametrize("distinct", [False, True])
def test_dp_sensitivity_is_the_releases(
    fcon: duckdb.DuckDBPyConnection, privacy: str, m: int, distinct: bool
) -> None:
    """Every level of account() has the sensitivity dp_sensitivity gives it."""
    acct = account(
        Budget.from_args(rho=1.0),
        ["a", "b", "c"],
        privacy=privacy,
        contribution=m,
        distinct=distinct,
        noise_root=privacy == "unbounded",
    )
    got = fcon.execute(
        "SELECT dp_sensitivity($p, $m, $d, false), dp_sensitivity(privacy := $p, "
        "contribution := $m, distinct_leaves := $d, leaf := true)",
        {"p": privacy, "m": m, "d": distinct},
    ).fetchall()[0]
    assert got == (acct.level_sensitivity[-2], acct.level_sensitivity[-1])
    if (privacy, m, distinct) == ("bounded", 1, False):  # the defaults
        assert one(fcon, "SELECT dp_sensitivity()") == acct.level_sensitivity[0]


def test_accounting_is_vectorised_over_mixed_rows(fcon: duckdb.DuckDBPyConnection) -> None:
    rng = np.random.default_rng(3)
    n = 5000  # several batches, values repeating and not
    eps = rng.choice([0.1, 0.5, 1.0, 3.0, math.inf], n)
    delta = rng.choice([1e-6, 1e-8, 1e-10], n)
    conv = rng.choice(["tight", "simple"], n)
    sens = rng.choice([1.0, math.sqrt(2.0), 2.0], n)
    fcon.register("rows", pa.table({"e": eps, "d": delta, "c": conv, "s": sens}))
    got = fcon.execute(
        "SELECT dp_rho(e, d, c) AS rho, dp_epsilon(dp_rho(e, d, c), d, c) AS eps, "
        "dp_sigma(dp_rho(e, d, c), s) AS sigma FROM rows"
    ).fetchall()
    to_rho, to_eps = functools.cache(epsilon_to_rho), functools.cache(rho_to_epsilon)
    for (rho, back, sigma), e, d, c, s in zip(got, eps, delta, conv, sens, strict=True):
        want = to_rho(float(e), float(d), str(c))
        assert rho == want
        assert sigma == sigma_for(float(s), want)
        assert back == to_eps(want, float(d), str(c))


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        (
            "SELECT dp_rho(1, 2)",
            "dp_rho: delta must be strictly between 0 and 1, got 2.0; use a value far below "
            "1/N, e.g. delta := 1e-8",
        ),
        ("SELECT dp_rho(-1, 1e-8)", "dp_rho: epsilon must be non-negative, got -1.0"),
        (
            "SELECT dp_rho('nan', 1e-8)",
            "dp_rho: epsilon must be a number, got NaN; pass a finite positive float",
        ),
        (
            "SELECT dp_rho(1, 1e-8, conversion := 'exact')",
            "dp_rho: conversion must be 'tight' or 'simple', got 'exact'",
        ),
        ("SELECT dp_epsilon(-0.5, 1e-8)", "dp_epsilon: rho must be non-negative, got -0.5"),
        (
            "SELECT dp_sigma(0, 1)",
            "dp_sigma: rho must be positive, got 0.0; pass rho := 'inf' for exact (non-private) "
            "counts",
        ),
        ("SELECT dp_sigma(1, -1)", "dp_sigma: sensitivity must be positive and finite, got -1.0"),
        ("SELECT dp_sigma(1, 'inf')", "dp_sigma: sensitivity must be positive and finite, got inf"),
        (
            "SELECT dp_sensitivity(privacy := 'add-remove')",
            "dp_sensitivity: privacy must be 'bounded' (replace one unit, total public) or "
            "'unbounded' (add/remove one unit), got 'add-remove'",
        ),
        (
            "SELECT dp_sensitivity(contribution := 0)",
            "dp_sensitivity: contribution must be a positive integer (records per person), got 0",
        ),
    ],
)
def test_accounting_errors_name_function_parameter_and_value(
    fcon: duckdb.DuckDBPyConnection, sql: str, message: str
) -> None:
    text = fails(fcon, sql)
    assert text.startswith("Invalid Input Error: ")
    assert text.endswith(message)


def test_wrong_calls_are_binder_errors(fcon: duckdb.DuckDBPyConnection) -> None:
    with pytest.raises(duckdb.BinderException, match=r"dp_sigma\(rho, sensitivity\)"):
        fcon.execute("SELECT dp_sigma(rho := 1)").fetchall()
    with pytest.raises(duckdb.BinderException):  # no seed, ever
        fcon.execute("SELECT dp_discrete_gaussian(1.0, 42)").fetchall()
    with pytest.raises(duckdb.BinderException):
        fcon.execute("SELECT dp_discrete_gaussian(sigma := 1.0, seed := 42)").fetchall()
    with pytest.raises(duckdb.BinderException, match="explicit type casts"):  # no silent rounding
        fcon.execute("SELECT intopt([1.5, 2.0], 3)").fetchall()
    with pytest.raises(duckdb.BinderException, match="explicit type casts"):
        fcon.execute("SELECT intopt([1, 2], 2.5)").fetchall()


# ---------------------------------------------------------------------------------- NULLs


@pytest.mark.parametrize(
    "call",
    [
        "dp_rho(NULL, 1e-8)",
        "dp_rho(1.0, NULL)",
        "dp_rho(1.0, 1e-8, NULL)",
        "dp_epsilon(NULL, 1e-8)",
        "dp_sigma(NULL, 1)",
        "dp_sigma(0.5, NULL)",
        "dp_sensitivity(privacy := NULL)",
        "dp_sensitivity(leaf := NULL)",
        "dp_discrete_gaussian(NULL)",
        "dp_discrete_laplace(NULL)",
        "intopt(NULL, 3)",
        "intopt([1, 2], NULL)",
        "intopt([1, 2], 3, NULL)",
    ],
)
def test_null_in_null_out(fcon: duckdb.DuckDBPyConnection, call: str) -> None:
    assert one(fcon, f"SELECT {call}") is None


def test_null_rows_among_others(fcon: duckdb.DuckDBPyConnection) -> None:
    got = fcon.execute(
        "SELECT dp_discrete_gaussian(s), dp_sigma(r, 1), intopt(l, t) FROM (VALUES "
        "(0.0, 'inf'::DOUBLE, [1, 2], 3), (NULL, NULL, NULL, 3), (0.0, NULL, [5], NULL), "
        "(NULL, 'inf', [], 0)) v(s, r, l, t)"
    ).fetchall()
    assert got == [(0, 0.0, [1, 2]), (None, None, None), (0, None, None), (None, 0.0, [])]


# ---------------------------------------------------------------------------------- noise


def test_zero_scale_adds_no_noise(fcon: duckdb.DuckDBPyConnection) -> None:
    assert one(fcon, "SELECT list(dp_discrete_gaussian(0.0)) FROM range(5)") == [0] * 5
    assert one(fcon, "SELECT list(dp_discrete_laplace(0)) FROM range(5)") == [0] * 5


@pytest.mark.parametrize("function", ["dp_discrete_gaussian", "dp_discrete_laplace"])
def test_noise_is_never_constant_folded_or_cached(
    fcon: duckdb.DuckDBPyConnection, function: str
) -> None:
    query = f"SELECT {function}(1000.0) AS a, {function}(1000.0) AS b FROM range(50)"
    a, b = zip(*fcon.execute(query).fetchall(), strict=True)
    assert a != b  # two calls in one query: two draws per row
    again, _ = zip(*fcon.execute(query).fetchall(), strict=True)
    assert again != a  # the same query run again: new draws
    assert len(set(a)) > 40  # one draw per row, not one per query
    stability = one(
        fcon,
        "SELECT stability FROM duckdb_functions() WHERE function_name = $n",
        {"n": f"inftda_{function}"},
    )
    assert stability == "VOLATILE"


def test_duckdb_computes_identical_aggregates_once(fcon: duckdb.DuckDBPyConnection) -> None:
    """DuckDB's own rule, documented in the README: two identical aggregate expressions of one
    SELECT are one aggregate, so they show the same draws (not a new draw each)."""
    a, b = fcon.execute(
        "SELECT sum(dp_discrete_gaussian(1000.0)), sum(dp_discrete_gaussian(1000.0)) FROM range(50)"
    ).fetchall()[0]
    assert a == b
    a, b = fcon.execute(
        "SELECT sum(x), sum(y) FROM (SELECT dp_discrete_gaussian(1000.0) AS x, "
        "dp_discrete_gaussian(1000.0) AS y FROM range(50))"
    ).fetchall()[0]
    assert a != b


def test_noise_comes_from_the_csprng(
    fcon: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[int] = []
    real = rng_module.csprng_bytes

    def spy(n: int) -> bytes:
        asked.append(n)
        return real(n)

    monkeypatch.setattr(rng_module, "csprng_bytes", spy)
    fcon.execute("SELECT dp_discrete_gaussian(3.0), dp_discrete_laplace(2.0) FROM range(1000)")
    fcon.fetchall()
    assert sum(asked) >= 2 * 4 * 1000  # 32 bits per draw at least, for both functions
    asked.clear()  # batches of mixed scales take the grouped path: the same source
    fcon.execute(
        "SELECT dp_discrete_gaussian(1.0 + i % 3), dp_discrete_laplace(1.0 + i % 2) "
        "FROM range(1000) t(i)"
    )
    fcon.fetchall()
    assert sum(asked) >= 2 * 4 * 1000
    assert _functions._CSPRNG.seeded is False


def test_noise_is_one_call_per_batch_grouped_by_sigma(
    fcon: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Vectorised: the sampler sees whole batches of mixed sigmas, not rows."""
    seen: list[int] = []
    real = _functions.sample_discrete_gaussian

    def spy(sigma: Any, size: Any = None, *, rng: Any = None) -> Any:
        seen.append(np.asarray(sigma).size)
        return real(sigma, size, rng=rng)

    monkeypatch.setattr(_functions, "sample_discrete_gaussian", spy)
    draws = fcon.execute(
        "SELECT i % 4 AS k, dp_discrete_gaussian(CASE i % 4 WHEN 0 THEN 0.0 WHEN 1 THEN 0.5 "
        "WHEN 2 THEN 40.0 ELSE NULL END) AS x FROM range(6000) t(i)"
    ).fetchall()
    assert sum(seen) == 4500 and len(seen) <= 6  # 6000 rows, 1500 NULL; a few batches
    by = {k: [x for kk, x in draws if kk == k] for k in range(4)}
    assert set(by[0]) == {0}
    assert max(abs(x) for x in by[1]) <= 5 and len(set(by[1])) > 1
    assert max(abs(x) for x in by[2]) > 20
    assert set(by[3]) == {None}


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        (
            "SELECT dp_discrete_gaussian(-1)",
            "dp_discrete_gaussian: sigma must be finite and >= 0 (0 adds no noise), got -1; "
            "compute it with dp_sigma(rho := ..., sensitivity := ...)",
        ),
        (
            "SELECT dp_discrete_gaussian('inf')",
            "dp_discrete_gaussian: sigma must be finite and >= 0 (0 adds no noise), got inf; "
            "compute it with dp_sigma(rho := ..., sensitivity := ...)",
        ),
        (
            "SELECT dp_discrete_gaussian(s) FROM (VALUES (1.0), (0.5), ('nan'::DOUBLE)) v(s)",
            "dp_discrete_gaussian: sigma must be finite and >= 0 (0 adds no noise), got nan; "
            "compute it with dp_sigma(rho := ..., sensitivity := ...)",
        ),
        (
            "SELECT dp_discrete_laplace(-2.5)",
            "dp_discrete_laplace: scale must be finite and >= 0 (0 adds no noise), got -2.5",
        ),
    ],
)
def test_noise_errors(fcon: duckdb.DuckDBPyConnection, sql: str, message: str) -> None:
    assert fails(fcon, sql).endswith(message)


@pytest.mark.slow
def test_sql_gaussian_fits_the_exact_pmf(fcon: duckdb.DuckDBPyConnection) -> None:
    x = column(fcon, "SELECT dp_discrete_gaussian(3.7) FROM range(300000)")
    assert _chisq_gof(x, 3.7) > P_FLOOR
    assert abs(discrete_gaussian_pmf(0, 3.7) - float((x == 0).mean())) < 0.01


@pytest.mark.slow
def test_sql_laplace_fits_the_exact_pmf(fcon: duckdb.DuckDBPyConnection) -> None:
    x = column(fcon, "SELECT dp_discrete_laplace(2.5) FROM range(300000)")
    assert _laplace_gof(x, 2.5) > P_FLOOR
    assert abs(discrete_laplace_pmf(0, 2.5) - float((x == 0).mean())) < 0.01


@pytest.mark.slow
def test_sql_gaussian_with_mixed_sigmas_fits_each_pmf(fcon: duckdb.DuckDBPyConnection) -> None:
    got = fcon.sql(
        "SELECT s, dp_discrete_gaussian(s) AS x FROM (SELECT [0.5, 3.7, 50.0][1 + i % 3] AS s "
        "FROM range(300000) t(i))"
    ).fetchnumpy()
    sigma, x = np.asarray(got["s"]), np.asarray(got["x"], dtype=np.int64)
    for s in (0.5, 3.7, 50.0):
        assert _chisq_gof(x[sigma == s], s) > P_FLOOR


# ---------------------------------------------------------------------------------- intopt


def _python(lists: list[list[int]], targets: list[int], descending: list[bool]) -> list[Any]:
    out = []
    for y, t, d in zip(lists, targets, descending, strict=True):
        order = "descending" if d else "ascending"
        out.append(intopt(y, t, order=order).tolist() if y else [])
    return out


def _random_parents(rng: np.random.Generator, n: int) -> tuple[list[Any], list[int], list[bool]]:
    sizes = rng.integers(0, 12, n)
    lists = [rng.integers(-30, 60, k).tolist() for k in sizes]
    targets = [0 if k == 0 or rng.random() < 0.1 else int(rng.integers(0, 300)) for k in sizes]
    descending = (rng.random(n) < 0.3).tolist()
    return lists, targets, descending


def test_intopt_matches_python_on_random_lists(fcon: duckdb.DuckDBPyConnection) -> None:
    """Many parents (several batches), empty lists, target 0, both tie-break orders."""
    lists, targets, descending = _random_parents(np.random.default_rng(11), 7000)
    parents = pa.table(
        {
            "id": np.arange(len(lists)),
            "noisy": pa.array(lists, type=pa.list_(pa.int64())),
            "target": pa.array(targets, type=pa.int64()),
            "descending": descending,
        }
    )
    fcon.register("parents", parents)
    got = fcon.execute(
        "SELECT intopt(noisy, target, descending) FROM parents ORDER BY id"
    ).fetchall()
    assert [r[0] for r in got] == _python(lists, targets, descending)
    ascending = fcon.execute("SELECT intopt(noisy, target) FROM parents ORDER BY id").fetchall()
    assert [r[0] for r in ascending] == _python(lists, targets, [False] * len(lists))


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.lists(st.integers(-(10**6), 10**6), max_size=8),
            st.integers(0, 10**6),
            st.booleans(),
        ),
        min_size=1,
        max_size=30,
    )
)
def test_intopt_matches_python_property(
    shared_fcon: duckdb.DuckDBPyConnection, rows: list[tuple[list[int], int, bool]]
) -> None:
    rows = [(y, t if y else 0, d) for y, t, d in rows]
    lists, targets, descending = (list(c) for c in zip(*rows, strict=True))
    table = pa.table(
        {
            "i": np.arange(len(rows)),
            "y": pa.array(lists, type=pa.list_(pa.int64())),
            "t": pa.array(targets, type=pa.int64()),
            "d": descending,
        }
    )
    shared_fcon.register("rows_", table)
    got = [
        r[0] for r in shared_fcon.execute("SELECT intopt(y, t, d) FROM rows_ ORDER BY i").fetchall()
    ]
    shared_fcon.unregister("rows_")
    assert got == _python(lists, targets, descending)
    for x, t in zip(got, targets, strict=True):
        assert sum(x) == t and min(x, default=0) >= 0


def test_intopt_per_parent_with_group_by(fcon: duckdb.DuckDBPyConnection) -> None:
    """The form of the issue: one parent per group, children ordered, total from the parent."""
    rng = np.random.default_rng(5)
    n = 20_000
    parent = np.sort(rng.integers(0, 1500, n))
    children = pa.table(
        {
            "parent": parent,
            "child": rng.permutation(n),
            "noisy": rng.integers(-20, 80, n),
            "total": (parent * 7) % 400,
        }
    )
    fcon.register("children", children)
    got = fcon.execute(
        "SELECT parent, list(noisy ORDER BY child), intopt(list(noisy ORDER BY child), "
        "any_value(total)), sum(noisy) FROM children GROUP BY parent ORDER BY parent"
    ).fetchall()
    for p, y, x, _ in got:
        assert x == intopt(y, (p * 7) % 400).tolist()
    # sum() is HUGEINT in DuckDB: a target of that type is taken as it is
    sums = fcon.execute(
        "SELECT intopt(list(noisy ORDER BY child), greatest(sum(noisy), 0)) AS x FROM children "
        "GROUP BY parent"
    ).fetchall()
    assert len(sums) == len(got)


def test_intopt_values(fcon: duckdb.DuckDBPyConnection) -> None:
    assert one(fcon, "SELECT intopt([-20, 5, 5], 10)") == [0, 0, 10]
    assert one(fcon, "SELECT intopt([3, -1, 4, 7, 2], 9)") == intopt([3, -1, 4, 7, 2], 9).tolist()
    assert one(fcon, "SELECT intopt([3, -1, 4], 6, descending := true)") == [3, 0, 3]
    assert one(fcon, "SELECT intopt(noisy := [7, 2], target := 0)") == [0, 0]
    assert one(fcon, "SELECT intopt([], 0)") == []
    assert one(fcon, "SELECT intopt([5]::INTEGER[], 2::UTINYINT)") == [2]
    big = 2**60
    assert one(fcon, f"SELECT intopt([{big}, 0], {big})") == [big, 0]


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("SELECT intopt([1, 2], -1)", "intopt: target must be >= 0, got -1"),
        (
            "SELECT intopt([1, 2], 2305843009213693953)",
            "intopt: target must be at most 2**60, got 2305843009213693953; rescale the counts",
        ),
        (
            "SELECT intopt([1, 2], 9223372036854775807::HUGEINT * 2)",
            "intopt: target must be at most 2**60, got a larger value; rescale the counts",
        ),
        (
            "SELECT intopt(l, 3) FROM (VALUES ([1, NULL, 3]), ([NULL]), ([2])) v(l)",
            "intopt: noisy holds NULL children in 2 row(s); every child needs a noisy count: "
            "coalesce a missing count to 0 before adding noise, e.g. "
            "coalesce(n, 0) + dp_discrete_gaussian(sigma)",
        ),
        (
            "SELECT intopt([], 4)",
            "intopt: a parent with no children (noisy = []) can only have target 0, got a "
            "positive target in 1 row(s)",
        ),
        (
            "SELECT intopt([1152921504606846977, 1], 3)",
            "intopt: noisy values must lie within +-2**60, and a parent's children sum within "
            "int64; rescale the counts",
        ),
    ],
)
def test_intopt_errors(fcon: duckdb.DuckDBPyConnection, sql: str, message: str) -> None:
    text = fails(fcon, sql)
    assert text.endswith(message)


def test_intopt_errors_do_not_show_the_noisy_values(fcon: duckdb.DuckDBPyConnection) -> None:
    text = fails(fcon, "SELECT intopt([123457, NULL, 765431], 10)")
    assert "123457" not in text and "765431" not in text
    text = fails(fcon, "SELECT intopt([], 987653)")
    assert "987653" not in text


# ------------------------------------------------------------------------- extreme arguments


@pytest.mark.parametrize(
    ("sql", "name", "value"),
    [
        ("SELECT dp_discrete_gaussian(3e18)", "sigma", "3e+18"),
        ("SELECT dp_discrete_gaussian(1e300)", "sigma", "1e+300"),
        ("SELECT dp_discrete_laplace(1e19)", "scale", "1e+19"),
        ("SELECT dp_discrete_laplace(s) FROM (VALUES (1.0), (1e19)) v(s)", "scale", "1e+19"),
        (
            "SELECT dp_discrete_gaussian(s) FROM (VALUES (1.0), (2.0), (1e300)) v(s)",
            "sigma",
            "1e+300",
        ),
    ],
)
def test_noise_beyond_bigint_is_refused_with_its_range(
    fcon: duckdb.DuckDBPyConnection, sql: str, name: str, value: str
) -> None:
    """A scale whose draws could overflow the BIGINT result (2**63) is refused, every time,
    with the range and the fix; not an OverflowError of the UDF now and then."""
    for _ in range(3):
        text = fails(fcon, sql)
        assert "OverflowError" not in text
        assert f"{name} must be at most 2**57 (about 1.4e17), got {value}" in text
        assert "check the budget it was computed from" in text


def test_noise_at_the_largest_scale_still_draws(fcon: duckdb.DuckDBPyConnection) -> None:
    assert isinstance(one(fcon, "SELECT dp_discrete_gaussian(2.0 ** 57)"), int)
    assert isinstance(one(fcon, "SELECT dp_discrete_laplace(2.0 ** 57)"), int)


def test_dp_sigma_beyond_double_is_a_clear_error(fcon: duckdb.DuckDBPyConnection) -> None:
    text = fails(fcon, "SELECT dp_sigma(1e-300, 1e300)")
    assert "OverflowError" not in text
    assert text.endswith(
        "dp_sigma: sensitivity / sqrt(2 rho) is beyond DOUBLE's range for rho = 1e-300 and "
        "sensitivity = 1e+300; such noise would hide any count: raise rho"
    )


@pytest.mark.parametrize(
    ("rho", "sensitivity"),
    [(1.7976931348623157e308, 1e-20), (5e-324, 5e-324), (1e308, 1.0), (1e300, 5e-324)],
)
def test_dp_sigma_of_extreme_doubles_returns_at_once(rho: float, sensitivity: float) -> None:
    """2 * rho overflowing (or a tiny quotient underflowing) sent sigma to 0 and the rounding
    loop walked up from there one float at a time: hours. Run in a thread with a deadline."""
    con = duckdb.connect()
    register(con)
    out: list[Any] = []
    worker = threading.Thread(
        target=lambda: out.append(one(con, "SELECT dp_sigma(?, ?)", [rho, sensitivity])),
        daemon=True,
    )
    worker.start()
    worker.join(30)
    assert not worker.is_alive(), "dp_sigma did not return within 30 s"
    sigma = out[0]
    assert sigma == sigma_for(sensitivity, rho)
    # the smallest float with sensitivity^2 / (2 sigma^2) <= rho, exactly
    assert 2 * Fraction(rho) * Fraction(sigma) ** 2 >= Fraction(sensitivity) ** 2
    below = math.nextafter(sigma, 0.0)
    assert 2 * Fraction(rho) * Fraction(below) ** 2 < Fraction(sensitivity) ** 2
