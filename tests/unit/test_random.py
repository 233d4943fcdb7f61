"""Tests of the random word sources (inftda_sql.core.rng)."""

from __future__ import annotations

import builtins
import os
import ssl

import duckdb
import numpy as np
import pytest

from inftda_sql._errors import SpecError
from inftda_sql.core import rng as rng_module
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


def test_the_csprng_is_openssls_drbg_or_the_os() -> None:
    """OpenSSL's DRBG by default; ``os.urandom`` only where Python has no ``ssl`` module."""
    assert rng_module.csprng_bytes.__module__ == rng_module.__name__
    assert rng_module._csprng() is ssl.RAND_bytes
    real_import = builtins.__import__

    def no_ssl(name: str, *args: object, **kwargs: object) -> object:
        if name == "ssl":
            raise ImportError("built without OpenSSL")
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    builtins.__import__ = no_ssl
    try:
        assert rng_module._csprng() is os.urandom
    finally:
        builtins.__import__ = real_import


@pytest.mark.parametrize("n", [1, 5, 32_768, 32_769, 100_003])
def test_csprng_words_are_the_bytes_in_order(monkeypatch: pytest.MonkeyPatch, n: int) -> None:
    """Words are the CSPRNG's bytes in the order given, across its chunks, none reused.

    A counter stands in for the CSPRNG: the words must be the counter's bytes 0, 1, 2, ...
    end to end (a chunk dropped, repeated or misplaced breaks the sequence).
    """
    asked: list[int] = []
    state = {"next": 0}

    def counter(k: int) -> bytes:
        asked.append(k)
        start = state["next"]
        state["next"] += k
        return (np.arange(start, start + k, dtype=np.uint64) % 251).astype(np.uint8).tobytes()

    monkeypatch.setattr(rng_module, "csprng_bytes", counter)
    w = CSPRNGSource().words(n)
    assert w.dtype == np.uint64 and w.shape == (n,) and w.flags.writeable
    expected = (np.arange(8 * n, dtype=np.uint64) % 251).astype(np.uint8)
    assert (w.view(np.uint8) == expected).all()
    assert sum(asked) == 8 * n and max(asked) <= rng_module._CHUNK_BYTES


def test_csprng_words_look_uniform() -> None:
    """A million bits of the real CSPRNG: each bit position of a word is set half the time.

    Under uniform bits each position's count of 2**14 words is Binomial(16384, 1/2)
    (sd 64); 64 positions all within 6 sd fail by chance with p < 1e-7.
    """
    w = CSPRNGSource().words(1 << 14)
    bits = (w[:, None] >> np.arange(64, dtype=np.uint64)) & np.uint64(1)
    counts = bits.sum(axis=0).astype(np.int64)
    assert (np.abs(counts - 8192) < 6 * 64).all()
    assert len(np.unique(w)) == len(w)


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
