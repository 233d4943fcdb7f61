"""Array type aliases shared by the engine-free code (one spelling each)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["F64", "I64"]

I64 = npt.NDArray[np.int64]
"""A numpy array of int64 (codes, keys, counts)."""
F64 = npt.NDArray[np.float64]
"""A numpy array of float64 (real-valued estimates)."""
