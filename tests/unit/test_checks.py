"""The engine-neutral checks: what both engines say about a bad domain or too large counts."""

from __future__ import annotations

import pyarrow as pa
import pytest

from inftda_sql import DomainError
from inftda_sql.core.intopt import VALUE_LIMIT
from inftda_sql.engines.checks import COUNT_LIMIT, check_domain_paths, too_large


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
