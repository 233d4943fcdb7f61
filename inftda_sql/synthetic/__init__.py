"""Synthetic hierarchical origin/destination data, so the tool can be tried without real data.

:func:`italy_like` builds an Italian-shaped geography (20 regions > ~107 provinces > ~7,900
municipalities, ISTAT-like integer codes) and a heavy-tailed commuting table (about 500K distinct
O/D pairs and 28.8M trips at full scale, as the Italian data of the PETS 2025 paper), directly in
a DuckDB database. :func:`paper_dataset` builds the six synthetic datasets of the paper's
experiments (binary or random partition; complete, dense or sparse flows). :func:`odmts` builds
a day of trips of an on-demand multimodal transit system shaped like the CBDP paper's (Ann
Arbor: stops in zones, 30-minute periods, 12 modes), with its public domain of leaf cells and
the paper's features (:func:`odmts_features`). Everything is drawn from a seeded generator: this
is test data, not a release.

For count-of-counts histograms, :func:`housing_like`, :func:`taxi_like` and :func:`race_like`
mirror the three kinds of data of Kuo et al. (VLDB 2018): partially synthetic housing
(households in states and counties, a heavy tail of group quarters), taxis (a vehicle's pickups
in a neighbourhood) and census blocks (the residents of one race, many blocks empty). Each
builds its true leaf histograms in numpy (:func:`housing_histograms` ...; the benchmarks use
them directly) and expands them in DuckDB into a persons table and the public groups table.

The modules, one job each: :mod:`.od` (:func:`italy_like`), :mod:`.paper` (the paper's
datasets), :mod:`.odmts` (the CBDP setting), :mod:`.dc` (a DC-like O/D lattice at
block-group scale: :func:`dc_like`) and :mod:`.groups` (count-of-counts data). Import
the names from this package, which re-exports them.
"""

from __future__ import annotations

from .dc import DC_AFFINITY_SHAPE as DC_AFFINITY_SHAPE

# every public name of the modules; those outside __all__ (as before the split) as `X as X`
from .dc import DC_FEATURE_SETS, DCFlows, DCLike, dc_like, dc_like_features, dc_like_flows
from .groups import (
    HOUSEHOLD_SIZE_SHARES,
    US_STATES,
    GroupHistograms,
    SyntheticGroups,
    housing_histograms,
    housing_like,
    race_histograms,
    race_like,
    taxi_histograms,
    taxi_like,
    write_groups,
)
from .groups import PAPER_HOUSING_GROUPS as PAPER_HOUSING_GROUPS
from .od import SyntheticOD, italy_like
from .odmts import ODMTS, ODMTS_MODES, odmts, odmts_features
from .odmts import ODMTS_AFFINITY_SHAPE as ODMTS_AFFINITY_SHAPE
from .odmts import ODMTS_DAYS as ODMTS_DAYS
from .odmts import ODMTS_SERVED as ODMTS_SERVED
from .odmts import ODMTS_TRIPS as ODMTS_TRIPS
from .paper import PAPER_DENSITIES, PAPER_KINDS, PaperOD, paper_dataset
from .paper import PAPER_MAX_FLOW as PAPER_MAX_FLOW
from .paper import PAPER_PARETO_SHAPE as PAPER_PARETO_SHAPE
from .paper import PAPER_PARTITION_SEED as PAPER_PARTITION_SEED
from .paper import paper_flows as paper_flows

__all__ = [
    "DC_FEATURE_SETS",
    "HOUSEHOLD_SIZE_SHARES",
    "ODMTS",
    "ODMTS_MODES",
    "PAPER_DENSITIES",
    "PAPER_KINDS",
    "US_STATES",
    "DCFlows",
    "DCLike",
    "GroupHistograms",
    "PaperOD",
    "SyntheticGroups",
    "SyntheticOD",
    "dc_like",
    "dc_like_features",
    "dc_like_flows",
    "housing_histograms",
    "housing_like",
    "italy_like",
    "odmts",
    "odmts_features",
    "paper_dataset",
    "race_histograms",
    "race_like",
    "taxi_histograms",
    "taxi_like",
    "write_groups",
]
