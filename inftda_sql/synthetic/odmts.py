"""A day of trips of an on-demand multimodal transit system shaped like the CBDP paper's (Ann
Arbor: stops in zones, 30-minute periods, 12 modes), with its public domain of leaf cells and
the paper's features (:func:`odmts`, :func:`odmts_features`).
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import numpy as np
import pyarrow as pa

from .._errors import SpecError
from ..engines.duckdb.compile import drop_temp_table, drop_temp_view
from ..engines.duckdb.sql import ident, render, run

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
