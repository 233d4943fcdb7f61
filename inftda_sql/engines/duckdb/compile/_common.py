"""What the compile modules share: the names of a release's temporary objects, quoting."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..sql import ident


@dataclass(frozen=True)
class TempNames:
    """Names of the temporary objects of one release (unique per release)."""

    prefix: str

    def codes(self, chain: int) -> str:
        return f"{self.prefix}codes_{chain}"

    def domain(self, chain: int) -> str:
        return f"{self.prefix}domain_{chain}"

    @property
    def input(self) -> str:
        return f"{self.prefix}input"

    @property
    def leaf(self) -> str:
        return f"{self.prefix}leaf"

    @property
    def released(self) -> str:
        return f"{self.prefix}released"

    @property
    def measurements(self) -> str:
        """The noisy measurements of a release, registered from Arrow (``measurements=``)."""
        return f"{self.prefix}measurements"

    def part(self, index: int) -> str:
        """The code table of one table of a feature release's domain."""
        return f"{self.prefix}part_{index}"


def _code_tables(names: TempNames, n_chains: int, codes: Sequence[str] | None) -> list[str]:
    """The (quoted) code table of every chain: ``codes`` when given (a cached domain), else the
    release's registered ones."""
    return list(codes) if codes is not None else [ident(names.codes(c)) for c in range(n_chains)]


def _cols(cols: Sequence[str], alias: str = "") -> str:
    pre = f"{alias}." if alias else ""
    return ", ".join(pre + ident(c) for c in cols)


def string_literal(text: str) -> str:
    """A SQL string literal (quotes doubled); for the few places DuckDB cannot bind a value,
    such as the path of ``ATTACH``."""
    return "'" + text.replace("'", "''") + "'"
