"""Groups of persons for count-of-counts histograms (Kuo et al., VLDB 2018, Section 6.1): housing,
taxis and census blocks as true leaf histograms in numpy (:func:`housing_histograms` ...) and
expanded in DuckDB into a persons table and the public groups table (:func:`housing_like` ...).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import duckdb
import numpy as np
import pyarrow as pa

from .._errors import SpecError
from ..engines.duckdb.compile import drop_temp_table
from ..engines.duckdb.sql import ident, render, run

#: 2010 census populations (millions, rounded) and county counts of the 50 states, DC and
#: Puerto Rico: the shape of the partially synthetic housing data's geography
US_STATES: tuple[tuple[str, float, int], ...] = (
    ("CA", 37.25, 58), ("TX", 25.15, 254), ("NY", 19.38, 62), ("FL", 18.80, 67),
    ("IL", 12.83, 102), ("PA", 12.70, 67), ("OH", 11.54, 88), ("MI", 9.88, 83),
    ("GA", 9.69, 159), ("NC", 9.54, 100), ("NJ", 8.79, 21), ("VA", 8.00, 134),
    ("WA", 6.72, 39), ("MA", 6.55, 14), ("IN", 6.48, 92), ("AZ", 6.39, 15),
    ("TN", 6.35, 95), ("MO", 5.99, 115), ("MD", 5.77, 24), ("WI", 5.69, 72),
    ("MN", 5.30, 87), ("CO", 5.03, 64), ("AL", 4.78, 67), ("SC", 4.63, 46),
    ("LA", 4.53, 64), ("KY", 4.34, 120), ("OR", 3.83, 36), ("OK", 3.75, 77),
    ("PR", 3.73, 78), ("CT", 3.57, 8), ("IA", 3.05, 99), ("MS", 2.97, 82),
    ("AR", 2.92, 75), ("KS", 2.85, 105), ("UT", 2.76, 29), ("NV", 2.70, 17),
    ("NM", 2.06, 33), ("WV", 1.85, 55), ("NE", 1.83, 93), ("ID", 1.57, 44),
    ("HI", 1.36, 5), ("ME", 1.33, 16), ("NH", 1.32, 10), ("RI", 1.05, 5),
    ("MT", 0.99, 56), ("DE", 0.90, 3), ("SD", 0.81, 66), ("AK", 0.71, 29),
    ("ND", 0.67, 53), ("VT", 0.63, 14), ("DC", 0.60, 1), ("WY", 0.56, 23),
)  # fmt: skip
#: households by size 1, 2, ..., 6, 7+ in the 2010 census (national shares, percent)
HOUSEHOLD_SIZE_SHARES = (26.7, 33.6, 15.8, 13.2, 6.2, 2.6, 1.9)
#: groups and persons of the paper's partially synthetic housing data (scale 1)
PAPER_HOUSING_GROUPS = 240_908_081


@dataclass(frozen=True)
class GroupHistograms:
    """True count-of-counts histograms of the leaf regions of a synthetic data set.

    ``paths`` lists every leaf region (one tuple of region values per leaf, coarse to fine,
    sorted); ``groups`` is the public number of groups per leaf; ``node``/``size``/``count``
    say that leaf ``node`` holds ``count`` groups of ``size`` persons (size 0: empty groups).
    """

    hierarchy: tuple[str, ...]
    paths: tuple[tuple[str, ...], ...]
    groups: np.ndarray
    node: np.ndarray
    size: np.ndarray
    count: np.ndarray
    min_size: int

    @property
    def n_groups(self) -> int:
        return int(self.groups.sum())

    @property
    def n_persons(self) -> int:
        return int((self.size * self.count).sum())


@dataclass(frozen=True)
class SyntheticGroups:
    """Names of the tables a count-of-counts generator created, and their sizes."""

    persons: str
    groups: str
    hierarchy: list[str]
    group: str
    groups_column: str
    n_groups: int
    n_persons: int
    min_size: int


def _county_weights(rng: np.random.Generator, n: int) -> np.ndarray:
    """Heavy-tailed county sizes (a few large counties, many small ones), normalised."""
    w: np.ndarray = rng.pareto(1.2, n) + 1.0
    return w / float(w.sum())


def housing_histograms(
    *, scale: float = 0.01, seed: int = 0, outliers: int = 50, outlier_max: int = 10_000
) -> GroupHistograms:
    """The partially synthetic housing data of the paper, as leaf histograms (no persons).

    Per state (the 50 states, DC and Puerto Rico, :data:`US_STATES`), households number
    ``scale * 240,908,081`` in proportion to the 2010 population. Their sizes follow the 2010
    national shares of households of 1..6 and 7+ persons (:data:`HOUSEHOLD_SIZE_SHARES`), each
    state's shares perturbed (Dirichlet with concentration 500: our stand-in for the per-state
    tables of Summary File 1, which are not shipped here). The census truncates at 7+; as in the
    paper the tail is extrapolated with a binomial chain, ``H[j + 1] ~ Binomial(H[j], r)`` from
    ``j = 6``, with ``r = s7+ / (s6 + s7+)`` so that the tail holds the 7+ share in expectation.
    Then ``outliers`` groups per state (group quarters: dormitories, barracks, prisons) of a size
    uniform in ``1 .. outlier_max``. Counties: each state's groups are assigned to its counties
    (the real number per state) in proportion to heavy-tailed county sizes (Pareto weights: the
    paper used real county sizes).

    Example:
        >>> h = housing_histograms(scale=0.0001, seed=1)
        >>> len({p[0] for p in h.paths}), len(h.paths), h.n_groups > 20_000
        (52, 3221, True)
    """
    if not 0 < scale <= 4:
        raise SpecError(f"scale must be in (0, 4], got {scale!r}")
    rng = np.random.default_rng(seed)
    pops = np.array([p for _, p, _ in US_STATES])
    n_groups = rng.multinomial(round(PAPER_HOUSING_GROUPS * scale), pops / pops.sum())
    base = np.array(HOUSEHOLD_SIZE_SHARES) / 100.0
    paths: list[tuple[str, str]] = []
    nodes, sizes, counts = [], [], []
    leaf = 0
    for (code, _, n_counties), g in zip(US_STATES, n_groups, strict=True):
        shares = rng.dirichlet(base * 500.0)
        h = rng.multinomial(int(g), shares)
        hist = list(h[:6])
        r = shares[6] / (shares[5] + shares[6])
        prev = int(hist[5])
        while prev > 0:
            prev = int(rng.binomial(prev, r))
            hist.append(prev)
        size = np.arange(1, len(hist) + 1)
        hist_arr = np.array(hist, dtype=np.int64)
        big = rng.integers(1, outlier_max + 1, outliers)
        w = _county_weights(rng, n_counties)
        for s, c in zip(size, hist_arr, strict=True):
            if c:
                per = rng.multinomial(int(c), w)
                k = np.flatnonzero(per)
                nodes.append(leaf + k)
                sizes.append(np.full(k.size, s))
                counts.append(per[k])
        where = rng.choice(n_counties, size=outliers, p=w)
        nodes.append(leaf + where)
        sizes.append(big)
        counts.append(np.ones(outliers, dtype=np.int64))
        paths += [(code, f"{code}{i + 1:03d}") for i in range(n_counties)]
        leaf += n_counties
    return _histograms(("state", "county"), paths, nodes, sizes, counts, min_size=1)


def _histograms(
    hierarchy: tuple[str, ...],
    paths: Sequence[tuple[str, ...]],
    nodes: list[np.ndarray],
    sizes: list[np.ndarray],
    counts: list[np.ndarray],
    *,
    min_size: int,
    groups: np.ndarray | None = None,
) -> GroupHistograms:
    node = np.concatenate(nodes).astype(np.int64)
    size = np.concatenate(sizes).astype(np.int64)
    count = np.concatenate(counts).astype(np.int64)
    order = np.lexsort((size, node))
    node, size, count = node[order], size[order], count[order]
    key = node * (int(size.max()) + 1) + size
    _, first = np.unique(key, return_index=True)
    count = np.add.reduceat(count, first)
    node, size = node[first], size[first]
    keep = count > 0
    node, size, count = node[keep], size[keep], count[keep]
    if groups is None:
        groups = np.bincount(node, weights=count, minlength=len(paths)).astype(np.int64)
    return GroupHistograms(hierarchy, tuple(paths), groups, node, size, count, min_size)


def taxi_histograms(*, scale: float = 0.01, seed: int = 0) -> GroupHistograms:
    """A taxi-like data set (the paper's NYC taxi data): a group is a vehicle in a region, its
    size the number of pickups it made there.

    Manhattan > upper / lower Manhattan > 28 neighbourhoods (12 upper, 16 lower, named
    ``U01..``, ``L01..``). ``round(13,437 * scale)`` vehicles, each with a yearly number of
    pickups drawn from a gamma law of mean 9,746 (so ``scale=1`` gives about 131M pickups, the
    paper's 130,962,398), spread over the neighbourhoods by a vehicle-specific Dirichlet around
    Zipf-like neighbourhood popularity. Every (vehicle, neighbourhood) pair with a pickup is a
    group (``scale=1``: about 360K groups, the paper's 360,872).

    Example:
        >>> t = taxi_histograms(scale=0.01)
        >>> len(t.paths), t.hierarchy
        (28, ('half', 'nta'))
    """
    if not 0 < scale <= 4:
        raise SpecError(f"scale must be in (0, 4], got {scale!r}")
    rng = np.random.default_rng(seed)
    n_taxis = max(1, round(13_437 * scale))
    paths = [("lower", f"L{i:02d}") for i in range(1, 17)] + [
        ("upper", f"U{i:02d}") for i in range(1, 13)
    ]
    popularity = 1.0 / np.arange(1, 29) ** 0.8
    popularity = rng.permutation(popularity / popularity.sum())
    totals = rng.gamma(4.0, 9_746 / 4.0, n_taxis).astype(np.int64) + 1
    prefs = rng.dirichlet(popularity * 40.0, size=n_taxis)
    per = np.array([rng.multinomial(t, p) for t, p in zip(totals, prefs, strict=True)])
    taxi, nta = np.nonzero(per)
    return _histograms(
        ("half", "nta"), paths, [nta], [per[taxi, nta]], [np.ones(taxi.size)], min_size=1
    )


def race_histograms(*, race: str = "white", scale: float = 0.01, seed: int = 0) -> GroupHistograms:
    """A race-like data set (the paper's census blocks): a group is a census block, its size
    the number of its residents of one race; blocks with none are groups of size 0.

    The housing geography (:func:`housing_histograms`'s states and counties); ``scale *
    11,155,486`` blocks (the 2010 count) assigned to counties by heavy-tailed county sizes;
    block populations negative binomial (mean 27.7, many empty blocks); the race's share per
    county from a beta law (``"white"``: mean 0.76; ``"hawaiian"``: 0.1 in Hawaii, 0.0005
    elsewhere) and per block around it (beta, segregation). At ``scale=1`` about 226M whites
    (the paper's 226,378,365) or a few hundred thousand Hawaiians (its 540,383).

    Example:
        >>> r = race_histograms(race="hawaiian", scale=0.001)
        >>> r.min_size, int(r.size.min())
        (0, 0)
    """
    if race not in ("white", "hawaiian"):
        raise SpecError(f"race must be 'white' or 'hawaiian', got {race!r}")
    if not 0 < scale <= 4:
        raise SpecError(f"scale must be in (0, 4], got {scale!r}")
    rng = np.random.default_rng(seed)
    pops = np.array([p for _, p, _ in US_STATES])
    n_blocks = rng.multinomial(round(11_155_486 * scale), pops / pops.sum())
    paths: list[tuple[str, str]] = []
    nodes, sizes, counts = [], [], []
    leaf = 0
    for (code, _, n_counties), nb in zip(US_STATES, n_blocks, strict=True):
        w = _county_weights(rng, n_counties)
        county = rng.choice(n_counties, size=int(nb), p=w)
        pop = rng.negative_binomial(0.6, 0.6 / (0.6 + 27.7), int(nb))
        if race == "white":
            share_c = rng.beta(8.0, 2.5, n_counties)
        else:
            mean = 0.1 if code == "HI" else 0.0005
            share_c = rng.beta(mean * 20.0, (1.0 - mean) * 20.0, n_counties)
        a = np.maximum(share_c[county] * 5.0, 1e-6)
        share = rng.beta(a, np.maximum(5.0 - a, 1e-6))
        members = rng.binomial(pop, share)
        nodes.append(leaf + county)
        sizes.append(members)
        counts.append(np.ones(county.size, dtype=np.int64))
        paths += [(code, f"{code}{i + 1:03d}") for i in range(n_counties)]
        leaf += n_counties
    return _histograms(("state", "county"), paths, nodes, sizes, counts, min_size=0)


def write_groups(
    con: duckdb.DuckDBPyConnection,
    data: GroupHistograms,
    *,
    prefix: str = "",
    overwrite: bool = False,
    group: str = "group_id",
) -> SyntheticGroups:
    """Write ``data`` as a persons table (one row per person: its group id and the group's
    regions) and the PUBLIC groups table (every leaf region with its number of groups), both
    built in DuckDB from the small histogram table.

    Example:
        >>> import duckdb
        >>> con = duckdb.connect()
        >>> t = write_groups(con, taxi_histograms(scale=0.001))
        >>> con.execute(f"SELECT count(*) FROM {t.groups}").fetchall()
        [(28,)]
    """
    names = {"persons": prefix + "persons", "groups": prefix + "groups"}
    if overwrite:
        for name in names.values():
            run(con, drop_temp_table(name))
    cols = list(data.hierarchy)
    paths = {c: [p[i] for p in data.paths] for i, c in enumerate(cols)}
    first = np.cumsum(data.count) - data.count
    hist = pa.table(
        {
            "leaf": data.node,
            "size": data.size,
            "n": data.count,
            "first_gid": first,
        }
    )
    geo = pa.table({**paths, "leaf": np.arange(len(data.paths)), "groups": data.groups})
    tmp_hist, tmp_geo = f"__{prefix}hist_arrow", f"__{prefix}geo_arrow"
    con.register(tmp_hist, hist)
    con.register(tmp_geo, geo)
    try:
        run(
            con,
            render(
                "synthetic.groups_table",
                groups=ident(names["groups"]),
                cols=", ".join(ident(c) for c in cols),
                geo=ident(tmp_geo),
            ),
        )
        run(
            con,
            render(
                "synthetic.persons",
                persons=ident(names["persons"]),
                group=ident(group),
                cols=", ".join(f"g.{ident(c)}" for c in cols),
                hist=ident(tmp_hist),
                geo=ident(tmp_geo),
            ),
        )
    finally:
        con.unregister(tmp_hist)
        con.unregister(tmp_geo)
    return SyntheticGroups(
        persons=names["persons"],
        groups=names["groups"],
        hierarchy=cols,
        group=group,
        groups_column="groups",
        n_groups=data.n_groups,
        n_persons=data.n_persons,
        min_size=data.min_size,
    )


def housing_like(
    con: duckdb.DuckDBPyConnection,
    *,
    scale: float = 0.01,
    seed: int = 0,
    prefix: str = "",
    overwrite: bool = False,
) -> SyntheticGroups:
    """The paper's partially synthetic housing data (:func:`housing_histograms`) as tables:
    ``persons(group_id, state, county)`` and ``groups(state, county, groups)``."""
    return write_groups(
        con, housing_histograms(scale=scale, seed=seed), prefix=prefix, overwrite=overwrite
    )


def taxi_like(
    con: duckdb.DuckDBPyConnection,
    *,
    scale: float = 0.01,
    seed: int = 0,
    prefix: str = "",
    overwrite: bool = False,
) -> SyntheticGroups:
    """The taxi-like data (:func:`taxi_histograms`) as ``persons(group_id, half, nta)`` (one
    row per pickup) and ``groups(half, nta, groups)``."""
    return write_groups(
        con, taxi_histograms(scale=scale, seed=seed), prefix=prefix, overwrite=overwrite
    )


def race_like(
    con: duckdb.DuckDBPyConnection,
    *,
    race: str = "white",
    scale: float = 0.01,
    seed: int = 0,
    prefix: str = "",
    overwrite: bool = False,
) -> SyntheticGroups:
    """The race-like data (:func:`race_histograms`) as ``persons(group_id, state, county)``
    (one row per resident of the race) and ``groups(state, county, groups)`` (all blocks,
    empty ones included: release it with ``min_size=0``)."""
    return write_groups(
        con,
        race_histograms(race=race, scale=scale, seed=seed),
        prefix=prefix,
        overwrite=overwrite,
    )
