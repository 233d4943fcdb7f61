"""The SQL shell of ``inftda-sql sql``: DuckDB statements, with inftda_sql's SQL functions.

It reads statements ending in ``;`` (over as many lines as they take) and prints each result
as a table (:func:`inftda_sql._tables.text_table`), values spelled as DuckDB spells them
(``NULL``, floats to the last digit). From a terminal it prompts and keeps going
after an error; from a pipe or a file (``inftda-sql sql db < script.sql``) and with ``-c SQL``
it stops at the first error with exit code 1. A line starting with ``.`` between statements
is a command of the shell: ``.help``, ``.functions``, ``.tables``, ``.quit`` (or ``.exit``).

The shell needs no ``duckdb`` binary: it runs on the Python client that the package uses.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TextIO

import duckdb

from .._interrupts import is_interrupt
from .._tables import Column, text_table
from ..engines.duckdb.functions import SQL_FUNCTIONS

__all__ = [
    "PROMPT",
    "PROMPT_MORE",
    "Shell",
    "banner",
    "cell",
    "complete",
    "error_text",
    "script_reader",
    "terminal_reader",
]

PROMPT = "D "  # the DuckDB CLI's prompt
PROMPT_MORE = "· "

# DuckDB puts this in front of the message of an error raised inside a Python UDF; the SQL
# functions' messages already name the function (``dp_sigma: rho must be positive ...``).
_UDF_PREFIX = "Python exception occurred while executing the UDF: InvalidInputException: "

# statements whose result is data to show (the others answer ``Count`` or ``Success``)
_QUERIES = frozenset({"SELECT", "EXPLAIN", "PRAGMA", "CALL", "EXECUTE", "RELATION"})

_HELP = """\
Statements end with ';' and may span lines. Commands of the shell:
  .functions   the SQL functions of inftda_sql on this connection
  .tables      the tables and views of the database
  .help        this text
  .quit        leave (also .exit, or Ctrl-D)
The noise functions draw from the CSPRNG and cannot be seeded. Composing them is your
privacy accounting: see docs/how-to/sql-building-blocks.md."""


def complete(text: str) -> bool:
    """True when ``text`` ends with a ``;`` outside quotes and comments (a whole statement).

    Example:
        >>> complete("SELECT 1;"), complete("SELECT ';'"), complete("SELECT 1; -- done")
        (True, False, True)
        >>> complete("SELECT 1 /* ; */"), complete("SELECT \\"a;\\";")
        (False, True)
    """
    last = ""
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in "'\"":
            end = text.find(ch, i + 1)
            while end != -1 and text.startswith(ch * 2, end):  # a doubled quote escapes one
                end = text.find(ch, end + 2)
            if end == -1:
                return False
            last, i = ch, end + 1
        elif text.startswith("--", i):
            end = text.find("\n", i)
            i = n if end == -1 else end + 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end == -1:
                return False
            i = end + 2
        else:
            if not ch.isspace():
                last = ch
            i += 1
    return last == ";"


def error_text(exc: BaseException) -> str:
    """An error as the shell prints it: DuckDB's message, without the UDF layer's prefix."""
    return str(exc).replace(_UDF_PREFIX, "").rstrip()


def cell(value: object) -> str:
    """A value as the shell shows it, exactly as DuckDB would: ``NULL``, ``true``, floats to
    the last digit (``0.01720531803937343``), integers without separators, lists in brackets.

    Example:
        >>> [cell(v) for v in (None, True, 12345, 0.1 + 0.2, float("inf"), [0, None], "a")]
        ['NULL', 'true', '12345', '0.30000000000000004', 'inf', '[0, NULL]', 'a']
    """
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(cell(v) for v in value) + "]"
    return str(value)


def _cells(rows: list[Any]) -> list[list[str]]:
    return [[cell(v) for v in row] for row in rows]


def _layout(columns: list[str], rows: list[Any]) -> list[Column]:
    """Numbers to the right, everything else to the left."""
    numeric = [
        bool(rows)
        and all(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in col)
        for col in (zip(*rows, strict=True) if rows else [()] * len(columns))
    ]
    return [Column(c, ">" if n else "<") for c, n in zip(columns, numeric, strict=True)]


@dataclass
class Shell:
    """Runs statements and shell commands on a connection, printing to ``out`` and ``err``.

    Attributes:
        con: the connection, with the SQL functions registered.
        out: where results go.
        err: where errors go.
        max_rows: rows shown per result (0: all).
    """

    con: duckdb.DuckDBPyConnection
    out: TextIO = field(default_factory=lambda: sys.stdout)
    err: TextIO = field(default_factory=lambda: sys.stderr)
    max_rows: int = 100

    def run(self, text: str) -> bool:
        """Run a shell command or the statements in ``text``; False after an error."""
        command = text.strip()
        if command.startswith("."):
            return self.command(command)
        try:
            statements = duckdb.extract_statements(text)
            for statement in statements:
                result = self.con.execute(statement)
                if statement.type.name in _QUERIES and self.con.description:
                    self._show(statement.type.name, result)
                else:
                    result.fetchall()
        except duckdb.Error as exc:
            if is_interrupt(exc):
                raise KeyboardInterrupt from exc
            print(error_text(exc), file=self.err)
            return False
        except RuntimeError as exc:  # DuckDB's report of a Ctrl-C during a query
            if is_interrupt(exc):
                raise KeyboardInterrupt from exc
            raise
        return True

    def _show(self, kind: str, result: duckdb.DuckDBPyConnection) -> None:
        columns = [d[0] for d in self.con.description or ()]
        if kind == "EXPLAIN":  # the plan is text already
            for row in result.fetchall():
                print(row[-1], file=self.out)
            return
        limit = self.max_rows
        rows = result.fetchall() if limit <= 0 else result.fetchmany(limit + 1)
        more = limit > 0 and len(rows) > limit
        shown = rows[:limit] if more else rows
        print("\n".join(text_table(_layout(columns, shown), _cells(shown))), file=self.out)
        if more:
            print(f"(first {limit} rows shown; --max-rows 0 shows all)", file=self.out)
        else:
            print(f"({len(shown)} row{'' if len(shown) == 1 else 's'})", file=self.out)
        result.fetchall()  # finish the result (DuckDB keeps it open on the connection)

    def command(self, line: str) -> bool:
        """A dot command; ``.quit`` raises :class:`EOFError` (the end of the session)."""
        name = line.split()[0]
        if name in (".quit", ".exit"):
            raise EOFError
        if name == ".help":
            print(_HELP, file=self.out)
        elif name == ".functions":
            rows = [(f.signature, f.summary) for f in SQL_FUNCTIONS]
            print("\n".join(text_table(["function", "what it computes"], rows)), file=self.out)
        elif name == ".tables":
            return self.run(
                "SELECT table_schema AS schema, table_name AS name, table_type AS type "
                "FROM information_schema.tables ORDER BY ALL;"
            )
        else:
            print(f"unknown command {name}; try .help", file=self.err)
            return False
        return True

    def loop(self, read: Callable[[str], str | None], *, interactive: bool) -> int:
        """Run the lines ``read(prompt)`` returns (None at the end) statement by statement;
        return the exit code.

        ``prompt`` is :data:`PROMPT`, or :data:`PROMPT_MORE` while a statement is unfinished.
        Interactive sessions go on after an error (exit code 0), and Ctrl-C drops the statement
        being typed or cancels the one running; otherwise the first error ends the run with exit
        code 1, and Ctrl-C ends it with KeyboardInterrupt.
        """
        buffer: list[str] = []
        while True:
            try:
                line = read(PROMPT_MORE if buffer else PROMPT)
            except KeyboardInterrupt:
                if not interactive:
                    raise
                buffer.clear()
                print(file=self.out)
                continue
            if line is None:
                break
            if not buffer and not line.strip():
                continue
            if not buffer and line.lstrip().startswith("."):
                try:
                    ok = self.command(line.strip())
                except EOFError:
                    return 0
            else:
                buffer.append(line)
                text = "\n".join(buffer)
                if not complete(text):
                    continue
                buffer.clear()
                try:
                    ok = self.run(text)
                except KeyboardInterrupt:  # Ctrl-C while the statement ran: it is cancelled
                    if not interactive:
                        raise
                    print("interrupted", file=self.err)
                    continue
            if not ok and not interactive:
                return 1
        if "".join(buffer).strip() and not self.run("\n".join(buffer)):
            return 1  # a last statement without its ';'
        return 0


def terminal_reader() -> Callable[[str], str | None]:
    """``read(prompt)`` for a terminal: ``input()`` with line editing and history where
    ``readline`` is available; None at Ctrl-D."""
    with contextlib.suppress(ImportError):
        import readline  # noqa: F401  (input() uses it once imported)

    def read(prompt: str) -> str | None:
        try:
            return input(prompt)
        except EOFError:
            print()
            return None

    return read


def script_reader(text: str) -> Callable[[str], str | None]:
    """``read(prompt)`` over the lines of a script (the prompt is not shown)."""
    lines = iter(text.splitlines())
    return lambda prompt: next(lines, None)


def banner(database: str, functions: Iterable[Any]) -> str:
    """What an interactive session prints first."""
    names = ", ".join(f.name for f in functions)
    return (
        f"inftda-sql SQL shell on {database} (DuckDB {duckdb.__version__})\n"
        f"SQL functions: {names}\n"
        "End statements with ';'. .help for help, .quit to leave."
    )
