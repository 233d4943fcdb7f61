"""core/topdown.py: the TopDown pass on small hand-checkable trees.

The tree of most tests: the root has two regions; region 0 has the cities 0 and 1, region 1
has city 2. True counts: city 0 = 3, city 1 = 0, city 2 = 5 (so regions 3 and 5, root 8).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inftda_sql.core import topdown as _topdown
from inftda_sql.core.blocks import parent_blocks, runs
from inftda_sql.core.intopt import intopt
from inftda_sql.core.rng import RandomSource, SeededSource
from inftda_sql.core.spec import TreeSpec, parse_hierarchy
from inftda_sql.core.topdown import topdown
from inftda_sql.core.tree import ChainTree, LevelStats, TopDownResult

I64 = npt.NDArray[np.int64]
SPEC = parse_hierarchy(["region", "city"])
TREE = ChainTree.from_parents([np.zeros(2, np.int64), np.array([0, 0, 1], np.int64)])
LEAF = {0: 3, 1: 0, 2: 5}
PARENT_OF = {0: 0, 1: 0, 2: 1}


def _truth(leaf: dict[int, int]) -> Callable[[int, tuple[int, ...]], tuple[I64, I64]]:
    """The engine's role: sorted keys and non-zero counts of a level (one chain: key = code)."""

    def true_level(level: int, strides: tuple[int, ...]) -> tuple[I64, I64]:
        assert strides == (1,)
        per: dict[int, int] = {}
        for city, n in leaf.items():
            key = city if level == 2 else PARENT_OF[city]
            per[key] = per.get(key, 0) + n
        keys = sorted(k for k, n in per.items() if n)
        return np.array(keys, np.int64), np.array([per[k] for k in keys], np.int64)

    return true_level


def _released(result: TopDownResult) -> dict[int, int]:
    return dict(zip(result.codes[0].tolist(), result.counts.tolist(), strict=True))


def test_infinite_budget_is_exact_and_prunes_zero_nodes() -> None:
    result = topdown(SPEC, [TREE], _truth(LEAF), [0.0, 0.0, 0.0], 8, source=SeededSource(1))
    assert _released(result) == {0: 3, 2: 5}  # city 1 (true 0) is pruned
    assert [
        (s.level, s.name, s.parents, s.noised_cells, s.surviving_cells) for s in result.levels
    ] == [
        (0, "root", 0, 0, 1),
        (1, "region", 1, 2, 2),
        (2, "city", 2, 2, 2),  # the children of a surviving parent are noised, zeros too,
        # except an only child (city 2), which is its parent's released value
    ]


def test_a_zero_parent_prunes_its_whole_branch() -> None:
    leaf = {0: 3, 1: 0, 2: 0}  # region 1 is empty: city 2 is never looked at
    result = topdown(SPEC, [TREE], _truth(leaf), [0.0, 0.0, 0.0], 3, source=SeededSource(1))
    assert _released(result) == {0: 3}
    assert [(s.parents, s.noised_cells) for s in result.levels[1:]] == [(1, 2), (1, 2)]


class _FakeNoise:
    """Replaces the discrete Gaussian sampler: hands out prescribed noise, call by call."""

    def __init__(self, draws: list[list[int]]) -> None:
        self._draws: Iterator[list[int]] = iter(draws)
        self.sigmas: list[float] = []

    def __call__(self, sigma: float, size: int, *, source: object) -> I64:
        self.sigmas.append(sigma)
        noise = np.array(next(self._draws), dtype=np.int64)
        assert noise.size == size
        return noise


def test_hand_checked_noisy_release(monkeypatch: pytest.MonkeyPatch) -> None:
    """Noise +1/-1 on the regions keeps them at 4 + 4 = 8; then the cities of region 0 get
    y = (3-2, 0+1) = (1, 1), projected to (2, 2) to sum to 4, and city 2 alone takes region
    1's 4: an only child gets no noise and the optimiser sees its parent's value, not its true
    count. City 1 (true 0) is released with 2: zero cells are noised like any other."""
    fake = _FakeNoise([[1, -1], [-2, 1]])
    monkeypatch.setattr(_topdown, "draw_discrete_gaussian", fake)
    seen: list[tuple[list[int], list[int], list[int]]] = []

    def recording(y: I64, targets: I64, offsets: I64) -> I64:
        seen.append((y.tolist(), targets.tolist(), offsets.tolist()))
        return intopt(y, targets, offsets)

    result = topdown(
        SPEC, [TREE], _truth(LEAF), [0.0, 2.0, 3.0], 8, source=SeededSource(1), optimizer=recording
    )
    assert fake.sigmas == [2.0, 3.0]  # the root is not noised (sigma 0: bounded DP)
    assert seen == [([4, 4], [8], [0]), ([1, 1, 4], [4, 4], [0, 2])]
    assert _released(result) == {0: 2, 1: 2, 2: 4}
    assert [s.sigma for s in result.levels] == [0.0, 2.0, 3.0]


def test_a_noised_root_is_clamped_at_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _FakeNoise([[-20]])
    monkeypatch.setattr(_topdown, "draw_discrete_gaussian", fake)
    result = topdown(SPEC, [TREE], _truth(LEAF), [1.0, 1.0, 1.0], 8, source=SeededSource(1))
    assert result.counts.size == 0 and result.codes[0].size == 0
    assert [(s.parents, s.noised_cells, s.surviving_cells) for s in result.levels] == [
        (0, 1, 0),
        (0, 0, 0),
        (0, 0, 0),
    ]
    assert fake.sigmas == [1.0]  # nothing below an empty root is drawn


def test_progress_sees_every_level_in_order() -> None:
    seen: list[LevelStats] = []
    result = topdown(
        SPEC, [TREE], _truth(LEAF), [0.0, 1.0, 1.0], 8, source=SeededSource(3), progress=seen.append
    )
    assert tuple(seen) == result.levels and [s.level for s in seen] == [0, 1, 2]


# ----------------------------------------------------------------------------- random trees


@st.composite
def worlds(draw: st.DrawFn) -> tuple[TreeSpec, list[ChainTree], dict[tuple[int, ...], int]]:
    """One or two chains of random fan-out, and random true counts on their leaf cells."""
    n_chains = draw(st.integers(1, 2))
    chains = []
    for _ in range(n_chains):
        fan1 = draw(st.integers(1, 4))
        fan2 = draw(st.lists(st.integers(1, 4), min_size=fan1, max_size=fan1))
        parents = [np.zeros(fan1, np.int64), np.repeat(np.arange(fan1), fan2).astype(np.int64)]
        chains.append(ChainTree.from_parents(parents))
    names = [[f"c{c}d1", f"c{c}d2"] for c in range(n_chains)]
    tree = draw(st.sampled_from(["destination", "origin", "sequential"])) if n_chains == 2 else None
    spec = parse_hierarchy(names if n_chains == 2 else names[0], tree)
    leaves = list(np.ndindex(*(ch.sizes[-1] for ch in chains)))
    counts = draw(st.lists(st.integers(0, 20), min_size=len(leaves), max_size=len(leaves)))
    return spec, chains, {leaf: n for leaf, n in zip(leaves, counts, strict=True) if n}


def _ancestor(chain: ChainTree, code: int, depth: int) -> int:
    """The depth-``depth`` ancestor of a leaf code (depth 2 chains)."""
    if depth == 2:
        return code
    if depth == 0:
        return 0
    return int(np.searchsorted(chain.child_offsets[2], code, side="right") - 1)


def _true_level(
    spec: TreeSpec, chains: list[ChainTree], leaf: dict[tuple[int, ...], int]
) -> Callable[[int, tuple[int, ...]], tuple[I64, I64]]:
    def true_level(level: int, strides: tuple[int, ...]) -> tuple[I64, I64]:
        per: dict[int, int] = {}
        for cell, n in leaf.items():
            key = sum(
                _ancestor(chains[c], code, d) * s
                for c, (code, d, s) in enumerate(
                    zip(cell, spec.levels[level], strides, strict=True)
                )
            )
            per[key] = per.get(key, 0) + n
        keys = sorted(per)
        return np.array(keys, np.int64), np.array([per[k] for k in keys], np.int64)

    return true_level


def _run(
    world: tuple[TreeSpec, list[ChainTree], dict[tuple[int, ...], int]],
    sigma: float,
    seed: int,
    **kwargs: object,
) -> TopDownResult:
    spec, chains, leaf = world
    return topdown(
        spec,
        chains,
        _true_level(spec, chains, leaf),
        [0.0] + [sigma] * spec.n_levels,
        sum(leaf.values()),
        source=SeededSource(seed),
        **kwargs,  # type: ignore[arg-type]
    )


def _cells(result: TopDownResult) -> dict[tuple[int, ...], int]:
    codes = [c.tolist() for c in result.codes]
    return dict(zip(zip(*codes, strict=True), result.counts.tolist(), strict=True))


SETTINGS = settings(max_examples=40, deadline=None)


@SETTINGS
@given(worlds())
def test_infinite_budget_releases_exactly_the_non_zero_cells(world: tuple) -> None:
    assert _cells(_run(world, 0.0, 0)) == world[2]


@SETTINGS
@given(worlds(), st.sampled_from([0.5, 3.0, 30.0]), st.integers(0, 2**32))
def test_noisy_release_invariants(world: tuple, sigma: float, seed: int) -> None:
    """Children sum to their parent at every level; released counts are positive integers of
    domain cells; the bounded total N is kept."""
    checks: list[tuple[I64, I64, I64]] = []

    def recording(y: I64, targets: I64, offsets: I64) -> I64:
        x = intopt(y, targets, offsets)
        checks.append((x, targets, offsets))
        return x

    _, chains, leaf = world
    result = _run(world, sigma, seed, optimizer=recording)
    for x, targets, offsets in checks:
        assert np.all(x >= 0)
        if x.size:
            assert np.add.reduceat(x, offsets).tolist() == targets.tolist()
    cells = _cells(result)
    assert all(n > 0 for n in cells.values())
    assert sum(cells.values()) == sum(leaf.values())
    assert all(
        all(0 <= code < ch.sizes[-1] for code, ch in zip(cell, chains, strict=True))
        for cell in cells
    )
    assert result.levels[-1].surviving_cells == len(cells)


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_topdown, "CHUNK_CHILDREN", 5)


@pytest.mark.usefixtures("small_chunks")
@settings(max_examples=20, deadline=None)
@given(worlds(), st.integers(0, 2**32))
def test_chunks_and_threads_give_identical_seeded_results(world: tuple, seed: int) -> None:
    one = _run(world, 2.0, seed, threads=1)
    for threads in (2, 4):
        other = _run(world, 2.0, seed, threads=threads)
        assert _cells(other) == _cells(one)
    # and the chunked run is still exact without noise
    assert _cells(_run(world, 0.0, seed, threads=2)) == world[2]


def test_several_blocks_in_threads_match_one_thread(
    monkeypatch: pytest.MonkeyPatch, small_chunks: None
) -> None:
    """A level of 16 children in blocks of about 5 runs on the thread pool: same result."""
    chain = ChainTree.from_parents([np.zeros(4, np.int64), np.repeat(np.arange(4), 4)])
    world = (parse_hierarchy(["a", "b"]), [chain], {(i,): 1 + i % 3 for i in range(16)})
    n_blocks: list[int] = []
    real = _topdown.level_blocks

    def spy(*args: object) -> tuple[I64 | None, list[tuple[int, int, int]]]:
        order, blocks = real(*args)  # type: ignore[arg-type]
        n_blocks.append(len(blocks))
        return order, blocks

    monkeypatch.setattr(_topdown, "level_blocks", spy)
    one = _cells(_run(world, 2.0, 7, threads=1))
    assert n_blocks == [1, 3]  # the 4 regions, then 16 cities in runs of whole parents
    assert _cells(_run(world, 2.0, 7, threads=2)) == one
    assert _cells(_run(world, 2.0, 8, threads=2)) != one  # the seed matters, so the check can fail


def test_blocks_split_at_parent_boundaries() -> None:
    counts = np.array([1, 2, 3, 9, 1, 1, 1], np.int64)
    first = np.cumsum(counts) - counts  # one chain: parents' children are consecutive keys
    blocks = runs(parent_blocks(first, counts, 1, 4))
    assert blocks[0][0] == 0 and blocks[-1][1] == counts.size
    assert all(a < b for a, b, _ in blocks)
    assert all(b == c for (_, b, _), (c, _, _) in itertools.pairwise(blocks))
    # a block holds whole parents: at most 4 children, or one big parent
    assert all(counts[a:b].sum() <= 4 + counts[b - 1] for a, b, _ in blocks)
    # ids: the children before a block's first parent, in units of 4
    assert [i for _, _, i in blocks] == [0, 1, 3, 4]
    assert runs(parent_blocks(first[:0], counts[:0], 1, 4)) == []
    assert [i for _, _, i in runs(parent_blocks(first, counts, 1, 1 << 20))] == [0]
    # wider buckets move a block's start to a bucket boundary, never split a bucket
    wide = parent_blocks(first, counts, 8, 4)
    assert np.all(np.diff(wide) >= 0)
    assert len({int(b) for b in wide[first // 8 == 0]}) == 1


class _Keyed(SeededSource):
    """A seeded source that records the (level, block) keys of the streams it derives."""

    def __init__(self, seed: int | np.random.Generator, seen: list[tuple[int, int]]) -> None:
        super().__init__(seed)
        self.seen = seen

    def spawn(self, n: int) -> list[RandomSource]:  # a pass's source records too
        return [_Keyed(g, self.seen) for g in self._gen.spawn(n)]

    def derive(self, level: int, block: int) -> SeededSource:  # type: ignore[override]
        self.seen.append((level, block))
        return super().derive(level, block)  # type: ignore[return-value]


@pytest.mark.usefixtures("small_chunks")
@settings(max_examples=20, deadline=None)
@given(worlds(), st.integers(0, 2**32))
def test_seeded_noise_comes_from_streams_keyed_by_level_and_block(world: tuple, seed: int) -> None:
    """Every level draws from derive(level, block) only, block ids increasing from 0; the same
    keys give the same release, whatever words the source gave before."""
    spec, chains, leaf = world
    seen: list[tuple[int, int]] = []
    args = (spec, chains, _true_level(spec, chains, leaf), [1.0] * (spec.n_levels + 1))
    result = topdown(*args, sum(leaf.values()), source=_Keyed(seed, seen))
    assert seen[0] == (0, 0)  # the root (noised here)
    levels = [lv for lv, _ in seen[1:]]
    assert levels == sorted(levels) and set(levels) <= set(range(1, spec.n_levels + 1))
    for lv in set(levels):
        ids = [b for level, b in seen[1:] if level == lv]
        assert ids[0] == 0 and ids == sorted(set(ids))
    used = SeededSource(seed)
    used.words(1000)  # drawing elsewhere first changes no block's stream
    again = topdown(*args, sum(leaf.values()), source=used)
    assert _cells(again) == _cells(result)


def test_true_counts_scatter_hits_and_zero_fill() -> None:
    # parents with children keys 10..12 and 20..21; true non-zero keys 11, 20, 21, 30
    keys = np.array([11, 20, 21, 30], np.int64)
    values = np.array([4, 5, 6, 7], np.int64)
    first, counts, seg = (np.array(v, np.int64) for v in ([10, 20], [3, 2], [0, 3]))
    y = _topdown._true_counts(keys, values, first, counts, seg, 5)
    assert y.tolist() == [0, 4, 0, 5, 6]
    empty = _topdown._true_counts(
        np.zeros(0, np.int64), np.zeros(0, np.int64), first, counts, seg, 5
    )
    assert empty.tolist() == [0] * 5
