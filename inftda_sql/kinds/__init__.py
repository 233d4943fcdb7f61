"""The release kinds, in one registry: what a release measures and how its stages run.

Every release, of every kind, runs the same named stages (:func:`inftda_sql._pipeline.run_release`):
the request checked (before this, by the request layer), the names resolved in the catalog
(``prepare``), the public domain coded and the accounting made (``domain``), one scan of the
private input (``scan``), the mechanism (its kind's stage name), the output and its ledger row
written atomically (``write``). A kind supplies those stages for one request on one engine and
asks the engine only for its own part of :class:`~inftda_sql.engines.base.ReleaseEngine`:

* ``hierarchy``: TopDown and the other tree mechanisms (:mod:`.hierarchy`);
* ``features``: a lattice of GROUP BY features, CBDP (:mod:`.features`);
* ``count_of_counts``: per region and group size, the number of groups (:mod:`.count_of_counts`).

A request names its kind (``request.kind``: a mechanism's :attr:`kind`, or the request's own).
Adding a kind is one module defining ``KIND`` and one entry in :data:`KINDS`.
"""

from __future__ import annotations

from .._errors import InternalError
from . import count_of_counts, features, hierarchy
from .base import KindRun, ReleaseKind, require

__all__ = ["KINDS", "KindRun", "ReleaseKind", "get", "require"]


#: every release kind, by name
KINDS: dict[str, ReleaseKind] = {
    k.name: k for k in (hierarchy.KIND, features.KIND, count_of_counts.KIND)
}


def get(name: str) -> ReleaseKind:
    """The release kind called ``name``."""
    if name not in KINDS:  # pragma: no cover - a request names a registered kind
        raise InternalError(f"no release kind {name!r}; there are {', '.join(KINDS)}")
    return KINDS[name]
