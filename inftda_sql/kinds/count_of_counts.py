"""The count-of-counts kind: per region of a hierarchy and group size, the number of groups
(Kuo et al., VLDB 2018), pure epsilon-DP, consistent, every histogram summing to its region's
public number of groups.

Domain: the PUBLIC groups table coded as the hierarchy's domain, with its groups per leaf.
Scan: the group sizes, then per node and size the number of groups (the true histograms).
Mechanism (``noise``): the largest size estimated privately when not given, then every level's
histograms estimated under discrete Laplace noise and made consistent top-down
(:func:`~inftda_sql.core.coc.count_of_counts`). Write: the leaf histograms, their levels view
and the ledger row, atomically.
"""

from __future__ import annotations

import math
import os
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .._coc_request import CountOfCountsRequest
from .._errors import Arg, InftdaWarning, InternalError
from .._ledger_row import LevelCosts, ledger_row
from .._result import CountOfCountsRelease
from .._stages import Stages
from ..core.accounting import CountOfCountsAccounting, Guarantee, PureDPBudget
from ..core.coc import (
    CocLevel,
    CocLevelStats,
    CocResult,
    check_memory,
    count_of_counts,
    size_limit,
    truncate_sizes,
)
from ..core.noise import draw_discrete_laplace
from ..core.rng import RandomSource
from ..core.spec import parse_hierarchy
from ..engines.base import CountOfCountsEngine
from ..engines.records import ReleaseRecord
from ..mechanisms.base import available_memory
from .base import KindRun, require

__all__ = ["KIND", "MAX_SIZE_STDS"]

#: standard deviations added to the noisy largest size (the paper's Section 4.3)
MAX_SIZE_STDS = 5


class _Run:
    """One count-of-counts release on one engine (the stages of :class:`~.base.KindRun`)."""

    stage = "noise"

    def __init__(
        self,
        engine: CountOfCountsEngine,
        request: CountOfCountsRequest,
        progress: Callable[[CocLevelStats], None] | None,
    ) -> None:
        self.engine, self.request, self.progress = engine, request, progress
        self.levels: list[CocLevel] = []
        self.largest = 0
        self.max_size = request.max_size
        self.memory: int | None = None
        self.outcome: CocResult | None = None

    def prepare(self) -> str | None:
        return self.engine.prepare_count_of_counts()

    def code_domain(self) -> None:
        self.engine.resolve_groups()
        # the accounting is the request's: no domain level is free
        tree, per_leaf = self.engine.code_groups()
        req, self.memory = self.request, _memory()
        check_memory(
            req.method,
            max(tree.sizes),
            int(per_leaf.sum()),
            max_size=req.max_size,
            min_size=req.min_size,
            chunk=req.chunk,
            available=self.memory,
        )

    def scan(self) -> None:
        self.levels, self.largest = self.engine.coc_counts(self.request.max_size)

    def mechanism(self) -> None:
        req, acct = self.request, self.request.accounting
        levels = self.levels
        if self.max_size is None:
            self.max_size = _estimate_max_size(self.largest, acct, req.min_size, req.source)
            limit = (
                None if self.memory is None else size_limit(req.method, req.min_size, self.memory)
            )
            if limit is not None and self.max_size > limit:  # post-processing of a noisy value
                self.max_size = limit
                warnings.warn(
                    InftdaWarning(
                        f"the private estimate of max_size was clipped to {limit:,}, the "
                        f"largest the {req.method!r} estimator fits in memory; pass ",
                        Arg("max_size"),
                        " to choose it",
                        param="max_size",
                    ),
                    stacklevel=2,
                )
            levels = [truncate_sizes(lv, self.max_size) for lv in levels]
        self.outcome = count_of_counts(
            levels,
            acct,
            max_size=self.max_size,
            min_size=req.min_size,
            consistency=req.consistency,
            merge=req.merge,
            source=req.source,
            chunk=req.chunk,
            progress=self.progress,
        )
        self.levels = []  # the true histograms are not kept past the mechanism

    def write(self, non_private: list[str], stages: Stages, t_start: float) -> ReleaseRecord:
        outcome = self._outcome()
        record = _record(
            self.request,
            self.request.accounting,
            self._parameters(),
            outcome.levels,
            non_private,
            stages.done(time.perf_counter() - t_start),
        )
        return self.engine.write_count_of_counts(outcome.leaves, record)

    def result(self, record: ReleaseRecord, timings: dict[str, float]) -> CountOfCountsRelease:
        req, outcome = self.request, self._outcome()
        return CountOfCountsRelease(
            output=req.output,
            levels_view=req.levels_view,
            release_id=record.release_id,
            input=req.input_description,
            spec=parse_hierarchy([req.chain]),
            mechanism=record.mechanism,
            total=int(outcome.leaves.count.sum()),
            seeded=req.source.seeded,
            mechanism_params=self._parameters(),
            hierarchy=req.chain,
            method=req.method,
            consistency=req.consistency,
            merge=req.merge,
            accounting=req.accounting,
            max_size=self._max_size(),
            max_size_estimated=req.max_size is None,
            levels=outcome.levels,
            timings=timings,
            non_private=tuple(record.non_private),
        )

    def _parameters(self) -> dict[str, Any]:
        req = self.request
        return {
            "method": req.method,
            "consistency": req.consistency,
            "merge": req.merge,
            "group": req.group,
            "groups_table": self.engine.groups_description,
            "max_size": self._max_size(),
            "max_size_estimated": req.max_size is None,
            "min_size": req.min_size,
        }

    def _max_size(self) -> int:
        if self.max_size is None:  # pragma: no cover - stage order
            raise InternalError("the largest size is known once the mechanism ran")
        return self.max_size

    def _outcome(self) -> CocResult:
        if self.outcome is None:  # pragma: no cover - stage order
            raise InternalError("the mechanism runs before the write")
        return self.outcome


@dataclass(frozen=True)
class _CountOfCounts:
    name: str = "count_of_counts"

    def start(
        self,
        engine: Any,
        request: CountOfCountsRequest,
        progress: Callable[[CocLevelStats], None] | None,
    ) -> KindRun:
        require(
            engine,
            self.name,
            ("prepare_count_of_counts", "code_groups", "coc_counts", "write_count_of_counts"),
        )
        return _Run(engine, request, progress)


#: the count-of-counts kind (a registry entry of :mod:`inftda_sql.kinds`)
KIND = _CountOfCounts()


def _memory() -> int | None:
    """Bytes of memory available now, or the machine's physical memory where that is unknown."""
    available = available_memory()
    if available is None:
        try:
            available = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (AttributeError, ValueError, OSError):
            return None
    return available


def _estimate_max_size(
    largest: int, acct: CountOfCountsAccounting, min_size: int, source: RandomSource
) -> int:
    """The paper's private largest size: the true largest plus discrete Laplace noise (scale
    from the accounting), plus 5 standard deviations, at least ``max(min_size, 1)``."""
    scale = acct.max_size_scale
    noisy = largest + int(draw_discrete_laplace(scale, 1, source=source)[0]) if scale else largest
    std = math.sqrt(2.0) * scale
    return max(min_size, 1, noisy + math.ceil(MAX_SIZE_STDS * std))


def _record(
    request: CountOfCountsRequest,
    acct: CountOfCountsAccounting,
    params: dict[str, Any],
    levels: Sequence[CocLevelStats],
    non_private: list[str],
    timings: dict[str, float],
) -> ReleaseRecord:
    """The ledger row (its id is assigned when it is written). Timings go to the diagnostics,
    which :func:`~inftda_sql.publish` never copies."""
    public_levels = [{k: v for k, v in lv.as_dict().items() if k != "seconds"} for lv in levels]
    variances = acct.level_variance
    names = list(acct.level_names)
    sens = [acct.sensitivity] * len(names)
    eps = list(acct.level_epsilon)
    sigma = [math.sqrt(v) for v in variances]
    if acct.max_size_epsilon:
        names.insert(0, "max_size")
        sens.insert(0, 1.0)
        eps.insert(0, acct.max_size_epsilon)
        sigma.insert(0, math.sqrt(2.0) * acct.max_size_scale)
    return ledger_row(
        input_table=request.input_description,
        output_table=request.output,
        hierarchy={"chains": [list(request.chain)], "tree": "chain"},
        tree="chain",
        domain_source=str(params["groups_table"]),
        mechanism=f"{request.kind}:{params['method']}",
        guarantee=Guarantee.PURE_DP.value,
        privacy="unbounded",
        rho=acct.rho,
        epsilon=acct.epsilon,
        delta=0.0,
        conversion="none",
        budget_given=PureDPBudget.given,
        contribution=1,
        distinct_records=False,
        privacy_unit=None,  # a person is one row of the input
        levels=LevelCosts(names, sens, [e * e / 2.0 for e in eps], sigma),
        seeded=request.source.seeded,
        non_private=non_private,
        details={
            "kind": request.kind,
            "levels": public_levels,
            "levels_view": request.levels_view,
            "mechanism_params": params,
            "accounting": acct.as_dict(),
        },
        diagnostics={
            "diagnostics (not private, for the data owner only)": {
                "seconds": {k: round(v, 4) for k, v in timings.items()}
            }
        },
    )
