"""The hierarchy kind: TopDown (InfTDA) and the other tree mechanisms, on any engine.

Domain: the resolved columns, every chain's public domain coded as code ranges, then the
accounting (levels the public domain determines spend nothing). Scan: the leaf cells of the
private input. Mechanism: level by level on the engine's true counts (:meth:`Engine.run_mechanism`:
on the driver, or in the engine's own tasks), then the error bounds of every level from public
parameters only (:mod:`..core.bounds`: the domain, the accounting, the released total). Write:
the released leaves, the levels view, the noisy measurements (``measurements=True``) and the
ledger row (with the bounds), atomically.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .._errors import InternalError
from .._ledger_row import record_parameters, request_row
from .._request import ReleaseRequest
from .._result import Release
from .._stages import Stages
from ..core.accounting import Accounting
from ..core.bounds import ErrorBounds, for_release
from ..core.measurements import Collector
from ..core.tree import ChainTree, LevelStats
from ..engines.base import Engine, Scan
from ..engines.records import ReleaseRecord
from ..mechanisms import MechanismContext, tree_mechanism
from .base import KindRun, check_noise_range, require

__all__ = ["KIND"]


class _Run:
    """One hierarchy release on one engine (the stages of :class:`~.base.KindRun`)."""

    stage = "topdown"

    def __init__(
        self,
        engine: Engine[Any],
        request: ReleaseRequest,
        progress: Callable[[LevelStats], None] | None,
    ) -> None:
        self.engine, self.request, self.progress = engine, request, progress
        self.chains: list[ChainTree] = []
        self.accounting: Accounting | None = None
        self.found: Scan | None = None
        self.outcome: Any = None
        self.levels: tuple[LevelStats, ...] = ()
        self.total = 0
        self.released: Any = None
        self.bounds: ErrorBounds | None = None

    def prepare(self) -> str | None:
        return self.engine.prepare()

    def code_domain(self) -> None:
        self.engine.resolve()
        self.chains = self.engine.code_domains()
        self.accounting = self.request.account(self.chains)  # public domain only
        check_noise_range(self.accounting.level_sigma)

    def scan(self) -> None:
        self.found = self.engine.scan()

    def mechanism(self) -> None:
        acct, found = self._measured()
        mechanism = tree_mechanism(self.request.mechanism.name)
        self.outcome = self.engine.run_mechanism(
            mechanism,
            MechanismContext(
                spec=self.request.tree,
                chains=self.chains,
                true_level=self.engine.level_counts,
                total=found.total,
                accounting=acct,
                source=self.request.source,
                progress=self.progress,
                max_cells=self.request.max_cells,
                measure=Collector() if self.request.measurements else None,
            ),
        )
        self.levels, self.total = self.engine.released(self.outcome)
        # public parameters and the released total only: no private value reaches the bounds
        self.bounds = for_release(
            mechanism.error_analysis,
            self.request.tree,
            self.chains,
            acct.level_names,
            acct.level_sigma,
            total=self.total,
            optimizer=mechanism.topdown_step,
        )

    def write(self, non_private: list[str], stages: Stages, t_start: float) -> ReleaseRecord:
        acct, found = self._measured()
        if self.bounds is None:  # pragma: no cover - stage order
            raise InternalError("the mechanism comes before the write")
        measurements = self.request.measurements
        notes = {
            n: note for n, note in zip(acct.level_names, acct.level_notes, strict=True) if note
        }
        record = request_row(
            self.request,
            acct,
            self.request.tree.tree,
            self.engine.input_description,
            self.engine.domain_description,
            {
                "levels": [lv.as_dict() for lv in self.levels],
                **({"level_notes": notes} if notes else {}),
                "error_bounds": self.bounds.as_dict(),
                **({"measurements": measurements} if measurements else {}),
            },
            found,
            non_private,
            (stages.seconds, [lv.seconds for lv in self.levels]),
        )
        record = self.engine.write(self.outcome, record)
        if self.request.return_as:
            self.released = self.engine.released_table(self.outcome)
        return record

    def result(self, record: ReleaseRecord, timings: dict[str, float]) -> Release:
        acct, found = self._measured()
        req = self.request
        return Release(
            output=req.output,
            levels_view=req.levels_view,
            release_id=record.release_id,
            input=record.input_table,
            spec=req.spec,
            mechanism=req.mechanism.name,
            accounting=acct,
            levels=self.levels,
            total=self.total,
            timings=timings,
            seeded=req.source.seeded,
            non_private=tuple(record.non_private),
            diagnostics=dict(found.diagnostics),
            guarantee=req.guarantee,
            mechanism_params=record_parameters(req, acct),
            return_as=req.return_as,
            released=self.released,
            kind=req.kind,
            error_bounds=self.bounds,
        )

    def _measured(self) -> tuple[Accounting, Scan]:
        if self.accounting is None or self.found is None:  # pragma: no cover - stage order
            raise InternalError("the domain and the scan come before the mechanism")
        return self.accounting, self.found


@dataclass(frozen=True)
class _Hierarchy:
    name: str = "hierarchy"

    def start(
        self,
        engine: Any,
        request: ReleaseRequest,
        progress: Callable[[LevelStats], None] | None,
    ) -> KindRun:
        require(engine, self.name, ("prepare", "code_domains", "scan", "run_mechanism", "write"))
        return _Run(engine, request, progress)


#: the hierarchy kind (a registry entry of :mod:`inftda_sql.kinds`)
KIND = _Hierarchy()
