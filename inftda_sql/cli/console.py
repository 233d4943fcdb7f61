"""What the command line writes: the progress bar, tables / JSON / CSV, one-line errors and
warnings in the command line's spelling.

Library errors and warnings are built from parts (:mod:`inftda_sql._errors`); here they are
rendered with ``message(cli=True)``, so ``overwrite=True`` reads ``--overwrite`` without any
rewriting of text.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import shutil
import sys
import threading
import time
import warnings
from collections.abc import Iterator, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, TextIO

from .._errors import InftdaError, InftdaWarning
from .._tables import text_table

if TYPE_CHECKING:
    from ..core.tree import LevelStats

__all__ = [
    "PROGRESS_DELAY",
    "Progress",
    "emit",
    "error_line",
    "level_names",
    "one_line",
    "query_names",
    "unexpected_line",
    "warning_line",
    "warnings_as_lines",
]

PROGRESS_DELAY = 0.5  # seconds before anything is drawn: quick releases stay silent
PROGRESS_TICK = 0.2


# ----------------------------------------------------------------------------------------------
# messages


def one_line(text: str) -> str:
    """``text`` on one line: its lines stripped and joined by spaces."""
    return " ".join(line.strip() for line in str(text).splitlines() if line.strip())


def error_line(exc: BaseException) -> str:
    """The ``error: ...`` line of an expected error, in the command line's spelling.

    Example:
        >>> from inftda_sql._errors import Arg, OutputExistsError
        >>> error_line(OutputExistsError("'t' exists; pass ", Arg("overwrite", True)))
        "error: 't' exists; pass --overwrite"
    """
    text = exc.message(cli=True) if isinstance(exc, InftdaError) else str(exc)
    return f"error: {one_line(text)}"


def unexpected_line(exc: BaseException) -> str:
    """The line of an error nobody expected: its type, its text, and what to do."""
    return (
        f"error: {type(exc).__name__}: {one_line(str(exc))} (unexpected: run again with "
        "--debug for the traceback and please report it)"
    )


def warning_line(message: Warning | str) -> str:
    """The ``warning: ...`` line of a library warning, in the command line's spelling."""
    text = message.message(cli=True) if isinstance(message, InftdaWarning) else str(message)
    return f"warning: {one_line(text)}"


@contextlib.contextmanager
def warnings_as_lines() -> Iterator[None]:
    """Show library warnings (e.g. a large epsilon) as one ``warning:`` line each on stderr."""

    def show(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        print(warning_line(message), file=sys.stderr)

    with warnings.catch_warnings():
        warnings.simplefilter("always", UserWarning)
        warnings.showwarning = show
        yield


# ----------------------------------------------------------------------------------------------
# results


def emit(columns: Sequence[str], rows: Sequence[Sequence[Any]], fmt: str) -> None:
    """Print rows as an aligned table (``"table"``), ``"csv"`` or ``"json"`` (a list of
    objects)."""
    if fmt == "csv":
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(rows)
    elif fmt == "json":
        print(json.dumps([dict(zip(columns, r, strict=True)) for r in rows], default=str, indent=1))
    else:
        print("\n".join(text_table(columns, rows)))


# ----------------------------------------------------------------------------------------------
# progress bar


class Progress:
    """A per-level progress bar on a terminal, drawn only once a release takes a moment.

    Each completed level leaves one line (parents, cells noised, cells kept, seconds); a bar
    under them shows the levels done and what runs now. Nothing is drawn when disabled, when
    the stream is not a terminal, or when the release ends within ``delay`` seconds.
    """

    def __init__(
        self,
        level_names: Sequence[str],
        *,
        enabled: bool = True,
        stream: TextIO | None = None,
        delay: float | None = None,
    ) -> None:
        self.stream = sys.stderr if stream is None else stream
        self.enabled = enabled and _isatty(self.stream)
        self.names = list(level_names)
        self.delay = PROGRESS_DELAY if delay is None else delay
        self.start = time.perf_counter()
        self.done = 0
        self.pending: list[str] = []
        self.visible = False
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None

    # the callback given to release(progress=...)
    def __call__(self, stats: LevelStats) -> None:
        if not self.enabled:
            return
        with self.lock:
            self.done = max(self.done, stats.level)
            if stats.level > 0 or stats.noised_cells:
                total = max(len(self.names), stats.level)
                self.pending.append(
                    f"  level {stats.level}/{total} {stats.name}: {stats.parents:,} parents, "
                    f"{stats.noised_cells:,} cells noised, {stats.surviving_cells:,} kept "
                    f"({stats.seconds:.1f} s)"
                )
            self._draw()

    def __enter__(self) -> Progress:
        self.start = time.perf_counter()
        if self.enabled:
            self.thread = threading.Thread(target=self._tick, name="inftda-progress", daemon=True)
            try:
                self.thread.start()
            except BaseException:  # Ctrl-C here: `with` will not call __exit__, so stop now
                self.__exit__(None, None, None)
                raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop.set()  # the thread draws nothing more, even if the join below is cut short
        try:
            if self.thread is not None:
                self.thread.join()
        finally:  # a Ctrl-C during the join still leaves the terminal clean
            with self.lock:
                if self.visible:  # keep the lines of the levels done, remove the bar
                    lines = "".join(f"\r\033[K{line}\n" for line in self.pending)
                    self.stream.write(f"{lines}\r\033[K")
                    self.stream.flush()
                    self.visible = False

    def _tick(self) -> None:
        while not self.stop.wait(PROGRESS_TICK):
            with self.lock:
                self._draw()

    def _now(self) -> str:
        n = len(self.names)
        if self.done == 0 and not self.pending:
            return "reading the input and the domain"
        if self.done < n:
            return f"level {self.done + 1}: {self.names[self.done]}"
        return "writing the output"

    def _draw(self) -> None:
        elapsed = time.perf_counter() - self.start
        if self.stop.is_set() or elapsed < self.delay:
            return
        self.visible = True
        width = _width(self.stream)
        out = [f"\r\033[K{line}\n" for line in self.pending]
        self.pending.clear()
        n = max(len(self.names), 1)
        filled = round(20 * min(self.done, n) / n)
        bar = f"[{'#' * filled}{'-' * (20 - filled)}] {min(self.done, n)}/{n} levels"
        status = f"{bar}  {self._now()}  {elapsed:.1f} s"
        out.append(f"\r\033[K{status[: width - 1]}")
        self.stream.write("".join(out))
        self.stream.flush()


def query_names(features: object, structure: object) -> list[str]:
    """Names of the queries of a feature release (for the progress bar), coarse to fine; empty
    if the features are malformed (the release then says what is wrong with them).

    Example:
        >>> query_names({"total": [], "trip": ["o", "d"]}, None)
        ['total', 'trip']
    """
    from ..core.features import parse_features

    try:
        spec = parse_features(features, structure="flat" if structure is None else structure)
    except InftdaError:
        return []
    return [q.name for q in spec.queries]


def level_names(hierarchy: object, tree: object) -> list[str]:
    """Names of levels 1..n (for the progress bar); empty if the hierarchy is malformed (the
    release then says what is wrong with it).

    Example:
        >>> level_names(["region", "mun"], None), level_names("region", None)
        (['region', 'mun'], [])
    """
    from ..core.spec import parse_hierarchy

    try:
        spec = parse_hierarchy(hierarchy, tree if isinstance(tree, str) else None)
    except InftdaError:
        return []
    return [spec.level_name(lv) for lv in range(1, spec.n_levels + 1)]


def _width(stream: TextIO) -> int:
    """Columns of the terminal ``stream`` writes to (80 if unknown)."""
    try:
        return os.get_terminal_size(stream.fileno()).columns or 80
    except (AttributeError, ValueError, OSError):
        return shutil.get_terminal_size((80, 24)).columns


def _isatty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
