"""How much memory the count-of-counts estimators of this package hold at once, and the check
that refuses a ``max_size`` (or ``chunk``) beyond the memory available, from public parameters
only, before the private data is read."""

from __future__ import annotations

from ..._errors import Arg, SpecError
from .histograms import DEFAULT_CHUNK

__all__ = ["BYTES_PER_ENTRY", "check_memory", "chunk_entries", "size_limit"]

#: working memory per noisy entry of a chunk: the chunk fitted and the next ones drawn
#: meanwhile by the noise threads, each a true (cumulative) histogram and its noise, and the
#: isotonic fit's blocks (measured 17 bytes for one chunk, 42 with three in flight)
BYTES_PER_ENTRY = 80


def chunk_entries(
    method: str, n_nodes: int, groups: int, max_size: int, min_size: int, chunk: int
) -> int:
    """The noisy entries an estimator holds at once for a level of ``n_nodes`` nodes holding
    ``groups`` groups in all: a chunk of whole nodes of ``max_size - min_size (+ 1)`` sizes each
    (cumulative, naive), or of ``chunk`` groups (unattributed). Public inputs only.

    Example:
        >>> chunk_entries("cumulative", 3, 10, max_size=10**12, min_size=1, chunk=2**20)
        999999999999
        >>> chunk_entries("unattributed", 3, 10, max_size=10**12, min_size=1, chunk=2**20)
        10
    """
    if method == "unattributed":
        return min(chunk, groups)
    width = max_size - min_size + (1 if method == "naive" else 0)
    if width <= 0:
        return 0
    return min(max(1, chunk // width), n_nodes) * width


def size_limit(method: str, min_size: int, available: int) -> int | None:
    """The largest ``max_size`` whose one-node chunk fits ``available`` bytes (None: the
    estimator's memory does not grow with ``max_size``)."""
    if method == "unattributed":
        return None
    return max(min_size + 1, min_size + available // BYTES_PER_ENTRY - (method == "naive"))


def check_memory(
    method: str,
    n_nodes: int,
    groups: int,
    *,
    max_size: int | None,
    min_size: int,
    chunk: int,
    available: int | None,
) -> None:
    """Refuse, before the private data is read, a ``max_size`` (or ``chunk``) whose chunks of
    noisy entries (:func:`chunk_entries` of the largest level) need more memory than is
    ``available``; ``max_size`` None checks the smallest size (it is estimated later, and
    clipped to :func:`size_limit`)."""
    if available is None:
        return
    size = max(min_size + 1, 2) if max_size is None else max_size
    entries = chunk_entries(method, n_nodes, groups, size, min_size, chunk)
    need = entries * BYTES_PER_ENTRY
    if need <= available:
        return
    gib = f"about {_bytes(need)} of working memory, but {_bytes(available)} is available"
    if (
        max_size is not None
        and method != "unattributed"
        and chunk_entries(method, 1, groups, max_size, min_size, 1) * BYTES_PER_ENTRY > available
    ):
        raise SpecError(
            Arg("max_size", max_size, ","),
            f" needs {gib}: the {method!r} estimator holds the {max_size:,} sizes of a region "
            "at once; pass a smaller ",
            Arg("max_size"),
            f" (at most {size_limit(method, min_size, available):,} here; larger groups count "
            "as max_size) or ",
            Arg("method", "unattributed"),
            " (its memory does not grow with max_size)",
            param="max_size",
        )
    raise SpecError(
        Arg("chunk", chunk, ","),
        f" needs {gib}; pass a smaller ",
        Arg("chunk"),
        f" (the default is {DEFAULT_CHUNK:,})",
        param="chunk",
    )


def _bytes(n: int) -> str:
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:,} bytes"
