"""Exceptions and warnings raised by inftda_sql, and how their messages mention parameters.

Every error names the problem, the offending value and the fix. The tree::

    InftdaError                      base of everything raised on purpose
    ├── BudgetError(ValueError)      privacy budget missing, contradictory or out of range
    │   └── BudgetExceededError      a release would spend more than the stored budget allows
    ├── SpecError(ValueError)        hierarchy / option specification is malformed
    ├── DomainError(ValueError)      the public domain is missing, not nested, or lacks input values
    ├── InputDataError(ValueError)   the private input has NULLs, bad counts, unknown columns ...
    ├── OutputExistsError(ValueError) the output table exists and overwrite=False
    ├── ConcurrentWriteError(RuntimeError) another writer changed the database at the same
    │                                time; nothing was recorded: retry
    └── InternalError(RuntimeError)  an invariant of the library failed: a bug, please report it

    InftdaWarning(UserWarning)       an implausible but allowed choice (e.g. a large epsilon)

Messages of errors raised *before* noise may describe the private input to the data owner;
nothing from them is ever written into a published table.

**Mentions.** A message is built from parts: plain text, and *mentions* of the options a user
types, so that one message reads right in Python and on the command line::

    raise OutputExistsError(
        f"{name!r} already exists; pass ", Arg("overwrite", True), " or choose another ",
        Arg("output"), " name", param="output",
    )

``str(err)`` is the Python spelling (``pass overwrite=True or choose another output= name``);
``err.message(cli=True)`` is the command line's (``pass --overwrite or choose another --output
name``); ``err.message(sql=True)`` the SQL functions' (``delta := 1e-8``: the named-argument
syntax of a DuckDB macro call, see :mod:`inftda_sql.engines.duckdb.functions`). The parts:

* :class:`Arg` -- a parameter, with or without a value: ``rho=0.5`` / ``--rho 0.5``,
  ``overwrite=True`` / ``--overwrite``, ``levels_view=False`` / ``--no-levels-view``,
  ``hierarchy=[['a', 'b'], ['c']]`` / ``--hierarchy a,b --hierarchy c``, ``rho=...`` /
  ``--rho ...``, ``rho=float('inf')`` / ``--rho inf``; in SQL ``rho := 0.5``,
  ``conversion := 'tight'``, ``rho := 'inf'``. :class:`Code` is a value spelled as
  typed (``delta=1e-8``), :class:`Placeholder` a value to fill in (``[origin columns...]`` /
  ``<origin columns>``).
* :class:`Func` -- a library function that is a command on the command line:
  ``set_budget()`` / ```inftda-sql budget```.
* :class:`Spelling` -- text written differently in each (or in one only, e.g. a mapping
  ``domain={...}`` that has no flag); SQL uses the Python text unless given its own.

``err.param`` names the parameter the error is about (``"epsilon"``), or is None when it is
about several or none. Warnings (:class:`InftdaWarning`) take the same parts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeAlias

__all__ = [
    "MISSING",
    "Arg",
    "BudgetError",
    "BudgetExceededError",
    "Code",
    "ConcurrentWriteError",
    "DomainError",
    "Func",
    "InftdaError",
    "InftdaWarning",
    "InputDataError",
    "InternalError",
    "OutputExistsError",
    "Part",
    "Placeholder",
    "SpecError",
    "Spelling",
    "render",
]


class _Missing:
    """The value of an :class:`Arg` mentioned without one (``output=`` / ``--output``)."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING = _Missing()


class Code(str):
    """A value spelled exactly as typed, in both spellings (``1e-8``, not ``1e-08``).

    Example:
        >>> render(["e.g. ", Arg("delta", Code("1e-8"))], cli=True)
        'e.g. --delta 1e-8'
    """

    def __repr__(self) -> str:
        return str(self)


@dataclass(frozen=True)
class Placeholder:
    """A value the user fills in: ``origin columns...`` in Python, ``<origin columns>`` on the
    command line.

    Example:
        >>> render([Arg("hierarchy", [[Placeholder("origin columns")], [Placeholder("dest")]])])
        'hierarchy=[[origin columns...], [dest...]]'
    """

    text: str

    def __repr__(self) -> str:
        return f"{self.text}..."


@dataclass(frozen=True)
class Arg:
    """A mention of the parameter ``name``, with an optional ``value``.

    ``spec`` chooses the value's Python spelling: None writes it as code
    (``float('inf')``, ``...`` for Ellipsis), ``"!r"`` as its repr (``inf``), anything else is a
    format spec (``".6g"``, ``","``). On the command line the value follows the flag:
    strings unquoted, lists comma-separated, a list of lists as one flag per inner list,
    True as the bare flag, False as ``--no-<name>``.

    Example:
        >>> arg = Arg("hierarchy", [["o_reg", "o_mun"], ["d_reg", "d_mun"]])
        >>> arg.python()
        "hierarchy=[['o_reg', 'o_mun'], ['d_reg', 'd_mun']]"
        >>> arg.cli()
        '--hierarchy o_reg,o_mun --hierarchy d_reg,d_mun'
        >>> Arg("epsilon", 52.5, ".6g").cli(), Arg("levels_view", False).cli()
        ('--epsilon 52.5', '--no-levels-view')
    """

    name: str
    value: object = MISSING
    spec: str | None = None

    @property
    def flag(self) -> str:
        """The command-line flag: ``max_cells`` -> ``--max-cells``."""
        return "--" + self.name.replace("_", "-")

    def python(self) -> str:
        """``name=value`` as typed in Python (``name=`` without a value)."""
        if self.value is MISSING:
            return f"{self.name}="
        return f"{self.name}={_python_value(self.value, self.spec)}"

    def sql(self) -> str:
        """``name := value`` as typed in a call of a SQL function (``name :=`` without one).

        Example:
            >>> Arg("delta", Code("1e-8")).sql(), Arg("conversion", "tight").sql()
            ('delta := 1e-8', "conversion := 'tight'")
            >>> Arg("rho", float("inf")).sql(), Arg("descending", True).sql()
            ("rho := 'inf'", 'descending := true')
        """
        if self.value is MISSING:
            return f"{self.name} :="
        return f"{self.name} := {_sql_value(self.value, self.spec)}"

    def cli(self) -> str:
        """The flag and its value(s) as typed on the command line."""
        value = self.value
        if value is MISSING or value is True:
            return self.flag
        if value is False:
            return f"--no-{self.flag[2:]}"
        if (
            isinstance(value, (list, tuple))
            and value
            and all(isinstance(v, (list, tuple)) for v in value)
        ):
            return " ".join(f"{self.flag} {_cli_items(v)}" for v in value)
        if isinstance(value, (list, tuple)):
            return f"{self.flag} {_cli_items(value)}"
        if isinstance(value, str):
            return f"{self.flag} {value}"
        if isinstance(value, float) and math.isinf(value):
            return f"{self.flag} {'-' if value < 0 else ''}inf"
        return f"{self.flag} {_python_value(value, self.spec)}"


@dataclass(frozen=True)
class Func:
    """A library function that is a command of the command line.

    Example:
        >>> f = Func("set_budget", command="budget")
        >>> render([f]), render([f], cli=True)
        ('set_budget()', '`inftda-sql budget`')
    """

    name: str
    command: str

    def python(self) -> str:
        return f"{self.name}()"

    def cli(self) -> str:
        return f"`inftda-sql {self.command}`"

    def sql(self) -> str:
        return self.python()


@dataclass(frozen=True)
class Spelling:
    """Text spelled differently in Python and on the command line (``()`` for absent); in SQL
    as ``sql`` says, or as in Python when ``sql`` is None.

    Example:
        >>> only_python = Spelling(python=(" or ", Arg("domain", {"sex": ["F"]})), cli=())
        >>> render(["domain='geo'", only_python]), render(["--domain geo", only_python], cli=True)
        ("domain='geo' or domain={'sex': ['F']}", '--domain geo')
    """

    python: str | tuple[Part, ...]
    cli: str | tuple[Part, ...]
    sql: str | tuple[Part, ...] | None = None


Part: TypeAlias = str | Arg | Func | Spelling


def _python_value(value: object, spec: str | None) -> str:
    if spec == "!r":
        return repr(value)
    if spec is not None:
        return format(value, spec)
    if value is Ellipsis:
        return "..."
    if isinstance(value, float) and not math.isfinite(value):
        return f"float({repr(value)!r})"  # float('inf'), float('-inf'), float('nan')
    return repr(value)


def _sql_value(value: object, spec: str | None) -> str:
    """A value as a SQL literal: strings quoted, ``true``/``false``, ``NULL``, non-finite
    floats as the strings DuckDB casts to DOUBLE (``'inf'``), lists in brackets."""
    if value is Ellipsis:
        return "..."
    if isinstance(value, Code):
        return str(value)
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, float) and not math.isfinite(value):
        return f"'{value!r}'"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_sql_value(v, spec) for v in value) + "]"
    if spec is not None and spec != "!r":
        return format(value, spec)
    return repr(value)


def _cli_items(values: Sequence[object]) -> str:
    """``['a', 'b']`` -> ``a,b``; placeholders -> ``<origin columns>``."""
    if any(isinstance(v, Placeholder) for v in values):
        return (
            "<" + ", ".join(v.text if isinstance(v, Placeholder) else str(v) for v in values) + ">"
        )
    return ",".join(str(v) for v in values)


def render(parts: Sequence[Part], *, cli: bool = False, sql: bool = False) -> str:
    """The text of ``parts`` in the Python spelling, the command line's if ``cli``, or the SQL
    functions' if ``sql``.

    Example:
        >>> parts = ["pass ", Arg("overwrite", True), " or choose another ", Arg("output"), " name"]
        >>> render(parts)
        'pass overwrite=True or choose another output= name'
        >>> render(parts, cli=True)
        'pass --overwrite or choose another --output name'
        >>> render(["e.g. ", Arg("delta", Code("1e-8"))], sql=True)
        'e.g. delta := 1e-8'
    """
    if cli and sql:
        raise ValueError("render: choose cli=True or sql=True, not both")
    out: list[str] = []
    for part in parts:
        if isinstance(part, str):
            out.append(part)
        elif isinstance(part, Spelling):
            chosen = part.cli if cli else part.python
            if sql and part.sql is not None:
                chosen = part.sql
            out.append(chosen if isinstance(chosen, str) else render(chosen, cli=cli, sql=sql))
        elif cli:
            out.append(part.cli())
        else:
            out.append(part.sql() if sql else part.python())
    return "".join(out)


class InftdaError(Exception):
    """Base class of all errors raised by inftda_sql on purpose.

    Args:
        *parts: the message, as text and mentions (see the module docstring).
        param: the parameter the error is about, if one is.

    Example:
        >>> err = SpecError("pass ", Arg("rho", ...), " (zCDP)", param="rho")
        >>> str(err), err.message(cli=True), err.param
        ('pass rho=... (zCDP)', 'pass --rho ... (zCDP)', 'rho')
    """

    def __init__(self, *parts: Part, param: str | None = None) -> None:
        self.parts: tuple[Part, ...] = parts
        self.param = param
        super().__init__(render(parts))

    def message(self, *, cli: bool = False, sql: bool = False) -> str:
        """The message in the Python spelling (``str(err)``), the command line's or SQL's."""
        return render(self.parts, cli=cli, sql=sql)


class BudgetError(InftdaError, ValueError):
    """The privacy budget is missing, contradictory or out of range."""


class BudgetExceededError(BudgetError):
    """A release would spend more than the budget stored for its input table."""


class SpecError(InftdaError, ValueError):
    """A hierarchy or an option of a release is malformed."""


class DomainError(InftdaError, ValueError):
    """The public domain is missing, not nested, or does not cover the input."""


class InputDataError(InftdaError, ValueError):
    """The private input violates a rule (NULL keys, negative counts, unknown columns...)."""


class OutputExistsError(InftdaError, ValueError):
    """The output table already exists and ``overwrite=True`` was not given."""


class ConcurrentWriteError(InftdaError, RuntimeError):
    """Another release or budget change wrote to the same database at the same time, so this
    one was rolled back whole (nothing of it is recorded). Run it again: it then sees the other
    write (and the budget that write spent)."""


class InternalError(InftdaError, RuntimeError):
    """An internal invariant failed. This is a bug in inftda_sql: please report it."""

    def __init__(self, *parts: Part, param: str | None = None) -> None:
        super().__init__(*parts, " (this is a bug in inftda_sql; please report it)", param=param)


class InftdaWarning(UserWarning):
    """A choice that is allowed but implausible (a UserWarning), in the same parts as errors.

    Example:
        >>> w = InftdaWarning(Arg("epsilon", 50.0, ".6g"), " is large", param="epsilon")
        >>> str(w), w.message(cli=True)
        ('epsilon=50 is large', '--epsilon 50 is large')
    """

    def __init__(self, *parts: Part, param: str | None = None) -> None:
        self.parts: tuple[Part, ...] = parts
        self.param = param
        super().__init__(render(parts))

    def message(self, *, cli: bool = False, sql: bool = False) -> str:
        """The message in the Python spelling (``str(warning)``), the command line's or SQL's."""
        return render(self.parts, cli=cli, sql=sql)
