"""The engine interface: what a release asks of the place its data lives."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import pyarrow as pa

from ..core.arrays import I64
from ..core.coc import CocLevel, Histograms
from ..core.features import Lattice
from ..core.tree import ChainTree, LevelStats
from ..mechanisms import Mechanism, MechanismContext
from ..mechanisms.base import FeatureResult
from .records import ReleaseRecord

__all__ = ["CountOfCountsEngine", "Engine", "FeatureEngine", "ReleaseEngine", "Scan"]

#: what an engine's mechanism stage returns and its write stage stores (a
#: :class:`~inftda_sql.core.tree.TopDownResult` on DuckDB, a distributed table on Spark)
R = TypeVar("R")


@dataclass(frozen=True)
class Scan:
    """What the scan of the private input found: private facts, never published.

    ``total`` is the true number of (kept) records N; ``diagnostics`` are facts for the data
    owner only (rows dropped by contribution bounding); ``privacy_unit`` is the column (as the
    catalog spells it) whose records per unit the scan bounded, None when every row was taken
    as its own unit (the bound assumed, not enforced).
    """

    total: int
    diagnostics: Mapping[str, Any] = field(default_factory=dict)
    privacy_unit: str | None = None


class Engine(Protocol[R]):
    """One release's stages on one engine, in the order the pipeline calls them.

    Every check that can fail runs before the scan; nothing is written before :meth:`write`,
    which writes the output and its ledger row atomically; :meth:`close` drops whatever the
    release created on the way, whether it succeeded or not.

    A hierarchy release calls resolve, code_domains, scan, level_counts (per level),
    run_mechanism, released and write. The other release kinds (:mod:`inftda_sql.kinds`) ask
    for their own stages (:class:`FeatureEngine`, :class:`CountOfCountsEngine`); an engine that
    runs every kind implements :class:`ReleaseEngine`.
    """

    @property
    def domain_description(self) -> str:
        """Where the public domain came from, for the ledger."""
        ...

    @property
    def input_description(self) -> str:
        """The input as the ledger names it (a file by its resolved path)."""
        ...

    def prepare(self) -> str | None:
        """Resolve the input, the domain and the output in the catalog; refuse an output that
        would destroy what the release reads; check the budget of every base table the input
        reads. Return the note to record when an override lets an exceeding release through."""
        ...

    def resolve(self) -> None:
        """Check the columns of the input and the domain (names, types)."""
        ...

    def code_domains(self) -> list[ChainTree]:
        """The public domain of every chain as code ranges (nothing private is read)."""
        ...

    def scan(self) -> Scan:
        """Scan the private input once: bound contributions, count leaf cells, validate."""
        ...

    def level_counts(self, level: int, strides: tuple[int, ...]) -> tuple[I64, I64]:
        """The true non-zero counts of one level: sorted mixed-radix keys and counts >= 1.

        Cells with true count 0 (every record dropped by the contribution bound, explicit zero
        rows of a ``count=`` input) are left out: a mechanism that noises the positive cells
        only would otherwise release them. The checks of the input still see every row.
        """
        ...

    def run_mechanism(self, mechanism: Mechanism, ctx: MechanismContext) -> R:
        """Run the mechanism on this engine's true counts: ``mechanism.run(ctx)`` on the
        driver, or, for a TopDown mechanism (``mechanism.topdown_step``), the same pass in the
        engine's own tasks, the released leaves staying with the engine until :meth:`write`."""
        ...

    def released(self, result: R) -> tuple[tuple[LevelStats, ...], int]:
        """The per-level statistics of a result and its released total (public values)."""
        ...

    def released_table(self, result: R) -> pa.Table:
        """The released leaf cells in memory (``return_as=``), as the written table holds them."""
        ...

    def write(self, result: R, record: ReleaseRecord) -> ReleaseRecord:
        """Check the budget again, write the released cells and the ledger row atomically (one
        transaction where the engine has them; else the output first, the ledger row after it is
        complete); return the ledger row as written, with its release id."""
        ...

    def close(self) -> None:
        """Drop the release's temporary objects."""
        ...


class FeatureEngine(Engine[Any], Protocol):
    """An engine that also releases features (CBDP): resolve_features, code_lattice,
    feature_counts (one scan that counts every query) and write_features."""

    def resolve_features(self) -> None:
        """Resolve the input and every domain table; check the input holds the leaf."""
        ...

    def code_lattice(self) -> Lattice:
        """The features coded on the public domain (nothing private is read)."""
        ...

    def feature_counts(self, lattice: Lattice) -> tuple[Scan, list[I64]]:
        """One scan of the private input: the true counts of every query (zeros included)."""
        ...

    def write_features(
        self, lattice: Lattice, result: FeatureResult, record: ReleaseRecord
    ) -> ReleaseRecord:
        """Write the released leaves, the features view and the ledger row atomically; return
        the ledger row as written."""
        ...


class CountOfCountsEngine(Protocol):
    """An engine that releases count-of-counts histograms: the same stages, its own data.

    prepare_count_of_counts (names resolved, outputs checked, budget), resolve_groups (the
    columns of the input and of the PUBLIC groups table), code_groups (the groups table coded
    as the hierarchy's domain), coc_counts (one pass over the private input: group sizes, then
    per node and size the number of groups) and write_count_of_counts (output, levels view and
    ledger row atomically); close drops what the release made.
    """

    @property
    def groups_description(self) -> str:
        """The groups table as the ledger names it."""
        ...

    def prepare_count_of_counts(self) -> str | None:
        """Resolve the input, the groups table and the outputs in the catalog, refuse outputs
        that would destroy what the release reads, check the budget of every base table the
        input reads; return the note an override records."""
        ...

    def resolve_groups(self) -> None:
        """Check the columns of the input (group, regions) and of the groups table."""
        ...

    def code_groups(self) -> tuple[ChainTree, I64]:
        """The groups table coded as the public domain, and its number of groups per leaf."""
        ...

    def coc_counts(self, max_size: int | None) -> tuple[list[CocLevel], int]:
        """The true histograms of every level (root first; sizes above ``max_size`` counted
        at it when given) and the largest group size: private, never published."""
        ...

    def write_count_of_counts(self, leaves: Histograms, record: ReleaseRecord) -> ReleaseRecord:
        """Check the budget again, write the leaf histograms, their levels view and the ledger
        row atomically; return the ledger row as written."""
        ...

    def close(self) -> None:
        """Drop the release's temporary objects."""
        ...


class ReleaseEngine(FeatureEngine, CountOfCountsEngine, Protocol):
    """An engine that runs every release kind (DuckDB's): the stages of a hierarchy, of a
    lattice of features (and its released table read back for ``return_as=``) and of
    count-of-counts. The Spark engine implements :class:`Engine` (the hierarchy) so far."""

    def released_features(self, lattice: Lattice) -> pa.Table:
        """The released leaf table of a feature release as written (after
        :meth:`~FeatureEngine.write_features`), for ``return_as=``."""
        ...
