"""The outputs of a release on DuckDB checked before any work: not what the release reads, not
a name the library owns, not a table under a privacy budget; replaced only with ``overwrite``.
Every release kind calls :func:`check_targets` (hierarchy, features, count-of-counts)."""

from __future__ import annotations

from collections.abc import Sequence

import duckdb

from ..._errors import Arg, SpecError
from ..checks import check_not_read, check_not_reserved, check_output_free
from .catalog import Source, TableRef, Target, home_database, reads_view
from .ledger import LIBRARY_TABLES, is_library_name, stored_budgets

__all__ = ["check_targets"]


def check_targets(
    con: duckdb.DuckDBPyConnection,
    named: Sequence[tuple[Source, str]],
    targets: Sequence[Target | None],
    *,
    overwrite: bool,
) -> None:
    """The outputs (``targets``) must not be one of the ``named`` sources (with their roles), a
    table they read (or a view they read), or a name the library owns; an existing one needs
    ``overwrite``, and one that holds a privacy budget (private data under accounting) is never
    replaced, even with ``overwrite``. Used by every kind of release."""
    protected: list[tuple[TableRef, str]] = []
    budgets: set[str] | None = None
    for src, role in named:
        if src.resolved.ref is not None:
            protected.append((src.resolved.ref, role))
        protected += [(t, f"a table {role} reads") for t in src.resolved.reads]
    for target in targets:
        if target is None:
            continue
        check_not_reserved(target.spelling, is_library_name(target.ref.name), LIBRARY_TABLES)
        check_not_read(
            target.spelling,
            target.ref.folded,
            [(ref.folded, str(ref), role) for ref, role in protected],
        )
        if target.existing == "table":
            if budgets is None:
                budgets = set(stored_budgets(con))
            if target.ref.key(home_database(con)).lower() in budgets:
                raise SpecError(
                    f"{target.spelling!r} ({target.ref}) has a privacy budget (set_budget): it "
                    "holds private data, and a release never replaces it, even with overwrite; "
                    "choose another ",
                    Arg("output"),
                    param="output",
                )
        check_output_free(target.spelling, target.existing is not None, overwrite)
        if target.existing == "view" and reads_view(con, target.ref, [src.sql for src, _ in named]):
            raise SpecError(
                f"{target.spelling!r} is a view that the input or a domain reads; replacing "
                "it would change what they read: choose another ",
                Arg("output"),
                param="output",
            )
