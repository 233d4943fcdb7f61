"""Golden SQL: the compiled text for a few hierarchy specs, compared with files and executed."""

from __future__ import annotations

from collections.abc import Callable

import duckdb
import numpy as np
import pytest

from inftda_sql import SpecError
from inftda_sql.core.cells import LeafCells
from inftda_sql.core.spec import parse_hierarchy
from inftda_sql.core.tree import TopDownResult, key_strides
from inftda_sql.engines.duckdb import compile as _compile
from inftda_sql.engines.duckdb.domain import build_chain
from inftda_sql.engines.duckdb.sql import template
from inftda_sql.engines.duckdb.write import released_table

NAMES = _compile.TempNames("__inftda_t_")
OD = parse_hierarchy([["o_reg", "o_mun"], ["d_reg", "d_prov", "d_mun"]], "destination")


ANCESTORS = ["o_reg", "d_reg", "d_prov"]


def _compiled_od() -> str:
    parts = [
        _compile.domain_paths(OD.chains[0], '"geo_o"', ["VARCHAR"] * 2),
        _compile.domain_paths(OD.chains[1], '"geo_d"', ["VARCHAR"] * 3),
        _compile.leaf_counts(NAMES, OD, '"od"', "n", True, check=ANCESTORS),
        _compile.leaf_codes(NAMES, OD, ANCESTORS),
        _compile.write_output(OD, '"out"', NAMES.released, ordered=True),
        _compile.levels_view(OD, '"out_levels"', '"out"'),
    ]
    return ";\n\n".join(p.strip() for p in parts) + ";\n"


def test_od_destination_sql_matches_golden(golden: Callable[[str, str], None]) -> None:
    golden("od_destination.sql", _compiled_od())  # INFTDA_UPDATE_GOLDEN=1 rewrites it


def test_golden_sql_executes(con: duckdb.DuckDBPyConnection) -> None:
    from tests.system.helpers import make_od

    make_od(con)
    statements = [s for s in _compiled_od().split(";\n\n") if s.strip()]
    paths = [con.execute(s).fetchall() for s in statements[:2]]
    assert paths[0] == [("A", "a1"), ("A", "a2"), ("B", "b1")]  # distinct, sorted
    coded = [
        build_chain(con, NAMES, c, OD.chains[c], dom, ["VARCHAR"] * len(OD.chains[c]), "domain")
        for c, dom in enumerate(['"geo_o"', '"geo_d"'])
    ]
    con.execute(statements[2]).fetchall()
    fetched = con.execute(statements[3]).fetchall()
    assert all(path_ok for *_, path_ok in fetched)
    assert len(fetched) == 5  # one row per distinct leaf pair
    cells = LeafCells(
        tuple(np.array([r[c] for r in fetched], dtype=np.int64) for c in range(2)),
        np.array([r[2] for r in fetched], dtype=np.int64),
        tuple(c.tree for c in coded),
    )
    sizes = [c.tree.sizes for c in coded]
    for level in range(1, OD.n_levels + 1):
        assert int(cells.level(OD, level, key_strides(OD, level, sizes))[1].sum()) == 23
    result = TopDownResult(cells.codes, cells.counts, ())
    con.register(NAMES.released, released_table(OD, result, [c.paths for c in coded]))
    con.execute(statements[4]).fetchall()
    con.execute(statements[5]).fetchall()
    assert con.execute("SELECT sum(count) FROM out").fetchall() == [(23,)]
    assert (
        con.execute("SELECT * FROM out").fetchall()
        == con.execute("SELECT * FROM out ORDER BY ALL").fetchall()
    )
    assert con.execute("SELECT DISTINCT level FROM out_levels ORDER BY 1").fetchall() == [
        (i,) for i in range(6)
    ]


def test_key_strides_refuse_overflow() -> None:
    spec = parse_hierarchy([["a"], ["b"], ["c"]])
    with pytest.raises(SpecError, match="64-bit"):
        key_strides(spec, 3, [(1, 2**21), (1, 2**21), (1, 2**21)])


def test_templates_ship_as_package_data() -> None:
    for name in (
        "domain_paths",
        "leaf_counts",
        "leaf_codes",
        "cache",
        "write_output",
        "levels_view",
        "ledger",
    ):
        assert template(name).strip()
