"""Command line: ``inftda-sql`` (also ``python -m inftda_sql``).

Commands: ``demo`` (build a demo database and release it), ``release`` (every option of
:func:`inftda_sql.release` from flags or a TOML file), ``evaluate`` (per-level error of a
release against the truth, plots to PNG), ``plan`` (noise and expected error per level before
touching any data), ``budget`` (cap the releases of an input), ``ledger`` (releases made and
budget spent), ``publish`` (copy a release into a file to share) and ``sql`` (a SQL shell with
the building blocks registered as SQL functions).

The package:

* ``parse.py`` -- the grammar: the parser and its flags, the TOML config of ``release``, flags
  turned into the library's keyword arguments; a malformed line is a ``UsageError``;
* ``commands.py`` -- one function per command (``COMMANDS``): open the file, call the library,
  print the result;
* ``shell.py`` -- the SQL shell of ``sql``: statements ending in ``;``, results as tables, dot
  commands (``.functions``, ``.quit``);
* ``console.py`` -- what is written: the progress bar, tables / CSV / JSON, one-line errors and
  warnings in the command line's spelling (``--overwrite``, not ``overwrite=True``: library
  messages are built from parts, see :mod:`inftda_sql._errors`);
* this module -- :func:`main`: parse, run, and map what went wrong to an exit code.

Exit codes: 0 success, 2 usage error, 1 anything else, 130 interrupted (Ctrl-C) before anything
was recorded. Errors print one line on stderr; ``--debug`` shows the traceback instead. A
release that takes more than a moment draws a progress bar on stderr when stderr is a terminal
(``--quiet`` silences it).

Ctrl-C (:mod:`inftda_sql._interrupts`): before a release commits, it cancels everything (exit
130, nothing recorded); once it has committed, the command finishes and exits 0 (a note says the
Ctrl-C came too late). DuckDB's ``RuntimeError('Query interrupted')`` counts as a Ctrl-C. So
does one while the program starts and imports this package (:mod:`inftda_sql._start`): exit
130, no traceback.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from .._interrupts import Scope, critical, is_interrupt, settle_imports
from .._start import take_over

__all__ = ["EXIT_INTERRUPTED", "main"]

#: the exit code of a command interrupted by Ctrl-C (128 + SIGINT, as shells report it)
EXIT_INTERRUPTED = 130


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``inftda-sql`` command; returns the exit code.

    Without ``argv`` (the console script, ``python -m inftda_sql``) this is the process's own
    command line: once a command has recorded its work, Ctrl-C is ignored until the process
    exits, so it cannot turn a recorded release's exit code 0 into a death by SIGINT while
    Python shuts down.
    """
    own_process = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv  # accepted anywhere on the line, before or after the command
    work = Scope(deliver=False, keep=own_process)
    try:
        if take_over():  # Ctrl-C while Python imported this package (see _start.py)
            return _interrupted()
        with work:
            code = _run([a for a in argv if a != "--debug"], debug=debug)
    except KeyboardInterrupt:  # while importing the library, or reporting an error
        code = _interrupted()
    if work.late:
        print(
            "note: Ctrl-C came after the result was recorded, so the command completed",
            file=sys.stderr,
        )
    return code


def _interrupted() -> int:
    print("interrupted: nothing was recorded", file=sys.stderr)
    return EXIT_INTERRUPTED


def _run(argv: list[str], *, debug: bool) -> int:
    """Parse and run one command; map what went wrong to an exit code."""
    # The library is imported here, not with this module, so that a Ctrl-C during its imports
    # (the slow part of the start) is handled like any other. It waits for them to finish: a
    # C extension (DuckDB, numpy, pyarrow) whose start is cut fails to load, or aborts Python.
    with critical():
        import duckdb

        from .._errors import InftdaError
        from . import console
        from .commands import COMMANDS
        from .parse import UsageError, build_parser

    try:
        args = build_parser().parse_args(argv)
        settle_imports()  # pyarrow's lazy import of pandas, never cut by Ctrl-C
        with console.warnings_as_lines():
            return int(COMMANDS[args.command](args))
    except SystemExit as exc:  # --help, --version
        return exc.code if isinstance(exc.code, int) else 0
    except BrokenPipeError:  # output piped into `head` and closed: not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except UsageError as exc:
        print(console.one_line(str(exc)), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return _interrupted()
    except (InftdaError, duckdb.Error, OSError, ImportError) as exc:
        if is_interrupt(exc):  # duckdb.InterruptException
            return _interrupted()
        if debug:
            raise
        print(console.error_line(exc), file=sys.stderr)
        return 1
    except Exception as exc:
        if is_interrupt(exc):  # DuckDB's RuntimeError('Query interrupted')
            return _interrupted()
        if debug:
            raise
        print(console.unexpected_line(exc), file=sys.stderr)
        return 1
