"""Budget planning before touching any data: per-level sigma and the error to expect.

For a hierarchy *shape* (the number of nodes per level, or the public domain of a release) and a
budget, :func:`plan` reports per level the rho and sigma the accounting module gives, a
high-probability bound on InfTDA's maximum absolute error, and the same error measured on
simulated data of that shape; optionally it chooses a per-level split of rho that minimises the
bound at the levels a user cares about.

**The bound.** IntOpt returns, for a parent released as ``x_p`` with error ``e_p``, children at
Chebyshev distance at most ``|e_p| + max_i |eta_i|`` from the noisy children (the true children
shifted by an offset of at most ``|e_p|`` are feasible), so a child's error is at most
``|e_p| + 2 max_i |eta_i|``. By induction the error at level l is at most
``2 (T_1 + ... + T_l)`` (plus ``T_0`` when the root is noised), where ``T_j`` bounds the largest
noise of level j: the smallest integer whose exact discrete Gaussian tail is at most
``beta / (L n_j)``, a union bound over the ``n_j`` nodes of all ``L`` noised levels at once. This
is the paper's Theorem 4 (twice the deviation per level, accumulated with depth) with the exact
tail instead of the sub-Gaussian one; :mod:`inftda_sql.core.bounds` computes it, for plans and
releases alike, so a plan and a release of the same domain and budget state the same bounds.

**The simulation** (:func:`inftda_sql.core.bounds.simulate`) runs the real TopDown engine (noise
and IntOpt) on a random tree with the same number of nodes per level and a heavy-tailed
synthetic count per leaf, and reports the median over runs of each level's maximum absolute
error (and in :attr:`Plan.typical` the 90th percentiles and the per-cell errors). It reads no
private data.
"""

from __future__ import annotations

import html
import itertools
import math
import textwrap
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np

from ._errors import Arg, DomainError, SpecError
from ._request import normalise_domains
from ._tables import html_table, text_table
from .core.accounting import Accounting, Budget, account
from .core.bounds import Typical, error_bounds, simulate
from .core.domains import unwrap
from .core.spec import parse_hierarchy
from .core.tree import determined_levels
from .engines.duckdb import compile as _compile
from .engines.duckdb.catalog import drop_temp, resolve_source
from .engines.duckdb.connection import require_open
from .engines.duckdb.domain import chain_source
from .engines.duckdb.sql import rows

__all__ = ["Plan", "PlanLevel", "plan"]


@dataclass(frozen=True)
class PlanLevel:
    """One level of a plan.

    ``noise_bound`` is ``T_l``: with the plan's probability no node of any level draws noise
    larger than its level's ``T_l``; ``bound`` adds them up as the module's derivation says
    (``2 (T_1 + ... + T_l)``, plus ``T_0`` when the root is noised).
    """

    name: str
    nodes: int
    rho: float
    sigma: float
    bound: float
    simulated: float | None
    simulated_worst: float | None
    noise_bound: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Plan:
    """Per-level budget, noise and expected error of a release of a given shape."""

    accounting: Accounting
    beta: float
    levels: tuple[PlanLevel, ...]
    split: tuple[float, ...]
    simulations: int
    simulated_total: int
    root_noise_bound: float | None = None  # T_0 when the root is noised (unbounded DP, m > 1)
    typical: Typical | None = None  # the simulation's medians and 90th percentiles

    def as_dict(self) -> dict[str, Any]:
        return {
            "budget": self.accounting.as_dict(),
            "beta": self.beta,
            "root_noise_bound": self.root_noise_bound,
            "split": list(self.split),
            "simulations": self.simulations,
            "simulated_total": self.simulated_total,
            "levels": [lv.as_dict() for lv in self.levels],
            "typical": None if self.typical is None else self.typical.as_dict(),
        }

    _HEADER = ("level", "nodes", "rho", "sigma", "error bound", "simulated max error")

    def _rows(self) -> list[tuple[str, ...]]:
        out: list[tuple[str, ...]] = []
        for lv in self.levels:
            sim = (
                "-"
                if lv.simulated is None
                else f"{lv.simulated:,.0f} (worst {lv.simulated_worst:,.0f})"
            )
            out.append(
                (
                    lv.name,
                    f"{lv.nodes:,}",
                    f"{lv.rho:.4g}",
                    f"{lv.sigma:.3g}",
                    f"{lv.bound:,.0f}",
                    sim,
                )
            )
        return out

    def __str__(self) -> str:
        b = self.accounting.budget
        sim = (
            f"; simulation: median of {self.simulations} runs on a random tree of this shape "
            f"with {self.simulated_total:,} records"
            if self.simulations
            else ""
        )
        head = (
            f"plan: rho={b.rho:.6g} ~ (epsilon={b.epsilon:.4g}, delta={b.delta:.3g}), "
            f"{self.accounting.privacy} DP; bound holds for all levels with probability "
            f">= {1 - self.beta:g}{sim}"
        )
        lines = [head, *text_table(self._HEADER, self._rows(), left=0)]
        return "\n".join([*lines, "", *self.explanation()])

    def explanation(self) -> list[str]:
        """What the error bound guarantees, how it adds up, and why the simulation is smaller
        (the lines under the table)."""
        if not self.levels or not any(lv.bound > 0 for lv in self.levels):
            return []  # no noise (an infinite budget): nothing to explain
        last = self.levels[-1]
        noisy = [lv for lv in self.levels if lv.noise_bound > 0]
        shown = noisy[-1] if noisy else last  # a level the domain determines draws no noise
        terms = " + ".join(f"{lv.noise_bound:,.0f}" for lv in self.levels)
        root = "" if self.root_noise_bound is None else f"{self.root_noise_bound:,.0f} + "
        n_levels = len(self.levels) + (self.root_noise_bound is not None)
        text = [
            f"error bound: a guarantee. With probability >= {1 - self.beta:g}, for any data and "
            "any tree of this shape, no node of any level is off by more than this. On each "
            f"level the noise is at most T ({shown.name}: sigma {shown.sigma:.3g} over "
            f"{shown.nodes:,} nodes gives T = {shown.noise_bound:,.0f}, a union bound over every "
            f"node of all {n_levels} levels); IntOpt may move a child by its parent's "
            "error plus twice T, and in the worst case a parent's whole error reaches one "
            f"child, so the bound adds up from the root down: {last.bound:,.0f} = {root}2 x "
            f"({terms})."
        ]
        if self.simulations:
            text.append(
                "simulated max error: what happened. The largest error at that level in a "
                "release of synthetic data on one random tree of this shape "
                f"({self.simulated_total:,} records), median (worst) of {self.simulations} "
                "runs. It is smaller because a parent's error is spread over its children "
                "instead of reaching one of them whole, and one run's noise rarely reaches the "
                f"beta = {self.beta:g} tail on every level at once."
            )
        return [line for paragraph in text for line in textwrap.wrap(paragraph, width=100)]

    def _repr_html_(self) -> str:
        summary = html.escape(str(self).splitlines()[0])
        notes = "".join(f"<p>{html.escape(p)}</p>" for p in self._paragraphs())
        return html_table(self._HEADER, self._rows(), before=f"<p>{summary}</p>") + notes

    def _paragraphs(self) -> list[str]:
        paragraphs: list[str] = []
        for line in self.explanation():
            if line.startswith(("error bound:", "simulated max error:")) or not paragraphs:
                paragraphs.append(line)
            else:
                paragraphs[-1] += " " + line
        return paragraphs


def _domain_shape(
    con: duckdb.DuckDBPyConnection, hierarchy: object, domain: object, tree: str | None
) -> tuple[list[str], list[int], tuple[bool, ...]]:
    spec = parse_hierarchy(hierarchy, tree)
    domains = normalise_domains(domain, spec)
    prefix = f"__inftda_plan_{uuid.uuid4().hex[:12]}_"
    sizes: list[list[int]] = []
    for c, chain in enumerate(spec.chains):
        role = f"domain of chain {c + 1}" if len(spec.chains) > 1 else "domain"
        given, columns = unwrap(domains[c])
        src = resolve_source(con, given, role=role, temp_name=f"{prefix}{c}", error=DomainError)
        try:
            shared = sum(d is domains[c] for d in domains)
            chain_src = chain_source(src, chain, columns, role=role, shared=shared)
            for col in chain:
                chain_src.column(col, f"hierarchy column of the {role}", DomainError)
            names = [chain_src.column(x, "") for x in chain]
            counts = rows(con, _compile.node_counts(names, chain_src.sql))
        finally:
            drop_temp(con, src)
        sizes.append([1, *(int(n) for n in counts[0])])
    names, nodes = [], []
    for level in range(1, spec.n_levels + 1):
        names.append(spec.level_name(level))
        nodes.append(math.prod(sizes[c][d] for c, d in enumerate(spec.levels[level])))
    return names, nodes, determined_levels(spec, sizes)


def _t_factors(nodes: Sequence[int], beta: float) -> np.ndarray:
    """Sub-Gaussian factors ``sqrt(2 ln(2 n L / beta))``: a smooth stand-in for ``T_l / sigma_l``
    that the optimal split minimises over; the bounds a plan reports are the exact ones of
    :func:`~inftda_sql.core.bounds.error_bounds`."""
    n_levels = len(nodes)
    return np.array([math.sqrt(2 * math.log(2 * n * n_levels / beta)) for n in nodes])


def _bounds(sigmas: np.ndarray, tfac: np.ndarray, root_noised: bool) -> np.ndarray:
    t = sigmas * tfac
    if root_noised:
        out: np.ndarray = t[0] + np.concatenate(([0.0], 2 * np.cumsum(t[1:])))
    else:
        out = 2 * np.cumsum(t)
    return out


def _optimal_split(
    uniform_sigma: np.ndarray,
    tfac: np.ndarray,
    root_noised: bool,
    targets: list[int],
    determined: Sequence[bool],
) -> list[float]:
    """Weights minimising the largest bound over ``targets``, one per level (those of the
    determined levels, which spend nothing and add no error, are placeholders).

    The bound of a determined level is its parent's, so a target there stands for the nearest
    noised level above it (none: its bound is 0 and it is dropped). ``uniform_sigma`` are the
    accounting's sigmas for the uniform split of rho over the other levels.
    """
    active = [j for j, det in enumerate(determined) if not det]
    if not active:
        return [1.0] * len(determined)
    mapped = sorted({max(a for a in active if a <= t) for t in targets if active[0] <= t})
    sub = [active.index(t) for t in mapped] or list(range(len(active)))
    weights = [1.0] * len(determined)
    best = _optimal_weights(uniform_sigma[active], tfac[active], root_noised, sub)
    for j, w in zip(active, best, strict=True):
        weights[j] = float(w)
    return weights


def _optimal_weights(
    uniform_sigma: np.ndarray, tfac: np.ndarray, root_noised: bool, targets: list[int]
) -> np.ndarray:
    """Weights minimising the largest bound over ``targets`` (exponentiated gradient).

    ``uniform_sigma`` are the accounting's sigmas for the uniform split; a level given the
    share ``w`` of rho instead of ``1/k`` has sigma ``uniform_sigma * sqrt(1 / (k w))`` (zCDP:
    sigma is proportional to 1 / sqrt(rho_l)). No sensitivity or sigma is derived here: the
    chosen weights go back through :func:`~inftda_sql.core.accounting.account`.

    Levels outside ``targets`` keep at least a quarter of the uniform share, so that no level is
    starved of budget (and so of any accuracy) for the sake of another.
    """
    k = uniform_sigma.size
    w = np.full(k, 1.0 / k)
    floor = np.full(k, 0.25 / k)
    floor[targets] = 1e-6 / k

    def project(weights: np.ndarray) -> np.ndarray:
        for _ in range(50):
            weights = np.maximum(weights, floor)
            weights = weights / weights.sum()
            if (weights >= floor * (1 - 1e-9)).all():
                break
        return weights

    def worst(weights: np.ndarray) -> float:
        sig = uniform_sigma / np.sqrt(k * weights)
        return float(_bounds(sig, tfac, root_noised)[targets].max())

    best, best_w = worst(w), w.copy()
    eta = 0.5
    for _ in range(3000):
        sig = uniform_sigma / np.sqrt(k * w)
        b = _bounds(sig, tfac, root_noised)[targets]
        p = np.exp((b - b.max()) / max(b.max() * 0.01, 1e-300))
        p /= p.sum()
        grad = np.zeros(k)
        for weight, level in zip(p, targets, strict=True):
            # d bound_level / d w_j = -1/2 * coef_j * sigma_j / w_j for the levels j it sums
            coef = np.zeros(k)
            if root_noised:
                coef[0] = 1.0
                coef[1 : level + 1] = 2.0
            else:
                coef[: level + 1] = 2.0
            grad += weight * (-0.5 * coef * sig * tfac / w)
        w = project(w * np.exp(-eta * grad / max(np.abs(grad).max(), 1e-300)))
        value = worst(w)
        if value < best:
            best, best_w = value, w.copy()
        else:
            eta *= 0.97
    return best_w


def _simulate(
    nodes: Sequence[int], sigmas: Sequence[float], total: int, runs: int, seed: int
) -> tuple[np.ndarray, np.ndarray, Typical]:
    """Median and worst (over runs) of each level's max abs error on a random tree, and the
    typical errors (:func:`~inftda_sql.core.bounds.simulate`, as a release computes them)."""
    if any(b < a for a, b in zip([1, *nodes[:-1]], nodes, strict=True)):
        raise SpecError(f"simulation needs non-decreasing node counts per level, got {list(nodes)}")
    out = simulate(nodes, sigmas, total, runs, seed, max_cells=1 << 62)
    assert out is not None  # non-decreasing counts and runs >= 1
    typical, maxima = out
    return np.median(maxima, axis=0), maxima.max(axis=0), typical


def plan(
    shape: Sequence[int] | None = None,
    *,
    con: duckdb.DuckDBPyConnection | None = None,
    hierarchy: object = None,
    domain: object = None,
    tree: str | None = None,
    rho: float | None = None,
    epsilon: float | None = None,
    delta: float | None = None,
    conversion: str = "tight",
    privacy: str = "bounded",
    contribution: int = 1,
    distinct: bool = False,
    split: Sequence[float] | str | None = None,
    target_levels: Sequence[int | str] | None = None,
    beta: float = 0.05,
    simulations: int = 20,
    total: int = 1_000_000,
    seed: int = 0,
) -> Plan:
    """Plan a release: per-level sigma and the maximum absolute error to expect.

    A level with as many nodes as the level above (one child per parent, e.g. a single
    country) is determined by it: as in a release it gets rho 0 and sigma 0, and the other levels
    share the budget.

    Args:
        shape: number of nodes at each level below the root, coarse to fine (e.g.
            ``[20, 107, 7900]``), read as one chain. Or give ``hierarchy``, ``domain`` (and
            ``tree``) as for :func:`release`, with ``con`` when the domain is a table of a
            database (a file path or declared values need none): the shape is then read from
            the public domain.
        rho, epsilon, delta, conversion, privacy, contribution, distinct: as for release().
        split: per-level weights of rho, or ``"optimal"`` to choose the weights minimising the
            largest error bound among ``target_levels`` (all levels when not given); the other
            levels keep at least a quarter of the uniform share.
        target_levels: levels (1-based indices or names) whose error matters most.
        beta: the bound holds for all levels at once with probability at least 1 - beta.
        simulations: simulated releases (0 to skip).
        total: records in the simulated data.
        seed: seed of the simulation (synthetic data: not a release).

    Example:
        >>> p = plan([20, 107, 7900], epsilon=1.0, delta=1e-8, simulations=0)
        >>> [round(lv.sigma, 1) for lv in p.levels]
        [13.2, 13.2, 13.2]
        >>> p.levels[0].bound < p.levels[1].bound < p.levels[2].bound
        True
    """
    if con is not None:
        require_open(con, "plan")
    if shape is not None and con is not None:
        raise SpecError(
            "pass shape= or con= with ", Arg("hierarchy"), " and ", Arg("domain"), ", not both"
        )
    if shape is None:
        if hierarchy is None or domain is None:
            raise SpecError(
                "plan needs shape=[nodes per level] or ",
                Arg("hierarchy"),
                " and ",
                Arg("domain"),
                " (with con= when the domain is a table of a database)",
            )
        if con is None:  # a domain in files or declared values: read in memory
            with duckdb.connect() as memory:
                names, nodes, determined = _domain_shape(memory, hierarchy, domain, tree)
        else:
            names, nodes, determined = _domain_shape(con, hierarchy, domain, tree)
    else:
        if isinstance(shape, (str, bytes)) or not isinstance(shape, Sequence) or not shape:
            raise SpecError(
                f"shape must list the number of nodes per level, got {shape!r}", param="shape"
            )
        nodes = []
        for n in shape:
            if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
                raise SpecError(
                    f"shape entries must be positive integers, got {n!r}", param="shape"
                )
            nodes.append(int(n))
        names = [f"level {i}" for i in range(1, len(nodes) + 1)]
        determined = tuple(a == b for a, b in itertools.pairwise([1, *nodes]))
    if not (0 < beta < 1):
        raise SpecError(f"beta must be in (0, 1), got {beta!r}", param="beta")
    budget = Budget.from_args(rho=rho, epsilon=epsilon, delta=delta, conversion=conversion)

    def accounting(weights: Sequence[float] | None) -> Accounting:
        return account(
            budget,
            names,
            privacy=privacy,
            contribution=contribution,
            distinct=distinct,
            split=weights,
            determined=determined,
        )

    base = accounting(None)
    root_noised = base.level_names[0] == "root"
    all_nodes = ([1] if root_noised else []) + nodes
    tfac = _t_factors(all_nodes, beta)
    weights: Sequence[float] | None
    if isinstance(split, str):
        if split != "optimal":
            raise SpecError(f"split must be weights or 'optimal', got {split!r}", param="split")
        targets = _targets(target_levels, names, root_noised)
        weights = (
            _optimal_split(
                np.array(base.level_sigma), tfac, root_noised, targets, base.level_determined
            )
            if not budget.non_private
            else None
        )
    else:
        if target_levels is not None:
            raise SpecError(
                Arg("target_levels"), " goes with ", Arg("split", "optimal"), param="target_levels"
            )
        weights = split
    acct = accounting(weights)
    sig = np.array(acct.level_sigma)
    # the release's own bounds (InfTDA's analysis), from the same public parameters
    exact = error_bounds(
        "linf",
        list(acct.level_names),
        all_nodes,
        list(acct.level_sigma),
        beta=beta,
        root_noised=root_noised,
    )
    bounds = np.array(exact.bound, dtype=float)
    noise = np.array(exact.noise, dtype=float)  # T_l: the largest noise of each level, jointly
    sim_med = sim_max = None
    typical = None
    if simulations:
        sim_med, sim_max, typical = _simulate(
            nodes, list(acct.level_sigma), total, simulations, seed
        )
    off = 1 if root_noised else 0
    levels = tuple(
        PlanLevel(
            name=names[i],
            nodes=nodes[i],
            rho=acct.level_rho[i + off],
            sigma=float(sig[i + off]),
            bound=float(bounds[i + off]),
            simulated=None if sim_med is None else float(sim_med[i]),
            simulated_worst=None if sim_max is None else float(sim_max[i]),
            noise_bound=float(noise[i + off]),
        )
        for i in range(len(nodes))
    )
    total_w = sum(acct.level_rho) or 1.0
    return Plan(
        accounting=acct,
        beta=beta,
        levels=levels,
        split=tuple(r / total_w for r in acct.level_rho),
        simulations=simulations,
        simulated_total=total if simulations else 0,
        root_noise_bound=float(noise[0]) if root_noised else None,
        typical=typical,
    )


def _targets(
    target_levels: Sequence[int | str] | None, names: Sequence[str], root_noised: bool
) -> list[int]:
    off = 1 if root_noised else 0
    if target_levels is None:
        return list(range(off, off + len(names)))
    out = []
    for t in target_levels:
        if isinstance(t, str):
            if t not in names:
                raise SpecError(
                    f"target level {t!r} is not a level; levels: {', '.join(names)}",
                    param="target_levels",
                )
            out.append(names.index(t) + off)
        elif isinstance(t, (int, np.integer)) and 1 <= t <= len(names):
            out.append(int(t) - 1 + off)
        else:
            raise SpecError(
                f"target level {t!r} must be a level name or 1..{len(names)}",
                param="target_levels",
            )
    return out
