"""What a release made and spent, of any kind: :class:`Release` (a hierarchy or a lattice of
features) and :class:`CountOfCountsRelease` (count-of-counts histograms). Printing one gives a
readable summary; what is not private (times, facts about the input) is marked as such."""

from __future__ import annotations

import functools
import html
from dataclasses import dataclass, field
from typing import Any

import duckdb
import pyarrow as pa

from ._errors import Arg, SpecError
from ._frames import convert
from ._tables import html_table, text_table
from .core.accounting import Accounting, CountOfCountsAccounting, Guarantee
from .core.bounds import ErrorBounds, bound_text, bounds_note
from .core.coc import CocLevelStats
from .core.features import FeatureSpec
from .core.spec import TreeSpec
from .core.tree import LevelStats

__all__ = ["CountOfCountsRelease", "Release"]


@dataclass(frozen=True)
class Release:
    """What a release made and spent. Printing it gives a readable summary.

    Attributes:
        output: name of the private leaf table (non-zero cells; positive for InfTDA and CBDP), or
            None when the release was returned in memory only (``return_as=`` without
            ``output=``).
        levels_view: name of the view with every level (or, for a feature release, every
            feature: ``<output>_features``) as sums of the leaves (or None).
        release_id: the row of this release in the ledger table ``inftda_releases``.
        accounting: budget, (epsilon, delta), per-level sensitivity, rho and sigma.
        levels: per level: parents, noised cells, surviving cells, sigma (public) and
            seconds (NOT private).
        timings: seconds per stage (NOT private).
        seeded: True if noise came from a test seed (NOT a private release).
        non_private: reasons why this release is not private (empty for a private one).
        diagnostics: facts about the private input (NOT private).
        kind: the release kind: ``hierarchy``, ``features`` or ``count_of_counts``.
        error_bounds: per level, the error bound of every released count and the typical
            error, from public parameters only (:mod:`inftda_sql.core.bounds`); None for a
            release of another kind.
        data: the released table (hierarchy or leaf columns and ``count``, as written) in the
            form ``return_as`` asked for: a pandas or polars DataFrame or an Arrow table; None
            when it was only written. :meth:`to_arrow`, :meth:`to_pandas` and :meth:`to_polars`
            convert it.

    What is public and what is not: the released table, the budget and the per-level facts
    derived from released values may be shared. Times and diagnostics are for the data owner
    only: a level's time grows with the number of its true non-empty cells, which the release
    hides. :meth:`as_dict` keeps them under one key that says so, the printed summary marks the
    times, and the ledger keeps them in its diagnostics, which :func:`~inftda_sql.publish` and
    :func:`~inftda_sql.ledger` leave out.
    """

    output: str | None
    levels_view: str | None
    release_id: int
    input: str
    spec: TreeSpec | FeatureSpec
    mechanism: str
    accounting: Accounting
    levels: tuple[LevelStats, ...]
    total: int
    timings: dict[str, float] = field(default_factory=dict)
    seeded: bool = False
    non_private: tuple[str, ...] = ()
    guarantee: Guarantee = Guarantee.ZCDP
    mechanism_params: dict[str, Any] = field(default_factory=dict)
    diagnostics: dict[str, Any] = field(default_factory=dict)
    """Facts about the private input for the data owner only (e.g. rows dropped by the
    contribution bound). NOT differentially private: never publish them."""
    return_as: str | None = None
    released: pa.Table | None = field(default=None, repr=False, compare=False)
    """The released table as Arrow, when it was returned in memory (``return_as=``)."""
    kind: str = "hierarchy"
    """The release kind (:mod:`inftda_sql.kinds`): ``hierarchy``, ``features`` or
    ``count_of_counts`` (a :class:`CountOfCountsRelease`, with what that kind adds)."""
    error_bounds: ErrorBounds | None = None
    """Per level, the error bound of every released count and the typical error, from public
    parameters only (:mod:`inftda_sql.core.bounds`); None for a feature or count-of-counts
    release."""

    @property
    def is_private(self) -> bool:
        return not self.non_private

    @functools.cached_property
    def data(self) -> Any:
        """The released table in the form ``return_as`` asked for (converted once), or None."""
        if self.released is None or self.return_as is None:
            return None
        return convert(self.released, self.return_as)

    def to_arrow(self) -> pa.Table:
        """The released table as an Arrow table (``return_as=`` must have been given)."""
        if self.released is None:
            raise SpecError(
                "this release was written to ",
                repr(self.output),
                ", not returned in memory: read it with con.table(...).arrow(), or release with ",
                Arg("return_as", "arrow"),
                param="return_as",
            )
        return self.released

    def to_pandas(self) -> Any:
        """The released table as a pandas DataFrame (needs the ``pandas`` extra)."""
        if self.return_as == "pandas":
            return self.data
        return convert(self.to_arrow(), "pandas")

    def to_polars(self) -> Any:
        """The released table as a polars DataFrame (needs the ``polars`` extra)."""
        if self.return_as == "polars":
            return self.data
        return convert(self.to_arrow(), "polars")

    def relation(self, con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyRelation:
        """The released table as a DuckDB relation (the written table, or the one returned in
        memory)."""
        if self.output is None:
            return con.from_arrow(self.to_arrow())
        return con.table(self.output)

    def as_dict(self) -> dict[str, Any]:
        """The release as plain data; what is not private sits under the key
        :attr:`NOT_PRIVATE` (times and diagnostics), everything else may be shared."""
        return {
            "release_id": self.release_id,
            "input": self.input,
            "output": self.output,
            "returned_as": self.return_as,
            "levels_view": self.levels_view,
            "hierarchy": self.spec.as_dict(),
            "mechanism": self.mechanism,
            "guarantee": str(self.guarantee),
            "mechanism_params": dict(self.mechanism_params),
            "budget": self.accounting.as_dict(),
            "levels": self._public_levels(),
            "error_bounds": None if self.error_bounds is None else self.error_bounds.as_dict(),
            "total": self.total,
            "seeded": self.seeded,
            "non_private": list(self.non_private),
            self.NOT_PRIVATE: {
                "seconds_per_stage": {k: round(v, 4) for k, v in self.timings.items()},
                "seconds_per_level": [round(lv.seconds, 4) for lv in self.levels],
                "diagnostics": dict(self.diagnostics),
            },
        }

    def _public_levels(self) -> list[dict[str, object]]:
        """Per level, its public facts (never its seconds)."""
        return [lv.as_dict() for lv in self.levels]

    #: the key of :meth:`as_dict` that holds what must not be published
    NOT_PRIVATE = "not private (for the data owner only)"

    @property
    def _has_bounds(self) -> bool:
        """Whether the summary has an error-bound column (a mechanism with an error analysis)."""
        return self.error_bounds is not None and self.error_bounds.analysis is not None

    def _level_rows(self) -> list[tuple[str, ...]]:
        rows: list[tuple[str, ...]] = [
            (
                str(lv.level),
                lv.name,
                f"{lv.sigma:.3g}",
                *((bound_text(self.error_bounds, lv.name),) if self._has_bounds else ()),
                f"{lv.parents:,}",
                f"{lv.noised_cells:,}",
                f"{lv.surviving_cells:,}",
                f"{lv.seconds:.2f}",
            )
            for lv in self.levels
        ]
        if self.kind == "features":  # features have no parents: no such column
            return [row[:3] + row[4:] for row in rows]
        return rows

    _HEADER = ("level", "cells of", "sigma", "parents", "noised", "kept", "s*")
    _FEATURE_HEADER = ("query", "name", "noise sd", "noised", "kept", "s*")

    @property
    def _header(self) -> tuple[str, ...]:
        if self.kind == "features":
            return self._FEATURE_HEADER
        if self._has_bounds:
            return (*self._HEADER[:3], "error bound", *self._HEADER[3:])
        return self._HEADER

    def _shape(self) -> str:
        if isinstance(self.spec, FeatureSpec):  # a features release holds a FeatureSpec
            return f"{len(self.spec.features)} features, {self.spec.structure} structure"
        return f"{self.spec.tree} tree"

    def _budget_line(self) -> str:
        line = Guarantee(self.guarantee).budget_line(self.accounting.budget, self.mechanism_params)
        return f"budget: {line}; released total {self.total:,}"

    def __str__(self) -> str:
        warn = ""
        if self.non_private:
            warn = "NOT PRIVATE: " + "; ".join(self.non_private) + "\n"
        lines = [
            f"{warn}release #{self.release_id}: {self.input} -> "
            f"{self.output if self.output is not None else f'(in memory, {self.return_as})'} "
            f"({self.mechanism}, {self._shape()}, {self.accounting.privacy} DP)",
            self._budget_line(),
        ]
        lines += text_table(self._header, self._level_rows(), left=1)
        lines += bounds_note(self.error_bounds)
        if self.levels_view and self.kind == "features":
            lines.append(
                f"every feature: SELECT * FROM {self.levels_view} WHERE feature = '<name>'"
            )
        elif self.levels_view:
            lines.append(f"every level: SELECT * FROM {self.levels_view} WHERE level = <n>")
        lines.append(self._timing_note())
        return "\n".join(lines)

    def __repr__(self) -> str:
        """One line of what may be shared; the times and the diagnostics about the input (NOT
        private) are left out, and it says where they are (:meth:`as_dict`)."""
        warn = f"NOT PRIVATE: {'; '.join(self.non_private)}; " if self.non_private else ""
        out = self.output if self.output is not None else f"(in memory, {self.return_as})"
        return (
            f"<Release #{self.release_id}: {warn}{self.input} -> {out} ({self.mechanism}, "
            f"{self._shape()}, {self.accounting.privacy} DP); {self._budget_line()}; "
            f"{len(self.levels)} levels; times and diagnostics left out (not private, for the "
            f"data owner only: as_dict()[{self.NOT_PRIVATE!r}])>"
        )

    def _timing_note(self) -> str:
        return (
            f"* seconds ({sum(self.timings.values()):.2f} s in all) depend on the private data: "
            "for the data owner only, never published"
        )

    def _repr_html_(self) -> str:
        warn = ""
        if self.non_private:
            warn = f"<p><b>NOT PRIVATE</b>: {html.escape('; '.join(self.non_private))}</p>"
        summary = html.escape(str(self).splitlines()[int(bool(self.non_private))])
        table = html_table(self._header, self._level_rows(), before=f"{warn}<p>{summary}</p>")
        return f"{table}<p>{html.escape(self._timing_note())}</p>"


@dataclass(frozen=True, kw_only=True)
class CountOfCountsRelease(Release):
    """A count-of-counts release: a :class:`Release` of kind ``count_of_counts``, with what the
    kind adds. Printing it gives a summary.

    Attributes:
        output: the released table (region columns, ``size``, ``groups``; leaf rows > 0).
        levels_view: the view with every level (sums of the leaves), or None.
        release_id: its row in the ledger ``inftda_releases``.
        accounting: epsilon, per-level epsilon and discrete Laplace scale (pure epsilon-DP:
            a :class:`~inftda_sql.core.accounting.CountOfCountsAccounting`).
        hierarchy: the region columns, coarse to fine.
        method, consistency, merge: the estimator, how levels are made consistent, how.
        max_size: the largest size released (given, or estimated privately).
        max_size_estimated: whether ``max_size`` was estimated (with a share of epsilon).
        levels: per level: nodes, noised entries, scale, runs of groups kept (and seconds,
            NOT private).
        total: the number of groups released (the public groups table's total).
        timings: seconds per stage (for the data owner; not recorded publicly).
        non_private: why this release is not private (empty for a private one).
    """

    # its accounting and levels are the kind's own (pure epsilon-DP per level, histograms of
    # nodes): what a Release reads of them (as_dict, the summary) is overridden below
    accounting: CountOfCountsAccounting  # type: ignore[assignment]
    levels: tuple[CocLevelStats, ...]  # type: ignore[assignment]
    hierarchy: tuple[str, ...]
    method: str
    consistency: str
    merge: str
    max_size: int
    max_size_estimated: bool
    guarantee: Guarantee = Guarantee.PURE_DP
    kind: str = "count_of_counts"

    def _public_levels(self) -> list[dict[str, object]]:
        return [{k: v for k, v in lv.as_dict().items() if k != "seconds"} for lv in self.levels]

    @property
    def _header(self) -> tuple[str, ...]:
        return ("level", "nodes of", "scale", "nodes", "noised", "runs", "s*")

    def _level_rows(self) -> list[tuple[str, ...]]:
        return [
            (
                str(lv.level),
                lv.name,
                f"{lv.scale:.4g}",
                f"{lv.nodes:,}",
                f"{lv.noised_entries:,}",
                f"{lv.runs:,}",
                f"{lv.seconds:.2f}",
            )
            for lv in self.levels
        ]

    def __str__(self) -> str:
        warn = f"NOT PRIVATE: {'; '.join(self.non_private)}\n" if self.non_private else ""
        acct = self.accounting
        how = "estimated privately" if self.max_size_estimated else "given"
        lines = [
            f"{warn}release #{self.release_id}: {self.input} -> {self.output} (count of counts, "
            f"{self.method}, {self.consistency}"
            + (f", {self.merge} merge" if self.consistency == "topdown" else "")
            + ")",
            f"budget: epsilon={acct.epsilon:.6g} pure DP (counts as rho={acct.rho:.6g}); "
            f"max_size {self.max_size:,} ({how}); {sum(self.timings.values()):.2f} s*",
        ]
        lines += text_table(self._header, self._level_rows(), left=1)
        if self.levels_view:
            lines.append(f"every level: SELECT * FROM {self.levels_view} WHERE level = <n>")
        lines.append(
            "* seconds depend on the private data: for the data owner only, never published"
        )
        return "\n".join(lines)

    def __repr__(self) -> str:
        """One line of what may be shared; the times (NOT private) are left out."""
        warn = f"NOT PRIVATE: {'; '.join(self.non_private)}; " if self.non_private else ""
        how = "estimated privately" if self.max_size_estimated else "given"
        return (
            f"<CountOfCountsRelease #{self.release_id}: {warn}{self.input} -> {self.output} "
            f"({self.method}, {self.consistency}); epsilon={self.accounting.epsilon:.6g} pure "
            f"DP; max_size {self.max_size:,} ({how}); {len(self.levels)} levels; times left out "
            "(not private, for the data owner only)>"
        )
