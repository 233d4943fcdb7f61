"""kinds/: every release kind in one registry, run by one pipeline (_pipeline.run_release)."""

from __future__ import annotations

import duckdb
import pytest

import inftda_sql
from inftda_sql import SpecError
from inftda_sql._coc_request import CountOfCountsRequest
from inftda_sql._pipeline import run_release
from inftda_sql._request import ReleaseRequest
from inftda_sql.kinds import KINDS
from inftda_sql.mechanisms import REGISTRY
from tests.unit.helpers import RELEASE_ARGS


def test_every_mechanism_and_request_names_a_registered_kind() -> None:
    assert set(KINDS) == {"hierarchy", "features", "count_of_counts"}
    assert {m.kind for m in REGISTRY.values()} == {"hierarchy", "features"}
    assert CountOfCountsRequest.kind in KINDS
    for name, kind in KINDS.items():
        assert kind.name == name


class _HierarchyOnly:
    """An engine with the stages of a hierarchy release only (as Spark's is today)."""

    def prepare(self) -> None:  # pragma: no cover - never reached
        raise AssertionError("a stage ran on an engine that cannot run the kind")

    code_domains = scan = run_mechanism = write = prepare


def test_an_engine_without_a_kinds_stages_is_refused_before_any_work() -> None:
    features = ReleaseRequest.from_args(
        "trips",
        **{
            **RELEASE_ARGS,
            "hierarchy": None,
            "mechanism": "cbdp",
            "features": {"all": [], "od": ["o", "d"]},
            "rho": None,
            "epsilon": 1.0,
            "domain": "cells",
        },
    )
    with pytest.raises(SpecError, match="_HierarchyOnly engine does not run features releases"):
        run_release(_HierarchyOnly(), features)


def test_one_pipeline_times_every_kind_with_the_same_stages(
    con: duckdb.DuckDBPyConnection,
) -> None:
    con.execute(
        "CREATE TABLE hh AS SELECT * FROM (VALUES ('A', 'a1', 2), ('A', 'a2', 1)) t(s, c, n)"
    )
    con.execute(
        "CREATE TABLE persons AS SELECT * FROM (VALUES (1, 'A', 'a1'), (1, 'A', 'a1'), "
        "(2, 'A', 'a1'), (3, 'A', 'a2')) t(hid, s, c)"
    )
    coc = inftda_sql.release_count_of_counts(
        con, "persons", group="hid", hierarchy=["s", "c"], groups="hh", epsilon=1.0, seed=1
    )
    tree = inftda_sql.release(
        con, "persons", hierarchy=["s", "c"], domain="hh", rho=1.0, seed=1, output="p2"
    )
    assert set(coc.timings) == {"domain", "scan", "noise", "write", "other"}
    assert set(tree.timings) == {"domain", "scan", "topdown", "write", "other"}


def test_one_result_type_for_every_kind(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(
        "CREATE TABLE hh AS SELECT * FROM (VALUES ('A', 'a1', 2), ('A', 'a2', 1)) t(s, c, n)"
    )
    con.execute(
        "CREATE TABLE persons AS SELECT * FROM (VALUES (1, 'A', 'a1'), (1, 'A', 'a1'), "
        "(2, 'A', 'a1'), (3, 'A', 'a2')) t(hid, s, c)"
    )
    coc = inftda_sql.release_count_of_counts(
        con, "persons", group="hid", hierarchy=["s", "c"], groups="hh", epsilon=1.0, seed=1
    )
    tree = inftda_sql.release(con, "persons", hierarchy=["s", "c"], domain="hh", rho=1.0, seed=1)
    assert isinstance(coc, inftda_sql.Release) and isinstance(tree, inftda_sql.Release)
    assert (coc.kind, tree.kind) == ("count_of_counts", "hierarchy")
    assert coc.total == 3  # the groups released: the public groups table's total
    assert coc.mechanism == "count_of_counts:cumulative" and coc.guarantee == "pureDP"
    public = coc.as_dict()
    assert all("seconds" not in lv for lv in public["levels"])  # times only under NOT_PRIVATE
    assert public["budget"]["epsilon"] == 1.0
    assert "<p>" in coc._repr_html_() and str(coc).startswith("NOT PRIVATE: seeded noise")
