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
from ._version import __version__
from .engines.records import DIAGNOSTICS_PREFIX, ReleaseRecord

__all__ = ["LevelCosts", "ledger_row"]


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


def _json_default(value: object) -> object:
    """numpy integers and floats (a kind's parameters may hold them) as plain numbers."""
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    raise TypeError(f"not JSON serialisable: {value!r}")
