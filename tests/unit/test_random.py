"""Tests of the random word sources (inftda_sql.core.rng)."""

from __future__ import annotations

import duckdb
import numpy as np
import pytest

from inftda_sql._errors import SpecError
from inftda_sql.core.rng import CSPRNGSource, SeededSource, as_source


def test_sources() -> None:
    src = as_source(None)
    assert isinstance(src, CSPRNGSource) and not src.seeded
    w = src.words(5)
    assert w.dtype == np.uint64 and w.shape == (5,) and w.flags.writeable
    seeded = as_source(7)
    assert isinstance(seeded, SeededSource) and seeded.seeded
    assert (as_source(7).words(4) == seeded.words(4)).all()
    assert as_source(np.random.default_rng(3)).seeded


@pytest.mark.parametrize(
    ("rng", "shown"),
    [("abc", "'abc'"), (1.5, "1.5"), (-1, "-1"), (True, "True"), ([1, 2], r"\[1, 2\]")],
)
def test_bad_rng_names_the_value(rng: object, shown: str) -> None:
    with pytest.raises(SpecError, match=shown):
        as_source(rng)


def test_bad_rng_message_is_bounded() -> None:
    with pytest.raises(SpecError) as info:
        as_source("x" * 1000)
    assert len(str(info.value)) < 200


class _Predictable:
    """Has every method of a random source and claims not to be seeded: all zeros."""

    seeded = False

    def words(self, n: int) -> np.ndarray:
        return np.zeros(n, dtype=np.uint64)

    def spawn(self, n: int) -> list[_Predictable]:
        return [self] * n


@pytest.mark.parametrize(
    "source", [_Predictable(), SeededSource(1), CSPRNGSource()], ids=["predictable", "seeded", "os"]
)
def test_only_none_int_or_generator_is_a_seed(source: object) -> None:
    """An object with the random-source methods is never trusted, whatever it says."""
    with pytest.raises(SpecError, match=r"None .*an int seed or a numpy Generator"):
        as_source(source)


def test_a_predictable_source_cannot_make_a_private_release(
    con: duckdb.DuckDBPyConnection,
) -> None:
    import inftda_sql

    con.execute("CREATE TABLE t AS SELECT 'a' AS c FROM range(5)").fetchall()
    for seed in (_Predictable(), SeededSource(1), 1.5, "1", True):
        with pytest.raises(SpecError, match="seed"):
            inftda_sql.release(con, "t", hierarchy=["c"], domain={"c": ["a"]}, rho=1.0, seed=seed)
        with pytest.raises(SpecError, match="seed"):
            inftda_sql.sample_discrete_gaussian(2.0, 3, rng=seed)
    assert con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE table_name = 't_private'"
    ).fetchall() == [(0,)]
    r = inftda_sql.release(
        con, "t", hierarchy=["c"], domain={"c": ["a"]}, rho=1.0, seed=np.random.default_rng(2)
    )
    assert r.seeded and not r.is_private
