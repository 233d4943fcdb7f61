"""Progress of a release in a notebook: ``release(progress=True)``, or by itself in Jupyter.

The command line draws its own bar on a terminal (``cli/console.py``). A notebook user sees
nothing of stderr's carriage returns, so a release run from a Jupyter kernel reports through
tqdm, the bar the Python ecosystem uses: a widget when ipywidgets is installed, text otherwise.
tqdm is optional (``pip install 'inftda-sql[notebook]'``):

* ``progress=None`` (the default): a bar when the release runs in a Jupyter kernel and tqdm is
  installed; nothing otherwise (scripts, terminals, tests);
* ``progress=True``: a bar anywhere (an error naming the install command without tqdm);
* ``progress=False``: nothing;
* a callable: called with each level's :class:`~inftda_sql.core.tree.LevelStats`, as before.

The bar counts levels and shows each finished level's name and cells kept (public facts from
released values); like the command line's, it shows elapsed time, which is for the data owner.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

from ._errors import Arg, SpecError
from .core.tree import LevelStats

__all__ = ["in_jupyter", "reporter"]

Callback = Callable[[LevelStats], None]


def in_jupyter() -> bool:
    """Whether this process is a Jupyter kernel (IPython with a kernel attached)."""
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    shell = get() if callable(get) else None
    return shell is not None and getattr(shell, "kernel", None) is not None


def _tqdm_class() -> Any | None:
    """tqdm's notebook bar when ipywidgets is there, its text bar otherwise; None without tqdm."""
    try:
        tqdm = importlib.import_module("tqdm")
    except ImportError:
        return None
    try:
        importlib.import_module("ipywidgets")
    except ImportError:
        return tqdm.tqdm
    return importlib.import_module("tqdm.notebook").tqdm


@contextlib.contextmanager
def reporter(progress: object, total: int | None) -> Iterator[Callback | None]:
    """The callback a release reports its levels to, for ``release(progress=...)``; a bar is
    closed when the release ends, however it ends."""
    if progress is None:
        progress = in_jupyter() and _tqdm_class() is not None
    if progress is False:
        yield None
        return
    if progress is not True:
        if not callable(progress):
            raise SpecError(
                "progress must be a callable (given each level's statistics), True (a progress "
                f"bar), False or None; got {type(progress).__name__}: pass ",
                Arg("progress", True),
                " for a bar",
                param="progress",
            )
        yield progress
        return
    bar_class = _tqdm_class()
    if bar_class is None:
        raise SpecError(
            Arg("progress", True),
            " draws a bar with tqdm, which is not installed: pip install "
            "'inftda-sql[notebook]' (or pass a callable)",
            param="progress",
        )
    bar = bar_class(total=total, desc="release", unit="level")

    def update(stats: LevelStats) -> None:
        bar.set_postfix_str(f"{stats.name}: {stats.surviving_cells:,} cells kept")
        bar.update(1)

    try:
        yield update
    finally:
        bar.close()
