"""Write stage: the released table, its levels view and the ledger row, in one transaction.

Either all of them appear or none does: the output is built under a staging name, the old
output (with ``overwrite=True``) is dropped, the staged table renamed, the view created and the
ledger row inserted, then COMMIT; any failure rolls everything back.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import duckdb
import pyarrow as pa

from ..._errors import InftdaError, OutputExistsError
from ..._version import __version__
from ...core.accounting import Accounting
from ...core.spec import TreeSpec
from ...core.tree import TopDownResult
from . import compile as _compile
from .catalog import object_kind
from .sql import ident, qualified, render, run, scalar

__all__ = ["LEDGER_TABLE", "begin_transaction", "write_release"]

LEDGER_TABLE = "inftda_releases"


def _drop(con: duckdb.DuckDBPyConnection, name: str) -> None:
    kind = object_kind(con, name)
    if kind is not None:
        run(con, f"DROP {'VIEW' if kind == 'view' else 'TABLE'} {qualified(name)}")


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
    ledger: dict[str, Any],
) -> int:
    """Write the release atomically and return its ledger id."""
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
                        f"{name!r} already exists; pass overwrite=True or choose another output="
                    )
                _drop(con, name)
        run(con, _compile.write_output(names, spec, qualified(output)))
        if view:
            run(con, _compile.levels_view(spec, qualified(view), qualified(output)))
        run(con, render("ledger", ledger=ident(LEDGER_TABLE)))
        release_id = int(
            scalar(con, f"SELECT coalesce(max(release_id), 0) + 1 FROM {ident(LEDGER_TABLE)}")
        )
        acct: Accounting = ledger["accounting"]
        b = acct.budget
        run(
            con,
            f"INSERT INTO {ident(LEDGER_TABLE)} VALUES ($id, $created, $input, $output, $hier, "
            "$tree, $domain, $mech, $guarantee, $privacy, $rho, $eps, $delta, $conv, $given, "
            "$m, $distinct, "
            "$lnames, $lsens, $lrho, $lsigma, $seeded, $np, $version, $details)",
            {
                "id": release_id,
                "created": dt.datetime.now(dt.UTC).replace(tzinfo=None),
                "input": ledger["input_table"],
                "output": output,
                "hier": ledger["hierarchy"],
                "tree": ledger["tree"],
                "domain": ledger["domain_source"],
                "mech": ledger["mechanism"],
                "guarantee": ledger["guarantee"],
                "privacy": acct.privacy,
                "rho": b.rho if ledger["guarantee"] == "zCDP" else None,
                "eps": b.epsilon,
                "delta": b.delta,
                "conv": b.conversion,
                "given": b.given,
                "m": acct.contribution,
                "distinct": acct.distinct,
                "lnames": list(acct.level_names),
                "lsens": list(acct.level_sensitivity),
                "lrho": list(acct.level_rho),
                "lsigma": list(acct.level_sigma),
                "seeded": ledger["seeded"],
                "np": list(ledger["non_private"]),
                "version": __version__,
                "details": ledger["details"],
            },
        )
        run(con, "COMMIT")
    except BaseException:
        run(con, "ROLLBACK")
        raise
    finally:
        con.unregister(names.released)
    return release_id
