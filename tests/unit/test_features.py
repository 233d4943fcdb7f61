"""Feature specifications and their lattice on the public domain (inftda_sql.core.features)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from inftda_sql import DomainError, SpecError
from inftda_sql.core.features import code_lattice, parse_features

O5 = {
    "total": [],
    "period": ["period"],
    "zones": ["o_zone", "d_zone", "period"],
    "mode": ["mode", "period"],
    "trip": ["o", "d", "period"],
}


def pairs() -> pa.Table:
    stops = ["a", "b", "c"]
    zone = {"a": "N", "b": "N", "c": "S"}
    rows = [(o, d) for o in stops for d in stops]
    return pa.table(
        {
            "o": [o for o, _ in rows],
            "d": [d for _, d in rows],
            "o_zone": [zone[o] for o, _ in rows],
            "d_zone": [zone[d] for _, d in rows],
            "mode": [
                "walk" if o == d else "local" if zone[o] == zone[d] else "bus" for o, d in rows
            ],
            "name": [f"{o}->{d}" for o, d in rows],  # not a feature column: ignored
        }
    )


def periods() -> pa.Table:
    return pa.table({"period": [0, 1, 2, 3]})


def cells() -> pa.Table:
    p = pairs().to_pylist()
    return pa.Table.from_pylist([{**row, "period": t} for row in p for t in range(4)])


# ------------------------------------------------------------------------------------------------
# the specification


def test_parse_keeps_order_and_leaf_last() -> None:
    spec = parse_features(O5)
    assert [f.name for f in spec.features] == list(O5)
    assert spec.leaf.name == "trip"
    assert spec.columns == ("o", "d", "period", "o_zone", "d_zone", "mode")
    assert spec.queries == spec.features


def test_hierarchical_structure_is_the_cumulative_meets() -> None:
    spec = parse_features(O5, structure="hierarchical")
    assert [(q.name, q.columns) for q in spec.queries] == [
        ("total", ()),
        ("period", ("period",)),
        ("period & zones", ("period", "o_zone", "d_zone")),
        ("period & zones & mode", ("period", "o_zone", "d_zone", "mode")),
        ("trip", ("o", "d", "period")),
    ]
    # a feature that refines nothing more is not a level of its own
    again = parse_features(
        {
            "zones": ["o_zone", "d_zone", "period"],
            "period": ["period"],
            "trip": ["o", "d", "period"],
        },
        structure="hierarchical",
    )
    assert [q.name for q in again.queries] == ["zones", "trip"]


@pytest.mark.parametrize(
    ("features", "message"),
    [
        ("period", "features must be a non-empty mapping"),
        ({}, "features must be a non-empty mapping"),
        (
            {"period": "period", "trip": ["o"]},
            "feature 'period' must list its columns, got the string 'period'; write {'period': ['period']}",
        ),
        ({"p": ["period", "PERIOD"], "trip": ["o"]}, "feature 'p' lists column 'PERIOD' twice"),
        ({"p": [3], "trip": ["o"]}, "feature 'p' has 3, which is not a column name"),
        ({"a": ["x"], "b": ["X"], "trip": ["o"]}, "features 'a' and 'b' group by the same columns"),
        ({"a": ["x"], "A": ["y"], "trip": ["o"]}, "feature name 'A' is used twice"),
        ({"c": ["count"], "trip": ["o"]}, "feature 'c' groups by a column named 'count'"),
        (
            {"trip": ["o"], "total": []},
            "the last feature is the leaf (the cells released), but 'total' has no columns",
        ),
        (
            {"big": ["o", "d", "x"], "trip": ["o", "d"]},
            "feature 'big' groups by every column of the leaf 'trip' and more",
        ),
        ({"": ["o"]}, "feature names must be non-empty strings"),
    ],
)
def test_bad_specs_are_named(features: object, message: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_features(features)
    assert message in str(info.value)


def test_bad_options() -> None:
    with pytest.raises(SpecError, match="structure must be one of flat, hierarchical; got 'tree'"):
        parse_features(O5, structure="tree")
    with pytest.raises(SpecError, match="weights must be one of cells, uniform; got 'cell'"):
        parse_features(O5, weights="cell")
    with pytest.raises(SpecError, match="level 'a & b' groups by every column of the leaf 'trip'"):
        parse_features({"a": ["o"], "b": ["d"], "trip": ["o", "d"]}, structure="hierarchical")


# ------------------------------------------------------------------------------------------------
# the lattice on the domain


@pytest.mark.parametrize("product", [False, True])
def test_lattice_codes_the_domain(product: bool) -> None:
    spec = parse_features(O5)
    tables = [pairs(), periods()] if product else [cells()]
    lat = code_lattice(spec, tables, [f"t{i}" for i in range(len(tables))])
    assert lat.n_leaf == 36
    assert lat.sizes == (1, 4, 4 * 4, 3 * 4, 36)  # zone pairs NN NS SN SS; walk, local, bus
    # every cell map agrees with the columns
    rows = cells().to_pylist()
    leaf_of = {}
    for code, part_rows in enumerate(
        zip(*lat.part_codes(__import__("numpy").arange(36)), strict=True)
    ):
        row = {}
        for part, r in zip(lat.parts, part_rows, strict=True):
            row.update(
                {k: v for k, v in part.rows.to_pylist()[list(part.row_leaf).index(r)].items()}
            )
        leaf_of[(row["o"], row["d"], row["period"])] = (code, row)
    assert len(leaf_of) == 36
    for q in range(4):
        cm = lat.cell_map(q)
        cols = lat.queries[q].columns
        cell_of_values: dict[tuple[object, ...], int] = {}
        for r in rows:
            code, _ = leaf_of[(r["o"], r["d"], r["period"])]
            key = tuple(r[c] for c in cols)
            assert cell_of_values.setdefault(key, int(cm[code])) == int(cm[code])
        assert len(cell_of_values) == lat.sizes[q]
    # refinement: zones and mode refine period, neither refines the other
    assert lat.refines(2, 1) and lat.refines(3, 1) and lat.refines(1, 0)
    assert not lat.refines(2, 3) and not lat.refines(3, 2)


def test_a_leaf_cell_in_two_cells_is_named() -> None:
    bad = cells().to_pylist()
    bad.append({**bad[0], "o_zone": "S"})  # leaf (a, a, 0) now in two zone cells
    with pytest.raises(DomainError) as info:
        code_lattice(parse_features(O5), [pa.Table.from_pylist(bad)], ["table 'cells'"])
    msg = str(info.value)
    assert (
        "domain table 'cells' puts leaf cell (o='a', d='a', period=0) in two cells of feature 'zones'"
        in msg
    )
    assert (
        "(o_zone='N', d_zone='N', period=0)" in msg and "(o_zone='S', d_zone='N', period=0)" in msg
    )


def test_repeated_rows_are_fine() -> None:
    doubled = pa.concat_tables([cells(), cells()])
    assert code_lattice(parse_features(O5), [doubled], ["x"]).n_leaf == 36


def test_domain_errors() -> None:
    spec = parse_features(O5)
    with pytest.raises(DomainError, match="column 'period' is in domain a and in domain b"):
        code_lattice(spec, [cells(), periods()], ["a", "b"])
    with pytest.raises(DomainError, match=r"feature column\(s\) 'period' are in no domain table"):
        code_lattice(spec, [pairs()], ["a"])
    with pytest.raises(DomainError, match="domain b holds none of the feature columns"):
        code_lattice(spec, [cells(), pa.table({"x": [1]})], ["a", "b"])
    nulls = cells().set_column(4, "mode", pa.array([None] * 36, pa.string()))
    with pytest.raises(DomainError, match=r"domain a has 36 row\(s\) with NULL in 'mode'"):
        code_lattice(spec, [nulls], ["a"])
    with pytest.raises(DomainError, match="domain a is empty"):
        code_lattice(spec, [cells().slice(0, 0)], ["a"])
    other = pa.table({"mode": ["x", "y"]})
    spec2 = parse_features({"mode": ["mode"], "trip": ["o", "d"]})
    with pytest.raises(
        DomainError, match=r"domain b holds none of the leaf's columns \(o, d\) but 2 distinct rows"
    ):
        code_lattice(spec2, [pairs().select(["o", "d"]), other], ["a", "b"])


def test_same_partition_as_the_leaf_or_another_feature() -> None:
    same_as_leaf = {"name": ["name"], "pair": ["o", "d"]}
    with pytest.raises(
        DomainError, match=r"feature 'name' has as many cells as the leaf 'pair' \(9\)"
    ):
        code_lattice(parse_features(same_as_leaf), [pairs()], ["p"])
    twins = {"mode": ["mode"], "mode2": ["o_zone", "d_zone", "mode"], "pair": ["o", "d"]}
    table = pairs().set_column(2, "o_zone", pa.array(["z"] * 9))
    table = table.set_column(3, "d_zone", pa.array(["z"] * 9))
    with pytest.raises(
        DomainError, match="features 'mode' and 'mode2' partition the domain identically"
    ):
        code_lattice(parse_features(twins), [table], ["p"])
