"""``release_count_of_counts()``: private, consistent count-of-counts histograms of a hierarchy.

For every region of a hierarchy (nation > state > county) and every size j: how many groups
(households) of j persons it holds (Kuo et al., VLDB 2018). Persons are private; the number of
groups of each leaf region is public (the *groups table*, which also lists the hierarchy's
regions). The release is pure epsilon-DP for adding or removing one person, consistent (children
sum to their parent), non-negative integers, and every region's histogram sums to its public
number of groups. The maths are engine-free (:mod:`.core.coc`, scales from
:mod:`.core.accounting`); the two aggregations and the write run in DuckDB
(:mod:`.engines.duckdb.count_of_counts`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb

from ._coc_request import CountOfCountsRequest
from ._ledger_row import LevelCosts, ledger_row
from ._stages import Stages
from ._tables import text_table
from .core.accounting import (
    CountOfCountsAccounting,
)
from .core.coc import DEFAULT_CHUNK, CocLevelStats, count_of_counts
from .core.noise import draw_discrete_laplace
from .core.rng import RandomSource
from .engines.duckdb.count_of_counts import CocEngine, truncate_sizes
from .engines.duckdb.ledger import ReleaseRecord

__all__ = ["KIND", "CountOfCountsRelease", "release_count_of_counts"]

#: the ``kind`` a count-of-counts release records in its ledger row's details
KIND = "count_of_counts"
#: the share of epsilon spent on the largest group size when ``max_size`` is not given
DEFAULT_MAX_SIZE_SHARE = 0.05
#: standard deviations added to the noisy largest size (the paper's Section 4.3)
MAX_SIZE_STDS = 5


@dataclass(frozen=True)
class CountOfCountsRelease:
    """What a count-of-counts release made and spent. Printing it gives a summary.

    Attributes:
        output: the released table (region columns, ``size``, ``groups``; leaf rows > 0).
        levels_view: the view with every level (sums of the leaves), or None.
        release_id: its row in the ledger ``inftda_releases``.
        accounting: epsilon, per-level epsilon and discrete Laplace scale.
        max_size: the largest size released (given, or estimated privately).
        levels: per level: nodes, noised entries, scale, runs of groups kept.
        timings: seconds per stage (for the data owner; not recorded publicly).
        non_private: why this release is not private (empty for a private one).
    """

    output: str
    levels_view: str | None
    release_id: int
    input: str
    hierarchy: tuple[str, ...]
    method: str
    consistency: str
    merge: str
    accounting: CountOfCountsAccounting
    max_size: int
    max_size_estimated: bool
    levels: tuple[CocLevelStats, ...]
    timings: dict[str, float] = field(default_factory=dict)
    non_private: tuple[str, ...] = ()

    @property
    def is_private(self) -> bool:
        return not self.non_private

    def relation(self, con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyRelation:
        """The released table as a DuckDB relation."""
        return con.table(self.output)

    def __str__(self) -> str:
        warn = f"NOT PRIVATE: {'; '.join(self.non_private)}\n" if self.non_private else ""
        acct = self.accounting
        how = "estimated privately" if self.max_size_estimated else "given"
        lines = [
            f"{warn}release #{self.release_id}: {self.input} -> {self.output} (count of counts, "
            f"{self.method}, {self.consistency}"
            + (f", {self.merge} merge" if self.consistency == "topdown" else "")
            + ")",
            f"budget: epsilon={acct.epsilon:.6g} pure DP (counts as rho={acct.rho:.6g}); "
            f"max_size {self.max_size:,} ({how}); {sum(self.timings.values()):.2f} s",
        ]
        rows = [
            (
                str(lv.level),
                lv.name,
                f"{lv.scale:.4g}",
                f"{lv.nodes:,}",
                f"{lv.noised_entries:,}",
                f"{lv.runs:,}",
                f"{lv.seconds:.2f}",
            )
            for lv in self.levels
        ]
        header = ("level", "nodes of", "scale", "nodes", "noised", "runs", "s")
        lines += text_table(header, rows, left=1)
        if self.levels_view:
            lines.append(f"every level: SELECT * FROM {self.levels_view} WHERE level = <n>")
        return "\n".join(lines)


def release_count_of_counts(
    con: duckdb.DuckDBPyConnection,
    table: str | duckdb.DuckDBPyRelation,
    /,
    *,
    group: str,
    hierarchy: Sequence[str],
    groups: str | duckdb.DuckDBPyRelation,
    epsilon: float,
    max_size: int | None = None,
    groups_column: str | None = None,
    min_size: int = 1,
    method: str = "cumulative",
    consistency: str = "topdown",
    merge: str = "weighted",
    split: Sequence[float] | None = None,
    max_size_share: float = DEFAULT_MAX_SIZE_SHARE,
    output: str | None = None,
    overwrite: bool = False,
    levels_view: bool = True,
    seed: int | None = None,
    budget_override: bool = False,
    chunk: int = DEFAULT_CHUNK,
    progress: Callable[[CocLevelStats], None] | None = None,
) -> CountOfCountsRelease:
    """Release private hierarchical count-of-counts histograms (Kuo et al., VLDB 2018).

    Reads ``table`` (one row per person: a group id and the group's region columns), counts
    the persons of every group and, for every region of every level and every size, the number
    of groups of that size, all in DuckDB; estimates every region's histogram under discrete
    Laplace noise; makes them consistent top-down; writes the leaf rows and a ledger row
    atomically. The input is never modified.

    Args:
        con: an open DuckDB connection (read-write).
        table: the persons table or view (or a relation).
        group: the column identifying a person's group (household id).
        hierarchy: the region columns, coarse to fine (``["state", "county"]``); the root
            (the whole input) is a level too.
        groups: the PUBLIC groups table (name or relation): every leaf region (all hierarchy
            columns) once, with its number of groups. It is the hierarchy's public domain.
        epsilon: the budget (pure epsilon-DP; ``float("inf")`` = no noise, exact).
        max_size: the public largest group size K (larger groups count as size K); None
            spends ``max_size_share`` of epsilon on estimating it (noisy maximum + 5 standard
            deviations, the paper's Section 4.3).
        groups_column: the column of ``groups`` holding the number of groups (default: its one
            column that is not a hierarchy column).
        min_size: the smallest group size: 1 (default: every listed group holds someone) or 0
            (groups may be empty; the listed groups the input does not hold count as size 0).
        method: the per-region estimator: ``"cumulative"`` (default), ``"unattributed"`` or
            ``"naive"`` (a baseline, far worse).
        consistency: ``"topdown"`` (default: every level estimated, matched and merged) or
            ``"leaves"`` (the baseline: the leaves only, summed up).
        merge: ``"weighted"`` (inverse-variance, default) or ``"average"`` (naive).
        split: weights of epsilon per estimated level (uniform by default).
        max_size_share: share of epsilon for estimating ``max_size`` when it is None.
        output: output table (default ``<table>_count_of_counts``); ``overwrite=True``
            replaces it.
        levels_view: also create the view ``<output>_levels`` with every level.
        seed: TESTS AND BENCHMARKS ONLY: reproducible noise; the release is recorded as not
            private.
        budget_override: release even if it exceeds the budget stored for the input.
        chunk: noisy entries held in memory at a time (the memory bound of the estimators).
        progress: called with each level's statistics as it completes.

    Returns:
        A :class:`CountOfCountsRelease`.

    Example:
        >>> import duckdb, inftda_sql
        >>> con = duckdb.connect()
        >>> _ = con.execute("CREATE TABLE hh (state VARCHAR, county VARCHAR, households INT)")
        >>> _ = con.execute("INSERT INTO hh VALUES ('A', 'a1', 2), ('A', 'a2', 1)")
        >>> _ = con.execute('''CREATE TABLE persons AS SELECT * FROM (VALUES
        ...     (1, 'A', 'a1'), (1, 'A', 'a1'), (2, 'A', 'a1'), (3, 'A', 'a2'))
        ...     t(household_id, state, county)''')
        >>> r = inftda_sql.release_count_of_counts(con, "persons", group="household_id",
        ...     hierarchy=["state", "county"], groups="hh", max_size=10, epsilon=float("inf"))
        >>> con.execute("SELECT * FROM persons_count_of_counts").fetchall()
        [('A', 'a1', 1, 1), ('A', 'a1', 2, 1), ('A', 'a2', 1, 1)]
    """
    t_start = time.perf_counter()
    request = CountOfCountsRequest.from_args(
        table,
        group=group,
        hierarchy=hierarchy,
        groups=groups,
        epsilon=epsilon,
        max_size=max_size,
        groups_column=groups_column,
        min_size=min_size,
        method=method,
        consistency=consistency,
        merge=merge,
        split=split,
        max_size_share=max_size_share,
        output=output,
        overwrite=overwrite,
        levels_view=levels_view,
        seed=seed,
        budget_override=budget_override,
        chunk=chunk,
    )
    acct, source, min_size = request.accounting, request.source, request.min_size
    max_size = request.max_size
    stages = Stages()
    with CocEngine(con, request) as engine:
        engine.prepare()
        budget_note = engine.check_budget(request.budget, override=request.budget_override)
        with stages("domain"):
            engine.resolve()
            engine.domain()
        with stages("scan"):
            levels, largest = engine.scan(max_size=max_size)
        with stages("noise"):
            estimated = max_size is None
            if max_size is None:
                max_size = _estimate_max_size(largest, acct, min_size, source)
                levels = [truncate_sizes(lv, max_size) for lv in levels]
            result = count_of_counts(
                levels,
                acct,
                max_size=max_size,
                min_size=min_size,
                consistency=request.consistency,
                merge=request.merge,
                source=source,
                chunk=request.chunk,
                progress=progress,
            )
        non_private = request.non_private_reasons(budget_note)
        params = {
            "method": request.method,
            "consistency": request.consistency,
            "merge": request.merge,
            "group": request.group,
            "groups_table": engine.groups_description,
            "max_size": max_size,
            "max_size_estimated": estimated,
            "min_size": min_size,
        }
        timings = stages.done(time.perf_counter() - t_start)
        record = _record(request, acct, params, result.levels, non_private, timings)
        with stages("write"):
            record = engine.write(
                result.leaves, record, budget=request.budget, override=request.budget_override
            )
    return CountOfCountsRelease(
        output=request.output,
        levels_view=request.levels_view,
        release_id=record.release_id,
        input=request.input_description,
        hierarchy=request.chain,
        method=request.method,
        consistency=request.consistency,
        merge=request.merge,
        accounting=acct,
        max_size=max_size,
        max_size_estimated=estimated,
        levels=result.levels,
        timings=stages.done(time.perf_counter() - t_start),
        non_private=tuple(record.non_private),
    )


def _estimate_max_size(
    largest: int, acct: CountOfCountsAccounting, min_size: int, source: RandomSource
) -> int:
    """The paper's private largest size: the true largest plus discrete Laplace noise (scale
    from the accounting), plus 5 standard deviations, at least ``max(min_size, 1)``."""
    scale = acct.max_size_scale
    noisy = largest + int(draw_discrete_laplace(scale, 1, source=source)[0]) if scale else largest
    std = math.sqrt(2.0) * scale
    return max(min_size, 1, noisy + math.ceil(MAX_SIZE_STDS * std))


def _record(
    request: CountOfCountsRequest,
    acct: CountOfCountsAccounting,
    params: dict[str, Any],
    levels: Sequence[CocLevelStats],
    non_private: list[str],
    timings: dict[str, float],
) -> ReleaseRecord:
    """The ledger row (its id is assigned when it is written). Timings go to the diagnostics,
    which :func:`~inftda_sql.publish` never copies."""
    public_levels = [{k: v for k, v in lv.as_dict().items() if k != "seconds"} for lv in levels]
    variances = acct.level_variance
    names = list(acct.level_names)
    sens = [acct.sensitivity] * len(names)
    eps = list(acct.level_epsilon)
    sigma = [math.sqrt(v) for v in variances]
    if acct.max_size_epsilon:
        names.insert(0, "max_size")
        sens.insert(0, 1.0)
        eps.insert(0, acct.max_size_epsilon)
        sigma.insert(0, math.sqrt(2.0) * acct.max_size_scale)
    return ledger_row(
        input_table=request.input_description,
        output_table=request.output,
        hierarchy={"chains": [list(request.chain)], "tree": "chain"},
        tree="chain",
        domain_source=str(params["groups_table"]),
        mechanism=f"{KIND}:{params['method']}",
        guarantee="pureDP",
        privacy="unbounded",
        rho=acct.rho,
        epsilon=acct.epsilon,
        delta=0.0,
        conversion="none",
        budget_given="epsilon",
        contribution=1,
        distinct_records=False,
        privacy_unit=None,  # a person is one row of the input
        levels=LevelCosts(names, sens, [e * e / 2.0 for e in eps], sigma),
        seeded="seeded noise (tests and benchmarks only)" in non_private,
        non_private=non_private,
        details={
            "kind": KIND,
            "levels": public_levels,
            "levels_view": request.levels_view,
            "mechanism_params": params,
            "accounting": acct.as_dict(),
        },
        diagnostics={
            "diagnostics (not private, for the data owner only)": {
                "seconds": {k: round(v, 4) for k, v in timings.items()}
            }
        },
    )
