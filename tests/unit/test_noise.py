"""Tests of the exact discrete Gaussian sampler (inftda_sql.core.noise)."""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import math
from collections.abc import Callable
from decimal import Decimal, localcontext
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from scipy import stats

from inftda_sql._errors import SpecError
from inftda_sql.core import noise as _noise
from inftda_sql.core import rng as rng_module
from inftda_sql.core.noise import (
    CONV_R_MAX,
    CONV_TAIL_T,
    DISTANCE_BOUND,
    LAPLACE_CONV_MAX,
    LAPLACE_TABLE_MAX,
    SIGMA_CONV_MAX,
    SIGMA_TABLE_MAX,
    TAIL_BOUND,
    TAIL_T,
    discrete_gaussian_pmf,
    discrete_laplace_pmf,
    sample_discrete_gaussian,
    sample_discrete_laplace,
)
from inftda_sql.core.noise import composed as _composed
from inftda_sql.core.noise import gaussian as _gaussian
from inftda_sql.core.noise import laplace as _laplace
from inftda_sql.core.noise import rejection as _rejection
from inftda_sql.core.noise import tables as _tables
from inftda_sql.core.rng import RandomSource, SeededSource

P_FLOOR = 1e-4
M32 = (1 << 32) - 1


# ------------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------------


def _pooled_bins(expected: npt.NDArray[np.float64], min_expected: float) -> npt.NDArray[np.intp]:
    """Bin label per integer: consecutive integers merged until each bin expects >= min_expected."""
    labels = np.empty(expected.size, dtype=np.intp)
    label, acc = 0, 0.0
    for i, e in enumerate(expected.tolist()):
        labels[i] = label
        acc += e
        if acc >= min_expected:
            label, acc = label + 1, 0.0
    if acc < min_expected and label > 0:  # leftover right tail joins the last full bin
        labels[labels == label] = label - 1
    return labels


def _chisq_gof(samples: npt.NDArray[np.int64], sigma: float, min_expected: float = 5.0) -> float:
    """p-value of Pearson's chi-square test of the samples against the exact pmf."""
    n = samples.size
    half = max(int(np.abs(samples).max()), math.ceil(12 * sigma) + 2)
    xs = np.arange(-half, half + 1)
    expected = discrete_gaussian_pmf(xs, sigma) * n
    expected *= n / expected.sum()  # mass outside +-half is below 1e-30
    observed = np.bincount(samples + half, minlength=xs.size).astype(np.float64)
    labels = _pooled_bins(expected, min_expected)
    obs = np.bincount(labels, weights=observed)
    exp = np.bincount(labels, weights=expected)
    chi2 = float(((obs - exp) ** 2 / exp).sum())
    return float(stats.chi2.sf(chi2, df=obs.size - 1))


def _exact_moments(sigma: float) -> tuple[float, float]:
    """E[X^2] and E[X^4] of the discrete Gaussian (its mean is 0)."""
    half = math.ceil(12 * sigma) + 2
    xs = np.arange(-half, half + 1, dtype=np.float64)
    p = discrete_gaussian_pmf(xs, sigma)
    return float((xs**2 * p).sum()), float((xs**4 * p).sum())


def _boundaries(tab: _tables._Table) -> list[int]:
    return [
        (int(h) << 64) | int(lo) for h, lo in zip(tab.hi.tolist(), tab.lo.tolist(), strict=True)
    ]


class _ScriptedSource:
    """A RandomSource replaying given word arrays in order; other requests get seeded words.

    The next scripted array is served when its length is the number of words asked for.
    """

    seeded = True

    def __init__(self, *scripted: npt.NDArray[np.uint64]) -> None:
        self._queue = list(scripted)
        self._gen = np.random.Generator(np.random.Philox(99))
        self.log: list[npt.NDArray[np.uint64]] = []

    def words(self, n: int) -> npt.NDArray[np.uint64]:
        if self._queue and self._queue[0].size == n:
            w = self._queue.pop(0)
        else:
            w = self._gen.integers(0, 2**64, size=n, dtype=np.uint64, endpoint=False)
        self.log.append(w.copy())
        return w


# ------------------------------------------------------------------------------------------------
# goodness of fit
# ------------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("sigma", [0.5, 1.0, 3.7, 100.0, 1e4])
def test_chi_square_seeded(sigma: float) -> None:
    x = sample_discrete_gaussian(sigma, size=1_000_000, rng=20240611)
    assert _chisq_gof(x, sigma) > P_FLOOR


@pytest.mark.slow
def test_chi_square_csprng() -> None:
    x = sample_discrete_gaussian(3.7, size=1_000_000)
    assert _chisq_gof(x, 3.7) > P_FLOOR


@pytest.mark.slow
def test_chi_square_rejection_fallback_small_sigma(monkeypatch: pytest.MonkeyPatch) -> None:
    """The exact CKS sampler, forced on a small sigma where many bins can be tested."""
    monkeypatch.setattr(_gaussian, "SIGMA_TABLE_MAX", 1.0)
    monkeypatch.setattr(_gaussian, "SIGMA_CONV_MAX", 1.0)
    called: list[float] = []
    real = _rejection._draw_rejection

    def spy(sigma: float, out: npt.NDArray[np.int64], source: object) -> None:
        called.append(sigma)
        real(sigma, out, source)  # type: ignore[arg-type]

    monkeypatch.setattr(_gaussian, "_draw_rejection", spy)
    x = sample_discrete_gaussian(3.7, size=100_000, rng=5)
    assert called == [3.7]
    assert _chisq_gof(x, 3.7) > P_FLOOR


@pytest.mark.slow
def test_chi_square_above_table_limit() -> None:
    sigma = 3.0 * SIGMA_TABLE_MAX + 0.25
    x = sample_discrete_gaussian(sigma, size=20_000, rng=11)
    assert _chisq_gof(x, sigma, min_expected=50.0) > P_FLOOR


@pytest.mark.slow
@pytest.mark.parametrize("sigma", [0.5, 3.7, 100.0])
def test_mean_variance_symmetry(sigma: float) -> None:
    n = 1_000_000
    x = sample_discrete_gaussian(sigma, size=n, rng=3)
    var, mu4 = _exact_moments(sigma)
    assert abs(x.mean()) < 5 * math.sqrt(var / n)
    assert abs(x.var() - var) < 5 * math.sqrt((mu4 - var * var) / n)
    # symmetry: given |X| = k > 0 the sign is a fair coin, jointly over k
    half = int(np.abs(x).max())
    c = np.bincount(x + half, minlength=2 * half + 1)
    pos, neg = c[half + 1 :], c[:half][::-1]
    keep = (pos + neg) >= 10
    chi2 = float((((pos - neg)[keep]) ** 2 / (pos + neg)[keep]).sum())
    assert stats.chi2.sf(chi2, df=int(keep.sum())) > P_FLOOR


@pytest.mark.slow
def test_opendp_two_sample() -> None:
    """Two-sample chi-square against OpenDP's exact integer Gaussian (an independent sampler)."""
    dp = pytest.importorskip("opendp.prelude")
    dp.enable_features("contrib")
    n = 50_000
    for sigma in (3.7, 40.0):
        meas = dp.m.make_gaussian(
            dp.vector_domain(dp.atom_domain(T=int)), dp.l2_distance(T=int), sigma
        )
        theirs = np.asarray(meas([0] * n), dtype=np.int64)
        ours = sample_discrete_gaussian(sigma, size=n, rng=17)
        half = int(max(np.abs(theirs).max(), np.abs(ours).max()))
        xs = np.arange(-half, half + 1)
        labels = _pooled_bins(discrete_gaussian_pmf(xs, sigma) * n, 10.0)
        table = np.stack(
            [
                np.bincount(labels, weights=np.bincount(a + half, minlength=xs.size))
                for a in (ours, theirs)
            ]
        )
        assert stats.chi2_contingency(table).pvalue > P_FLOOR


# ------------------------------------------------------------------------------------------------
# the table and its bounds
# ------------------------------------------------------------------------------------------------


def test_tail_bound_constant() -> None:
    t = TAIL_T
    with localcontext() as ctx:
        ctx.prec = 50
        bound = Decimal(2) / t * (Decimal(-t * t) / 2).exp()
        assert bound < Decimal(2) ** -74
    assert float(bound) <= TAIL_BOUND
    # The distance bound of the docstring at the largest table.
    k = _tables._support_k(SIGMA_TABLE_MAX)
    assert (2 * k + 1) * (1 + 2.0**-63) * 2.0**-128 + TAIL_BOUND <= DISTANCE_BOUND
    assert DISTANCE_BOUND < 2.0**-64
    assert _tables._support_k(SIGMA_TABLE_MAX) + 2 <= 2**20  # the table error analysis needs it


@pytest.mark.parametrize("sigma", [0.5, 1.0, 3.7, 100.0])
def test_actual_tail_mass_below_bound(sigma: float) -> None:
    k = _tables._support_k(sigma)
    with localcontext() as ctx:
        ctx.prec = 60
        s2 = Decimal(Fraction(sigma).numerator) / Decimal(Fraction(sigma).denominator)
        s2 = 2 * s2 * s2
        z = 1 + 2 * sum((Decimal(-x * x) / s2).exp() for x in range(1, 3 * k))
        tail = 2 * sum((Decimal(-x * x) / s2).exp() for x in range(k + 1, 3 * k))
        assert tail / z < Decimal(TAIL_BOUND)


@pytest.mark.parametrize("sigma", [0.5, 1.0, 3.7, 25.0, 0.1])
def test_table_matches_independent_high_precision(sigma: float) -> None:
    """Each boundary is within 2 units of 2^128 C(k) (C the CDF truncated to [-K, K])."""
    tab = _tables._table(sigma)
    k = tab.k
    assert k == math.ceil(TAIL_T * Fraction(sigma)) + 1
    t = _boundaries(tab)
    assert len(t) == 2 * k
    with localcontext() as ctx:
        ctx.prec = 80
        fr = Fraction(sigma)
        two_s2 = 2 * Decimal(fr.numerator) ** 2 / Decimal(fr.denominator) ** 2
        p = [(Decimal(-x * x) / two_s2).exp() for x in range(-k, k + 1)]  # direct, no recurrence
        z = sum(p)
        cdf = Decimal(0)
        scale = Decimal(2) ** 128
        for j in range(2 * k):  # boundary j is T[j - k]
            cdf += p[j]
            assert abs(Decimal(t[j]) - scale * cdf / z) < 2
        # probabilities of outcomes, to 2^-100 (in fact to 2^-126)
        padded = [0, *t, 1 << 128]
        for j in range(2 * k + 1):
            prob = Decimal(padded[j + 1] - padded[j]) / scale
            assert abs(prob - p[j] / z) < Decimal(2) ** -100


def test_table_is_symmetric_and_sorted() -> None:
    tab = _tables._table(100.0)
    t = _boundaries(tab)
    assert all(a <= b for a, b in itertools.pairwise(t))
    n = len(t)
    assert all(t[j] + t[n - 1 - j] == (1 << 128) - 1 for j in range(n))
    assert not tab.hi.flags.writeable


def test_table_cache_reuses_and_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _tables._table(7.25) is _tables._table(7.25)
    monkeypatch.setattr(_tables, "_CACHE_MAX_BYTES", 1)
    _tables._table(7.5)
    assert list(_tables._cache) == [7.5]


def test_largest_table_builds() -> None:
    tab = _tables._build_table(SIGMA_TABLE_MAX)
    assert tab.k == 655_361
    assert tab.nbytes < 64 << 20


# ------------------------------------------------------------------------------------------------
# sampling paths against a brute-force 128-bit inversion
# ------------------------------------------------------------------------------------------------


def _reference_counts(t: list[int], u: list[int]) -> list[int]:
    """#{j : t[j] <= x} for each x, t sorted (checked by test_table_is_symmetric_and_sorted)."""
    return [bisect.bisect_right(t, x) for x in u]


def test_count_exact_resolves_ties_on_low_words() -> None:
    tab = _tables._table(3.7)
    t = _boundaries(tab)
    hi = tab.hi.tolist()
    # boundaries sharing a high word exist in the far tails (T[-K] ... are tiny)
    assert len(set(hi)) < len(hi)
    v_list, w_list, u_list = [], [], []
    for j in range(len(t)):
        for delta in (-1, 0, 1):
            u = t[j] + delta
            if not 0 <= u < 1 << 128:
                continue
            u_hi, u_lo = u >> 64, u & ((1 << 64) - 1)
            v_list.append(u_hi >> 32)
            w_list += [((u_hi & M32) << 32) | (u_lo >> 32), (u_lo & M32) << 32]
            u_list.append(u)
    source = _ScriptedSource(np.array(w_list, dtype=np.uint64))
    got = _tables._count_exact(tab, np.array(v_list, dtype=np.uint32), source)
    assert got.tolist() == _reference_counts(t, u_list)


@pytest.mark.parametrize("direct", [True, False], ids=["direct guide", "guide only"])
@pytest.mark.parametrize(
    ("law", "sigma"),
    [
        ("gauss", 0.5),
        ("gauss", 3.7),
        ("gauss", 100.0),
        ("gauss", 3000.0),
        ("laplace", 7.25),
        ("laplace", 60.0),
        ("laplace", 2000.0),
    ],
)
def test_draw_table_matches_reference_at_bucket_edges(law: str, sigma: float, direct: bool) -> None:
    """32-bit prefixes at, next to and between boundaries, the edges of both guides' buckets
    and extremes; through the direct guide (where the table has one) and the guide alone;
    discrete Gaussian and discrete Laplace tables (``sigma``: the Laplace scale)."""
    tab = _tables._table(sigma) if law == "gauss" else _tables._laplace_table(sigma)
    # the largest of each: too many of its buckets hold a boundary for a direct guide
    assert (tab.direct is not None) == (sigma <= 100)
    if not direct:
        tab = dataclasses.replace(tab, direct=None)
    t = _boundaries(tab)
    top = sorted({b >> 96 for b in t})
    v = {0, M32, 1, M32 - 1}
    for x in top:
        v.update({x, max(x - 1, 0), min(x + 1, M32)})
        for shift in (tab.shift, 32 - _tables._DIRECT_BITS):
            v.update({(x >> shift) << shift, ((x >> shift) << shift) | ((1 << shift) - 1)})
    rng = np.random.default_rng(1)
    v.update(rng.integers(0, 1 << 32, size=2000).tolist())
    vs = np.array(sorted(v), dtype=np.uint32)
    if vs.size % 2:
        vs = np.append(vs, np.uint32(7))
    source = _ScriptedSource(vs.view(np.uint64).copy())
    out = np.empty(vs.size, dtype=np.int64)
    _tables._draw_table(tab, out, source)
    # Rebuild each U: undecided prefixes took 96 more bits from the next call, in order.
    topset = np.isin(vs, np.array(top, dtype=np.uint32))
    extra = source.log[1].reshape(-1, 2) if len(source.log) > 1 else np.empty((0, 2), np.uint64)
    assert extra.shape[0] == int(topset.sum())
    u_list = []
    e = iter(extra.tolist())
    for vi, amb in zip(vs.tolist(), topset.tolist(), strict=True):
        if amb:
            w0, w1 = next(e)
            u_list.append((vi << 96) | (w0 << 32) | (w1 >> 32))
        else:  # any completion gives the same count
            u_list.append(vi << 96)
            assert _reference_counts(t, [(vi << 96) | ((1 << 96) - 1)]) == _reference_counts(
                t, [vi << 96]
            )
    assert (out + tab.k).tolist() == _reference_counts(t, u_list)


def test_draw_table_chunks_match_searchsorted() -> None:
    """Several chunks and a ragged end: each draw is the count of boundaries below its prefix."""
    tab = _tables._table(1e4)
    sizes = [_tables._CHUNK] * 3 + [5]
    gen = np.random.Generator(np.random.Philox(123))
    script = [gen.integers(0, 2**64, size=(m + 1) // 2, dtype=np.uint64) for m in sizes]
    v = np.concatenate([w.view(np.uint32)[:m] for w, m in zip(script, sizes, strict=True)])
    out = np.empty(sum(sizes), dtype=np.int64)
    _tables._draw_table(tab, out, _ScriptedSource(*script))
    ref = np.searchsorted(tab.top, v, side="right").astype(np.int64) - tab.k
    undecided = np.isin(v, tab.top)  # these drew 96 more bits
    assert undecided.sum() < 200  # ~ n * 2K / 2^32 = 37 expected
    assert (out[~undecided] == ref[~undecided]).all()
    left = np.searchsorted(tab.top, v[undecided], side="left") - tab.k
    assert ((out[undecided] >= left) & (out[undecided] <= ref[undecided])).all()


# ------------------------------------------------------------------------------------------------
# API
# ------------------------------------------------------------------------------------------------


def test_output_types_and_shapes() -> None:
    s = sample_discrete_gaussian(2.0, rng=1)
    assert type(s) is np.int64
    assert type(sample_discrete_gaussian(0.0)) is np.int64
    assert type(sample_discrete_gaussian(np.float64(1e6), rng=1)) is np.int64  # convolution
    assert type(sample_discrete_gaussian(2 * SIGMA_CONV_MAX, rng=1)) is np.int64  # rejection
    a = sample_discrete_gaussian(2.0, size=(3, 4), rng=1)
    assert a.dtype == np.int64 and a.shape == (3, 4)
    assert sample_discrete_gaussian(2.0, size=0).shape == (0,)
    assert sample_discrete_gaussian(2.0, size=()).shape == ()
    z = sample_discrete_gaussian(0.0, size=5)
    assert z.dtype == np.int64 and z.tolist() == [0] * 5
    sig = np.array([[0.0, 1.5, 0.0], [2.5, 0.0, 1e6]])
    b = sample_discrete_gaussian(sig, rng=2)
    assert b.dtype == np.int64 and b.shape == (2, 3)
    assert (b[sig == 0.0] == 0).all()
    assert sample_discrete_gaussian([1, 2, 3], size=3, rng=1).dtype == np.int64
    assert sample_discrete_gaussian(np.array([], dtype=np.float64)).dtype == np.int64
    assert sample_discrete_gaussian(3, size=2, rng=1).dtype == np.int64  # int sigma
    zero_d = sample_discrete_gaussian(np.array(2.0), rng=1)  # a 0-d array gives a 0-d array
    assert isinstance(zero_d, np.ndarray) and zero_d.shape == () and zero_d.dtype == np.int64
    assert type(sample_discrete_gaussian(np.float32(2.0), rng=1)) is np.int64


def test_array_sigma_groups_are_each_right() -> None:
    sig = np.repeat([0.5, 50.0, 0.0, 3.7], 50_000)
    perm = np.random.default_rng(0).permutation(sig.size)
    sig = sig[perm]
    x = sample_discrete_gaussian(sig, rng=9)
    for s in (0.5, 50.0, 3.7):
        assert _chisq_gof(x[sig == s], s) > P_FLOOR
    assert (x[sig == 0.0] == 0).all()


def test_array_sigma_many_groups_use_the_sorting_path(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[float] = []
    real = _gaussian._draw

    def spy(sigma: float, out: npt.NDArray[np.int64], source: object) -> None:
        seen.append(sigma)
        real(sigma, out, source)  # type: ignore[arg-type]

    monkeypatch.setattr(_gaussian, "_draw", spy)
    levels = np.arange(12) * 0.75  # 0, 0.75, ..., 8.25: more groups than _PEEL_MAX
    sig = np.random.default_rng(4).permutation(np.repeat(levels, 20_000)).reshape(-1, 40)
    x = sample_discrete_gaussian(sig, rng=8)
    assert sorted(seen) == levels.tolist()  # one vectorised call per distinct sigma
    assert x.shape == sig.shape
    assert (x[sig == 0.0] == 0).all()
    for s in levels[1:]:
        assert _chisq_gof(x[sig == s], float(s)) > P_FLOOR


def test_tiny_sigma_is_exact_point_mass_in_practice() -> None:
    x = sample_discrete_gaussian(1e-300, size=1000, rng=1)
    assert (x == 0).all()
    # sigma 0.1: P(|X| >= 1) = 2 exp(-50) / Z, never seen
    assert (sample_discrete_gaussian(0.1, size=10_000, rng=1) == 0).all()


@pytest.mark.parametrize(
    ("sigma", "shown"),
    [(-1.0, "-1.0"), (float("nan"), "nan"), (float("inf"), "inf"), (-1e-300, "-1e-300")],
)
def test_bad_sigma(sigma: float, shown: str) -> None:
    with pytest.raises(SpecError, match=shown):
        sample_discrete_gaussian(sigma)
    with pytest.raises(SpecError, match=shown):
        sample_discrete_gaussian([1.0, sigma, 2.0])


def test_bad_sigma_types_and_positions() -> None:
    with pytest.raises(SpecError, match="index 1"):
        sample_discrete_gaussian([1.0, -2.0])
    with pytest.raises(SpecError, match=r"index \(1, 0\)"):
        sample_discrete_gaussian([[1.0, 2.0], [float("nan"), 1.0]])
    for bad in ("3", True, None, [1.0, "a"], 1 + 2j, [[1.0], [1.0, 2.0]]):
        with pytest.raises(SpecError):
            sample_discrete_gaussian(bad)  # type: ignore[arg-type]


def test_bad_size() -> None:
    with pytest.raises(SpecError, match=r"\(3,\)"):
        sample_discrete_gaussian([1.0, 2.0], size=3)
    with pytest.raises(SpecError, match=r"\(2, 2\)"):
        sample_discrete_gaussian([1.0, 2.0], size=(2, 2))
    for bad in (-1, (2, -1), 2.5, "3", True):
        with pytest.raises(SpecError, match="size"):
            sample_discrete_gaussian(1.0, size=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(("rng", "shown"), [("seed", "'seed'"), (1.5, "1.5"), (-3, "-3")])
def test_bad_rng(rng: object, shown: str) -> None:
    with pytest.raises(SpecError, match=shown):
        sample_discrete_gaussian(1.0, size=3, rng=rng)


def test_seeded_reproducible_and_csprng_varies() -> None:
    a = sample_discrete_gaussian(10.0, size=1000, rng=42)
    b = sample_discrete_gaussian(10.0, size=1000, rng=42)
    assert (a == b).all()
    gen_a = sample_discrete_gaussian(10.0, size=1000, rng=np.random.default_rng(5))
    gen_b = sample_discrete_gaussian(10.0, size=1000, rng=np.random.default_rng(5))
    assert (gen_a == gen_b).all()
    assert not (sample_discrete_gaussian(10.0, size=1000, rng=43) == a).all()
    c = sample_discrete_gaussian(10.0, size=1000)
    d = sample_discrete_gaussian(10.0, size=1000)
    assert not (c == d).all()
    big = 3 * SIGMA_TABLE_MAX
    assert sample_discrete_gaussian(big, size=5, rng=1).tolist() == (
        sample_discrete_gaussian(big, size=5, rng=1).tolist()
    )


def test_default_path_uses_the_csprng(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = rng_module.csprng_bytes

    def spy(n: int) -> bytes:
        calls.append(n)
        return real(n)

    monkeypatch.setattr(rng_module, "csprng_bytes", spy)
    x = sample_discrete_gaussian(5.0, size=1001)
    assert calls and sum(calls) >= 4 * 1001  # 32 bits per draw at least
    calls.clear()
    sample_discrete_gaussian(3 * SIGMA_TABLE_MAX, size=1001)  # convolution path
    assert calls and sum(calls) >= 8 * 1001  # 32 bits per component draw at least
    calls.clear()
    sample_discrete_gaussian(2 * SIGMA_CONV_MAX)  # rejection path
    assert calls
    calls.clear()
    sample_discrete_gaussian(3 * SIGMA_TABLE_MAX, size=10, rng=1)
    assert not calls
    sample_discrete_gaussian(5.0, size=10, rng=1)  # seeded: never the OS source
    assert not calls
    assert x.dtype == np.int64


def test_pmf() -> None:
    assert discrete_gaussian_pmf(0, 0.0) == 1.0
    assert discrete_gaussian_pmf(3, 0.0) == 0.0
    for sigma in (0.3, 0.5, 1.0, 1.7, 3.7, 100.0, 1e4):
        half = math.ceil(12 * sigma) + 2
        p = discrete_gaussian_pmf(np.arange(-half, half + 1), sigma)
        assert abs(p.sum() - 1.0) < 1e-12
        ratio = p[half + 1] / p[half]
        assert math.isclose(ratio, math.exp(-1 / (2 * sigma * sigma)), rel_tol=1e-12)
    # normaliser against a direct Decimal sum at the switch-over point
    with localcontext() as ctx:
        ctx.prec = 40
        z = 1 + 2 * sum((Decimal(-x * x) / 2).exp() for x in range(1, 60))
    assert math.isclose(discrete_gaussian_pmf(0, 1.0), float(1 / z), rel_tol=1e-14)
    assert isinstance(discrete_gaussian_pmf(1, 2.0), float)
    with pytest.raises(SpecError, match="integer"):
        discrete_gaussian_pmf(0.5, 1.0)
    with pytest.raises(SpecError, match=r"-1\.0"):
        discrete_gaussian_pmf(0, -1.0)


# ------------------------------------------------------------------------------------------------
# discrete Laplace (two-sided geometric)
# ------------------------------------------------------------------------------------------------


def _laplace_gof(samples: npt.NDArray[np.int64], scale: float, min_expected: float = 5.0) -> float:
    """p-value of Pearson's chi-square test of the samples against the exact Laplace pmf."""
    n = samples.size
    half = max(int(np.abs(samples).max()), math.ceil(60 * scale) + 2)
    xs = np.arange(-half, half + 1)
    expected = discrete_laplace_pmf(xs, scale) * n
    expected *= n / expected.sum()  # mass outside +-half is below e^-60
    observed = np.bincount(samples + half, minlength=xs.size).astype(np.float64)
    labels = _pooled_bins(expected, min_expected)
    obs = np.bincount(labels, weights=observed)
    exp = np.bincount(labels, weights=expected)
    chi2 = float(((obs - exp) ** 2 / exp).sum())
    return float(stats.chi2.sf(chi2, df=obs.size - 1))


@pytest.mark.slow
@pytest.mark.parametrize("scale", [0.3, 1.0, 2.5, 100.0, 1e4])
def test_laplace_chi_square_seeded(scale: float) -> None:
    x = sample_discrete_laplace(scale, size=1_000_000, rng=20240611)
    assert _laplace_gof(x, scale) > P_FLOOR


@pytest.mark.slow
def test_laplace_chi_square_csprng() -> None:
    x = sample_discrete_laplace(2.5, size=1_000_000)
    assert _laplace_gof(x, 2.5) > P_FLOOR


@pytest.mark.slow
def test_laplace_chi_square_rejection_fallback_small_scale(monkeypatch: pytest.MonkeyPatch) -> None:
    """The exact CKS Algorithm 2, forced on a small rational scale where many bins are tested."""
    monkeypatch.setattr(_laplace, "LAPLACE_TABLE_MAX", 1.0)
    monkeypatch.setattr(_laplace, "LAPLACE_CONV_MAX", 1.0)
    called: list[tuple[int, int]] = []
    real = _laplace._laplace_rational

    def spy(bits: object, t: int, s: int) -> int:
        called.append((t, s))
        return real(bits, t, s)  # type: ignore[arg-type]

    monkeypatch.setattr(_laplace, "_laplace_rational", spy)
    x = sample_discrete_laplace(2.5, size=100_000, rng=5)
    assert set(called) == {(5, 2)}  # 2.5 = 5/2: t = 5, s = 2
    assert _laplace_gof(x, 2.5) > P_FLOOR


@pytest.mark.slow
def test_laplace_chi_square_above_table_limit() -> None:
    scale = 3.0 * LAPLACE_TABLE_MAX + 0.25
    x = sample_discrete_laplace(scale, size=20_000, rng=11)
    assert _laplace_gof(x, scale, min_expected=50.0) > P_FLOOR


def test_laplace_array_scale_groups_are_each_right() -> None:
    scale = np.random.default_rng(1).permutation(np.repeat([0.5, 40.0, 0.0, 2.5], 50_000))
    x = sample_discrete_laplace(scale, rng=12)
    assert x.shape == scale.shape and x.dtype == np.int64
    for b in (0.5, 40.0, 2.5):
        assert _laplace_gof(x[scale == b], b) > P_FLOOR
    assert (x[scale == 0.0] == 0).all()
    grid = sample_discrete_laplace(np.full((3, 4), 2.0), size=(3, 4), rng=1)
    assert grid.shape == (3, 4)
    again = sample_discrete_laplace(np.full((3, 4), 2.0), rng=1)
    assert (grid == again).all()  # a seeded array draw is reproducible


def test_laplace_array_scale_is_checked() -> None:
    with pytest.raises(
        SpecError, match=r"scale must be non-negative and finite everywhere, got -2\.0 at index 1"
    ):
        sample_discrete_laplace([1.0, -2.0])
    with pytest.raises(SpecError, match="does not match the shape"):
        sample_discrete_laplace([1.0, 2.0], size=3)


@pytest.mark.slow
@pytest.mark.parametrize("scale", [0.5, 3.7, 100.0])
def test_laplace_mean_variance_symmetry(scale: float) -> None:
    n = 1_000_000
    x = sample_discrete_laplace(scale, size=n, rng=3)
    a = math.exp(-1.0 / scale)
    var = 2 * a / (1 - a) ** 2
    half = math.ceil(80 * scale) + 2
    xs = np.arange(-half, half + 1, dtype=np.float64)
    mu4 = float((xs**4 * discrete_laplace_pmf(xs, scale)).sum())
    assert abs(x.mean()) < 5 * math.sqrt(var / n)
    assert abs(x.var() - var) < 5 * math.sqrt((mu4 - var * var) / n)
    top = int(np.abs(x).max())
    c = np.bincount(x + top, minlength=2 * top + 1)
    pos, neg = c[top + 1 :], c[:top][::-1]
    keep = (pos + neg) >= 10
    chi2 = float((((pos - neg)[keep]) ** 2 / (pos + neg)[keep]).sum())
    assert stats.chi2.sf(chi2, df=int(keep.sum())) > P_FLOOR


@pytest.mark.slow
def test_laplace_opendp_two_sample() -> None:
    """Two-sample chi-square against OpenDP's exact integer Laplace (an independent sampler)."""
    dp = pytest.importorskip("opendp.prelude")
    dp.enable_features("contrib")
    n = 50_000
    for scale in (2.5, 40.0):
        meas = dp.m.make_laplace(
            dp.vector_domain(dp.atom_domain(T=int)), dp.l1_distance(T=int), scale
        )
        theirs = np.asarray(meas([0] * n), dtype=np.int64)
        ours = sample_discrete_laplace(scale, size=n, rng=17)
        half = int(max(np.abs(theirs).max(), np.abs(ours).max()))
        xs = np.arange(-half, half + 1)
        labels = _pooled_bins(discrete_laplace_pmf(xs, scale) * n, 10.0)
        table = np.stack(
            [
                np.bincount(labels, weights=np.bincount(a + half, minlength=xs.size))
                for a in (ours, theirs)
            ]
        )
        assert stats.chi2_contingency(table).pvalue > P_FLOOR


def test_laplace_support_and_distance_bound() -> None:
    for scale in (0.1, 1.0, 3.7, 1000.0, LAPLACE_TABLE_MAX):
        k = _tables._laplace_support_k(scale)
        with localcontext() as ctx:
            ctx.prec = 60
            fr = Fraction(scale)
            b = Decimal(fr.numerator) / Decimal(fr.denominator)
            a = (-1 / b).exp()
            tail = 2 * a ** (k + 1) / (1 + a)  # P(|X| > K), exactly
            assert tail < Decimal(TAIL_BOUND)
            assert k - 1 < 75 * Decimal(2).ln() * b + 1  # K is not needlessly large
    k = _tables._laplace_support_k(LAPLACE_TABLE_MAX)
    assert (2 * k + 1) * (1 + 2.0**-63) * 2.0**-128 + TAIL_BOUND <= DISTANCE_BOUND
    assert k + 1 <= 2**20  # the table error analysis needs it


@pytest.mark.parametrize("scale", [0.1, 0.5, 1.0, 3.7, 2.0 / 3.0])
def test_laplace_table_matches_independent_high_precision(scale: float) -> None:
    """Each boundary is within 2 units of 2^128 C(k) (C the CDF truncated to [-K, K])."""
    tab = _tables._laplace_table(scale)
    k = tab.k
    t = _boundaries(tab)
    assert len(t) == 2 * k
    assert all(a <= b for a, b in itertools.pairwise(t))
    assert all(t[j] + t[2 * k - 1 - j] == (1 << 128) - 1 for j in range(2 * k))
    with localcontext() as ctx:
        ctx.prec = 80
        fr = Fraction(scale)
        b = Decimal(fr.numerator) / Decimal(fr.denominator)
        p = [(Decimal(-abs(x)) / b).exp() for x in range(-k, k + 1)]  # direct, no recurrence
        z = sum(p)
        cdf = Decimal(0)
        two128 = Decimal(2) ** 128
        for j in range(2 * k):
            cdf += p[j]
            assert abs(Decimal(t[j]) - two128 * cdf / z) < 2
        padded = [0, *t, 1 << 128]
        for j in range(2 * k + 1):
            prob = Decimal(padded[j + 1] - padded[j]) / two128
            assert abs(prob - p[j] / z) < Decimal(2) ** -100


def test_laplace_tables_have_their_own_cache() -> None:
    lap = _tables._laplace_table(7.25)
    assert lap is _tables._laplace_table(7.25)
    assert lap is not _tables._table(7.25)
    assert lap.k == _tables._laplace_support_k(7.25) != _tables._table(7.25).k
    assert not lap.guide.flags.writeable


@pytest.mark.slow
def test_largest_laplace_table_builds() -> None:
    tab = _tables._build_laplace_table(LAPLACE_TABLE_MAX)
    assert tab.k == _tables._laplace_support_k(LAPLACE_TABLE_MAX)
    assert tab.nbytes < 64 << 20


def test_laplace_output_types_seeds_and_sources(monkeypatch: pytest.MonkeyPatch) -> None:
    assert sample_discrete_laplace(0.0) == 0
    assert isinstance(sample_discrete_laplace(1.0, rng=1), np.int64)
    assert sample_discrete_laplace(1.0, size=(2, 3), rng=1).shape == (2, 3)
    assert sample_discrete_laplace(1.0, size=0, rng=1).shape == (0,)
    assert (sample_discrete_laplace(0.0, size=5) == 0).all()
    assert (sample_discrete_laplace(1e-3, size=10_000, rng=1) == 0).all()  # P(X != 0) ~ 2e-434
    a = sample_discrete_laplace(10.0, size=1000, rng=42)
    assert (a == sample_discrete_laplace(10.0, size=1000, rng=42)).all()
    assert not (a == sample_discrete_laplace(10.0, size=1000, rng=43)).all()
    big = 3 * LAPLACE_TABLE_MAX
    assert sample_discrete_laplace(big, size=5, rng=1).tolist() == (
        sample_discrete_laplace(big, size=5, rng=1).tolist()
    )
    calls: list[int] = []
    real = rng_module.csprng_bytes

    def spy(n: int) -> bytes:
        calls.append(n)
        return real(n)

    monkeypatch.setattr(rng_module, "csprng_bytes", spy)
    c, d = sample_discrete_laplace(10.0, size=1001), sample_discrete_laplace(10.0, size=1001)
    assert not (c == d).all()
    assert calls and sum(calls) >= 2 * 4 * 1001
    calls.clear()
    sample_discrete_laplace(big, size=1001)  # decomposition path
    assert calls and sum(calls) >= 2 * 4 * 1001
    calls.clear()
    sample_discrete_laplace(2 * LAPLACE_CONV_MAX)  # rejection path
    assert calls
    calls.clear()
    sample_discrete_laplace(5.0, size=10, rng=1)
    assert not calls


@pytest.mark.parametrize(
    ("scale", "shown"),
    [(-1.0, "-1.0"), (float("nan"), "nan"), (float("inf"), "inf"), (True, "True"), ("2", "'2'")],
)
def test_laplace_bad_scale(scale: object, shown: str) -> None:
    with pytest.raises(SpecError, match=shown):
        sample_discrete_laplace(scale)  # type: ignore[arg-type]
    with pytest.raises(SpecError, match="scale"):
        discrete_laplace_pmf(0, scale)  # type: ignore[arg-type]


def test_laplace_bad_size_and_rng() -> None:
    for bad in (-1, (2, -1), 2.5, "3", True):
        with pytest.raises(SpecError, match="size"):
            sample_discrete_laplace(1.0, size=bad)  # type: ignore[arg-type]
    with pytest.raises(SpecError, match="'seed'"):
        sample_discrete_laplace(1.0, size=3, rng="seed")


def test_laplace_pmf() -> None:
    assert discrete_laplace_pmf(0, 0.0) == 1.0
    assert discrete_laplace_pmf(3, 0.0) == 0.0
    for scale in (0.05, 0.5, 1.0, 3.7, 100.0, 1e4):
        half = math.ceil(80 * scale) + 2
        p = discrete_laplace_pmf(np.arange(-half, half + 1), scale)
        assert abs(p.sum() - 1.0) < 1e-12
        assert math.isclose(p[half + 1] / p[half], math.exp(-1 / scale), rel_tol=1e-12)
        assert p[half + 3] == p[half - 3]
    # scale 1: p(0) = (1 - 1/e) / (1 + 1/e) = tanh(1/2)
    assert math.isclose(discrete_laplace_pmf(0, 1.0), math.tanh(0.5), rel_tol=1e-15)
    assert isinstance(discrete_laplace_pmf(1, 2.0), float)
    with pytest.raises(SpecError, match="integer"):
        discrete_laplace_pmf(0.5, 1.0)


# ------------------------------------------------------------------------------------------------
# large scales: the convolution method (Gaussian) and the decomposition (Laplace)
# ------------------------------------------------------------------------------------------------

_PMF_CHUNK = 1 << 20


def _label_probs(
    pmf: Callable[[npt.NDArray[np.int64]], npt.NDArray[np.float64]],
    half: int,
    label: Callable[[npt.NDArray[np.int64]], npt.NDArray[np.intp]],
    n_labels: int,
) -> npt.NDArray[np.float64]:
    """P(label(X) = j) summed from the exact pmf over [-half, half], in chunks (bounded memory)."""
    probs = np.zeros(n_labels)
    for lo in range(-half, half + 1, _PMF_CHUNK):
        xs = np.arange(lo, min(lo + _PMF_CHUNK, half + 1), dtype=np.int64)
        probs += np.bincount(label(xs), weights=pmf(xs), minlength=n_labels)
    return probs


def _gauss_probs(
    sigma: float, label: Callable[[npt.NDArray[np.int64]], npt.NDArray[np.intp]], n_labels: int
) -> npt.NDArray[np.float64]:
    """Exact-pmf probabilities of the labels; the mass beyond 9 sigma (< 3e-19) is left out."""
    return _label_probs(
        lambda xs: discrete_gaussian_pmf(xs, sigma), math.ceil(9 * sigma) + 1, label, n_labels
    )


def _gauss_moments(sigma: float) -> tuple[float, float]:
    """E[X^2] and E[X^4] from the exact pmf (chunked; beyond 10 sigma: below 1e-17 relative)."""
    half = math.ceil(10 * sigma) + 1
    m2 = m4 = 0.0
    for lo in range(-half, half + 1, _PMF_CHUNK):
        xs = np.arange(lo, min(lo + _PMF_CHUNK, half + 1), dtype=np.int64)
        p = discrete_gaussian_pmf(xs, sigma)
        sq = xs.astype(np.float64) ** 2
        m2 += float((sq * p).sum())
        m4 += float((sq * sq * p).sum())
    return m2, m4


def _chisq_p(observed: npt.NDArray[np.int64], probs: npt.NDArray[np.float64]) -> float:
    """p-value of Pearson's chi-square test of label counts against label probabilities."""
    n = float(observed.sum())
    expected = probs / probs.sum() * n
    chi2 = float(((observed - expected) ** 2 / expected).sum())
    return float(stats.chi2.sf(chi2, df=observed.size - 1))


def _quantile_edges(scale: float, n_bins: int, dist: str = "norm") -> npt.NDArray[np.int64]:
    """Integer bin edges at the quantiles of the continuous law of the same scale."""
    law = stats.norm if dist == "norm" else stats.laplace
    z = law.ppf(np.arange(1, n_bins) / n_bins)
    return np.unique(np.round(scale * z).astype(np.int64))


def _binned_gof(samples: npt.NDArray[np.int64], sigma: float, n_bins: int = 1000) -> float:
    """Chi-square p-value of the samples in ~n_bins equal-probability bins, against the pmf."""
    edges = _quantile_edges(sigma, n_bins)

    def label(xs: npt.NDArray[np.int64]) -> npt.NDArray[np.intp]:
        return np.searchsorted(edges, xs, side="right")

    probs = _gauss_probs(sigma, label, edges.size + 1)
    return _chisq_p(np.bincount(label(samples), minlength=edges.size + 1), probs)


def _two_sample_p(
    a: npt.NDArray[np.int64], b: npt.NDArray[np.int64], edges: npt.NDArray[Any]
) -> float:
    table = np.stack(
        [
            np.bincount(np.searchsorted(edges, s, side="right"), minlength=edges.size + 1)
            for s in (a, b)
        ]
    )
    return float(stats.chi2_contingency(table).pvalue)


class _CountingSource:
    """A seeded source that counts the words it hands out."""

    seeded = True

    def __init__(self, seed: int) -> None:
        self._inner = SeededSource(seed)
        self.count = 0

    def words(self, n: int) -> npt.NDArray[np.uint64]:
        self.count += n
        return self._inner.words(n)

    def spawn(self, n: int) -> list[RandomSource]:
        raise AssertionError("not used")


def _no_csprng(n: int) -> bytes:
    raise AssertionError("a seeded draw asked the CSPRNG")


@pytest.mark.slow
@pytest.mark.parametrize("sigma", [1e5, 3e5, 1e6])
def test_chi_square_large_sigma(sigma: float) -> None:
    """2M convolution draws in 1,000 equal-probability bins (tails included) against the pmf."""
    x = sample_discrete_gaussian(sigma, size=2_000_000, rng=20240612)
    assert _binned_gof(x, sigma) > P_FLOOR


@pytest.mark.slow
def test_chi_square_large_sigma_csprng() -> None:
    x = sample_discrete_gaussian(1e6, size=1_000_000)
    assert _binned_gof(x, 1e6) > P_FLOOR


@pytest.mark.slow
@pytest.mark.parametrize("sigma", [65536.5, 1e6])
def test_large_sigma_mean_and_variance(sigma: float) -> None:
    n = 2_000_000
    x = sample_discrete_gaussian(sigma, size=n, rng=4)
    var, mu4 = _gauss_moments(sigma)
    assert abs(x.mean()) < 5 * math.sqrt(var / n)
    assert abs(x.var() - var) < 5 * math.sqrt((mu4 - var * var) / n)


@pytest.mark.slow
def test_large_sigma_residues_and_exact_probabilities() -> None:
    """No trace of the coarse lattice k Z, and a few exact probabilities, at sigma 1e5."""
    sigma, n = 1e5, 4_000_000
    (k, _), *_ = _composed._gauss_splits(sigma)[0]
    assert k == 182
    x = sample_discrete_gaussian(sigma, size=n, rng=77)
    for mod in (k, k + 1, 2):  # X mod k: would show a badly smoothed lattice of the coarse part
        probs = _gauss_probs(sigma, lambda xs, mod=mod: xs % mod, mod)
        assert _chisq_p(np.bincount(x % mod, minlength=mod), probs) > P_FLOOR
    events = {
        "X = 0": lambda v: v == 0,
        "|X| <= 100": lambda v: np.abs(v) <= 100,
        "|X| <= sigma": lambda v: np.abs(v) <= sigma,
        "X > 3 sigma": lambda v: v > 3 * sigma,
    }
    for name, event in events.items():
        p = _gauss_probs(sigma, lambda xs, e=event: e(xs).astype(np.intp), 2)[1]
        se = math.sqrt(p * (1 - p) / n)
        assert abs(float(event(x).mean()) - p) < 4.5 * se, name


@pytest.mark.slow
@pytest.mark.parametrize("sigma", [5.0, 37.5, 200.0])
def test_convolution_forced_on_small_sigma(sigma: float) -> None:
    """The convolution method where every integer is its own bin: the lemma, tested finely."""
    n = 1_000_000
    out = np.empty(n, dtype=np.int64)
    _composed._draw_composed(_composed._gauss_plan(sigma), out, SeededSource(31))
    assert _chisq_gof(out, sigma) > P_FLOOR
    p0 = discrete_gaussian_pmf(0, sigma)
    assert abs(float((out == 0).mean()) - p0) < 4.5 * math.sqrt(p0 * (1 - p0) / n)


@pytest.mark.parametrize("sigma", [5.0, 37.5])
def test_convolution_lemma_in_high_precision(sigma: float) -> None:
    """Q(x) / P(x) is constant to 1e-40 for the plan's own (k, r, s1^2): the lemma, numerically."""
    k, sq2, sq1 = _composed._conv_split(Fraction(sigma) ** 2)
    assert k * k * sq1 + sq2 == Fraction(sigma) ** 2
    with localcontext() as ctx:
        ctx.prec = 90
        two_s1 = 2 * Decimal(sq1.numerator) / Decimal(sq1.denominator)
        two_r = 2 * Decimal(sq2.numerator) / Decimal(sq2.denominator)
        two_s = 2 * Decimal(sigma) ** 2
        reach = math.ceil(16 * math.sqrt(sq1))  # f1 beyond it < e^-128
        f1 = [(Decimal(-j * j) / two_s1).exp() for j in range(-reach, reach + 1)]
        xmax = math.ceil(4 * sigma)
        ymax = xmax + k * reach
        f2 = [(Decimal(-y * y) / two_r).exp() for y in range(-ymax, ymax + 1)]  # f2(y): [y + ymax]
        ratios = []
        assert k == (1 if sigma < 12 else 3)
        for x in range(-xmax, xmax + 1):
            q = sum(
                f * f2[x - k * j + ymax] for j, f in zip(range(-reach, reach + 1), f1, strict=True)
            )
            ratios.append(q / (Decimal(-x * x) / two_s).exp())
        assert max(ratios) / min(ratios) - 1 < Decimal("1e-40")


def test_convolution_plans_and_distance_bound() -> None:
    """Every split keeps k^2 s1^2 + s2^2 = S^2 exactly; depth, tables, ints and TV bounded."""
    for sigma in np.linspace(6.0, 500.0, 20_000).tolist():  # the split works from sigma 6 up
        _composed._conv_split(Fraction(sigma) ** 2)
    grid = np.geomspace(6.0, SIGMA_CONV_MAX, 400).tolist()
    grid += [SIGMA_TABLE_MAX, float(np.nextafter(SIGMA_TABLE_MAX, np.inf)), 1e5, 1e6, 1e7]
    grid += [2.2e7, CONV_R_MAX**2 / 3, SIGMA_CONV_MAX, 2.0 / 3.0 * 1e9 + 0.1]
    max_depth = 0
    for sigma in grid:
        splits, bottom = _composed._gauss_splits(sigma)
        sq = bottom
        for k, sq2 in reversed(splits):
            assert k >= 1 and 0 < sq2 <= CONV_R_MAX**2
            if sigma > SIGMA_TABLE_MAX:  # tau^2 = s1^2 s2^2 / S^2, about 9
                assert sq * sq2 > Fraction(899, 100) * (k * k * sq + sq2)
            sq = k * k * sq + sq2
        assert sq == Fraction(sigma) ** 2  # the variance is exactly sigma^2, no rounding
        assert bottom <= CONV_R_MAX**2
        if sigma <= 2.2e7:  # about CONV_R_MAX^2 / 3
            assert len(splits) == 1
        max_depth = max(max_depth, len(splits))
    assert max_depth == 4
    # every component table is within the 2K + 1 < 2^21 of the error analysis
    assert 2 * _tables._support_k_sq(Fraction(CONV_R_MAX) ** 2, CONV_TAIL_T) + 1 < 2**21
    with localcontext() as ctx:
        ctx.prec = 60
        e = (-8 * Decimal("3.14159") ** 2).exp()  # pi > 3.14159: an upper bound on e^{-8 pi^2}
        eta = 2 * e / (1 - e)
        assert eta / (1 - eta) < Decimal(2) ** -112
        tail = Decimal(2) / CONV_TAIL_T * Decimal(-(CONV_TAIL_T**2) / 2).exp()
        per_table = tail + Decimal(2) ** 21 * (1 + Decimal(2) ** -63) * Decimal(2) ** -128
        assert tail < Decimal(2) ** Decimal("-106.4")
        assert per_table < Decimal(2) ** Decimal("-105.4")
        assert (max_depth + 1) * per_table + max_depth * eta < Decimal(2) ** -102
    plan = _composed._gauss_plan(SIGMA_CONV_MAX)
    assert len(plan.levels) == 4 and plan.bound < 2**62
    x = _noise.draw_discrete_gaussian(SIGMA_CONV_MAX, 1000, source=SeededSource(2))
    assert int(np.abs(x).max()) <= plan.bound
    assert 0.8 < float(np.std(x.astype(np.float64))) / SIGMA_CONV_MAX < 1.2


def test_convolution_tables_match_independent_high_precision() -> None:
    """A component table of a non-float rational variance, against a direct Decimal CDF."""
    sq = Fraction(12345, 7)  # s = 41.99...
    tab = _composed._gauss_component(sq)
    k = tab.k
    assert k == math.ceil(CONV_TAIL_T * math.sqrt(sq)) + 1 == _tables._support_k_sq(sq, 12)
    t = _boundaries(tab)
    with localcontext() as ctx:
        ctx.prec = 80
        two_s2 = 2 * Decimal(sq.numerator) / Decimal(sq.denominator)
        p = [(Decimal(-x * x) / two_s2).exp() for x in range(-k, k + 1)]
        z = sum(p)
        scale = Decimal(2) ** 128
        for j, cdf in enumerate(itertools.accumulate(p[: 2 * k])):  # boundary j is T[j - k]
            assert abs(Decimal(t[j]) - scale * cdf / z) < 2


@pytest.mark.slow
def test_switch_point_table_and_convolution_agree() -> None:
    """Both methods on both sides of SIGMA_TABLE_MAX: each fits the pmf, they fit each other."""
    below, above = SIGMA_TABLE_MAX, float(np.nextafter(SIGMA_TABLE_MAX, np.inf))
    n = 1_000_000
    for sigma, table in ((below, _tables._table(below)), (above, _tables._build_table(above))):
        by_table = np.empty(n, dtype=np.int64)
        _tables._draw_table(table, by_table, SeededSource(1))
        by_conv = np.empty(n, dtype=np.int64)
        _composed._draw_composed(_composed._gauss_plan(sigma), by_conv, SeededSource(2))
        assert _binned_gof(by_table, sigma, 500) > P_FLOOR
        assert _binned_gof(by_conv, sigma, 500) > P_FLOOR
        assert _two_sample_p(by_table, by_conv, _quantile_edges(sigma, 500)) > P_FLOOR
        assert abs(by_table.var() / by_conv.var() - 1) < 5 * math.sqrt(2 * 2 / n)


def test_dispatch_at_the_thresholds(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []
    monkeypatch.setattr(_gaussian, "_table", lambda sigma: None)  # no table builds here
    monkeypatch.setattr(_gaussian, "_gauss_plan", lambda sigma: None)
    monkeypatch.setattr(_gaussian, "_draw_table", lambda *a: seen.append("table"))
    monkeypatch.setattr(_gaussian, "_draw_composed", lambda *a: seen.append("composed"))
    monkeypatch.setattr(_gaussian, "_draw_rejection", lambda *a: seen.append("rejection"))
    for sigma in (SIGMA_TABLE_MAX, np.nextafter(SIGMA_TABLE_MAX, np.inf), SIGMA_CONV_MAX):
        _noise.draw_discrete_gaussian(float(sigma), 3, source=SeededSource(1))
    _noise.draw_discrete_gaussian(
        float(np.nextafter(SIGMA_CONV_MAX, np.inf)), 3, source=SeededSource(1)
    )
    assert seen == ["table", "composed", "composed", "rejection"]


@pytest.mark.slow
def test_opendp_two_sample_large_sigma() -> None:
    """Two-sample chi-square against OpenDP's exact integer Gaussian at sigma 2e5."""
    dp = pytest.importorskip("opendp.prelude")
    dp.enable_features("contrib")
    sigma, n = 2e5, 40_000
    meas = dp.m.make_gaussian(dp.vector_domain(dp.atom_domain(T=int)), dp.l2_distance(T=int), sigma)
    theirs = np.asarray(meas([0] * n), dtype=np.int64)
    ours = sample_discrete_gaussian(sigma, size=n, rng=17)
    assert _two_sample_p(ours, theirs, _quantile_edges(sigma, 50)) > P_FLOOR


def test_large_sigma_seeded_reproducible_and_from_its_source(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    a = sample_discrete_gaussian(1e6, size=1001, rng=42)
    assert (a == sample_discrete_gaussian(1e6, size=1001, rng=42)).all()
    assert not (a == sample_discrete_gaussian(1e6, size=1001, rng=43)).all()
    assert not (
        sample_discrete_gaussian(1e6, size=1001) == sample_discrete_gaussian(1e6, size=1001)
    ).all()
    monkeypatch.setattr(rng_module, "csprng_bytes", _no_csprng)
    src = _CountingSource(9)
    x = _noise.draw_discrete_gaussian(1e6, 1001, source=src)
    # two components, 32 bits each: 2 x 501 words, plus 2 words per rare undecided prefix
    assert 1002 <= src.count <= 1002 + 20
    again = _CountingSource(9)
    assert (_noise.draw_discrete_gaussian(1e6, 1001, source=again) == x).all()
    y = sample_discrete_gaussian(np.array([1e6, 3.0, 2e7, 5e7]), rng=3)  # grouped, seeded
    assert y.shape == (4,)
    assert _composed._gauss_plan(5e7).levels[0].mult == CONV_R_MAX // 3  # a two-level plan


# ---- discrete Laplace at large scales ----------------------------------------------------------


def _laplace_cdf(x: npt.NDArray[np.int64], scale: float) -> npt.NDArray[np.float64]:
    """P(X <= x) in closed form: a^-x / (1 + a) for x < 0, 1 - a^(x+1) / (1 + a) for x >= 0."""
    xf = x.astype(np.float64)
    a = math.exp(-1.0 / scale)
    return np.where(xf < 0, np.exp(xf / scale) / (1 + a), 1.0 - np.exp(-(xf + 1) / scale) / (1 + a))


def _laplace_binned_gof(samples: npt.NDArray[np.int64], scale: float, n_bins: int = 1000) -> float:
    edges = _quantile_edges(scale, n_bins, dist="laplace")
    cdf = np.concatenate([[0.0], _laplace_cdf(edges - 1, scale), [1.0]])
    probs = np.diff(cdf)  # bin j is [edges[j-1], edges[j])
    observed = np.bincount(np.searchsorted(edges, samples, side="right"), minlength=edges.size + 1)
    return _chisq_p(observed, probs)


def test_laplace_cdf_helper_matches_pmf() -> None:
    scale = 3.7
    xs = np.arange(-400, 401)
    assert np.allclose(
        np.cumsum(discrete_laplace_pmf(xs, scale)), _laplace_cdf(xs, scale), atol=1e-14
    )


@pytest.mark.slow
@pytest.mark.parametrize("scale", [1e5, 1e6])
def test_laplace_chi_square_large_scale(scale: float) -> None:
    x = sample_discrete_laplace(scale, size=2_000_000, rng=20240612)
    assert _laplace_binned_gof(x, scale) > P_FLOOR


@pytest.mark.slow
@pytest.mark.parametrize("scale", [0.3, 2.5, 37.5])
def test_laplace_decomposition_forced_on_small_scale(scale: float) -> None:
    """X = m D + R1 - R2 where every integer is its own bin: the identity, tested finely."""
    out = np.empty(1_000_000, dtype=np.int64)
    _composed._draw_composed(_composed._laplace_plan(scale), out, SeededSource(31))
    assert _laplace_gof(out, scale) > P_FLOOR


@pytest.mark.slow
def test_laplace_large_scale_residues_moments_and_exact_probabilities() -> None:
    scale, n = 1e5, 4_000_000
    ((_, m),) = _composed._laplace_splits(scale)
    assert m == 2281
    x = sample_discrete_laplace(scale, size=n, rng=78)
    half = math.ceil(45 * scale)  # mass beyond e^-45 < 3e-20
    by_mod = {m: np.zeros(m), 2: np.zeros(2)}
    mu4 = 0.0
    for lo in range(-half, half + 1, _PMF_CHUNK):  # one pass over the exact pmf
        xs = np.arange(lo, min(lo + _PMF_CHUNK, half + 1), dtype=np.int64)
        p = discrete_laplace_pmf(xs, scale)
        for mod, acc in by_mod.items():
            acc += np.bincount(xs % mod, weights=p, minlength=mod)
        mu4 += float((xs.astype(np.float64) ** 4 * p).sum())
    for mod, probs in by_mod.items():
        assert _chisq_p(np.bincount(x % mod, minlength=mod), probs) > P_FLOOR
    for w in (0, 50):  # P(|X| <= w), exactly from the pmf
        p_w = float(discrete_laplace_pmf(np.arange(-w, w + 1), scale).sum())
        got = float((np.abs(x) <= w).mean())
        assert abs(got - p_w) < 4.5 * math.sqrt(p_w * (1 - p_w) / n), w
    a = math.exp(-1.0 / scale)
    var = 2 * a / (1 - a) ** 2
    assert abs(x.mean()) < 5 * math.sqrt(var / n)
    assert abs(x.var() - var) < 5 * math.sqrt((mu4 - var * var) / n)


@pytest.mark.slow
def test_laplace_switch_point_table_and_decomposition_agree() -> None:
    below, above = LAPLACE_TABLE_MAX, float(np.nextafter(LAPLACE_TABLE_MAX, np.inf))
    n = 1_000_000
    for scale, table in (
        (below, _tables._laplace_table(below)),
        (above, _tables._build_laplace_table(above)),
    ):
        by_table = np.empty(n, dtype=np.int64)
        _tables._draw_table(table, by_table, SeededSource(1))
        by_dec = np.empty(n, dtype=np.int64)
        _composed._draw_composed(_composed._laplace_plan(scale), by_dec, SeededSource(2))
        assert _laplace_binned_gof(by_table, scale, 500) > P_FLOOR
        assert _laplace_binned_gof(by_dec, scale, 500) > P_FLOOR
        edges = _quantile_edges(scale, 500, dist="laplace")
        assert _two_sample_p(by_table, by_dec, edges) > P_FLOOR


def test_laplace_dispatch_at_the_thresholds(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []
    monkeypatch.setattr(_laplace, "_laplace_table", lambda scale: None)  # no table builds here
    monkeypatch.setattr(_laplace, "_laplace_plan", lambda scale: None)
    monkeypatch.setattr(_laplace, "_draw_table", lambda *a: seen.append("table"))
    monkeypatch.setattr(_laplace, "_draw_composed", lambda *a: seen.append("composed"))
    monkeypatch.setattr(_laplace, "_laplace_rational", lambda *a: seen.append("rejection") or 0)
    for scale in (LAPLACE_TABLE_MAX, np.nextafter(LAPLACE_TABLE_MAX, np.inf), LAPLACE_CONV_MAX):
        _noise.draw_discrete_laplace(float(scale), 1, source=SeededSource(1))
    _noise.draw_discrete_laplace(
        float(np.nextafter(LAPLACE_CONV_MAX, np.inf)), 1, source=SeededSource(1)
    )
    assert seen == ["table", "composed", "composed", "rejection"]


def test_laplace_plans_and_distance_bound() -> None:
    grid = [*np.geomspace(LAPLACE_TABLE_MAX, LAPLACE_CONV_MAX, 300).tolist(), 8.3e7, 1e9]
    depth = 0
    for scale in grid:
        splits = _composed._laplace_splits(scale)
        b = Fraction(scale)
        for level_scale, m in splits:
            assert level_scale == b and 2 <= m <= 2**16
            b /= m
        assert b <= 4096 <= LAPLACE_TABLE_MAX  # the innermost table is an ordinary one
        if scale <= 8.3e7:
            assert len(splits) == 1
        depth = max(depth, len(splits))
    assert depth == 3
    k = _tables._laplace_support_k(LAPLACE_TABLE_MAX)
    bound = (2 * k + 1) * (1 + 2.0**-63) * 2.0**-128 + TAIL_BOUND
    bound += depth * (2 * 2**16 - 1) * (1 + 2.0**-63) * 2.0**-128  # E = R1 - R2, each level
    assert (2 * 2**16 - 1) * (1 + 2.0**-63) * 2.0**-128 < 2.0**-110.9
    assert bound < DISTANCE_BOUND
    plan = _composed._laplace_plan(LAPLACE_CONV_MAX)
    assert len(plan.levels) == 3 and plan.bound < 2**62
    x = _noise.draw_discrete_laplace(LAPLACE_CONV_MAX, 1000, source=SeededSource(2))
    assert int(np.abs(x).max()) <= plan.bound
    assert 0.8 < float(np.std(x.astype(np.float64))) / (math.sqrt(2) * LAPLACE_CONV_MAX) < 1.2


@pytest.mark.parametrize(
    ("scale", "m"), [(2.5, 12), (0.3, 4), (1000.0, 50), (Fraction(7, 3), 2), (20000.0, 1020)]
)
def test_difference_table_matches_independent_high_precision(
    scale: float | Fraction, m: int
) -> None:
    """E = R1 - R2's table against the convolution of two truncated geometrics, in Decimal."""
    tab = _composed._laplace_component(Fraction(scale), m)
    assert tab.k == m - 1
    t = _boundaries(tab)
    assert len(t) == 2 * (m - 1) and all(a <= b for a, b in itertools.pairwise(t))
    assert all(t[j] + t[len(t) - 1 - j] == (1 << 128) - 1 for j in range(len(t)))
    with localcontext() as ctx:
        ctx.prec = 80
        fr = Fraction(scale)
        b = Decimal(fr.numerator) / Decimal(fr.denominator)
        r_mass = [(Decimal(-r) / b).exp() for r in range(m)]  # P(R = r), unnormalised
        step = max(1, m // 40)  # a sample of outcomes e, both tails and the centre included
        es = sorted({*range(-(m - 1), m, step), -1, 0, 1, m - 1})
        e_mass = {  # P(R1 - R2 = e), unnormalised, by direct convolution
            e: sum(r_mass[r] * r_mass[r - e] for r in range(max(0, e), min(m, m + e)))
            for e in range(-(m - 1), m)
        }
        z = sum(e_mass.values())
        two128 = Decimal(2) ** 128
        cdf = Decimal(0)
        cdfs = {}
        for e in range(-(m - 1), m - 1):
            cdf += e_mass[e]
            cdfs[e] = cdf
        for e in es:
            if e < m - 1:  # boundary T[e] (index e + m - 1) is 2^128 P(E <= e)
                assert abs(Decimal(t[e + m - 1]) - two128 * cdfs[e] / z) < 2
    # sampling: outcomes in [-(m-1), m-1], each with its probability
    out = np.empty(200_000, dtype=np.int64)
    _tables._draw_table(tab, out, SeededSource(5))
    assert -(m - 1) <= out.min() and out.max() <= m - 1
    probs = np.array([float(e_mass[e] / z) for e in range(-(m - 1), m)])
    counts = np.bincount(out + m - 1, minlength=2 * m - 1)
    keep = probs * out.size >= 5
    if keep.sum() > 1:
        assert _chisq_p(counts[keep], probs[keep]) > P_FLOOR


@pytest.mark.slow
def test_laplace_opendp_two_sample_large_scale() -> None:
    dp = pytest.importorskip("opendp.prelude")
    dp.enable_features("contrib")
    scale, n = 2e5, 40_000
    meas = dp.m.make_laplace(dp.vector_domain(dp.atom_domain(T=int)), dp.l1_distance(T=int), scale)
    theirs = np.asarray(meas([0] * n), dtype=np.int64)
    ours = sample_discrete_laplace(scale, size=n, rng=17)
    assert _two_sample_p(ours, theirs, _quantile_edges(scale, 50, dist="laplace")) > P_FLOOR


def test_laplace_large_scale_seeded_reproducible_and_from_its_source(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    a = sample_discrete_laplace(1e6, size=1001, rng=42)
    assert (a == sample_discrete_laplace(1e6, size=1001, rng=42)).all()
    assert not (a == sample_discrete_laplace(1e6, size=1001, rng=43)).all()
    monkeypatch.setattr(rng_module, "csprng_bytes", _no_csprng)
    src = _CountingSource(9)
    x = _noise.draw_discrete_laplace(1e6, 1001, source=src)
    assert 2 * 501 <= src.count <= 2 * 501 + 20  # D and E: 32 bits each
    assert (_noise.draw_discrete_laplace(1e6, 1001, source=_CountingSource(9)) == x).all()
