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

import time
from collections.abc import Callable, Sequence

import duckdb

from ._coc_request import DEFAULT_MAX_SIZE_SHARE, CountOfCountsRequest
from ._pipeline import run_release
from ._result import CountOfCountsRelease
from .core.coc import DEFAULT_CHUNK, CocLevelStats
from .engines.duckdb.connection import require_open
from .engines.duckdb.engine import DuckDBEngine
from .engines.duckdb.write import DEFAULT_TIMEOUT, check_timeout, write_timeout

__all__ = ["KIND", "CountOfCountsRelease", "release_count_of_counts"]

#: the ``kind`` a count-of-counts release records in its ledger row's details
KIND = CountOfCountsRequest.kind


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
    timeout: float | None = DEFAULT_TIMEOUT,
    microdata: bool = False,
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
        timeout: seconds to keep retrying the write when other writers change the database at
            the same moment (as :func:`~inftda_sql.release`'s; None or 0: fail at once).
        microdata: True says every row is one person although the table has a numeric column
            named like a count (``size``, ``persons``, ``n``...; refused otherwise, before any
            noise, as it looks like a table of groups with their sizes).

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
    timeout = check_timeout(timeout)
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
        microdata=microdata,
    )
    with write_timeout(timeout), DuckDBEngine(con, request) as engine:
        return run_release(engine, request, progress, t_start)
