"""_request.py: every release() argument checked, in the order a user reads them, before any
data is read (no connection is involved here)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from inftda_sql import BudgetError, Domain, DomainError, SpecError
from inftda_sql._request import (
    NO_DOMAIN,
    ReleaseRequest,
    check_distinct,
    check_int,
    normalise_domains,
)
from inftda_sql.core.rng import CSPRNGSource, SeededSource
from inftda_sql.core.spec import parse_hierarchy
from inftda_sql.core.tree import ChainTree
from inftda_sql.mechanisms import DEFAULT_MAX_CELLS, REGISTRY
from tests.unit.helpers import RELEASE_ARGS

#: region (2 regions) > mun (3 municipalities: 2 + 1)
_TWO_REGIONS = ChainTree.from_parents([np.array([0, 0]), np.array([0, 0, 1])])


def _request(table: object = "persons", **changes: Any) -> ReleaseRequest:
    return ReleaseRequest.from_args(table, **{**RELEASE_ARGS, **changes})


def test_a_valid_request_is_normalised() -> None:
    req = _request()
    assert req.spec == parse_hierarchy(["region", "mun"])
    assert req.domains == ["geo"]
    assert req.output == "persons_private" and req.levels_view == "persons_private_levels"
    assert req.mechanism is REGISTRY["inftda"]
    assert req.split is None
    # the accounting is made once the domain is coded: region (2) > mun (3) determines nothing
    assert req.account([_TWO_REGIONS]).level_names == ("region", "mun")
    assert req.account([_TWO_REGIONS]).level_determined == (False, False)
    assert req.budget.rho == 1.0 and req.max_cells == DEFAULT_MAX_CELLS
    assert isinstance(req.source, CSPRNGSource)
    assert req.input_name == "persons" and req.input_description == "persons"
    assert req.non_private_reasons(None) == []


def test_options_are_carried_over() -> None:
    req = _request(
        output="out",
        levels_view=False,
        overwrite=1,
        budget_override=1,
        privacy="unbounded",
        contribution=np.int64(2),
        distinct=True,
        seed=3,
        mechanism="vanilla_gauss",
    )
    assert req.output == "out" and req.levels_view is None
    assert req.overwrite is True and req.budget_override is True
    assert req.contribution == 2 and type(req.contribution) is int and req.distinct
    assert isinstance(req.source, SeededSource)
    # a leaf-only mechanism pays for its leaves only, and never for a root
    acct = req.account([_TWO_REGIONS])
    assert acct.level_names == ("mun",)
    assert acct.privacy == "unbounded" and acct.contribution == 2


def test_the_accounting_knows_the_determined_levels() -> None:
    """A level of one child per parent in the public domain spends nothing; the split's
    weights are checked (one per level) before any data, and a determined level's is dropped."""
    req = _request(split=[1, 3])
    one_each = ChainTree.from_parents([np.array([0, 0]), np.array([0, 1])])
    acct = req.account([one_each])
    assert acct.level_determined == (False, True)
    assert acct.level_rho == (1.0, 0.0) and acct.level_sigma[1] == 0.0
    assert req.account([_TWO_REGIONS]).level_rho == pytest.approx((0.25, 0.75))
    with pytest.raises(BudgetError, match="3 split weights"):
        _request(split=[1, 1, 1])


def test_non_private_reasons() -> None:
    req = _request(rho=float("inf"), domain=None, domain_from_data=True, seed=1)
    assert req.domains is None
    assert req.non_private_reasons("budget override: x") == [
        "infinite budget (no noise)",
        "domain taken from the data",
        "seeded noise (tests and benchmarks only)",
        "budget override: x",
    ]


def test_a_relation_needs_an_output() -> None:
    relation = object()
    with pytest.raises(SpecError, match=r"^the input is a relation, so pass output= \(") as err:
        _request(relation)
    assert "return_as='arrow'" in str(err.value) and err.value.param == "output"
    req = _request(relation, output="out")
    assert req.input_name is None and req.input_description == "<relation>"
    assert req.output == "out" and req.return_as is None


def test_return_as_without_output_writes_no_table() -> None:
    req = _request("trips", return_as="arrow")
    assert req.output is None and req.levels_view is None and req.return_as == "arrow"
    assert req.output_description == "(not written: returned as arrow)"
    both = _request("trips", return_as="arrow", output="out")
    assert both.output == "out" and both.levels_view == "out_levels"
    assert _request("trips").output == "trips_private"  # the default is unchanged
    with pytest.raises(SpecError, match="return_as must be one of 'arrow', 'pandas', 'polars'"):
        _request("trips", return_as="numpy")


def test_a_data_frame_comes_back_as_one_by_default() -> None:
    pd = pytest.importorskip("pandas")
    pa = pytest.importorskip("pyarrow")
    frame = pd.DataFrame({"region": ["N"], "city": ["a"]})
    req = _request(frame)
    assert req.output is None and req.return_as == "pandas"
    assert req.input_description == "<pandas DataFrame>"
    assert _request(pa.table({"a": [1]})).return_as == "arrow"
    written = _request(frame, output="out")
    assert written.output == "out" and written.return_as is None


# Each check, and the checks that come after it: with the faults of rows i..n all present,
# the error of row i is the one raised.
ORDER: list[tuple[str, dict[str, Any], type[Exception], str]] = [
    ("hierarchy", {"hierarchy": "region"}, SpecError, "hierarchy must be a list of columns"),
    (
        "privacy",
        {"privacy": "local"},
        SpecError,
        "privacy must be 'bounded' (replace one unit, total public) or 'unbounded'",
    ),
    ("contribution", {"contribution": 0}, SpecError, "contribution must be an integer >= 1, got 0"),
    ("distinct", {"distinct": "yes"}, SpecError, "distinct must be True or False, got 'yes'"),
    ("budget", {"rho": None}, BudgetError, "no privacy budget given"),
    (
        "mechanism",
        {"mechanism": "magic"},
        SpecError,
        "mechanism must be one of inftda, vanilla_gauss",
    ),
    ("max_cells", {"max_cells": 0}, SpecError, "max_cells must be an integer >= 1, got 0"),
    ("split", {"split": [1.0]}, BudgetError, "got 1 split weights [1.0] for 2 noised levels"),
    ("seed", {"seed": -1}, SpecError, "seed must be a non-negative integer, got -1"),
    ("domain", {"domain": None}, DomainError, NO_DOMAIN),
    (
        "output",
        {"output": "a.b.c.d"},
        SpecError,
        "output must be a table name (table, schema.table or database.schema.table), got 'a.b.c.d'",
    ),
]


@pytest.mark.parametrize("i", range(len(ORDER)), ids=[row[0] for row in ORDER])
def test_the_order_of_the_checks(i: int) -> None:
    changes: dict[str, Any] = {}
    for _, change, _, _ in ORDER[i:]:
        changes.update(change)
    _, _, error, message = ORDER[i]
    with pytest.raises(error) as info:
        _request(**changes)
    assert str(info.value).startswith(message)


def test_the_mechanisms_requirement_comes_before_the_other_options() -> None:
    with pytest.raises(
        BudgetError, match="mechanism 'stability_histogram' is \\(epsilon, delta\\)-DP"
    ):
        _request(mechanism="stability_histogram", max_cells=0, domain=None)
    req = _request(mechanism="stability_histogram", rho=None, epsilon=1.0, delta=1e-6)
    assert req.mechanism.guarantee == "approxDP"


@pytest.mark.parametrize(
    ("changes", "error", "message"),
    [
        (
            {"domain_from_data": True},
            DomainError,
            "pass domain= or domain_from_data=True, not both",
        ),
        ({"output": ""}, SpecError, "output must be a table name (table, schema.table or"),
        ({"output": 7}, SpecError, "output must be a table name (table, schema.table or"),
        ({"output": 'a."b'}, SpecError, "output must be a table name (table, schema.table or"),
        ({"contribution": True}, SpecError, "contribution must be an integer >= 1, got True"),
        ({"contribution": 1.0}, SpecError, "contribution must be an integer >= 1, got 1.0"),
        ({"distinct": 1}, SpecError, "distinct must be True or False, got 1"),
        ({"max_cells": "many"}, SpecError, "max_cells must be an integer >= 1, got 'many'"),
        (
            {"hierarchy": [["a"], ["b"]], "domain": ["geo"]},
            DomainError,
            "the hierarchy has 2 chains",
        ),
        (
            {"hierarchy": [["a"], ["b"]], "domain": Domain("geo", columns={"c": "x"})},
            DomainError,
            "the Domain's column mapping names 'c', not a hierarchy column",
        ),
    ],
)
def test_each_argument_error(changes: dict[str, Any], error: type[Exception], message: str) -> None:
    with pytest.raises(error) as info:
        _request(**changes)
    assert str(info.value).startswith(message)


def test_check_int_and_check_distinct() -> None:
    assert check_int("m", np.int32(3), 1) == 3
    for bad in (0, True, 2.5, "3", None):
        with pytest.raises(SpecError, match="m must be an integer >= 1"):
            check_int("m", bad, 1)
    assert check_distinct(False) is False
    with pytest.raises(SpecError):
        check_distinct(np.bool_(True))


ONE = parse_hierarchy(["region", "mun"])
TWO = parse_hierarchy([["o_reg", "o_mun"], ["d_reg", "d_mun"]], "destination")


@pytest.mark.parametrize(
    ("domain", "spec", "expected"),
    [
        ("geo", ONE, ["geo"]),
        (["geo"], ONE, ["geo"]),
        (("geo",), ONE, ["geo"]),
        ({"mun": ["a"]}, ONE, [{"mun": ["a"]}]),
        (["geo", "geo2"], ONE, [["geo", "geo2"]]),  # one chain: the list is its domain
        (["geo_o", "geo_d"], TWO, ["geo_o", "geo_d"]),
        (("geo_o", {"d_mun": ["x"]}), TWO, ["geo_o", {"d_mun": ["x"]}]),
        ("geo", TWO, ["geo", "geo"]),  # one geography serves both chains
        ({"o_mun": ["a"]}, TWO, [{"o_mun": ["a"]}, {"o_mun": ["a"]}]),
    ],
)
def test_normalise_domains(domain: object, spec: Any, expected: list[object]) -> None:
    assert normalise_domains(domain, spec) == expected


def test_one_domain_is_the_same_object_for_every_chain() -> None:
    geo = Domain("geo", columns={"o_reg": "reg", "o_mun": "mun"})
    first, second = normalise_domains(geo, TWO)
    assert first is geo and second is geo  # the engine reads it once


@pytest.mark.parametrize("domain", [["geo"], ["a", "b", "c"], []])
def test_normalise_domains_needs_one_or_one_per_chain(domain: object) -> None:
    with pytest.raises(DomainError) as info:
        normalise_domains(domain, TWO)
    assert str(info.value) == (
        "the hierarchy has 2 chains, so domain must be one domain or a list of 2 (one per "
        f"chain), got {len(domain)}: {domain!r}"  # type: ignore[arg-type]
    )
    assert info.value.message(cli=True).startswith(
        "the hierarchy has 2 chains, so --domain must be given once or 2 times"
    )


def test_domain_mapping_names_hierarchy_columns_only() -> None:
    with pytest.raises(DomainError, match="'O_REGION', not a hierarchy column"):
        normalise_domains(Domain("geo", columns={"o_reg": "r", "O_REGION": "r"}), TWO)
    mapped = Domain("geo", columns={"O_REG": "reg"})  # case-insensitive, like DuckDB's columns
    assert normalise_domains(mapped, TWO) == [mapped, mapped]


def test_a_file_input_is_named_after_its_file() -> None:
    req = _request("data/od_2021.parquet")
    assert req.output == "od_2021_private"
    assert req.input_name == "data/od_2021.parquet"
    assert _request(Path("x/flows.csv.gz")).output == "flows_private"
    assert _request("flows_*.csv").output == "flows_private"
    assert _request('s."x.csv"').output == 's."x.csv"_private'  # quoted: a table
