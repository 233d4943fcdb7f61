"""Checks of the private input (``sql/checks.sql``), made before any noise."""

from __future__ import annotations

from collections.abc import Sequence

from ..sql import ident, render
from ._common import TempNames, _cols
from .release import depth_code


def leaf_stats(names: TempNames, leaf_cols: Sequence[str], limit: int, *, counted: bool) -> str:
    """The count column's NULL, negative, non-whole and beyond-int64 rows (zeros unless the
    scan ``counted`` them: :func:`~.release.count_checks`), the leaf cells whose count exceeds
    ``limit``, then the NULL rows of every leaf column ``leaf_cols``."""
    nulls = "".join(f",\n       count(*) FILTER ({ident(c)} IS NULL)" for c in leaf_cols)
    checks = "0, 0, 0, 0"
    if counted:
        checks = ", ".join(f"coalesce(sum(__{n}), 0)" for n in ("nulls", "neg", "frac", "big"))
    return render(
        "checks.leaf_stats",
        count_checks=checks,
        null_counts=nulls,
        leaf=ident(names.leaf),
        limit=str(int(limit)),
    )


def nan_leaves(names: TempNames, nan_cols: Sequence[str]) -> str:
    """The leaf cells whose value is NaN, per floating-point leaf column ``nan_cols``."""
    checks = ", ".join(f"count(*) FILTER (isnan({ident(c)}))" for c in nan_cols)
    return render("checks.nan_leaves", checks=checks, leaf=ident(names.leaf))


def offending_rows(input_sql: str, condition: str) -> str:
    """The rows of the input for which ``condition`` holds (shown to the data owner as the
    query to run; never executed by a release)."""
    return render("checks.offending_rows", input=input_sql, condition=condition).strip()


def unit_nulls(input_sql: str, unit: str) -> str:
    """Rows whose privacy unit is NULL."""
    return render("checks.unit_nulls", input=input_sql, unit=ident(unit))


def missing_leaf(
    names: TempNames, chain_index: int, chain: Sequence[str], codes: str | None = None
) -> str:
    """A leaf value of the input the domain does not list, and how many there are."""
    return render(
        "checks.missing_leaf",
        leaf_col=ident(chain[-1]),
        leaf=ident(names.leaf),
        codes=codes or ident(names.codes(chain_index)),
    )


def leaf_of_code(
    names: TempNames, chain_index: int, chain: Sequence[str], codes: str | None = None
) -> str:
    """The leaf value of chain ``chain_index`` whose code is the bound ``$code``."""
    return render(
        "checks.leaf_of_code",
        leaf_col=ident(chain[-1]),
        codes=codes or ident(names.codes(chain_index)),
        code=depth_code(len(chain)),
    )


def row_count(input_sql: str) -> str:
    """Rows of the input."""
    return render("checks.row_count", input=input_sql)


def distinct_paths(chain: Sequence[str], input_sql: str) -> str:
    """The distinct paths of a chain in the input (the domain from the data: NOT private)."""
    return render("checks.distinct_paths", cols=_cols(chain), input=input_sql)
