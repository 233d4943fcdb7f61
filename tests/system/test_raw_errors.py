"""Bad input that used to surface as a raw exception (OverflowError, MemoryError, a DuckDB
error quoted out of context) now gets an InftdaError naming the problem, the value and the fix,
on every front end that can meet it: the Python API, the command line, the samplers.

Each case failed on the main branch before these fixes (issue 23, item 5).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest

import inftda_sql
from inftda_sql import InftdaError, InputDataError, SpecError
from inftda_sql._errors import InftdaWarning
from inftda_sql.cli import main
from inftda_sql.core.noise import sample_discrete_gaussian, sample_discrete_laplace
from tests.system.helpers import make_geo, make_persons

GEO = ["region", "province", "mun"]


# ------------------------------------------------------------------------------ the samplers


@pytest.mark.parametrize(
    ("draw", "value", "name"),
    [
        (sample_discrete_gaussian, 1e300, "sigma"),
        (sample_discrete_gaussian, [1.0, 1e300], "sigma"),
        (sample_discrete_laplace, 1e19, "scale"),
        (sample_discrete_laplace, [1.0, 1e19], "scale"),
    ],
)
def test_samplers_refuse_scales_beyond_int64(
    draw: Callable[..., Any], value: object, name: str
) -> None:
    with pytest.raises(SpecError) as info:
        draw(value)
    assert f"{name} must be at most 2**57 (about 1.4e17) so that every draw fits int64" in str(
        info.value
    )


# ------------------------------------------------------------------------ closed connections


def _db(con: duckdb.DuckDBPyConnection) -> None:
    make_geo(con)
    make_persons(con)


CALLS: dict[str, Callable[[duckdb.DuckDBPyConnection, Path], object]] = {
    "release": lambda con, _: inftda_sql.release(
        con, "persons", hierarchy=GEO, domain="geo", rho=1.0
    ),
    "release_count_of_counts": lambda con, _: inftda_sql.release_count_of_counts(
        con, "persons", group="mun", hierarchy=["region"], groups="geo", epsilon=1.0, max_size=3
    ),
    "evaluate": lambda con, _: inftda_sql.evaluate(con, "persons", "o", hierarchy=GEO),
    "evaluate_count_of_counts": lambda con, _: inftda_sql.evaluate_count_of_counts(
        con, "persons", "o", group="mun", hierarchy=["region"]
    ),
    "plan": lambda con, _: inftda_sql.plan(con=con, hierarchy=GEO, domain="geo", rho=1.0),
    "publish": lambda con, d: inftda_sql.publish(con, "o", d / "shared.duckdb"),
    "ledger": lambda con, _: inftda_sql.ledger(con),
    "set_budget": lambda con, _: inftda_sql.set_budget(con, "persons", rho=1.0),
    "register": lambda con, _: inftda_sql.register(con),
    "plot_zoom": lambda con, d: inftda_sql.plot_zoom(
        con, "persons", "o", d / "z.png", hierarchy=GEO
    ),
    "storage_version": lambda con, _: inftda_sql.storage_version(con),
}


@pytest.mark.parametrize("function", list(CALLS))
def test_a_closed_connection_is_named_up_front(tmp_path: Path, function: str) -> None:
    """Not "the connection has an open transaction", nor DuckDB's bare "Connection already
    closed!": which function, what is wrong, and how to get a connection back."""
    con = duckdb.connect(str(tmp_path / "data.duckdb"))
    _db(con)
    inftda_sql.release(con, "persons", hierarchy=GEO, domain="geo", rho=1.0, output="o")
    con.close()
    with pytest.raises(SpecError) as info:
        CALLS[function](con, tmp_path)
    message = str(info.value)
    assert message.startswith(f"{function}: the connection is closed; ")
    assert "open it again with duckdb.connect(...)" in message
    assert "transaction" not in message
    assert info.value.param == "con"


@pytest.mark.parametrize("function", ["release", "ledger", "set_budget", "evaluate"])
def test_a_path_instead_of_a_connection(tmp_path: Path, function: str) -> None:
    with pytest.raises(SpecError) as info:
        CALLS[function]("data.duckdb", tmp_path)  # type: ignore[arg-type]
    assert (
        f"{function} needs a DuckDB connection, got str 'data.duckdb'; pass "
        "inftda_sql.connect('data.duckdb')" in str(info.value)
    )


# -------------------------------------------------------------------- count-of-counts memory


def _households(con: duckdb.DuckDBPyConnection, *, largest: int = 3) -> None:
    """Two counties; a view of the persons that fails if anything reads its rows."""
    con.execute(
        "CREATE TABLE listed AS SELECT * FROM (VALUES ('A', 'a1', 2), ('A', 'a2', 1)) "
        "t(state, county, n)"
    ).fetchall()
    con.execute(
        "CREATE TABLE people AS SELECT * FROM (VALUES (1, 'A', 'a1'), (2, 'A', 'a1'), "
        "(2, 'A', 'a1'), (3, 'A', 'a2')) t(hh, state, county)"
    ).fetchall()
    con.execute(f"INSERT INTO people SELECT 3, 'A', 'a2' FROM range({largest - 1})").fetchall()
    con.execute(
        "CREATE VIEW guarded AS SELECT * FROM people "
        "WHERE error('the private rows were read') IS NULL"
    ).fetchall()


def _objects(con: duckdb.DuckDBPyConnection) -> list[Any]:
    """The tables and views (the guarded view cannot be counted: reading it fails)."""
    return con.execute("SELECT table_name FROM information_schema.tables ORDER BY 1").fetchall()


@pytest.mark.parametrize("max_size", [10**12, 10**10])
def test_count_of_counts_refuses_a_max_size_beyond_memory_before_reading_data(
    con: duckdb.DuckDBPyConnection, max_size: int
) -> None:
    """max_size=10**12 tried to allocate 7.28 TiB (numpy's MemoryError) after reading the
    data; now the size of one region's chunk is checked against the memory available, from
    public parameters, before any row of the input is read."""
    _households(con)
    before = _objects(con)
    with pytest.raises(SpecError) as info:
        inftda_sql.release_count_of_counts(
            con, "guarded", group="hh", hierarchy=["state", "county"], groups="listed",
            epsilon=1.0, max_size=max_size,
        )  # fmt: skip
    message = str(info.value)
    assert message.startswith(f"max_size={max_size:,} needs about ")
    assert "of working memory, but " in message and " is available" in message
    assert "pass a smaller max_size= (at most " in message
    assert "method='unattributed'" in message
    assert info.value.param == "max_size"
    assert _objects(con) == before


def test_count_of_counts_cli_names_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "data.duckdb"
    with duckdb.connect(str(db)) as con:
        _households(con)
    argv = ["count-of-counts", str(db), "guarded", "--group", "hh", "--hierarchy", "state,county"]
    argv += ["--groups", "listed", "--epsilon", "1", "--max-size", str(10**12)]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("error: --max-size 1,000,000,000,000 needs about ")
    assert "pass a smaller --max-size (at most " in err and "--method unattributed" in err


def test_a_private_max_size_estimate_is_clipped_to_memory(
    con: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With max_size estimated privately, the estimate is clipped to the largest size that
    fits in memory (post-processing of a noisy value), with a warning naming the limit only."""
    from inftda_sql.core.coc import BYTES_PER_ENTRY
    from inftda_sql.kinds import count_of_counts as _count_of_counts

    _households(con, largest=5000)
    con.execute("CREATE OR REPLACE VIEW guarded AS SELECT * FROM people").fetchall()
    monkeypatch.setattr(_count_of_counts, "available_memory", lambda: 100 * BYTES_PER_ENTRY)
    with pytest.warns(InftdaWarning) as caught:
        r = inftda_sql.release_count_of_counts(
            con, "guarded", group="hh", hierarchy=["state", "county"], groups="listed",
            epsilon=float("inf"),
        )  # fmt: skip
    assert r.max_size == 101  # min_size 1 + 100 entries of one region
    (warning,) = caught
    text = str(warning.message)
    assert "the private estimate of max_size was clipped to 101" in text
    assert "pass max_size= to choose it" in text
    assert "5000" not in text and "5,000" not in text  # the true largest group


# ------------------------------------------------------------------------------- CSV files


RAGGED = "region,province,mun\nNorth,N1,n1a\nNorth,N1\nSouth,S1,s1a,extra\nSouth,S1,s1c\n"
GEO_CSV = "region,province,mun\n" + "".join(
    f"{r},{p},{m}\n"
    for r, p, m in [
        ("North", "N1", "n1a"), ("North", "N1", "n1b"), ("North", "N2", "n2a"),
        ("South", "S1", "s1a"), ("South", "S1", "s1b"), ("South", "S1", "s1c"),
        ("East", "E1", "e1a"),
    ]
)  # fmt: skip
LATE = "region,province,mun\n" + "North,N1,n1a\n" * 30_000 + "North,N1\n"
LATE_TYPE = "region,province,mun,n\n" + "North,N1,n1a,1\n" * 30_000 + "North,N1,n1a,abc\n"


def _files(folder: Path) -> None:
    for name, text in {
        "ragged.csv": RAGGED,
        "geo.csv": GEO_CSV,
        "late.csv": LATE,
        "late_type.csv": LATE_TYPE,
    }.items():
        (folder / name).write_text(text, encoding="utf-8")


CSV_CASES = [
    # (input file, domain file, count, error, fragments)
    (
        "ragged.csv", "geo.csv", None, InputDataError,
        ["input table: CSV file '", "ragged.csv': line 3 has 2 fields, but its header has 3",
         "null_padding=true"],
    ),
    (
        "late.csv", "geo.csv", None, InputDataError,
        ["late.csv': line 30002 has 2 fields, but its header has 3", "null_padding=true"],
    ),
    (
        "late_type.csv", "geo.csv", "n", InputDataError,
        ["late_type.csv': line 30002: column 'n' holds a value that is not BIGINT",
         "types={'n': 'VARCHAR'}"],
    ),
    (
        "geo.csv", "ragged.csv", None, inftda_sql.DomainError,
        ["domain: CSV file '", "ragged.csv': line 3 has 2 fields"],
    ),
]  # fmt: skip


@pytest.mark.parametrize(("data", "domain", "count", "error", "what"), CSV_CASES)
def test_a_broken_csv_is_named_with_its_line(
    tmp_path: Path,
    data: str,
    domain: str,
    count: str | None,
    error: type[InftdaError],
    what: list[str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A CSV file with a line of the wrong number of fields was reported as a missing column
    ("column 'mun' not in CSV file", the sniffer having read one column) or as DuckDB's raw
    error; now as the file, the line and the fix, without the line's (private) content."""
    _files(tmp_path)
    con = duckdb.connect()
    with pytest.raises(error) as info:
        inftda_sql.release(
            con, str(tmp_path / data), hierarchy=GEO, domain=str(tmp_path / domain), rho=1.0,
            count=count, output="o",
        )  # fmt: skip
    message = str(info.value)
    for fragment in what:
        assert fragment in message, message
    assert "not in CSV file" not in message and "Original Line" not in message
    assert "abc" not in message and "extra" not in message
    # the command line, into a new database file
    argv = ["release", str(tmp_path / "out.duckdb"), str(tmp_path / data), "--hierarchy"]
    argv += [",".join(GEO), "--domain", str(tmp_path / domain), "--rho", "1"]
    argv += ["--count", count] if count else []
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    for fragment in what:
        assert fragment in err, err


def test_csv_line_errors_reach_sql_users_too(tmp_path: Path) -> None:
    """evaluate() reads the same files: the same message."""
    _files(tmp_path)
    con = duckdb.connect()
    make_geo(con)
    make_persons(con)
    inftda_sql.release(con, "persons", hierarchy=GEO, domain="geo", rho=1.0, output="o")
    with pytest.raises(InputDataError, match=re.escape("late.csv': line 30002 has 2 fields")):
        inftda_sql.evaluate(con, str(tmp_path / "late.csv"), "o", hierarchy=GEO)


# ----------------------------------------------------------------- found by trying bad input


@pytest.mark.parametrize("options", [{"rho": 1e-300}, {"rho": 1e-40}, {"contribution": 10**30}])
def test_a_budget_too_small_to_draw_is_refused_before_the_data_is_read(
    options: dict[str, Any], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Noise beyond the samplers' range (sigma 1.7e150 for rho=1e-300) stopped with the
    sampler's OverflowError after the scan; now the accounting is checked first, naming the
    parameters to change, on both front ends."""
    con = duckdb.connect()
    _db(con)
    con.execute(
        "CREATE VIEW guarded AS SELECT * FROM persons WHERE error('the private rows were read') "
        "IS NULL"
    ).fetchall()
    kw: dict[str, Any] = {"hierarchy": GEO, "domain": "geo", "rho": 1.0, **options}
    with pytest.raises(inftda_sql.BudgetError) as info:
        inftda_sql.release(con, "guarded", **kw)
    message = str(info.value)
    assert "the budget is so small that a level's noise has sigma " in message
    assert "raise rho= (or epsilon=) or lower contribution=" in message
    db = tmp_path / "data.duckdb"
    with duckdb.connect(str(db)) as file_con:
        _db(file_con)
    argv = ["release", str(db), "persons", "--hierarchy", ",".join(GEO), "--domain", "geo"]
    argv += ["--rho", str(options.get("rho", 1.0))]
    argv += ["--contribution", str(options["contribution"])] if "contribution" in options else []
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "raise --rho (or --epsilon) or lower --contribution" in err


def test_progress_that_is_not_a_function(con: duckdb.DuckDBPyConnection) -> None:
    _db(con)
    with pytest.raises(SpecError, match=r"progress must be a callable .* got int"):
        inftda_sql.release(con, "persons", hierarchy=GEO, domain="geo", rho=1.0, progress=5)  # type: ignore[arg-type]


def test_a_non_ascii_column_in_another_case_is_named_not_a_binder_error(
    con: duckdb.DuckDBPyConnection,
) -> None:
    """DuckDB folds the case of ASCII letters only: "MÜÑ" does not bind müñ. The lookup said
    it existed and DuckDB's Binder Error followed; now the spelling to write is named."""
    con.execute(
        "CREATE TABLE t AS SELECT * FROM (VALUES ('N', 'a')) v(\"Région\", \"müñ\")"
    ).fetchall()
    with pytest.raises(InputDataError) as info:
        inftda_sql.release(con, "t", hierarchy=["Région", "MÜÑ"], domain_from_data=True, rho=1.0)
    assert "column 'MÜÑ' (hierarchy column) is spelled 'müñ'" in str(info.value)
    assert "write 'müñ'" in str(info.value)
    inftda_sql.release(con, "t", hierarchy=["RéGION", "müñ"], domain_from_data=True, rho=1.0)


def test_an_empty_csv_file_is_called_empty(tmp_path: Path) -> None:
    (tmp_path / "empty.csv").write_text("", encoding="utf-8")
    with pytest.raises(InputDataError) as info:
        inftda_sql.release(
            duckdb.connect(), str(tmp_path / "empty.csv"), hierarchy=GEO, domain_from_data=True,
            rho=1.0, output="o",
        )  # fmt: skip
    assert "empty.csv' is empty; it needs a header line" in str(info.value)
    assert "column0" not in str(info.value)


def test_the_pandas_drop_in_names_itself_for_a_closed_connection() -> None:
    import pandas as pd

    from inftda_sql.pandas import inf_tda

    con = duckdb.connect()
    con.close()
    data = pd.Series([1, 2], index=pd.MultiIndex.from_tuples([("a", "x"), ("a", "y")]))
    with pytest.raises(SpecError, match=r"^inf_tda: the connection is closed; "):
        inf_tda(data, (1.0, 1e-8), 1, con=con)


@pytest.mark.parametrize("budget", [{"rho": 1e-300}, {"epsilon": 1e-300}])
def test_a_feature_release_checks_its_noise_range_before_the_scan(
    con: duckdb.DuckDBPyConnection, budget: dict[str, float]
) -> None:
    _db(con)
    con.execute(
        "CREATE VIEW guarded AS SELECT * FROM persons WHERE error('the private rows were read') "
        "IS NULL"
    ).fetchall()
    with pytest.raises(inftda_sql.BudgetError, match="the budget is so small that a level's"):
        inftda_sql.release(
            con, "guarded", mechanism="cbdp", domain="geo",
            features={"r": ["region"], "m": GEO}, **budget,
        )  # fmt: skip


# ------------------------------------------------------------ budgets beyond float's range


@pytest.mark.parametrize("epsilon", [1e-300, 1e-17, 5e-324])
def test_a_count_of_counts_epsilon_too_small_names_epsilon(
    con: duckdb.DuckDBPyConnection, epsilon: float
) -> None:
    """epsilon=1e-300 said 'rho must be positive, got 0.0' (epsilon^2 / 2 underflows), a
    parameter the caller never passed; 1e-17 stopped in the sampler after the scan."""
    _households(con)
    with pytest.raises(inftda_sql.BudgetError) as info:
        inftda_sql.release_count_of_counts(
            con, "guarded", group="hh", hierarchy=["state", "county"], groups="listed",
            epsilon=epsilon,
        )  # fmt: skip
    message = str(info.value)
    assert message.startswith(f"epsilon={epsilon!r} is so small that a level's noise has scale ")
    assert message.endswith("raise epsilon=") and "rho" not in message
    assert info.value.param == "epsilon"


BUDGET_CALLS: dict[str, Callable[[duckdb.DuckDBPyConnection], object]] = {
    "release rho=1e308": lambda con: inftda_sql.release(
        con, "guarded", hierarchy=GEO, domain="geo", rho=1e308
    ),
    "set_budget rho=1e308": lambda con: inftda_sql.set_budget(con, "persons", rho=1e308),
    "pure epsilon=1e308": lambda _: inftda_sql.Budget.from_args(epsilon=1e308, pure=True),
    "release rho=1e-320": lambda con: inftda_sql.release(
        con, "guarded", hierarchy=GEO, domain="geo", rho=1e-320
    ),
}
BUDGET_ERRORS = {
    "release rho=1e308": ("rho", "rho=1e+308 is too large to be a privacy budget"),
    "set_budget rho=1e308": ("rho", "rho=1e+308 is too large to be a privacy budget"),
    "pure epsilon=1e308": ("epsilon", "epsilon=1e+308 is too large to be a privacy budget"),
    "release rho=1e-320": ("rho", "rho=1e-320 is too small to be a budget"),
}


@pytest.mark.parametrize("case", sorted(BUDGET_CALLS))
def test_budgets_beyond_float_range_name_the_value_and_the_fix(
    con: duckdb.DuckDBPyConnection, case: str
) -> None:
    """rho=1e308 said 'rho=1e+308 and epsilon=inf are inconsistent' (its epsilon overflows); a
    pure epsilon=1e308 silently became an infinite, non-private budget; rho=1e-320 failed an
    internal check of the accounting."""
    _db(con)
    con.execute(
        "CREATE VIEW guarded AS SELECT * FROM persons WHERE error('the private rows were read') "
        "IS NULL"
    ).fetchall()
    param, start = BUDGET_ERRORS[case]
    with pytest.raises(inftda_sql.BudgetError) as info:
        BUDGET_CALLS[case](con)
    assert str(info.value).startswith(start), str(info.value)
    assert "inconsistent" not in str(info.value)
    assert info.value.param == param
