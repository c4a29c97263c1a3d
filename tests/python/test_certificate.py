"""The certificate's bounds (nystrom_kme._certificate): their formulas against numpy, and
the prequential estimate of e(m)^2 = ||mu_hat_n - P_m mu_hat_n||^2 against the exact
value from dense numpy over repetitions (unbiased, with and without replacement; the
upper bound covers)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from nystrom_kme import _core
from nystrom_kme._blas import one_blas_thread
from nystrom_kme._certificate import WINDOW_MIN, prequential_bound, probe_bound, z_value
from nystrom_kme._nested_projection import NestedProjection


def _skewness(v):
    d = v - v.mean()
    return float(np.mean(d**3)) / float(v.std(ddof=1)) ** 3


def test_bounds_follow_their_formulas():
    rng = np.random.default_rng(0)
    u = 0.5 + 1e-3 * rng.standard_exponential(300)  # right-skewed, as residuals are
    t_m, z = 0.499, 2.0
    b = prequential_bound(u, t_m, z)
    window = u[-100:]  # the last max(64, m / 3) values
    assert b.n_values == 100
    assert b.estimate == pytest.approx(window.mean() - t_m, rel=1e-12)
    assert b.std_error == pytest.approx(window.std(ddof=1) / 10, rel=1e-12)
    gamma = _skewness(window)
    assert gamma > 1
    z_skew = z + gamma * (2 * z * z + 1) / (6 * 10)  # Cornish-Fisher, k = 100
    assert b.bound == pytest.approx(b.estimate + z_skew * b.std_error, rel=1e-9)
    assert b.norm2 == pytest.approx(window.mean(), rel=1e-12)
    # a left-skewed sample gets no correction
    flipped = prequential_bound(1.0 - u, 0.499, z)
    assert flipped.bound == pytest.approx(max(flipped.estimate, 0.0) + z * flipped.std_error, rel=1e-12)
    # a negative estimate certifies nothing by itself
    low = prequential_bound(u, 0.6, z)
    assert low.estimate < 0 and low.bound > 0
    # too few values: no bound (the first landmark's value is left out)
    assert prequential_bound(u[:WINDOW_MIN], t_m, z).bound == math.inf
    assert prequential_bound(u[: WINDOW_MIN + 1], t_m, z).n_values == WINDOW_MIN
    g = 1e-4 * rng.standard_normal(256) + 2e-4
    p = probe_bound(g, 0.3, 1.5)
    assert p.estimate == pytest.approx(g.mean(), rel=1e-9) and p.n_values == 256
    assert p.std_error == pytest.approx(g.std(ddof=1) / 16, rel=1e-9)
    assert z_value(0.99) == pytest.approx(2.3263478740, rel=1e-9)


@pytest.fixture(scope="module")
def blob():
    """2000 points of a 3-d Gaussian and a local kernel (bandwidth 1 against scales 2, 1,
    0.5): the residual of mu_hat is carried by few rows, the hard case for a sample."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(2000, 3)) * np.array([2.0, 1.0, 0.5])
    k = _core.Kernel("gaussian", 1.0)
    K = _core.kernel_matrix(X, X, k)
    return X, k, K.mean(axis=1)


@pytest.mark.parametrize("replace", [True, False])
def test_prequential_estimate_is_unbiased_and_its_bound_covers(blob, replace):
    """300 landmark streams, m = 160: the mean of the estimates of e(m)^2 is within 4
    standard errors of the mean exact value (dense numpy), and the bound at one-sided 99%
    covers the exact value in >= 96% of streams (measured 98%: the residuals' heavy tail
    costs a little; Binomial(300, 0.02): P(> 12) < 1%)."""
    X, k, mu = blob
    n, m = X.shape[0], 160
    norm2 = mu.mean()
    errors, misses = [], 0
    with one_blas_thread():  # as the search: small LAPACK calls thrash on a busy machine
        for seed in range(300):
            r = np.random.default_rng(1000 + seed)
            idx = r.integers(0, n, size=m) if replace else r.permutation(n)[:m]
            mass = np.ones(m) if replace else 1.0 - np.arange(m) / n
            path = NestedProjection(k, 1)
            path.extend(X[idx], mu[idx])
            u = mass * path.residuals + np.concatenate([[0.0], path.t[:-1]])
            b = prequential_bound(u, float(path.t[-1]), z_value(0.99))
            exact = norm2 - path.t[-1]
            errors.append(b.estimate - exact)
            misses += exact > b.bound
    errors = np.array(errors)
    assert abs(errors.mean()) <= 4 * errors.std(ddof=1) / math.sqrt(errors.size), errors.mean()
    assert misses <= 12, misses


def test_a_draw_without_replacement_sees_the_residual_scaled_by_the_mass_left(blob):
    """The identity behind the mass factor, exactly: g vanishes on the landmarks, so the
    mean of g_S over the rows not in S (where the next draw without replacement falls)
    is e(S)^2 / (1 - |S| / n) (dense numpy, no randomness)."""
    X, k, mu = blob
    n = X.shape[0]
    S = np.random.default_rng(7).permutation(n)[:300]
    with one_blas_thread():
        path = NestedProjection(k, 1)
        path.extend(X[S], mu[S])
    beta = path.weights(S.size)
    g = mu - _core.kernel_matrix(X, X[S], k) @ beta  # the residual at every row
    e2 = mu.mean() - path.t[-1]
    rest = np.setdiff1d(np.arange(n), S)
    assert g.mean() == pytest.approx(e2, rel=1e-6)
    np.testing.assert_allclose(g[S], 0.0, atol=1e-9)
    assert g[rest].mean() == pytest.approx(e2 / (1 - S.size / n), rel=1e-6)
