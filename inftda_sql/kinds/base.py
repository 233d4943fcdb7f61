"""What a release kind provides (:class:`ReleaseKind`, :class:`KindRun`), the check that an
engine runs it (:func:`require`) and the check of an accounting's noise scales
(:func:`check_noise_range`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from .._errors import Arg, BudgetError, SpecError
from .._result import Release
from .._stages import Stages
from ..core.noise import SCALE_MAX
from ..engines.records import ReleaseRecord

__all__ = ["KindRun", "ReleaseKind", "check_noise_range", "require"]


class KindRun(Protocol):
    """One release of a kind on one engine, its stages called in order by the pipeline."""

    #: the name of the mechanism stage in the release's timings (``topdown``, ``noise``...)
    stage: str

    def prepare(self) -> str | None:
        """Resolve every name in the catalog, check the outputs and the budget; the note an
        override records, or None."""
        ...

    def code_domain(self) -> None:
        """Check the columns; code the public domain; make the accounting (no data read)."""
        ...

    def scan(self) -> None:
        """The one scan of the private input."""
        ...

    def mechanism(self) -> None:
        """Run the mechanism on the true counts (everything after it is post-processing)."""
        ...

    def write(self, non_private: list[str], stages: Stages, t_start: float) -> ReleaseRecord:
        """Build the ledger row and write it with the output, atomically; the row as written."""
        ...

    def result(self, record: ReleaseRecord, timings: dict[str, float]) -> Release:
        """What the release made and spent."""
        ...


class ReleaseKind(Protocol):
    """A release kind: its name and how a run of it starts."""

    @property
    def name(self) -> str:
        """The kind's name, as requests name it (``request.kind``)."""
        ...

    def start(self, engine: Any, request: Any, progress: Callable[[Any], None] | None) -> KindRun:
        """A run of ``request`` on ``engine`` (an error if the engine lacks the kind's stages)."""
        ...


def require(engine: object, kind: str, stages: tuple[str, ...]) -> None:
    """Refuse, before any work, an engine that does not run ``kind`` releases yet."""
    missing = [s for s in stages if not hasattr(engine, s)]
    if missing:
        raise SpecError(
            f"the {type(engine).__name__} engine does not run {kind} releases yet; run it on "
            "DuckDB (inftda_sql.release / release_count_of_counts)",
            param="mechanism",
        )


def check_noise_range(sigmas: Sequence[float]) -> None:
    """Refuse, from the accounting alone (before the data is read), a budget whose noise
    scale is beyond what the samplers draw (``SCALE_MAX``: draws must fit int64)."""
    largest = max(sigmas, default=0.0)
    if largest > SCALE_MAX:
        raise BudgetError(
            f"the budget is so small that a level's noise has sigma {largest:.3g}, above the "
            "2**57 (about 1.4e17) that the samplers draw from, and far above any count; raise ",
            Arg("rho"),
            " (or ",
            Arg("epsilon"),
            ") or lower ",
            Arg("contribution"),
            param="rho",
        )
