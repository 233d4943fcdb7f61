"""The Newton system of CBDP's optimisation (:mod:`inftda_sql.core.lsq`), iteratively: a
preconditioned conjugate gradient on the Schur complement, matrix-free, whose cost grows with
the atoms times the features and never with the square of the coarse cells.

``K = W^-1 + U diag(w) U^T`` with ``U`` the incidence of atoms into coarse cells, ``w_a = k_a /
2 w_leaf`` (``k_a`` the positive leaves of atom ``a``) and ``W^-1 = diag(1 / 2 w_f)``, 0 for an
exact feature. The largest feature's block ``K00`` is diagonal (an atom lies in one of its
cells) and is eliminated exactly; the Schur complement ``S = K11 - K10 K00^-1 K01`` on the
other cells is never formed: with ``t = U1^T v`` (per atom, the sum of ``v`` over its cells of
the other features), ``S v = W1^-1 v + U1 (w (t - (K00^-1 U0 (w t))[cell0]))``, a few gathers
and ``bincount`` per feature over the atoms with a positive leaf. Its diagonal (the Jacobi
preconditioner: every feature's own block of ``K`` is diagonal) comes from the distinct pairs
(cell, cell of the largest feature) of the atoms.

**Exact features.** ``S`` is positive definite but where ``W^-1 = 0``: a cell of an exact
feature whose atoms have no positive leaf has a zero row, and exact features that sum to one
another make ``S`` singular. The direct solver's ridge ``1e-12 (1 + max w)`` on the diagonal
keeps ``S`` definite and makes such a zero row decoupled (Jacobi solves it at once); along the
near-null directions the step is long, and the exact line search of the Newton method cuts it
to the best point (as with the direct solver).

**Inexact is safe.** CG's residual is the full system's (the eliminated block is solved
exactly), and every CG iterate ``y1`` (from 0) has ``b . y1 >= y1 . S y1 / 2 > 0``, so the
direction ``d`` satisfies ``grad . d = g0 . K00^-1 g0 + b . y1 > 0``: stopping early, at the
forcing term or at the iteration cap, still gives an ascent direction.

Dot products are ``einsum``, not BLAS: on a loaded two-core machine a threaded ``dot`` of 268K
entries took 27 ms against 0.2 ms (load 26).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .arrays import F64, I64

__all__ = ["MAX_CG", "SchurCG", "SchurSystem", "dot", "pcg"]

#: conjugate-gradient iterations per Newton step at most (any iterate is an ascent direction)
MAX_CG = 1000


def dot(a: F64, b: F64) -> float:
    """``a . b`` without BLAS (see the module docstring)."""
    return float(np.einsum("i,i->", a, b))


class SchurCG:
    """Solves ``K d = grad`` for one problem's features (the largest first), any atom weights.

    Args:
        cells: per coarse feature, the cell of every atom (the largest feature first).
        sizes: cells per coarse feature.
        inv_w: per coarse feature, ``1 / 2 w_f`` (0 for an exact feature).
    """

    def __init__(self, cells: Sequence[I64], sizes: Sequence[int], inv_w: Sequence[float]):
        self.cells = list(cells)
        self.sizes = list(sizes)
        self.inv_w = list(inv_w)
        offsets = np.zeros(len(self.sizes), dtype=np.int64)
        np.cumsum(self.sizes[1:], out=offsets[1:])
        self.bounds = [(int(a), int(b)) for a, b in itertools.pairwise(offsets)]
        self.inv_w1 = np.concatenate(
            [np.zeros(0)]
            + [np.full(n, iw) for n, iw in zip(self.sizes[1:], self.inv_w[1:], strict=True)]
        )
        self.iterations = 0
        self._pair_structure: list[tuple[I64, I64, I64]] | None = None

    def _pairs(self) -> list[tuple[I64, I64, I64]]:
        """Per coarse feature but the largest: every atom's pair (its cell, its cell of the
        largest feature) as a dense code, and each pair's two cells (computed once)."""
        if self._pair_structure is None:
            n0, c0 = self.sizes[0], self.cells[0]
            self._pair_structure = []
            for cell in self.cells[1:]:
                pairs, entry = np.unique(cell * n0 + c0, return_inverse=True)
                self._pair_structure.append((entry.ravel(), pairs // n0, pairs % n0))
        return self._pair_structure

    def system(self, w_all: F64, grad: F64) -> SchurSystem:
        """The Schur complement system of ``K d = grad`` for the atom weights ``w_all``."""
        active = np.flatnonzero(w_all)
        w = w_all[active]
        n0 = self.sizes[0]
        c0 = self.cells[0][active]
        ridge = 1e-12 * (1.0 + float(np.max(w, initial=0.0)))
        k00 = self.inv_w[0] + np.bincount(c0, weights=w, minlength=n0) + ridge
        g0, g1 = grad[:n0], grad[n0:]
        cells = [c[active] for c in self.cells[1:]]
        bounds = self.bounds
        # diag(S) = W1^-1 + U1 w - sum over pairs (cell, cell0) of (their w)^2 / K00
        diag = self.inv_w1 + ridge
        for i, ((a, b), (entry, e_row, e_col)) in enumerate(
            zip(bounds, self._pairs(), strict=True)
        ):
            diag[a:b] += np.bincount(cells[i], weights=w, minlength=b - a)
            val = np.bincount(entry, weights=w_all, minlength=e_row.size)
            diag[a:b] -= np.bincount(e_row, weights=val * val / k00[e_col], minlength=b - a)
        diag = np.maximum(diag, ridge)
        d1 = self.inv_w1 + ridge

        def gather(v: F64) -> F64:  # U1^T v over the active atoms
            t = v[cells[0]] if cells else np.zeros(w.size)
            for cell, (a, _) in zip(cells[1:], bounds[1:], strict=True):
                t += v[a:][cell]
            return t

        def scatter(z: F64) -> F64:  # U1 z (float even with no active atom)
            return np.concatenate(
                [np.zeros(0)]
                + [
                    np.bincount(cell, weights=z, minlength=b - a)
                    for cell, (a, b) in zip(cells, bounds, strict=True)
                ]
            )

        def apply(v: F64) -> F64:
            wt = w * gather(v)
            wt -= w * (np.bincount(c0, weights=wt, minlength=n0) / k00)[c0]
            out = scatter(wt)
            out += d1 * v
            return out

        def back(y1: F64) -> F64:
            y0 = (g0 - np.bincount(c0, weights=w * gather(y1), minlength=n0)) / k00
            return np.concatenate([y0, y1])

        rhs = g1 - scatter(w * (g0 / k00)[c0])
        return SchurSystem(apply, diag, rhs, back)

    def solve(self, w_all: F64, grad: F64, forcing: float, floor: float) -> F64:
        """``K^-1 grad`` to a residual of at most ``forcing`` times ``|grad|`` (2-norm) or
        ``floor`` in every cell, for the atom weights ``w_all``; counts the iterations in
        :attr:`iterations`."""
        system = self.system(w_all, grad)
        y1, done = pcg(
            system.apply, system.diag, system.rhs, forcing * math.sqrt(dot(grad, grad)), floor
        )
        self.iterations += done
        return system.back(y1)


@dataclass(frozen=True)
class SchurSystem:
    """``S y1 = rhs``: ``apply`` is ``v -> S v``, ``diag`` its diagonal, ``back`` the full
    direction ``(y0, y1)`` from a solution ``y1``."""

    apply: Callable[[F64], F64]
    diag: F64
    rhs: F64
    back: Callable[[F64], F64]


def pcg(
    apply: Callable[[F64], F64], diag: F64, rhs: F64, target: float, floor: float
) -> tuple[F64, int]:
    """Jacobi-preconditioned conjugate gradients from 0, until the residual's 2-norm is at
    most ``target`` or its largest entry at most ``floor`` (or :data:`MAX_CG` iterations);
    updates in place. Returns the solution and the iterations."""
    y = np.zeros_like(rhs)
    r = rhs.copy()
    z = r / diag
    p = z.copy()
    rz = dot(r, z)
    done = 0
    for _ in range(MAX_CG):
        if math.sqrt(dot(r, r)) <= target or float(np.max(np.abs(r), initial=0.0)) <= floor:
            break
        q = apply(p)
        pq = dot(p, q)
        if not pq > 0.0:  # rounding: no further progress along p
            break
        alpha = rz / pq
        y += alpha * p
        q *= alpha
        r -= q
        np.divide(r, diag, out=z)
        rz_next = dot(r, z)
        p *= rz_next / rz
        p += z
        rz = rz_next
        done += 1
    return y, done
