"""Tests of nystrom_kme.datasets.GaussianMixture against independent references.

References are Monte Carlo averages (tolerances from the MC standard error),
direct numerical integration (scipy.integrate, trapezoid grids) and the
moments of the mixture; none of them reuses the code under test. Nothing here
needs the compiled core: the one path that calls it is checked with a fake.
"""

from __future__ import annotations

import tracemalloc
import types

import numpy as np
import pytest
from scipy import integrate

from nystrom_kme.datasets import GaussianMixture

N_SE = 5.0  # Monte Carlo tolerance, in standard errors


def gauss_k(A, B, sigma):
    """Dense Gaussian kernel matrix, numpy only."""
    A = np.atleast_2d(A)
    B = np.atleast_2d(B)
    d2 = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2.0 * A @ B.T
    return np.exp(-np.maximum(d2, 0.0) / (2.0 * sigma**2))


def normal_pdf(x, mean, var):
    return np.exp(-((x - mean) ** 2) / (2.0 * var)) / np.sqrt(2.0 * np.pi * var)


def mixture_pdf_1d(x, centers, variances, weights):
    return sum(w * normal_pdf(x, c, v) for c, v, w in zip(centers, variances, weights))


# a 1-D and a 3-D mixture with unequal variances and weights
C1 = np.array([[-1.0], [2.0]])
V1 = np.array([0.5, 2.0])
W1 = np.array([0.3, 0.7])

C3 = np.array([[-1.0, 0.5, 2.0], [1.5, -0.5, 0.0]])
V3 = np.array([0.3, 1.7])
W3 = np.array([0.6, 0.4])


# --------------------------------------------------------------------------- #
# mean_embedding
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("sigma", [2.0, 4.0, 8.0])
def test_mean_embedding_matches_monte_carlo(sigma):
    gm = GaussianMixture(random_state=0)
    rng = np.random.default_rng(100)
    Y = np.vstack([gm.centers_[:2], gm.sample(3, random_state=1), rng.normal(size=(1, 10))])
    X = gm.sample(200_000, random_state=rng)
    K = gauss_k(X, Y, sigma)  # (200000, 6)
    mc = K.mean(axis=0)
    se = K.std(axis=0, ddof=1) / np.sqrt(X.shape[0])
    mu = gm.mean_embedding(Y, sigma)
    assert mu.shape == (6,) and mu.dtype == np.float64
    assert (se > 0).all()
    np.testing.assert_array_less(np.abs(mu - mc), N_SE * se)


def test_mean_embedding_1d_quad():
    gm = GaussianMixture(2, 1, centers=C1, component_variance=V1, weights=W1)
    sigma = 0.8
    ys = np.array([-3.0, -1.0, 0.0, 0.7, 2.0, 5.5])
    ref = [
        integrate.quad(
            lambda x, y=y: mixture_pdf_1d(x, C1[:, 0], V1, W1) * np.exp(-((x - y) ** 2) / (2 * sigma**2)),
            -np.inf,
            np.inf,
            epsabs=1e-13,
            epsrel=1e-12,
        )[0]
        for y in ys
    ]
    np.testing.assert_allclose(gm.mean_embedding(ys[:, None], sigma), ref, rtol=1e-9, atol=1e-14)


def test_mean_embedding_3d_by_coordinatewise_quad():
    # Each isotropic component factorises over coordinates, so
    # mu(y) = sum_i pi_i prod_k int N(x; c_ik, s_i^2) k_1d(x, y_k) dx: this checks the d/2 power.
    gm = GaussianMixture(2, 3, centers=C3, component_variance=V3, weights=W3)
    sigma = 1.3
    Y = np.array([[0.0, 0.0, 0.0], [-1.0, 0.5, 2.0], [2.0, 1.0, -1.0]])

    def one_dim(c, v, y):
        def f(x):
            return normal_pdf(x, c, v) * np.exp(-((x - y) ** 2) / (2 * sigma**2))

        return integrate.quad(f, -np.inf, np.inf, epsabs=1e-14, epsrel=1e-12)[0]

    ref = [sum(W3[i] * np.prod([one_dim(C3[i, k], V3[i], y[k]) for k in range(3)]) for i in range(2)) for y in Y]
    np.testing.assert_allclose(gm.mean_embedding(Y, sigma), ref, rtol=1e-9)


def test_mean_embedding_blocks_and_memory():
    gm = GaussianMixture(random_state=2)
    Y = np.random.default_rng(3).normal(scale=3.0, size=(200_000, 10))
    tracemalloc.start()
    try:
        mu = gm.mean_embedding(Y, 3.0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # a full (n_y, p, d) float64 temporary would be 128 MB
    assert peak < 40e6, peak
    idx = np.array([0, 1, 12_000, 13_107, 13_108, 99_999, 199_999])
    np.testing.assert_allclose(mu[idx], gm.mean_embedding(Y[idx], 3.0), rtol=1e-14)
    # independent check of the scattered rows
    X = gm.sample(100_000, random_state=4)
    K = gauss_k(X, Y[idx], 3.0)
    se = K.std(axis=0, ddof=1) / np.sqrt(X.shape[0])
    np.testing.assert_array_less(np.abs(mu[idx] - K.mean(0)), N_SE * se + 1e-12)


# --------------------------------------------------------------------------- #
# embedding_norm2
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("sigma", [2.0, 5.0])
def test_embedding_norm2_matches_monte_carlo_pairs(sigma):
    gm = GaussianMixture(random_state=5, component_variance=np.linspace(0.5, 2.0, 8))
    rng = np.random.default_rng(6)
    n = 200_000
    X, Xp = gm.sample(n, random_state=rng), gm.sample(n, random_state=rng)
    k = np.exp(-((X - Xp) ** 2).sum(1) / (2 * sigma**2))
    se = k.std(ddof=1) / np.sqrt(n)
    val = gm.embedding_norm2(sigma)
    assert isinstance(val, float)
    assert abs(val - k.mean()) < N_SE * se


def test_embedding_norm2_1d_dblquad():
    gm = GaussianMixture(2, 1, centers=C1, component_variance=V1, weights=W1)
    sigma = 0.8

    def f(y, x):
        return (
            mixture_pdf_1d(x, C1[:, 0], V1, W1)
            * mixture_pdf_1d(y, C1[:, 0], V1, W1)
            * np.exp(-((x - y) ** 2) / (2 * sigma**2))
        )

    ref = integrate.dblquad(f, -16.0, 20.0, -16.0, 20.0, epsabs=1e-12, epsrel=1e-10)[0]
    assert gm.embedding_norm2(sigma) == pytest.approx(ref, rel=1e-8)


def test_embedding_norm2_3d_by_coordinatewise_grid():
    # ||mu||^2 = sum_ij pi_i pi_j prod_k int int N(x; c_ik, s_i^2) N(x'; c_jk, s_j^2) k_1d(x, x'),
    # each 1-D double integral by the trapezoid rule on a fine grid.
    gm = GaussianMixture(2, 3, centers=C3, component_variance=V3, weights=W3)
    sigma = 1.3
    t = np.linspace(-12.0, 12.0, 1201)
    h = t[1] - t[0]
    Kt = np.exp(-((t[:, None] - t[None, :]) ** 2) / (2 * sigma**2))
    ref = 0.0
    for i in range(2):
        for j in range(2):
            prod = 1.0
            for k in range(3):
                a = normal_pdf(t, C3[i, k], V3[i])
                b = normal_pdf(t, C3[j, k], V3[j])
                prod *= h * h * (a @ Kt @ b)
            ref += W3[i] * W3[j] * prod
    assert gm.embedding_norm2(sigma) == pytest.approx(ref, rel=1e-9)


# --------------------------------------------------------------------------- #
# embedding_error
# --------------------------------------------------------------------------- #
def test_embedding_error_matches_monte_carlo():
    gm = GaussianMixture(random_state=7)
    sigma = 4.0
    rng = np.random.default_rng(8)
    m = 40
    P = gm.sample(m, random_state=rng) + 0.7 * rng.normal(size=(m, 10))
    w = rng.normal(1.0 / m, 0.03, size=m)  # real weights, some negative
    assert (w < 0).any()
    quad = float(w @ gauss_k(P, P, sigma) @ w)

    # err^2 = E k(x, x') - 2 sum_j w_j E k(x, x_j) + w^T K w, the expectations as
    # one Monte Carlo average over independent pairs (x, x').
    n = 200_000
    X, Xp = gm.sample(n, random_state=rng), gm.sample(n, random_state=rng)
    f = np.exp(-((X - Xp) ** 2).sum(1) / (2 * sigma**2)) - 2.0 * gauss_k(X, P, sigma) @ w
    mc = f.mean() + quad
    se = f.std(ddof=1) / np.sqrt(n)

    err = gm.embedding_error(P, w, sigma, gram_quadratic=quad)
    assert isinstance(err, float) and err > 0
    assert abs(err**2 - mc) < N_SE * se
    assert mc > 20 * se  # the comparison is informative


def test_embedding_error_decays_like_inverse_sqrt_n():
    gm = GaussianMixture(random_state=9)
    sigma = 4.0
    rng = np.random.default_rng(10)

    def mean_err(n, draws=20):
        errs = []
        for _ in range(draws):
            X = gm.sample(n, random_state=rng)
            w = np.full(n, 1.0 / n)
            quad = float(w @ gauss_k(X, X, sigma) @ w)
            errs.append(gm.embedding_error(X, w, sigma, gram_quadratic=quad))
        return np.mean(errs)

    ratio = mean_err(100) / mean_err(1600)  # sqrt(1600 / 100) = 4
    assert 2.5 < ratio < 6.0, ratio


def test_embedding_error_uses_core_kernel_sums(monkeypatch):
    """Without gram_quadratic the core is called as documented (checked with a fake core)."""
    import nystrom_kme.datasets

    calls = []

    class FakeKernel:
        def __init__(self, name, bandwidth):
            self.name, self.bandwidth = name, bandwidth

    def fake_kernel_sums(A, B, W, kernel):
        for arr in (A, B, W):
            assert isinstance(arr, np.ndarray) and arr.dtype == np.float64
            assert arr.flags.c_contiguous
        assert W.shape == (B.shape[0], 1)
        assert kernel.name == "gaussian"
        calls.append(kernel.bandwidth)
        return gauss_k(A, B, kernel.bandwidth) @ W

    fake = types.ModuleType("nystrom_kme._core")
    fake.Kernel = FakeKernel
    fake.kernel_sums = fake_kernel_sums
    monkeypatch.setattr(nystrom_kme.datasets, "_core", fake)

    gm = GaussianMixture(random_state=11)
    rng = np.random.default_rng(12)
    P = np.asfortranarray(gm.sample(30, random_state=rng))  # not C-contiguous on input
    w = rng.normal(size=30).tolist()
    quad = float(np.asarray(w) @ gauss_k(P, P, 3.0) @ np.asarray(w))
    got = gm.embedding_error(P, w, 3.0)
    assert calls == [3.0]
    assert got == pytest.approx(gm.embedding_error(P, w, 3.0, gram_quadratic=quad), rel=1e-12)


def test_embedding_error_clamps_rounding_only():
    gm = GaussianMixture(random_state=13)
    sigma = 4.0
    x0 = gm.centers_[:1]
    # one Dirac with weight 1: err^2 = ||mu||^2 - 2 mu(x0) + q; choose q so it is ~0 or negative
    q0 = 2.0 * gm.mean_embedding(x0, sigma)[0] - gm.embedding_norm2(sigma)
    n2 = gm.embedding_norm2(sigma)
    err = gm.embedding_error(x0, [1.0], sigma, gram_quadratic=q0 - 1e-14 * n2)
    assert err == pytest.approx(0.0, abs=1e-6)
    with pytest.raises(RuntimeError):
        gm.embedding_error(x0, [1.0], sigma, gram_quadratic=q0 - 1e-6)


# --------------------------------------------------------------------------- #
# sampling and construction
# --------------------------------------------------------------------------- #
def test_sample_moments():
    centers = np.array([[0.0, 1.0, -2.0, 3.0], [2.0, -1.0, 0.0, 0.5], [-3.0, 0.0, 1.0, -1.0]])
    weights = np.array([0.2, 0.5, 0.3])
    variances = np.array([0.5, 1.0, 2.0])
    gm = GaussianMixture(3, 4, centers=centers, component_variance=variances, weights=weights)
    n = 100_000
    X = gm.sample(n, random_state=14)
    assert X.shape == (n, 4) and X.dtype == np.float64

    mean = weights @ centers
    cov = sum(w * (v * np.eye(4) + np.outer(c, c)) for w, v, c in zip(weights, variances, centers))
    cov -= np.outer(mean, mean)

    np.testing.assert_array_less(np.abs(X.mean(0) - mean), N_SE * np.sqrt(np.diag(cov) / n))
    Z = X - mean
    prods = Z[:, :, None] * Z[:, None, :]  # (n, 4, 4), unbiased for cov since the mean is exact
    se = prods.std(axis=0, ddof=1) / np.sqrt(n)
    np.testing.assert_array_less(np.abs(prods.mean(0) - cov), N_SE * se)


def test_default_parameters_and_center_distribution():
    gm = GaussianMixture(random_state=0)
    assert gm.n_components == 8 and gm.dim == 10
    assert gm.centers_.shape == (8, 10) and gm.centers_.dtype == np.float64
    np.testing.assert_array_equal(gm.variances_, np.ones(8))
    np.testing.assert_array_equal(gm.weights_, np.full(8, 1 / 8))
    assert repr(gm) == "GaussianMixture(n_components=8, dim=10)"

    big = GaussianMixture(200, 50, random_state=1)  # 10^4 centre coordinates ~ N(0, 5)
    c = big.centers_.ravel()
    assert abs(c.mean()) < N_SE * np.sqrt(5.0 / c.size)
    assert abs(c.var() - 5.0) < N_SE * 5.0 * np.sqrt(2.0 / c.size)
    small = GaussianMixture(200, 50, center_variance=0.25, random_state=1)
    np.testing.assert_allclose(small.centers_, big.centers_ * np.sqrt(0.25 / 5.0), rtol=1e-15)


def test_zero_weight_component_is_never_sampled():
    gm = GaussianMixture(2, 1, centers=[[-100.0], [100.0]], weights=[0.0, 1.0])
    X = gm.sample(1000, random_state=0)
    assert (X > 50).all()
    assert np.isfinite(gm.mean_embedding(X[:5], 1.0)).all()
    assert np.isfinite(gm.embedding_norm2(1.0))


def test_reproducibility():
    a, b = GaussianMixture(random_state=7), GaussianMixture(random_state=7)
    np.testing.assert_array_equal(a.centers_, b.centers_)
    np.testing.assert_array_equal(a.sample(50), b.sample(50))  # the kept generator
    np.testing.assert_array_equal(a.sample(50, random_state=3), b.sample(50, random_state=3))
    g = GaussianMixture(random_state=np.random.default_rng(7))
    np.testing.assert_array_equal(g.centers_, a.centers_)
    assert not np.array_equal(GaussianMixture(random_state=8).centers_, a.centers_)
    assert not np.array_equal(a.sample(50), a.sample(50))  # the kept generator advances
    rng1, rng2 = np.random.default_rng(5), np.random.default_rng(5)
    np.testing.assert_array_equal(a.sample(20, random_state=rng1), a.sample(20, random_state=rng2))
    # a passed Generator is used and advanced, not copied
    fresh = np.random.default_rng(5)
    assert not np.array_equal(a.sample(20, random_state=rng1), a.sample(20, random_state=fresh))


# --------------------------------------------------------------------------- #
# bad inputs
# --------------------------------------------------------------------------- #
GM = GaussianMixture(3, 2, random_state=0)
PTS = np.zeros((4, 2))
W4 = np.full(4, 0.25)

BAD = [
    (lambda: GaussianMixture(0, 2), "n_components"),
    (lambda: GaussianMixture(2.5, 2), "n_components"),
    (lambda: GaussianMixture(True, 2), "n_components"),
    (lambda: GaussianMixture(3, 0), "dim"),
    (lambda: GaussianMixture(3, -1), "dim"),
    (lambda: GaussianMixture(3, 2, center_variance=-1.0), "center_variance"),
    (lambda: GaussianMixture(3, 2, center_variance=np.nan), "center_variance"),
    (lambda: GaussianMixture(3, 2, component_variance=0.0), "component_variance"),
    (lambda: GaussianMixture(3, 2, component_variance=[1.0, 2.0]), "component_variance"),
    (lambda: GaussianMixture(3, 2, component_variance=[1.0, np.inf, 1.0]), "component_variance"),
    (lambda: GaussianMixture(3, 2, component_variance=[1.0, -1.0, 1.0]), "component_variance"),
    (lambda: GaussianMixture(3, 2, weights=[0.5, 0.5]), "weights"),
    (lambda: GaussianMixture(3, 2, weights=[0.5, 0.6, -0.1]), "weights"),
    (lambda: GaussianMixture(3, 2, weights=[0.3, 0.3, 0.3]), "weights"),
    (lambda: GaussianMixture(3, 2, weights=[1 / 3, 1 / 3, 1 / 3 + 1e-9]), "weights"),
    (lambda: GaussianMixture(3, 2, weights=[np.nan, 0.5, 0.5]), "weights"),
    (lambda: GaussianMixture(3, 2, centers=np.zeros((3, 3))), "centers"),
    (lambda: GaussianMixture(3, 2, centers=np.zeros(6)), "centers"),
    (lambda: GaussianMixture(3, 2, centers=[[0, 0], [np.inf, 0], [1, 1]]), "centers"),
    (lambda: GaussianMixture(3, 2, random_state="seed"), "random_state"),
    (lambda: GaussianMixture(3, 2, random_state=-3), "random_state"),
    (lambda: GaussianMixture(3, 2, random_state=1.5), "random_state"),
    (lambda: GM.sample(0), "n_samples"),
    (lambda: GM.sample(-5), "n_samples"),
    (lambda: GM.sample(10.0), "n_samples"),
    (lambda: GM.sample(10, random_state="x"), "random_state"),
    (lambda: GM.mean_embedding(PTS, 0.0), "bandwidth"),
    (lambda: GM.mean_embedding(PTS, -1.0), "bandwidth"),
    (lambda: GM.mean_embedding(PTS, np.inf), "bandwidth"),
    (lambda: GM.mean_embedding(PTS, np.nan), "bandwidth"),
    (lambda: GM.mean_embedding(PTS, "1"), "bandwidth"),
    (lambda: GM.mean_embedding(np.zeros((4, 3)), 1.0), "Y"),
    (lambda: GM.mean_embedding(np.zeros(2), 1.0), "Y"),
    (lambda: GM.mean_embedding([[0.0, np.nan]], 1.0), "Y"),
    (lambda: GM.embedding_norm2(0.0), "bandwidth"),
    (lambda: GM.embedding_norm2(None), "bandwidth"),
    (lambda: GM.embedding_error(PTS, W4, -2.0, gram_quadratic=0.1), "bandwidth"),
    (lambda: GM.embedding_error(np.zeros((4, 5)), W4, 1.0, gram_quadratic=0.1), "points"),
    (lambda: GM.embedding_error([[np.inf, 0.0]] * 4, W4, 1.0, gram_quadratic=0.1), "points"),
    (lambda: GM.embedding_error(PTS, np.full(3, 1 / 3), 1.0, gram_quadratic=0.1), "weights"),
    (lambda: GM.embedding_error(PTS, W4[:, None], 1.0, gram_quadratic=0.1), "weights"),
    (lambda: GM.embedding_error(PTS, [0.25, np.nan, 0.25, 0.25], 1.0, gram_quadratic=0.1), "weights"),
    (lambda: GM.embedding_error(PTS, W4, 1.0, gram_quadratic=np.nan), "gram_quadratic"),
    (lambda: GM.embedding_error(PTS, W4, 1.0, gram_quadratic="a"), "gram_quadratic"),
]


@pytest.mark.parametrize("call, name", BAD, ids=[f"{i}-{n}" for i, (_, n) in enumerate(BAD)])
def test_bad_inputs_raise_value_error_naming_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call()
