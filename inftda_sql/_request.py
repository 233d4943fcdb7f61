"""The release request: every argument of ``release()`` checked before any data is read.

:meth:`ReleaseRequest.from_args` validates the arguments that need no database (the hierarchy or
the features, the budget, the privacy model, the mechanism's requirements, the output's name,
the public domain's shape) and normalises them; the engine then resolves the names in its
catalog (:mod:`inftda_sql.engines`). A request holds no data and no connection.

What a release measures follows from the mechanism's kind: a hierarchy mechanism takes
``hierarchy=`` (and ``tree=``), a feature mechanism ``features=`` (and ``structure=``,
``weights=``); the other pair is refused with the fix.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ._errors import Arg, DomainError, InputDataError, InternalError, Part, SpecError, Spelling
from ._frames import FORMS, frame_kind, frame_label, require
from .core.accounting import Accounting, Budget, check_distinct, check_privacy
from .core.domains import Domain
from .core.features import FeatureSpec, parse_features
from .core.names import file_spelling, file_stem, split_name, sql_spelling_hint
from .core.rng import RandomSource, as_source
from .core.spec import TreeSpec, parse_hierarchy
from .core.tree import ChainTree
from .mechanisms import REGISTRY, FeatureMechanism, Mechanism, feature_mechanisms
from .mechanisms import get as get_mechanism
from .mechanisms.base import Guarantee

__all__ = [
    "CHECK_ANCESTORS",
    "ReleaseRequest",
    "check_choice",
    "check_int",
    "check_microdata",
    "check_not_sql",
    "normalise_domains",
]

#: the values of ``check_ancestors``: check the input's ancestor columns against the domain
#: on every release (default), once per input version as DuckDB's catalog sees it, or never
CHECK_ANCESTORS = ("full", "cached", "off")

NO_DOMAIN: tuple[Part, ...] = (
    "no domain given: the categories of every hierarchy column must come from a PUBLIC "
    "list (a geography table, declared categories), otherwise which cells exist leaks "
    "the private data. Pass ",
    Arg("domain", "geo"),
    " (a table with the hierarchy columns)",
    Spelling(python=(" or ", Arg("domain", {"sex": ["F", "M"]})), cli=()),  # no flag for it
    "; or opt in to ",
    Arg("domain_from_data", True),
    ", which takes them from the data and records the release as NOT private",
)


def _is_name(text: str) -> bool:
    try:
        return 1 <= len(split_name(text)) <= 3
    except ValueError:
        return False


def check_int(name: str, value: object, minimum: int) -> int:
    """``value`` as an int ``>= minimum``, or a SpecError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise SpecError(f"{name} must be an integer >= {minimum}, got {value!r}", param=name)
    return int(value)


def check_choice(name: str, value: object, choices: Sequence[str]) -> str:
    """``value`` if it is one of ``choices``, or a SpecError naming ``name`` and them."""
    if not isinstance(value, str) or value not in choices:
        raise SpecError(f"{name} must be one of {', '.join(choices)}; got {value!r}", param=name)
    return value


def check_microdata(microdata: object, count: object = None) -> bool:
    """``microdata`` must be a bool, and not True with a count column: one says every row is one
    record, the other that each row stands for ``count`` records."""
    if not isinstance(microdata, bool):
        raise SpecError(f"microdata must be True or False, got {microdata!r}", param="microdata")
    if microdata and count is not None:
        raise SpecError(
            Arg("count", count),
            " says each row stands for that many records, ",
            Arg("microdata", True),
            " that every row is one record: pass one of them",
            param="microdata",
        )
    return microdata


def normalise_domains(domain: object, spec: TreeSpec | FeatureSpec) -> list[object]:
    """One domain per chain: a list with one entry per chain, or ONE domain that serves every
    chain (the same object in every entry; each chain then reads the columns that match it,
    see :mod:`inftda_sql.core.domains`). The explicit column mapping of a :class:`Domain` may
    only name hierarchy columns. For features: one table of every leaf cell, or a list of
    tables whose product is the domain, their columns named as the features'.

    Example:
        >>> spec = parse_hierarchy([["o_region", "o_lad"], ["d_region", "d_lad"]])
        >>> normalise_domains("geo.parquet", spec)
        ['geo.parquet', 'geo.parquet']
    """
    if isinstance(spec, FeatureSpec):
        domains = list(domain) if isinstance(domain, (list, tuple)) else [domain]
        if not domains:
            raise DomainError(
                "domain is an empty list; pass a table of every leaf cell", param="domain"
            )
        for d in domains:
            if isinstance(d, Domain) and d.columns:
                raise DomainError(
                    "a Domain's column mapping serves hierarchy chains; for features the "
                    "domain's columns are named as the features' (rename them in a view or "
                    f"SELECT), got columns={dict(d.columns)!r}",
                    param="domain",
                )
        return domains
    n = len(spec.chains)
    if n == 1:
        domains = (
            list(domain) if isinstance(domain, (list, tuple)) and len(domain) == 1 else [domain]
        )
    elif isinstance(domain, (list, tuple)):
        if len(domain) != n:
            raise DomainError(
                f"the hierarchy has {n} chains, so ",
                Spelling(
                    python=f"domain must be one domain or a list of {n}",
                    cli=(Arg("domain"), f" must be given once or {n} times"),
                ),
                f" (one per chain), got {len(domain)}: {domain!r}",
                param="domain",
            )
        domains = list(domain)
    else:
        domains = [domain] * n
    columns = {c.lower() for c in spec.columns}
    for d in domains:
        if isinstance(d, Domain):
            unknown = [c for c in d.columns if c.lower() not in columns]
            if unknown:
                raise DomainError(
                    f"the Domain's column mapping names {', '.join(map(repr, unknown))}, not a "
                    f"hierarchy column; it maps chain columns ({', '.join(spec.columns)}) to "
                    "columns of the domain",
                    param="domain",
                )
    return domains


@dataclass(frozen=True)
class ReleaseRequest:
    """A checked ``release()`` call: what to read, how to measure it, where to write it.

    ``domains`` has one entry per chain (a name, relation or mapping) or, for features, one per
    table of a product domain; None when the categories are taken from the data
    (``domain_from_data``, not private). ``spec`` is a :class:`TreeSpec` for a hierarchy
    mechanism and a :class:`FeatureSpec` for a feature mechanism. The accounting is checked
    here (budget, split) but made by :meth:`account` once the public domain is coded: the
    levels it determines spend nothing.
    """

    table: object
    spec: TreeSpec | FeatureSpec
    domains: list[object] | None
    budget: Budget
    mechanism: Mechanism | FeatureMechanism
    split: tuple[float, ...] | dict[str, float] | None
    privacy: str
    privacy_unit: str | None
    contribution: int
    distinct: bool
    count: str | None
    output: str | None
    levels_view: str | None
    overwrite: bool
    budget_override: bool
    max_cells: int
    source: RandomSource
    return_as: str | None = None
    check_ancestors: str = "full"
    microdata: bool = False
    measurements: str | None = None  # <output>_measurements, when measurements=True

    @property
    def kind(self) -> str:
        """The release kind (:mod:`inftda_sql.kinds`) that runs this request: the mechanism's."""
        return self.mechanism.kind

    @property
    def tree(self) -> TreeSpec:
        """The hierarchy of a hierarchy release."""
        if not isinstance(self.spec, TreeSpec):
            raise InternalError("a hierarchy stage ran on a feature release")
        return self.spec

    @property
    def features(self) -> FeatureSpec:
        """The features of a feature release."""
        if not isinstance(self.spec, FeatureSpec):
            raise InternalError("a feature stage ran on a hierarchy release")
        return self.spec

    @property
    def measures_features(self) -> bool:
        """Whether this is a feature release (CBDP) rather than a hierarchy release."""
        return isinstance(self.spec, FeatureSpec)

    @property
    def guarantee(self) -> Guarantee:
        """The guarantee this release gives (for the ledger and stored budgets)."""
        return self.mechanism.guarantee_for(self.budget)

    @property
    def input_name(self) -> str | None:
        """The input's name (or file path) as given, or None for a relation or data frame."""
        path = file_spelling(self.table)
        if path is not None:
            return path
        return self.table if isinstance(self.table, str) else None

    @property
    def input_description(self) -> str:
        name = self.input_name
        if name is not None:
            return name
        kind = frame_kind(self.table)
        return "<relation>" if kind is None else f"<{frame_label(kind)}>"

    @property
    def output_description(self) -> str:
        """The output table's name, or what the ledger records for a release returned in memory
        only (``return_as=`` without ``output=``)."""
        if self.output is not None:
            return self.output
        return f"(not written: returned as {self.return_as})"

    @classmethod
    def from_args(
        cls,
        table: object,
        *,
        hierarchy: object,
        domain: object,
        tree: str | None,
        features: object = None,
        structure: object = None,
        weights: object = None,
        rho: float | None,
        epsilon: float | None,
        delta: float | None,
        conversion: str,
        privacy: str,
        privacy_unit: str | None,
        contribution: object,
        distinct: object,
        split: Sequence[float] | Mapping[str, float] | None,
        count: str | None,
        output: object,
        overwrite: bool,
        mechanism: object,
        seed: object,
        domain_from_data: bool,
        budget_override: bool,
        levels_view: bool,
        max_cells: object,
        return_as: object = None,
        check_ancestors: object = "full",
        microdata: object = False,
        measurements: object = False,
    ) -> ReleaseRequest:
        """Check every argument that needs no database, in the order a user reads them.

        What is measured comes first: ``features=`` for a feature mechanism, ``hierarchy=`` for
        the others (the mechanism is looked up quietly to know which; an unknown name is
        reported in its own turn, after the budget, whose kind it also decides: a pure epsilon
        is accepted by the mechanisms that add Laplace noise).
        """
        known = REGISTRY.get(mechanism) if isinstance(mechanism, str) else None
        spec: TreeSpec | FeatureSpec
        if isinstance(known, FeatureMechanism) or (known is None and features is not None):
            name = known.name if known else str(mechanism)
            spec = _feature_spec(name, features, hierarchy, tree, structure, weights)
        else:
            name = known.name if known else str(mechanism)
            spec = _tree_spec(name, hierarchy, tree, features, structure, weights)
        check_privacy(privacy)
        m = check_int("contribution", contribution, 1)
        is_distinct = check_distinct(distinct)
        budget = Budget.from_args(
            rho=rho,
            epsilon=epsilon,
            delta=delta,
            conversion=conversion,
            pure=known is not None and known.pure_budget,
        )
        mech = get_mechanism(mechanism)
        mech.check(budget)
        cells = check_int("max_cells", max_cells, 1)
        # every accounting error (a bad split, a bad budget) is raised here, before any data
        if isinstance(mech, FeatureMechanism):
            if not isinstance(spec, FeatureSpec):  # pragma: no cover - set above
                raise InternalError("a feature mechanism without features")
            mech.account(
                budget, spec, privacy=privacy, contribution=m, distinct=is_distinct, split=split
            )
        else:
            if not isinstance(spec, TreeSpec):  # pragma: no cover - set above
                raise InternalError("a hierarchy mechanism without a hierarchy")
            if isinstance(split, Mapping):
                raise SpecError("split by name is for features; pass one weight per level")
            mech.account(
                budget, spec, privacy=privacy, contribution=m, distinct=is_distinct, split=split
            )
        source = as_source(seed)
        if check_ancestors not in CHECK_ANCESTORS:
            raise SpecError(
                f"check_ancestors must be one of {', '.join(map(repr, CHECK_ANCESTORS))}, got "
                f"{check_ancestors!r}",
                param="check_ancestors",
            )
        check_microdata(microdata, count)
        if domain is None and not domain_from_data:
            raise DomainError(*NO_DOMAIN, param="domain")
        if domain is not None and domain_from_data:
            raise DomainError(
                "pass ",
                Arg("domain"),
                " or ",
                Arg("domain_from_data", True),
                ", not both",
                param="domain",
            )
        if return_as is not None and return_as not in FORMS:
            raise SpecError(
                f"return_as must be one of {', '.join(map(repr, FORMS))} or None, got "
                f"{return_as!r}",
                param="return_as",
            )
        if output is None and return_as is None:
            kind = frame_kind(table)
            if kind is not None:  # a data frame in, the same kind of data frame out
                return_as = kind
        # a feature release is returned by reading back the table it writes: it always has one
        if output is None and (return_as is None or isinstance(spec, FeatureSpec)):
            path = file_spelling(table)
            if path is not None:
                output = f"{file_stem(path)}_private"  # od.parquet -> od_private
            elif isinstance(table, str):
                check_not_sql(table)
                output = f"{table}_private"
            elif return_as is not None:
                raise SpecError(
                    "a feature release is returned by reading back the table it writes, so pass ",
                    Arg("output"),
                    f" (a table to write it to) with return_as={return_as!r}",
                    param="output",
                )
            else:
                raise SpecError(
                    "the input is a relation, so pass ",
                    Arg("output"),
                    " (a table to write the release to), or ",
                    Arg("return_as", "arrow"),
                    " (or 'pandas', 'polars') to get it back in memory",
                    param="output",
                )
        if return_as in ("pandas", "polars"):
            require(str(return_as))  # before any work
        if output is not None and (not isinstance(output, str) or not _is_name(output)):
            raise SpecError(
                f"output must be a table name (table, schema.table or database.schema.table), "
                f"got {output!r}",
                param="output",
            )
        return cls(
            table=table,
            spec=spec,
            domains=None if domain is None else normalise_domains(domain, spec),
            budget=budget,
            mechanism=mech,
            split=None
            if split is None
            else dict(split)
            if isinstance(split, Mapping)
            else tuple(split),
            privacy=privacy,
            privacy_unit=privacy_unit,
            contribution=m,
            distinct=is_distinct,
            count=count,
            output=output,
            levels_view=(
                f"{output}_{'features' if isinstance(spec, FeatureSpec) else 'levels'}"
                if levels_view and output is not None
                else None
            ),
            overwrite=bool(overwrite),
            budget_override=bool(budget_override),
            max_cells=cells,
            source=source,
            return_as=None if return_as is None else str(return_as),
            check_ancestors=str(check_ancestors),
            microdata=bool(microdata),
            measurements=_measurements_table(measurements, mech, output),
        )

    def account(self, chains: Sequence[ChainTree] | None = None) -> Accounting:
        """The release's accounting, given the public domain's ``chains`` for a hierarchy (the
        levels they determine spend nothing; see
        :meth:`~inftda_sql.mechanisms.Mechanism.account`); a feature release's needs none."""
        mech, spec = self.mechanism, self.spec
        if isinstance(mech, FeatureMechanism):
            if not isinstance(spec, FeatureSpec):  # pragma: no cover - checked by from_args
                raise InternalError("a feature mechanism without features")
            return mech.account(
                self.budget,
                spec,
                privacy=self.privacy,
                contribution=self.contribution,
                distinct=self.distinct,
                split=self.split,
            )
        if not isinstance(spec, TreeSpec) or isinstance(self.split, dict):  # pragma: no cover
            raise InternalError("a hierarchy mechanism without a hierarchy")
        return mech.account(
            self.budget,
            spec,
            privacy=self.privacy,
            contribution=self.contribution,
            distinct=self.distinct,
            split=self.split,
            chains=chains,
        )

    def non_private_reasons(self, budget_note: str | None) -> list[str]:
        """Why a release of this request is not private (empty when it is)."""
        reasons = []
        if self.budget.non_private:
            reasons.append("infinite budget (no noise)")
        if self.domains is None:
            reasons.append("domain taken from the data")
        if self.source.seeded:
            reasons.append("seeded noise (tests and benchmarks only)")
        if budget_note:
            reasons.append(budget_note)
        return reasons


def _tree_spec(
    name: str,
    hierarchy: object,
    tree: str | None,
    features: object,
    structure: object,
    weights: object,
) -> TreeSpec:
    if features is not None:
        raise SpecError(
            Arg("features"),
            f" is for the mechanisms that release features ({', '.join(feature_mechanisms())}); "
            f"mechanism {name!r} releases a hierarchy: pass ",
            Arg("hierarchy", ...),
            ", or ",
            Arg("mechanism", "cbdp"),
            " with ",
            Arg("features", ...),
            param="features",
        )
    for option, value in (("structure", structure), ("weights", weights)):
        if value is not None:
            raise SpecError(
                Arg(option),
                f" is an option of the feature mechanisms ({', '.join(feature_mechanisms())}), "
                f"not of {name!r}; drop it",
                param=option,
            )
    if hierarchy is None:
        raise SpecError(
            f"mechanism {name!r} releases a hierarchy: pass ",
            Arg("hierarchy", ...),
            " (one chain of columns coarse to fine, or a list of chains)",
            param="hierarchy",
        )
    return parse_hierarchy(hierarchy, tree)


def _feature_spec(
    name: str,
    features: object,
    hierarchy: object,
    tree: str | None,
    structure: object,
    weights: object,
) -> FeatureSpec:
    if hierarchy is not None or tree is not None:
        raise SpecError(
            f"mechanism {name!r} releases features, not a hierarchy: pass ",
            Arg("features", ...),
            " (GROUP BY column sets, coarse to fine, the leaf last) instead of ",
            Arg("hierarchy") if hierarchy is not None else Arg("tree"),
            param="hierarchy" if hierarchy is not None else "tree",
        )
    if features is None:
        raise SpecError(
            f"mechanism {name!r} needs ",
            Arg("features", ...),
            ": GROUP BY column sets, coarse to fine with the leaf (the cells released) last, e.g. ",
            Spelling(
                python="features={'total': [], 'period': ['period'], 'trip': ['o', 'd', 'period']}",
                cli="--features total: --features period:period --features trip:o,d,period",
            ),
            param="features",
        )
    return parse_features(
        features,
        structure="flat" if structure is None else structure,
        weights="cells" if weights is None else weights,
    )


def _measurements_table(measurements: object, mech: object, output: str | None) -> str | None:
    """The table of the noisy measurements (``measurements=True``), checked before any work: a
    TopDown mechanism (one with a per-level step) writing an output table."""
    if not isinstance(measurements, bool):
        raise SpecError(
            f"measurements must be True or False, got {measurements!r}", param="measurements"
        )
    if not measurements:
        return None
    if not isinstance(mech, Mechanism) or mech.topdown_step is None:
        name = getattr(mech, "name", mech)
        raise SpecError(
            f"mechanism {name!r} has no TopDown measurements to write; ",
            Arg("measurements", True),
            " goes with inftda, tda_l2 or tda_linf_solver",
            param="measurements",
        )
    if output is None:
        raise SpecError(
            Arg("measurements", True),
            " writes <output>_measurements: pass ",
            Arg("output"),
            " (a table to write the release to)",
            param="measurements",
        )
    return f"{output}_measurements"


def check_not_sql(table: str) -> None:
    """Refuse an input written as SQL (a quoted path, a reader call) before a default output is
    named after it: it names no table or file."""
    hint = sql_spelling_hint(table)
    if hint is not None:
        raise InputDataError(f"table {table!r} names no table or file: {hint}", param="table")
