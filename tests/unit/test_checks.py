"""The engine-neutral checks: what both engines say about a bad domain or too large counts."""

from __future__ import annotations

import pyarrow as pa
import pytest

from inftda_sql import DomainError, OutputExistsError, SpecError
from inftda_sql.core.intopt import VALUE_LIMIT
from inftda_sql.engines.checks import (
    COUNT_LIMIT,
    check_domain_not_input,
    check_domain_paths,
    check_not_read,
    check_not_reserved,
    check_output_free,
    too_large,
)


def test_a_complete_domain_passes() -> None:
    check_domain_paths(pa.table({"r": ["N", "S"], "c": [1.0, 2.0]}), "domain", ["r", "c"])


@pytest.mark.parametrize(
    ("paths", "fragment"),
    [
        (pa.table({"r": pa.array([], pa.string())}), "is empty; it must list every valid path"),
        (pa.table({"r": ["N", None, None]}), "2 row(s) with NULL in 'r'"),
        (pa.table({"r": [1.0, float("nan")]}), "1 row(s) with NaN in 'r'"),
    ],
    ids=["empty", "null", "nan"],
)
def test_an_incomplete_domain_is_named(paths: pa.Table, fragment: str) -> None:
    with pytest.raises(DomainError, match="the geography"):
        check_domain_paths(paths, "geography", ["r"])
    with pytest.raises(DomainError) as info:
        check_domain_paths(paths, "geography", ["r"])
    assert fragment in str(info.value)


def test_the_count_limit_is_intopts() -> None:
    assert COUNT_LIMIT == VALUE_LIMIT == 2**60
    assert too_large("n").startswith("the counts of 'n' must add up to at most 2**60")
    assert too_large(None).startswith("the number of records")


def test_a_domain_sharing_a_base_table_or_file_with_the_input_is_refused() -> None:
    """What each engine resolved is compared, in any case; the first shared name is given."""
    inputs = ["spark_catalog.db.trips", "/data/trips.parquet"]
    check_domain_not_input(inputs, [("domain", "table 'geo'", ["spark_catalog.db.geo"])])
    for shared in ("SPARK_CATALOG.db.Trips", "/data/trips.parquet"):
        with pytest.raises(DomainError) as info:
            check_domain_not_input(
                inputs,
                [
                    ("domain of chain 1", "table 'geo'", ["spark_catalog.db.geo"]),
                    ("domain of chain 2", "view 'g2'", ["spark_catalog.db.geo", shared]),
                ],
            )
        assert str(info.value).startswith(
            f"the domain of chain 2 (view 'g2') reads {shared}, which the input reads too"
        )
        assert "domain_from_data=True" in str(info.value) and info.value.param == "domain"


def test_outputs_that_are_read_reserved_or_taken_are_refused() -> None:
    protected = [("db.trips", "db.Trips", "the input"), ("db.geo", "db.geo", "a table x reads")]
    check_not_read("out", "db.out", protected)
    with pytest.raises(SpecError, match=r"'GEO' is a table x reads \(db.geo\); writing") as info:
        check_not_read("GEO", "db.geo", protected)
    assert info.value.param == "output"
    check_not_reserved("out", False, ("inftda_releases", "inftda_budgets"))
    with pytest.raises(SpecError, match="inftda_releases, inftda_budgets and names starting"):
        check_not_reserved("inftda_releases", True, ("inftda_releases", "inftda_budgets"))
    check_output_free("out", False, overwrite=False)
    check_output_free("out", True, overwrite=True)
    with pytest.raises(OutputExistsError, match="'out' already exists; pass overwrite=True"):
        check_output_free("out", True, overwrite=False)
