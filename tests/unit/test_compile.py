"""Golden SQL: the compiled text for a few hierarchy specs, compared with files and executed."""

from __future__ import annotations

from collections.abc import Callable

import duckdb
import pytest

from inftda_sql import SpecError
from inftda_sql.core.spec import parse_hierarchy
from inftda_sql.core.tree import key_strides
from inftda_sql.engines.duckdb import compile as _compile
from inftda_sql.engines.duckdb.domain import build_chain
from inftda_sql.engines.duckdb.sql import template

NAMES = _compile.TempNames("__inftda_t_")
OD = parse_hierarchy([["o_reg", "o_mun"], ["d_reg", "d_prov", "d_mun"]], "destination")


def _compiled_od() -> str:
    sizes = [(1, 2, 3), (1, 2, 3, 4)]
    parts = [
        _compile.domain_paths(OD.chains[0], '"geo_o"', ["VARCHAR"] * 2),
        _compile.domain_paths(OD.chains[1], '"geo_d"', ["VARCHAR"] * 3),
        _compile.leaf_counts(NAMES, OD, '"od"', "n", True),
        _compile.leaf_codes(NAMES, OD),
        *(
            _compile.level_counts(NAMES, OD, lv, key_strides(OD, lv, sizes))
            for lv in range(1, OD.n_levels + 1)
        ),
        _compile.write_output(NAMES, OD, '"out"'),
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
    for c, dom in enumerate(['"geo_o"', '"geo_d"']):
        build_chain(con, NAMES, c, OD.chains[c], dom, ["VARCHAR"] * len(OD.chains[c]), "domain")
    for stmt in statements[2:4]:
        con.execute(stmt).fetchall()
    assert con.execute('SELECT bool_and(path_ok) FROM "__inftda_t_keys"').fetchall() == [(True,)]
    level_rows = [con.execute(s).fetchall() for s in statements[4:9]]
    assert [sum(n for _, n in lv) for lv in level_rows] == [23] * 5
    # the finest level has one key per distinct leaf pair
    assert len(level_rows[-1]) == 5
    con.execute(
        'CREATE TEMP TABLE "__inftda_t_released" AS SELECT __c0_d2 AS __leaf0, '
        '__c1_d3 AS __leaf1, n AS "count" FROM "__inftda_t_keys"'
    ).fetchall()
    con.execute(statements[9]).fetchall()
    con.execute(statements[10]).fetchall()
    assert con.execute("SELECT sum(count) FROM out").fetchall() == [(23,)]
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
        "level_counts",
        "write_output",
        "levels_view",
        "ledger",
    ):
        assert template(name).strip()
