"""What a mechanism is and what it receives.

A :class:`Mechanism` is one frozen object: its name, the guarantee it gives, which levels it
noises, what it needs before any work (a kind of budget, an optional extra) and its ``run``.
Every mechanism receives the same :class:`MechanismContext` (the validated spec, the public
domain as code ranges, a way to read the true counts of any level, the accounting and the random
source) and returns a :class:`~inftda_sql.core.tree.TopDownResult`. The accounting module
decides sensitivities and sigmas; a mechanism only says which levels it pays noise for.
Mechanisms are engine-free: they never see a database, only numpy arrays.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .._errors import Arg, InternalError, SpecError
from ..core.accounting import Accounting, Budget, account
from ..core.arrays import I64
from ..core.rng import RandomSource
from ..core.spec import TreeSpec
from ..core.topdown import Optimizer, topdown
from ..core.tree import ChainTree, LevelStats, TopDownResult, determined_levels

__all__ = [
    "DEFAULT_MAX_CELLS",
    "Guarantee",
    "Mechanism",
    "MechanismContext",
    "level_cells",
    "level_sizes",
]


#: mechanisms that materialise every cell of the full domain refuse above this many cells
DEFAULT_MAX_CELLS = 50_000_000

Guarantee = Literal["zCDP", "approxDP"]
"""``zCDP``: rho composes by adding; ``approxDP``: an (epsilon, delta)-DP guarantee only."""


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
        guarantee: ``"zCDP"`` or ``"approxDP"`` (recorded in the ledger; only zCDP composes
            in rho against a stored budget).
        noises: ``"tree"`` (every level below the root; the root count is released by the
            mechanism itself) or ``"leaves"`` (the leaf level only; coarser levels are sums of
            released leaves, so no budget is spent on a root).
        full_domain: ``"leaves"`` or ``"tree"`` if the mechanism materialises every cell of the
            full domain (its leaf level, or every level), which ``max_cells`` bounds.
        requires: a check before any work (a kind of budget, an optional extra installed).
        parameters: mechanism parameters derived from the accounting, recorded in the ledger.
    """

    name: str
    summary: str
    run: Callable[[MechanismContext], TopDownResult]
    guarantee: Guarantee = "zCDP"
    noises: Literal["tree", "leaves"] = "tree"
    full_domain: Literal["leaves", "tree"] | None = None
    requires: Callable[[Budget], None] | None = None
    parameters: Callable[[Accounting], dict[str, Any]] | None = None

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
