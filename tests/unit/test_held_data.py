"""What identifies the data a data frame holds (_frames.held_data): shared by frames made from
one another without a copy, never by copies, never by temporaries made to look at a column."""

from __future__ import annotations

import contextlib
from typing import Any

import pyarrow as pa
import pytest

from inftda_sql._frames import held_data

pd = pytest.importorskip("pandas", reason="pandas is not installed (the optional [pandas] extra)")


def _shared(a: Any, b: Any, kind: str) -> set[str]:
    return set(held_data(a, kind)) & set(held_data(b, kind))


def _copy_on_write() -> Any:
    if int(pd.__version__.split(".")[0]) >= 3:  # always on
        return contextlib.nullcontext()
    return pd.option_context("mode.copy_on_write", True)


def test_arrow() -> None:
    t = pa.table({"a": [1, 2, 3], "s": ["x", "y", "x"]})
    assert _shared(t, t, "arrow")  # the same object
    assert _shared(t.select(["s"]), t, "arrow") and _shared(t.slice(0, 3), t, "arrow")
    assert not _shared(pa.table({"a": [1, 2, 3], "s": ["x", "y", "x"]}), t, "arrow")
    assert not _shared(t.group_by("s").aggregate([]), t, "arrow")


def test_pandas() -> None:
    with _copy_on_write():
        df = pd.DataFrame({"a": [1, 2, 3], "s": ["x", "y", "x"]})
        view = df[["s"]]
        copy = df[["s"]].copy()
        assert _shared(view, df, "pandas")
        assert not _shared(copy, df, "pandas")
    cat = pd.DataFrame({"c": pd.Series(["x", "y"], dtype="category")})
    assert len(held_data(cat, "pandas")) == 2  # the object and its codes, held by the frame
    # a column looked at through a conversion (Python strings to Arrow) names nothing
    text = pd.DataFrame({"t": pd.Series(["x", "y"], dtype="string[python]")})
    assert held_data(text, "pandas") == (f"the data of the Python object at {id(text):#x}",)


def test_polars() -> None:
    pl = pytest.importorskip("polars", reason="polars is not installed (the optional extra)")
    df = pl.DataFrame({"a": [1, 2, 3], "s": ["x", "y", "x"]})
    assert _shared(df.select("s"), df, "polars")
    assert not _shared(pl.DataFrame({"a": [1, 2, 3], "s": ["x", "y", "x"]}), df, "polars")
