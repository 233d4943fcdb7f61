"""Write stage: the released table, its levels view and the ledger row, in one transaction.

Either all of them appear or none does. Inside one DuckDB transaction (DDL is transactional):
the old output and view are dropped (with ``overwrite=True``), the output is created from the
released codes, the levels view created and the ledger row inserted, then COMMIT; any failure
rolls everything back, so no reader ever sees a half-written release.
"""

from __future__ import annotations

import dataclasses

import duckdb
import pyarrow as pa

from ..._errors import Arg, InftdaError, OutputExistsError
from ...core.spec import TreeSpec
from ...core.tree import TopDownResult
from . import compile as _compile
from .catalog import object_kind
from .ledger import LEDGER_TABLE, ReleaseRecord, ensure_tables, insert_release, next_release_id
from .sql import qualified, run

__all__ = ["begin_transaction", "write_release"]


def _drop(con: duckdb.DuckDBPyConnection, name: str) -> None:
    kind = object_kind(con, name)
    if kind is not None:
        run(con, _compile.drop_object(kind, qualified(name)))


def begin_transaction(con: duckdb.DuckDBPyConnection) -> None:
    """BEGIN, or a clear error if the caller left a transaction open on ``con``."""
    try:
        run(con, "BEGIN TRANSACTION")
    except duckdb.Error as exc:
        raise InftdaError(
            "the connection has an open transaction; a release commits its output and ledger row "
            f"atomically in its own transaction, so COMMIT or ROLLBACK first ({exc})"
        ) from exc


def write_release(
    con: duckdb.DuckDBPyConnection,
    names: _compile.TempNames,
    spec: TreeSpec,
    result: TopDownResult,
    *,
    output: str,
    view: str | None,
    overwrite: bool,
    record: ReleaseRecord,
) -> int:
    """Write the release and its ledger row atomically; return the release's id.

    ``record`` is the ledger row; its ``release_id`` is assigned here, inside the transaction.
    """
    released = pa.table(
        {**{f"__leaf{c}": codes for c, codes in enumerate(result.codes)}, "count": result.counts}
    )
    con.register(names.released, released)
    begin_transaction(con)
    try:
        for name in (output, view):
            if name and object_kind(con, name) is not None:
                if not overwrite:
                    raise OutputExistsError(
                        f"{name!r} already exists; pass ",
                        Arg("overwrite", True),
                        " or choose another ",
                        Arg("output"),
                        param="output",
                    )
                _drop(con, name)
        run(con, _compile.write_output(names, spec, qualified(output)))
        if view:
            run(con, _compile.levels_view(spec, qualified(view), qualified(output)))
        ensure_tables(con, LEDGER_TABLE)
        release_id = next_release_id(con)
        insert_release(con, dataclasses.replace(record, release_id=release_id))
        run(con, "COMMIT")
    except BaseException:
        run(con, "ROLLBACK")
        raise
    finally:
        con.unregister(names.released)
    return release_id
