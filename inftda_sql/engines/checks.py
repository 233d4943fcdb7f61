"""Checks every engine makes alike, on what it fetched (Arrow) or counted: engine-neutral, so an
error reads the same on DuckDB and on Spark."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from .._errors import DomainError
from ..core.intopt import VALUE_LIMIT

__all__ = ["COUNT_LIMIT", "check_domain_paths", "empty_domain", "too_large"]

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
