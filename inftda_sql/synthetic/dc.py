"""A DC-like origin/destination lattice at block-group scale, for CBDP with O/D features
(:func:`dc_like`, :func:`dc_like_flows`, :func:`dc_like_features`).

Washington, DC has about 570 block groups in about 200 tracts: the O/D pairs of block groups
are 326K leaf cells, and features at tract level on both sides have 40K+ cells, the scale at
which CBDP's optimisation must not grow with the square of the coarse features (issue 26).
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import numpy as np
import pyarrow as pa

from .._errors import SpecError
from ..engines.duckdb.compile import drop_temp_table
from ..engines.duckdb.sql import ident, render, run

__all__ = ["DC_FEATURE_SETS", "DCFlows", "DCLike", "dc_like", "dc_like_features", "dc_like_flows"]

#: the feature sets of :func:`dc_like_features`
DC_FEATURE_SETS = ("tract", "mixed")
#: the Gamma shape of a block-group pair's affinity: most pairs near 0 (a sparse table)
DC_AFFINITY_SHAPE = 0.3


@dataclass(frozen=True)
class DCFlows:
    """The geography and true flows of :func:`dc_like_flows` (numpy, one side's arrays are
    the other's: home and work places share the city's block groups).

    ``tract[b]`` is the tract of block group ``b``; ``counts[o, d]`` the trips from block group
    ``o`` to ``d``; ``bg_ids`` and ``tract_ids`` the GEOID-like codes (strings).
    """

    tract: np.ndarray
    counts: np.ndarray
    bg_ids: np.ndarray
    tract_ids: np.ndarray

    @property
    def block_groups(self) -> int:
        return int(self.tract.size)

    @property
    def tracts(self) -> int:
        return int(self.tract_ids.size)


@dataclass(frozen=True)
class DCLike:
    """Names and sizes of the tables :func:`dc_like` created: the PUBLIC domain tables
    ``origins`` (o_bg, o_tract) and ``destinations`` (d_bg, d_tract) (``domain=[origins,
    destinations]``: their product is the leaf domain), and ``trips``, one row per trip
    (o_bg, d_bg)."""

    origins: str
    destinations: str
    trips: str
    block_groups: int
    tracts: int
    trips_total: int
    nonzero_cells: int

    @property
    def leaf_cells(self) -> int:
        return self.block_groups * self.block_groups


def dc_like_features(kind: str = "mixed") -> dict[str, list[str]]:
    """CBDP features for :func:`dc_like` data, coarse to fine, the leaf last.

    ``"tract"``: total, origin tract, destination tract, tract pair, leaf (block-group pair):
    40K+ coarse cells, but the largest is eliminated first and the rest are few. ``"mixed"``
    adds (origin block group, destination tract) and (origin tract, destination block group):
    their meet is the leaf, and the coarse cells besides the largest exceed 150K at full scale.

    Example:
        >>> list(dc_like_features("tract"))
        ['total', 'o_tract', 'd_tract', 'tracts', 'bg']
    """
    if kind not in DC_FEATURE_SETS:
        raise SpecError(f"dc_like_features takes kind 'tract' or 'mixed', got {kind!r}")
    out: dict[str, list[str]] = {
        "total": [],
        "o_tract": ["o_tract"],
        "d_tract": ["d_tract"],
        "tracts": ["o_tract", "d_tract"],
    }
    if kind == "mixed":
        out["o_bg_d_tract"] = ["o_bg", "d_tract"]
        out["o_tract_d_bg"] = ["o_tract", "d_bg"]
    out["bg"] = ["o_bg", "d_bg"]
    return out


def dc_like_flows(
    *, block_groups: int = 570, tracts: int = 200, trips: int = 250_000, seed: int = 0
) -> DCFlows:
    """The geography and true flows of a DC-like city (see :func:`dc_like`), in numpy.

    Example:
        >>> f = dc_like_flows(block_groups=30, tracts=10, trips=1000, seed=1)
        >>> f.counts.shape, int(f.counts.sum()), f.tracts, f.bg_ids[0], f.tract_ids[0]
        ((30, 30), 1000, 10, '110010001001', '11001000100')
    """
    if not 1 <= tracts <= block_groups:
        raise SpecError(
            f"dc_like needs 1 <= tracts <= block_groups, got {tracts} tracts, "
            f"{block_groups} block groups"
        )
    if trips < 0:
        raise SpecError(f"dc_like needs trips >= 0, got {trips}")
    geo = np.random.default_rng([seed, 0])
    # tracts: centres around a downtown (a 2-D normal), every tract at least one block group
    centre = geo.normal(0.0, 1.0, (tracts, 2))
    extra = geo.multinomial(block_groups - tracts, np.full(tracts, 1.0 / tracts))
    tract = np.repeat(np.arange(tracts), 1 + extra)
    where = centre[tract] + geo.normal(0.0, 0.05, (block_groups, 2))
    downtown = np.hypot(where[:, 0], where[:, 1])
    # residents log-normal, thinner downtown; jobs heavy-tailed and concentrated downtown
    residents = geo.lognormal(0.0, 0.6, block_groups) * (1.0 - 0.7 * np.exp(-downtown / 0.4))
    jobs = geo.pareto(1.2, block_groups) * np.exp(-downtown / 0.5) + 0.05
    distance = np.hypot(
        where[:, None, 0] - where[None, :, 0], where[:, None, 1] - where[None, :, 1]
    )
    affinity = geo.gamma(DC_AFFINITY_SHAPE, 1.0 / DC_AFFINITY_SHAPE, (block_groups,) * 2)
    weight = np.outer(residents, jobs) * np.exp(-distance / 0.6) * affinity
    demand = np.random.default_rng([seed, 1])
    counts = demand.multinomial(trips, (weight / weight.sum()).ravel())
    within = np.arange(block_groups) - np.searchsorted(tract, tract)
    tract_ids = np.array([f"11001{(t + 1) * 100:06d}" for t in range(tracts)], dtype=object)
    bg_ids = np.array(
        [f"{tract_ids[t]}{j + 1}" for t, j in zip(tract, within, strict=True)], dtype=object
    )
    return DCFlows(tract, counts.reshape(block_groups, block_groups), bg_ids, tract_ids)


def dc_like(
    con: duckdb.DuckDBPyConnection,
    *,
    block_groups: int = 570,
    tracts: int = 200,
    trips: int = 250_000,
    seed: int = 0,
    prefix: str = "dc_",
    overwrite: bool = False,
) -> DCLike:
    """A DC-like home-to-work table at block-group scale, with its public domain.

    **Construction** (everything from ``seed``: the geography from one stream, the trips from
    another):

    * **Geography.** ``tracts`` tract centres drawn around a downtown (a 2-D standard normal);
      ``block_groups`` block groups, every tract at least one and the rest spread evenly at
      random (1 to 6 a tract at the defaults), each near its tract's centre. Codes are
      GEOID-like: tract ``11001000100``, its block groups ``110010001001``, ``...2``.
    * **Demand.** Residents per block group are log-normal (fewer downtown); jobs are
      heavy-tailed (Pareto 1.2) and concentrated downtown. A pair's weight is residents x
      jobs x ``exp(-distance / 0.6)`` x a Gamma(0.3) affinity (most pairs nearly 0), and the
      ``trips`` are one multinomial draw over the pairs: at the defaults 326K leaf cells,
      about a fifth non-zero, the largest cells hold hundreds of trips.

    Tables: ``<prefix>origins`` (o_bg, o_tract) and ``<prefix>destinations`` (d_bg, d_tract):
    the PUBLIC domain, every block group of the city on each side; ``<prefix>trips``: one row
    per trip (o_bg, d_bg). Features: :func:`dc_like_features`.

    Example:
        >>> import duckdb
        >>> con = duckdb.connect()
        >>> d = dc_like(con, block_groups=30, tracts=10, trips=1000, seed=1)
        >>> d.leaf_cells, con.sql(f"SELECT count(*) FROM {d.trips}").fetchall()
        (900, [(1000,)])
    """
    flows = dc_like_flows(block_groups=block_groups, tracts=tracts, trips=trips, seed=seed)
    o, d = np.nonzero(flows.counts)
    tables = {
        "origins": pa.table({"o_bg": flows.bg_ids, "o_tract": flows.tract_ids[flows.tract]}),
        "destinations": pa.table({"d_bg": flows.bg_ids, "d_tract": flows.tract_ids[flows.tract]}),
        "counts": pa.table(
            {"o_bg": flows.bg_ids[o], "d_bg": flows.bg_ids[d], "n": flows.counts[o, d]}
        ),
    }
    names = {k: prefix + k for k in ("origins", "destinations", "trips")}
    if overwrite:
        for name in names.values():
            run(con, drop_temp_table(name))
    registered = {k: f"__{prefix}{k}_arrow" for k in tables}
    for k, table in tables.items():
        con.register(registered[k], table)
    try:
        for k in ("origins", "destinations"):
            run(
                con,
                render("synthetic.table_from", table=ident(names[k]), source=ident(registered[k])),
            )
        run(
            con,
            render(
                "synthetic.trips_microdata",
                trips=ident(names["trips"]),
                cols="o_bg, d_bg",
                pairs=ident(registered["counts"]),
            ),
        )
    finally:
        for name in registered.values():
            con.unregister(name)
    return DCLike(
        origins=names["origins"],
        destinations=names["destinations"],
        trips=names["trips"],
        block_groups=flows.block_groups,
        tracts=flows.tracts,
        trips_total=int(flows.counts.sum()),
        nonzero_cells=int(o.size),
    )
