"""Why TopDown-L2 beats InfTDA's max error at the middle levels of sparse O/D data (issue 16.3).

InfTDA keeps the lower false discovery rate (FDR), TDA-L2 the lower maximum absolute error at the
middle levels. This script measures both on the datasets at hand, finds the parents that make the
difference (one TopDown step on the true parents, the same noise through both projections), and
tries mechanisms that might have both: IntOpt's other tie-break (``order="descending"``), a
per-level choice of the projection, a budget split chosen with ``plan()``, and a tie-break between
IntOpt's and TDA-L2's (``zero_then_l2``).

Everything runs engine-free on the library's own TopDown pass (``inftda_sql.core.topdown``),
with the accounting of a release (``Mechanism.account`` with the public domain: levels of one
child per parent spend nothing), the tight conversion at delta 1e-8, and seeded noise (a benchmark:
not a release). A variant's runs share their seeds with the other variants' (paired noise at the
first noised level). Per level: maximum absolute error and FDR over the union of the true and the
released non-zero cells, exactly as ``evaluate()`` computes them (checked against it in
``--check``).

Command (about an hour on the shared 2-core VM, one core; results in benchmarks/paper/):

    .venv/bin/python benchmarks/accuracy_gap.py                  # everything
    .venv/bin/python benchmarks/accuracy_gap.py --quick          # 2 seeds, 2 datasets
    .venv/bin/python benchmarks/accuracy_gap.py --check          # the harness == evaluate()
    .venv/bin/python benchmarks/accuracy_gap.py --diagnose-only  # redo the one-step analysis
    .venv/bin/python benchmarks/accuracy_gap.py --plot-only      # redraw from the saved results

Datasets: Portugal and the UK (``../shared/data``), the paper's synthetic sparse trees
(``inftda_sql.synthetic.paper_dataset``) and ``lodes``: a LODES-like city generated below (3
counties > 96 tracts > 292 block groups > 4,565 blocks; 210K workers choose a home block by a
log-normal population and a work block by Pareto jobs times exp(-distance / 6 km); 183,366
non-zero block pairs, 99.6% of them at most 5, the largest 43, in a 20.8M-cell leaf domain).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from inftda_sql import evaluate, plan
from inftda_sql.core.accounting import Budget
from inftda_sql.core.arrays import I64
from inftda_sql.core.intopt import intopt
from inftda_sql.core.rng import SeededSource
from inftda_sql.core.spec import TreeSpec, parse_hierarchy
from inftda_sql.core.topdown import Optimizer, topdown
from inftda_sql.core.tree import ChainTree, code_paths, key_strides
from inftda_sql.mechanisms import get as get_mechanism
from inftda_sql.mechanisms.tda_l2 import l2_optimizer, simplex_projection
from inftda_sql.synthetic import paper_dataset

ROOT = Path(__file__).resolve().parent
SHARED = ROOT.parents[1] / "shared" / "data"
OUT = ROOT / "paper"
DELTA = 1e-8
DATASETS = ("portugal", "uk", "random_sparse", "binary_sparse", "lodes")


# ------------------------------------------------------------------------------------------------
# data: the public domain as ChainTrees, the true leaf counts as codes
# ------------------------------------------------------------------------------------------------


@dataclass
class Data:
    name: str
    spec: TreeSpec
    chains: list[ChainTree]
    leaf: list[I64]  # per chain, the leaf code of every non-zero cell
    counts: I64

    def __post_init__(self) -> None:
        self.total = int(self.counts.sum())
        self._cache: dict[int, tuple[I64, I64]] = {}
        self._anc = [ancestors(ch, codes) for ch, codes in zip(self.chains, self.leaf, strict=True)]

    @property
    def sizes(self) -> list[tuple[int, ...]]:
        return [ch.sizes for ch in self.chains]

    def true_level(self, level: int, strides: tuple[int, ...]) -> tuple[I64, I64]:
        if level not in self._cache:
            self._cache[level] = level_sums(self.spec, self._anc, self.counts, level, strides)
        return self._cache[level]


def ancestors(chain: ChainTree, leaf: I64) -> list[I64]:
    """The code at every depth (0 = root) of the nodes above ``leaf`` (deepest codes)."""
    depth = len(chain.sizes) - 1
    out = [leaf]
    for d in range(depth, 0, -1):
        out.insert(0, np.searchsorted(chain.child_offsets[d], out[0], side="right") - 1)
    return out


def level_sums(
    spec: TreeSpec, anc: Sequence[Sequence[I64]], counts: I64, level: int, strides: Sequence[int]
) -> tuple[I64, I64]:
    key = np.zeros(counts.size, dtype=np.int64)
    for c, depth in enumerate(spec.levels[level]):
        key += anc[c][depth] * strides[c]
    keys, inv = np.unique(key, return_inverse=True)
    sums = np.bincount(inv.ravel(), weights=counts, minlength=keys.size).astype(np.int64)
    nz = sums != 0
    return keys[nz], sums[nz]


def from_duckdb(
    con: duckdb.DuckDBPyConnection,
    name: str,
    trips: str,
    domains: Sequence[str],
    hierarchy: list[list[str]],
    count: str,
) -> Data:
    """Code a DuckDB O/D table and its public domains as the engine does (sorted paths)."""
    chains, joins, selects = [], [], []
    for c, (chain_cols, dom) in enumerate(zip(hierarchy, domains, strict=True)):
        cols = ", ".join(chain_cols)
        paths = con.sql(f"SELECT DISTINCT {cols} FROM {dom} ORDER BY ALL").to_arrow_table()
        coded = code_paths(paths)
        assert coded.tree is not None, f"{dom} is not nested"
        chains.append(coded.tree)
        leaf_col = chain_cols[-1]
        values = paths.column(leaf_col).to_numpy(zero_copy_only=False)
        con.register(f"__codes{c}", {"v": values, "c": coded.codes[-1]})
        joins.append(f"JOIN __codes{c} k{c} ON t.{leaf_col} = k{c}.v")
        selects.append(f"k{c}.c AS c{c}")
    got = con.execute(
        f"SELECT {', '.join(selects)}, t.{count} AS n FROM {trips} t {' '.join(joins)}"
    ).fetchnumpy()
    for c in range(len(hierarchy)):
        con.unregister(f"__codes{c}")
    leaf = [np.asarray(got[f"c{c}"], dtype=np.int64) for c in range(len(hierarchy))]
    spec = parse_hierarchy(hierarchy, "destination")
    return Data(name, spec, chains, leaf, np.asarray(got["n"], dtype=np.int64))


def load_real(con: duckdb.DuckDBPyConnection, name: str) -> Data:
    stem, levels = {
        "portugal": ("pt_census2021_commuting_muni", ["country", "district", "municipality"]),
        "uk": ("uk_ew_census2021_odwp01_msoa", ["country", "region", "lad", "msoa"]),
    }[name]
    data, geo = SHARED / f"{stem}.parquet", SHARED / f"{stem}_geo.parquet"
    con.execute(f"CREATE OR REPLACE TABLE {name}_trips AS SELECT * FROM '{data}'")
    con.execute(f"CREATE OR REPLACE TABLE {name}_geo AS SELECT * FROM '{geo}'")
    for side in ("o", "d"):
        cols = ", ".join(f"{c} AS {side}_{c}" for c in levels)
        con.execute(f"CREATE OR REPLACE VIEW {name}_geo_{side} AS SELECT {cols} FROM {name}_geo")
    hierarchy = [[f"o_{c}" for c in levels], [f"d_{c}" for c in levels]]
    return from_duckdb(
        con, name, f"{name}_trips", [f"{name}_geo_o", f"{name}_geo_d"], hierarchy, "count"
    )


def load_synthetic(con: duckdb.DuckDBPyConnection, name: str) -> Data:
    kind, density = name.split("_")
    d = paper_dataset(con, kind, density, seed=0, prefix=f"{name}_", overwrite=True)
    return from_duckdb(
        con, name, d.trips, [d.geo_origin, d.geo_destination], d.hierarchy, d.count or "n"
    )


def lodes_like(
    con: duckdb.DuckDBPyConnection, seed: int = 0, workers: int = 210_000, decay_km: float = 6.0
) -> Data:
    """A LODES-like city: county > tract > block group > block on both sides (see the module
    docstring); home blocks by a log-normal population, work blocks by Pareto(2) jobs times
    exp(-distance / decay_km)."""
    rng = np.random.default_rng(seed)
    counties = 3
    tract_county = np.repeat(np.arange(counties), rng.integers(15, 41, size=counties))
    bg_tract = np.repeat(np.arange(tract_county.size), rng.integers(2, 5, size=tract_county.size))
    block_bg = np.repeat(np.arange(bg_tract.size), rng.integers(5, 26, size=bg_tract.size))
    nb = block_bg.size
    county_xy = rng.uniform(0, 30, size=(counties, 2))
    tract_xy = county_xy[tract_county] + rng.normal(0, 4, size=(tract_county.size, 2))
    block_xy = tract_xy[bg_tract[block_bg]] + rng.normal(0, 0.6, size=(nb, 2))
    residents = rng.lognormal(0, 1.0, nb)
    jobs = rng.pareto(2.0, nb) + 0.05
    home = np.bincount(rng.choice(nb, size=workers, p=residents / residents.sum()), minlength=nb)
    o_list, d_list, n_list = [], [], []
    for i in np.flatnonzero(home):
        dist = np.sqrt(((block_xy - block_xy[i]) ** 2).sum(1))
        w = jobs * np.exp(-dist / decay_km)
        row = rng.multinomial(home[i], w / w.sum())
        nz = np.flatnonzero(row)
        o_list.append(np.full(nz.size, i))
        d_list.append(nz)
        n_list.append(row[nz])
    parents = [np.zeros(counties, dtype=np.int64), tract_county, bg_tract, block_bg]
    chain = ChainTree.from_parents([p.astype(np.int64) for p in parents])
    cols = ["county", "tract", "bg", "block"]
    spec = parse_hierarchy([[f"o_{c}" for c in cols], [f"d_{c}" for c in cols]], "destination")
    leaf = [np.concatenate(o_list).astype(np.int64), np.concatenate(d_list).astype(np.int64)]
    counts = np.concatenate(n_list).astype(np.int64)
    return Data("lodes", spec, [chain, chain], leaf, counts)


def load(con: duckdb.DuckDBPyConnection, name: str) -> Data:
    if name in ("portugal", "uk"):
        return load_real(con, name)
    if name == "lodes":
        return lodes_like(con)
    return load_synthetic(con, name)


# ------------------------------------------------------------------------------------------------
# variants: one projection per level, a split of rho
# ------------------------------------------------------------------------------------------------


def intopt_asc(y: I64, t: I64, o: I64) -> I64:
    return intopt(y, t, o)


def intopt_desc(y: I64, t: I64, o: I64) -> I64:
    return intopt(y, t, o, order="descending")


def zero_then_l2(threshold: float) -> Optimizer:
    """When the noisy children exceed the parent: zero the noisy counts below ``threshold``
    (smallest first, as long as the excess lasts: IntOpt's order), then project the others
    (TDA-L2: a common reduction, then rounding). Parents whose children fall short of them are
    left to IntOpt."""

    def opt(y: I64, c: I64, o: I64) -> I64:
        n = y.size
        lengths = np.diff(np.append(o, n))
        seg = np.repeat(np.arange(o.size), lengths)
        xp = np.maximum(y, 0)
        excess = np.add.reduceat(xp, o) - c
        out = intopt(y, c, o)
        over = excess > 0
        if not over.any():
            return out
        small = (y > 0) & (y <= threshold)
        order = np.lexsort((y, ~small, seg))  # per parent: small ones first, ascending
        mass = np.where(small, y, 0)[order]
        cum = np.cumsum(mass)
        first = np.searchsorted(seg[order], np.arange(o.size))
        before = cum - np.where(first > 0, cum[first - 1], 0)[seg[order]]
        zero = np.zeros(n, dtype=bool)
        zero[order] = small[order] & (before <= excess[seg[order]])
        floor = int(np.abs(y).max()) + int(c.max()) + 1
        y2 = np.where(zero, -floor, y)
        x = l2_optimizer(y2, c, o)
        result: I64 = np.where(over[seg], x, out)
        return result

    return opt


def make_optimizer(name: str, sigma: float) -> Optimizer:
    if name.startswith("zl2_"):  # zl2_<k>: zero below k sigma, then L2
        return zero_then_l2(float(name[4:]) * sigma)
    return {
        "intopt": intopt_asc,
        "intopt_desc": intopt_desc,
        "l2": l2_optimizer,
    }[name]


@dataclass(frozen=True)
class Variant:
    name: str
    label: str
    upper: str  # optimizer above the leaves
    leaves: str  # optimizer at the leaf level
    split: str | None = None  # None (uniform) or "middle" (plan(split="optimal"))


VARIANTS = (
    Variant("inftda", "InfTDA (IntOpt, ascending)", "intopt", "intopt"),
    Variant("tda_l2", "TDA-L2", "l2", "l2"),
    Variant("inftda_desc", "IntOpt, descending tie-break", "intopt_desc", "intopt_desc"),
    Variant("l2_then_inftda", "L2 above the leaves, IntOpt at the leaves", "l2", "intopt"),
    Variant("inftda_then_l2", "IntOpt above the leaves, L2 at the leaves", "intopt", "l2"),
    Variant(
        "inftda_split",
        "InfTDA, rho split by plan() for the middle levels",
        "intopt",
        "intopt",
        "middle",
    ),
    Variant("zl2_1", "zero below sigma (smallest first), then L2", "zl2_1", "zl2_1"),
    Variant("zl2_2", "zero below 2 sigma (smallest first), then L2", "zl2_2", "zl2_2"),
)


_SIGMAS: dict[tuple[str, float, str | None], list[float]] = {}


def sigmas_of(data: Data, epsilon: float, split: str | None) -> list[float]:
    """Per level (root first), the sigma of a release's accounting (tight conversion, delta
    1e-8, levels of one child per parent spend nothing); ``split="middle"``: the split that
    ``plan(split="optimal")`` chooses for the levels between the first and the leaves."""
    key = (data.name, epsilon, split)
    if key not in _SIGMAS:
        _SIGMAS[key] = _sigmas(data, epsilon, split)
    return _SIGMAS[key]


def _sigmas(data: Data, epsilon: float, split: str | None) -> list[float]:
    budget = Budget.from_args(epsilon=epsilon, delta=DELTA)
    weights = None
    if split == "middle":
        n = data.spec.n_levels
        shape = [
            math.prod(s[d] for s, d in zip(data.sizes, data.spec.levels[lv], strict=True))
            for lv in range(1, n + 1)
        ]
        middle = list(range(2, n))  # every level between the first and the leaves
        p = plan(
            shape,
            epsilon=epsilon,
            delta=DELTA,
            simulations=0,
            split="optimal",
            target_levels=middle,
        )
        weights = [max(w, 1e-9) for w in p.split]
    acct = get_mechanism("inftda").account(budget, data.spec, split=weights, chains=data.chains)
    return [0.0, *acct.level_sigma]


def run(
    data: Data, variant: Variant, epsilon: float, seed: int
) -> tuple[list[dict[str, float]], float]:
    state = {"level": 0}
    sigmas = sigmas_of(data, epsilon, variant.split)
    opts = [make_optimizer(variant.upper, s) for s in sigmas[:-1]]
    opts.append(make_optimizer(variant.leaves, sigmas[-1]))

    def true_level(level: int, strides: tuple[int, ...]) -> tuple[I64, I64]:
        state["level"] = level
        return data.true_level(level, strides)

    def optimizer(y: I64, t: I64, o: I64) -> I64:
        return opts[state["level"]](y, t, o)

    t0 = time.perf_counter()
    res = topdown(
        data.spec,
        data.chains,
        true_level,
        sigmas,
        data.total,
        source=SeededSource(seed),
        optimizer=optimizer,
        threads=1,
    )
    seconds = time.perf_counter() - t0
    return metrics(data, list(res.codes), res.counts), seconds


def metrics(data: Data, codes: list[I64], counts: I64) -> list[dict[str, float]]:
    anc = [ancestors(ch, c) for ch, c in zip(data.chains, codes, strict=True)]
    out = []
    for level in range(data.spec.n_levels + 1):
        strides = key_strides(data.spec, level, data.sizes)
        tk, tv = (
            data.true_level(level, strides)
            if level
            else (np.zeros(1, np.int64), np.array([data.total]))
        )
        rk, rv = (
            level_sums(data.spec, anc, counts, level, strides) if counts.size else (tk[:0], tv[:0])
        )
        keys = np.union1d(tk, rk)
        t = np.zeros(keys.size, np.int64)
        r = np.zeros(keys.size, np.int64)
        t[np.searchsorted(keys, tk)] = tv
        r[np.searchsorted(keys, rk)] = rv
        err = np.abs(t - r)
        released = int((r > 0).sum())
        out.append(
            {
                "level": level,
                "max_abs_error": float(err.max()) if err.size else 0.0,
                # the sign of the worst errors: released above the truth, or below it
                "max_over": float(max((r - t).max(), 0)) if err.size else 0.0,
                "max_under": float(max((t - r).max(), 0)) if err.size else 0.0,
                "mean_abs_error": float(err.mean()) if err.size else 0.0,
                "fdr": float(((r > 0) & (t == 0)).sum() / released) if released else 0.0,
                "fnr": float(((t > 0) & (r <= 0)).sum() / max(int((t > 0).sum()), 1)),
                "released": released,
            }
        )
    return out


# ------------------------------------------------------------------------------------------------
# diagnosis: one TopDown step on the true parents, the same noise through both projections
# ------------------------------------------------------------------------------------------------


def one_step(data: Data, level: int, epsilon: float, seed: int) -> dict[str, Any]:
    """Children of the true non-zero parents of ``level``, noised once; per parent the largest
    child error of IntOpt and of TDA-L2 on the SAME noisy children, and what the parent looks
    like (children, true non-zero children, parent count, shift, Chebyshev radius)."""
    sig = sigmas_of(data, epsilon, None)
    sig_exact = [0.0] * len(sig)
    captured: dict[str, list[Any]] = {}

    def grab(tag: str) -> Optimizer:
        def opt(y: I64, t: I64, o: I64) -> I64:
            if state["level"] == level:
                captured.setdefault(tag, []).append((y.copy(), t.copy(), o.copy()))
            return intopt(y, t, o)

        return opt

    state = {"level": 0}

    def true_level(lv: int, strides: tuple[int, ...]) -> tuple[I64, I64]:
        state["level"] = lv
        return data.true_level(lv, strides)

    noisy_sig = [0.0] * len(sig)
    noisy_sig[level] = sig[level]
    topdown(
        data.spec,
        data.chains,
        true_level,
        sig_exact,
        data.total,
        source=SeededSource(seed),
        optimizer=grab("truth"),
        threads=1,
    )
    topdown(
        data.spec,
        data.chains,
        true_level,
        noisy_sig,
        data.total,
        source=SeededSource(seed),
        optimizer=grab("noisy"),
        threads=1,
    )
    truth = np.concatenate([c[0] for c in captured["truth"]])
    y = np.concatenate([c[0] for c in captured["noisy"]])
    parts = captured["noisy"]
    targets = np.concatenate([c[1] for c in parts])
    offsets = np.concatenate(
        [c[2] + sum(p[0].size for p in parts[:i]) for i, c in enumerate(parts)]
    )
    x_inf = intopt(y, targets, offsets)
    x_l2 = l2_optimizer(y, targets, offsets)
    lengths = np.diff(np.append(offsets, y.size))
    e_inf = np.maximum.reduceat(np.abs(x_inf - truth), offsets)
    e_l2 = np.maximum.reduceat(np.abs(x_l2 - truth), offsets)
    nz_true = np.add.reduceat((truth > 0).astype(np.int64), offsets)
    tau = np.maximum.reduceat(np.abs(x_inf - y), offsets)
    clipped = np.add.reduceat(np.maximum(-y, 0), offsets)  # mass lost by clipping at 0
    fd_inf = np.add.reduceat(((x_inf > 0) & (truth == 0)).astype(np.int64), offsets)
    fd_l2 = np.add.reduceat(((x_l2 > 0) & (truth == 0)).astype(np.int64), offsets)
    return {
        "sigma": sig[level],
        "y": y,
        "truth": truth,
        "targets": targets,
        "offsets": offsets,
        "children": lengths,
        "true_nonzero": nz_true,
        "parent": targets,
        "tau": tau,
        "clipped": clipped,
        "err_inftda": e_inf,
        "err_l2": e_l2,
        "fd_inftda": fd_inf,
        "fd_l2": fd_l2,
        "min_noisy": np.minimum.reduceat(y, offsets),
    }


def check(con: duckdb.DuckDBPyConnection, seeds: int = 3) -> None:
    """The harness is the library: InfTDA and TDA-L2 runs here give exactly the per-level
    max error and FDR of ``release()`` (same seed) scored by ``evaluate()``, on Portugal."""
    import inftda_sql

    data = load(con, "portugal")
    hierarchy = [
        [f"o_{c}" for c in ("country", "district", "municipality")],
        [f"d_{c}" for c in ("country", "district", "municipality")],
    ]
    for variant in VARIANTS[:2]:
        for seed in range(seeds):
            mine, _ = run(data, variant, 1.0, seed)
            inftda_sql.release(
                con,
                "portugal_trips",
                hierarchy=hierarchy,
                domain=["portugal_geo_o", "portugal_geo_d"],
                tree="destination",
                epsilon=1.0,
                delta=DELTA,
                count="count",
                mechanism=variant.name,
                seed=seed,
                output="released",
                overwrite=True,
                levels_view=False,
            )
            ev = evaluate(
                con,
                "portugal_trips",
                "released",
                hierarchy=hierarchy,
                tree="destination",
                count="count",
            ).fetchall()
            for lv, row in zip(mine, ev, strict=True):
                assert lv["max_abs_error"] == row[4], (variant.name, seed, lv, row)
                assert abs(lv["fdr"] - row[6]) < 1e-12, (variant.name, seed, lv, row)
    print(f"check: harness == release() + evaluate() on portugal ({seeds} seeds, 2 mechanisms)")


# ------------------------------------------------------------------------------------------------
# driver
# ------------------------------------------------------------------------------------------------


#: levels diagnosed one step at a time (the middle levels where TDA-L2 wins, and the leaves)
DIAGNOSED = {
    "portugal": (4, 5, 6),
    "uk": (6, 8),
    "random_sparse": (5, 8),
    "binary_sparse": (9, 16),
    "lodes": (4, 6, 8),
}


def diagnose(data: Data, epsilon: float, seeds: int) -> list[dict[str, Any]]:
    """Per diagnosed level: which cell holds each projection's maximum error, on the same noise.

    A *kept spike* is a cell released above its true count by more than 2 sigma (a large
    positive noise draw left in place); a *zeroed flow* a true cell released as 0.
    """
    rows = []
    for level in DIAGNOSED[data.name]:
        per_run = []
        for seed in range(seeds):
            r = one_step(data, level, epsilon, seed)
            y, t, c, o, sig = r["y"], r["truth"], r["targets"], r["offsets"], r["sigma"]
            lengths = np.diff(np.append(o, y.size))
            seg = np.repeat(np.arange(o.size), lengths)
            # over-counted parents (noisy positives above the parent): there the Euclidean
            # projection (before rounding) is itself a Chebyshev-optimal point
            over = (np.add.reduceat(np.maximum(y, 0), o) > c) & (lengths > 1)
            radius = np.maximum.reduceat(np.abs(intopt(y, c, o) - y), o)
            radius_l2 = np.maximum.reduceat(np.abs(simplex_projection(y, c, o) - y), o)
            run_row: dict[str, Any] = {
                "l2_chebyshev_optimal": float(np.mean(radius_l2[over] <= radius[over] + 1e-9))
                if over.any()
                else 1.0
            }
            for tag, x in (("inftda", intopt(y, c, o)), ("tda_l2", l2_optimizer(y, c, o))):
                err = np.abs(x - t)
                k = int(np.argmax(err))
                run_row[tag] = {
                    "max_abs_error": float(err[k]),
                    "spike": bool(x[k] - t[k] > 2 * sig),
                    "zeroed": bool(x[k] == 0 and t[k] > 0),
                    "true_over_sigma": float(t[k] / sig),
                    "noise_over_sigma": float((y[k] - t[k]) / sig),
                    "lowered_by": float(y[k] - x[k]),
                    "children": int(lengths[seg[k]]),
                    "false_discoveries": int(((x > 0) & (t == 0)).sum()),
                    "released": int((x > 0).sum()),
                    "over_count": float(np.mean(np.add.reduceat(np.maximum(y, 0), o) > c)),
                }
            per_run.append(run_row)
        rows.append(
            {
                "dataset": data.name,
                "epsilon": epsilon,
                "level": level,
                "level_name": data.spec.level_name(level),
                "sigma": float(sig),
                "runs": per_run,
            }
        )
    return rows


def print_diagnosis(rows: Sequence[dict[str, Any]]) -> list[str]:
    lines = [
        "| dataset | epsilon | level | sigma | parents over-counted | projection | max error "
        "(median) | worst cell a kept spike / a zeroed flow | its true count, noise (sigma) "
        "| lowered by | false discoveries / released |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        optimal = min(r["l2_chebyshev_optimal"] for r in row["runs"])
        for tag in ("inftda", "tda_l2"):
            runs = [r[tag] for r in row["runs"]]
            med = statistics.median
            over = f"{med(r['over_count'] for r in runs):.0%}"
            if tag == "tda_l2":
                over = f"L2 Chebyshev-optimal in {optimal:.0%}"
            lines.append(
                f"| {row['dataset']} | {row['epsilon']:g} | {row['level']} {row['level_name']} | "
                f"{row['sigma']:.0f} | {over} | {tag} | "
                f"{med(r['max_abs_error'] for r in runs):.0f} | "
                f"{np.mean([r['spike'] for r in runs]):.0%} / "
                f"{np.mean([r['zeroed'] for r in runs]):.0%} | "
                f"{med(r['true_over_sigma'] for r in runs):.1f}, "
                f"{med(r['noise_over_sigma'] for r in runs):+.1f} | "
                f"{med(r['lowered_by'] for r in runs):.0f} | "
                f"{med(r['false_discoveries'] for r in runs):,.0f} / "
                f"{med(r['released'] for r in runs):,.0f} |"
            )
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--datasets", nargs="*", default=list(DATASETS))
    ap.add_argument("--epsilons", nargs="*", type=float, default=[0.1, 1.0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--uk-seeds", type=int, default=10, help="the UK is 100x larger")
    ap.add_argument("--variants", nargs="*", default=[v.name for v in VARIANTS])
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--quick", action="store_true", help="2 seeds, Portugal and random sparse")
    ap.add_argument("--plot-only", action="store_true", help="redraw from the saved results")
    ap.add_argument("--check", action="store_true", help="compare the harness with evaluate()")
    ap.add_argument("--diagnose-only", action="store_true", help="redo the one-step analysis")
    args = ap.parse_args(argv)
    if args.check:
        check(duckdb.connect())
        return
    if args.quick:
        args.seeds = args.uk_seeds = 2
        args.datasets = ["portugal", "random_sparse"]
    runs_path = args.out / "accuracy_gap_runs.jsonl"
    diag_path = args.out / "accuracy_gap_diagnosis.json"
    if args.diagnose_only:
        con = duckdb.connect()
        rows: list[dict[str, Any]] = []
        for name in args.datasets:
            data = load(con, name)
            for eps in args.epsilons:
                rows += diagnose(data, eps, min(args.uk_seeds if name == "uk" else args.seeds, 10))
        diag_path.write_text(json.dumps(rows, indent=1))
        args.plot_only = True
    if not args.plot_only:
        con = duckdb.connect()
        args.out.mkdir(parents=True, exist_ok=True)
        diagnosis: list[dict[str, Any]] = []
        with runs_path.open("w") as f:
            for name in args.datasets:
                t0 = time.perf_counter()
                data = load(con, name)
                seeds = args.uk_seeds if name == "uk" else args.seeds
                print(
                    f"{name}: {data.counts.size:,} non-zero cells, N = {data.total:,} "
                    f"({time.perf_counter() - t0:.1f} s to load)",
                    flush=True,
                )
                for eps in args.epsilons:
                    for v in (x for x in VARIANTS if x.name in args.variants):
                        t1 = time.perf_counter()
                        for seed in range(seeds):
                            levels, sec = run(data, v, eps, seed)
                            f.write(
                                json.dumps(
                                    {
                                        "dataset": name,
                                        "variant": v.name,
                                        "epsilon": eps,
                                        "seed": seed,
                                        "seconds": sec,
                                        "levels": levels,
                                    }
                                )
                                + "\n"
                            )
                        f.flush()
                        print(
                            f"  epsilon {eps:g} {v.name}: {seeds} runs, "
                            f"{time.perf_counter() - t1:.0f} s",
                            flush=True,
                        )
                    diagnosis += diagnose(data, eps, min(seeds, 10))
        diag_path.write_text(json.dumps(diagnosis, indent=1))
    runs = [json.loads(line) for line in runs_path.read_text().splitlines()]
    diagnosis = json.loads(diag_path.read_text())
    summary = [
        "# Accuracy gap (benchmarks/accuracy_gap.py)",
        "",
        "## Max error / FDR, median over seeds: the level where TDA-L2 gains most, the leaves",
        "",
        *headline(runs),
        "",
        *summarise(runs),
        "",
        "## One TopDown step (true parents, same noise)",
        "",
    ]
    summary += print_diagnosis(diagnosis)
    (args.out / "accuracy_gap.md").write_text("\n".join(summary) + "\n")
    print("\n".join(summary))
    for name in sorted({r["dataset"] for r in runs}):
        plot(runs, name, args.out / f"accuracy_gap_{name}.png")
    plot_frontier(runs, args.out / "accuracy_gap_frontier.png")


Groups = dict[tuple[str, float, str], list[dict[str, Any]]]


def group(runs: Sequence[dict[str, Any]]) -> Groups:
    groups: Groups = {}
    for r in runs:
        groups.setdefault((r["dataset"], r["epsilon"], r["variant"]), []).append(r)
    return groups


def values(rs: Sequence[dict[str, Any]], key: str) -> np.ndarray:
    """(runs, levels) array of one metric."""
    return np.array([[lv[key] for lv in r["levels"]] for r in rs], dtype=np.float64)


def summarise(runs: Sequence[dict[str, Any]]) -> list[str]:
    """Per dataset and epsilon: per level, the median over seeds [min-max] of the maximum
    absolute error and of the FDR, one row per variant."""
    groups = group(runs)
    lines = ["## Per level: median over seeds [min-max]"]
    for ds in dict.fromkeys(r["dataset"] for r in runs):
        for eps in sorted({e for (d, e, _) in groups if d == ds}):
            variants = [v.name for v in VARIANTS if (ds, eps, v.name) in groups]
            n_levels = len(groups[(ds, eps, variants[0])][0]["levels"])
            seeds = len(groups[(ds, eps, variants[0])])
            head = "| variant | " + " | ".join(f"L{lv}" for lv in range(1, n_levels)) + " |"
            for key, title, fmt in (
                ("max_abs_error", "maximum absolute error", "{:.0f}"),
                ("fdr", "false discovery rate", "{:.2f}"),
            ):
                lines += [
                    "",
                    f"### {ds}, epsilon {eps:g}: {title} ({seeds} seeds)",
                    "",
                    head,
                    "|---|" + "---|" * (n_levels - 1),
                ]
                for v in variants:
                    m = values(groups[(ds, eps, v)], key)
                    cells = [
                        f"{fmt.format(np.median(m[:, lv]))} [{fmt.format(m[:, lv].min())}-"
                        f"{fmt.format(m[:, lv].max())}]"
                        for lv in range(1, n_levels)
                    ]
                    lines.append(f"| {v} | " + " | ".join(cells) + " |")
    return lines


def headline(runs: Sequence[dict[str, Any]]) -> list[str]:
    """One row per dataset, epsilon and level (the level where TDA-L2 gains most, and the
    leaves): every variant's median max error / median FDR."""
    groups = group(runs)
    names = [v.name for v in VARIANTS]
    lines = [
        "| dataset | eps | level | " + " | ".join(names) + " |",
        "|---|---|---|" + "---|" * len(names),
    ]
    for name in DATASETS:
        for eps in (0.1, 1.0):
            if (name, eps, "inftda") not in groups:
                continue
            n = len(groups[(name, eps, "inftda")][0]["levels"]) - 1
            for level in (gap_level(groups, name, eps), n):
                cells = []
                for v in names:
                    rs = groups.get((name, eps, v))
                    if not rs:
                        cells.append("-")
                        continue
                    err = np.median(values(rs, "max_abs_error")[:, level])
                    fdr = np.median(values(rs, "fdr")[:, level])
                    cells.append(f"{err:.0f} / {fdr:.2f}")
                where = f"{level} (leaves)" if level == n else str(level)
                lines.append(f"| {name} | {eps:g} | {where} | " + " | ".join(cells) + " |")
    return lines


PLOTTED = ("inftda", "tda_l2", "inftda_desc", "l2_then_inftda", "zl2_1", "zl2_2")
COLORS = {
    "inftda": "C0",
    "tda_l2": "C1",
    "inftda_desc": "C3",
    "l2_then_inftda": "C4",
    "zl2_1": "C2",
    "zl2_2": "C5",
}


def plot(runs: Sequence[dict[str, Any]], name: str, path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    groups = group(runs)
    epsilons = sorted({e for (d, e, _) in groups if d == name})
    fig = Figure(figsize=(4.8 * len(epsilons), 7.0), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(2, len(epsilons), squeeze=False)
    labels = {v.name: v.label for v in VARIANTS}
    for col, eps in enumerate(epsilons):
        for row, (key, ylabel) in enumerate(
            (("max_abs_error", "maximum absolute error"), ("fdr", "false discovery rate"))
        ):
            ax = axes[row][col]
            for v in PLOTTED:
                rs = groups.get((name, eps, v))
                if not rs:
                    continue
                m = values(rs, key)[:, 1:]
                lv = np.arange(1, m.shape[1] + 1)
                ax.plot(
                    lv,
                    np.median(m, axis=0),
                    marker="o",
                    ms=3,
                    color=COLORS[v],
                    label=labels[v],
                    lw=2.0 if v == "inftda" else 1.3,
                )
                ax.fill_between(lv, m.min(axis=0), m.max(axis=0), color=COLORS[v], alpha=0.15, lw=0)
            if row == 0:
                ax.set_title(f"epsilon = {eps:g}", fontsize=10)
            else:
                ax.set_xlabel("level of the destination tree (1 = coarsest)", fontsize=8)
            if col == 0:
                ax.set_ylabel(ylabel)
            ax.grid(True, alpha=0.3)
            ax.xaxis.get_major_locator().set_params(integer=True)
    handles, labs = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labs, loc="outside lower center", ncol=3, fontsize=8)
    fig.suptitle(f"{name}: median over seeds, band = min to max", fontsize=11)
    fig.savefig(path)


def gap_level(groups: Groups, name: str, eps: float) -> int:
    """The level below the leaves where TDA-L2's median max error is lowest relative to
    InfTDA's, among the levels where InfTDA releases false discoveries (both metrics matter)."""
    inf = values(groups[(name, eps, "inftda")], "max_abs_error")
    l2 = values(groups[(name, eps, "tda_l2")], "max_abs_error")
    fdr = values(groups[(name, eps, "inftda")], "fdr")
    n = inf.shape[1] - 1
    candidates = [lv for lv in range(1, n) if np.median(fdr[:, lv]) > 0] or list(range(1, n))
    return max(candidates, key=lambda lv: np.median(inf[:, lv]) / max(np.median(l2[:, lv]), 1))


def plot_frontier(runs: Sequence[dict[str, Any]], path: Path) -> None:
    """Per dataset and epsilon: FDR against max error of every variant (median, min-max
    whiskers) at the level where TDA-L2 gains most and at the leaves. Lower-left is better."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    groups = group(runs)
    panels = [
        (d, e)
        for d in DATASETS
        for e in (0.1, 1.0)
        if (d, e, "inftda") in groups and d != "binary_sparse"
    ]
    fig = Figure(figsize=(3.0 * len(panels), 6.4), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(2, len(panels), squeeze=False)
    labels = {v.name: v.label for v in VARIANTS}
    for col, (name, eps) in enumerate(panels):
        n = len(groups[(name, eps, "inftda")][0]["levels"]) - 1
        for row, level in enumerate((gap_level(groups, name, eps), n)):
            ax = axes[row][col]
            for v in PLOTTED:
                rs = groups.get((name, eps, v))
                if not rs:
                    continue
                err = values(rs, "max_abs_error")[:, level]
                fdr = values(rs, "fdr")[:, level]
                mx, my = np.median(fdr), np.median(err)
                ax.errorbar(
                    mx,
                    my,
                    yerr=[[my - err.min()], [err.max() - my]],
                    xerr=[[mx - fdr.min()], [fdr.max() - mx]],
                    fmt="o",
                    ms=5,
                    color=COLORS[v],
                    label=labels[v],
                    capsize=2,
                    lw=1,
                )
            where = "leaves" if level == n else f"level {level}"
            ax.set_title(f"{name}, eps {eps:g}, {where}", fontsize=8)
            ax.tick_params(labelsize=7)
            ax.grid(True, alpha=0.3)
            if col == 0:
                ax.set_ylabel("max abs error")
            if row == 1:
                ax.set_xlabel("false discovery rate", fontsize=8)
    handles, labs = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labs, loc="outside lower center", ncol=3, fontsize=8)
    fig.suptitle(
        "Each variant's FDR against its max error (median, min-max whiskers): lower left is better",
        fontsize=10,
    )
    fig.savefig(path)


if __name__ == "__main__":
    main(sys.argv[1:])
