"""Exact discrete Gaussian and discrete Laplace noise: the *measure* stage.

``sample_discrete_gaussian(sigma)`` draws from the discrete Gaussian N_Z(0, sigma^2),

    P(X = x) = exp(-x^2 / (2 sigma^2)) / Z,    Z = sum over integers y of exp(-y^2 / (2 sigma^2)),

and ``sample_discrete_laplace(scale)`` from the discrete Laplace (two-sided geometric) law
P(X = x) = (1 - a) / (1 + a) a^|x|, a = exp(-1/scale), the noise of the Stability Histogram.
``sigma`` and ``scale`` are read as the exact rationals their float64 values denote. Randomness
comes from a :class:`~inftda_sql.core.rng.RandomSource`: the CSPRNG by default, a seeded
generator only in tests. No floating-point arithmetic touches a probability on the sampling path.

Each law has three methods, chosen by scale:

* **table** (:mod:`.tables`; ``sigma <= SIGMA_TABLE_MAX``, ``scale <= LAPLACE_TABLE_MAX``): a
  128-bit fixed-point CDF table over [-K, K], computed exactly, inverted with a guide table;
* **sums of table draws** (:mod:`.composed`; up to ``SIGMA_CONV_MAX``, ``LAPLACE_CONV_MAX``):
  the convolution ``X = k X1 + X2`` (Gaussian) and the decomposition ``X = m D + E`` (Laplace,
  an identity in law), from small tables;
* **rejection** (:mod:`.rejection`; beyond): the exact sampler of Canonne, Kamath & Steinke
  (NeurIPS 2020), a Python loop per draw.

**Result.** Every draw's law is within total-variation distance ``DISTANCE_BOUND`` = 2^-73 of the
exact law (the rejection sampler's is exact; the convolution's is within 2^-102). So a mechanism
that is (eps, delta)-DP with exact noise is (eps, delta + (1 + e^eps) TV)-DP with these
samplers, for each draw. The proofs (tail bounds, fixed-point error analysis, the convolution
lemma by Poisson summation, the decomposition identity) are in ``docs/proofs/noise.md``.

``sigma == 0`` and ``scale == 0`` return zeros (the point mass, used by the infinite-budget
oracle). :mod:`.gaussian` and :mod:`.laplace` hold the public functions; import them from this
package, which re-exports them.
"""

from __future__ import annotations

from .composed import CONV_R_MAX, CONV_TAIL_T
from .gaussian import (
    SCALE_MAX,
    SIGMA_CONV_MAX,
    SIGMA_TABLE_MAX,
    discrete_gaussian_pmf,
    draw_discrete_gaussian,
    sample_discrete_gaussian,
)
from .laplace import (
    LAPLACE_CONV_MAX,
    LAPLACE_TABLE_MAX,
    discrete_laplace_pmf,
    draw_discrete_laplace,
    sample_discrete_laplace,
)
from .tables import DISTANCE_BOUND, LAPLACE_TAIL_BITS, TAIL_BOUND, TAIL_T

__all__ = [
    "CONV_R_MAX",
    "CONV_TAIL_T",
    "DISTANCE_BOUND",
    "LAPLACE_CONV_MAX",
    "LAPLACE_TABLE_MAX",
    "LAPLACE_TAIL_BITS",
    "SCALE_MAX",
    "SIGMA_CONV_MAX",
    "SIGMA_TABLE_MAX",
    "TAIL_BOUND",
    "TAIL_T",
    "discrete_gaussian_pmf",
    "discrete_laplace_pmf",
    "draw_discrete_gaussian",
    "draw_discrete_laplace",
    "sample_discrete_gaussian",
    "sample_discrete_laplace",
]
