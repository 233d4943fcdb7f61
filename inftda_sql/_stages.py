"""The seconds each named stage of a release took (for the data owner's summary, never
published): one helper that every release kind times its stages with."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

__all__ = ["Stages"]


class Stages:
    """Seconds per stage of a release; ``with stages("scan"): ...`` adds the block's time.

    Example:
        >>> stages = Stages()
        >>> with stages("scan"):
        ...     pass
        >>> sorted(stages.done(elapsed=1.0))
        ['other', 'scan']
    """

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextlib.contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - t0

    def done(self, elapsed: float) -> dict[str, float]:
        """The stages' seconds and ``other``: what of ``elapsed`` no stage accounts for."""
        return {**self.seconds, "other": max(0.0, elapsed - sum(self.seconds.values()))}
