"""release_count_of_counts() end to end on DuckDB: exactness, invariants, checks that teach,
the ledger and budgets, publish, evaluate, the command line, and the noise scale."""

from __future__ import annotations

import json
import math
from pathlib import Path

import duckdb
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import inftda_sql
from inftda_sql import BudgetExceededError, DomainError, InputDataError, OutputExistsError
from inftda_sql._errors import SpecError
from inftda_sql.cli import main as cli_main
from inftda_sql.core import isotonic as isotonic_module
from inftda_sql.core.accounting import coc as accounting_module
from inftda_sql.core.noise import discrete_laplace_pmf
from inftda_sql.synthetic import housing_like, race_like, taxi_like

KW = {"group": "hh", "hierarchy": ["state", "county"], "groups": "listed"}


def _persons(con: duckdb.DuckDBPyConnection, households: dict[str, list[int]]) -> None:
    """persons(hh, state, county): households per county 'S/c' with the given sizes; the
    groups table lists exactly those households."""
    rows, listed, hh = [], [], 0
    for path, sizes in households.items():
        state, county = path.split("/")
        listed.append((state, county, len(sizes)))
        for size in sizes:
            hh += 1
            rows += [(hh, state, county)] * size
    con.execute("CREATE TABLE persons (hh BIGINT, state VARCHAR, county VARCHAR)").fetchall()
    if rows:
        con.executemany("INSERT INTO persons VALUES (?, ?, ?)", rows)
    con.execute("CREATE TABLE listed (state VARCHAR, county VARCHAR, n BIGINT)").fetchall()
    con.executemany("INSERT INTO listed VALUES (?, ?, ?)", listed)


def _truth(con: duckdb.DuckDBPyConnection) -> list[tuple[object, ...]]:
    return con.execute(
        "SELECT state, county, size, count(*) FROM (SELECT hh, state, county, count(*) AS size "
        "FROM persons GROUP BY ALL) GROUP BY ALL ORDER BY ALL"
    ).fetchall()


WORLD = {"A/a1": [1, 1, 2, 5], "A/a2": [3], "B/b1": [1, 2, 2, 2, 7]}


@pytest.mark.parametrize("method", ["cumulative", "unattributed", "naive"])
@pytest.mark.parametrize("consistency", ["topdown", "leaves"])
def test_infinite_budget_is_exact(
    con: duckdb.DuckDBPyConnection, method: str, consistency: str
) -> None:
    _persons(con, WORLD)
    r = inftda_sql.release_count_of_counts(
        con,
        "persons",
        **KW,
        max_size=10,
        epsilon=math.inf,
        method=method,
        consistency=consistency,
    )
    assert con.execute(f"SELECT * FROM {r.output} ORDER BY ALL").fetchall() == _truth(con)
    assert not r.is_private and "infinite budget" in r.non_private[0]
    levels = con.execute(
        f"SELECT level, level_name, state, county, size, groups FROM {r.levels_view} "
        "WHERE level < 2 ORDER BY ALL"
    ).fetchall()
    assert (0, "root", None, None, 2, 4) in levels and (1, "state", "B", None, 2, 3) in levels


@settings(max_examples=25, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["A/a1", "A/a2", "B/b1", "B/b2", "C/c1"]),
        st.lists(st.integers(1, 30), min_size=0, max_size=15),
        min_size=1,
    ),
    st.sampled_from(["cumulative", "unattributed"]),
    st.sampled_from([0.1, 1.0]),
    st.integers(0, 1000),
)
def test_invariants_of_a_noisy_release(
    households: dict[str, list[int]], method: str, epsilon: float, seed: int
) -> None:
    with duckdb.connect() as con:
        _persons(con, households)
        r = inftda_sql.release_count_of_counts(
            con, "persons", **KW, max_size=20, epsilon=epsilon, method=method, seed=seed
        )
        per_level = con.execute(
            f"SELECT level, state, county, sum(groups), min(groups), min(size), max(size) "
            f"FROM {r.levels_view} GROUP BY ALL"
        ).fetchall()
        listed = {(s, c): n for s, c, n in con.execute("SELECT * FROM listed").fetchall()}
    by_state: dict[str, int] = {}
    for (s, _), n in listed.items():
        by_state[s] = by_state.get(s, 0) + n
    for level, state, county, total, smallest, lo, hi in per_level:
        assert smallest > 0 and lo >= 1 and hi <= 20  # non-negative integers, sizes in range
        expected = (
            sum(listed.values())
            if level == 0
            else by_state[state]
            if level == 1
            else listed[(state, county)]
        )
        assert total == expected  # every node sums to its public number of groups


def test_groups_may_be_empty_with_min_size_0(con: duckdb.DuckDBPyConnection) -> None:
    _persons(con, WORLD)
    con.execute("UPDATE listed SET n = n + 2 WHERE county = 'a2'").fetchall()
    with pytest.raises(InputDataError, match=r"1 region\(s\) hold fewer groups.*min_size=0"):
        inftda_sql.release_count_of_counts(con, "persons", **KW, max_size=9, epsilon=math.inf)
    r = inftda_sql.release_count_of_counts(
        con, "persons", **KW, max_size=9, epsilon=math.inf, min_size=0
    )
    rows = con.execute(f"SELECT * FROM {r.output} WHERE size = 0").fetchall()
    assert rows == [("A", "a2", 0, 2)]
    ev = inftda_sql.evaluate_count_of_counts(
        con,
        "persons",
        r.output,
        group="hh",
        hierarchy=["state", "county"],
        groups="listed",
        groups_column="n",
    )
    assert [row[3] for row in ev.fetchall()] == [0.0, 0.0, 0.0]


def test_checks_name_regions_never_private_counts(con: duckdb.DuckDBPyConnection) -> None:
    _persons(con, WORLD)
    kw = {**KW, "max_size": 9, "epsilon": 1.0}
    con.execute("UPDATE listed SET n = 1 WHERE county = 'b1'").fetchall()  # 5 found, 1 listed
    with pytest.raises(InputDataError) as err:
        inftda_sql.release_count_of_counts(con, "persons", **kw)
    text = str(err.value)
    assert "1 region(s) hold more groups than the groups table lists" in text
    assert "HAVING found <> listed" in text and "5" not in text.split("Find them")[0]
    hint = text.split("Find them with: ")[1]  # the owner's query runs as printed
    assert con.execute(hint).fetchall() == [("B", "b1", 1, 5)]
    con.execute("UPDATE listed SET n = 5 WHERE county = 'b1'").fetchall()
    con.execute("INSERT INTO persons VALUES (1, 'A', 'a2')").fetchall()  # hh 1 in a1 and a2
    with pytest.raises(InputDataError, match=r"1 group\(s\) .* sit in more than one leaf"):
        inftda_sql.release_count_of_counts(con, "persons", **kw)
    con.execute("DELETE FROM persons WHERE hh = 1 AND county = 'a2'").fetchall()
    con.execute("INSERT INTO persons VALUES (99, 'B', 'x9')").fetchall()
    with pytest.raises(DomainError, match=r"does not list.*county='x9'"):
        inftda_sql.release_count_of_counts(con, "persons", **kw)
    con.execute("UPDATE persons SET state = 'A' WHERE hh = 99").fetchall()
    con.execute("UPDATE persons SET county = 'b1' WHERE hh = 99").fetchall()  # b1 is under B
    with pytest.raises(DomainError, match=r"state='A', county='b1'"):
        inftda_sql.release_count_of_counts(con, "persons", **kw)
    con.execute("DELETE FROM persons WHERE hh = 99").fetchall()
    con.execute("INSERT INTO listed VALUES ('A', 'a2', 1)").fetchall()
    with pytest.raises(DomainError, match=r"listed more than once, e\.g\. county='a2'"):
        inftda_sql.release_count_of_counts(con, "persons", **kw)
    con.execute("DELETE FROM listed WHERE county = 'a2'").fetchall()
    con.execute("INSERT INTO listed VALUES ('A', 'a2', -1)").fetchall()
    with pytest.raises(DomainError, match="negative number of groups"):
        inftda_sql.release_count_of_counts(con, "persons", **kw)


def test_groups_over_the_input_file_are_refused(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    """A groups table that is a view over the input's parquet file (DuckDB's plan does not name
    the file; the view's SQL does) would list the private households: refused."""
    _persons(con, WORLD)
    path = tmp_path / "persons.parquet"
    con.execute(f"COPY persons TO '{path}' (FORMAT parquet)").fetchall()
    con.execute(
        f"CREATE VIEW counted AS SELECT state, county, count(DISTINCT hh) AS n FROM '{path}' "
        "GROUP BY ALL"
    ).fetchall()
    kw = {**KW, "groups": "counted"}
    with pytest.raises(inftda_sql.DomainError, match=r"persons\.parquet, which the input reads"):
        inftda_sql.release_count_of_counts(
            con, str(path), **kw, max_size=10, epsilon=1.0, output="sizes"
        )
    # the file's own groups table serves, and the output is named after the file
    r = inftda_sql.release_count_of_counts(con, path, **KW, max_size=10, epsilon=math.inf)
    assert r.output == "persons_count_of_counts"
    assert con.execute(f"SELECT * FROM {r.output} ORDER BY ALL").fetchall() == _truth(con)


def test_argument_errors(con: duckdb.DuckDBPyConnection) -> None:
    _persons(con, WORLD)
    ok = {**KW, "max_size": 9, "epsilon": 1.0}
    with pytest.raises(DomainError, match="'nope' is not a table"):
        inftda_sql.release_count_of_counts(con, "persons", **{**ok, "groups": "nope"})
    with pytest.raises(InputDataError, match="column 'household'"):
        inftda_sql.release_count_of_counts(con, "persons", **{**ok, "group": "household"})
    with pytest.raises(SpecError, match="method must be one of"):
        inftda_sql.release_count_of_counts(con, "persons", **ok, method="median")
    with pytest.raises(SpecError, match="one chain"):
        inftda_sql.release_count_of_counts(
            con, "persons", **{**ok, "hierarchy": [["state"], ["county"]]}
        )
    con.execute("ALTER TABLE listed ADD COLUMN note VARCHAR").fetchall()
    with pytest.raises(DomainError, match="name the one holding the number of groups"):
        inftda_sql.release_count_of_counts(con, "persons", **ok)
    r = inftda_sql.release_count_of_counts(con, "persons", **ok, groups_column="n")
    with pytest.raises(OutputExistsError, match="overwrite"):
        inftda_sql.release_count_of_counts(con, "persons", **ok, groups_column="n")
    assert r.output == "persons_count_of_counts"


def test_ledger_budget_and_publish(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    _persons(con, WORLD)
    inftda_sql.set_budget(con, "persons", rho=0.2)
    r = inftda_sql.release_count_of_counts(con, "persons", **KW, max_size=9, epsilon=1.0)
    (row,) = con.execute(
        "SELECT mechanism, guarantee, rho, epsilon, delta, level_names, seeded, details "
        "FROM inftda_releases"
    ).fetchall()
    assert row[:5] == ("count_of_counts:cumulative", "pureDP", pytest.approx(1 / 6), 1.0, 0.0)
    assert row[5] == ["root", "state", "county"] and row[6] is False
    details = json.loads(row[7])
    assert details["kind"] == "count_of_counts" and details["mechanism_params"]["max_size"] == 9
    assert "seconds" in json.dumps(details["diagnostics (not private, for the data owner only)"])
    # rho 1/6 spent of 0.2: another epsilon-1 release does not fit
    with pytest.raises(BudgetExceededError, match="would spend"):
        inftda_sql.release_count_of_counts(
            con, "persons", **KW, max_size=9, epsilon=1.0, output="again"
        )
    over = inftda_sql.release_count_of_counts(
        con, "persons", **KW, max_size=9, epsilon=1.0, output="again", budget_override=True
    )
    assert "budget override" in over.non_private[0]
    assert "spent rho 0.333333" in str(inftda_sql.ledger(con))
    path = inftda_sql.publish(con, r.output, tmp_path / "pub.duckdb", public_tables=["listed"])
    with duckdb.connect(str(path), read_only=True) as pub:
        tables = {t for (t,) in pub.execute("SHOW TABLES").fetchall()}
        assert tables == {r.output, f"{r.output}_levels", "listed", "inftda_releases"}
        (published,) = pub.execute("SELECT details FROM inftda_releases").fetchall()[0]
        assert "diagnostics" not in published and "seconds" not in published
        assert (
            pub.execute(f"SELECT sum(groups) FROM {r.output}_levels WHERE level = 0").fetchall()[0][
                0
            ]
            == 10
        )


def test_private_max_size_estimate(con: duckdb.DuckDBPyConnection) -> None:
    _persons(con, WORLD)
    r = inftda_sql.release_count_of_counts(con, "persons", **KW, epsilon=math.inf)
    assert r.max_size == 7 and r.max_size_estimated  # exact without noise
    r = inftda_sql.release_count_of_counts(
        con, "persons", **KW, epsilon=1.0, seed=3, overwrite=True
    )
    assert r.accounting.max_size_epsilon == pytest.approx(0.05)
    assert r.max_size >= 1 and "estimated privately" in str(r)


def test_generators_release_and_evaluate(con: duckdb.DuckDBPyConnection) -> None:
    for make, min_size in ((housing_like, 1), (taxi_like, 1), (race_like, 0)):
        d = make(con, scale=0.0005, overwrite=True)
        assert d.min_size == min_size
        r = inftda_sql.release_count_of_counts(
            con,
            d.persons,
            group=d.group,
            hierarchy=d.hierarchy,
            groups=d.groups,
            epsilon=math.inf,
            min_size=min_size,
            overwrite=True,
        )
        ev = inftda_sql.evaluate_count_of_counts(
            con, d.persons, r.output, group=d.group, hierarchy=d.hierarchy, groups=d.groups
        ).fetchall()
        assert [row[3] for row in ev] == [0.0] * (len(d.hierarchy) + 1)
        assert ev[0][5] == ev[0][6] == d.n_groups


def test_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "w.duckdb"
    with duckdb.connect(str(db)) as con:
        _persons(con, WORLD)
    args = [
        "count-of-counts",
        str(db),
        "persons",
        "--group",
        "hh",
        "--hierarchy",
        "state,county",
        "--groups",
        "listed",
        "--epsilon",
        "1",
        "--max-size",
        "9",
        "--seed",
        "1",
    ]
    assert cli_main(args) == 0
    assert "count of counts, cumulative, topdown" in capsys.readouterr().out
    assert cli_main(["evaluate", str(db), "persons", "persons_count_of_counts"]) == 0
    out = capsys.readouterr().out
    assert "mean_emd" in out and "county" in out
    assert cli_main([*args[:-2], "--method", "nope"]) == 2


def _noise_counts(monkeypatch: pytest.MonkeyPatch, con: duckdb.DuckDBPyConnection) -> np.ndarray:
    """The noisy values the cumulative estimator fits, on data whose true cumulative histogram
    is 0 at every noised size (every group has the largest size): they are the noise itself."""
    fed: list[np.ndarray] = []
    original = isotonic_module.SegmentedIsotonic.feed

    def spy(self: isotonic_module.SegmentedIsotonic, values: np.ndarray) -> None:
        fed.append(np.asarray(values).copy())
        original(self, values)

    monkeypatch.setattr(isotonic_module.SegmentedIsotonic, "feed", spy)
    for seed in range(12):
        inftda_sql.release_count_of_counts(
            con, "persons", **KW, max_size=40, epsilon=1.5, seed=seed, overwrite=True
        )
    return np.concatenate(fed).astype(np.int64)


def _chi_square_p(draws: np.ndarray, scale: float) -> float:
    edges = np.arange(-12, 13)
    observed = np.array([np.sum(draws == k) for k in edges], dtype=float)
    observed = np.append(observed, np.sum(np.abs(draws) > 12))
    expected = discrete_laplace_pmf(edges, scale) * draws.size
    expected = np.append(expected, draws.size - expected.sum())
    return float(stats.chisquare(observed, expected).pvalue)


@pytest.mark.slow
def test_noise_has_the_accounted_scale(
    con: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    """epsilon 1.5 over 3 levels, sensitivity 1: discrete Laplace of scale 2 on every noised
    entry (computed here, not by the library). A chi-square fit with a fixed p-value floor."""
    _persons(con, {"A/a1": [40, 45], "A/a2": [50], "B/b1": [41, 60, 40]})
    draws = _noise_counts(monkeypatch, con)
    assert draws.size == 12 * (1 + 2 + 3) * 39
    assert _chi_square_p(draws, 2.0) > 1e-4


@pytest.mark.slow
def test_a_too_small_scale_fails_the_noise_test(
    con: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mutation: the accounting halves the scale. The same test must reject it."""
    real = accounting_module._laplace_scale
    monkeypatch.setattr(accounting_module, "_laplace_scale", lambda s, e: real(s, e) / 2)
    _persons(con, {"A/a1": [40, 45], "A/a2": [50], "B/b1": [41, 60, 40]})
    # the accounting's own check stops the mutant: no release with a too small scale...
    with pytest.raises(inftda_sql.BudgetError, match="does not give epsilon"):
        inftda_sql.release_count_of_counts(con, "persons", **KW, max_size=40, epsilon=1.5)
    # ... and, past that check, the chi-square test rejects its noise
    monkeypatch.setattr(
        accounting_module.CountOfCountsAccounting, "__post_init__", lambda self: None
    )
    draws = _noise_counts(monkeypatch, con)
    assert _chi_square_p(draws, 2.0) < 1e-4
