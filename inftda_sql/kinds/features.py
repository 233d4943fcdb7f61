"""The features kind: a lattice of GROUP BY features (CBDP), released consistently.

Domain: the input's leaf columns checked, the features coded on the public domain (a table of
every leaf cell, or a product of tables), the mechanism's size check, the accounting. Scan: one
GROUPING SETS query that counts every feature. Mechanism: noise per feature, then the leaves
fitted to every noisy feature. Write: the leaves, the features view and the ledger row,
atomically (the release is read back from what was written for ``return_as=``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .._errors import InternalError
from .._ledger_row import request_row
from .._request import ReleaseRequest
from .._result import Release
from .._stages import Stages
from ..core.accounting import Accounting
from ..core.arrays import I64
from ..core.features import Lattice
from ..core.tree import LevelStats
from ..engines.base import ReleaseEngine, Scan
from ..engines.records import ReleaseRecord
from ..mechanisms import FeatureContext, FeatureResult, feature_mechanism
from .base import KindRun, check_noise_range, require

__all__ = ["KIND"]


class _Run:
    """One feature release on one engine (the stages of :class:`~.base.KindRun`)."""

    stage = "mechanism"

    def __init__(
        self,
        engine: ReleaseEngine,
        request: ReleaseRequest,
        progress: Callable[[LevelStats], None] | None,
    ) -> None:
        self.engine, self.request, self.progress = engine, request, progress
        self.mech = feature_mechanism(request.mechanism.name)
        self.lattice: Lattice | None = None
        self.accounting: Accounting | None = None
        self.found: Scan | None = None
        self.true_counts: list[I64] | None = None
        self.outcome: FeatureResult | None = None
        self.released: Any = None

    def prepare(self) -> str | None:
        return self.engine.prepare()

    def code_domain(self) -> None:
        self.engine.resolve_features()
        self.lattice = self.engine.code_lattice()
        self.mech.check_size(self.lattice, self.request.max_cells)
        self.accounting = self.request.account()  # public domain only: no data read yet
        check_noise_range(self.accounting.level_sigma)

    def scan(self) -> None:
        self.found, self.true_counts = self.engine.feature_counts(self._lattice())

    def mechanism(self) -> None:
        if self.accounting is None or self.found is None or self.true_counts is None:
            raise InternalError("the domain and the scan come before the mechanism")
        self.outcome = self.mech.run(
            FeatureContext(
                lattice=self._lattice(),
                true_counts=self.true_counts,
                total=self.found.total,
                accounting=self.accounting,
                source=self.request.source,
                progress=self.progress,
                max_cells=self.request.max_cells,
            )
        )
        self.true_counts = None  # the private counts are not kept past the mechanism

    def write(self, non_private: list[str], stages: Stages, t_start: float) -> ReleaseRecord:
        acct, found, outcome = self._done()
        details: dict[str, Any] = {
            # per query: cells noised and released non-zero, noise sd
            "levels": [lv.as_dict() for lv in outcome.levels],
            "noise": acct.noise,
            "exact_levels": list(acct.exact_levels),
            "mechanism_params": outcome.parameters,
        }
        if acct.noise == "laplace":
            details["level_epsilon"] = list(acct.level_epsilon)
        record = request_row(
            self.request,
            acct,
            "features",
            self.engine.input_description,
            self.engine.domain_description,
            details,
            found,
            non_private,
            (
                {**stages.seconds, **self._mechanism_seconds()},
                [lv.seconds for lv in outcome.levels],
            ),
        )
        record = self.engine.write_features(self._lattice(), outcome, record)
        if self.request.return_as:
            self.released = self.engine.released_features(self._lattice())
        return record

    def result(self, record: ReleaseRecord, timings: dict[str, float]) -> Release:
        acct, found, outcome = self._done()
        req = self.request
        return Release(
            output=req.output,
            levels_view=req.levels_view,
            release_id=record.release_id,
            input=record.input_table,
            spec=req.spec,
            mechanism=self.mech.name,
            accounting=acct,
            levels=outcome.levels,
            total=int(outcome.counts.sum()),
            timings={**timings, **self._mechanism_seconds()},
            seeded=req.source.seeded,
            non_private=tuple(record.non_private),
            diagnostics=dict(found.diagnostics),
            guarantee=req.guarantee,
            mechanism_params=dict(outcome.parameters),
            return_as=req.return_as,
            released=self.released,
            kind=req.kind,
        )

    def _mechanism_seconds(self) -> dict[str, float]:
        timings = self.outcome.timings if self.outcome is not None else {}
        return {f"mechanism: {k}": v for k, v in timings.items()}

    def _lattice(self) -> Lattice:
        if self.lattice is None:  # pragma: no cover - stage order
            raise InternalError("the domain is coded before the scan")
        return self.lattice

    def _done(self) -> tuple[Accounting, Scan, FeatureResult]:
        if self.accounting is None or self.found is None or self.outcome is None:
            raise InternalError("the mechanism runs before the write")  # pragma: no cover
        return self.accounting, self.found, self.outcome


@dataclass(frozen=True)
class _Features:
    name: str = "features"

    def start(
        self,
        engine: Any,
        request: ReleaseRequest,
        progress: Callable[[LevelStats], None] | None,
    ) -> KindRun:
        require(
            engine,
            self.name,
            ("resolve_features", "code_lattice", "feature_counts", "write_features"),
        )
        return _Run(engine, request, progress)


#: the features kind (a registry entry of :mod:`inftda_sql.kinds`)
KIND = _Features()
