"""Weighted non-negative least squares over a lattice of partitions: CBDP's optimisation.

**The problem.** ``n`` leaf cells and ``k`` features, each a partition of the leaves given by a
map ``g_f`` (leaf -> cell of ``f``, ``n_f`` cells); feature ``f`` has noisy counts ``c_f`` and a
weight ``w_f > 0``. With ``A_f`` the aggregation of the leaves into the cells of ``f``
(``(A_f x)_p = sum of x_j over g_f(j) = p``)::

    minimise  sum_f w_f ||A_f x - c_f||^2   subject to  x >= 0,   and A_e x = c_e for exact e

The leaves are the only variables and every feature is their sum, so the paper's consistency
constraints hold by construction. The leaf feature (``A = I``) is always present, so the
objective is strictly convex and the optimum unique. An *exact* feature (released without
noise: the total N in bounded DP) is a hard constraint instead of a term.

**Why not a first-order method.** The weights ``1/n_f`` span six orders of magnitude (the
total weighs 1, a leaf ``1/n``): the Hessian's condition number is about ``n`` times the largest
cell, so projected gradient or FISTA would need millions of iterations. Instead:

1. **Atoms.** The *atoms* are the cells of the meet of the coarse features (two leaves share an
   atom iff they share a cell of every coarse feature). The coarse terms see ``x`` only through
   the atom sums.
2. **The dual is unconstrained.** Write each coarse term as ``max over y_f of
   y_f . (A_f x - c_f) - ||y_f||^2 / (4 w_f)`` (for an exact feature, without the last term)
   and minimise the Lagrangian over ``x >= 0`` first: it separates over the leaves, giving
   ``x_j = max(c_j - tau_a, 0)`` with ``tau_a = (sum_f y_f[cell of a in f]) / (2 w_leaf)`` for
   the leaf's atom ``a``. The dual function ``D(y)`` of the ``r = sum n_f`` coarse multipliers
   is concave, continuously differentiable and piecewise quadratic, *with no constraint*; its
   gradient for feature ``f`` is ``A_f x(y) - c_f - y_f / (2 w_f)`` and strong duality holds, so
   ``x(y*)`` is the primal optimum.
3. **Per atom in logarithmic time.** The leaves of every atom are sorted once by noisy count
   (descending) with prefix sums of the counts and their squares. For a threshold ``tau_a``,
   the number ``k_a`` of positive leaves is one ``searchsorted`` (on exact integer keys: noisy
   counts are integers), and the atom's sum and cost follow from the prefix sums: evaluating
   ``D`` and its gradient costs ``O(m log n)`` for ``m`` atoms, not ``O(n)``.
4. **Semismooth Newton.** The generalized Hessian is ``-K`` with ``K = W^-1 + U diag(k_a / 2
   w_leaf) U^T`` (``U`` the incidence of atoms into coarse cells, ``W^-1 = diag(1 / 2 w_f)``, 0
   for an exact feature). Each Newton direction solves ``K d = grad``; the step along it is
   found by an exact line search (along a line ``D`` is concave piecewise quadratic, its
   derivative piecewise linear: regula falsi on it). On the optimum's pieces a full step is
   exact, so the iteration ends in a finite number of steps (5 to 40 on the paper's setting).
5. **Solving with K, structurally.** Every feature's own block of ``K`` is diagonal (an atom
   lies in one cell of it). The largest feature's block is eliminated first; its Schur
   complement on the other cells is assembled from the pairs of atoms sharing a cell of the
   largest feature (``bincount``, no dense product). That complement's block for the next
   largest feature splits into connected components (one per period when every feature
   includes the period), solved in small batches, leaving a dense system on the few cells of
   the coarsest features. Dense BLAS products are avoided on purpose: on a loaded two-core
   machine a threaded BLAS call costs more than the arithmetic. This is the solver when the
   cells besides the largest feature's are at most :data:`MAX_DENSE_CELLS` and its dense
   systems (the border, the components) at most :data:`MAX_LAPACK_CELLS`.
6. **Solving with K, iteratively** (every other system: O/D features at tract level on both
   sides of a block-group lattice put 400 to 300K cells beside the largest feature's). The
   largest feature's diagonal block is still eliminated exactly, and the Schur complement on the
   other cells is solved by conjugate gradients, matrix-free: each product is a few gathers and
   ``bincount`` over the atoms with a positive leaf, so a step costs ``O(atoms x features)`` per
   CG iteration, never the square of the coarse cells. The preconditioner is the complement's
   diagonal (Jacobi; every feature's own block of ``K`` is diagonal). Newton is then inexact: CG
   stops at a residual of ``min(0.1, sqrt(|grad| / |grad_0|))`` times the gradient (the forcing
   term, superlinear at the end) or below a tenth of the stopping tolerance in every cell, and
   the exact line search is kept. Exact features (``W^-1 = 0``) can make ``K`` singular (a cell
   whose atoms have no positive leaf, or exact features that sum to one another); the direct
   solver's ridge ``1e-12 (1 + max w)`` on the diagonal keeps it definite, and every CG iterate
   is an ascent direction whatever its accuracy. Nothing here needs SciPy (measured against
   ``scipy.sparse.linalg.cg``: benchmarks/RESULTS.md).

Everything is numpy; ``tests/unit/test_lsq.py`` checks the optimum against
``scipy.optimize.lsq_linear`` (BVLS, an explicit matrix) on random instances, on both solvers
of ``K``: the objective to 1e-9 relative, and the KKT conditions of the exact-total problem.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._errors import InternalError, SpecError
from .arrays import F64, I64
from .lsq_iterative import SchurCG, dot

__all__ = [
    "MAX_COARSE_CELLS",
    "MAX_DENSE_CELLS",
    "LatticeProblem",
    "Solution",
    "combine_codes",
    "solve",
]

#: the Newton system is solved by the structural direct solver when the coarse features other
#: than the largest have at most this many cells (a dense system on them), else by conjugate
#: gradients (measured crossover: benchmarks/RESULTS.md, issue 26 item 5)
MAX_DENSE_CELLS = 4000
#: ... and when the dense system it hands to LAPACK has at most this many cells: a threaded
#: LAPACK solve costs far more than its arithmetic on a loaded machine (201 cells: 312 ms
#: against 0.33 ms single-threaded, load 9), while CG needs no LAPACK (issue 26 item 5)
MAX_LAPACK_CELLS = 128
#: the largest Newton system accepted: coarse cells, and atoms times coarse features (each
#: entry costs a few dozen bytes of working memory across the solver's arrays)
MAX_COARSE_CELLS = 1 << 28

#: the line search stops once the directional derivative is below this share of its start
_LINE_TOL = 1e-2
_MAX_NEWTON = 200


def combine_codes(a: I64, n_a: int, b: I64, n_b: int) -> tuple[I64, int]:
    """Dense codes of the pairs ``(a, b)`` (codes in ``[0, n_a)`` and ``[0, n_b)``): the cells
    of the meet of two partitions. Returns the codes and their number."""
    if a.size == 0:
        return np.zeros(0, np.int64), 0
    span = n_a * n_b
    key = a.astype(np.int64) * n_b + b
    if span <= max(4 * a.size, 1 << 22):
        present = np.zeros(span, dtype=bool)
        present[key] = True
        rank = np.cumsum(present, dtype=np.int64) - 1
        return rank[key], int(rank[-1]) + 1
    encoded = pc.dictionary_encode(pa.array(key))
    return encoded.indices.to_numpy().astype(np.int64), len(encoded.dictionary)


@dataclass(frozen=True)
class LatticeProblem:
    """One instance of the optimisation.

    Attributes:
        maps: per feature, the cell of every leaf (``None`` for the leaf feature itself).
        sizes: cells per feature.
        targets: per feature, the (noisy) counts of its cells, float64.
        weights: per feature, the weight of its squared distance (``> 0``).
        exact: per feature, whether it is a hard constraint (released without noise).
        leaf: index of the leaf feature (its map is the identity).
    """

    maps: tuple[I64 | None, ...]
    sizes: tuple[int, ...]
    targets: tuple[F64, ...]
    weights: tuple[float, ...]
    exact: tuple[bool, ...]
    leaf: int

    def __post_init__(self) -> None:
        k = len(self.sizes)
        if not (
            len(self.maps) == len(self.targets) == len(self.weights) == len(self.exact) == k
        ) or not (0 <= self.leaf < k):
            raise InternalError("a lattice problem needs one map, target, weight per feature")
        n = self.sizes[self.leaf]
        if self.maps[self.leaf] is not None or self.exact[self.leaf]:
            raise InternalError("the leaf feature has the identity map and is not exact")
        for f in range(k):
            m = self.maps[f]
            if f != self.leaf and (m is None or m.shape != (n,)):
                raise InternalError(f"feature {f} needs a map of {n} leaves")
            if self.targets[f].shape != (self.sizes[f],):
                raise InternalError(f"feature {f} needs {self.sizes[f]} targets")
            if not (self.weights[f] > 0 and math.isfinite(self.weights[f])):
                raise InternalError(f"feature {f} has weight {self.weights[f]!r}")

    @property
    def n(self) -> int:
        return self.sizes[self.leaf]

    def aggregate(self, x: F64, f: int) -> F64:
        """``A_f x``: the sums of ``x`` over the cells of feature ``f``."""
        m = self.maps[f]
        if m is None:
            return x
        return np.asarray(np.bincount(m, weights=x, minlength=self.sizes[f]), dtype=np.float64)

    def objective(self, x: F64) -> float:
        """The weighted objective at ``x`` (exact features included as ordinary terms)."""
        return math.fsum(
            self.weights[f] * float(np.sum((self.aggregate(x, f) - self.targets[f]) ** 2))
            for f in range(len(self.sizes))
        )

    def gradient(self, x: F64) -> F64:
        """The gradient of :meth:`objective` (every term, exact ones included)."""
        g = np.zeros(self.n)
        for f in range(len(self.sizes)):
            r = 2.0 * self.weights[f] * (self.aggregate(x, f) - self.targets[f])
            m = self.maps[f]
            g += r if m is None else r[m]
        return g


@dataclass(frozen=True)
class Solution:
    """The optimum and how it was reached (all derived from noisy values only).

    ``atom`` is the atom of every leaf (the cells of the meet of the coarse features) and
    ``atom_cells[f]`` the cell of feature ``f`` of every atom (None for the leaf feature).
    ``solver`` is how the Newton systems were solved: ``"direct"`` (structural, on
    ``dense_cells`` cells) or ``"cg"`` (conjugate gradients, ``cg_iterations`` in all).
    """

    x: F64
    atoms: int
    dense_cells: int
    newton_steps: int
    atom: I64
    atom_cells: tuple[I64 | None, ...]
    cg_iterations: int = 0
    solver: str = "direct"


# ---------------------------------------------------------------------------------------------
# atoms: the leaves of each atom sorted by noisy count, with prefix sums


class _Atoms:
    """The atoms (cells of the meet of the coarse features) and, per atom, its leaves sorted by
    noisy count (descending) with prefix sums of the counts and of their squares. Given a
    threshold ``tau_a`` per atom, the number of positive leaves ``k_a`` is one ``searchsorted``
    per atom when the counts are integers (exact integer keys), else one pass over the leaves;
    ``S_a`` and the leaf term then cost one gather per atom."""

    def __init__(self, problem: LatticeProblem, coarse: Sequence[int]) -> None:
        n = problem.n
        atom = np.zeros(n, dtype=np.int64)
        m = 1
        for f in coarse:
            code = problem.maps[f]
            if code is None:  # pragma: no cover - checked by LatticeProblem
                raise InternalError("a coarse feature without a map")
            atom, m = combine_codes(atom, m, code, problem.sizes[f])
        self.m = m
        self.atom = atom
        first = np.empty(m, dtype=np.int64)
        first[atom[::-1]] = np.arange(n - 1, -1, -1, dtype=np.int64)
        self.cell: dict[int, I64] = {}
        for f in coarse:
            code = problem.maps[f]
            assert code is not None
            self.cell[f] = code[first]
        c = problem.targets[problem.leaf]
        self.integral = bool(np.all(c == np.round(c))) and float(np.max(np.abs(c))) < 2.0**52
        self.key: I64 | None = None
        if self.integral:
            c_max, c_min = int(np.max(c)), int(np.min(c))
            span = c_max - c_min + 2
            if m * span < 2**62:
                key = atom * span + (c_max - c.astype(np.int64))
                order = np.argsort(key)
                self.key = key[order]
                self.c_max, self.span = c_max, span
            else:
                order = np.lexsort((-c, atom))
        else:
            order = np.lexsort((-c, atom))
        self.order = order
        cs = c[order]
        sorted_atom = atom[order]
        sizes = np.bincount(atom, minlength=m)
        start = np.zeros(m + 1, dtype=np.int64)
        np.cumsum(sizes, out=start[1:])
        prefix = np.cumsum(cs)
        squares = np.cumsum(cs * cs)
        head = start[:-1]
        base = np.where(head > 0, prefix[np.maximum(head - 1, 0)], 0.0)
        base_sq = np.where(head > 0, squares[np.maximum(head - 1, 0)], 0.0)
        self.cs = cs
        self.sorted_atom = sorted_atom
        self.head = head
        self.atom_ids = np.arange(m, dtype=np.int64)
        self.p = prefix - base[sorted_atom]  # sum of the k largest counts of the atom
        self.q = squares - base_sq[sorted_atom]  # sum of their squares
        self.q_total = self.q[start[1:] - 1]
        #: when every atom is one leaf (the coarse features meet in the leaves), its count
        self.single: F64 | None = None
        if m == n:
            self.single = np.empty(m)
            self.single[sorted_atom] = cs

    def positive(self, tau: F64) -> I64:
        """``k_a``: the leaves of every atom whose count exceeds ``tau_a``."""
        if self.single is not None:
            return (self.single > tau).astype(np.int64)
        if self.key is not None:
            # c_j > tau  <=>  c_j >= floor(tau) + 1  <=>  c_max - c_j <= c_max - floor(tau) - 1
            bound = np.clip(self.c_max - np.floor(tau) - 1.0, -1.0, float(self.span - 1))
            query = self.atom_ids * self.span + bound.astype(np.int64)
            return np.searchsorted(self.key, query, side="right") - self.head
        above = self.cs > tau[self.sorted_atom]
        return np.bincount(self.sorted_atom, weights=above, minlength=self.m).astype(np.int64)

    def sums(self, tau: F64, k: I64) -> F64:
        """``S_a``: the sum of ``max(c_j - tau_a, 0)`` over the leaves of every atom."""
        idx = self.head + np.maximum(k, 1) - 1
        return np.where(k > 0, self.p[idx] - k * tau, 0.0)

    def cost(self, tau: F64, k: I64) -> F64:
        """``sum_j (x_j - c_j)^2`` per atom at ``x_j = max(c_j - tau_a, 0)``."""
        idx = self.head + np.maximum(k, 1) - 1
        return np.where(k > 0, k * tau * tau + self.q_total - self.q[idx], self.q_total)

    def leaves(self, tau: F64) -> F64:
        """The leaves ``x_j = max(c_j - tau_a, 0)`` in the original order."""
        x_sorted = np.maximum(self.cs - tau[self.sorted_atom], 0.0)
        x = np.empty_like(x_sorted)
        x[self.order] = x_sorted
        return x


# ---------------------------------------------------------------------------------------------
# the dual: one multiplier per cell of every coarse feature, unconstrained


class _Dual:
    """``D(y) = min over x >= 0 of the Lagrangian``: concave, C^1 and piecewise quadratic in the
    multipliers ``y`` of the coarse cells (module docstring)."""

    def __init__(self, problem: LatticeProblem, atoms: _Atoms, coarse: Sequence[int]) -> None:
        self.atoms = atoms
        # the largest feature first: its block of the Newton matrix is diagonal, eliminated
        self.features = sorted(coarse, key=lambda f: -problem.sizes[f])
        self.cells = [atoms.cell[f] for f in self.features]
        self.sizes = [problem.sizes[f] for f in self.features]
        self.targets = [problem.targets[f] for f in self.features]
        self.inv_w = [
            0.0 if problem.exact[f] else 1.0 / (2.0 * problem.weights[f]) for f in self.features
        ]
        offsets = np.zeros(len(self.features) + 1, dtype=np.int64)
        np.cumsum(self.sizes, out=offsets[1:])
        self.offsets = offsets
        self.two_w_leaf = 2.0 * problem.weights[problem.leaf]
        self.dense_cells = int(offsets[-1] - offsets[1])
        coarse_cells = int(offsets[-1])
        if coarse_cells > MAX_COARSE_CELLS or atoms.m * len(self.features) > MAX_COARSE_CELLS:
            shown = ", ".join(f"{n:,}" for n in self.sizes)
            raise SpecError(
                f"the coarse features have {shown} cells and meet in {atoms.m:,} atoms: "
                f"{max(coarse_cells, atoms.m * len(self.features)):,} entries in the Newton "
                f"system, more than {MAX_COARSE_CELLS:,} (its memory); coarsen or drop a feature"
            )
        #: the structural direct solver on few dense cells, else conjugate gradients
        self.direct = self.dense_cells <= MAX_DENSE_CELLS
        self.cg_iterations = 0
        self.cg: SchurCG | None = None
        if not self.direct:
            return
        self.groups = (
            _component_groups(self.cells[0], self.cells[1], self.sizes[1])
            if len(self.features) > 1
            else None
        )
        # the largest system the direct solver hands to LAPACK: the border, or all
        lapack = self.dense_cells
        if self.groups is not None:
            lapack = max(self.dense_cells - self.sizes[1], *(g.shape[1] for g in self.groups))
        if lapack > MAX_LAPACK_CELLS:
            self.direct = False
            return
        # every atom's row in the dense system, per dense feature
        self.rows = [
            cell + int(off - offsets[1])
            for cell, off in zip(self.cells[1:], offsets[1:-1], strict=True)
        ]

    def split(self, y: F64) -> list[F64]:
        return [y[self.offsets[i] : self.offsets[i + 1]] for i in range(len(self.features))]

    def atom_sum(self, y: F64) -> F64:
        """``v_a = sum over coarse features of y_f[cell_f(a)]`` (``U^T y``)."""
        v = np.zeros(self.atoms.m)
        for cell, yf in zip(self.cells, self.split(y), strict=True):
            v += yf[cell]
        return v

    def evaluate(self, y: F64) -> tuple[F64, I64, F64]:
        """The gradient of ``D`` at ``y``, ``k`` and ``tau`` (``D`` itself is never needed:
        the line search works on its derivative)."""
        atoms = self.atoms
        v = self.atom_sum(y)
        tau = v / self.two_w_leaf
        k = atoms.positive(tau)
        s = atoms.sums(tau, k)
        grads = []
        for cell, n, c, yf, iw in zip(
            self.cells, self.sizes, self.targets, self.split(y), self.inv_w, strict=True
        ):
            grads.append(np.bincount(cell, weights=s, minlength=n) - c - iw * yf)
        return np.concatenate(grads), k, tau

    def line_search(self, y: F64, tau: F64, direction: F64, slope: float) -> float:
        """The step ``alpha > 0`` maximising ``D(y + alpha direction)`` (exactly: along a line
        the dual is concave and piecewise quadratic, its derivative piecewise linear and
        decreasing); ``slope`` is the derivative at 0."""
        atoms = self.atoms
        dv = self.atom_sum(direction)
        dtau = dv / self.two_w_leaf
        const = 0.0
        quad = 0.0
        for c, yf, df, iw in zip(
            self.targets, self.split(y), self.split(direction), self.inv_w, strict=True
        ):
            const += dot(df, c + iw * yf)
            quad += iw * dot(df, df)

        def derivative(alpha: float) -> float:
            t = tau + alpha * dtau
            return dot(dv, atoms.sums(t, atoms.positive(t))) - const - alpha * quad

        lo, d_lo = 0.0, slope
        hi, d_hi = 1.0, derivative(1.0)
        while d_hi > 0.0 and hi < 2.0**30:
            lo, d_lo = hi, d_hi
            hi *= 2.0
            d_hi = derivative(hi)
        if d_hi > 0.0:
            return hi
        side = 0
        for _ in range(100):  # regula falsi (Illinois): exact once both ends share a piece
            if hi - lo <= 1e-15 * hi:
                break
            mid = hi - d_hi * (hi - lo) / (d_hi - d_lo)
            if not lo < mid < hi:
                mid = 0.5 * (lo + hi)
            d_mid = derivative(mid)
            if d_mid == 0.0:
                return mid
            if d_mid > 0.0:
                lo, d_lo = mid, d_mid
                if side == 1:
                    d_hi *= 0.5
                side = 1
            else:
                hi, d_hi = mid, d_mid
                if side == -1:
                    d_lo *= 0.5
                side = -1
            if abs(d_mid) <= _LINE_TOL * slope:
                return mid
        return lo if lo > 0.0 else hi

    def _structure(self) -> None:
        """The sparsity of the Newton system, fixed for the problem (only the atoms' weights
        change between steps): per atom the rows of ``K11`` it touches, the distinct entries
        ``(dense row, cell of the largest feature)`` of ``K10`` and every atom's entry, and the
        pairs of entries sharing a column (the Schur complement's terms)."""
        r, n0, c0 = self.dense_cells, self.sizes[0], self.cells[0]
        rows = self.rows
        self.k11_index = np.concatenate([ri * r + rj for ri in rows for rj in rows])
        self.k11_reps = len(rows) ** 2
        key = np.concatenate([row * n0 + c0 for row in rows])
        entries, inverse = np.unique(key, return_inverse=True)
        self.entry_of = inverse.ravel()  # per (dense feature, atom): its entry
        self.entry_reps = len(rows)
        e_row, e_col = entries // n0, entries % n0
        order = np.argsort(e_col, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        self.entry_of = rank[self.entry_of]
        e_row, e_col = e_row[order], e_col[order]
        size = np.bincount(e_col, minlength=n0)
        start = np.cumsum(size) - size
        reps = size[e_col]
        a = np.repeat(np.arange(e_row.size), reps)
        within = np.arange(a.size) - np.repeat(np.cumsum(reps) - reps, reps)
        b = start[e_col[a]] + within
        self.e_row, self.e_col = e_row, e_col
        self.pair_a, self.pair_b = a, b
        self.pair_index = e_row[a] * r + e_row[b]
        self.pair_col = e_col[a]
        self.diag = np.concatenate(
            [np.full(n, iw) for n, iw in zip(self.sizes[1:], self.inv_w[1:], strict=True)]
        )

    def newton(self, k: I64, grad: F64, forcing: float = 0.0, floor: float = 0.0) -> F64:
        """A Newton direction: ``K^-1 grad``, exactly by :meth:`direct` on few dense cells, else
        by :meth:`iterative` to a residual of ``forcing`` times the gradient (2-norm) or of at
        most ``floor`` in every cell."""
        if self.direct:
            return self.direct_newton(k, grad)
        return self.iterative_newton(k, grad, forcing, floor)

    def iterative_newton(self, k: I64, grad: F64, forcing: float, floor: float) -> F64:
        """``K^-1 grad`` by conjugate gradients (:class:`~.lsq_iterative.SchurCG`)."""
        if self.cg is None:
            self.cg = SchurCG(self.cells, self.sizes, self.inv_w)
        direction = self.cg.solve(k / self.two_w_leaf, grad, forcing, floor)
        self.cg_iterations = self.cg.iterations
        return direction

    def direct_newton(self, k: I64, grad: F64) -> F64:
        """``K^-1 grad`` with ``K = W^-1 + U diag(k / 2 w_leaf) U^T`` (minus the Hessian).

        The block of the largest feature is diagonal; its Schur complement on the cells of
        the other features is assembled from the pairs of atoms that share a cell of the
        largest feature (sparse products over a structure computed once, never a dense matrix
        product) and solved by :class:`_BlockSolver`.
        """
        w = k / self.two_w_leaf
        n0, c0 = self.sizes[0], self.cells[0]
        ridge = 1e-12 * (1.0 + float(np.max(w, initial=0.0)))
        k00 = self.inv_w[0] + np.bincount(c0, weights=w, minlength=n0) + ridge
        g0, g1 = grad[:n0], grad[n0:]
        r = self.dense_cells
        if r == 0:
            return g0 / k00
        if not hasattr(self, "k11_index"):
            self._structure()
        k11 = np.bincount(
            self.k11_index, weights=np.tile(w, self.k11_reps), minlength=r * r
        ).astype(np.float64)
        val = np.bincount(
            self.entry_of, weights=np.tile(w, self.entry_reps), minlength=self.e_row.size
        )
        k11 -= np.bincount(
            self.pair_index,
            weights=val[self.pair_a] * val[self.pair_b] / k00[self.pair_col],
            minlength=r * r,
        )
        schur = k11.reshape(r, r)
        schur[np.arange(r), np.arange(r)] += self.diag + ridge
        e_row, e_col = self.e_row, self.e_col
        rhs = g1 - np.bincount(e_row, weights=val * (g0 / k00)[e_col], minlength=r)
        y1 = _BlockSolver(schur, self.sizes[1], self.groups).solve(rhs)
        y0 = (g0 - np.bincount(e_col, weights=val * y1[e_row], minlength=n0)) / k00
        return np.concatenate([y0, y1])


class _BlockSolver:
    """Solves ``S y = b`` for the Schur complement ``S`` on the cells of the dense features.

    The first ``n1`` cells (the largest dense feature) couple only through shared cells of the
    eliminated feature, so their block is block-diagonal by connected components (one per
    period when every feature includes the period, for instance): those blocks are solved in
    batches, and the cells of the remaining features (the border, usually small) by their own
    Schur complement. Without such structure this is a dense solve.
    """

    def __init__(self, schur: F64, n1: int, groups: Sequence[I64] | None) -> None:
        self.schur = schur
        self.n1 = n1
        r = schur.shape[0]
        inner = schur[:n1, :n1]
        self.dense = groups is None
        if groups is None:
            return
        self.groups = list(groups)
        self.blocks = [inner[idx[:, :, None], idx[:, None, :]] for idx in self.groups]
        if r > n1:
            # S_BB - S_BI S_II^-1 S_IB, component group by component group (small products
            # in einsum: a threaded BLAS call on a loaded machine costs more than it saves)
            s_ib = schur[:n1, n1:]
            x = self._inner(s_ib)
            border = schur[n1:, n1:].copy()
            for idx in self.groups:
                border -= np.einsum("icj,ick->jk", s_ib[idx], x[idx])
            self.border = border

    def _inner(self, b: F64) -> F64:
        """``S_II^-1 b`` by the blocks (``b`` of shape ``(n1,)`` or ``(n1, q)``)."""
        out = np.empty_like(b)
        for idx, block in zip(self.groups, self.blocks, strict=True):
            rhs = b[idx]
            if rhs.ndim == 2:
                rhs = rhs[..., None]
            sol = np.linalg.solve(block, rhs)
            out[idx] = sol[..., 0] if b.ndim == 1 else sol
        return out

    def solve(self, b: F64) -> F64:
        if self.dense:
            return np.asarray(np.linalg.solve(self.schur, b), dtype=np.float64)
        n1 = self.n1
        if b.size == n1:
            return self._inner(b)
        b_i, b_b = b[:n1], b[n1:]
        z = self._inner(b_i)
        s_ib = self.schur[:n1, n1:]
        y_b = np.linalg.solve(self.border, b_b - np.einsum("ij,i->j", s_ib, z))
        y_i = self._inner(b_i - np.einsum("ij,j->i", s_ib, y_b))
        return np.concatenate([y_i, y_b])


def _component_groups(cell0: I64, cell1: I64, n1: int) -> list[I64] | None:
    """The cells of the second largest feature grouped by connected component: two of its
    cells are connected when atoms put them in one cell of the largest feature. Components of
    equal size come together, as an ``(components, size)`` array of cell indices. None when
    one component holds most cells (a dense solve is then as good)."""
    if n1 == 0:
        return None
    label = _components(cell0, cell1, n1)
    sizes = np.bincount(label)
    if int(np.max(sizes)) > max(64, n1 // 2):
        return None
    order = np.argsort(label, kind="stable")
    starts = np.cumsum(sizes) - sizes
    groups = []
    for size in np.unique(sizes):
        comps = np.flatnonzero(sizes == size)
        groups.append(order[starts[comps][:, None] + np.arange(size)[None, :]])
    return groups


def _components(cell0: I64, cell1: I64, n1: int) -> I64:
    """Connected components (labels) of the cells ``0..n1-1`` of one feature, joined through
    the cells of another that share an atom (``cell0[a]``, ``cell1[a]`` per atom)."""
    label = np.arange(n1, dtype=np.int64)
    # edges between consecutive feature-1 cells of every feature-0 cell
    order = np.lexsort((cell1, cell0))
    c0, c1 = cell0[order], cell1[order]
    same = c0[1:] == c0[:-1]
    rows, cols = c1[1:][same], c1[:-1][same]
    keep = rows != cols
    rows, cols = rows[keep], cols[keep]
    while rows.size:
        low = np.minimum(label[rows], label[cols])
        new = label.copy()
        np.minimum.at(new, rows, low)
        np.minimum.at(new, cols, low)
        new = new[new]  # pointer jumping
        if np.array_equal(new, label):
            break
        label = new
    return np.unique(label, return_inverse=True)[1].astype(np.int64).ravel()


def solve(problem: LatticeProblem, *, tol: float = 1e-10) -> Solution:
    """The optimum of ``problem`` (see the module docstring).

    Args:
        problem: the instance.
        tol: stop when no coarse cell's sum is further than ``tol * (1 + largest target)``
            from what the multipliers ask of it (the dual gradient, in counts).

    Example:
        >>> import numpy as np
        >>> p = LatticeProblem(
        ...     maps=(np.array([0, 0, 1]), None), sizes=(2, 3),
        ...     targets=(np.array([10.0, 1.0]), np.array([4.0, 4.0, -3.0])),
        ...     weights=(1.0, 1.0), exact=(False, False), leaf=1)
        >>> np.round(solve(p).x, 6).tolist()
        [4.666667, 4.666667, 0.0]
    """
    leaf = problem.leaf
    coarse = [f for f in range(len(problem.sizes)) if f != leaf]
    c_leaf = problem.targets[leaf]
    if not coarse:
        return Solution(np.maximum(c_leaf, 0.0), problem.n, 0, 0, np.arange(problem.n), (None,))
    atoms = _Atoms(problem, coarse)
    cells = tuple(atoms.cell.get(f) for f in range(len(problem.sizes)))
    for f in coarse:
        if problem.exact[f] and problem.sizes[f] == 1 and problem.targets[f][0] <= 0.0:
            # a public total of 0
            return Solution(np.zeros(problem.n), atoms.m, 0, 0, atoms.atom, cells)
    dual = _Dual(problem, atoms, coarse)
    scale = 1.0 + max(float(np.max(np.abs(t), initial=0.0)) for t in problem.targets)
    y = np.zeros(int(dual.offsets[-1]))
    grad, k, tau = dual.evaluate(y)
    first = math.sqrt(dot(grad, grad))

    def done(step: int) -> Solution:
        dense = dual.dense_cells if dual.direct else 0
        x = atoms.leaves(tau)
        solver = "direct" if dual.direct else "cg"
        return Solution(x, atoms.m, dense, step, atoms.atom, cells, dual.cg_iterations, solver)

    for step in range(_MAX_NEWTON):
        if float(np.max(np.abs(grad))) <= tol * scale:
            return done(step)
        # inexact Newton: the forcing term shrinks with the gradient (superlinear at the end);
        # no cell need be solved below a tenth of the stopping tolerance
        forcing = min(0.1, math.sqrt(math.sqrt(dot(grad, grad)) / first))
        direction = dual.newton(k, grad, forcing, 0.1 * tol * scale)
        slope = dot(grad, direction)
        if not slope > 0.0:  # rounding has exhausted the ascent: as good as it gets
            return done(step)
        alpha = dual.line_search(y, tau, direction, slope)
        y = y + alpha * direction
        grad, k, tau = dual.evaluate(y)
    raise InternalError(f"the CBDP optimisation did not converge in {_MAX_NEWTON} Newton steps")
