"""Tests of the random word sources (inftda_sql.core.rng)."""

from __future__ import annotations

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
    assert as_source(seeded) is seeded


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
