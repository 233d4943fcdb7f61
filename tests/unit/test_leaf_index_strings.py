"""core/leaf_index.py: string leaves coded by a lookup, equal to the join's codes."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from inftda_sql.core.leaf_index import LeafIndex, StringLeafIndex, leaf_coder

#: short texts over a small alphabet (collisions of prefixes, case, accents, the empty string)
TEXT = st.text(alphabet="aAbé0 _\u00e9\U0001f600", max_size=4)


@settings(max_examples=100, deadline=None)
@given(
    leaves=st.lists(TEXT, min_size=1, max_size=40, unique=True),
    others=st.lists(st.one_of(TEXT, st.none()), max_size=40),
    picks=st.lists(st.integers(0, 39), max_size=40),
    large=st.booleans(),
)
@example(
    leaves=["E02000001", "E02000002"], others=["e02000001", "E02000001 "], picks=[1], large=False
)
def test_string_codes_are_those_of_the_join(
    leaves: list[str], others: list[str | None], picks: list[int], large: bool
) -> None:
    """Leaves in any order; values listed, not listed (another case, a trailing blank) and
    NULL: the code of each is the row DuckDB's join to the code table finds, NULL where none."""
    kind = pa.large_string() if large else pa.string()
    probes = [leaves[i % len(leaves)] for i in picks] + others
    index = leaf_coder(pa.array(leaves, type=kind))
    assert isinstance(index, StringLeafIndex) and index.accepts(kind)
    assert not index.accepts(pa.string() if large else pa.large_string())
    code, missing = index.code(pa.array(probes, type=kind))
    half = len(probes) // 2  # in chunks, as fetched from DuckDB: the same codes
    chunked = index.code(pa.chunked_array([probes[:half], probes[half:]], type=kind))
    assert chunked[0].tolist() == code.tolist() and chunked[1].tolist() == missing.tolist()
    con = duckdb.connect()
    con.register("codes", pa.table({"leaf": leaves, "code": range(len(leaves))}))
    con.register("probes", pa.table({"v": pa.array(probes, pa.string()), "i": range(len(probes))}))
    joined = con.execute(
        "SELECT c.code FROM probes AS p LEFT JOIN codes AS c ON c.leaf = p.v ORDER BY p.i"
    ).fetchall()
    assert [None if m else int(c) for c, m in zip(code, missing, strict=True)] == [
        j for (j,) in joined
    ]


@pytest.mark.parametrize(
    "leaves",
    [
        pa.array(["a", None]),  # a domain has no NULL leaf
        pa.array([], type=pa.string()),
        pa.array([b"a"], type=pa.binary()),  # not text: the engine joins
        pa.array([1.5, 2.5]),
    ],
)
def test_only_strings_are_indexed(leaves: pa.Array) -> None:
    assert StringLeafIndex.of(leaves) is None


def test_integers_keep_their_own_index() -> None:
    assert isinstance(leaf_coder(pa.array([1, 2, 5])), LeafIndex)
    assert leaf_coder(pa.array([2, 1])) is None  # integers out of code order: the join
    assert leaf_coder(pa.array([True, False])) is None
