"""core/domains.py: which columns of one public domain make each chain (no database here)."""

from __future__ import annotations

import pytest

from inftda_sql import Domain, DomainError
from inftda_sql.core.domains import match_columns, unwrap

UK = ["msoa", "msoa_name", "lad", "lad_name", "region", "region_name", "country"]


@pytest.mark.parametrize(
    ("chain", "available", "explicit", "expected"),
    [
        # the same names
        (["region", "lad"], UK, None, {"region": "region", "lad": "lad"}),
        (["REGION", "Lad"], UK, None, {"REGION": "region", "Lad": "lad"}),  # any case
        # the prefix rule: o_ + region, o_ + lad, o_ + msoa
        (["o_region", "o_lad", "o_msoa"], UK, None, {"o_region": "region", "o_lad": "lad", "o_msoa": "msoa"}),
        (["d_region", "d_lad", "d_msoa"], UK, None, {"d_region": "region", "d_lad": "lad", "d_msoa": "msoa"}),
        (["home_region", "home_lad"], UK, None, {"home_region": "region", "home_lad": "lad"}),
        (["o_Region", "O_LAD"], ["Region", "Lad"], None, {"o_Region": "Region", "O_LAD": "Lad"}),
        # the same names win over a prefix
        (["o_reg"], ["o_reg", "reg"], None, {"o_reg": "o_reg"}),
        # an explicit mapping, spelled in any case, gives the domain's spelling
        (["home", "work"], ["Lad"], {"HOME": "lad", "work": "LAD"}, {"home": "Lad", "work": "Lad"}),
        (["rgn", "district"], UK, {"rgn": "region", "district": "lad"}, {"rgn": "region", "district": "lad"}),
        # entries for another chain's columns are not this chain's business
        (["o_region", "o_lad"], UK, {"d_r": "region"}, {"o_region": "region", "o_lad": "lad"}),
    ],
)  # fmt: skip
def test_match_columns(
    chain: list[str], available: list[str], explicit: dict[str, str] | None, expected: object
) -> None:
    assert match_columns(chain, available, explicit) == expected


def test_a_chain_mapped_in_part_matches_the_rest_by_name_or_prefix() -> None:
    demo = ["region", "province", "municipality", "name"]
    chain = ["o_region", "o_province", "o_mun"]
    assert match_columns(chain, demo, {"o_mun": "municipality"}) == {
        "o_region": "region",
        "o_province": "province",
        "o_mun": "municipality",
    }
    assert match_columns(["region", "mun"], demo, {"mun": "municipality"}) == {
        "region": "region",
        "mun": "municipality",
    }
    with pytest.raises(DomainError) as info:  # the rest must still match
        match_columns(chain, demo, {"o_region": "region"})
    assert "has no columns for o_mun" in str(info.value)
    assert "columns={'o_province': 'province', 'o_mun': '...'}" in str(info.value)


def test_a_mapping_to_a_missing_column_lists_the_columns() -> None:
    with pytest.raises(DomainError) as info:
        match_columns(["a", "b"], ["region", "lad"], {"a": "region", "b": "ward"})
    assert "maps 'b' to 'ward', which is not a column of it; available: region, lad" in str(
        info.value
    )
    assert info.value.param == "domain"


def test_no_match_says_what_exists_and_how_to_map_it() -> None:
    with pytest.raises(DomainError) as info:
        match_columns(["o_reg", "o_lad"], UK, role="domain (table 'geo')", shared=2)
    err = info.value
    assert str(err).startswith(
        "the domain (table 'geo') has no columns for o_reg: its columns are msoa, msoa_name, "
        "lad, lad_name, region, region_name, country, and no common prefix turns o_reg, o_lad "
        "into its columns"
    )
    # the fix, in each spelling: a mapping that fills in what it can, or one domain per chain
    assert "Domain(..., columns={'o_reg': '...', 'o_lad': 'lad'})" in str(err)
    assert "(domain=[...] with 2 entries)" in str(err)
    cli = err.message(cli=True)
    assert "--domain-columns o_reg=...,o_lad=lad" in cli and "(--domain 2 times)" in cli


def test_two_prefixes_that_fit_are_ambiguous() -> None:
    # x_ab -> x_ + ab or x_a + b: both a column
    with pytest.raises(DomainError, match="the prefixes 'x_', 'x_a' all fit"):
        match_columns(["x_ab"], ["ab", "b"])


def test_domain_validates_its_mapping() -> None:
    geo = Domain("geo", columns={"o_region": "region"})
    assert geo.column_for("O_REGION") == "region" and geo.column_for("d_region") is None
    assert unwrap(geo) == ("geo", {"o_region": "region"}) and unwrap("geo") == ("geo", {})
    assert Domain("geo").columns == {}
    for bad, message in [
        ({"o_region": ""}, "non-empty strings"),
        ({"": "region"}, "non-empty strings"),
        ({"o_region": 3}, "non-empty strings"),
        ({"o_region": "a", "O_REGION": "b"}, "twice"),
        (["o_region"], "must be a mapping"),
    ]:
        with pytest.raises(DomainError, match=message):
            Domain("geo", columns=bad)  # type: ignore[arg-type]
    with pytest.raises(DomainError, match="not another Domain"):
        Domain(geo)
    with pytest.raises(DomainError, match="got None"):
        Domain(None)


def test_domain_keeps_its_own_copy_of_the_mapping() -> None:
    mapping = {"o_region": "region"}
    geo = Domain("geo", columns=mapping)
    mapping["o_region"] = "changed"
    assert geo.columns == {"o_region": "region"}
