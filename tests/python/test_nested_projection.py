"""The in-order pivoted Cholesky path (nystrom_kme.landmark_search._nested_projection): every prefix's
projection P_m mu_hat, its residuals and weights against dense numpy, and its accuracy on
numerically rank-deficient kernel matrices against an extended-precision factorization."""

from __future__ import annotations

import numpy as np
import pytest

from nystrom_kme import _core
from nystrom_kme.landmark_search._nested_projection import NestedProjection


def _dense_projection(K, mu, S):
    """(t, alpha): ||P_S mu_hat||^2 and the weights K_S^{-1} mu_hat(S) (K_S well conditioned)."""
    alpha = np.linalg.solve(K[np.ix_(S, S)], mu[S])
    return float(alpha @ mu[S]), alpha


def test_every_prefix_matches_dense_numpy():
    rng = np.random.default_rng(1)
    X, V = rng.normal(size=(400, 8)), rng.normal(size=(20, 8))
    k = _core.Kernel("gaussian", 1.0)
    K = _core.kernel_matrix(X, X, k)
    mu, mu_V = K.mean(axis=1), _core.kernel_matrix(V, X, k).mean(axis=1)
    idx = rng.choice(400, size=300, replace=False)
    path = NestedProjection(k, 1, probes=(V, mu_V))
    probe_g = {}
    for a, b in [(0, 7), (7, 40), (40, 41), (41, 200), (200, 300)]:  # uneven blocks
        path.extend(X[idx[a:b]], mu[idx[a:b]])
        probe_g[b] = path.probe_residuals()
    assert path.size == 300 and path.rank == 300 and path.is_pivot.all()
    for m in [1, 7, 8, 40, 41, 200, 300]:
        t, alpha = _dense_projection(K, mu, idx[:m])
        assert path.t[m - 1] == pytest.approx(t, abs=1e-12)
        np.testing.assert_allclose(path.weights(m), alpha, atol=1e-9)
        if m in probe_g:
            np.testing.assert_allclose(probe_g[m], mu_V - _core.kernel_matrix(V, X[idx[:m]], k) @ alpha, atol=1e-12)
    for i in [1, 2, 10, 150, 299]:  # each landmark's residual against the ones before it
        _, alpha = _dense_projection(K, mu, idx[:i])
        assert path.residuals[i] == pytest.approx(mu[idx[i]] - K[idx[i], idx[:i]] @ alpha, abs=1e-12)


def test_repeated_rows_are_not_pivots_and_change_nothing():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(100, 3))
    k = _core.Kernel("gaussian", 1.0)
    mu = _core.kernel_matrix(X, X, k).mean(axis=1)
    path = NestedProjection(k, 1)
    path.extend(X[:30], mu[:30])
    path.extend(X[[3, 3, 7]], mu[[3, 3, 7]])
    assert path.rank == 30 and not path.is_pivot[30:].any()
    assert np.all(path.t[30:] == path.t[29])
    np.testing.assert_allclose(path.residuals[30:], 0.0, atol=1e-12)
    beta = path.weights(33)
    assert np.all(beta[30:] == 0.0)


@pytest.mark.parametrize("seed", [0, 1])
def test_rank_deficient_path_matches_extended_precision(seed):
    """2-d points and a median bandwidth: K_m has numerical rank ~ 90 of 600. On the pivots
    the path keeps, t(m) agrees with a long-double Cholesky to 1e-7 of sigma^2 (the
    statistical error's square, the scale the certificate compares with), and never
    exceeds ||mu_hat_n||^2."""
    n = 1500
    X = np.random.default_rng(100).normal(size=(n, 2))
    bw = 1.66  # the median distance of these points
    k = _core.Kernel("gaussian", bw)
    norm2 = _core.kernel_total_sum(X, X, k) / n**2
    sigma2 = (1.0 - norm2) / (n - 1)
    idx = np.argsort(np.random.default_rng(seed).standard_exponential(n))[:600]
    mu = _core.kernel_row_sums(np.ascontiguousarray(X[idx]), X, k) / n
    path = NestedProjection(k, 1)
    for a in range(0, 600, 16):
        path.extend(X[idx[a : a + 16]], mu[a : a + 16])
    assert path.rank < 150 and np.all(path.t <= norm2)
    # the same pivots in long double
    Xl = X.astype(np.longdouble)
    P = Xl[idx[path.is_pivot]]
    Kp = np.exp(-((P[:, None, :] - P[None, :, :]) ** 2).sum(-1) / (2 * np.longdouble(bw) ** 2))
    mup = np.exp(-((P[:, None, :] - Xl[None, :, :]) ** 2).sum(-1) / (2 * np.longdouble(bw) ** 2)).mean(axis=1)
    r = P.shape[0]
    L = np.zeros((r, r), dtype=np.longdouble)
    c = np.zeros(r, dtype=np.longdouble)
    for j in range(r):
        v = Kp[j:, j] - L[j:, :j] @ L[j, :j]
        L[j:, j] = v / np.sqrt(v[0])
        c[j] = (mup[j] - L[j, :j] @ c[:j]) / L[j, j]
    t_ref = np.cumsum(c * c).astype(np.float64)
    ranks = np.cumsum(path.is_pivot)
    assert np.abs(path.t[ranks > 0] - t_ref[ranks[ranks > 0] - 1]).max() <= 1e-7 * sigma2
