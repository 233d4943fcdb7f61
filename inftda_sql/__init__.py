"""inftda_sql: differentially private hierarchical counts, written back into DuckDB.

The package is organised as the pipeline of a release:

* **specifying the privacy guarantee**: :class:`Budget` (rho-zCDP, or (epsilon, delta) converted
  to rho) and :class:`Accounting` (per-level sensitivity, rho and sigma) -- ``core/accounting/``;
* **noise**: :func:`sample_discrete_gaussian`, exact up to a proven 2**-73 statistical distance
  per draw, from a CSPRNG (OpenSSL's DRBG) by default -- ``core/noise/``;
* **post-processing**: :func:`intopt`, the integer Chebyshev projection of InfTDA, vectorised over
  many parents -- ``core/intopt.py``;
* **releasing a table**: :func:`release` compiles the hierarchy into DuckDB SQL (``sql/``), runs the
  TopDown pass and writes the private table and its ledger row atomically -- ``_release.py``;
  its input and :class:`Domain` may be tables or parquet/CSV files, one geography serving every
  chain -- ``core/domains.py``;
* **releasing features** instead of a hierarchy: ``release(..., mechanism="cbdp",
  features={...})`` measures a lattice of GROUP BY column sets in one ``GROUPING SETS`` scan and
  makes them consistent with an exact weighted least squares -- ``core/features.py``,
  ``core/lsq.py``, ``core/rounding.py``, ``mechanisms/cbdp.py``;
* **managing budgets**: :func:`set_budget` stores a total budget per input table, :func:`ledger`
  shows releases, spent and remaining -- ``_budget.py``; :func:`plan` predicts per-level noise
  and error before touching data -- ``_planning.py``;
* **count-of-counts histograms**: :func:`release_count_of_counts` publishes, for every region
  of a hierarchy and every size, how many groups (households) of that size it holds (Kuo et
  al., VLDB 2018; pure epsilon-DP) -- ``_count_of_counts.py``;
* **checking a release** (outside the privacy boundary: it reads the true data):
  :func:`evaluate` compares a release with the truth per level, :func:`plot_evaluation` and
  :func:`plot_zoom` draw it -- ``_evaluate.py``, ``_plot.py``;
* **the building blocks in SQL**: :func:`register` adds ``dp_rho``, ``dp_epsilon``,
  ``dp_sensitivity``, ``dp_sigma``, ``dp_discrete_gaussian``, ``dp_discrete_laplace`` and
  ``intopt`` to a DuckDB connection, vectorised over Arrow batches --
  ``engines/duckdb/functions.py``;
* **data frames**: :func:`release` and :func:`evaluate` read pandas and polars DataFrames and
  Arrow tables, and ``release(return_as=...)`` returns the released table as one --
  ``_frames.py``; ``from inftda_sql.pandas import inf_tda`` is the drop-in for the ``inf-tda``
  package (a pandas Series with a MultiIndex) -- ``pandas.py``;
* **opening files for other clients**: :func:`connect` with ``storage_version=`` writes files
  that older DuckDB engines (SQL IDEs) can read -- ``_compat.py``; :func:`publish` copies a
  release, and nothing private, into a file to share -- ``_publish.py``.

Errors are subclasses of :class:`InftdaError` (see ``_errors.py``).
"""

from __future__ import annotations

from . import _start

_start.guard()  # the command line's start: Ctrl-C waits for cli.main() (see _start.py)

import importlib  # noqa: E402
from typing import TYPE_CHECKING  # noqa: E402

from ._version import __version__  # noqa: E402

if TYPE_CHECKING:
    from ._budget import Ledger, ledger, set_budget
    from ._compat import connect, storage_version
    from ._count_of_counts import CountOfCountsRelease, release_count_of_counts
    from ._errors import (
        BudgetError,
        BudgetExceededError,
        ConcurrentWriteError,
        DomainError,
        InftdaError,
        InputDataError,
        InternalError,
        OutputExistsError,
        SpecError,
    )
    from ._evaluate import evaluate, evaluate_count_of_counts
    from ._planning import Plan, plan
    from ._plot import plot_bounds, plot_evaluation, plot_zoom
    from ._publish import publish
    from ._release import Release, release
    from .core.accounting import Accounting, Budget
    from .core.domains import Domain
    from .core.intopt import intopt
    from .core.noise import sample_discrete_gaussian
    from .engines.duckdb.functions import register

#: the module of each public name. They are imported on first use: ``import inftda_sql`` stays
#: quick, so the command line starts handling Ctrl-C before the heavy imports (numpy, DuckDB).
_HOMES = {
    "._budget": ("Ledger", "ledger", "set_budget"),
    "._compat": ("connect", "storage_version"),
    "._count_of_counts": ("CountOfCountsRelease", "release_count_of_counts"),
    "._errors": (
        "BudgetError",
        "BudgetExceededError",
        "ConcurrentWriteError",
        "DomainError",
        "InftdaError",
        "InputDataError",
        "InternalError",
        "OutputExistsError",
        "SpecError",
    ),
    "._evaluate": ("evaluate", "evaluate_count_of_counts"),
    "._planning": ("Plan", "plan"),
    "._plot": ("plot_bounds", "plot_evaluation", "plot_zoom"),
    "._publish": ("publish",),
    "._release": ("Release", "release"),
    ".core.accounting": ("Accounting", "Budget"),
    ".core.domains": ("Domain",),
    ".core.intopt": ("intopt",),
    ".core.noise": ("sample_discrete_gaussian",),
    ".engines.duckdb.functions": ("register",),
}
_HOME = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
    "Accounting",
    "Budget",
    "BudgetError",
    "BudgetExceededError",
    "ConcurrentWriteError",
    "CountOfCountsRelease",
    "Domain",
    "DomainError",
    "InftdaError",
    "InputDataError",
    "InternalError",
    "Ledger",
    "OutputExistsError",
    "Plan",
    "Release",
    "SpecError",
    "__version__",
    "connect",
    "evaluate",
    "evaluate_count_of_counts",
    "intopt",
    "ledger",
    "plan",
    "plot_bounds",
    "plot_evaluation",
    "plot_zoom",
    "publish",
    "register",
    "release",
    "release_count_of_counts",
    "sample_discrete_gaussian",
    "set_budget",
    "storage_version",
]


def __getattr__(name: str) -> object:
    """A public name, imported from its module on first use."""
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
