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

Exit codes: 0 success, 2 usage error, 1 anything else. Errors print one line on stderr;
``--debug`` shows the traceback instead. A release that takes more than a moment draws a
progress bar on stderr when stderr is a terminal (``--quiet`` silences it).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

import duckdb

from .._errors import InftdaError
from . import console
from .commands import COMMANDS
from .parse import UsageError, build_parser

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``inftda-sql`` command; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv  # accepted anywhere on the line, before or after the command
    try:
        args = build_parser().parse_args([a for a in argv if a != "--debug"])
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
        print("interrupted", file=sys.stderr)
        return 1
    except (InftdaError, duckdb.Error, OSError, ImportError) as exc:
        if debug:
            raise
        print(console.error_line(exc), file=sys.stderr)
        return 1
    except Exception as exc:
        if debug:
            raise
        print(console.unexpected_line(exc), file=sys.stderr)
        return 1
