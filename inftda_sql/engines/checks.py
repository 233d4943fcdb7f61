"""Checks every engine makes alike, on what it fetched (Arrow), counted or resolved in its
catalog: engine-neutral, so an error reads the same on DuckDB and on Spark.

The checks on names take what each engine resolved: the base tables (and files) a source reads,
as the engine's catalog spells them, and the identity of an output, so the rule is written once
and the engines only say what their catalog holds."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from .._errors import Arg, DomainError, OutputExistsError, SpecError
from ..core.intopt import VALUE_LIMIT

__all__ = [
    "COUNT_LIMIT",
    "check_domain_not_input",
    "check_domain_paths",
    "check_not_read",
    "check_not_reserved",
    "check_output_free",
    "empty_domain",
    "too_large",
]

#: The largest count a release handles: IntOpt's exact 64-bit arithmetic takes values and
#: totals up to 2**60 (about 1.15e18).
COUNT_LIMIT = VALUE_LIMIT


def too_large(count: str | None) -> str:
    """What to say when the counts (or the records) add up to more than :data:`COUNT_LIMIT`."""
    what = f"the counts of {count!r}" if count else "the number of records"
    return (
        f"{what} must add up to at most 2**60 (about 1.15e18) for exact integer arithmetic; "
        "count in larger units (e.g. thousands) or split the input"
    )


def empty_domain(role: str, chain: Sequence[str]) -> DomainError:
    """The error for a public domain (``role``) that lists no path of ``chain``."""
    return DomainError(f"the {role} is empty; it must list every valid path of {', '.join(chain)}")


def check_domain_paths(paths: pa.Table, role: str, chain: Sequence[str]) -> None:
    """A domain's fetched paths (one column per chain level) must list at least one path, and
    every path must be complete: no NULL, no NaN (which equals no value)."""
    if paths.num_rows == 0:
        raise empty_domain(role, chain)
    for col, values in zip(chain, paths.columns, strict=True):
        if values.null_count:
            raise DomainError(
                f"the {role} has {values.null_count} row(s) with NULL in {col!r}; every listed "
                "path must be complete"
            )
        if pa.types.is_floating(values.type):
            n_nan = pc.sum(pc.is_nan(values)).as_py() or 0
            if n_nan:
                raise DomainError(
                    f"the {role} has {n_nan} row(s) with NaN in {col!r}; NaN is not a category "
                    "(it equals no value, so it cannot be counted once): drop or label those rows"
                )


def check_domain_not_input(
    input_reads: Iterable[str], domains: Iterable[tuple[str, str, Sequence[str]]]
) -> None:
    """Refuse a domain that reads what the input reads (a base table or a file, any spelling
    case): its categories would come from the private data while the release is recorded as
    private. ``domains`` are (role, description, what it reads) triples.

    Example:
        >>> check_domain_not_input(["main.trips"], [("domain", "view 'g'", ["main.geo"])])
        >>> try:
        ...     check_domain_not_input(["main.trips"], [("domain", "view 'g'", ["MAIN.TRIPS"])])
        ... except DomainError as exc:
        ...     print(str(exc).split(":")[0])
        the domain (view 'g') reads MAIN.TRIPS, which the input reads too
    """
    private = {k.lower() for k in input_reads}
    for role, description, reads in domains:
        shared = [k for k in reads if k.lower() in private]
        if shared:
            raise DomainError(
                f"the {role} ({description}) reads {shared[0]}, which the input reads too: its "
                "categories would come from the private data. Pass the PUBLIC geography, or ",
                Arg("domain_from_data", True),
                " (recorded as not private)",
                param="domain",
            )


def check_not_reserved(spelling: str, reserved: bool, tables: Sequence[str]) -> None:
    """Refuse an output named as a table the package keeps for its own bookkeeping (``tables``)
    or as its temporary objects (``reserved`` says whether ``spelling`` is either)."""
    if reserved:
        raise SpecError(
            f"{spelling!r} is a name inftda_sql keeps for its own bookkeeping "
            f"({', '.join(tables)} and names starting with __inftda); choose another ",
            Arg("output"),
            param="output",
        )


def check_not_read(
    spelling: str, target: Hashable, protected: Iterable[tuple[Hashable, str, str]]
) -> None:
    """Refuse an output (``target``: its identity in the engine's catalog) that is something a
    release reads: ``protected`` holds (identity, how it is shown, its role) of the input, the
    domains and the tables and views they read."""
    for ref, shown, role in protected:
        if ref == target:
            raise SpecError(
                f"{spelling!r} is {role} ({shown}); writing the release there would destroy "
                "what it reads: choose another ",
                Arg("output"),
                param="output",
            )


def check_output_free(spelling: str, exists: bool, overwrite: bool) -> None:
    """An output that exists is replaced only with ``overwrite=True``."""
    if exists and not overwrite:
        raise OutputExistsError(
            f"{spelling!r} already exists; pass ",
            Arg("overwrite", True),
            " to replace it or choose another ",
            Arg("output"),
            " name",
            param="output",
        )
