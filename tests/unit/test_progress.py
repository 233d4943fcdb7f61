"""release(progress=...) in a notebook: a tqdm bar, tested with a fake tqdm and a fake kernel.

A Jupyter user sees nothing of the command line's terminal bar; release() reports through tqdm
there (by itself in a kernel with tqdm installed, or with ``progress=True``), closes the bar
however the release ends, and stays silent in scripts."""

from __future__ import annotations

import sys
import types
from typing import Any

import duckdb
import pytest

import inftda_sql
from inftda_sql._errors import SpecError
from inftda_sql._progress import in_jupyter


class FakeBar:
    bars: list[FakeBar] = []  # noqa: RUF012

    def __init__(self, *, total: int | None, desc: str, unit: str) -> None:
        self.total, self.desc, self.unit = total, desc, unit
        self.n, self.postfix, self.closed = 0, "", False
        FakeBar.bars.append(self)

    def update(self, n: int) -> None:
        self.n += n

    def set_postfix_str(self, text: str) -> None:
        self.postfix = text

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def fake_tqdm(monkeypatch: pytest.MonkeyPatch) -> type[FakeBar]:
    FakeBar.bars = []
    module = types.ModuleType("tqdm")
    module.tqdm = FakeBar  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tqdm", module)
    monkeypatch.setitem(sys.modules, "ipywidgets", None)  # the text bar: no widgets
    return FakeBar


@pytest.fixture
def fake_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    shell = types.SimpleNamespace(kernel=object())  # what a Jupyter kernel's shell has
    ipython = types.ModuleType("IPython")
    ipython.get_ipython = lambda: shell  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "IPython", ipython)


def _release(**kwargs: Any) -> inftda_sql.Release:
    con = duckdb.connect()
    con.execute("CREATE TABLE geo AS SELECT * FROM (VALUES ('N', 'a'), ('N', 'b'), ('S', 'c')) "
                "g(region, city)")  # fmt: skip
    con.execute("CREATE TABLE visits AS SELECT * FROM (VALUES ('a'), ('a'), ('c')) v(city)")
    return inftda_sql.release(
        con, "visits", hierarchy=["region", "city"], domain="geo", rho=1.0, **kwargs
    )


def test_a_kernel_with_tqdm_gets_a_bar(fake_tqdm: type[FakeBar], fake_kernel: None) -> None:
    assert in_jupyter()
    r = _release()
    (bar,) = fake_tqdm.bars
    assert (bar.desc, bar.unit, bar.total) == ("release", "level", len(r.levels))
    assert bar.n == len(r.levels) and bar.closed
    assert bar.postfix == f"city: {r.levels[-1].surviving_cells:,} cells kept"


def test_outside_a_kernel_nothing_unless_asked(fake_tqdm: type[FakeBar]) -> None:
    assert not in_jupyter()
    _release()
    _release(progress=False)
    assert fake_tqdm.bars == []
    _release(progress=True)
    assert len(fake_tqdm.bars) == 1 and fake_tqdm.bars[0].closed


def test_a_failed_release_closes_its_bar(
    fake_tqdm: type[FakeBar], fake_kernel: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr("inftda_sql._release._run", boom)
    with pytest.raises(RuntimeError, match="boom"):
        _release()
    assert [bar.closed for bar in fake_tqdm.bars] == [True]


def test_a_kernel_without_tqdm_stays_silent(
    fake_kernel: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "tqdm", None)  # not installed
    assert _release().levels  # no error, no bar
    with pytest.raises(SpecError, match=r"progress=True draws a bar with tqdm.*\[notebook\]"):
        _release(progress=True)


def test_a_callable_is_called_and_anything_else_refused(fake_kernel: None) -> None:
    seen: list[str] = []
    r = _release(progress=lambda stats: seen.append(stats.name))
    assert seen == [lv.name for lv in r.levels]
    with pytest.raises(SpecError, match=r"progress must be a callable .* got str"):
        _release(progress="yes")
