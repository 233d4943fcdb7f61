"""Exact discrete Gaussian noise: the *measure* stage.

``sample_discrete_gaussian(sigma)`` draws from the discrete Gaussian N_Z(0, sigma^2),

    P(X = x) = exp(-x^2 / (2 sigma^2)) / Z,    Z = sum over integers y of exp(-y^2 / (2 sigma^2)),

where ``sigma`` is the float64 it is given, read as the exact rational it denotes, and
``sigma^2`` is that rational's exact square. Randomness comes from a
:class:`~inftda_sql.core.rng.RandomSource`: the OS CSPRNG by default, a seeded generator only
in tests. No floating-point arithmetic touches a probability on the sampling path.

Three methods
=============

**Table method** (``0 < sigma <= SIGMA_TABLE_MAX``). A cumulative distribution table over the
support [-K, K], ``K = ceil(10 sigma) + 1``, in 128-bit fixed point, inverted with a guide table.

*Tail bound.* Let f(u) = exp(-u^2 / (2 sigma^2)) and t = ``TAIL_T`` = 10, so K >= t sigma. The
cut mass is tau = 2 sum_{x >= K+1} f(x) / Z. Since f decreases on [0, inf),
sum_{x >= K+1} f(x) <= int_K^inf f(u) du <= int_K^inf (u/K) f(u) du = (sigma^2/K) f(K)
<= (sigma/t) exp(-t^2/2). For the normaliser, int_R f = 2 int_0^inf f <= 2 sum_{x >= 0} f(x)
= Z + 1, so Z >= max(1, sigma sqrt(2 pi) - 1). If sigma <= 1, Z >= 1 gives
tau <= (2 sigma/t) e^{-t^2/2} <= (2/t) e^{-t^2/2}; if sigma > 1, Z >= (sqrt(2 pi) - 1) sigma
> 1.5 sigma gives tau < (4/(3t)) e^{-t^2/2}. Either way

    tau <= (2/t) exp(-t^2/2) = 0.2 e^{-50} = 3.86e-23 < 2^-74        (``TAIL_BOUND``).

*Table.* Let C(k) be the CDF of the distribution *truncated* to [-K, K] (renormalised). The
table holds the 2K boundaries T[k] ~ 2^128 C(k), k = -K .. K-1, each split in a high and a low
64-bit word. They are computed with Python integers in F = 256-bit fixed point
(u = 2^-256): q = exp(-1/(2 sigma^2)) and q^2 come from ``decimal`` at 100 digits and are
floored to F bits (error <= 2u each); p_{k+1} = p_k r_k and r_{k+1} = r_k q^2 with p_0 = 1,
r_0 = q (so p_k = q^{k^2}, r_k = q^{2k+1}), each product floored. Since every fixed-point
value lies in [0, 1], |ab - a'b'| <= |a-a'| + |b-b'|, hence err(r_k) <= (3k+2)u and
err(p_k) <= 3k(k+1)/2 u <= 2(k+1)^2 u. The tail sums R_k = sum_{j=k+1..K} p_j and
Z_K = 1 + 2 R_0 then carry errors <= (2/3)(K+2)^3 u and (4/3)(K+2)^3 u, so the ratio
x_k = R_k / Z_K = C(-k-1) is known to 4 (K+2)^3 u <= 2^-194 (K+2 <= 2^20 for every table
sigma). The division by Z is replaced by a multiplication by W = floor(2^(s+128) / Z) with
s = bitlength(Z) + 64, which costs less than 2^-64 units. Altogether every stored boundary
satisfies ``|T[k] - 2^128 C(k)| < 1 + 2^-63``; the boundaries of k >= 0 are taken as
2^128 - 1 - T[-k-1] (symmetry), so the table is symmetric and non-decreasing by construction,
and that is checked when it is built.

*Sampling.* Let U be uniform on [0, 2^128). The sample is k = -K + #{j : T[j] <= U}, so
P^(k) = (T[k] - T[k-1]) / 2^128 with T[-K-1] := 0 and T[K] := 2^128, and

    |P^(k) - P_K(k)| < 2 (1 + 2^-63) 2^-128     for each of the 2K + 1 outcomes.

U is revealed lazily, 32 bits at a time, which does not change its law: its top 32 bits V
(half of one 64-bit word) decide the count unless V equals the top 32 bits of some boundary
(probability <= 2K 2^-32, at most 3e-4 for the largest table); only then are 96 more bits
drawn and the full 128-bit comparison made (the low 96 bits of U are the 64 bits of one fresh
word followed by the top 32 bits of another). A guide table indexed by the top g bits of V
(g = bitlength(2K) + 2, at most 22) holds, per bucket, the number of boundaries below it and,
when exactly one boundary falls inside it, that boundary's remaining bits, so almost every
draw costs one gather and one comparison; buckets holding several boundaries (the far tails)
and rare exact ties go to ``np.searchsorted``.

*Distance.* With TV the total-variation (statistical) distance and P the exact discrete
Gaussian:

    TV(P^, P) <= TV(P^, P_K) + TV(P_K, P) <= (2K + 1)(1 + 2^-63) 2^-128 + tau
              < 2^21 * 2^-127 + 2^-74 < 2^-73                    (``DISTANCE_BOUND``)

for every sigma <= SIGMA_TABLE_MAX (then 2K + 1 < 2^21), using TV(P_K, P) = P(|X| > K) = tau.
This is well inside the 2^-64 budget of the design. If a mechanism is (eps, delta)-DP with
exact noise, the same mechanism with this sampler is (eps, delta + (1 + e^eps) TV)-DP.

**Convolution method** (``SIGMA_TABLE_MAX < sigma <= SIGMA_CONV_MAX``). A large scale is
built from small ones: X = k X1 + X2 with X1, X2 drawn from small tables, no table for S
itself (S = sigma, S^2 its exact rational square).

*Split.* k = floor(sqrt(S / 3)). If S^2 / (k^2 + 1) <= CONV_R_MAX^2 (S up to about
CONV_R_MAX^2 / 3 = 2.2e7), then s1^2 = s2^2 = S^2 / (k^2 + 1): X1 and X2 have the same law,
of scale about sqrt(3 S), and share one table. Otherwise s2 = CONV_R_MAX, k = floor(CONV_R_MAX
/ 3) and s1^2 = (S^2 - s2^2) / k^2. Either way the variances are exact rationals with
k^2 s1^2 + s2^2 = S^2. Let tau^2 = s1^2 s2^2 / S^2 (balanced: tau = S / (k^2 + 1), about 3);
the split is accepted only if k >= 1, s1^2 > 0 and tau^2 >= 4, checked in rational arithmetic
when it is made (an internal error otherwise). It succeeds for every S >= 6, and tau^2 > 8.99
for every S > SIGMA_TABLE_MAX (both tested on grids up to SIGMA_CONV_MAX).

*Lemma.* Let X1 ~ N_Z(0, s1^2) and X2 ~ N_Z(0, s2^2) be independent and Q the law of
X = k X1 + X2. Then TV(Q, N_Z(0, S^2)) <= eta / (1 - eta) < 2^-112, where
eta = 2 sum_{m >= 1} exp(-2 pi^2 tau^2 m^2).
Proof: Q(x) = sum_j f1(j) f2(x - k j) / (Z1 Z2) with f1, f2 the Gaussian kernels. Completing
the square, j^2 / s1^2 + (x - k j)^2 / s2^2 = x^2 / S^2 + (j - mu_x)^2 / tau^2 with
mu_x = x k s1^2 / S^2, so Q(x) = f_S(x) Theta(mu_x) / (Z1 Z2) where
Theta(mu) = sum_j exp(-(j - mu)^2 / (2 tau^2)). By Poisson summation
Theta(mu) = tau sqrt(2 pi) sum_m exp(-2 pi^2 tau^2 m^2) cos(2 pi m mu), which lies in
tau sqrt(2 pi) [1 - eta, 1 + eta]. Write Theta(mu_x) = c (1 + e_x) with |e_x| <= eta;
normalising, Q(x) / P(x) = (1 + e_x) / (1 + e') with e' the P-mean of e_x, hence
|Q(x) / P(x) - 1| <= 2 eta / (1 - eta) and TV = (1/2) sum_x P(x) |Q(x)/P(x) - 1| <= eta/(1-eta).
With tau^2 >= 4 and m^2 >= m, eta <= 2 e^{-8 pi^2} / (1 - e^{-8 pi^2}) < 1.1e-34 < 2^-112.

*Recursion.* If s1 > CONV_R_MAX (S above 2.2e7), X1 is split again, so a draw is
X = (...((B k_d + T_d) k_{d-1} + T_{d-1}) ...) k_1 + T_1 with T_i ~ N_Z(0, s2_i^2) and the
innermost B ~ N_Z(0, s_d^2), s_d <= CONV_R_MAX; the depth is d = 1 up to 2.2e7 and d <= 4 for
every S <= SIGMA_CONV_MAX. Applying the lemma level by level (each level's X1 is exactly the
next level's law) and the triangle inequality, the exact components give a law within
d 2^-112 of P.

*Tables.* Each component is drawn from a table built as above for its exact rational variance,
with t = ``CONV_TAIL_T`` = 12: K = ceil(12 s) + 1, cut mass (2/12) e^{-72} < 2^-106.4 (the tail
argument holds for every real sigma > 0), and 2K + 1 < 2^21 for every component (all
s <= CONV_R_MAX), so each component table is within 2^-106.4 + 2^-107 < 2^-105.4 of its law.

*Distance.* For independent pairs, TV(k X1^ + X2^, k X1 + X2) <= TV(X1^, X1) + TV(X2^, X2)
(couple each pair optimally; the map is deterministic). With d + 1 component tables,

    TV(P^, P) <= (d + 1) 2^-105.4 + d 2^-112 < 2^-102      (d <= 4),

far inside ``DISTANCE_BOUND``. A draw costs d + 1 table look-ups (32 random bits each) and d
multiply-adds. Up to S = 2.2e7 there is one table, of about 24 sqrt(3 S) boundaries (S = 1e5:
13,190, 0.5 MB with its guide; S = 1e6: 41,598, 1.9 MB; S = 1e7: 131,510, 6.8 MB), built in
milliseconds to a few tenths of a second, instead of a single table of 20 S. Every |X| stays
below 2^62 (checked when the plan is made), so int64 arithmetic is exact. Independent draws
from one table are independent: they read different random words.

**Rejection method** (``sigma > SIGMA_CONV_MAX``, about 7.2e16). Canonne, Kamath & Steinke,
"The Discrete Gaussian for Differential Privacy" (NeurIPS 2020), Algorithms 1-3: a discrete
Laplace proposal with scale t = floor(sigma) + 1, accepted with probability
exp(-(|Y| - sigma^2/t)^2 / (2 sigma^2)), every Bernoulli(exp(-gamma)) realised with exact
rational gamma from uniform integers drawn by rejection from the same random words. Its output
law is exactly P. It is a Python loop per draw (about 100 thousand draws per second), kept for
scales whose draws approach the int64 range.

sigma == 0 returns zeros (the point mass, used by the infinite-budget oracle).

Discrete Laplace
================

``sample_discrete_laplace(scale)`` draws from the discrete Laplace (two-sided geometric) law
P(X = x) = (1 - a) / (1 + a) a^|x|, a = exp(-1/scale), the noise of the Stability Histogram.
The same kinds of method serve it, from the same random sources:

* **Table** (``0 < scale <= LAPLACE_TABLE_MAX``): the construction above with p_k = a^k over
  [-K, K], K = ceil(75 ln(2) scale) + 1. a is floored to F bits (error <= 2u) and
  p_k = floor(p_{k-1} a), so err(p_k) <= 3k u; the tail sums and Z carry at most 2(K+1)^2 u
  and 4(K+1)^2 u, and the ratios R_k / Z_K are known to 6 (K+1)^2 u < 2^-194 (K+1 <= 2^20),
  after which the argument above applies unchanged. The cut mass is
  P(|X| > K) = 2 a^(K+1) / (1 + a) < 2 * 2^-75 = 2^-74 = ``TAIL_BOUND``, and 2K + 1 < 2^21 for
  every table scale, so the same ``DISTANCE_BOUND`` of 2^-73 holds.
* **Decomposition** (``LAPLACE_TABLE_MAX < scale <= LAPLACE_CONV_MAX``). Let b = scale,
  a = exp(-1/b) and G ~ Geom(a), P(G = g) = (1 - a) a^g for g >= 0. For an integer m >= 2,
  Q = floor(G / m) and R = G mod m are independent: P(G = m q + r) =
  (1 - a^m) a^(m q) * (1 - a) a^r / (1 - a^m), so Q ~ Geom(a^m) and P(R = r) is proportional
  to a^r on {0, ..., m-1}. The difference of two independent Geom(a) is the discrete Laplace
  of ratio a (P(G1 - G2 = x) = sum_g (1 - a)^2 a^(2g + |x|) = (1 - a)/(1 + a) a^|x|), so with
  G1, G2 independent

      X = G1 - G2 = m D + E,   D = Q1 - Q2 ~ discrete Laplace of scale b / m,   E = R1 - R2,

  D and E independent: an identity in law, no approximation. E lives on [-(m-1), m-1] with
  P(E = e) proportional to sum_{r=0}^{m-1-|e|} a^r a^(r+|e|), i.e. to a^|e| - a^(2m-|e|).
  D is drawn the same way until its scale is at most 4096, then from the table above at its
  exact rational scale; E from a symmetric table with m = min(ceil(sqrt(52 b)), 2^16), which
  balances the two (about sqrt(52 b) outcomes on each side for both).

  E's table: p_j = floor(p_{j-1} a) as above (err(p_j) <= 3j u, j <= 2m), masses
  p_e - p_(2m-e) within 6m u and the centre p_0 - p_(2m); the tail sums are within 6 m^2 u
  and the normaliser within 13 m^2 u. The true normaliser is
  Z_E = (1 - a^m)^2 (1 + a) / (1 - a) >= (2 m^2 / b)(1 - m / (2b))^2 >= m^2 / b (using
  1 - e^-y >= y (1 - y/2), (1 + a)/(1 - a) >= 2b and m <= b/4), so the ratios are known to
  20 m^2 u / Z_E <= 20 b u < 2^-195 for b <= 2^56, and |T - 2^128 C| < 1 + 2^-63 as above.
  Nothing is cut, so TV(E^, E) <= (2m - 1)(1 + 2^-63) 2^-128 < 2^-110.9. With d decomposition
  levels (d = 1 up to b = 8.3e7, d <= 3 up to LAPLACE_CONV_MAX), the triangle inequality gives
  TV(X^, X) <= TV(D^, D) + d 2^-110.9 <= (2K + 1)(1 + 2^-63) 2^-128 + 2^-74 + 3 * 2^-110.9
  < 2^-73 = ``DISTANCE_BOUND``. A draw costs d + 1 table look-ups and d multiply-adds.
* **Rejection** (``scale > LAPLACE_CONV_MAX``, about 7.2e16): CKS Algorithm 2 with the scale as
  the exact rational t/s its float denotes; exact, a Python loop per draw.

scale == 0 returns zeros.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal, localcontext
from fractions import Fraction
from itertools import accumulate
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from .._errors import InternalError, SpecError
from .rng import RandomSource, as_source

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

SIGMA_TABLE_MAX: float = 65536.0
"""Largest sigma served by one table (2^16: K = 655,361, built in about 0.7 s, 43 MB).

Larger sigmas, up to ``SIGMA_CONV_MAX``, are sums of draws from small tables (the convolution
method of the module docstring)."""

SIGMA_CONV_MAX: float = 2.0**56
"""Largest sigma served by the convolution method (about 7.2e16; every draw stays below 2^62).

Larger sigmas use the exact (slow) rejection sampler of Canonne, Kamath & Steinke."""

SCALE_MAX: float = 2.0**57
"""Largest sigma (and discrete Laplace scale) drawn from: about 1.4e17. The draws are int64;
at this scale one falls outside it with probability below exp(-64) (Laplace; far less for the
Gaussian), and noise this large already hides any count."""

CONV_TAIL_T: int = 12
"""Tables of the convolution method cover [-K, K] with K = ceil(CONV_TAIL_T * s) + 1."""

CONV_R_MAX: int = 8192
"""Largest scale of a table of the convolution method (K = 98,305, 2.8 MB with its guide)."""

TAIL_T: int = 10
"""The table covers [-K, K] with K = ceil(TAIL_T * sigma) + 1."""

TAIL_BOUND: float = 2.0**-74
"""Proven upper bound on the probability mass outside [-K, K]: (2/t) exp(-t^2/2) < 2^-74."""

DISTANCE_BOUND: float = 2.0**-73
"""Proven bound on the statistical distance between a table draw and the exact law."""

_FRAC_BITS = 256  # fixed-point precision of the table computation (u = 2^-256)
_DECIMAL_DIGITS = 100  # decimal precision of q = exp(-1/(2 sigma^2)) (error 1e-99 << 2^-256)
_GUIDE_BITS_MAX = 22  # guide tables of at most 2^22 uint32 entries (16 MiB)
_WIDE = np.uint32(1 << 31)  # guide flag: the bucket holds two or more boundaries
_CHUNK = 1 << 18  # draws per vectorised chunk (work arrays stay cache-sized)
_CACHE_MAX_BYTES = 256 << 20  # tables kept for reuse, least recently used evicted first
_M64 = (1 << 64) - 1


@dataclass(frozen=True, eq=False)
class _Table:
    """Inversion table of one sigma: 2K boundaries of 128 bits and a guide over their top bits.

    The discrete Laplace tables have the same layout; their ``sigma`` holds the Laplace scale.
    """

    sigma: float
    k: int  # support is [-k, k]
    hi: npt.NDArray[np.uint64]  # high words of the boundaries T[-k .. k-1], non-decreasing
    lo: npt.NDArray[np.uint64]  # low words
    top: npt.NDArray[np.uint32]  # top 32 bits of each boundary (hi >> 32)
    guide: npt.NDArray[np.uint32]  # per bucket: WIDE flag | count below << shift | bits
    shift: int  # 32 - g: bucket of a 32-bit prefix v is v >> shift

    @property
    def nbytes(self) -> int:
        return self.hi.nbytes + self.lo.nbytes + self.top.nbytes + self.guide.nbytes


# ---------------------------------------------------------------------------------------------
# Argument checking
# ---------------------------------------------------------------------------------------------


def _check_sigma(sigma: object, name: str = "sigma") -> npt.NDArray[np.float64]:
    """Return ``sigma`` (or the Laplace ``scale``, per ``name``) as a float64 array (0-d for a
    scalar), or raise SpecError naming the value."""
    if isinstance(sigma, (bool, np.bool_)):
        raise SpecError(f"{name} must be a non-negative finite number, got {sigma!r}")
    try:
        raw = np.asarray(sigma)
    except (TypeError, ValueError) as exc:  # ragged nested sequences
        raise SpecError(f"{name} must be a number or an array of numbers, got {sigma!r}") from exc
    if raw.dtype.kind not in "iuf":
        raise SpecError(
            f"{name} must be a non-negative finite number or an array of them, got {sigma!r} "
            f"(dtype {raw.dtype})"
        )
    arr = raw.astype(np.float64)
    bad = ~(np.isfinite(arr) & (arr >= 0.0))
    if bad.any():
        if arr.ndim == 0:
            raise SpecError(f"{name} must be a non-negative finite number, got {float(arr)!r}")
        pos = tuple(int(i) for i in np.argwhere(bad)[0])
        raise SpecError(
            f"{name} must be non-negative and finite everywhere, got {float(arr[pos])!r} "
            f"at index {pos if len(pos) > 1 else pos[0]} ({int(bad.sum())} bad values)"
        )
    return arr


def _check_size(size: object) -> tuple[int, ...]:
    if isinstance(size, (bool, np.bool_)):
        raise SpecError(f"size must be None, an int or a tuple of ints, got {size!r}")
    if isinstance(size, (int, np.integer)):
        dims: tuple[object, ...] = (size,)
    elif isinstance(size, tuple):
        dims = size
    else:
        raise SpecError(f"size must be None, an int or a tuple of ints, got {size!r}")
    out = []
    for d in dims:
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)) or d < 0:
            raise SpecError(f"size must contain non-negative ints, got {size!r}")
        out.append(int(d))
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# Table construction (exact integer arithmetic)
# ---------------------------------------------------------------------------------------------


def _support_k(sigma: float) -> int:
    """K = ceil(TAIL_T * sigma) + 1, computed exactly."""
    return math.ceil(TAIL_T * Fraction(sigma)) + 1


def _sqrt_ceil(x: Fraction) -> int:
    """ceil(sqrt(x)) for a rational x >= 0, exactly."""
    c = math.isqrt(x.numerator // x.denominator)  # floor(sqrt(x)) = isqrt(floor(x))
    return c if c * c == x else c + 1


def _support_k_sq(sq: Fraction, t: int) -> int:
    """K = ceil(t * s) + 1 for s = sqrt(sq), computed exactly (equals ``_support_k`` for t = 10)."""
    return _sqrt_ceil(t * t * sq) + 1


def _fixed_exp_neg(a: Fraction) -> int:
    """floor(2^F exp(-a)) up to one unit (error <= 2 * 2^-F in value), for rational a >= 0."""
    if a > 1000:  # exp(-1000) < 2^-1442: zero is within 2^-F
        return 0
    with localcontext() as ctx:
        ctx.prec = _DECIMAL_DIGITS
        value = (-(Decimal(a.numerator) / Decimal(a.denominator))).exp()
        return int(value * (Decimal(2) ** _FRAC_BITS))


def _boundaries(sigma: float) -> tuple[int, npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
    """Return K and the high and low words of T[-K .. K-1] (see the module docstring)."""
    return _gauss_boundaries(Fraction(sigma) ** 2, TAIL_T)


def _gauss_boundaries(
    sq: Fraction, t: int
) -> tuple[int, npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
    """K and the words of T[-K .. K-1] for the exact rational variance ``sq`` and tail ``t``."""
    f = _FRAC_BITS
    k_max = _support_k_sq(sq, t)
    a = 1 / (2 * sq)
    q = _fixed_exp_neg(a)  # q = exp(-1/(2 sigma^2))
    q2 = _fixed_exp_neg(2 * a)  # q^2
    p = 1 << f
    r = q
    probs = [0] * k_max  # probs[j] = p_{j+1} = q^((j+1)^2)
    for j in range(k_max):
        p = (p * r) >> f
        r = (r * q2) >> f
        probs[j] = p
    return k_max, *_symmetric_words(probs)


def _symmetric_words(
    probs: Sequence[int], center: int | None = None
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
    """High and low words of T[-K .. K-1] for a symmetric law on [-K, K].

    ``probs[j]`` is the fixed-point (F bits) unnormalised mass of ``j + 1`` (and of
    ``-(j + 1)``); the mass of 0 is ``center``, ``2^F`` by default. See the module docstring
    for the error analysis.
    """
    f = _FRAC_BITS
    # tails[i] = R_{K-1-i} = sum_{j >= K-i} p_j, i.e. the mass below -(K-1-i) - 1 = i - K.
    tails = list(accumulate(reversed(probs)))
    z = (1 << f if center is None else center) + 2 * tails[-1]
    s = z.bit_length() + 64
    w = (1 << (s + 128)) // z
    neg = [(x * w) >> s for x in tails]  # T[-K .. -1], non-decreasing
    hi_neg = np.array([y >> 64 for y in neg], dtype=np.uint64)
    lo_neg = np.array([y & _M64 for y in neg], dtype=np.uint64)
    m64 = np.uint64(_M64)
    # T[k] = 2^128 - 1 - T[-k-1] for k = 0 .. K-1: in words, (M - hi, M - lo).
    hi = np.concatenate([hi_neg, (m64 - hi_neg)[::-1]])
    lo = np.concatenate([lo_neg, (m64 - lo_neg)[::-1]])
    return hi, lo


def _build_table(sigma: float) -> _Table:
    k_max, hi, lo = _boundaries(sigma)
    return _table_from_boundaries(sigma, k_max, hi, lo, kind="discrete Gaussian", label="sigma")


def _table_from_boundaries(
    param: float,
    k_max: int,
    hi: npt.NDArray[np.uint64],
    lo: npt.NDArray[np.uint64],
    *,
    kind: str,
    label: str,
) -> _Table:
    """The sampling table (guide included) of a symmetric law on [-k_max, k_max].

    ``hi``/``lo`` are the words of the 2 k_max boundaries; ``param`` is the law's scale
    (``sigma`` of the discrete Gaussian, ``scale`` of the discrete Laplace), named ``label``
    in error messages.
    """
    n = hi.size
    # Lexicographic (hi, lo) order must be non-decreasing: the count formula relies on it.
    up = (hi[1:] > hi[:-1]) | ((hi[1:] == hi[:-1]) & (lo[1:] >= lo[:-1]))
    if n != 2 * k_max or n == 0 or not bool(up.all()):
        raise InternalError(f"{kind} table for {label}={param!r} is not sorted")
    g = min(_GUIDE_BITS_MAX, n.bit_length() + 2)
    if n.bit_length() > g - 1:  # counts must fit below the WIDE flag
        raise InternalError(f"guide table too small for {label}={param!r} ({n} boundaries)")
    shift = 32 - g
    mask = np.uint32((1 << shift) - 1)
    top = (hi >> np.uint64(32)).astype(np.uint32)
    counts = np.bincount((top >> np.uint32(shift)).astype(np.intp), minlength=1 << g)
    below = np.zeros(1 << g, dtype=np.int64)
    np.cumsum(counts[:-1], out=below[1:])
    bits = np.full(1 << g, mask, dtype=np.uint32)  # empty bucket: v & mask is never below
    single = counts == 1
    bits[single] = top[below[single]] & mask
    guide = (below.astype(np.uint32) << np.uint32(shift)) | bits
    guide[counts >= 2] |= _WIDE
    for arr in (hi, lo, top, guide):
        arr.flags.writeable = False
    return _Table(sigma=param, k=k_max, hi=hi, lo=lo, top=top, guide=guide, shift=shift)


_cache: OrderedDict[float, _Table] = OrderedDict()
_cache_lock = threading.Lock()


def _cached(cache: OrderedDict[Any, _Table], key: object, build: Callable[[], _Table]) -> _Table:
    """``cache[key]``, built on a miss; the cache is least-recently-used, bounded in bytes."""
    with _cache_lock:
        tab = cache.get(key)
        if tab is not None:
            cache.move_to_end(key)
            return tab
    tab = build()
    with _cache_lock:
        cache[key] = tab
        cache.move_to_end(key)
        total = sum(t.nbytes for t in cache.values())
        while total > _CACHE_MAX_BYTES and len(cache) > 1:
            _, old = cache.popitem(last=False)
            total -= old.nbytes
    return tab


def _table(sigma: float) -> _Table:
    """The table of ``sigma``, from a small least-recently-used cache bounded in bytes."""
    return _cached(_cache, sigma, lambda: _build_table(sigma))


# ---------------------------------------------------------------------------------------------
# Table sampling (vectorised)
# ---------------------------------------------------------------------------------------------


def _words(source: RandomSource, n: int) -> npt.NDArray[np.uint64]:
    """``n`` words of the source as a contiguous native uint64 array (a no-op for ours)."""
    return np.ascontiguousarray(source.words(n), dtype=np.uint64)


def _count_exact(
    tab: _Table, v: npt.NDArray[np.uint32], source: RandomSource
) -> npt.NDArray[np.int64]:
    """#{j : T[j] <= U} for U = v 2^96 + 96 fresh bits: the full 128-bit comparison."""
    m = v.size
    w = _words(source, 2 * m).reshape(m, 2)
    u_hi = (v.astype(np.uint64) << np.uint64(32)) | (w[:, 0] >> np.uint64(32))
    u_lo = (w[:, 0] << np.uint64(32)) | (w[:, 1] >> np.uint64(32))
    left = np.searchsorted(tab.hi, u_hi, side="left").astype(np.int64)
    right = np.searchsorted(tab.hi, u_hi, side="right")
    # Boundaries whose high word equals u_hi: compare the low words (probability <= 2K 2^-64).
    for j in np.flatnonzero(right > left).tolist():
        a, b = int(left[j]), int(right[j])
        left[j] = a + int(np.searchsorted(tab.lo[a:b], u_lo[j], side="right"))
    return left


class _Work:
    """Scratch arrays of one chunk, reused across chunks and tables (fresh memory is slow)."""

    def __init__(self, c: int) -> None:
        self.idx = np.empty(c, dtype=np.intp)
        self.cell = np.empty(c, dtype=np.uint32)
        self.a = np.empty(c, dtype=np.uint32)
        self.b = np.empty(c, dtype=np.uint32)
        self.below = np.empty(c, dtype=np.bool_)
        self.check = np.empty(c, dtype=np.bool_)
        self.flag = np.empty(c, dtype=np.bool_)


def _draw_table(tab: _Table, out: npt.NDArray[np.int64], source: RandomSource) -> None:
    """Fill the 1-d array ``out`` with draws from the table (see the module docstring)."""
    n = out.size
    c = min(n, _CHUNK)
    work = _Work(c)
    for start in range(0, n, c):
        _fill_chunk(tab, out[start : start + min(c, n - start)], source, work)


def _fill_chunk(tab: _Table, o: npt.NDArray[np.int64], source: RandomSource, work: _Work) -> None:
    """Fill ``o`` (at most the size of ``work``) with draws from the table."""
    m = o.size
    shift = np.uint32(tab.shift)
    mask = np.uint32((1 << tab.shift) - 1)
    k = np.int64(tab.k)
    v = _words(source, (m + 1) // 2).view(np.uint32)[:m]  # top 32 bits of each U
    ix, ce, aa, bb = work.idx[:m], work.cell[:m], work.a[:m], work.b[:m]
    bl, ch, fl = work.below[:m], work.check[:m], work.flag[:m]
    np.right_shift(v, shift, out=ix, casting="unsafe")
    np.take(tab.guide, ix, out=ce, mode="clip")
    np.bitwise_and(ce, mask, out=aa)  # remaining bits of the bucket's single boundary
    np.bitwise_and(v, mask, out=bb)  # remaining bits of v
    np.less(aa, bb, out=bl)  # that boundary lies below U
    np.equal(aa, bb, out=ch)  # undecided on 32 bits (or a false alarm, resolved below)
    np.greater_equal(ce, _WIDE, out=fl)
    np.logical_or(ch, fl, out=ch)
    np.right_shift(ce, shift, out=aa)  # boundaries below the bucket
    np.subtract(aa, k, out=o)
    np.add(o, bl, out=o, casting="unsafe")
    sel = np.flatnonzero(ch)
    if sel.size:
        vs = v[sel]
        left = np.searchsorted(tab.top, vs, side="left")
        right = np.searchsorted(tab.top, vs, side="right")
        o[sel] = left - k
        tie = right > left
        if tie.any():
            o[sel[tie]] = _count_exact(tab, vs[tie], source) - k


# ---------------------------------------------------------------------------------------------
# Sums of table draws: the convolution method (Gaussian) and the decomposition (Laplace)
# ---------------------------------------------------------------------------------------------

_INT_BOUND = 1 << 62  # every composed draw stays below this in absolute value
_TAU_SQ_MIN = 4  # tau^2 >= 4: eta < 2^-112 (module docstring)
_LAPLACE_M_MAX = 1 << 16  # largest modulus m of a Laplace decomposition level
_LAPLACE_BOTTOM_MAX = 4096  # decompose the quotient again while its scale exceeds this
_component_cache: OrderedDict[tuple[str, Fraction, int], _Table] = OrderedDict()


@dataclass(frozen=True, eq=False)
class _Level:
    """One level of a composed draw: x <- mult * x + (a draw from ``table``)."""

    mult: int
    table: _Table


@dataclass(frozen=True, eq=False)
class _Composed:
    """A draw is ``bottom``, then each level from the last to the first applied to it."""

    bottom: _Table
    levels: tuple[_Level, ...]  # outermost first
    bound: int  # largest possible |draw|


def _gauss_component(sq: Fraction) -> _Table:
    """The table (tail CONV_TAIL_T) of N_Z(0, sq) for an exact rational variance ``sq``."""

    def build() -> _Table:
        k_max, hi, lo = _gauss_boundaries(sq, CONV_TAIL_T)
        return _table_from_boundaries(
            math.sqrt(sq), k_max, hi, lo, kind="discrete Gaussian component", label="sigma^2"
        )

    return _cached(_component_cache, ("gauss", sq, CONV_TAIL_T), build)


def _conv_split(sq: Fraction) -> tuple[int, Fraction, Fraction]:
    """(k, s2^2, s1^2) with k^2 s1^2 + s2^2 = sq and tau^2 = s1^2 s2^2 / sq >= 4.

    Balanced (s1 = s2, one shared table) while that scale is at most CONV_R_MAX; otherwise
    s2 = CONV_R_MAX and s1 takes the rest (module docstring).
    """
    r_sq = CONV_R_MAX * CONV_R_MAX
    k = math.isqrt(math.isqrt(sq.numerator // (9 * sq.denominator)))  # floor(sqrt(S / 3))
    if k >= 1 and sq <= (k * k + 1) * r_sq:
        sq1 = sq2 = sq / (k * k + 1)
    else:
        k = CONV_R_MAX // 3
        sq2 = Fraction(r_sq)
        sq1 = (sq - sq2) / (k * k)
    if k < 1 or sq1 <= 0 or sq1 * sq2 < _TAU_SQ_MIN * sq:
        raise InternalError(
            f"convolution split of sigma^2={float(sq)!r} fails tau^2 >= {_TAU_SQ_MIN} "
            f"(k={k}, s2^2={float(sq2)!r}); this is a bug, please report it"
        )
    return k, sq2, sq1


def _gauss_splits(sigma: float) -> tuple[list[tuple[int, Fraction]], Fraction]:
    """The (k, s2^2) of each level, outermost first, and the innermost variance s1^2.

    Split once, then again while the inner scale exceeds CONV_R_MAX.
    """
    sq = Fraction(sigma) ** 2
    splits: list[tuple[int, Fraction]] = []
    while not splits or sq > CONV_R_MAX * CONV_R_MAX:
        k, sq2, sq = _conv_split(sq)
        splits.append((k, sq2))
    return splits, sq


def _gauss_plan(sigma: float) -> _Composed:
    """The convolution plan of ``sigma`` (module docstring), its tables built or cached."""
    splits, sq = _gauss_splits(sigma)
    levels = [_Level(k, _gauss_component(sq2)) for k, sq2 in splits]
    return _composed(_gauss_component(sq), levels, f"sigma={sigma!r}")


def _laplace_component(scale: Fraction, m: int) -> _Table:
    """The table of E = R1 - R2 on [-(m-1), m-1]: P(E = e) proportional to a^|e| - a^(2m-|e|).

    R1, R2 independent with P(R = r) proportional to a^r on {0, ..., m-1}, a = exp(-1/scale).
    """

    def build() -> _Table:
        f = _FRAC_BITS
        q = _fixed_exp_neg(1 / scale)  # a = exp(-1/scale)
        p = 1 << f
        powers = [p]  # powers[j] = a^j, j = 0 .. 2m
        for _ in range(2 * m):
            p = (p * q) >> f
            powers.append(p)
        probs = [powers[j] - powers[2 * m - j] for j in range(1, m)]
        hi, lo = _symmetric_words(probs, center=powers[0] - powers[2 * m])
        return _table_from_boundaries(
            float(scale), m - 1, hi, lo, kind="difference of truncated geometrics", label="scale"
        )

    return _cached(_component_cache, ("geometric difference", scale, m), build)


def _laplace_bottom(scale: Fraction) -> _Table:
    """The symmetric discrete Laplace table of an exact rational ``scale``."""

    def build() -> _Table:
        k_max, hi, lo = _laplace_boundaries(scale)
        return _table_from_boundaries(
            float(scale), k_max, hi, lo, kind="discrete Laplace", label="scale"
        )

    return _cached(_component_cache, ("laplace", scale, LAPLACE_TAIL_BITS), build)


def _laplace_splits(scale: float) -> list[tuple[Fraction, int]]:
    """The (scale, m) of each decomposition level, outermost first.

    X = m D + R1 - R2 with D of scale b/m, decomposed again while its scale exceeds 4096; the
    innermost D has scale b_d / m_d.
    """
    b = Fraction(scale)
    splits: list[tuple[Fraction, int]] = []
    while not splits or b > _LAPLACE_BOTTOM_MAX:
        m = max(2, min(_sqrt_ceil(52 * b), _LAPLACE_M_MAX))
        splits.append((b, m))
        b = b / m
    return splits


def _laplace_plan(scale: float) -> _Composed:
    """The decomposition plan of ``scale`` (module docstring), its tables built or cached."""
    splits = _laplace_splits(scale)
    levels = [_Level(m, _laplace_component(b, m)) for b, m in splits]
    b, m = splits[-1]
    return _composed(_laplace_bottom(b / m), levels, f"scale={scale!r}")


def _composed(bottom: _Table, levels: Sequence[_Level], what: str) -> _Composed:
    bound = bottom.k
    for lev in reversed(levels):
        bound = bound * lev.mult + lev.table.k
    if bound >= _INT_BOUND:
        raise InternalError(f"composed draws for {what} could exceed 2^62; this is a bug")
    return _Composed(bottom=bottom, levels=tuple(levels), bound=bound)


def _draw_composed(plan: _Composed, out: npt.NDArray[np.int64], source: RandomSource) -> None:
    """Fill ``out`` with composed draws, chunk by chunk (bounded memory)."""
    n = out.size
    c = min(n, _CHUNK)
    work = _Work(c)
    tmp = np.empty(c, dtype=np.int64)
    for start in range(0, n, c):
        m = min(c, n - start)
        o, t = out[start : start + m], tmp[:m]
        _fill_chunk(plan.bottom, o, source, work)
        for lev in reversed(plan.levels):
            np.multiply(o, lev.mult, out=o)
            _fill_chunk(lev.table, t, source, work)
            np.add(o, t, out=o)


# ---------------------------------------------------------------------------------------------
# Exact rejection sampler of Canonne, Kamath & Steinke (2020), for sigma > SIGMA_CONV_MAX
# ---------------------------------------------------------------------------------------------

_REFILL_WORDS = 64


class _Bits:
    """Uniform random bits and integers from a RandomSource, for the rejection sampler."""

    def __init__(self, source: RandomSource) -> None:
        self._source = source
        self._buf = 0
        self._nbits = 0

    def bits(self, k: int) -> int:
        while self._nbits < k:
            words = self._source.words(_REFILL_WORDS)
            self._buf |= int.from_bytes(words.astype("<u8").tobytes(), "little") << self._nbits
            self._nbits += 64 * _REFILL_WORDS
        r = self._buf & ((1 << k) - 1)
        self._buf >>= k
        self._nbits -= k
        return r

    def below(self, m: int) -> int:
        """Uniform integer in [0, m), by rejection."""
        if m == 1:
            return 0
        k = (m - 1).bit_length()
        while True:
            r = self.bits(k)
            if r < m:
                return r

    def bernoulli_exp(self, num: int, den: int) -> bool:
        """Bernoulli(exp(-num/den)) for integers num >= 0, den > 0 (CKS Algorithm 1)."""
        while num > den:  # exp(-gamma) = exp(-1)^floor(gamma) * exp(-(gamma - floor(gamma)))
            if not self._bernoulli_exp_le1(1, 1):
                return False
            num -= den
        return self._bernoulli_exp_le1(num, den)

    def _bernoulli_exp_le1(self, num: int, den: int) -> bool:
        # K <- 1; while Bernoulli(gamma / K): K <- K + 1; return K odd.
        k = 1
        while self.below(den * k) < num:
            k += 1
        return k % 2 == 1

    def discrete_laplace(self, t: int) -> int:
        """P(Y = y) proportional to exp(-|y|/t), for an integer t >= 1 (CKS Algorithm 2)."""
        while True:
            u = self.below(t)
            if not self.bernoulli_exp(u, t):
                continue
            v = 0
            while self.bernoulli_exp(1, 1):
                v += 1
            x = u + t * v
            negative = self.bits(1) == 1
            if negative and x == 0:
                continue
            return -x if negative else x

    def discrete_gaussian(self, sigma: float) -> int:
        """Exact N_Z(0, sigma^2) draw (CKS Algorithm 3), sigma^2 the square of the float."""
        sq = Fraction(sigma) ** 2
        a, b = sq.numerator, sq.denominator  # sigma^2 = a / b
        t = math.floor(sigma) + 1
        while True:
            y = self.discrete_laplace(t)
            # gamma = (|y| - sigma^2/t)^2 / (2 sigma^2) = (|y| b t - a)^2 / (2 a b t^2)
            if self.bernoulli_exp((abs(y) * b * t - a) ** 2, 2 * a * b * t * t):
                return y


def _draw_rejection(sigma: float, out: npt.NDArray[np.int64], source: RandomSource) -> None:
    bits = _Bits(source)
    for i in range(out.size):
        out[i] = bits.discrete_gaussian(sigma)


# ---------------------------------------------------------------------------------------------
# Public functions
# ---------------------------------------------------------------------------------------------


def _too_large(name: str, value: float) -> SpecError:
    return SpecError(
        f"{name} must be at most 2**57 (about 1.4e17) so that every draw fits int64, got "
        f"{value!r}; noise that large hides any count: check the budget it was computed from",
        param=name,
    )


def _draw(sigma: float, out: npt.NDArray[np.int64], source: RandomSource) -> None:
    if sigma > SCALE_MAX:
        raise _too_large("sigma", sigma)
    if out.size == 0 or sigma == 0.0:
        out[:] = 0
    elif sigma <= SIGMA_TABLE_MAX:
        _draw_table(_table(sigma), out, source)
    elif sigma <= SIGMA_CONV_MAX:
        _draw_composed(_gauss_plan(sigma), out, source)
    else:
        _draw_rejection(sigma, out, source)


def draw_discrete_gaussian(
    sigma: float, size: int, *, source: RandomSource
) -> npt.NDArray[np.int64]:
    """``size`` draws of N_Z(0, sigma^2) from ``source``: the library's own entry point.

    The mechanisms hold a :class:`~inftda_sql.core.rng.RandomSource` built once per release
    from the user's ``seed=`` (:func:`~inftda_sql.core.rng.as_source`, which accepts only None,
    an int or a numpy Generator); they pass it here, never through the user-facing ``rng=`` of
    :func:`sample_discrete_gaussian`. ``sigma`` is checked as there.
    """
    arr = _check_sigma(sigma)
    if arr.ndim != 0:
        raise SpecError(f"sigma must be one number here, got shape {arr.shape}")
    out = np.empty(math.prod(_check_size(size)), dtype=np.int64)
    _draw(float(arr), out, source)
    return out


@overload
def sample_discrete_gaussian(
    sigma: float | np.floating[Any] | np.integer[Any], size: None = None, *, rng: object = None
) -> np.int64: ...
@overload
def sample_discrete_gaussian(
    sigma: float | np.floating[Any] | np.integer[Any],
    size: int | tuple[int, ...],
    *,
    rng: object = None,
) -> npt.NDArray[np.int64]: ...
@overload
def sample_discrete_gaussian(
    sigma: npt.NDArray[Any] | Sequence[Any],
    size: int | tuple[int, ...] | None = None,
    *,
    rng: object = None,
) -> npt.NDArray[np.int64]: ...


def sample_discrete_gaussian(
    sigma: npt.ArrayLike, size: int | tuple[int, ...] | None = None, *, rng: object = None
) -> npt.NDArray[np.int64] | np.int64:
    """Draw exact discrete Gaussian noise N_Z(0, sigma^2).

    P(X = x) is proportional to exp(-x^2 / (2 sigma^2)) over all integers, with sigma^2 the
    exact square of the float64 ``sigma``. Up to ``SIGMA_TABLE_MAX`` the draws come from a
    128-bit inversion table within statistical distance 2^-73 of that law; up to
    ``SIGMA_CONV_MAX`` (about 7.2e16) from sums k X1 + X2 of draws from small tables, within
    2^-102; above that from the exact rejection sampler of Canonne, Kamath & Steinke (slow).
    All of them are vectorised except the last. See the module docstring.

    Args:
        sigma: The scale, a finite number >= 0, or an array of them (one per draw). 0 gives 0.
        size: Output shape for a scalar ``sigma`` (None: a single ``np.int64``; a 0-d array
            ``sigma`` gives a 0-d array). For an array ``sigma`` it must be None or equal to
            ``sigma``'s shape.
        rng: None (default) for the operating system's CSPRNG; an int seed or a
            ``numpy.random.Generator`` for reproducible, non-cryptographic draws (tests only).

    Returns:
        An ``np.int64`` (scalar ``sigma``, ``size=None``) or an int64 array.

    Raises:
        SpecError: sigma negative, NaN, infinite or not numeric; bad ``size``; bad ``rng``.

    Example:
        >>> sample_discrete_gaussian(0.0)
        np.int64(0)
        >>> sample_discrete_gaussian([0.0, 0.0, 0.0]).tolist()
        [0, 0, 0]
        >>> sample_discrete_gaussian(3.0, size=4, rng=7).dtype
        dtype('int64')
    """
    arr = _check_sigma(sigma)
    if arr.ndim == 0:
        if size is not None:
            shape: tuple[int, ...] | None = _check_size(size)
        else:  # a number gives a number; a 0-d array gives a 0-d array
            shape = () if isinstance(sigma, np.ndarray) else None
        source = as_source(rng)
        out = np.empty(1 if shape is None else math.prod(shape), dtype=np.int64)
        _draw(float(arr), out, source)
        return out[0] if shape is None else out.reshape(shape)
    if size is not None and (dims := _check_size(size)) != arr.shape:
        raise SpecError(
            f"size {dims} does not match the shape {arr.shape} of the sigma array; "
            "pass size=None to draw one value per sigma"
        )
    source = as_source(rng)
    out = np.empty(arr.size, dtype=np.int64)
    _draw_grouped(arr.ravel(), out, source)
    return out.reshape(arr.shape)


_PEEL_MAX = 8  # distinct sigmas split off by masking before falling back to sorting


def _draw_grouped(
    sigmas: npt.NDArray[np.float64],
    out: npt.NDArray[np.int64],
    source: RandomSource,
    draw: Callable[[float, npt.NDArray[np.int64], RandomSource], None] | None = None,
) -> None:
    """One draw per sigma, each group of equal sigmas sampled in one vectorised call of
    ``draw`` (the discrete Gaussian's ``_draw`` by default, ``_draw_laplace`` for Laplace
    scales).

    The first few distinct values are split off with one comparison pass each (cheap for the
    usual handful of levels); any further ones are grouped with ``np.unique`` and a sort.
    """
    if draw is None:
        draw = _draw
    todo: npt.NDArray[np.intp] | None = None  # positions still to draw; None means all
    for _ in range(_PEEL_MAX):
        rest = sigmas if todo is None else sigmas[todo]
        if rest.size == 0:
            return
        value = float(rest[0])
        same = rest == value
        if todo is None and bool(same.all()):
            draw(value, out, source)
            return
        where = np.flatnonzero(same) if todo is None else todo[same]
        draws = np.empty(where.size, dtype=np.int64)
        draw(value, draws, source)
        out[where] = draws
        np.logical_not(same, out=same)
        todo = np.flatnonzero(same) if todo is None else todo[same]
    if todo is None or todo.size == 0:
        return
    values, inverse = np.unique(sigmas[todo], return_inverse=True)
    order = todo[np.argsort(inverse.ravel(), kind="stable")]
    ends = np.cumsum(np.bincount(inverse.ravel(), minlength=values.size))
    draws = np.empty(order.size, dtype=np.int64)
    start = 0
    for value, end in zip(values.tolist(), ends.tolist(), strict=True):
        draw(value, draws[start:end], source)
        start = end
    out[order] = draws


def _normaliser(sigma: float) -> float:
    """Z = sum_x exp(-x^2/(2 sigma^2)) in float64 (relative error ~1e-16)."""
    if sigma >= 1.0:  # Poisson summation: Z = sigma sqrt(2 pi) sum_k exp(-2 pi^2 sigma^2 k^2)
        c = 2.0 * math.pi**2 * sigma * sigma
        theta = 1.0 + 2.0 * sum(math.exp(-c * j * j) for j in (1, 2, 3))
        return sigma * math.sqrt(2.0 * math.pi) * theta
    xs = np.arange(1, 64, dtype=np.float64)
    return 1.0 + 2.0 * float(np.exp(-(xs * xs) / (2.0 * sigma * sigma)).sum())


def _integer_points(x: npt.ArrayLike) -> tuple[npt.NDArray[np.float64], bool]:
    """``x`` as float64 (checked to hold only integers) and whether it was a scalar int."""
    scalar = isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))
    xa = np.asarray(x)
    if xa.dtype.kind not in "iuf" or not bool(np.all(np.isfinite(xa) & (xa == np.round(xa)))):
        raise SpecError(f"x must be an integer or an array of integers, got {x!r}")
    return xa.astype(np.float64), scalar


@overload
def discrete_gaussian_pmf(x: int, sigma: float) -> float: ...
@overload
def discrete_gaussian_pmf(x: npt.ArrayLike, sigma: float) -> npt.NDArray[np.float64]: ...


def discrete_gaussian_pmf(x: npt.ArrayLike, sigma: float) -> npt.NDArray[np.float64] | float:
    """The probability mass function of N_Z(0, sigma^2) in float64.

    Accurate to a few units in the last place (the normaliser uses Poisson summation for
    sigma >= 1 and a direct sum below), for checking samples and for users' error estimates.

    Args:
        x: An integer or an array of integers.
        sigma: The scale, a finite number >= 0 (0 is the point mass at 0).

    Returns:
        A float for an int ``x``, otherwise a float64 array of ``x``'s shape.

    Raises:
        SpecError: bad ``sigma``, or ``x`` not integral.

    Example:
        >>> round(discrete_gaussian_pmf(0, 1.0), 6)
        0.398942
        >>> discrete_gaussian_pmf([-1, 0, 1], 0.0).tolist()
        [0.0, 1.0, 0.0]
    """
    s = _check_sigma(sigma)
    if s.ndim != 0:
        raise SpecError(f"sigma must be a single number here, got an array of shape {s.shape}")
    sig = float(s)
    xf, scalar = _integer_points(x)
    if sig == 0.0:
        res = (xf == 0.0).astype(np.float64)
    else:
        res = np.exp(-(xf * xf) / (2.0 * sig * sig)) / _normaliser(sig)
    return float(res) if scalar else res


# ---------------------------------------------------------------------------------------------
# Discrete Laplace (two-sided geometric)
# ---------------------------------------------------------------------------------------------

LAPLACE_TABLE_MAX: float = 16384.0
"""Largest discrete Laplace scale served by one table (2^14: K = 851,741, built in about a
second, 48 MB). Larger scales, up to ``LAPLACE_CONV_MAX``, are sums of draws from small tables
(the decomposition of the module docstring)."""

LAPLACE_CONV_MAX: float = 2.0**56
"""Largest discrete Laplace scale served by the decomposition (about 7.2e16). Larger scales use
the exact rejection sampler of Canonne, Kamath & Steinke (Algorithm 2), a Python loop per draw."""

LAPLACE_TAIL_BITS: int = 75
"""The Laplace table covers [-K, K] with alpha^(K+1) < 2^-LAPLACE_TAIL_BITS."""

_laplace_cache: OrderedDict[float, _Table] = OrderedDict()


def _laplace_support_k(scale: float | Fraction) -> int:
    """K = ceil(75 ln(2) scale) + 1, so (K + 1) / scale > 75 ln 2: alpha^(K+1) < 2^-75.

    The product is computed in 60-digit decimal arithmetic; the ``+ 1`` absorbs its rounding.
    """
    fr = Fraction(scale)
    with localcontext() as ctx:
        ctx.prec = 60
        value = Decimal(fr.numerator) / Decimal(fr.denominator) * LAPLACE_TAIL_BITS
        value *= Decimal(2).ln()
        return int(value.to_integral_value(rounding="ROUND_CEILING")) + 1


def _laplace_boundaries(
    scale: float | Fraction,
) -> tuple[int, npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
    """K and the words of T[-K .. K-1] for the discrete Laplace of ``scale`` (module docstring)."""
    f = _FRAC_BITS
    k_max = _laplace_support_k(scale)
    q = _fixed_exp_neg(1 / Fraction(scale))  # alpha = exp(-1/scale)
    p = 1 << f
    probs = [0] * k_max  # probs[j] = alpha^(j+1)
    for j in range(k_max):
        p = (p * q) >> f
        probs[j] = p
    return k_max, *_symmetric_words(probs)


def _build_laplace_table(scale: float) -> _Table:
    k_max, hi, lo = _laplace_boundaries(scale)
    return _table_from_boundaries(scale, k_max, hi, lo, kind="discrete Laplace", label="scale")


def _laplace_table(scale: float) -> _Table:
    """The table of ``scale``, from its own least-recently-used cache bounded in bytes."""
    return _cached(_laplace_cache, scale, lambda: _build_laplace_table(scale))


def _laplace_rational(bits: _Bits, t: int, s: int) -> int:
    """An exact draw with P(Y = y) proportional to exp(-|y| s / t) (CKS 2020, Algorithm 2).

    X = U + t V with U uniform on {0 .. t-1} kept with probability exp(-U/t) and V geometric
    (Bernoulli(exp(-1)) trials) is geometric with ratio exp(-1/t); floor(X / s) is geometric
    with ratio exp(-s/t); a fair sign, rejecting "-0", makes it two-sided.
    """
    while True:
        u = bits.below(t)
        if not bits.bernoulli_exp(u, t):
            continue
        v = 0
        while bits.bernoulli_exp(1, 1):
            v += 1
        y = (u + t * v) // s
        negative = bits.bits(1) == 1
        if negative and y == 0:
            continue
        return -y if negative else y


def _draw_laplace(scale: float, out: npt.NDArray[np.int64], source: RandomSource) -> None:
    if scale > SCALE_MAX:
        raise _too_large("scale", scale)
    if out.size == 0 or scale == 0.0:
        out[:] = 0
    elif scale <= LAPLACE_TABLE_MAX:
        _draw_table(_laplace_table(scale), out, source)
    elif scale <= LAPLACE_CONV_MAX:
        _draw_composed(_laplace_plan(scale), out, source)
    else:
        fr = Fraction(scale)
        bits = _Bits(source)
        for i in range(out.size):
            out[i] = _laplace_rational(bits, fr.numerator, fr.denominator)


def _check_scale(scale: object) -> float:
    if isinstance(scale, (bool, np.bool_)) or not isinstance(
        scale, (int, float, np.integer, np.floating)
    ):
        raise SpecError(f"scale must be a non-negative finite number, got {scale!r}")
    value = float(scale)
    if not (math.isfinite(value) and value >= 0.0):
        raise SpecError(f"scale must be a non-negative finite number, got {value!r}")
    return value


def draw_discrete_laplace(
    scale: float, size: int, *, source: RandomSource
) -> npt.NDArray[np.int64]:
    """``size`` discrete Laplace draws of ``scale`` from ``source`` (the library's own entry
    point; see :func:`draw_discrete_gaussian`)."""
    b = _check_scale(scale)
    out = np.empty(math.prod(_check_size(size)), dtype=np.int64)
    _draw_laplace(b, out, source)
    return out


@overload
def sample_discrete_laplace(
    scale: float | np.floating[Any] | np.integer[Any], size: None = None, *, rng: object = None
) -> np.int64: ...
@overload
def sample_discrete_laplace(
    scale: float | np.floating[Any] | np.integer[Any],
    size: int | tuple[int, ...],
    *,
    rng: object = None,
) -> npt.NDArray[np.int64]: ...
@overload
def sample_discrete_laplace(
    scale: npt.NDArray[Any] | Sequence[Any],
    size: int | tuple[int, ...] | None = None,
    *,
    rng: object = None,
) -> npt.NDArray[np.int64]: ...


def sample_discrete_laplace(
    scale: npt.ArrayLike,
    size: int | tuple[int, ...] | None = None,
    *,
    rng: object = None,
) -> npt.NDArray[np.int64] | np.int64:
    """Draw exact discrete Laplace (two-sided geometric) noise of ``scale``.

    P(X = x) = (1 - a) / (1 + a) * a^|x| with a = exp(-1/scale), over all integers, ``scale``
    read as the exact rational its float denotes. Up to ``LAPLACE_TABLE_MAX`` the draws come
    from a 128-bit inversion table within statistical distance 2^-73 of that law (the same
    construction and bound as the discrete Gaussian's table); up to ``LAPLACE_CONV_MAX``
    (about 7.2e16) from the exact identity X = m D + E with D and E drawn from small tables,
    within the same 2^-73; above that from the exact rejection sampler of Canonne, Kamath &
    Steinke (slow). See the module docstring.

    Args:
        scale: The scale b, a finite number >= 0 (0 gives 0), or an array of them (one per
            draw, each group of equal scales drawn in one vectorised call). The variance is
            2a / (1-a)^2.
        size: Output shape for a scalar ``scale`` (None: a single ``np.int64``). For an array
            ``scale`` it must be None or equal to ``scale``'s shape.
        rng: None (default) for the operating system's CSPRNG; an int seed or a
            ``numpy.random.Generator`` for reproducible, non-cryptographic draws (tests only).

    Returns:
        An ``np.int64`` (scalar ``scale``, ``size=None``) or an int64 array.

    Raises:
        SpecError: scale negative, NaN, infinite or not a number; bad ``size``; bad ``rng``.

    Example:
        >>> sample_discrete_laplace(0.0)
        np.int64(0)
        >>> sample_discrete_laplace(2.0, size=3, rng=7).dtype
        dtype('int64')
        >>> sample_discrete_laplace([0.0, 0.0]).tolist()
        [0, 0]
    """
    if np.ndim(scale) > 0:
        arr = _check_sigma(scale, "scale")
        if size is not None and (dims := _check_size(size)) != arr.shape:
            raise SpecError(
                f"size {dims} does not match the shape {arr.shape} of the scale array; "
                "pass size=None to draw one value per scale"
            )
        source = as_source(rng)
        draws = np.empty(arr.size, dtype=np.int64)
        _draw_grouped(arr.ravel(), draws, source, _draw_laplace)
        return draws.reshape(arr.shape)
    b = _check_scale(scale)
    shape = None if size is None else _check_size(size)
    source = as_source(rng)
    out = np.empty(1 if shape is None else math.prod(shape), dtype=np.int64)
    _draw_laplace(b, out, source)
    return out[0] if shape is None else out.reshape(shape)


@overload
def discrete_laplace_pmf(x: int, scale: float) -> float: ...
@overload
def discrete_laplace_pmf(x: npt.ArrayLike, scale: float) -> npt.NDArray[np.float64]: ...


def discrete_laplace_pmf(x: npt.ArrayLike, scale: float) -> npt.NDArray[np.float64] | float:
    """The probability mass function of the discrete Laplace of ``scale`` in float64.

    Args:
        x: An integer or an array of integers.
        scale: The scale, a finite number >= 0 (0 is the point mass at 0).

    Returns:
        A float for an int ``x``, otherwise a float64 array of ``x``'s shape.

    Raises:
        SpecError: bad ``scale``, or ``x`` not integral.

    Example:
        >>> round(discrete_laplace_pmf(0, 1.0), 6)
        0.462117
        >>> discrete_laplace_pmf([-1, 0, 1], 0.0).tolist()
        [0.0, 1.0, 0.0]
    """
    b = _check_scale(scale)
    xf, is_scalar = _integer_points(x)
    xf = np.abs(xf)
    if b == 0.0:
        res = (xf == 0.0).astype(np.float64)
    else:
        one_minus_a = -math.expm1(-1.0 / b)
        res = one_minus_a / (2.0 - one_minus_a) * np.exp(-xf / b)
    return float(res) if is_scalar else res
