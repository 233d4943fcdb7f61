"""Synthetic hierarchical origin/destination data, so the tool can be tried without real data.

:func:`italy_like` builds an Italian-shaped geography (20 regions > ~107 provinces > ~7,900
municipalities, ISTAT-like integer codes) and a heavy-tailed commuting table (about 500K distinct
O/D pairs and 28.8M trips at full scale, as the Italian data of the PETS 2025 paper), directly in
a DuckDB database. :func:`paper_dataset` builds the six synthetic datasets of the paper's
experiments (binary or random partition; complete, dense or sparse flows). :func:`odmts` builds
a day of trips of an on-demand multimodal transit system shaped like the CBDP paper's (Ann
Arbor: stops in zones, 30-minute periods, 12 modes), with its public domain of leaf cells and
the paper's features (:func:`odmts_features`). Everything is drawn from a seeded generator: this
is test data, not a release.

For count-of-counts histograms, :func:`housing_like`, :func:`taxi_like` and :func:`race_like`
mirror the three kinds of data of Kuo et al. (VLDB 2018): partially synthetic housing
(households in states and counties, a heavy tail of group quarters), taxis (a vehicle's pickups
in a neighbourhood) and census blocks (the residents of one race, many blocks empty). Each
builds its true leaf histograms in numpy (:func:`housing_histograms` ...; the benchmarks use
them directly) and expands them in DuckDB into a persons table and the public groups table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import duckdb
import numpy as np
import pyarrow as pa

from ._errors import SpecError
from .engines.duckdb.compile import drop_temp_table, drop_temp_view
from .engines.duckdb.sql import ident, render, run

__all__ = [
    "HOUSEHOLD_SIZE_SHARES",
    "ODMTS",
    "ODMTS_MODES",
    "PAPER_DENSITIES",
    "PAPER_KINDS",
    "US_STATES",
    "GroupHistograms",
    "PaperOD",
    "SyntheticGroups",
    "SyntheticOD",
    "housing_histograms",
    "housing_like",
    "italy_like",
    "odmts",
    "odmts_features",
    "paper_dataset",
    "race_histograms",
    "race_like",
    "taxi_histograms",
    "taxi_like",
    "write_groups",
]


@dataclass(frozen=True)
class SyntheticOD:
    """Names of the tables :func:`italy_like` created, and their sizes."""

    geo: str
    geo_origin: str
    geo_destination: str
    trips: str
    pairs: int
    trips_total: int
    microdata: bool

    @property
    def hierarchy(self) -> list[list[str]]:
        return [["o_region", "o_province", "o_mun"], ["d_region", "d_province", "d_mun"]]


def _split(rng: np.random.Generator, total: int, parts: int, concentration: float) -> np.ndarray:
    """Split ``total`` items into ``parts`` groups of size >= 1, Dirichlet-distributed."""
    weights = rng.dirichlet(np.full(parts, concentration))
    sizes = 1 + rng.multinomial(total - parts, weights)
    return sizes.astype(np.int64)


def _write_od(
    con: duckdb.DuckDBPyConnection,
    geo: pa.Table,
    pairs: pa.Table,
    *,
    prefix: str,
    overwrite: bool,
    microdata: bool,
    geo_select: str,
    geo_order: str,
    side_columns: dict[str, dict[str, str]],
) -> dict[str, str]:
    """Write a geography, its origin/destination views and the trips table; return the names.

    ``pairs`` holds one row per O/D pair with a count ``n``; with ``microdata`` the trips table
    has one row per trip instead. ``side_columns[side]`` renames geography columns to the
    columns of that side's chain (the views are the per-chain public domains).
    """
    names = {k: prefix + k for k in ("geo", "geo_origin", "geo_destination", "trips")}
    if overwrite:
        for k in ("geo_origin", "geo_destination"):
            run(con, drop_temp_view(names[k]))
        for k in ("trips", "geo"):
            run(con, drop_temp_table(names[k]))
    tmp_geo, tmp_pairs = f"__{prefix}geo_arrow", f"__{prefix}pairs_arrow"
    con.register(tmp_geo, geo)
    con.register(tmp_pairs, pairs)
    try:
        run(
            con,
            render(
                "synthetic.geography",
                geo=ident(names["geo"]),
                select=geo_select,
                source=ident(tmp_geo),
                order=geo_order,
            ),
        )
        for side, view in (("o", "geo_origin"), ("d", "geo_destination")):
            renamed = ", ".join(
                f"{ident(c)} AS {ident(to)}" for c, to in side_columns[side].items()
            )
            run(
                con,
                render(
                    "synthetic.side_view",
                    view=ident(names[view]),
                    renamed=renamed,
                    geo=ident(names["geo"]),
                ),
            )
        if microdata:
            od_cols = ", ".join(ident(c) for c in pairs.column_names if c != "n")
            run(
                con,
                render(
                    "synthetic.trips_microdata",
                    trips=ident(names["trips"]),
                    cols=od_cols,
                    pairs=ident(tmp_pairs),
                ),
            )
        else:
            trips, pairs_sql = ident(names["trips"]), ident(tmp_pairs)
            run(con, render("synthetic.trips_counts", trips=trips, pairs=pairs_sql))
    finally:
        con.unregister(tmp_geo)
        con.unregister(tmp_pairs)
    return names


def italy_like(
    con: duckdb.DuckDBPyConnection,
    *,
    scale: float = 1.0,
    seed: int = 0,
    microdata: bool = True,
    prefix: str = "",
    overwrite: bool = False,
) -> SyntheticOD:
    """Create an Italy-like geography and O/D trips table in ``con``.

    Args:
        con: the DuckDB connection to write into.
        scale: 1.0 gives ~500K O/D pairs and 28.8M trips; other values scale pairs and trips
            proportionally. The geography is always 20 > 107 > 7,900.
        seed: seed of the generator (synthetic data is reproducible).
        microdata: one row per trip (``trips``) if True, else one row per pair with a ``n``
            column.
        prefix: prefix of the created table names.
        overwrite: replace existing tables of the same names.

    Returns:
        The names of the tables: ``geo`` (region, province, municipality, plus ``name``), views
        ``geo_origin`` / ``geo_destination`` (columns named as the O/D chains) and ``trips``.

    Example:
        >>> import duckdb
        >>> con = duckdb.connect()
        >>> d = italy_like(con, scale=0.01, microdata=False)
        >>> con.execute(f"SELECT count(DISTINCT region) FROM {d.geo}").fetchall()
        [(20,)]
    """
    if not (0 < scale <= 4):
        raise SpecError(f"scale must be in (0, 4], got {scale!r}")
    rng = np.random.default_rng(seed)
    n_regions, n_prov, n_mun = 20, 107, 7900  # the geography is always Italy-shaped
    n_pairs = max(1000, round(500_000 * scale))
    total_trips = max(2 * n_pairs, round(28_800_000 * scale))

    prov_per_region = _split(rng, n_prov, n_regions, 2.0)
    mun_per_prov = _split(rng, n_mun, n_prov, 1.0)
    prov_region = np.repeat(np.arange(1, n_regions + 1), prov_per_region)
    prov_code = prov_region * 1000 + np.concatenate([np.arange(1, k + 1) for k in prov_per_region])
    mun_prov_idx = np.repeat(np.arange(n_prov), mun_per_prov)
    within = np.concatenate([np.arange(1, k + 1) for k in mun_per_prov])
    mun_code = prov_code[mun_prov_idx] * 1000 + within
    mun_region = prov_region[mun_prov_idx]
    # heavy-tailed municipal populations (a few cities, many villages)
    pop = rng.pareto(1.1, n_mun) + 1.0
    pop /= pop.sum()

    # O/D pairs: mostly local commuting (same province, then same region), some long distance.
    draws = int(n_pairs * 3)
    origin = rng.choice(n_mun, size=draws, p=pop)
    kind = rng.random(draws)
    dest = rng.choice(n_mun, size=draws, p=pop)
    prov_start = np.concatenate(([0], np.cumsum(mun_per_prov)))
    local = kind < 0.6
    op = mun_prov_idx[origin[local]]
    lo, hi = prov_start[op], prov_start[op + 1]
    dest[local] = lo + (rng.random(local.sum()) * (hi - lo)).astype(np.int64)
    region_start = np.concatenate(
        ([0], np.cumsum(np.bincount(mun_region - 1, minlength=n_regions)))
    )
    reg = (kind >= 0.6) & (kind < 0.85)
    orr = mun_region[origin[reg]] - 1
    lo, hi = region_start[orr], region_start[orr + 1]
    dest[reg] = lo + (rng.random(reg.sum()) * (hi - lo)).astype(np.int64)
    pair_key = np.unique(origin.astype(np.int64) * n_mun + dest)
    if pair_key.size > n_pairs:
        pair_key = np.sort(rng.choice(pair_key, size=n_pairs, replace=False))
    o_idx, d_idx = pair_key // n_mun, pair_key % n_mun
    # flows: heavy-tailed (Pareto II, shape 1.1: most pairs carry a handful of commuters, a
    # few city pairs tens of thousands), allocated so that the trips add up to ``total_trips``
    # exactly (every pair keeps >= 1 trip; the largest remainders round up)
    flow = np.minimum(rng.pareto(1.1, pair_key.size), 2000.0)
    share = (total_trips - pair_key.size) * flow / flow.sum()
    counts = 1 + np.floor(share).astype(np.int64)
    short = total_trips - int(counts.sum())
    counts[np.argsort(share - np.floor(share))[::-1][:short]] += 1

    geo = pa.table(
        {
            "region": mun_region.astype(np.int32),
            "province": (mun_code // 1000).astype(np.int32),
            "municipality": mun_code.astype(np.int32),
        }
    )
    pairs = pa.table(
        {
            "o_region": mun_region[o_idx].astype(np.int32),
            "o_province": (mun_code[o_idx] // 1000).astype(np.int32),
            "o_mun": mun_code[o_idx].astype(np.int32),
            "d_region": mun_region[d_idx].astype(np.int32),
            "d_province": (mun_code[d_idx] // 1000).astype(np.int32),
            "d_mun": mun_code[d_idx].astype(np.int32),
            "n": counts,
        }
    )
    names = _write_od(
        con,
        geo,
        pairs,
        prefix=prefix,
        overwrite=overwrite,
        microdata=microdata,
        geo_select="region, province, municipality, 'Comune ' || municipality AS name",
        geo_order="municipality",
        side_columns={
            side: {
                "region": f"{side}_region",
                "province": f"{side}_province",
                "municipality": f"{side}_mun",
            }
            for side in ("o", "d")
        },
    )
    return SyntheticOD(
        geo=names["geo"],
        geo_origin=names["geo_origin"],
        geo_destination=names["geo_destination"],
        trips=names["trips"],
        pairs=int(pair_key.size),
        trips_total=int(counts.sum()),
        microdata=microdata,
    )


#: partitions of :func:`paper_dataset`: (levels below the whole area, children per area)
PAPER_KINDS = {"binary": (8, (2, 2)), "random": (4, (2, 10))}
#: share of all origin/destination leaf pairs that carry a flow
PAPER_DENSITIES = {"complete": 1.0, "dense": 0.5, "sparse": 0.01}
#: seed of the random partition: the first seed whose partition (drawn as in ``_partition``)
#: has 435 areas per side, the size of the paper's (189,225 = 435^2 pairs in its Table 1)
PAPER_PARTITION_SEED = 2559
PAPER_MAX_FLOW = 1000
PAPER_PARETO_SHAPE = 3.0


@dataclass(frozen=True)
class PaperOD:
    """Names and sizes of the tables :func:`paper_dataset` created.

    ``hierarchy`` is the O/D hierarchy to release (origin chain, destination chain) and
    ``count`` the count column of ``trips`` (None for microdata, one row per user).
    """

    kind: str
    density: str
    geo: str
    geo_origin: str
    geo_destination: str
    trips: str
    areas: int
    pairs: int
    trips_total: int
    microdata: bool
    level_columns: tuple[str, ...]

    @property
    def hierarchy(self) -> list[list[str]]:
        return [[f"o_{c}" for c in self.level_columns], [f"d_{c}" for c in self.level_columns]]

    @property
    def count(self) -> str | None:
        return None if self.microdata else "n"

    @property
    def users(self) -> int:
        """Number of users (one trip each): the sum of the flows."""
        return self.trips_total


def _partition(kind: str, seed: int) -> list[np.ndarray]:
    """The parent (index in the level above) of every area, per level, coarse to fine."""
    depth, (lo, hi) = PAPER_KINDS[kind]
    rng = np.random.default_rng(seed)
    parents: list[np.ndarray] = []
    n = 1
    for _ in range(depth):
        k = rng.integers(lo, hi + 1, size=n)
        parents.append(np.repeat(np.arange(n, dtype=np.int64), k))
        n = int(k.sum())
    return parents


def paper_flows(n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` flows as in the paper: Pareto (Lomax) draws of shape 3, divided by their maximum,
    scaled to [1, 1000] and rounded down (so the largest flow is exactly 1000)."""
    x = rng.pareto(PAPER_PARETO_SHAPE, n)
    top = x.max() if n else 1.0
    scaled = 1.0 + (PAPER_MAX_FLOW - 1) * x / (top if top > 0 else 1.0)
    return np.floor(scaled).astype(np.int64)


def paper_dataset(
    con: duckdb.DuckDBPyConnection,
    kind: str = "binary",
    density: str = "complete",
    *,
    seed: int = 0,
    partition_seed: int = PAPER_PARTITION_SEED,
    microdata: bool = False,
    prefix: str = "",
    overwrite: bool = False,
) -> PaperOD:
    """Create one of the six synthetic O/D datasets of the PETS 2025 paper (its Table 1).

    The geography is the same on both sides: a ``"binary"`` partition (8 levels, every area split
    in 2: 256 leaf areas) or a ``"random"`` partition (4 levels, every area split into 2..10
    areas, uniformly and independently). Of all leaf O/D pairs, ``"complete"`` gives every pair
    a flow, ``"dense"`` half of them and ``"sparse"`` 1% (``floor(share * pairs)`` pairs drawn
    without replacement). Flows follow a Pareto (Lomax) of shape 3 divided by the largest draw,
    scaled to [1, 1000] and rounded down; each unit of flow is one user with one trip.

    Args:
        con: the DuckDB connection to write into.
        kind: ``"binary"`` or ``"random"``.
        density: ``"complete"``, ``"dense"`` or ``"sparse"``.
        seed: seed of the pairs and flows.
        partition_seed: seed of the random partition (ignored for ``"binary"``). The default
            gives 435 leaf areas per side like the paper's, so pair counts match its Table 1.
        microdata: one row per user if True; else one row per pair with a count column ``n``.
        prefix: prefix of the created names.
        overwrite: replace existing tables and views of the same names.

    Returns:
        A :class:`PaperOD`: table ``geo`` (columns ``l1`` .. ``lK``, integer area codes, one row
        per leaf area), views ``geo_origin`` / ``geo_destination`` (``o_l1`` .. / ``d_l1`` ..:
        the public domain of each chain) and ``trips``.

    Example:
        >>> import duckdb
        >>> con = duckdb.connect()
        >>> d = paper_dataset(con, "binary", "sparse")
        >>> (d.areas, d.pairs), d.hierarchy[1][:2]
        ((256, 655), ['d_l1', 'd_l2'])
        >>> con.execute(f"SELECT count(*), max(n) FROM {d.trips}").fetchall()
        [(655, 1000)]
    """
    if kind not in PAPER_KINDS:
        raise SpecError(f"kind must be one of {', '.join(PAPER_KINDS)}; got {kind!r}")
    if density not in PAPER_DENSITIES:
        raise SpecError(f"density must be one of {', '.join(PAPER_DENSITIES)}; got {density!r}")
    parents = _partition(kind, partition_seed if kind == "random" else 0)
    depth = len(parents)
    n_leaves = parents[-1].size
    # ancestors of every leaf, coarse to fine: codes[d] = index of the level-(d+1) area
    codes = [np.arange(n_leaves, dtype=np.int64)]
    for d in range(depth - 1, 0, -1):
        codes.insert(0, parents[d][codes[0]])
    cols = tuple(f"l{d + 1}" for d in range(depth))

    rng = np.random.default_rng(seed)
    n_all = n_leaves * n_leaves
    n_pairs = int(n_all * PAPER_DENSITIES[density])
    if n_pairs == n_all:
        pair = np.arange(n_all, dtype=np.int64)
    else:
        pair = np.sort(rng.choice(n_all, size=n_pairs, replace=False)).astype(np.int64)
    flows = paper_flows(n_pairs, rng)
    o_idx, d_idx = pair // n_leaves, pair % n_leaves

    geo = pa.table({c: codes[d].astype(np.int32) for d, c in enumerate(cols)})
    pairs_data: dict[str, np.ndarray] = {}
    for side, idx in (("o", o_idx), ("d", d_idx)):
        for d, c in enumerate(cols):
            pairs_data[f"{side}_{c}"] = codes[d][idx].astype(np.int32)
    pairs_data["n"] = flows
    geo_cols = ", ".join(ident(c) for c in cols)
    names = _write_od(
        con,
        geo,
        pa.table(pairs_data),
        prefix=prefix,
        overwrite=overwrite,
        microdata=microdata,
        geo_select=geo_cols,
        geo_order=geo_cols,
        side_columns={side: {c: f"{side}_{c}" for c in cols} for side in ("o", "d")},
    )
    return PaperOD(
        kind=kind,
        density=density,
        geo=names["geo"],
        geo_origin=names["geo_origin"],
        geo_destination=names["geo_destination"],
        trips=names["trips"],
        areas=int(n_leaves),
        pairs=int(n_pairs),
        trips_total=int(flows.sum()),
        microdata=microdata,
        level_columns=cols,
    )


# ---------------------------------------------------------------------------------------------
# ODMTS: a day of trips of an on-demand multimodal transit system (the CBDP paper's setting)

#: the 12 modes of an O/D pair, fixed by its stops through a public rule (see :func:`odmts`)
ODMTS_MODES = (
    "walk",
    "shuttle",
    "shuttle-hub",
    "hub-shuttle",
    "bus",
    "express",
    "shuttle-bus",
    "bus-shuttle",
    "shuttle-bus-shuttle",
    "shuttle-express",
    "express-shuttle",
    "shuttle-express-shuttle",
)
ODMTS_DAYS = ("weekday", "weekend")
#: trips in a day: the paper's Ann Arbor data had 37,714 (the weekend is the "low" day)
ODMTS_TRIPS = {"weekday": 38_000, "weekend": 15_000}
#: share of ordered stop pairs that carry any demand, and the shape of their affinities
ODMTS_SERVED = 0.04
ODMTS_AFFINITY_SHAPE = 0.5


@dataclass(frozen=True)
class ODMTS:
    """Names and sizes of the tables :func:`odmts` created.

    ``cells`` is the PUBLIC domain (a view: every ordered stop pair in every period with its
    zones and mode); ``pairs`` and ``periods`` are its two factors (``domain=[pairs, periods]``
    is the same domain as a product); ``trips`` has one row per trip (``o_stop``, ``d_stop``,
    ``period``).
    """

    stops: str
    periods: str
    pairs: str
    cells: str
    trips: str
    n_stops: int
    n_periods: int
    trips_total: int
    nonzero_cells: int
    day: str

    @property
    def leaf_cells(self) -> int:
        return self.n_stops * self.n_stops * self.n_periods


def odmts_features(k: int = 5) -> dict[str, list[str]]:
    """The paper's feature sets for :func:`odmts` data: ``k = 3`` (total, period, trip),
    4 (+ zone pair per period) or 5 (+ mode per period), coarse to fine, the leaf last. The
    k = 4 set is a chain (each feature refines the previous one); k = 5 is not (zones and mode
    are incomparable).

    Example:
        >>> list(odmts_features(5))
        ['total', 'period', 'zones', 'mode', 'trip']
    """
    if k not in (1, 3, 4, 5):
        raise SpecError(f"odmts_features takes k = 1, 3, 4 or 5 (the paper's O3, O4, O5), got {k}")
    out: dict[str, list[str]] = {}
    if k >= 3:
        out["total"] = []
        out["period"] = ["period"]
    if k >= 4:
        out["zones"] = ["o_zone", "d_zone", "period"]
    if k >= 5:
        out["mode"] = ["mode", "period"]
    out["trip"] = ["o_stop", "d_stop", "period"]
    return out


def _odmts_mode(zone: np.ndarray, hub: np.ndarray) -> np.ndarray:
    """The mode index of every ordered stop pair (see :func:`odmts`)."""
    n = zone.size
    o = np.repeat(np.arange(n), n)
    d = np.tile(np.arange(n), n)
    gap = np.abs(zone[o] - zone[d])
    ho, hd = hub[o], hub[d]
    mode = np.empty(n * n, dtype=np.int64)
    same = gap == 0
    mode[same & ~ho & ~hd] = 1
    mode[same & ~ho & hd] = 2
    mode[same & ho & ~hd] = 3
    mode[same & ho & hd] = 4
    for far, base in ((gap == 1, 0), (gap >= 2, 1)):
        mode[far & ho & hd] = 4 + base
        mode[far & ~ho & hd] = 6 + 3 * base
        mode[far & ho & ~hd] = 7 + 3 * base
        mode[far & ~ho & ~hd] = 8 + 3 * base
    mode[o == d] = 0
    return mode


def _odmts_profile(day: str, periods: int) -> tuple[np.ndarray, np.ndarray]:
    """Share of the day's trips per period, and per period the weight of each pattern."""
    hours = (np.arange(periods) + 0.5) * 24.0 / periods

    def bump(mu: float, sd: float) -> np.ndarray:
        b = np.exp(-0.5 * ((hours - mu) / sd) ** 2)
        return np.asarray(b / b.sum())

    if day == "weekday":
        parts = [bump(7.75, 1.0), bump(17.25, 1.2), bump(12.5, 3.0)]
        shares = [0.22, 0.33, 0.45]
    else:
        parts = [bump(13.5, 3.5), bump(20.0, 2.0)]
        shares = [0.8, 0.2]
    weighted = np.stack([s * p for s, p in zip(shares, parts, strict=True)], axis=1)
    profile = weighted.sum(axis=1)
    return profile, weighted / profile[:, None]


def odmts(
    con: duckdb.DuckDBPyConnection,
    *,
    day: str = "weekday",
    stops: int = 130,
    zones: int = 4,
    period_minutes: int = 30,
    trips: int | None = None,
    seed: int = 0,
    prefix: str = "odmts_",
    overwrite: bool = False,
) -> ODMTS:
    """A day of trips of an ODMTS shaped like the CBDP paper's (Ann Arbor), with its domain.

    **Construction** (everything from ``seed``; the geography depends on it alone, so the
    weekday and the weekend of one seed share it):

    * **Stops and zones.** ``stops`` stops (the paper: 130 to 160) are split into ``zones``
      zones (4) along a line, by uniform draws; in every zone a tenth of the stops (at least
      one) are hubs (bus stations). Each stop gets log-normal "home", "work" and "leisure"
      weights; hubs weigh 3 times more as workplaces and twice as leisure places.
    * **Periods.** A day cut into periods of ``period_minutes`` (48 of 30 minutes); ``period``
      is their index, ``start`` their start as ``HH:MM``.
    * **Modes: a public function of the O/D pair.** Twelve modes (:data:`ODMTS_MODES`): ``walk``
      (origin = destination); within a zone ``shuttle`` (stop to stop), ``shuttle-hub``,
      ``hub-shuttle``, ``bus`` (hub to hub); between adjacent zones ``bus``, ``shuttle-bus``,
      ``bus-shuttle``, ``shuttle-bus-shuttle``; between zones further apart the same with an
      ``express`` bus. So every O/D pair has one mode and one zone pair, and ``mode x period``
      and ``zone pair x period`` are coarsenings of the leaf ``(o_stop, d_stop, period)``
      that refine ``period`` and do not refine each other: the paper's lattice.
    * **Demand.** Only a share ``ODMTS_SERVED`` (4%) of the ordered stop pairs carries demand,
      each with a Gamma(0.5) affinity, decaying by ``exp(-zone gap / 1.5)``; the origin-
      destination weight of a period mixes commuting patterns by time of day. **Weekday** (the
      high demand day, ``trips`` = 38,000 by default, the paper's 37,714): a morning peak
      around 7:45 of home -> work trips (22% of the day), an evening peak around 17:15 of
      work -> home trips (33%), and a broad midday of any-to-any trips (45%). **Weekend** (low,
      15,000): a broad midday (80%) and an evening (20%) of home -> leisure and leisure -> home
      trips. The trips of each period are a multinomial draw over the pairs.
    * **Sparsity.** About 1% of the 811,200 leaf cells are non-zero on a weekday (0.6% on the
      weekend); between 8 and 10 am about 5,600 trips fall in about 1,060 cells (the paper:
      4,878 trips in 591 of 67,600 cells).

    Tables: ``<prefix>stops`` (stop, zone, hub), ``<prefix>periods`` (period, start),
    ``<prefix>pairs`` (o_stop, d_stop, o_zone, d_zone, mode: the public mapping),
    ``<prefix>cells`` (a view: pairs x periods, the leaf domain) and ``<prefix>trips`` (one row
    per trip: o_stop, d_stop, period).

    Example:
        >>> import duckdb
        >>> con = duckdb.connect()
        >>> d = odmts(con, stops=20, trips=500, seed=1)
        >>> d.leaf_cells, d.trips_total, con.sql(f"SELECT count(*) FROM {d.trips}").fetchall()
        (19200, 500, [(500,)])
    """
    if day not in ODMTS_DAYS:
        raise SpecError(f"day must be one of {', '.join(ODMTS_DAYS)}, got {day!r}")
    if stops < 2 or zones < 1 or zones > stops:
        raise SpecError(f"odmts needs at least 2 stops and 1..stops zones, got {stops}, {zones}")
    if period_minutes < 1 or 1440 % period_minutes:
        raise SpecError(f"period_minutes must divide a day (1440), got {period_minutes}")
    n_trips = ODMTS_TRIPS[day] if trips is None else int(trips)
    n_periods = 1440 // period_minutes
    geo = np.random.default_rng([seed, 0])
    zone = np.sort(geo.integers(0, zones, stops))
    hub = np.zeros(stops, dtype=bool)
    for z in range(zones):
        members = np.flatnonzero(zone == z)
        if members.size:
            n_hubs = max(1, round(0.1 * members.size))
            hub[geo.choice(members, n_hubs, replace=False)] = True
    home = geo.lognormal(0.0, 1.0, stops)
    work = geo.lognormal(0.0, 1.0, stops) * np.where(hub, 3.0, 1.0)
    leisure = geo.lognormal(0.0, 1.0, stops) * np.where(hub, 2.0, 1.0)
    served = geo.random((stops, stops)) < ODMTS_SERVED
    affinity = geo.gamma(ODMTS_AFFINITY_SHAPE, 1.0 / ODMTS_AFFINITY_SHAPE, (stops, stops))
    affinity *= served * np.exp(-np.abs(zone[:, None] - zone[None, :]) / 1.5)
    if day == "weekday":
        patterns = [np.outer(home, work), np.outer(work, home), np.outer(home + work, home + work)]
    else:
        patterns = [np.outer(home, leisure), np.outer(leisure, home)]
    weights = [(p * affinity).ravel() for p in patterns]
    weights = [w / w.sum() if w.sum() > 0 else np.full(w.size, 1.0 / w.size) for w in weights]
    profile, mix = _odmts_profile(day, n_periods)
    demand = np.random.default_rng([seed, 1 + ODMTS_DAYS.index(day)])
    per_period = demand.multinomial(n_trips, profile)
    counts = np.zeros((stops * stops, n_periods), dtype=np.int64)
    for t in range(n_periods):
        w = sum(mix[t, i] * weights[i] for i in range(len(weights)))
        counts[:, t] = demand.multinomial(per_period[t], w / w.sum())
    width = len(str(stops))
    stop_ids = np.array([f"S{i + 1:0{width}d}" for i in range(stops)], dtype=object)
    zone_ids = np.array([f"Z{z + 1}" for z in range(zones)], dtype=object)
    mode = _odmts_mode(zone, hub)
    o = np.repeat(np.arange(stops), stops)
    d = np.tile(np.arange(stops), stops)
    nz_pair, nz_period = np.nonzero(counts)
    tables = {
        "stops": pa.table(
            {"stop": stop_ids, "zone": zone_ids[zone], "hub": hub},
        ),
        "periods": pa.table(
            {
                "period": np.arange(n_periods, dtype=np.int32),
                "start": [
                    f"{(t * period_minutes) // 60:02d}:{(t * period_minutes) % 60:02d}"
                    for t in range(n_periods)
                ],
            }
        ),
        "pairs": pa.table(
            {
                "o_stop": stop_ids[o],
                "d_stop": stop_ids[d],
                "o_zone": zone_ids[zone[o]],
                "d_zone": zone_ids[zone[d]],
                "mode": np.array(ODMTS_MODES, dtype=object)[mode],
            }
        ),
        "counts": pa.table(
            {
                "o_stop": stop_ids[o[nz_pair]],
                "d_stop": stop_ids[d[nz_pair]],
                "period": nz_period.astype(np.int32),
                "n": counts[nz_pair, nz_period],
            }
        ),
    }
    names = {k: prefix + k for k in ("stops", "periods", "pairs", "cells", "trips")}
    if overwrite:
        run(con, drop_temp_view(names["cells"]))
        for k in ("trips", "pairs", "periods", "stops"):
            run(con, drop_temp_table(names[k]))
    registered = {k: f"__{prefix}{k}_arrow" for k in tables}
    for k, table in tables.items():
        con.register(registered[k], table)
    try:
        for k in ("stops", "periods", "pairs"):
            run(
                con,
                render("synthetic.table_from", table=ident(names[k]), source=ident(registered[k])),
            )
        run(
            con,
            render(
                "synthetic.odmts_cells",
                cells=ident(names["cells"]),
                pairs=ident(names["pairs"]),
                periods=ident(names["periods"]),
            ),
        )
        run(
            con,
            render(
                "synthetic.odmts_trips",
                trips=ident(names["trips"]),
                counts=ident(registered["counts"]),
            ),
        )
    finally:
        for name in registered.values():
            con.unregister(name)
    return ODMTS(
        stops=names["stops"],
        periods=names["periods"],
        pairs=names["pairs"],
        cells=names["cells"],
        trips=names["trips"],
        n_stops=stops,
        n_periods=n_periods,
        trips_total=int(counts.sum()),
        nonzero_cells=int(np.count_nonzero(counts)),
        day=day,
    )


# ---------------------------------------------------------------------------------------------
# groups of persons, for count-of-counts histograms (Kuo et al., VLDB 2018, Section 6.1)

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
