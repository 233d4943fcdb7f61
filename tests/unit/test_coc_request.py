"""_coc_request.py: a count-of-counts call checked in the request layer, with no database."""

from __future__ import annotations

import math
from typing import Any

import pytest

from inftda_sql import SpecError
from inftda_sql._coc_request import CountOfCountsRequest

ARGS: dict[str, Any] = {
    "group": "hid",
    "hierarchy": ["state", "county"],
    "groups": "listed",
    "epsilon": 1.0,
    "max_size": None,
    "groups_column": None,
    "min_size": 1,
    "method": "cumulative",
    "consistency": "topdown",
    "merge": "weighted",
    "split": None,
    "max_size_share": 0.05,
    "output": None,
    "overwrite": False,
    "levels_view": True,
    "seed": None,
    "budget_override": False,
    "chunk": 1000,
}


def test_a_request_is_checked_and_accounted_before_any_database() -> None:
    req = CountOfCountsRequest.from_args("persons", **{**ARGS, "seed": 3})
    assert req.kind == "count_of_counts"
    assert (req.chain, req.output, req.levels_view) == (
        ("state", "county"),
        "persons_count_of_counts",
        "persons_count_of_counts_levels",
    )
    assert req.accounting.max_size_epsilon > 0  # max_size estimated: it spends a share
    assert math.isclose(req.budget.rho, req.accounting.rho)
    assert req.non_private_reasons(None) == ["seeded noise (tests and benchmarks only)"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"min_size": -1}, "min_size must be an integer >= 0, got -1"),
        ({"min_size": 2}, "min_size must be 0 or 1, got 2"),
        ({"max_size": 0}, "max_size must be an integer >= 1, got 0"),
        ({"chunk": True}, "chunk must be an integer >= 1, got True"),
        ({"merge": "max"}, "merge must be one of .*; got 'max'"),
        ({"output": "a.b.c"}, "output must be a table name"),
        ({"output": "PERSONS"}, "is the input table"),
    ],
)
def test_bad_arguments_are_named(change: dict[str, Any], message: str) -> None:
    with pytest.raises(SpecError, match=message):
        CountOfCountsRequest.from_args("persons", **{**ARGS, **change})
