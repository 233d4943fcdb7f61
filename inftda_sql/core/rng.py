"""Sources of uniformly random 64-bit words.

The production path draws from a CSPRNG: OpenSSL's DRBG through the standard library's
``ssl.RAND_bytes`` (OpenSSL 3's default: CTR_DRBG with AES-256 of NIST SP 800-90A, seeded
from the operating system's entropy, reseeded on a schedule and after ``fork``, one instance
per thread), or ``os.urandom`` (the ``getrandom`` system call) where Python was built without
``ssl``. Both are cryptographically secure; the DRBG runs on the CPU's AES instructions at
several GB/s against the system call's ~0.3 GB/s here, which is most of a large level's draw
(``benchmarks/RESULTS.md``, "A faster CSPRNG"). A seed exists only for tests and benchmarks:
it selects numpy's Philox counter-based generator, which is *not* cryptographically secure,
and every object built from a seeded source reports ``seeded=True`` so that a seeded release
is marked as such.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from .._errors import SpecError

__all__ = ["CSPRNGSource", "RandomSource", "SeededSource", "as_source", "csprng_bytes"]


def _csprng() -> Callable[[int], bytes]:
    try:
        import ssl
    except ImportError:  # a Python built without OpenSSL
        return os.urandom
    return ssl.RAND_bytes


_CSPRNG = _csprng()

# Bytes asked of the CSPRNG per call: large enough that the call's overhead vanishes, small
# enough to be copied from cache (256 KiB was fastest of 64 KiB-1 MiB; os.urandom's limit
# per call is 32 MiB).
_CHUNK_BYTES = 1 << 18


def csprng_bytes(n: int) -> bytes:
    """``n`` bytes from the CSPRNG (every unseeded draw of the package comes through here)."""
    return _CSPRNG(n)


@runtime_checkable
class RandomSource(Protocol):
    """Anything that yields independent uniform 64-bit words."""

    @property
    def seeded(self) -> bool:
        """True when the words are reproducible (tests and benchmarks only)."""
        ...

    def words(self, n: int) -> npt.NDArray[np.uint64]:
        """Return ``n`` independent uniform words in [0, 2**64)."""
        ...

    def spawn(self, n: int) -> list[RandomSource]:
        """``n`` independent sources for parallel work (deterministic for a seeded source)."""
        ...

    def derive(self, level: int, block: int) -> RandomSource:
        """The source of one block of parents of one TopDown level (:mod:`.blocks`).

        Seeded: a stream keyed by (seed, level, block) alone, whatever was drawn before and
        wherever the block runs, so every engine draws a block's noise alike. The CSPRNG: itself.
        """
        ...


class CSPRNGSource:
    """Uniform 64-bit words from the CSPRNG (:func:`csprng_bytes`; the default)."""

    seeded = False

    def words(self, n: int) -> npt.NDArray[np.uint64]:
        size = 8 * n
        if size <= _CHUNK_BYTES:
            return np.frombuffer(csprng_bytes(size), dtype=np.uint64).copy()
        out = np.empty(n, dtype=np.uint64)
        view = out.view(np.uint8)
        for start in range(0, size, _CHUNK_BYTES):
            stop = min(size, start + _CHUNK_BYTES)
            view[start:stop] = np.frombuffer(csprng_bytes(stop - start), dtype=np.uint8)
        return out

    def spawn(self, n: int) -> list[RandomSource]:
        # The CSPRNG is thread-safe (OpenSSL keeps a DRBG per thread), and nothing of a draw
        # depends on which instance served it: every "child" is the CSPRNG itself.
        return [self] * n

    def derive(self, level: int, block: int) -> RandomSource:
        return self

    def __repr__(self) -> str:
        return "CSPRNGSource()"


class SeededSource:
    """Reproducible words from numpy's Philox generator. For tests and benchmarks only.

    :meth:`derive` keys a block's stream by a numpy ``SeedSequence`` of the seed with the
    spawn key ``(level, block)``; a source made from a Generator takes its seed from the
    Generator's first words when first asked.

    Example:
        >>> a = SeededSource(7).derive(2, 5).words(2)
        >>> b = SeededSource(7)
        >>> _ = b.words(100)  # drawing elsewhere first changes nothing
        >>> bool((b.derive(2, 5).words(2) == a).all())
        True
        >>> bool((SeededSource(7).derive(2, 6).words(2) == a).any())
        False
    """

    seeded = True

    def __init__(self, seed: int | np.random.Generator | np.random.SeedSequence) -> None:
        self._seq: np.random.SeedSequence | None = None
        if isinstance(seed, np.random.Generator):
            self._gen = seed
        else:
            if not isinstance(seed, np.random.SeedSequence):
                seed = np.random.SeedSequence(seed)
            self._seq = seed
            self._gen = np.random.Generator(np.random.Philox(seed))

    def words(self, n: int) -> npt.NDArray[np.uint64]:
        return self._gen.integers(0, 2**64, size=n, dtype=np.uint64, endpoint=False)

    def spawn(self, n: int) -> list[RandomSource]:
        return [SeededSource(g) for g in self._gen.spawn(n)]

    def derive(self, level: int, block: int) -> RandomSource:
        if self._seq is None:
            self._seq = np.random.SeedSequence([int(w) for w in self.words(4)])
        seq = self._seq
        key = (*seq.spawn_key, int(level), int(block))
        return SeededSource(np.random.SeedSequence(seq.entropy, spawn_key=key))

    def __repr__(self) -> str:
        return "SeededSource(...)"


def as_source(rng: object = None) -> RandomSource:
    """Turn a user's ``seed=``/``rng=`` argument into a :class:`RandomSource`.

    ``None`` gives the CSPRNG; an ``int`` or a ``numpy.random.Generator`` gives a seeded
    (non-cryptographic, test-only) source, marked ``seeded``. Nothing else is accepted, not even
    an object with the random-source methods: its ``seeded`` flag would be taken on trust, and a
    predictable source that says ``seeded=False`` would make a release recorded as private.
    The library's own code passes the source it built here to the samplers' ``source=`` entry
    points (:func:`~inftda_sql.core.noise.draw_discrete_gaussian`), never back through here.

    Example:
        >>> as_source(None)
        CSPRNGSource()
        >>> as_source(7).seeded
        True
    """
    if rng is None:
        return CSPRNGSource()
    if isinstance(rng, (bool, np.bool_)):
        raise SpecError(f"rng/seed must be None, an int or a numpy Generator, got {rng!r}")
    if isinstance(rng, (int, np.integer)):
        if rng < 0:
            raise SpecError(f"seed must be a non-negative integer, got {rng}")
        return SeededSource(int(rng))
    if isinstance(rng, np.random.Generator):
        return SeededSource(rng)
    shown = repr(rng)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    raise SpecError(
        "rng/seed must be None (the CSPRNG), an int seed or a numpy Generator, "
        f"got {shown} of type {type(rng).__name__}"
    )
