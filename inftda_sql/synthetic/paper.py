"""The six synthetic O/D datasets of the PETS 2025 paper's experiments (its Table 1): binary or
random partition; complete, dense or sparse flows (:func:`paper_dataset`).
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import numpy as np
import pyarrow as pa

from .._errors import SpecError
from ..engines.duckdb.sql import ident
from .od import _write_od

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
