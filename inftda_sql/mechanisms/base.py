"""What a mechanism is and what it receives.

Two kinds, by what they release:

* A :class:`Mechanism` releases a **hierarchy** (``hierarchy=``): one frozen object with its
  name, the guarantee it gives, which levels it noises, what it needs before any work (a kind of
  budget, an optional extra) and its ``run``. Every such mechanism receives the same
  :class:`MechanismContext` (the validated spec, the public domain as code ranges, a way to read
  the true counts of any level, the accounting and the random source) and returns a
  :class:`~inftda_sql.core.tree.TopDownResult`.
* A :class:`FeatureMechanism` releases a **lattice of features** (``features=``, CBDP): it
  receives a :class:`FeatureContext` (the features coded on the public domain, the true counts
  of every query, the accounting, the random source) and returns a :class:`FeatureResult`.

The pipeline dispatches on the kind (``isinstance``), never on a name. The accounting module
decides sensitivities and noise scales; a mechanism only says which queries it pays noise for.
Mechanisms are engine-free: they never see a database, only numpy arrays.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np

from .._errors import Arg, InternalError, SpecError
from ..core.accounting import Accounting, Budget, Guarantee, account, account_features
from ..core.arrays import I64
from ..core.bounds import Analysis
from ..core.features import FeatureSpec, Lattice
from ..core.rng import RandomSource
from ..core.spec import TreeSpec
from ..core.topdown import Measure, Optimizer, topdown
from ..core.tree import ChainTree, LevelStats, TopDownResult, determined_levels

__all__ = [
    "DEFAULT_MAX_CELLS",
    "FeatureContext",
    "FeatureMechanism",
    "FeatureResult",
    "Guarantee",
    "Mechanism",
    "MechanismContext",
    "level_cells",
    "level_sizes",
]


#: mechanisms that materialise every cell of the full domain refuse above this many cells
DEFAULT_MAX_CELLS = 50_000_000

TrueLevel = Callable[[int, tuple[int, ...]], tuple[I64, I64]]
"""``(level, strides) -> (sorted keys, counts)``: the true non-zero counts of a level."""


class _NonZeroCounts:
    """An engine's ``level_counts``, checked on every call: strictly increasing keys and counts
    >= 1 only. Mechanisms that noise the *positive* cells only (the Stability Histogram) are
    private only if a cell holding none of the true records (every record dropped by the
    contribution bound, an explicit zero row of a ``count=`` input) never reaches them, so an
    engine that breaks the contract is a bug, refused before any noise is drawn."""

    def __init__(self, engine_counts: TrueLevel) -> None:
        self.engine_counts = engine_counts

    def __call__(self, level: int, strides: tuple[int, ...]) -> tuple[I64, I64]:
        keys, counts = self.engine_counts(level, strides)
        if keys.shape != counts.shape or keys.ndim != 1:
            raise InternalError(
                f"the engine gave {keys.shape} keys but {counts.shape} counts for level {level}; "
                "this is a bug, please report it"
            )
        if counts.size and int(counts.min()) < 1:
            raise InternalError(
                f"the engine gave {int(np.count_nonzero(counts < 1))} cell(s) of level {level} "
                "with a true count below 1; level counts must be the non-zero cells only (a "
                "mechanism noising positive cells would release them): this is a bug, please "
                "report it"
            )
        if keys.size > 1 and not bool((keys[1:] > keys[:-1]).all()):
            raise InternalError(
                f"the engine gave the keys of level {level} unsorted or repeated; this is a bug, "
                "please report it"
            )
        return keys, counts


@dataclass(frozen=True)
class MechanismContext:
    """Everything a mechanism may use. Nothing in it but ``true_level``/``total`` is private."""

    spec: TreeSpec
    chains: Sequence[ChainTree]
    true_level: TrueLevel
    """``(level, strides) -> (sorted keys, counts)``: true non-zero counts of a level (>= 1).
    Whatever the engine passes is wrapped so that every call checks this (an InternalError
    otherwise): no mechanism ever sees a cell with true count 0."""
    total: int
    accounting: Accounting
    source: RandomSource
    progress: Callable[[LevelStats], None] | None = None
    max_cells: int = DEFAULT_MAX_CELLS
    threads: int = 2
    measure: Measure | None = None
    """Sees every noisy value a TopDown pass draws, before post-processing (``measurements=``);
    only mechanisms with a ``topdown_step`` take it."""

    def __post_init__(self) -> None:
        if not isinstance(self.true_level, _NonZeroCounts):
            object.__setattr__(self, "true_level", _NonZeroCounts(self.true_level))
        # A level the accounting spends nothing on must be one the public domain determines
        # (one child per parent): otherwise its true counts would be released without noise.
        public = determined_levels(self.spec, [ch.sizes for ch in self.chains])
        names = [self.spec.level_name(lv) for lv in range(1, self.spec.n_levels + 1)]
        acct = self.accounting
        for name, det in zip(acct.level_names, acct.level_determined, strict=True):
            if det and (name not in names or not public[names.index(name)]):
                raise InternalError(
                    f"the accounting spends no budget on level {name!r}, which the public "
                    "domain does not determine (a parent has several children); this is a bug, "
                    "please report it"
                )

    @property
    def tree_sigmas(self) -> list[float]:
        """Sigma of every level of the tree, root first (0 where a level is not noised)."""
        acct = self.accounting
        if acct.level_names and acct.level_names[0] == "root":
            return list(acct.level_sigma)
        return [0.0, *acct.level_sigma]

    @property
    def tree_determined(self) -> list[bool]:
        """Per level of the tree, root first: determined by its parents, hence not measured
        (the accounting's flags; only for mechanisms that noise the whole tree)."""
        acct = self.accounting
        if acct.level_names and acct.level_names[0] == "root":
            return list(acct.level_determined)
        return [False, *acct.level_determined]

    def topdown(self, optimizer: Optimizer | None = None) -> TopDownResult:
        """The TopDown pass over this context with ``optimizer`` per level (IntOpt if None)."""
        return topdown(
            self.spec,
            self.chains,
            self.true_level,
            self.tree_sigmas,
            self.total,
            source=self.source,
            optimizer=optimizer,
            progress=self.progress,
            threads=self.threads,
            measure=self.measure,
        )


def level_sizes(spec: TreeSpec, chains: Sequence[ChainTree], level: int) -> tuple[int, ...]:
    """Nodes of every chain at ``level``'s depth."""
    return tuple(ch.sizes[d] for ch, d in zip(chains, spec.levels[level], strict=True))


def level_cells(spec: TreeSpec, chains: Sequence[ChainTree], level: int) -> int:
    """Cells of ``level`` in the full domain (a Python int: never overflows)."""
    return math.prod(level_sizes(spec, chains, level))


@dataclass(frozen=True)
class Mechanism:
    """One mechanism a release can run.

    Attributes:
        name: the ``mechanism=`` value that selects it.
        summary: one line: what it releases (shown in help texts).
        run: the mechanism itself, ``MechanismContext -> TopDownResult``.
        guarantee: :attr:`Guarantee.ZCDP` or :attr:`Guarantee.APPROX_DP` (recorded in the
            ledger; only zCDP composes in rho against a stored budget; the strings ``"zCDP"``,
            ``"approxDP"`` are accepted).
        noises: ``"tree"`` (every level below the root; the root count is released by the
            mechanism itself) or ``"leaves"`` (the leaf level only; coarser levels are sums of
            released leaves, so no budget is spent on a root).
        full_domain: ``"leaves"`` or ``"tree"`` if the mechanism materialises every cell of the
            full domain (its leaf level, or every level), which ``max_cells`` bounds.
        requires: a check before any work (a kind of budget, an optional extra installed).
        parameters: mechanism parameters derived from the accounting, recorded in the ledger.
        topdown_step: for a TopDown mechanism (``run`` is ``ctx.topdown(topdown_step)``), its
            per-level step ``(noisy children, parent values, offsets) -> released children``. An
            engine that runs the TopDown pass in its own tasks (Spark: blocks of parents) runs
            this step there instead of ``run``; None: the mechanism runs through ``run`` on the
            true counts of whole levels.
        error_analysis: which argument bounds its error from public parameters
            (:data:`~inftda_sql.core.bounds.Analysis`: ``"linf"``, ``"l2_rounded"``,
            ``"leaf_sums"``), or None when its analysis gives no bound (the levels view then
            shows NULL bounds).
    """

    name: str
    summary: str
    run: Callable[[MechanismContext], TopDownResult]
    guarantee: Guarantee = Guarantee.ZCDP
    noises: Literal["tree", "leaves"] = "tree"
    full_domain: Literal["leaves", "tree"] | None = None
    requires: Callable[[Budget], None] | None = None
    parameters: Callable[[Accounting], dict[str, Any]] | None = None
    topdown_step: Optimizer | None = None
    error_analysis: Analysis | None = None

    #: a tree mechanism takes zCDP (or (epsilon, delta)) budgets, never a pure epsilon
    pure_budget = False
    #: the release kind (:mod:`inftda_sql.kinds`) that runs it: a hierarchy
    kind: ClassVar[str] = "hierarchy"

    def guarantee_for(self, budget: Budget) -> Guarantee:
        """The guarantee of a release with ``budget`` (the mechanism's own, for a tree)."""
        return Guarantee(self.guarantee)

    @property
    def releases_root(self) -> bool:
        """Whether the mechanism releases the root count by itself (and may pay for it)."""
        return self.noises == "tree"

    def check(self, budget: Budget) -> None:
        """Refuse, before any work, a budget or installation this mechanism cannot run with."""
        if self.requires is not None:
            self.requires(budget)

    def noised_levels(self, spec: TreeSpec) -> list[str]:
        """Names of the levels below the root whose noise this mechanism pays for."""
        levels = [spec.level_name(lv) for lv in range(1, spec.n_levels + 1)]
        return levels if self.noises == "tree" else levels[-1:]

    def account(
        self,
        budget: Budget,
        spec: TreeSpec,
        *,
        privacy: str = "bounded",
        contribution: int = 1,
        distinct: bool = False,
        split: Sequence[float] | None = None,
        chains: Sequence[ChainTree] | None = None,
    ) -> Accounting:
        """The accounting of this mechanism on ``spec`` (see :func:`~.core.accounting.account`).

        With the public domain's ``chains``, a mechanism that noises the whole tree spends
        nothing on the levels they determine (:func:`~.core.tree.determined_levels`) and gives
        their share to the other levels. A leaves-only mechanism measures its leaves whatever
        the domain: they are its only measurement.
        """
        determined = None
        if chains is not None and self.noises == "tree":
            determined = list(determined_levels(spec, [ch.sizes for ch in chains]))
        return account(
            budget,
            self.noised_levels(spec),
            privacy=privacy,
            contribution=contribution,
            distinct=distinct,
            split=split,
            noise_root=None if self.releases_root else False,
            determined=determined,
        )

    def full_domain_cells(
        self, spec: TreeSpec, chains: Sequence[ChainTree], max_cells: int
    ) -> list[int]:
        """Cells per level of the full domain; a SpecError if this mechanism would exceed
        ``max_cells`` (leaf cells, or all nodes for a whole-tree mechanism)."""
        cells = [level_cells(spec, chains, lv) for lv in range(spec.n_levels + 1)]
        if self.full_domain == "tree":
            n, what = sum(cells), "nodes (all levels of the full domain tree)"
        else:
            n, what = cells[-1], "leaf cells (the full domain)"
        if self.full_domain is not None and n > max_cells:
            raise SpecError(
                f"mechanism {self.name!r} noises every cell of the full domain: {n:,} {what} "
                "exceed ",
                Arg("max_cells", max_cells, ","),
                "; raise ",
                Arg("max_cells"),
                " or use ",
                Arg("mechanism", "inftda"),
                param="max_cells",
            )
        return cells


# ---------------------------------------------------------------------------------------------
# feature mechanisms (CBDP)


@dataclass(frozen=True)
class FeatureContext:
    """Everything a feature mechanism may use. Only ``true_counts`` and ``total`` are private.

    Attributes:
        lattice: the queries coded on the PUBLIC domain (cells, maps leaf -> cell).
        true_counts: per query, the true count of every one of its cells (zeros included).
        total: the true number of records N.
        accounting: per noised query its sensitivity, budget and noise scale.
        source: the random source (the CSPRNG unless a test seed was given).
    """

    lattice: Lattice
    true_counts: Sequence[I64]
    total: int
    accounting: Accounting
    source: RandomSource
    progress: Callable[[LevelStats], None] | None = None
    max_cells: int = DEFAULT_MAX_CELLS


@dataclass(frozen=True)
class FeatureResult:
    """The released leaf cells (positive counts only) and what each query did.

    ``leaves`` are leaf codes of the lattice; ``levels`` has one entry per query (noised cells,
    released non-zero cells, noise standard deviation); ``parameters`` are facts derived from
    noisy values only (solver and rounding statistics), recorded in the ledger.
    """

    leaves: I64
    counts: I64
    levels: tuple[LevelStats, ...]
    parameters: dict[str, Any]
    timings: dict[str, float] = field(default_factory=dict)
    """Seconds per step, for the data owner's summary (never recorded in the ledger)."""


@dataclass(frozen=True)
class FeatureMechanism:
    """One mechanism that releases a lattice of features (``features=``).

    Attributes:
        name: the ``mechanism=`` value that selects it.
        summary: one line: what it releases.
        run: the mechanism itself, ``FeatureContext -> FeatureResult``.
        requires: a check before any work (a kind of budget, an optional extra installed).
        bytes_per_cell: working memory per leaf cell of the full domain, for the size check.
    """

    name: str
    summary: str
    run: Callable[[FeatureContext], FeatureResult]
    requires: Callable[[Budget], None] | None = None
    bytes_per_cell: int = 0

    #: a pure epsilon (``epsilon=`` without ``delta=``) selects Laplace noise
    pure_budget = True
    #: the release kind (:mod:`inftda_sql.kinds`) that runs it: a lattice of features
    kind: ClassVar[str] = "features"
    #: its parameters come from the run (:attr:`FeatureResult.parameters`), none from the
    #: accounting
    parameters: ClassVar[None] = None

    def guarantee_for(self, budget: Budget) -> Guarantee:
        """The budget's own: ``pureDP`` with a pure epsilon budget (Laplace noise), ``zCDP``
        otherwise (:attr:`Budget.guarantee`)."""
        return budget.guarantee

    def check(self, budget: Budget) -> None:
        """Refuse, before any work, a budget or installation this mechanism cannot run with."""
        if self.requires is not None:
            self.requires(budget)

    def account(
        self,
        budget: Budget,
        spec: FeatureSpec,
        *,
        privacy: str = "bounded",
        contribution: int = 1,
        distinct: bool = False,
        split: Sequence[float] | Mapping[str, float] | None = None,
    ) -> Accounting:
        """The accounting of this mechanism's queries (see
        :func:`~inftda_sql.core.accounting.account_features`)."""
        queries = spec.queries
        return account_features(
            budget,
            [q.name for q in queries],
            totals=[q.is_total for q in queries],
            leaf=len(queries) - 1,
            privacy=privacy,
            contribution=contribution,
            distinct=distinct,
            split=split,
        )

    def check_size(self, lattice: Lattice, max_cells: int) -> None:
        """Refuse, before the private data is read, a domain too large to optimise: more leaf
        cells than ``max_cells``, or more working memory than the machine has available."""
        n = lattice.n_leaf
        if n > max_cells:
            raise SpecError(
                f"mechanism {self.name!r} optimises every leaf cell of the full domain: "
                f"{n:,} cells exceed max_cells={max_cells:,}; raise max_cells= (it needs about "
                f"{self.bytes_per_cell * n / 2**30:.1f} GiB) or coarsen the leaf"
            )
        available = available_memory()
        need = self.bytes_per_cell * n
        if available is not None and need > available:
            raise SpecError(
                f"mechanism {self.name!r} needs about {need / 2**30:.1f} GiB for {n:,} leaf "
                f"cells, but only {available / 2**30:.1f} GiB of memory is available; coarsen "
                "the leaf, or run it on a larger machine"
            )


def available_memory() -> int | None:
    """Bytes of memory available now (Linux ``MemAvailable``), or None where unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None
