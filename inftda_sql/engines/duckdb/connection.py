"""The first check of every public function that takes a DuckDB connection ``con``."""

from __future__ import annotations

import duckdb

from ..._errors import SpecError

__all__ = ["require_open"]


def require_open(con: object, function: str) -> None:
    """Refuse, before anything else, a ``con`` that is not an open DuckDB connection.

    A closed connection would otherwise surface as the first query's ``Connection already
    closed!`` wrapped in whatever that query meant (an open transaction, a missing ledger).
    Making a cursor runs no query and touches no pending result.

    Example:
        >>> con = duckdb.connect()
        >>> require_open(con, "ledger")
        >>> con.close()
        >>> require_open(con, "ledger")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        inftda_sql._errors.SpecError: ledger: the connection is closed; open it again with ...
        >>> require_open("data.duckdb", "ledger")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        inftda_sql._errors.SpecError: ledger needs a DuckDB connection, got str 'data.duckdb'; ...
    """
    if not isinstance(con, duckdb.DuckDBPyConnection):
        kind = type(con).__name__
        if isinstance(con, str):
            fix = f"pass inftda_sql.connect({con!r}) (or duckdb.connect(...))"
            kind = f"str {con!r}"
        elif kind == "SparkSession":
            spark = function in ("release", "ledger")
            fix = f"use inftda_sql.spark.{function}(spark, ...)" if spark else "it runs on DuckDB"
        else:
            fix = "pass duckdb.connect(...) or inftda_sql.connect(...)"
        raise SpecError(f"{function} needs a DuckDB connection, got {kind}; {fix}", param="con")
    try:
        con.cursor().close()
    except duckdb.ConnectionException:
        raise SpecError(
            f"{function}: the connection is closed; open it again with duckdb.connect(...) (or "
            "inftda_sql.connect(...)) and pass the new connection",
            param="con",
        ) from None
