"""Which columns of a public domain make each chain: one geography for any number of chains.

An O/D release has two chains (``o_region, o_lad, o_msoa`` and ``d_region, d_lad, d_msoa``) and
usually ONE geography table (``region, lad, msoa``, with names). :class:`Domain` wraps such a
table (a name, a file, a relation or declared values) with an optional explicit mapping from
chain columns to its columns; :func:`match_columns` decides, for one chain, which column of the
domain each chain column reads:

1. the explicit mapping, for the chain columns it names;
2. the others: the columns of the same name, when the domain has them all;
3. else the *prefix rule*: one prefix ``p`` such that every (other) chain column is ``p``
   followed by a column of the domain (``o_`` + ``region``, ``o_`` + ``lad``, ``o_`` + ``msoa``).

Anything else is an error that lists the domain's columns and spells the mapping to pass. The
engine then reads the chain's paths from a projection of the domain (no view is created);
nothing here touches data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from .._errors import Arg, DomainError, Part, Spelling

__all__ = ["Domain", "match_columns", "unwrap"]


@dataclass(frozen=True)
class Domain:
    """A public domain and, optionally, which of its columns each chain column reads.

    Args:
        source: the public categories: a table or view name, a parquet/CSV file path (or glob),
            a DuckDB relation, or declared values ``{column: [values]}``.
        columns: chain column -> domain column, for chains whose names differ from the
            domain's and follow no common prefix (see :func:`match_columns`). Case-insensitive,
            as DuckDB's column names are.

    Example:
        >>> geo = Domain("geo", columns={"home_region": "region", "home_city": "city"})
        >>> geo.column_for("HOME_CITY")
        'city'
    """

    source: object
    columns: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if isinstance(self.source, Domain):
            raise DomainError(
                "Domain(source=...) must be a table, file, relation or {column: [values]}, "
                f"not another Domain: {self.source!r}",
                param="domain",
            )
        if self.source is None:
            raise DomainError(
                "Domain(source=...) needs the public domain (a table, file, relation or "
                "{column: [values]}), got None",
                param="domain",
            )
        if not isinstance(self.columns, Mapping):
            raise DomainError(
                "Domain columns must be a mapping {chain column: domain column}, got "
                f"{self.columns!r}",
                param="domain",
            )
        folded: dict[str, str] = {}
        for chain_col, domain_col in self.columns.items():
            if not (isinstance(chain_col, str) and chain_col and isinstance(domain_col, str)):
                raise DomainError(
                    "Domain columns must map chain columns to domain column names (non-empty "
                    f"strings), got {chain_col!r}: {domain_col!r}",
                    param="domain",
                )
            if not domain_col:
                raise DomainError(
                    "Domain columns must map chain columns to domain column names (non-empty "
                    f"strings), got {chain_col!r}: {domain_col!r}",
                    param="domain",
                )
            if chain_col.lower() in folded:
                raise DomainError(
                    f"Domain columns names chain column {chain_col!r} twice (column names are "
                    "case-insensitive)",
                    param="domain",
                )
            folded[chain_col.lower()] = domain_col
        object.__setattr__(self, "columns", dict(self.columns))

    def column_for(self, chain_column: str) -> str | None:
        """The domain column the mapping gives ``chain_column``, or None."""
        for key, value in self.columns.items():
            if key.lower() == chain_column.lower():
                return value
        return None


def unwrap(domain: object) -> tuple[object, Mapping[str, str]]:
    """A domain argument as (source, explicit mapping); the mapping is empty unless ``domain``
    is a :class:`Domain`."""
    if isinstance(domain, Domain):
        return domain.source, domain.columns
    return domain, {}


def _mapping_hint(chain: Sequence[str], available: Sequence[str]) -> Spelling:
    """How to spell an explicit mapping for ``chain``: a domain column that ends the chain
    column's name where there is one, ``...`` to fill in elsewhere."""
    example = {}
    for c in chain:
        ends = [a for a in available if c.lower().endswith(a.lower())]
        example[c] = max(ends, key=len) if ends else "..."
    flag = ",".join(f"{c}={v}" for c, v in example.items())
    return Spelling(
        python=("Domain(..., columns=", repr(example), ")"),
        cli=(Arg("domain_columns", flag),),
    )


def match_columns(
    chain: Sequence[str],
    available: Sequence[str],
    explicit: Mapping[str, str] | None = None,
    *,
    role: str = "domain",
    shared: int = 1,
) -> dict[str, str]:
    """Which column of a domain each column of ``chain`` reads: chain column -> domain column
    (as the domain spells it). The columns ``explicit`` names read what it says; the others
    their namesakes when the domain has them all, else the columns one common prefix leads to.

    ``available`` are the domain's columns; ``explicit`` the mapping of a :class:`Domain`;
    ``shared`` how many chains read this one domain (the error then also offers one per chain).

    Example:
        >>> geo = ["msoa", "msoa_name", "lad", "region"]
        >>> match_columns(["o_region", "o_lad", "o_msoa"], geo)
        {'o_region': 'region', 'o_lad': 'lad', 'o_msoa': 'msoa'}
        >>> match_columns(["region", "lad"], geo)
        {'region': 'region', 'lad': 'lad'}
        >>> match_columns(["home", "work"], ["lad"], {"home": "LAD", "work": "lad"})
        {'home': 'lad', 'work': 'lad'}
        >>> it = ["region", "municipality"]
        >>> match_columns(["o_region", "o_mun"], it, {"o_mun": "municipality"})
        {'o_region': 'region', 'o_mun': 'municipality'}
    """
    by_lower = {c.lower(): c for c in available}
    folded = {k.lower(): v for k, v in (explicit or {}).items()}
    fixed: dict[str, str] = {}
    for c in chain:
        target = folded.get(c.lower())
        if target is None:
            continue
        if target.lower() not in by_lower:
            raise DomainError(
                f"the column mapping of the {role} maps {c!r} to {target!r}, which is not a "
                f"column of it; available: {', '.join(available)}",
                param="domain",
            )
        fixed[c] = by_lower[target.lower()]
    rest = [c for c in chain if c not in fixed]
    found = _by_name_or_prefix(rest, by_lower)
    if found is not None:
        return {c: fixed[c] if c in fixed else found[c] for c in chain}
    candidates = _prefixes(rest, by_lower)
    unmatched = [
        c
        for c in rest
        if c.lower() not in by_lower and not any(c.lower().endswith(a) for a in by_lower)
    ] or [c for c in rest if c.lower() not in by_lower]
    why = (
        f"the prefixes {', '.join(repr(p) for p in candidates)} all fit"
        if candidates
        else f"no common prefix turns {', '.join(rest)} into its columns (as o_ does with "
        "o_region -> region)"
    )
    per_chain: tuple[Part, ...] = ()
    if shared > 1:
        per_chain = (
            "; or pass one domain per chain (",
            Spelling(
                python=f"domain=[...] with {shared} entries",
                cli=(Arg("domain"), f" {shared} times"),
            ),
            ")",
        )
    raise DomainError(
        f"the {role} has no columns for {', '.join(unmatched)}: its columns are "
        f"{', '.join(available)}, and {why}. Say which column each chain column reads: ",
        _mapping_hint(rest, available),
        *per_chain,
        param="domain",
    )


def _prefixes(columns: Sequence[str], by_lower: Mapping[str, str]) -> list[str]:
    """The prefixes (lower-case) that turn every one of ``columns`` into a domain column."""
    prefixes: set[str] | None = None
    for c in columns:
        found = {
            c.lower()[: len(c) - len(a)]
            for a in by_lower
            if len(c) > len(a) and c.lower().endswith(a)
        }
        prefixes = found if prefixes is None else prefixes & found
    return sorted(prefixes or ())


def _by_name_or_prefix(
    columns: Sequence[str], by_lower: Mapping[str, str]
) -> dict[str, str] | None:
    """``columns`` matched by name (all of them), else by the one common prefix; None when
    neither works."""
    if all(c.lower() in by_lower for c in columns):
        return {c: by_lower[c.lower()] for c in columns}
    candidates = _prefixes(columns, by_lower)
    if len(candidates) != 1:
        return None
    n = len(candidates[0])
    return {c: by_lower[c[n:].lower()] for c in columns}
