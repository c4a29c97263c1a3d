"""Quadrature rules: the worst-case error bounds the error on RKHS functions."""

from __future__ import annotations

import math

import numpy as np
import pytest

import nystrom_kme as nk
from nystrom_kme.datasets import GaussianMixture
from references import dense_kernel


@pytest.fixture
def setting(rng):
    mixture = GaussianMixture(n_components=3, dim=2, random_state=0)
    X = mixture.sample(3000, random_state=1)
    k = nk.Gaussian(1.5)
    rule = nk.QuadratureRule.from_embedding(nk.NystromKME(k, n_landmarks=40, random_state=0).fit(X))
    return mixture, X, k, rule


def rkhs_function(rng, k_sigma, n_centres=7):
    Z = rng.normal(size=(n_centres, 2)) * 2
    c = rng.normal(size=n_centres)
    f = lambda P: dense_kernel("gaussian", P, Z, k_sigma) @ c  # noqa: E731
    norm = math.sqrt(c @ dense_kernel("gaussian", Z, Z, k_sigma) @ c)
    return Z, c, f, norm


def test_error_on_rkhs_functions_is_bounded_by_worst_case_error(setting, rng):
    mixture, X, k, rule = setting
    wce = rule.worst_case_error(mixture)
    for _ in range(20):
        Z, c, f, norm = rkhs_function(rng, 1.5)
        exact_integral = c @ mixture.mean_embedding(Z, 1.5)  # int f drho = sum_i c_i mu(z_i)
        assert abs(exact_integral - rule.integrate(f)) <= norm * wce * (1 + 1e-9)


def test_integrate_equals_inner_product_with_embedding(setting, rng):
    mixture, X, k, rule = setting
    Z, c, f, _ = rkhs_function(rng, 1.5)
    emb = nk.NystromKME(k, n_landmarks=40, random_state=0).fit(X)
    assert rule.integrate(f) == pytest.approx(c @ emb(Z), rel=1e-12)
    # vector-valued f
    both = rule.integrate(lambda P: np.stack([f(P), 2 * f(P)], axis=1))
    np.testing.assert_allclose(both, [rule.integrate(f), 2 * rule.integrate(f)], rtol=1e-12)


def test_worst_case_error_against_dataset_and_embedding(setting, rng):
    mixture, X, k, rule = setting
    Xs = X[:800]
    K = lambda A, B: dense_kernel("gaussian", A, B, 1.5)  # noqa: E731
    w = rule.weights
    ref = math.sqrt(K(Xs, Xs).mean() + w @ K(rule.nodes, rule.nodes) @ w - 2 * w @ K(rule.nodes, Xs).mean(1))
    assert rule.worst_case_error(Xs) == pytest.approx(ref, rel=1e-9)
    emp = nk.EmpiricalKME(k).fit(Xs)
    assert rule.worst_case_error(emp) == pytest.approx(ref, rel=1e-9)
    sw = rng.uniform(0, 1, len(Xs))
    ref_w = math.sqrt(
        sw @ K(Xs, Xs) @ sw / sw.sum() ** 2
        + w @ K(rule.nodes, rule.nodes) @ w
        - 2 * w @ K(rule.nodes, Xs) @ sw / sw.sum()
    )
    assert rule.worst_case_error(Xs, sample_weight=sw) == pytest.approx(ref_w, rel=1e-9)
    # the Nystrom rule is at least as good as uniform weights on its own nodes
    uniform = nk.QuadratureRule(rule.nodes, np.full(len(w), 1 / len(w)), k)
    assert rule.worst_case_error(mixture) < uniform.worst_case_error(mixture)


def test_quadrature_bad_input(setting):
    mixture, X, k, rule = setting
    with pytest.raises(ValueError, match="weights"):
        nk.QuadratureRule(X[:3], np.ones(4))
    with pytest.raises(ValueError, match="nodes"):
        nk.QuadratureRule(np.ones(3), np.ones(3))
    with pytest.raises(ValueError, match="kernel"):
        nk.QuadratureRule(X[:3], np.ones(3)).worst_case_error(mixture)
    with pytest.raises(ValueError, match="Gaussian kernel"):
        nk.QuadratureRule(X[:3], np.ones(3), nk.Laplacian(1.0)).worst_case_error(mixture)
    with pytest.raises(ValueError, match="one value"):
        rule.integrate(lambda P: np.ones(3))
    with pytest.raises(ValueError, match="NaN"):
        rule.integrate(lambda P: np.full(len(P), np.nan))


def test_worst_case_error_with_huge_weights(rng):
    X = rng.normal(size=(400, 2))
    w = rng.uniform(0.5, 1.5, 400)
    rule = nk.QuadratureRule.from_embedding(nk.NystromKME(nk.Gaussian(1.0), n_landmarks=30, random_state=0).fit(X))
    ref = rule.worst_case_error(X, sample_weight=w)
    assert rule.worst_case_error(X, sample_weight=w * 1e307) == pytest.approx(ref, rel=1e-12)
