"""The count-of-counts request: every argument of ``release_count_of_counts()`` checked before
any data is read (the request layer of :mod:`._request`, with its checks), and its accounting
made (:func:`~inftda_sql.core.accounting.count_of_counts_accounting`: pure epsilon-DP)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from ._errors import Arg, SpecError
from ._request import check_choice, check_int, check_microdata, check_not_sql
from .core.accounting import (
    COC_METHODS,
    Budget,
    CountOfCountsAccounting,
    count_of_counts_accounting,
)
from .core.coc import CONSISTENCY, MERGES
from .core.names import file_spelling, file_stem
from .core.rng import RandomSource, as_source
from .core.spec import parse_hierarchy

__all__ = ["DEFAULT_MAX_SIZE_SHARE", "CountOfCountsRequest"]

#: the share of epsilon spent on the largest group size when ``max_size`` is not given
DEFAULT_MAX_SIZE_SHARE = 0.05


@dataclass(frozen=True)
class CountOfCountsRequest:
    """A checked ``release_count_of_counts()`` call (no data, no connection).

    ``chain`` is the hierarchy's one chain of region columns; ``groups`` the PUBLIC groups
    table (its domain); ``max_size`` None when it is estimated privately (the accounting then
    holds its share of epsilon).
    """

    #: the release kind (:mod:`inftda_sql.kinds`) that runs this request
    kind: ClassVar[str] = "count_of_counts"

    table: object
    group: str
    chain: tuple[str, ...]
    groups: object
    groups_column: str | None
    min_size: int
    max_size: int | None
    method: str
    consistency: str
    merge: str
    accounting: CountOfCountsAccounting
    source: RandomSource
    output: str
    levels_view: str | None
    overwrite: bool
    budget_override: bool
    chunk: int
    microdata: bool = False

    @property
    def budget(self) -> Budget:
        """What the release spends, as the stored budgets count it (its ``rho``)."""
        return Budget.from_args(rho=self.accounting.rho)

    @property
    def input_description(self) -> str:
        return self.table if isinstance(self.table, str) else "<relation>"

    def non_private_reasons(self, budget_note: str | None) -> list[str]:
        """Why a release of this request is not private (empty when it is)."""
        reasons = []
        if self.accounting.non_private:
            reasons.append("infinite budget (no noise)")
        if self.source.seeded:
            reasons.append("seeded noise (tests and benchmarks only)")
        if budget_note:
            reasons.append(budget_note)
        return reasons

    @classmethod
    def from_args(
        cls,
        table: object,
        *,
        group: object,
        hierarchy: Sequence[str],
        groups: object,
        epsilon: float,
        max_size: object,
        groups_column: str | None,
        min_size: object,
        method: object,
        consistency: object,
        merge: object,
        split: Sequence[float] | None,
        max_size_share: float,
        output: object,
        overwrite: bool,
        levels_view: bool,
        seed: int | None,
        budget_override: bool,
        chunk: object,
        microdata: object = False,
    ) -> CountOfCountsRequest:
        """Check every argument that needs no database, in the order a user reads them."""
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
        method = check_choice("method", method, COC_METHODS)
        consistency = check_choice("consistency", consistency, CONSISTENCY)
        merge = check_choice("merge", merge, MERGES)
        smallest = check_int("min_size", min_size, 0)
        if smallest > 1:
            raise SpecError(f"min_size must be 0 or 1, got {smallest}", param="min_size")
        largest = None if max_size is None else check_int("max_size", max_size, max(smallest, 1))
        held = check_int("chunk", chunk, 1)
        level_names = ["root", *chain] if consistency == "topdown" else [chain[-1]]
        acct = count_of_counts_accounting(
            epsilon,
            level_names,
            method=method,
            split=split,
            max_size_share=max_size_share if largest is None else 0.0,
        )
        source = as_source(seed)
        if output is None:
            path = file_spelling(table)
            if path is not None:  # persons.parquet -> persons_count_of_counts
                output = f"{file_stem(path)}_count_of_counts"
            elif isinstance(table, str):
                check_not_sql(table)
                output = f"{table}_count_of_counts"
            else:
                raise SpecError(
                    Arg("output"), " is required when the input is a relation", param="output"
                )
        if not isinstance(output, str) or not output or len(output.split(".")) > 2:
            raise SpecError(f"output must be a table name, got {output!r}", param="output")
        if isinstance(table, str) and output.lower() == table.lower():
            raise SpecError(
                f"output {output!r} is the input table; choose another name", param="output"
            )
        return cls(
            table=table,
            group=group,
            chain=chain,
            groups=groups,
            groups_column=groups_column,
            min_size=smallest,
            max_size=largest,
            method=method,
            consistency=consistency,
            merge=merge,
            accounting=acct,
            source=source,
            output=output,
            levels_view=f"{output}_levels" if levels_view else None,
            overwrite=bool(overwrite),
            budget_override=bool(budget_override),
            chunk=held,
            microdata=check_microdata(microdata),
        )
