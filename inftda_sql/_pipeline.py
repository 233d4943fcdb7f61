"""One function runs every release, of every kind, on every engine: :func:`run_release`.

The request was checked before (the request layer: :mod:`._request`, :mod:`._coc_request`);
the kind (:mod:`.kinds`) supplies the stages, which run in the same order, each timed under
its name (for the data owner only): the names resolved in the catalog (budget checked), the
public domain coded (``domain``), one scan of the private input (``scan``), the mechanism (its
kind's name: ``topdown``, ``mechanism``, ``noise``), the output and its ledger row written
atomically (``write``). The engine (DuckDB, Spark) was opened by the front door; it drops what
the release made when the caller leaves its context.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, overload

from ._coc_request import CountOfCountsRequest
from ._request import ReleaseRequest
from ._result import CountOfCountsRelease, Release
from ._stages import Stages
from .core.coc import CocLevelStats
from .core.tree import LevelStats
from .kinds import get

__all__ = ["run_release"]


@overload
def run_release(
    engine: Any,
    request: ReleaseRequest,
    progress: Callable[[LevelStats], None] | None = ...,
    t_start: float | None = ...,
) -> Release: ...


@overload
def run_release(
    engine: Any,
    request: CountOfCountsRequest,
    progress: Callable[[CocLevelStats], None] | None = ...,
    t_start: float | None = ...,
) -> CountOfCountsRelease: ...


def run_release(
    engine: Any,
    request: ReleaseRequest | CountOfCountsRequest,
    progress: Callable[[Any], None] | None = None,
    t_start: float | None = None,
) -> Release:
    """Run the checked ``request`` on ``engine`` through its kind's stages; ``t_start`` is when
    the call began (the request's checks count in the summary's ``other``)."""
    t0 = time.perf_counter() if t_start is None else t_start
    run = get(request.kind).start(engine, request, progress)
    stages = Stages()
    budget_note = run.prepare()  # every name resolved, the outputs and the budget checked
    with stages("domain"):
        run.code_domain()  # the public domain, and the accounting: no private data read yet
    with stages("scan"):
        run.scan()
    with stages(run.stage):
        run.mechanism()
    non_private = request.non_private_reasons(budget_note)
    with stages("write"):
        record = run.write(non_private, stages, t0)
    # typed by the overloads: a count-of-counts request's kind makes a CountOfCountsRelease
    return run.result(record, stages.done(time.perf_counter() - t0))
