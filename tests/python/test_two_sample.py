"""Permutation two-sample tests: calibration under H0, power, and the m = n identity."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import nystrom_kme as nk


def test_nystrom_with_all_points_is_the_exact_biased_mmd(rng):
    X, Y = rng.normal(size=(120, 3)), rng.normal(size=(80, 3)) + 0.3
    k = nk.Gaussian(1.5)
    res = nk.two_sample_test(X, Y, kernel=k, n_landmarks=200, n_permutations=50, random_state=0)
    assert res.statistic == pytest.approx(nk.mmd2_exact(X, Y, kernel=k), rel=1e-9)
    exact = nk.two_sample_test(X, Y, kernel=k, method="exact", n_permutations=50, random_state=0)
    assert exact.statistic == pytest.approx(nk.mmd2_exact(X, Y, kernel=k), rel=1e-12)
    # same permutations (same random_state, landmarks drawn after them): same null
    np.testing.assert_allclose(res.null_distribution, exact.null_distribution, rtol=1e-8)


def test_null_distribution_matches_explicit_permutations(rng):
    X, Y = rng.normal(size=(40, 2)), rng.normal(size=(30, 2))
    k = nk.Gaussian(1.0)
    res = nk.two_sample_test(X, Y, kernel=k, method="exact", n_permutations=30, random_state=7)
    # replay the generator: pooled-sample bandwidth is numeric, so the first draws are the permutations
    gen = np.random.default_rng(7)
    Z = np.concatenate([X, Y])
    for b in range(30):
        perm = gen.permutation(70)
        labels = np.zeros(70, dtype=bool)
        labels[:40] = True
        labels = labels[perm]
        ref = nk.mmd2_exact(Z[labels], Z[~labels], kernel=k)
        assert res.null_distribution[b] == pytest.approx(ref, rel=1e-9, abs=1e-15)
    assert res.pvalue == (1 + np.sum(res.null_distribution >= res.statistic)) / 31


def test_level_under_h0(rng):
    """Rejections at level 0.05 over 200 repetitions lie in the binomial 99% interval."""
    reps, rejections = 200, 0
    for r in range(reps):
        X, Y = rng.normal(size=(40, 2)), rng.normal(size=(40, 2))
        res = nk.two_sample_test(X, Y, kernel=nk.Gaussian(1.5), n_permutations=99, random_state=r)
        rejections += res.pvalue <= 0.05
    lo, hi = stats.binom.interval(0.99, reps, 0.05)
    assert lo <= rejections <= hi


def test_power_under_mean_shift(rng):
    """Mean shift 0.5 on one axis in d = 5, n1 = n2 = 500: power >= 0.9 (measured ~1.0)."""
    reps, rejections = 20, 0
    shift = np.zeros(5)
    shift[0] = 0.5
    for r in range(reps):
        X, Y = rng.normal(size=(500, 5)), rng.normal(size=(500, 5)) + shift
        rejections += nk.two_sample_test(X, Y, n_permutations=100, random_state=r).pvalue <= 0.05
    assert rejections / reps >= 0.9


def test_reproducible_and_validated(rng):
    X, Y = rng.normal(size=(50, 2)), rng.normal(size=(60, 2))
    a = nk.two_sample_test(X, Y, n_permutations=20, random_state=3)
    b = nk.two_sample_test(X, Y, n_permutations=20, random_state=3)
    assert a.statistic == b.statistic and np.array_equal(a.null_distribution, b.null_distribution)
    assert a.null_distribution.shape == (20,) and 0 < a.pvalue <= 1
    with pytest.raises(ValueError, match="method"):
        nk.two_sample_test(X, Y, method="asymptotic")
    with pytest.raises(ValueError, match="n_permutations"):
        nk.two_sample_test(X, Y, n_permutations=0)
    with pytest.raises(ValueError, match="n_landmarks=111 exceeds"):
        nk.two_sample_test(X, Y, n_landmarks=111)
    with pytest.raises(ValueError, match="nystrom"):
        nk.two_sample_test(X, Y, method="exact", n_landmarks=5)
    with pytest.raises(ValueError, match="at least 2"):
        nk.two_sample_test(X[:1], Y)
