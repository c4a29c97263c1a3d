"""nystrom_kme.bounds.spectrum: the estimators against the exact spectrum of K_n / n."""

from __future__ import annotations

import math

import numpy as np
import pytest
from bounds_data import section_6_1_mixture

import nystrom_kme as nk
from nystrom_kme import bounds as B


@pytest.fixture(scope="module")
def mixture_problem():
    return section_6_1_mixture()


def sq_dists(A: np.ndarray, Bm: np.ndarray) -> np.ndarray:
    d2 = (A * A).sum(1)[:, None] + (Bm * Bm).sum(1)[None, :] - 2.0 * A @ Bm.T
    return np.maximum(d2, 0.0)


# --------------------------------------------------------------------------- #
# estimators against the exact spectrum of K_n / n
# --------------------------------------------------------------------------- #
def test_effective_dimension_within_10_percent_of_exact(mixture_problem):
    gm, kernel = mixture_problem
    n = 2000
    X = gm.sample(n, random_state=11)
    sigma = float(kernel.bandwidth)
    Kn = np.exp(-sq_dists(X, X) / (2 * sigma**2))
    w, U = np.linalg.eigh(Kn / n)  # exact spectrum of C_n
    w = np.maximum(w, 0.0)
    m = B.theorem_4_1_min_landmarks(float(w[-1]), 0.05)
    lams = [B.theorem_4_1_lambda(m, 0.05), 0.1, 1e-2, 1e-3]
    for method in ("subsample", "nystrom"):
        sp = B.estimate_spectrum(X, kernel, max_samples=500, method=method, random_state=3, n_threads=1)
        assert sp.n_used == 500 and sp.eigenvalues.size <= 500
        assert sp.op_norm == pytest.approx(w[-1], rel=0.1)
        for lam in lams:
            exact = float(np.sum(w / (w + lam)))
            est = sp.effective_dimension(lam)
            assert abs(est - exact) <= 0.1 * exact, (method, lam, est, exact)
        # N_inf: exact sup over the sample of <phi(x), (C_n + lam)^{-1} phi(x)> = n max_i lev_i
        for lam in (0.1, 1e-2):
            lev = n * ((U * U) @ (w / (w + lam)))
            est = sp.max_leverage(lam)
            assert 0.75 * lev.max() <= est <= min(1.25 * lev.max(), 1.0 / lam)


def test_spectrum_is_exact_when_max_samples_covers_the_data(mixture_problem):
    gm, kernel = mixture_problem
    n = 300
    X = gm.sample(n, random_state=12)
    sigma = float(kernel.bandwidth)
    w, U = np.linalg.eigh(np.exp(-sq_dists(X, X) / (2 * sigma**2)) / n)
    w = np.maximum(w, 0.0)
    full = B.estimate_spectrum(X, kernel, max_samples=n, random_state=0)
    assert full.n_used == n and full.reliable_lambda == 0.0
    np.testing.assert_allclose(np.sort(full.eigenvalues), w, atol=1e-12)
    assert full.trace == pytest.approx(1.0)  # E k(x, x) = 1
    assert full.effective_dimension(1e-3) == pytest.approx(float(np.sum(w / (w + 1e-3))), rel=1e-10)
    lev = n * ((U * U) @ (w / (w + 1e-2)))  # N_x with C_n, at the sample points
    np.testing.assert_allclose(full.leverage(X, 1e-2), lev, rtol=1e-6)
    assert full.max_leverage(1e-2) == pytest.approx(lev.max(), rel=1e-6)
    # the shortcuts
    assert B.covariance_norm(X, kernel, max_samples=n) == pytest.approx(w[-1], rel=1e-10)
    assert B.effective_dimension(X, kernel, 0.1, max_samples=n) == pytest.approx(
        float(np.sum(w / (w + 0.1))), rel=1e-10
    )
    np.testing.assert_allclose(
        B.effective_dimension(X, kernel, np.array([0.1, 0.01]), max_samples=n),
        [np.sum(w / (w + 0.1)), np.sum(w / (w + 0.01))],
        rtol=1e-10,
    )
    assert B.max_leverage(X, kernel, 1e-2, max_samples=n) == pytest.approx(lev.max(), rel=1e-6)


def test_unbounded_kernel_uses_plugin_K(rng):
    X = rng.normal(size=(200, 3))
    sp = B.estimate_spectrum(X, nk.Polynomial(2.0, degree=2), max_samples=100, random_state=0)
    diag = (np.einsum("ij,ij->i", X, X) / 4.0 + 1.0) ** 2
    assert sp.K_is_plugin and sp.K == pytest.approx(math.sqrt(diag.max()))
    rep = B.suggest_n_landmarks(X, nk.Linear(), random_state=0)
    assert "plug-in" in rep.reason and 1 <= rep.n_landmarks <= 200


@pytest.mark.parametrize(
    "call,name",
    [
        (lambda: B.estimate_spectrum(np.ones(5), nk.Gaussian(1.0)), "X"),
        (lambda: B.estimate_spectrum(np.ones((5, 2)), nk.Gaussian(1.0), max_samples=0), "max_samples"),
        (lambda: B.estimate_spectrum(np.ones((5, 2)), nk.Gaussian(1.0), method="exact"), "method"),
        (lambda: B.estimate_spectrum(np.ones((5, 2)), "nope"), "kernel"),
        (lambda: B.estimate_spectrum(np.ones((5, 2)), nk.Gaussian(1.0), random_state="a"), "random_state"),
        (lambda: B.estimate_spectrum(np.eye(5), nk.Gaussian(1.0)).effective_dimension(0.0), "lam"),
        (lambda: B.estimate_spectrum(np.eye(5), nk.Gaussian(1.0)).max_leverage(-1.0), "lam"),
        (lambda: B.estimate_spectrum(np.eye(5), nk.Gaussian(1.0)).leverage(np.ones((2, 3)), 0.1), "Y"),
        (lambda: B.estimate_spectrum(np.eye(5), nk.Gaussian(1.0), n_threads=0), "n_threads"),
    ],
)
def test_bad_arguments_raise_value_error_naming_them(call, name):
    with pytest.raises(ValueError, match=name):
        call()
