"""The building blocks of a release as SQL functions on a DuckDB connection.

:func:`register` adds, to one connection:

* ``dp_rho(epsilon, delta, conversion := 'tight')``: the largest zCDP ``rho`` that implies
  ``(epsilon, delta)``-DP; ``dp_epsilon(rho, delta, conversion := 'tight')``: the epsilon
  ``rho``-zCDP implies at ``delta``; ``dp_sensitivity(privacy := 'bounded', contribution := 1,
  distinct_leaves := false, leaf := false)``: the L2 sensitivity of one level's histogram of
  counts (``distinct_leaves``: a person's records fall in distinct leaf cells; ``leaf``: the
  level is the leaf level);
  ``dp_sigma(rho, sensitivity)``: the discrete Gaussian scale that makes a query of that L2
  sensitivity ``rho``-zCDP, rounded up. All four are computed by
  :mod:`inftda_sql.core.accounting`, the one module that turns budgets into noise, so a
  ``dp_sigma`` of a level's ``rho`` and ``dp_sensitivity`` equals that level's sigma in a
  release, bit for bit.
* ``dp_discrete_gaussian(sigma)`` and ``dp_discrete_laplace(scale)``: one exact draw per row
  (:mod:`inftda_sql.core.noise`) from the CSPRNG (:func:`inftda_sql.core.rng.csprng_bytes`).
  SQL cannot seed them.
  They are VOLATILE: DuckDB neither folds nor caches them, so two calls in one query, and one
  query run twice, draw afresh.
* ``intopt(noisy, target, descending := false)``: the integer Chebyshev projection of InfTDA
  (:func:`inftda_sql.intopt`) of one parent per row: ``noisy`` its children's noisy counts (a
  ``BIGINT[]``, e.g. ``list(noisy ORDER BY child)``), ``target`` its value (any integer type,
  ``sum()``'s ``HUGEINT`` included). The children's order in the list breaks ties.

NULL in, NULL out: a row with a NULL argument gives NULL without a call. A bad argument is
an error naming the function, the parameter and the value (``dp_sigma: rho must be positive,
got 0.0; pass rho := 'inf' for exact (non-private) counts``), raised as DuckDB's ``Invalid Input
Error`` (the Python UDF layer prefixes it with ``Python exception occurred while executing
the UDF``; ``inftda-sql sql`` shows the message alone).

**Privacy.** These are building blocks, not a mechanism: whoever composes them in SQL does the
accounting that :func:`inftda_sql.release` does for its own queries. That means the right L2
sensitivity of each noised query; the sum of the ``rho`` of every query on the same people
(nothing here records them in the ledger); a public set of children, zero counts included (a
``GROUP BY`` of the private table leaks which cells are empty); and only post-processing of
the noisy values afterwards. Each noisy value must be drawn once: keep draws in a table
(``CREATE TABLE ... AS``), because a view or a macro that draws is evaluated, and so draws and
spends again, every time it is read.

**How.** Every function is a temporary macro (``sql/functions.sql``) over a Python UDF named
``inftda_<function>`` that takes whole Arrow batches (about 2,048 rows) and computes them with
the vectorised numpy code of ``core/``: the noise of a batch in one call per distinct scale,
IntOpt over the batch's flattened lists (values and offsets) in one segmented call. The macros
give the parameters names and defaults, which Python UDFs cannot have; they are temporary, so
nothing is written into a database file that other clients could not run.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import duckdb
import duckdb.func
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..._errors import Arg, InftdaError, InternalError, Part, SpecError
from ...core.accounting import epsilon_to_rho, level_sensitivities, rho_to_epsilon, sigma_for
from ...core.arrays import F64, I64
from ...core.intopt import VALUE_LIMIT, intopt
from ...core.noise import (
    SCALE_MAX,
    draw_discrete_gaussian,
    draw_discrete_laplace,
    sample_discrete_gaussian,
    sample_discrete_laplace,
)
from ...core.rng import CSPRNGSource
from .connection import require_open
from .sql import run, template

__all__ = ["SQL_FUNCTIONS", "SqlFunction", "register"]


@dataclass(frozen=True)
class SqlFunction:
    """One SQL function that :func:`register` adds to a connection.

    Attributes:
        name: the name SQL calls (a temporary macro over the Python UDF :attr:`udf`).
        parameters: ``(name, SQL type, default)`` per parameter, the default as SQL text or
            None for a required parameter. Any parameter can be passed by name
            (``dp_sigma(rho := 0.5, sensitivity := 1)``).
        returns: the SQL type of the result.
        volatile: True for the noise functions: a fresh draw on every call and every row,
            never constant-folded or cached.
        summary: what the function computes, in one line.

    Example:
        >>> print(SQL_FUNCTIONS[0])
        dp_rho(epsilon DOUBLE, delta DOUBLE, conversion VARCHAR := 'tight') -> DOUBLE
    """

    name: str
    parameters: tuple[tuple[str, str, str | None], ...]
    returns: str
    volatile: bool
    summary: str

    @property
    def udf(self) -> str:
        """The name of the Python UDF behind the macro."""
        return f"inftda_{self.name}"

    @property
    def signature(self) -> str:
        """The call with its parameters' types and defaults, and the result's type."""
        params = ", ".join(
            f"{name} {kind}" + ("" if default is None else f" := {default}")
            for name, kind, default in self.parameters
        )
        return f"{self.name}({params}) -> {self.returns}"

    def __str__(self) -> str:
        return self.signature


#: The functions :func:`register` adds, in the order it returns them.
SQL_FUNCTIONS: tuple[SqlFunction, ...] = (
    SqlFunction(
        name="dp_rho",
        parameters=(
            ("epsilon", "DOUBLE", None),
            ("delta", "DOUBLE", None),
            ("conversion", "VARCHAR", "'tight'"),
        ),
        returns="DOUBLE",
        volatile=False,
        summary="largest rho-zCDP budget implying (epsilon, delta)-DP ('tight' or 'simple')",
    ),
    SqlFunction(
        name="dp_epsilon",
        parameters=(
            ("rho", "DOUBLE", None),
            ("delta", "DOUBLE", None),
            ("conversion", "VARCHAR", "'tight'"),
        ),
        returns="DOUBLE",
        volatile=False,
        summary="epsilon of the (epsilon, delta)-DP guarantee that rho-zCDP implies at delta",
    ),
    SqlFunction(
        name="dp_sensitivity",
        parameters=(
            ("privacy", "VARCHAR", "'bounded'"),
            ("contribution", "BIGINT", "1"),
            ("distinct_leaves", "BOOLEAN", "false"),
            ("leaf", "BOOLEAN", "false"),
        ),
        returns="DOUBLE",
        volatile=False,
        summary="L2 sensitivity of one level's histogram of counts, as a release computes it",
    ),
    SqlFunction(
        name="dp_sigma",
        parameters=(("rho", "DOUBLE", None), ("sensitivity", "DOUBLE", None)),
        returns="DOUBLE",
        volatile=False,
        summary="discrete Gaussian sigma = sensitivity / sqrt(2 rho) of a rho-zCDP query",
    ),
    SqlFunction(
        name="dp_discrete_gaussian",
        parameters=(("sigma", "DOUBLE", None),),
        returns="BIGINT",
        volatile=True,
        summary="one exact discrete Gaussian draw N_Z(0, sigma^2) per row, from the CSPRNG",
    ),
    SqlFunction(
        name="dp_discrete_laplace",
        parameters=(("scale", "DOUBLE", None),),
        returns="BIGINT",
        volatile=True,
        summary="one exact discrete Laplace draw of that scale per row, from the CSPRNG",
    ),
    SqlFunction(
        name="intopt",
        parameters=(
            ("noisy", "BIGINT[]", None),
            ("target", "HUGEINT", None),
            ("descending", "BOOLEAN", "false"),
        ),
        returns="BIGINT[]",
        volatile=False,
        summary="non-negative integers summing to target, nearest to noisy in max distance",
    ),
)

# The noise functions' only source of randomness: no SQL argument reaches the sampler's rng.
_CSPRNG = CSPRNGSource()


# ----------------------------------------------------------------------------------------------
# arguments


def _floats(column: Any) -> F64:
    """A DOUBLE argument (an Arrow column without NULLs) as float64."""
    return np.asarray(column.to_numpy(), dtype=np.float64)


def _shown(value: float) -> str:
    """A number as an error shows it: ``-1`` for a whole number, ``0.5``, ``nan``, ``inf``."""
    if value.is_integer() and abs(value) < 2.0**53:
        return str(int(value))
    return repr(value)


def _per_distinct(fn: Callable[..., float], *columns: F64) -> F64:
    """``fn`` of each row's arguments, called once per distinct row (once for constants)."""
    table = np.column_stack(columns)
    if bool((table == table[0]).all()):
        return np.full(table.shape[0], fn(*table[0].tolist()), dtype=np.float64)
    distinct, inverse = np.unique(table, axis=0, return_inverse=True)
    values = np.array([fn(*row) for row in distinct.tolist()], dtype=np.float64)
    result: F64 = values[inverse.reshape(-1)]
    return result


def _names(column: Any) -> tuple[F64, list[str]]:
    """A VARCHAR argument as codes (floats, to group with the numbers) and the names coded."""
    encoded = column.combine_chunks().dictionary_encode()
    codes = np.asarray(encoded.indices.to_numpy(), dtype=np.float64)
    return codes, [str(v) for v in encoded.dictionary.to_pylist()]


def _scales(column: Any, name: str) -> F64:
    """The ``sigma`` / ``scale`` of each row: finite and >= 0 (0 adds no noise)."""
    values = _floats(column)
    bad = ~(np.isfinite(values) & (values >= 0.0))
    if bad.any():
        hint: tuple[Part, ...] = ()
        if name == "sigma":
            hint = (
                "; compute it with dp_sigma(",
                Arg("rho", ...),
                ", ",
                Arg("sensitivity", ...),
                ")",
            )
        raise SpecError(
            f"{name} must be finite and >= 0 (0 adds no noise), got "
            f"{_shown(float(values[bad][0]))}",
            *hint,
            param=name,
        )
    large = values > SCALE_MAX
    if large.any():
        raise SpecError(
            f"{name} must be at most 2**57 (about 1.4e17), got {_shown(float(values[large][0]))}"
            f" in {int(large.sum())} row(s): the draws are BIGINT and could overflow it; noise "
            "that large hides any count, so check the budget it was computed from",
            param=name,
        )
    return values


# ----------------------------------------------------------------------------------------------
# the functions, one Arrow batch at a time


def _dp_rho(epsilon: Any, delta: Any, conversion: Any) -> Any:
    codes, names = _names(conversion)
    rho = _per_distinct(
        lambda e, d, c: epsilon_to_rho(e, d, names[int(c)]),
        _floats(epsilon),
        _floats(delta),
        codes,
    )
    return pa.array(rho, type=pa.float64())


def _dp_epsilon(rho: Any, delta: Any, conversion: Any) -> Any:
    codes, names = _names(conversion)
    epsilon = _per_distinct(
        lambda r, d, c: rho_to_epsilon(r, d, names[int(c)]), _floats(rho), _floats(delta), codes
    )
    return pa.array(epsilon, type=pa.float64())


def _dp_sensitivity(privacy: Any, contribution: Any, distinct: Any, leaf: Any) -> Any:
    codes, names = _names(privacy)

    def one(p: float, m: float, d: float, at_leaf: float) -> float:
        # two levels below the root: the last is a leaf level, the one before it is not
        levels = level_sensitivities(
            2, privacy=names[int(p)], contribution=int(m), distinct=bool(d)
        )
        return levels[-1] if at_leaf else levels[-2]

    m = np.asarray(contribution.to_numpy(), dtype=np.int64)
    if m.size and int(m.min()) < 1:
        raise SpecError(
            f"contribution must be a positive integer (records per person), got {int(m.min())}",
            param="contribution",
        )
    flags = [
        np.asarray(c.to_numpy(zero_copy_only=False), dtype=np.float64) for c in (distinct, leaf)
    ]
    value = _per_distinct(one, codes, m.astype(np.float64), *flags)
    return pa.array(value, type=pa.float64())


def _sigma(rho: float, sensitivity: float) -> float:
    """:func:`sigma_for`, with a clear error when the scale is beyond DOUBLE's range."""
    try:
        return sigma_for(sensitivity, rho)
    except OverflowError:
        raise SpecError(
            f"sensitivity / sqrt(2 rho) is beyond DOUBLE's range for rho = {rho!r} and "
            f"sensitivity = {sensitivity!r}; such noise would hide any count: raise rho",
            param="rho",
        ) from None


def _dp_sigma(rho: Any, sensitivity: Any) -> Any:
    sigma = _per_distinct(_sigma, _floats(rho), _floats(sensitivity))
    return pa.array(sigma, type=pa.float64())


def _dp_discrete_gaussian(sigma: Any) -> Any:
    s = _scales(sigma, "sigma")
    if bool((s == s[0]).all()):  # one sigma for the batch (the usual case): one plain call
        return pa.array(draw_discrete_gaussian(float(s[0]), s.size, source=_CSPRNG))
    # several: grouped by sigma; no rng= given, so the draws come from the CSPRNG too
    return pa.array(sample_discrete_gaussian(s), type=pa.int64())


def _dp_discrete_laplace(scale: Any) -> Any:
    b = _scales(scale, "scale")
    if bool((b == b[0]).all()):
        return pa.array(draw_discrete_laplace(float(b[0]), b.size, source=_CSPRNG))
    return pa.array(sample_discrete_laplace(b), type=pa.int64())


def _targets(target: Any) -> I64:
    """The target of each row: an integer in [0, 2**60]."""
    try:
        values = pc.cast(target.combine_chunks(), pa.int64()).to_numpy()
    except pa.ArrowInvalid:
        raise SpecError(
            "target must be at most 2**60, got a larger value; rescale the counts",
            param="target",
        ) from None
    c: I64 = np.asarray(values, dtype=np.int64)
    if c.size and int(c.min()) < 0:
        raise SpecError(f"target must be >= 0, got {int(c.min())}", param="target")
    if c.size and int(c.max()) > VALUE_LIMIT:
        raise SpecError(
            f"target must be at most 2**60, got {int(c.max())}; rescale the counts",
            param="target",
        )
    return c


def _intopt(noisy: Any, target: Any, descending: Any) -> Any:
    """IntOpt of every row's list, all rows in one segmented call per tie-break order.

    The batch's lists are one flat array of values and ``offsets`` (row ``i`` holds
    ``values[offsets[i]:offsets[i + 1]]``); the result reuses the offsets.
    """
    lists = noisy.combine_chunks()
    if lists.null_count:  # pragma: no cover - DuckDB passes no NULL row (default null handling)
        raise InternalError("intopt received a NULL list")
    offsets = np.asarray(lists.offsets.to_numpy(), dtype=np.int64)
    start = int(offsets[0])
    offsets -= start
    n = int(offsets[-1])
    values = lists.values.slice(start, n)
    sizes = np.diff(offsets)
    if values.null_count:
        at = np.flatnonzero(values.is_null().to_numpy(zero_copy_only=False))
        rows = np.unique(np.searchsorted(offsets, at, side="right") - 1).size
        raise SpecError(
            f"noisy holds NULL children in {rows} row(s); every child needs a noisy count: "
            "coalesce a missing count to 0 before adding noise, e.g. "
            "coalesce(n, 0) + dp_discrete_gaussian(sigma)",
            param="noisy",
        )
    y: I64 = np.asarray(values.to_numpy(), dtype=np.int64)
    c = _targets(target)
    empty = sizes == 0
    if bool((c[empty] > 0).any()):
        k = int((c[empty] > 0).sum())
        raise SpecError(
            f"a parent with no children (noisy = []) can only have target 0, got a positive "
            f"target in {k} row(s)",
            param="target",
        )
    flags = np.asarray(descending.to_numpy(zero_copy_only=False), dtype=bool)
    out = np.empty(n, dtype=np.int64)
    for flag in np.unique(flags[~empty]).tolist():
        rows = (flags == flag) & ~empty
        order: Literal["ascending", "descending"] = "descending" if flag else "ascending"
        try:
            if bool((rows | empty).all()):  # every parent of the batch: no gather
                out[:] = intopt(y, c[rows], offsets[:-1][rows], order=order)
            else:
                take = np.repeat(rows, sizes)
                part = sizes[rows]
                out[take] = intopt(y[take], c[rows], np.cumsum(part) - part, order=order)
        except SpecError:
            raise SpecError(
                "noisy values must lie within +-2**60, and a parent's children sum within "
                "int64; rescale the counts",
                param="noisy",
            ) from None
    kind = pa.int32() if n < 2**31 else pa.int64()
    build = pa.ListArray if kind == pa.int32() else pa.LargeListArray
    return build.from_arrays(pa.array(offsets, type=kind), pa.array(out, type=pa.int64()))


def _udf(name: str, body: Callable[..., Any]) -> Callable[..., Any]:
    """``body`` with the library's errors turned into DuckDB's Invalid Input Error, spelled
    for SQL (``delta := 1e-8``) and named after the SQL function."""

    @functools.wraps(body)
    def call(*columns: Any) -> Any:
        try:
            return body(*columns)
        except InftdaError as exc:
            raise duckdb.InvalidInputException(f"{name}: {exc.message(sql=True)}") from None

    return call


# The callables DuckDB runs, made once and kept by this module for the life of the process:
# DuckDB keeps a Python UDF in the database's catalog, shared by its connections, but lets
# the connection that created it hold the only reference; a per-call callable would be freed
# when that connection closes while the others still call it.
_UDFS: dict[str, Callable[..., Any]] = {
    name: _udf(name, body)
    for name, body in (
        ("dp_rho", _dp_rho),
        ("dp_epsilon", _dp_epsilon),
        ("dp_sensitivity", _dp_sensitivity),
        ("dp_sigma", _dp_sigma),
        ("dp_discrete_gaussian", _dp_discrete_gaussian),
        ("dp_discrete_laplace", _dp_discrete_laplace),
        ("intopt", _intopt),
    )
}


# ----------------------------------------------------------------------------------------------
# registration


def register(con: duckdb.DuckDBPyConnection) -> tuple[SqlFunction, ...]:
    """Add the SQL functions of inftda_sql to the DuckDB connection ``con``.

    The functions (listed in the module docstring, one :class:`SqlFunction` each) are
    temporary macros of this connection over Python UDFs named ``inftda_<function>``: other
    connections, and other clients opening the same file, do not see the names, and nothing is
    written into the file. (The UDFs belong to the database in this process: the connections
    and cursors that share it share them, and registering on each of them is fine.) Calling
    ``register`` again on the same connection replaces them (it is idempotent).

    They are building blocks: a SQL user who composes them is responsible for the privacy
    accounting (sensitivity, composition of every query's rho, a public domain of children,
    post-processing only), and nothing they do is recorded in the ledger. See
    "The building blocks in SQL" (``docs/how-to/sql-building-blocks.md``).

    Args:
        con: an open DuckDB connection (read-only connections work too).

    Returns:
        The functions registered.

    Raises:
        SpecError: ``con`` is not a DuckDB connection.

    Example:
        >>> import duckdb
        >>> con = duckdb.connect()
        >>> [f.name for f in register(con)]  # doctest: +NORMALIZE_WHITESPACE
        ['dp_rho', 'dp_epsilon', 'dp_sensitivity', 'dp_sigma', 'dp_discrete_gaussian',
         'dp_discrete_laplace', 'intopt']
        >>> con.sql("SELECT dp_sigma(rho := 0.5, sensitivity := 1) AS sigma").fetchall()
        [(1.0,)]
        >>> con.sql("SELECT intopt([-20, 5, 5], 10) AS x, intopt([3, -1, 4], 6) AS y").fetchall()
        [([0, 0, 10], [2, 0, 4])]
        >>> con.sql("SELECT dp_discrete_gaussian(0.0) AS no_noise").fetchall()
        [(0,)]
        >>> con.close()
    """
    if not isinstance(con, duckdb.DuckDBPyConnection):
        raise SpecError(
            f"register needs a DuckDB connection, got {type(con).__name__}; pass "
            "duckdb.connect(...) or inftda_sql.connect(...)",
            param="con",
        )
    require_open(con, "register")
    for function in SQL_FUNCTIONS:
        with contextlib.suppress(duckdb.InvalidInputException):  # not registered through con
            con.remove_function(function.udf)
        try:
            con.create_function(
                function.udf,
                _UDFS[function.name],
                [kind for _, kind, _ in function.parameters],
                function.returns,
                type=duckdb.func.ARROW,
                null_handling=duckdb.func.DEFAULT,
                side_effects=function.volatile,
            )
        except duckdb.CatalogException as exc:
            # registered through another connection to the same database (a cursor, a second
            # connect() of the file): the database's UDF is this one, kept for both
            if "already exists" not in str(exc):
                raise
    run(con, template("functions"))
    return SQL_FUNCTIONS
