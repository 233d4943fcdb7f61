"""The command line's grammar: flags, the TOML config, flags turned into keyword arguments."""

from __future__ import annotations

import argparse
import inspect
from pathlib import Path

import pytest

import inftda_sql
from inftda_sql import Domain
from inftda_sql._errors import SpecError
from inftda_sql.cli import commands, parse
from inftda_sql.cli.parse import UsageError, build_parser


def _args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


def test_every_command_has_a_function() -> None:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert set(sub.choices) == set(commands.COMMANDS) == {
        "demo", "release", "evaluate", "plan", "ledger", "budget", "publish", "sql",
        "count-of-counts",
    }  # fmt: skip


def test_config_keys_are_the_keyword_arguments_of_release() -> None:
    params = inspect.signature(inftda_sql.release).parameters
    python_only = {"progress", "return_as"}  # a callback; a Python object returned in memory
    keywords = {n for n, p in params.items() if p.kind is p.KEYWORD_ONLY} - python_only
    assert keywords == parse.RELEASE_KEYS


def test_usage_errors_raise_usage_error() -> None:
    with pytest.raises(UsageError, match=r"^inftda-sql release: .*required: db, table"):
        _args("release")
    with pytest.raises(UsageError, match="node counts must be positive integers"):
        _args("plan", "--levels", "3,0")
    with pytest.raises(UsageError, match="or 'optimal'"):
        _args("plan", "--split", "a")


def test_release_options_from_flags() -> None:
    args = _args(
        "release", "x.duckdb", "trips", "--hierarchy", "o_r,o_m", "--hierarchy", "d_r,d_m",
        "--domain", "geo_o", "--domain", "geo_d", "--tree", "destination", "--epsilon", "2",
        "--delta", "1e-9", "--split", "1,2", "--no-levels-view", "--overwrite", "--seed", "3",
        "--privacy-unit", "person", "--max-cells", "10",
    )  # fmt: skip
    assert parse.release_options(args) == {
        "hierarchy": [["o_r", "o_m"], ["d_r", "d_m"]],
        "domain": ["geo_o", "geo_d"],
        "tree": "destination",
        "epsilon": 2.0,
        "delta": 1e-9,
        "split": [1.0, 2.0],
        "levels_view": False,
        "overwrite": True,
        "seed": 3,
        "privacy_unit": "person",
        "max_cells": 10,
    }
    with pytest.raises(UsageError, match="--hierarchy is required"):
        parse.release_options(_args("release", "x.duckdb", "t", "--rho", "1"))


def test_flags_override_the_config(tmp_path: Path) -> None:
    config = tmp_path / "r.toml"
    config.write_text('hierarchy = ["a", "b"]\ndomain = "geo"\nrho = 2.0\noutput = "x"\n')
    args = _args("release", "db", "t", "--config", str(config), "--rho", "0.5")
    assert parse.release_options(args) == {
        "hierarchy": ["a", "b"],
        "domain": "geo",
        "rho": 0.5,
        "output": "x",
    }
    config.write_text("rhoo = 1\n")
    with pytest.raises(SpecError, match=r"unknown key\(s\) in .*: rhoo; allowed: budget_override"):
        parse.read_config(str(config))
    config.write_text("rho = \n")
    with pytest.raises(SpecError, match="is not valid TOML"):
        parse.read_config(str(config))
    with pytest.raises(SpecError, match="cannot read config"):
        parse.read_config(str(tmp_path / "missing.toml"))


def test_the_config_maps_domain_columns(tmp_path: Path) -> None:
    config = tmp_path / "r.toml"
    config.write_text(
        'hierarchy = [["home_r", "home_m"], ["d_region", "d_msoa"]]\ndomain = "geo.parquet"\n'
        'domain_columns = { home_r = "region", home_m = "msoa" }\nrho = 1.0\n'
    )
    args = _args("release", "db", "od.csv", "--config", str(config))
    options = parse.release_options(args)
    assert options["domain"] == Domain(
        "geo.parquet", columns={"home_r": "region", "home_m": "msoa"}
    )
    assert "domain_columns" not in options  # not a keyword of release()
    # a flag adds to (and overrides) the file's mapping
    args = _args(
        "release", "db", "od.csv", "--config", str(config), "--domain-columns", "home_m=lad"
    )
    assert parse.release_options(args)["domain"].columns == {"home_r": "region", "home_m": "lad"}
    config.write_text('domain_columns = ["region"]\n')
    with pytest.raises(SpecError, match="must be a table of chain column"):
        parse.read_config(str(config))


def test_plan_options() -> None:
    kw = parse.plan_options(
        _args("plan", "--levels", "2,3", "--rho", "1", "--target-levels", "1,mun")
    )
    assert kw["rho"] == 1.0 and kw["split"] == "optimal" and kw["target_levels"] == [1, "mun"]
    assert kw["contribution"] == 1 and kw["privacy"] == "bounded"
    for argv, message in [
        (("plan", "--rho", "1"), "give --levels"),
        (("plan", "db", "--levels", "2", "--rho", "1"), "not both"),
        (("plan", "db", "--hierarchy", "a", "--rho", "1"), "or --hierarchy and --domain"),
        (("plan", "--levels", "2", "--domain", "g"), "not both"),
        (("plan", "--hierarchy", "a", "--rho", "1"), "or --hierarchy and --domain"),
        (("plan", "--hierarchy", "a", "--domain", "geo", "--rho", "1"), "--domain geo is a table"),
    ]:
        with pytest.raises(UsageError, match=message):
            parse.plan_options(_args(*argv))
    # a domain in a file needs no database; --domain-columns maps its columns
    args = _args(
        "plan", "--hierarchy", "o_r,o_c", "--domain", "geo.parquet", "--rho", "1",
        "--domain-columns", "o_r=region", "--domain-columns", "o_c=city",
    )  # fmt: skip
    parse.plan_options(args)
    domain = parse.plan_domain(args)
    assert domain == Domain("geo.parquet", columns={"o_r": "region", "o_c": "city"})


def test_domain_columns_wrap_every_domain() -> None:
    args = _args(
        "release", "db", "od.parquet", "--hierarchy", "o_r,o_c", "--hierarchy", "d_r,d_c",
        "--domain", "geo_o", "--domain", "geo_d", "--domain-columns", "o_r=r,o_c=c,d_r=r,d_c=c",
        "--rho", "1",
    )  # fmt: skip
    mapping = {"o_r": "r", "o_c": "c", "d_r": "r", "d_c": "c"}
    assert parse.release_options(args)["domain"] == [
        Domain("geo_o", columns=mapping),
        Domain("geo_d", columns=mapping),
    ]
    for bad in ("o_r", "o_r=", "=r"):
        with pytest.raises(UsageError, match="chain_column=domain_column"):
            parse.build_parser().parse_args(["release", "db", "t", "--domain-columns", bad])
    with pytest.raises(UsageError, match="--domain-columns goes with --domain"):
        parse.release_options(
            _args("release", "db", "t", "--hierarchy", "a", "--domain-columns", "a=b")
        )


def test_chains() -> None:
    assert parse.chains(["a, b ,c"]) == ["a", "b", "c"]
    assert parse.chains(["a", "b,c"]) == [["a"], ["b", "c"]]


def test_features_flags_become_the_features_mapping() -> None:
    args = _args(
        "release", "db.duckdb", "trips", "--mechanism", "cbdp",
        "--features", "total:", "--features", "period:period",
        "--features", "trip:o_stop, d_stop ,period",
        "--domain", "pairs", "--domain", "periods", "--structure", "hierarchical",
        "--weights", "uniform", "--epsilon", "1",
    )  # fmt: skip
    options = parse.release_options(args)
    assert options["features"] == {
        "total": [],
        "period": ["period"],
        "trip": ["o_stop", "d_stop", "period"],
    }
    assert list(options["features"]) == ["total", "period", "trip"]  # coarse to fine, as typed
    assert options["domain"] == ["pairs", "periods"]
    assert (options["structure"], options["weights"], options["mechanism"]) == (
        "hierarchical",
        "uniform",
        "cbdp",
    )
    assert "hierarchy" not in options


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("period", "--features takes NAME:COLUMN,COLUMN"),
        (":period", "--features takes NAME:COLUMN,COLUMN"),
    ],
)
def test_bad_features_flags(value: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse.release_options(_args("release", "db", "t", "--features", value))
    with pytest.raises(UsageError, match="names 'a' twice"):
        parse.release_options(_args("release", "db", "t", "--features", "a:x", "--features", "a:y"))


def test_release_needs_a_hierarchy_or_features() -> None:
    with pytest.raises(
        UsageError, match=r"--hierarchy is required .* or --features with --mechanism cbdp"
    ):
        parse.release_options(_args("release", "db", "t", "--epsilon", "1"))
