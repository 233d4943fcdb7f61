"""The exact rejection sampler of Canonne, Kamath & Steinke (NeurIPS 2020, Algorithms 1-3), for
scales above ``SIGMA_CONV_MAX``: its output law is exact.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from ..rng import RandomSource

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
