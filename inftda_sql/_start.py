"""Ctrl-C while the command line starts, before :func:`inftda_sql.cli.main` runs.

The console script ``inftda-sql`` imports :mod:`inftda_sql.cli` before it calls ``main()``, and
``python -m inftda_sql`` imports the package before it runs ``__main__``: a Ctrl-C in those
imports would raise ``KeyboardInterrupt`` where nothing catches it, and Python would print a
traceback. So the package's ``__init__`` calls :func:`guard` first of all: when the program
being started is the command line (and only then: importing the package elsewhere changes
nothing), SIGINT is merely noted until ``main()`` calls :func:`take_over`, which puts Python's
own handler back and says whether Ctrl-C was pressed; ``main()`` then exits 130 at once, as it
does for a Ctrl-C at any moment before a release commits.

What runs before the package (Python's own start, ``site``, the first lines of the console
script) is out of any package's reach: a Ctrl-C there ends Python as Python decides.

This module imports nothing that Python's start has not imported already (``_signal`` is the C
module under :mod:`signal`, which would import :mod:`enum`), so that the guard is up a moment
into the package's import.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found,unused-ignore]  # no stub; see above
import os
import sys
from types import FrameType

__all__ = ["guard", "is_command_line", "take_over"]

#: the console script's name (``[project.scripts]`` in pyproject.toml) and the package's
COMMAND = "inftda-sql"
PACKAGE = "inftda_sql"


class _Start:
    guarding = False  # our handler is installed
    pressed = False  # a SIGINT came while it was


def _note(signum: int, frame: FrameType | None) -> None:
    _Start.pressed = True


def is_command_line(argv: list[str] | None = None, orig_argv: list[str] | None = None) -> bool:
    """Whether this process is the command line starting: the console script (whatever the
    platform's launcher adds to its name), or ``python -m inftda_sql`` while the package is
    being imported (Python sets ``sys.argv[0]`` to ``"-m"`` until it has found the module).

    Example:
        >>> is_command_line(["/venv/bin/inftda-sql", "release"])
        True
        >>> is_command_line(["-m", "ledger"], ["python", "-X", "dev", "-m", "inftda_sql", "ledger"])
        True
        >>> is_command_line(["-m"], ["python", "-m", "other_tool"])
        False
        >>> is_command_line(["my_script.py"]), is_command_line(["-c"])
        (False, False)
    """
    argv = sys.argv if argv is None else argv
    orig = getattr(sys, "orig_argv", []) if orig_argv is None else orig_argv
    first = argv[0] if argv else ""
    if first == "-m":
        for i, arg in enumerate(orig):
            if arg == "-m":
                return i + 1 < len(orig) and orig[i + 1] in (PACKAGE, f"{PACKAGE}.__main__")
            if arg.startswith("-m"):
                return arg[2:] in (PACKAGE, f"{PACKAGE}.__main__")
        return False
    name = os.path.basename(first)
    for suffix in (".exe", "-script.pyw", "-script.py"):
        name = name.removesuffix(suffix)
    return name == COMMAND


def guard() -> None:
    """In the command line's own start only, note Ctrl-C instead of raising it (until
    :func:`take_over`). A handler that is not Python's default one (set by whoever embeds
    Python) is left alone."""
    if _Start.guarding or not is_command_line():
        return
    if _signal.getsignal(_signal.SIGINT) is not _signal.default_int_handler:
        return
    _signal.signal(_signal.SIGINT, _note)
    _Start.guarding = True


def take_over() -> bool:
    """Put Python's handler back (if :func:`guard` replaced it); return whether Ctrl-C was
    pressed while the command line started."""
    if _Start.guarding:
        _signal.signal(_signal.SIGINT, _signal.default_int_handler)
        _Start.guarding = False
    pressed, _Start.pressed = _Start.pressed, False
    return pressed
