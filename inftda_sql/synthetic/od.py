"""Italian-shaped O/D data: a geography of regions > provinces > municipalities (ISTAT-like
integer codes) and a heavy-tailed commuting table, written into DuckDB (:func:`italy_like`).
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import numpy as np
import pyarrow as pa

from .._errors import SpecError
from ..engines.duckdb.compile import drop_temp_table, drop_temp_view
from ..engines.duckdb.sql import ident, render, run


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
