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

import datetime as dt
import json
import math
import numbers
import os
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb
import numpy as np

from ._errors import Arg, InftdaWarning, SpecError
from ._release import _Stages
from ._tables import text_table
from ._version import __version__
from .core.accounting import (
    COC_METHODS,
    Budget,
    CountOfCountsAccounting,
    count_of_counts_accounting,
)
from .core.coc import (
    CONSISTENCY,
    DEFAULT_CHUNK,
    MERGES,
    CocLevelStats,
    count_of_counts,
)
from .core.coc_memory import check_memory, size_limit
from .core.noise import draw_discrete_laplace
from .core.rng import RandomSource, as_source
from .core.spec import parse_hierarchy
from .engines.duckdb.connection import require_open
from .engines.duckdb.count_of_counts import CocEngine, CocInputs, truncate_sizes
from .engines.duckdb.ledger import ReleaseRecord
from .mechanisms.base import available_memory

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


def _check_int(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise SpecError(f"{name} must be an integer >= {minimum}, got {value!r}", param=name)
    return int(value)


def _choice(name: str, value: object, choices: Sequence[str]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise SpecError(f"{name} must be one of {', '.join(choices)}; got {value!r}", param=name)
    return value


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
    require_open(con, "release_count_of_counts")
    t_start = time.perf_counter()
    spec = parse_hierarchy(hierarchy)
    if len(spec.chains) != 1:
        raise SpecError(
            "a count-of-counts release takes one chain of region columns, coarse to fine; got ",
            Arg("hierarchy", [list(c) for c in spec.chains]),
            param="hierarchy",
        )
    chain = spec.chains[0]
    if not isinstance(group, str) or not group:
        raise SpecError(f"group must be a column name, got {group!r}", param="group")
    method = _choice("method", method, COC_METHODS)
    consistency = _choice("consistency", consistency, CONSISTENCY)
    merge = _choice("merge", merge, MERGES)
    min_size = _check_int("min_size", min_size, 0)
    if min_size > 1:
        raise SpecError(f"min_size must be 0 or 1, got {min_size}", param="min_size")
    if max_size is not None:
        max_size = _check_int("max_size", max_size, max(min_size, 1))
    chunk = _check_int("chunk", chunk, 1)
    level_names = ["root", *chain] if consistency == "topdown" else [chain[-1]]
    acct = count_of_counts_accounting(
        epsilon,
        level_names,
        method=method,
        split=split,
        max_size_share=max_size_share if max_size is None else 0.0,
    )
    source = as_source(seed)
    if output is None:
        if not isinstance(table, str):
            raise SpecError(
                Arg("output"), " is required when the input is a relation", param="output"
            )
        output = f"{table}_count_of_counts"
    if not isinstance(output, str) or not output or len(output.split(".")) > 2:
        raise SpecError(f"output must be a table name, got {output!r}", param="output")
    if isinstance(table, str) and output.lower() == table.lower():
        raise SpecError(
            f"output {output!r} is the input table; choose another name", param="output"
        )
    inputs = CocInputs(
        table=table,
        group=group,
        chain=chain,
        groups_table=groups,
        groups_column=groups_column,
        min_size=min_size,
        output=output,
        levels_view=f"{output}_levels" if levels_view else None,
        overwrite=bool(overwrite),
    )
    stages = _Stages()
    requested = Budget.from_args(rho=acct.rho)  # what it spends, for the stored budgets
    with CocEngine(con, inputs) as engine:
        engine.prepare()
        budget_note = engine.check_budget(requested, override=bool(budget_override))
        with stages("domain"):
            engine.resolve()
            tree, per_leaf = engine.domain()
        memory = _memory()
        check_memory(
            method,
            max(tree.sizes),
            int(per_leaf.sum()),
            max_size=max_size,
            min_size=min_size,
            chunk=chunk,
            available=memory,
        )
        with stages("scan"):
            levels, largest = engine.scan(max_size=max_size)
        with stages("noise"):
            estimated = max_size is None
            if max_size is None:
                max_size = _estimate_max_size(largest, acct, min_size, source)
                limit = None if memory is None else size_limit(method, min_size, memory)
                if limit is not None and max_size > limit:  # post-processing of a noisy value
                    max_size = limit
                    warnings.warn(
                        InftdaWarning(
                            f"the private estimate of max_size was clipped to {limit:,}, the "
                            f"largest the {method!r} estimator fits in memory; pass ",
                            Arg("max_size"),
                            " to choose it",
                            param="max_size",
                        ),
                        stacklevel=2,
                    )
                levels = [truncate_sizes(lv, max_size) for lv in levels]
            result = count_of_counts(
                levels,
                acct,
                max_size=max_size,
                min_size=min_size,
                consistency=consistency,
                merge=merge,
                source=source,
                chunk=chunk,
                progress=progress,
            )
        non_private = []
        if acct.non_private:
            non_private.append("infinite budget (no noise)")
        if source.seeded:
            non_private.append("seeded noise (tests and benchmarks only)")
        if budget_note:
            non_private.append(budget_note)
        params = {
            "method": method,
            "consistency": consistency,
            "merge": merge,
            "group": group,
            "groups_table": engine.groups_description,
            "max_size": max_size,
            "max_size_estimated": estimated,
            "min_size": min_size,
        }
        timings = stages.done(time.perf_counter() - t_start)
        record = _record(
            inputs, input_description(table), acct, params, result.levels, non_private, timings
        )
        with stages("write"):
            record = engine.write(
                result.leaves, record, budget=requested, override=bool(budget_override)
            )
    return CountOfCountsRelease(
        output=output,
        levels_view=inputs.levels_view,
        release_id=record.release_id,
        input=input_description(table),
        hierarchy=chain,
        method=method,
        consistency=consistency,
        merge=merge,
        accounting=acct,
        max_size=max_size,
        max_size_estimated=estimated,
        levels=result.levels,
        timings=stages.done(time.perf_counter() - t_start),
        non_private=tuple(record.non_private),
    )


def input_description(table: object) -> str:
    return table if isinstance(table, str) else "<relation>"


def _memory() -> int | None:
    """Bytes of memory available now, or the machine's physical memory where that is unknown."""
    available = available_memory()
    if available is None:
        try:
            available = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (AttributeError, ValueError, OSError):
            return None
    return available


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
    inputs: CocInputs,
    input_table: str,
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
    return ReleaseRecord(
        release_id=0,
        created_at=dt.datetime.now(dt.UTC).replace(tzinfo=None),
        input_table=input_table,
        output_table=inputs.output,
        hierarchy=json.dumps({"chains": [list(inputs.chain)], "tree": "chain"}),
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
        level_names=names,
        level_sensitivity=sens,
        level_rho=[e * e / 2.0 for e in eps],
        level_sigma=sigma,
        seeded="seeded noise (tests and benchmarks only)" in non_private,
        non_private=non_private,
        library_version=__version__,
        details=json.dumps(
            {
                "kind": KIND,
                "levels": public_levels,
                "levels_view": inputs.levels_view,
                "mechanism_params": params,
                "accounting": acct.as_dict(),
                "diagnostics (not private, for the data owner only)": {
                    "seconds": {k: round(v, 4) for k, v in timings.items()}
                },
            },
            allow_nan=False,
            default=_json_default,
        ),
    )


def _json_default(value: object) -> object:
    if isinstance(value, np.integer):
        return int(value)
    raise TypeError(f"not JSON serialisable: {value!r}")
