"""The release options are declared once (inftda_sql._options): the Python front doors, the
command line, the TOML config and the table of docs/how-to/command-line.md all agree with that
one table."""

from __future__ import annotations

import argparse
import inspect
import re
from pathlib import Path

import pytest

import inftda_sql
from inftda_sql._options import RELEASE_OPTIONS, Option, markdown_table, options_for
from inftda_sql.cli import parse

PAGE = Path(__file__).resolve().parents[2] / "docs" / "how-to" / "command-line.md"


def _keywords(func: object) -> list[inspect.Parameter]:
    params = inspect.signature(func).parameters.values()  # type: ignore[arg-type]
    return [p for p in params if p.kind is p.KEYWORD_ONLY]


def test_release_signature_is_the_schema() -> None:
    params = _keywords(inftda_sql.release)
    options = list(options_for("duckdb"))
    assert [p.name for p in params] == [o.name for o in options]
    assert {p.name: p.default for p in params} == {o.name: o.default for o in options}


def test_spark_release_signature_is_the_schema() -> None:
    pytest.importorskip("pyspark", reason="the spark extra is not installed")
    import inftda_sql.spark

    params = _keywords(inftda_sql.spark.release)
    options = list(options_for("spark"))
    assert [p.name for p in params] == [o.name for o in options]
    for p, o in zip(params, options, strict=True):
        # a front door may require what the other defaults (Spark's hierarchy), never differ
        assert p.default is inspect.Parameter.empty or p.default == o.default, p.name


def test_every_release_flag_comes_from_the_schema() -> None:
    parser = parse.build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    flags = {s for a in sub.choices["release"]._actions for s in a.option_strings}
    own = {"-h", "--help", "--config", "--domain-columns", "--storage-version", "--quiet"}
    schema = {o.flag for o in RELEASE_OPTIONS if o.flag and "duckdb" in o.engines}
    assert flags - own == schema


@pytest.mark.parametrize("opt", [o for o in RELEASE_OPTIONS if o.flag], ids=lambda o: o.name)
def test_a_flag_gives_its_keyword(opt: Option) -> None:
    if "duckdb" not in opt.engines:
        pytest.skip(f"{opt.name} is not a flag of the DuckDB command")
    assert opt.flag is not None
    argv = ["release", "db", "t", "--hierarchy", "a,b"]
    if opt.cli in ("true", "false"):
        argv.append(opt.flag)
        expected: object = opt.cli == "true"
    elif opt.cli == "append":
        value = "x:a" if opt.name == "features" else "a"
        argv += [opt.flag, value]
        expected = None  # the list is turned into a value by its own reader
    else:
        value = {"int": "3", "float": "0.5", "split": "1,2", "str": "col"}.get(opt.value_type)
        if opt.value_type == "choice":
            value = (opt.choices or ("",))[-1] if opt.choices else None
            if value is None:
                parser = parse.build_parser()
                (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
                (action,) = [
                    a for a in sub.choices["release"]._actions if opt.flag in a.option_strings
                ]
                value = list(action.choices or ())[-1]
        argv += [opt.flag, str(value)]
        expected = {"int": 3, "float": 0.5, "split": [1.0, 2.0]}.get(opt.value_type, value)
    options = parse.release_options(parse.build_parser().parse_args(argv))
    assert opt.name in options
    if expected is not None:
        assert options[opt.name] == expected


def test_readme_option_table_is_generated_from_the_schema() -> None:
    text = PAGE.read_text(encoding="utf-8")
    match = re.search(r"<!-- options:start -->\n(.*?)\n<!-- options:end -->", text, re.S)
    assert match, "docs/how-to/command-line.md lost its option table markers"
    assert match.group(1).strip() == markdown_table(), (
        "the option table of docs/how-to/command-line.md is stale: regenerate it with python -m inftda_sql._options"
    )


def test_an_option_without_a_flag_has_no_toml_key() -> None:
    with pytest.raises(ValueError, match="no TOML key"):
        Option("x", None, "doc")
    with pytest.raises(ValueError, match="cli must be"):
        Option("x", None, "doc", flag="--x", cli="maybe")


def test_spark_count_of_counts_takes_the_duckdb_arguments() -> None:
    """inftda_sql.spark.release_count_of_counts mirrors the DuckDB front door: the same
    keywords, order and defaults, but DuckDB's write ``timeout`` (a file's writers) and Spark's
    ``ledger`` (the ledger folder)."""
    pytest.importorskip("pyspark", reason="the spark extra is not installed")
    import inftda_sql.spark

    duck = {p.name: p.default for p in _keywords(inftda_sql.release_count_of_counts)}
    spark = {p.name: p.default for p in _keywords(inftda_sql.spark.release_count_of_counts)}
    assert [n for n in duck if n != "timeout"] == [n for n in spark if n != "ledger"]
    assert all(spark[n] == duck[n] for n in duck if n != "timeout")
