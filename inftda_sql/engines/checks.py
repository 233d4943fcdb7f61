"""Checks every engine makes alike, on what it fetched (Arrow), counted or resolved in its
catalog: engine-neutral, so an error reads the same on DuckDB and on Spark.

The checks on names take what each engine resolved: the base tables (and files) a source reads,
as the engine's catalog spells them, and the identity of an output, so the rule is written once
and the engines only say what their catalog holds."""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Iterable, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from .._errors import Arg, DomainError, InputDataError, OutputExistsError, Part, SpecError
from ..core.intopt import VALUE_LIMIT
from ..core.names import key_identity

__all__ = [
    "COUNT_LIMIT",
    "COUNT_WORDS",
    "check_domain_files_known",
    "check_domain_not_input",
    "check_domain_paths",
    "check_domain_sources_known",
    "check_not_aggregated",
    "check_not_read",
    "check_not_reserved",
    "check_output_free",
    "empty_domain",
    "looks_like_count",
    "reversal_hint",
    "too_large",
]

#: The largest count a release handles: IntOpt's exact 64-bit arithmetic takes values and
#: totals up to 2**60 (about 1.15e18).
COUNT_LIMIT = VALUE_LIMIT


def too_large(count: str | None) -> str:
    """What to say when the counts (or the records) add up to more than :data:`COUNT_LIMIT`."""
    what = f"the counts of {count!r}" if count else "the number of records"
    return (
        f"{what} must add up to at most 2**60 (about 1.15e18) for exact integer arithmetic; "
        "count in larger units (e.g. thousands) or split the input"
    )


def empty_domain(role: str, chain: Sequence[str]) -> DomainError:
    """The error for a public domain (``role``) that lists no path of ``chain``."""
    return DomainError(f"the {role} is empty; it must list every valid path of {', '.join(chain)}")


def check_domain_paths(paths: pa.Table, role: str, chain: Sequence[str]) -> None:
    """A domain's fetched paths (one column per chain level) must list at least one path, and
    every path must be complete: no NULL, no NaN (which equals no value)."""
    if paths.num_rows == 0:
        raise empty_domain(role, chain)
    for col, values in zip(chain, paths.columns, strict=True):
        if values.null_count:
            raise DomainError(
                f"the {role} has {values.null_count} row(s) with NULL in {col!r}; every listed "
                "path must be complete"
            )
        if pa.types.is_floating(values.type):
            n_nan = pc.sum(pc.is_nan(values)).as_py() or 0
            if n_nan:
                raise DomainError(
                    f"the {role} has {n_nan} row(s) with NaN in {col!r}; NaN is not a category "
                    "(it equals no value, so it cannot be counted once): drop or label those rows"
                )


#: The words that make a numeric column look like a number of records per row (a count of a
#: pre-aggregated table): a column whose name is one of them, or has one as a word of its name
#: (``n_people``, ``trips_total``, ``FlowCount``), case-insensitive. Words, not any column: a
#: microdata table often has numeric columns (``age``, ``income``, ``year``, ids) that are
#: attributes of its record, and refusing those would break ordinary inputs.
COUNT_WORDS = frozenset({
    "count", "counts", "cnt", "n", "nb", "num", "number", "freq", "frequency", "frequencies",
    "weight", "weights", "wt", "total", "totals", "sum", "value", "obs", "observations",
    "records", "persons", "people", "population", "pop", "individuals", "households",
    "residents", "workers", "employees", "commuters", "trips", "flows", "flow", "journeys",
    "passengers", "riders", "visits", "visitors", "pickups", "members", "size",
})  # fmt: skip


def _words(name: str) -> list[str]:
    """The words of a column name: split at non-letters and at camelCase humps, lower case."""
    spaced = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name)
    return [w.lower() for w in re.split(r"[^A-Za-z]+", spaced) if w]


def looks_like_count(name: str) -> bool:
    """Whether a column name says it holds a number of records (see :data:`COUNT_WORDS`).

    Example:
        >>> [looks_like_count(c) for c in ("count", "N", "n_people", "TripsTotal", "age")]
        [True, True, True, True, False]
    """
    return any(w in COUNT_WORDS for w in _words(name))


def check_not_aggregated(
    numeric: Iterable[tuple[str, str]],
    used: Iterable[str],
    *,
    count: str | None,
    microdata: bool,
    description: str,
    fix: Sequence[Part] | None = None,
) -> None:
    """Refuse an input that looks pre-aggregated when no count column was given: a numeric
    column (``numeric``: its stored name and type) that is not one the release uses
    (``used``: hierarchy or feature columns, the privacy unit) and whose name says it holds a
    number of records (:func:`looks_like_count`). Counted one row per record, such an input
    gives the number of rows instead of the records they stand for, silently, and the budget is
    spent on it. The schema alone decides (names and types; no value is read), before any
    noise. ``microdata=True`` says every row is one record; ``fix`` replaces the default advice
    (pass ``count=``) where a front end has no count column."""
    if count is not None or microdata:
        return
    taken = {u.lower() for u in used}
    found = [(n, t) for n, t in numeric if n.lower() not in taken and looks_like_count(n)]
    if not found:
        return
    name, kind = found[0]
    more = f" (and {', '.join(repr(n) for n, _ in found[1:])})" if len(found) > 1 else ""
    advice: Sequence[Part] = (
        fix
        if fix is not None
        else ("If each row stands for that many records pass ", Arg("count", name), "; ")
    )
    raise InputDataError(
        f"{description} has the numeric column {name!r} ({kind}){more}, named like a number of "
        "records per row, but no count column was given: every row would count as ONE record, "
        f"not as {name!r} records, and the budget would be spent on that. ",
        *advice,
        "if every row is one record (the column is an attribute) pass ",
        Arg("microdata", True),
        param="count",
    )


def _fine_to_coarse(paths: pa.Table) -> bool:
    """Whether a chain's paths look listed fine to coarse: the first column has more distinct
    values than the last (a parent level has fewer nodes than its children)."""
    if paths.num_columns < 2:
        return False
    n_first = pc.count_distinct(paths.column(0)).as_py()
    n_last = pc.count_distinct(paths.column(paths.num_columns - 1)).as_py()
    return bool(n_first > n_last)


def reversal_hint(
    paths: pa.Table,
    index: int,
    hierarchy: Sequence[Sequence[str]],
    read: Callable[[int], pa.Table | None] = lambda _: None,
) -> tuple[Part, ...]:
    """The fix for chain ``index`` of ``hierarchy`` whose domain (``paths``, one column per
    level) is not nested because it was given fine to coarse, or nothing. The hierarchy it
    suggests reverses every chain that looks fine to coarse, not only this one: ``read(j)``
    gives chain ``j``'s domain paths (None when it cannot say). Counts of distinct values are
    not printed (the domain may come from the data)."""
    chain = hierarchy[index]
    if not _fine_to_coarse(paths):
        return ()
    fixed = [list(c) for c in hierarchy]
    for j, other in enumerate(hierarchy):
        if j == index:
            fixed[j] = list(reversed(chain))
        elif len(other) > 1:
            other_paths = read(j)
            if other_paths is not None and _fine_to_coarse(other_paths):
                fixed[j] = list(reversed(other))
    return (
        f"the columns look listed fine to coarse ({chain[0]!r} has more distinct values than "
        f"{chain[-1]!r}); reverse them, coarse to fine: ",
        Arg("hierarchy", fixed if len(fixed) > 1 else fixed[0]),
    )


def check_domain_not_input(
    input_reads: Iterable[str], domains: Iterable[tuple[str, str, Sequence[str]]]
) -> None:
    """Refuse a domain that reads what the input reads (a base table or a file, any spelling
    case, a file by another of its names: :func:`~inftda_sql.core.names.key_identity`): its
    categories would come from the private data while the release is recorded as private.
    ``domains`` are (role, description, what it reads) triples.

    Example:
        >>> check_domain_not_input(["main.trips"], [("domain", "view 'g'", ["main.geo"])])
        >>> try:
        ...     check_domain_not_input(["main.trips"], [("domain", "view 'g'", ["MAIN.TRIPS"])])
        ... except DomainError as exc:
        ...     print(str(exc).split(":")[0])
        the domain (view 'g') reads MAIN.TRIPS, which the input reads too
    """
    private = {key_identity(k): k for k in input_reads}
    for role, description, reads in domains:
        named = ((k, private.get(key_identity(k))) for k in reads)
        shared = next(((k, theirs) for k, theirs in named if theirs is not None), None)
        if shared is not None:
            mine, theirs = shared
            also = "" if mine.lower() == theirs.lower() else f" (as {theirs}: the same file)"
            raise DomainError(
                f"the {role} ({description}) reads {mine}, which the input reads too{also}: its "
                "categories would come from the private data. Pass the PUBLIC geography, or ",
                Arg("domain_from_data", True),
                " (recorded as not private)",
                param="domain",
            )


def check_domain_files_known(
    input_files: tuple[bool, bool], domains: Iterable[tuple[str, str, bool, bool]]
) -> None:
    """Refuse a domain when the engine cannot tell whether it reads the input's files: one
    side reads files, the other reads files it could not list (a view reading a file by a
    computed path, or through a table function the engine does not know). ``input_files`` and
    each domain's last two fields: (reads files, the list of them is complete); ``domains``
    are (role, description, reads files, complete).

    Example:
        >>> check_domain_files_known((True, True), [("domain", "view 'g'", True, True)])
        >>> try:
        ...     check_domain_files_known((True, True), [("domain", "view 'g'", True, False)])
        ... except DomainError as exc:
        ...     print(str(exc).split(" (a computed")[0])
        the domain (view 'g') reads files it does not name
    """
    reads, complete = input_files
    for role, description, dom_reads, dom_complete in domains:
        if (dom_reads and not dom_complete and reads) or (reads and not complete and dom_reads):
            who = f"the {role} ({description})" if not dom_complete else "the input"
            other = "the input" if not dom_complete else f"the {role} ({description})"
            raise DomainError(
                f"{who} reads files it does not name (a computed path or a table function), "
                f"and {other} reads files; which they are cannot be told, so the domain might "
                "be the private data. Name the domain's files by their paths (checked against "
                "the input's), load the domain into a table, or pass ",
                Arg("domain_from_data", True),
                " (recorded as not private)",
                param="domain",
            )


def check_domain_sources_known(
    input_kinds: tuple[Iterable[str], Iterable[str]],
    domains: Iterable[tuple[str, str, Iterable[str], Iterable[str]]],
) -> None:
    """Refuse a domain when the engine cannot tell whether it reads the input's data: it reads
    a kind of source (a JDBC database, a data source the engine does not describe) that the
    input reads too, and on one side that source has no identity (a query, an unknown kind of
    relation). ``input_kinds`` and each domain's last two fields: (the kinds of source read,
    the kinds read without an identity); ``domains`` are (role, description, kinds,
    unidentified kinds). Sources of different kinds never share data: those pass.

    Example:
        >>> jdbc = "the JDBC database jdbc:derby:memory:db"
        >>> check_domain_sources_known(([jdbc], []), [("domain", "a frame", ["Foo"], ["Foo"])])
        >>> try:
        ...     check_domain_sources_known(([jdbc], []), [("domain", "a frame", [jdbc], [jdbc])])
        ... except DomainError as exc:
        ...     print(str(exc).split(", and what")[0])
        the domain (a frame) and the input both read the JDBC database jdbc:derby:memory:db
    """
    kinds, unknown = ({k.lower(): k for k in side} for side in input_kinds)
    for role, description, dom_kinds, dom_unknown in domains:
        mine = {k.lower(): k for k in dom_kinds}
        shared = sorted({k.lower() for k in dom_unknown if k.lower() in kinds})
        shared += sorted(k for k in unknown if k in mine)
        if shared:
            which = mine.get(shared[0], kinds.get(shared[0], shared[0]))
            raise DomainError(
                f"the {role} ({description}) and the input both read {which}, and what one of "
                "them reads there has no identity the engine can compare (a query, or a kind "
                "of source it does not describe), so the domain might be the private data. "
                "Load the domain into a catalog table or a file, or pass ",
                Arg("domain_from_data", True),
                " (recorded as not private)",
                param="domain",
            )


def check_not_reserved(spelling: str, reserved: bool, tables: Sequence[str]) -> None:
    """Refuse an output named as a table the package keeps for its own bookkeeping (``tables``)
    or as its temporary objects (``reserved`` says whether ``spelling`` is either)."""
    if reserved:
        raise SpecError(
            f"{spelling!r} is a name inftda_sql keeps for its own bookkeeping "
            f"({', '.join(tables)} and names starting with __inftda); choose another ",
            Arg("output"),
            param="output",
        )


def check_not_read(
    spelling: str, target: Hashable, protected: Iterable[tuple[Hashable, str, str]]
) -> None:
    """Refuse an output (``target``: its identity in the engine's catalog) that is something a
    release reads: ``protected`` holds (identity, how it is shown, its role) of the input, the
    domains and the tables and views they read."""
    for ref, shown, role in protected:
        if ref == target:
            raise SpecError(
                f"{spelling!r} is {role} ({shown}); writing the release there would destroy "
                "what it reads: choose another ",
                Arg("output"),
                param="output",
            )


def check_output_free(spelling: str, exists: bool, overwrite: bool) -> None:
    """An output that exists is replaced only with ``overwrite=True``."""
    if exists and not overwrite:
        raise OutputExistsError(
            f"{spelling!r} already exists; pass ",
            Arg("overwrite", True),
            " to replace it or choose another ",
            Arg("output"),
            " name",
            param="output",
        )
