"""The true levels of a count-of-counts release, from an engine's aggregations: the engine-free
steps every engine takes after its scan."""

from __future__ import annotations

import dataclasses

import numpy as np

from .histograms import CocLevel, Histograms

__all__ = ["truncate_sizes"]


def truncate_sizes(level: CocLevel, max_size: int) -> CocLevel:
    """The level with groups larger than ``max_size`` counted at ``max_size``."""
    t = level.truth
    return dataclasses.replace(
        level, truth=Histograms.build(t.node, np.minimum(t.size, max_size), t.count)
    )
