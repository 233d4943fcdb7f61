"""Errors and warnings built from parts: one message, spelled for Python, the command line and
SQL."""

from __future__ import annotations

import math
import pickle
import warnings

import pytest

import inftda_sql
from inftda_sql._errors import (
    MISSING,
    Arg,
    BudgetError,
    BudgetExceededError,
    Code,
    DomainError,
    Func,
    InftdaError,
    InftdaWarning,
    InputDataError,
    InternalError,
    OutputExistsError,
    Placeholder,
    SpecError,
    Spelling,
    render,
)
from inftda_sql.core.accounting import Budget


@pytest.mark.parametrize(
    "arg,python,cli",
    [
        (Arg("output"), "output=", "--output"),
        (Arg("max_cells", MISSING), "max_cells=", "--max-cells"),
        (Arg("overwrite", True), "overwrite=True", "--overwrite"),
        (Arg("levels_view", False), "levels_view=False", "--no-levels-view"),
        (Arg("rho", ...), "rho=...", "--rho ..."),
        (Arg("rho", 0.5), "rho=0.5", "--rho 0.5"),
        (Arg("rho", math.inf), "rho=float('inf')", "--rho inf"),
        (Arg("rho", -math.inf), "rho=float('-inf')", "--rho -inf"),
        (Arg("rho", math.inf, "!r"), "rho=inf", "--rho inf"),
        (Arg("epsilon", 52.5, ".6g"), "epsilon=52.5", "--epsilon 52.5"),
        (Arg("delta", 1e-8, ".3g"), "delta=1e-08", "--delta 1e-08"),
        (Arg("delta", 1e-8), "delta=1e-08", "--delta 1e-08"),
        (Arg("delta", Code("1e-8")), "delta=1e-8", "--delta 1e-8"),
        (Arg("max_cells", 10_000_000, ","), "max_cells=10,000,000", "--max-cells 10,000,000"),
        (Arg("contribution", 2), "contribution=2", "--contribution 2"),
        (Arg("tree", "destination"), "tree='destination'", "--tree destination"),
        (Arg("count", "n", "!r"), "count='n'", "--count n"),
        (
            Arg("hierarchy", ["region", "mun"]),
            "hierarchy=['region', 'mun']",
            "--hierarchy region,mun",
        ),
        (
            Arg("hierarchy", [["o_reg", "o_mun"], ["d_reg"]]),
            "hierarchy=[['o_reg', 'o_mun'], ['d_reg']]",
            "--hierarchy o_reg,o_mun --hierarchy d_reg",
        ),
        (
            Arg(
                "hierarchy", [[Placeholder("origin columns")], [Placeholder("destination columns")]]
            ),
            "hierarchy=[[origin columns...], [destination columns...]]",
            "--hierarchy <origin columns> --hierarchy <destination columns>",
        ),
        (Arg("budget_override", True), "budget_override=True", "--budget-override"),
    ],
)
def test_an_arg_in_both_spellings(arg: Arg, python: str, cli: str) -> None:
    assert render([arg]) == arg.python() == python
    assert render([arg], cli=True) == arg.cli() == cli


def test_func_and_spelling() -> None:
    parts = [
        "raise it with ",
        Func("set_budget", command="budget"),
        Spelling(python=(" or ", Arg("domain", {"sex": ["F", "M"]})), cli=()),
        Spelling(python="domain must be a list of 2 domains", cli=(Arg("domain"), " twice")),
    ]
    assert render(parts) == (
        "raise it with set_budget() or domain={'sex': ['F', 'M']}domain must be a list of 2 domains"
    )
    assert render(parts, cli=True) == "raise it with `inftda-sql budget`--domain twice"


@pytest.mark.parametrize(
    "arg,sql",
    [
        (Arg("delta"), "delta :="),
        (Arg("rho", ...), "rho := ..."),
        (Arg("rho", 0.5), "rho := 0.5"),
        (Arg("rho", math.inf), "rho := 'inf'"),
        (Arg("rho", -math.inf, "!r"), "rho := '-inf'"),
        (Arg("epsilon", 52.5, ".6g"), "epsilon := 52.5"),
        (Arg("delta", Code("1e-8")), "delta := 1e-8"),
        (Arg("conversion", "tight"), "conversion := 'tight'"),
        (Arg("name", "o'brien"), "name := 'o''brien'"),
        (Arg("descending", False), "descending := false"),
        (Arg("target", None), "target := NULL"),
        (Arg("noisy", [3, -1]), "noisy := [3, -1]"),
    ],
)
def test_an_arg_in_the_sql_spelling(arg: Arg, sql: str) -> None:
    """The named-argument syntax of a DuckDB macro call, values as SQL literals."""
    assert render([arg], sql=True) == arg.sql() == sql


def test_the_sql_spelling_of_funcs_spellings_and_errors() -> None:
    parts = [
        Func("set_budget", command="budget"),
        Spelling(python=" py", cli=" cli"),
        Spelling(python=" py", cli=" cli", sql=(" ", Arg("rho", 0.5))),
    ]
    assert render(parts, sql=True) == "set_budget() py rho := 0.5"
    err = BudgetError("pass ", Arg("rho", math.inf), " for exact counts", param="rho")
    assert err.message(sql=True) == "pass rho := 'inf' for exact counts"
    assert str(err) == "pass rho=float('inf') for exact counts"
    warning = InftdaWarning(Arg("epsilon", 50.0, ".6g"), " is large")
    assert warning.message(sql=True) == "epsilon := 50 is large"
    with pytest.raises(ValueError, match="not both"):
        render(parts, cli=True, sql=True)


def test_errors_keep_their_builtin_bases_and_carry_param() -> None:
    for cls, base in [
        (BudgetError, ValueError),
        (BudgetExceededError, BudgetError),
        (SpecError, ValueError),
        (DomainError, ValueError),
        (InputDataError, ValueError),
        (OutputExistsError, ValueError),
        (InternalError, RuntimeError),
    ]:
        assert issubclass(cls, InftdaError) and issubclass(cls, base)
    err = OutputExistsError("'t' exists; pass ", Arg("overwrite", True), param="output")
    assert str(err) == "'t' exists; pass overwrite=True"
    assert err.args == ("'t' exists; pass overwrite=True",)  # as a plain message would have
    assert err.message() == str(err)
    assert err.message(cli=True) == "'t' exists; pass --overwrite"
    assert err.param == "output"
    assert SpecError("plain text").param is None
    assert SpecError("plain text").message(cli=True) == "plain text"
    with pytest.raises(ValueError, match=r"^'t' exists; pass overwrite=True$"):
        raise err


def test_internal_errors_ask_to_be_reported() -> None:
    err = InternalError("a level was not refined")
    assert str(err) == "a level was not refined (this is a bug in inftda_sql; please report it)"


def test_errors_survive_pickling() -> None:
    err = BudgetError(Arg("rho", 0.5), " is too much", param="rho")
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is BudgetError
    assert (str(back), back.message(cli=True), back.param) == (
        "rho=0.5 is too much",
        "--rho 0.5 is too much",
        "rho",
    )


def test_library_errors_name_their_parameter() -> None:
    with pytest.raises(BudgetError) as info:
        Budget.from_args(epsilon=1.0)
    assert info.value.param == "delta"
    assert str(info.value) == (
        "epsilon=1.0 needs a delta: pass delta=... as well (far below 1/N, e.g. delta=1e-8), "
        "or pass rho=... instead"
    )
    assert info.value.message(cli=True) == (
        "--epsilon 1.0 needs a delta: pass --delta ... as well (far below 1/N, e.g. --delta "
        "1e-8), or pass --rho ... instead"
    )
    with pytest.raises(SpecError) as spec:
        inftda_sql.plan([2, 3], rho=1.0, split=[1, 1], target_levels=[1])
    assert spec.value.param == "target_levels"
    assert spec.value.message(cli=True) == "--target-levels goes with --split optimal"


def test_the_epsilon_warning_is_structured() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Budget.from_args(epsilon=50.0, delta=1e-8)
    (w,) = caught
    assert issubclass(w.category, UserWarning)
    assert isinstance(w.message, InftdaWarning)
    assert str(w.message).startswith("epsilon=50 (at delta=1e-08) is above 20")
    assert w.message.message(cli=True).startswith("--epsilon 50 (at --delta 1e-08) is above 20")
    assert w.message.param == "epsilon"
    with pytest.warns(UserWarning, match="protects individuals very little"):
        Budget.from_args(epsilon=50.0, delta=1e-8)
