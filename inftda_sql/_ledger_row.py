"""The ledger row of a release, of any kind: the one place a :class:`ReleaseRecord` is built.

A release kind supplies what it measured and spent (its columns) and its ``details`` in two
parts: what may be published (levels, parameters, accounting) and the diagnostics, which
describe the private input (facts about it, times of stages and levels) and go under keys that
start with :data:`~inftda_sql.engines.records.DIAGNOSTICS_PREFIX`, so that the public view of
the row (:meth:`~inftda_sql.engines.records.ReleaseRecord.public`) leaves them out. The row's id
is assigned when it is written.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._errors import InternalError
from ._request import ReleaseRequest
from ._version import __version__
from .core.accounting import Accounting
from .engines.base import Scan
from .engines.records import DIAGNOSTICS_PREFIX, ReleaseRecord

__all__ = ["LevelCosts", "ledger_row", "record_parameters", "request_row"]


@dataclass(frozen=True)
class LevelCosts:
    """What each level (or query) of a release cost: its name, sensitivity, rho and noise sd."""

    names: Sequence[str]
    sensitivity: Sequence[float]
    rho: Sequence[float]
    sigma: Sequence[float]


def ledger_row(
    *,
    input_table: str,
    output_table: str,
    hierarchy: Mapping[str, Any],
    tree: str,
    domain_source: str,
    mechanism: str,
    guarantee: str,
    privacy: str,
    rho: float | None,
    epsilon: float,
    delta: float,
    conversion: str,
    budget_given: str,
    contribution: int,
    distinct_records: bool,
    privacy_unit: str | None,
    levels: LevelCosts,
    seeded: bool,
    non_private: Sequence[str],
    details: Mapping[str, Any],
    diagnostics: Mapping[str, Any],
) -> ReleaseRecord:
    """The ledger row of a release (id 0 until written). ``details`` are public (derived from
    public parameters and noisy values); ``diagnostics`` are not (every key must start with
    ``diagnostics``) and follow them in the row's ``details`` JSON."""
    private = [k for k in diagnostics if not k.startswith(DIAGNOSTICS_PREFIX)]
    leaked = [k for k in details if k.startswith(DIAGNOSTICS_PREFIX)]
    if private or leaked:  # pragma: no cover - a kind's bug, never the user's
        raise InternalError(f"ledger details and diagnostics mixed up: {private or leaked}")
    return ReleaseRecord(
        release_id=0,
        created_at=dt.datetime.now(dt.UTC).replace(tzinfo=None),
        input_table=input_table,
        output_table=output_table,
        hierarchy=json.dumps(dict(hierarchy)),
        tree=tree,
        domain_source=domain_source,
        mechanism=mechanism,
        guarantee=guarantee,
        privacy=privacy,
        rho=rho,
        epsilon=epsilon,
        delta=delta,
        conversion=conversion,
        budget_given=budget_given,
        contribution=contribution,
        distinct_records=distinct_records,
        privacy_unit=privacy_unit,
        level_names=list(levels.names),
        level_sensitivity=list(levels.sensitivity),
        level_rho=list(levels.rho),
        level_sigma=list(levels.sigma),
        seeded=seeded,
        non_private=list(non_private),
        library_version=__version__,
        details=json.dumps({**details, **diagnostics}, allow_nan=False, default=_json_default),
    )


def record_parameters(request: ReleaseRequest, accounting: Accounting) -> dict[str, Any]:
    """The mechanism's own parameters (e.g. a threshold), derived from the accounting."""
    parameters = request.mechanism.parameters
    return {} if parameters is None else parameters(accounting)


def request_row(
    request: ReleaseRequest,
    acct: Accounting,
    tree: str,
    input_table: str,
    domain_source: str,
    details: dict[str, Any],
    scan: Scan,
    non_private: list[str],
    seconds: tuple[dict[str, float], Sequence[float]],
) -> ReleaseRecord:
    """The ledger row of a hierarchy or feature release (:func:`ledger_row`), ``tree`` its shape.
    ``details`` holds what the mechanism did (per level or query), derived from noisy values
    only; ``seconds`` the times per stage and per level (or query), kept with the input's
    diagnostics where the public view of the row leaves them out."""
    budget, spec, guarantee = request.budget, request.spec, request.guarantee
    return ledger_row(
        input_table=input_table,
        output_table=request.output_description,
        hierarchy=spec.as_dict(),
        tree=tree,
        domain_source=domain_source,
        mechanism=request.mechanism.name,
        guarantee=guarantee.value,
        privacy=acct.privacy,
        rho=guarantee.charged_rho(budget.rho),
        epsilon=budget.epsilon,
        delta=budget.delta,
        conversion=budget.conversion,
        budget_given=budget.given,
        contribution=acct.contribution,
        distinct_records=acct.distinct,
        privacy_unit=scan.privacy_unit,
        levels=LevelCosts(
            acct.level_names, acct.level_sensitivity, acct.level_rho, acct.level_sigma
        ),
        seeded=request.source.seeded,
        non_private=non_private,
        details={
            "levels_view": request.levels_view,
            "mechanism_params": record_parameters(request, acct),
            # how the input was read: evaluate() reads the truth the same way
            "count": request.count,
            "microdata": request.microdata,
            **details,
        },
        diagnostics={
            "diagnostics (not private, for the data owner only)": {
                **scan.diagnostics,
                "total_read": scan.total,  # evaluate() checks its truth against it
            },
            "diagnostics: seconds (not private: they depend on the data)": {
                "per_level": [round(t, 4) for t in seconds[1]],
                "per_stage": {k: round(v, 4) for k, v in seconds[0].items()},
            },
        },
    )


def _json_default(value: object) -> object:
    """numpy integers and floats (a kind's parameters may hold them) as plain numbers."""
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    raise TypeError(f"not JSON serialisable: {value!r}")
