"""The Spark scan's refusals, word for word: bad counts, cells and totals too large, NULL leaves,
values outside the domain, ancestors that disagree; and the records of every count type.

The scan sums three numbers a row (its rows, its records, its rows with a bad count) and sends
an input with any problem to an exact second pass that counts each kind; the messages and their
numbers are those of the one-pass scan before it (pinned here), with one fix: a float count
beyond the 64-bit range was a raw ``ArithmeticException`` (``floor`` overflowing under ANSI
mode) and is now the count column's own message. One SparkSession for the module (the fixtures
of test_spark.py); skipped when pyspark or Java is missing.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from inftda_sql._errors import DomainError, InputDataError
from tests.system.test_spark import sdb, spark

pytest.importorskip("pyspark", reason="pyspark is not installed: pip install -e '.[test]'")

__all__ = ["sdb", "spark"]  # the shared fixtures

INF = float("inf")
TWO60, TWO62 = 2**60, 2**62
DOMAIN = {"r": ["N", "N", "S"] + ["S"] * 9, "c": ["a", "b", "c"] + [f"s{i}" for i in range(9)]}
LARGE = (
    "the counts of 'n' must add up to at most 2**60 (about 1.15e18) for exact integer "
    "arithmetic; count in larger units (e.g. thousands) or split the input"
)
CELLS_LARGE = f"count column 'n': 1 leaf cell(s) hold more than 2**60 records; {LARGE}"
NULLS = "count column 'n' has {} row(s) with NULL; use 0 or drop those rows first "
NOT_WHOLE = (
    "count column 'n' has {} row(s) that are not whole numbers (fractional, NaN or infinite); "
    "counts must be whole numbers (cast or round them first)"
)

# name: (type of n, rows (r, c, n), error, message)
CASES: dict[str, tuple[str, list[tuple[Any, ...]], type[Exception], str]] = {
    "null count": (
        "long",
        [("N", "a", 1), ("N", "b", None), ("S", "c", None), ("S", "c", 2)],
        InputDataError,
        NULLS.format(2) + "(df.where(df['n'].isNotNull()))",
    ),
    "negative count": (
        "long",
        [("N", "a", 1), ("N", "b", -3), ("S", "c", 2)],
        InputDataError,
        "count column 'n' has 1 row(s) with a negative value; counts must be non-negative "
        "integers: fix or drop those rows first (e.g. df.where(df['n'] >= 0))",
    ),
    "fractional count": (
        "double",
        [("N", "a", 1.5), ("N", "b", 2.0), ("S", "c", 0.25), ("S", "c", 1.0)],
        InputDataError,
        NOT_WHOLE.format(2),
    ),
    "nan count": (
        "double",
        [("N", "a", float("nan")), ("N", "b", 2.0)],
        InputDataError,
        NOT_WHOLE.format(1),
    ),
    "float count beyond 64 bits": (
        "double",
        [("N", "a", 1e19), ("N", "b", 2.0)],
        InputDataError,
        f"count column 'n' has 1 row(s) beyond the 64-bit integer range; {LARGE}",
    ),
    "cell beyond 64 bits": (
        "long",
        [("N", "a", TWO62), ("N", "a", TWO62), ("N", "b", 1)],
        InputDataError,
        CELLS_LARGE,
    ),
    "cell above 2**60": (
        "long",
        [("N", "a", TWO60 + 1), ("N", "b", 1)],
        InputDataError,
        CELLS_LARGE,
    ),
    "decimal cell above 2**60": (
        "decimal(30,0)",
        [("N", "a", TWO60), ("N", "a", TWO60), ("N", "b", 1)],
        InputDataError,
        CELLS_LARGE,
    ),
    "total above 2**60": (
        "long",
        [("N", "a", TWO60), ("N", "b", TWO60)],
        InputDataError,
        f"the input table DataFrame: {LARGE}",
    ),
    "total beyond 64 bits": (
        "long",
        [("S", f"s{i}", TWO60) for i in range(9)],
        InputDataError,
        f"the input table DataFrame: {LARGE}",
    ),
    "null leaf": (
        "long",
        [("N", "a", 1), ("N", None, 2)],
        InputDataError,
        "hierarchy column 'c' of the input table DataFrame has NULL values; every record needs "
        "a value in every hierarchy column (filter or fill them first)",
    ),
    "values outside the domain": (
        "long",
        [("N", "a", 1), ("N", "y", 2), ("S", "x", 1), ("S", "x", 1)],
        DomainError,
        "2 value(s) of 'c' in the input are not in the domain, e.g. c='x'; add them to the "
        "public domain table or fix the input",
    ),
    "a null count before a value outside the domain": (
        "long",
        [("N", "y", None), ("N", "a", 1)],
        InputDataError,
        NULLS.format(1) + "(df.where(df['n'].isNotNull()))",
    ),
    "a null ancestor": (
        "long",
        [("N", "a", 1), (None, "b", 2)],
        InputDataError,
        "hierarchy column 'r' of the input has NULL values; every record needs a value in "
        "every hierarchy column (filter or fill them first)",
    ),
    "an ancestor outside the domain's path": (
        "long",
        [("N", "a", 1), ("S", "a", 2)],
        DomainError,
        "input path (r='S', c='a') is not in the domain: the domain puts c='a' under other "
        "ancestors; fix the input's r or the domain",
    ),
}


def _frame(spark: Any, dtype: str, rows: list[tuple[Any, ...]]) -> Any:
    if dtype.startswith("decimal"):
        rows = [(r, c, None if n is None else Decimal(n)) for r, c, n in rows]
    elif dtype == "double":
        rows = [(r, c, None if n is None else float(n)) for r, c, n in rows]
    return spark.createDataFrame(rows, f"r string, c string, n {dtype}")


def _release_counts(spark: Any, frame: Any, output: str) -> Any:
    """The exact release (rho = inf) of ``frame``'s count column ``n`` into ``output``."""
    import inftda_sql.spark

    return inftda_sql.spark.release(
        spark, frame, hierarchy=["r", "c"], domain=DOMAIN, count="n", rho=INF, output=output
    )


def test_every_refusal_of_the_scan_names_rows_not_counts(spark: Any, sdb: str) -> None:
    for name, (dtype, rows, error, message) in CASES.items():
        with pytest.raises(error) as info:
            _release_counts(spark, _frame(spark, dtype, rows), "o")
        assert type(info.value) is error and str(info.value) == message, name
    assert not spark.catalog.tableExists("o")


@pytest.mark.parametrize("dtype", ["long", "int", "double", "decimal(30,0)", "decimal(12,2)"])
def test_records_of_every_count_type(spark: Any, sdb: str, dtype: str) -> None:
    """A count column of each type gives the exact total and cells (rho = inf), as the
    microdata of the same records do."""
    import inftda_sql.spark

    rows = [("N", "a", 3), ("N", "a", 4), ("N", "b", 0), ("S", "s2", 5), ("S", "c", 1)]
    got = _release_counts(spark, _frame(spark, dtype, rows), "counted")
    micro = [(r, c) for r, c, n in rows for _ in range(n)]
    one = inftda_sql.spark.release(
        spark,
        spark.createDataFrame(micro, "r string, c string"),
        hierarchy=["r", "c"],
        domain=DOMAIN,
        rho=INF,
        output="micro",
    )
    assert got.total == one.total == 13
    cells = {(r, c): n for r, c, n in spark.table("counted").collect() if n}
    assert cells == {("N", "a"): 7, ("S", "s2"): 5, ("S", "c"): 1}
    assert sorted(spark.table("micro").collect()) == sorted(spark.table("counted").collect())


def test_ancestors_are_compared_as_spark_compares_values(spark: Any, sdb: str) -> None:
    """The scan compares a row's ancestors with the domain's by one hash of them: values equal
    under Spark's equality hash alike (-0.0 and 0.0; an int domain for a long input), so such
    an input is accepted and exact; one ancestor that differs is refused."""
    import inftda_sql.spark

    rows = [(-0.0, 1, 2), (0.0, 2, 3), (1.5, 3, 4)]
    frame = spark.createDataFrame(rows, "r double, c long, n long")
    domain = spark.createDataFrame([(0.0, 1), (0.0, 2), (1.5, 3)], "r double, c int")
    got = inftda_sql.spark.release(
        spark, frame, hierarchy=["r", "c"], domain=domain, count="n", rho=INF, output="typed"
    )
    assert got.total == 9
    assert sorted(spark.table("typed").collect()) == [(0.0, 1, 2), (0.0, 2, 3), (1.5, 3, 4)]
    wrong = spark.createDataFrame([*rows, (1.5, 1, 1)], "r double, c long, n long")
    with pytest.raises(DomainError, match=r"input path \(r=1\.5, c=1\) is not in the domain"):
        inftda_sql.spark.release(
            spark, wrong, hierarchy=["r", "c"], domain=domain, count="n", rho=INF, output="t2"
        )


def test_equal_ancestors_hash_alike(spark: Any) -> None:
    """The scan's ancestor hash of an input row and of the domain's path (cast to the input's
    types) agree when Spark's equality does: -0.0 and 0.0, an int domain for a long input, a
    float domain for a double input; and differ when a value differs."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from inftda_sql.engines.spark.scan import _ancestor_hash

    types = [T.DoubleType(), T.LongType(), T.DoubleType()]
    rows = [(-0.0, 7, 0.5, 0.0, 7, 0.5), (2.0, 7, 0.5, 2.0, 8, 0.5)]
    df = spark.createDataFrame(rows, "a double, b long, c double, x double, y int, z float")
    got = df.select(
        _ancestor_hash([F.col("a"), F.col("b"), F.col("c")], types),
        _ancestor_hash([F.col("x"), F.col("y"), F.col("z")], types),
    ).collect()
    assert [row[0] == row[1] for row in got] == [True, False]
