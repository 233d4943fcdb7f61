"""Small builders shared by the unit tests."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

from inftda_sql.engines.duckdb.ledger import ReleaseRecord
from inftda_sql.mechanisms import DEFAULT_MAX_CELLS

WHEN = dt.datetime(2024, 6, 11, 12, 30, 15)

#: release()'s keyword arguments with their defaults (a budget and a domain filled in)
RELEASE_ARGS: dict[str, Any] = {
    "hierarchy": ["region", "mun"],
    "domain": "geo",
    "tree": None,
    "rho": 1.0,
    "epsilon": None,
    "delta": None,
    "conversion": "tight",
    "privacy": "bounded",
    "privacy_unit": None,
    "contribution": 1,
    "distinct": False,
    "split": None,
    "count": None,
    "output": None,
    "overwrite": False,
    "mechanism": "inftda",
    "seed": None,
    "domain_from_data": False,
    "budget_override": False,
    "levels_view": True,
    "max_cells": DEFAULT_MAX_CELLS,
}


def release_record(**changes: object) -> ReleaseRecord:
    """A complete, plausible ledger row (release id 0: the write stage assigns it)."""
    record = ReleaseRecord(
        release_id=0,
        created_at=WHEN,
        input_table="persons",
        output_table="persons_private",
        hierarchy='{"chains": [["region", "province", "mun"]], "tree": "chain"}',
        tree="chain",
        domain_source="table 'geo'",
        mechanism="inftda",
        guarantee="zCDP",
        privacy="bounded",
        rho=0.5,
        epsilon=6.0862,
        delta=1e-8,
        conversion="tight",
        budget_given="rho",
        contribution=1,
        distinct_records=False,
        privacy_unit=None,
        level_names=["region", "province", "mun"],
        level_sensitivity=[1.4142, 1.4142, 1.4142],
        level_rho=[0.25, 0.125, 0.125],
        level_sigma=[2.0, 2.8284, 2.8284],
        seeded=True,
        non_private=["seeded noise (tests and benchmarks only)"],
        library_version="0.1.0",
        details='{"levels": [], "diagnostics (not private, for the data owner only)": {"rows_in": 9}}',
    )
    return dataclasses.replace(record, **changes)  # type: ignore[arg-type]
