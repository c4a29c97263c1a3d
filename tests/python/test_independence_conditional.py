"""nk.conditional_independence_test (issue 44): the ridge residuals against scikit-learn,
the nulls' means against the residual products' closed form, a level over repetitions on
a problem the Z features can regress, the alternative found, saved results, bad input."""

from __future__ import annotations

import numpy as np
import pytest

import nystrom_kme as nk
from nystrom_kme.independence.conditional import null_statistics, residuals


def test_residuals_are_scikit_learns_ridge():
    sklearn = pytest.importorskip("sklearn.linear_model")
    rng = np.random.default_rng(0)
    Zf = rng.normal(size=(300, 5))
    A = Zf @ rng.normal(size=(5, 3)) + rng.normal(size=(300, 3))
    ridge = 1e-3
    fit = sklearn.Ridge(alpha=300 * ridge, fit_intercept=False).fit(Zf, A)
    np.testing.assert_allclose(residuals(A, Zf, ridge), A - fit.predict(Zf), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("null", ["wild", "spectral"])
def test_the_nulls_mean_is_the_trace_of_the_products_covariance(null):
    """E T_b = sum_i ||w_i||^2 / n for both (w_i = r_X(i) (x) r_Y(i)): 4000 draws within 5
    standard errors."""
    rng = np.random.default_rng(1)
    Rx, Ry = rng.normal(size=(500, 3)), rng.normal(size=(500, 2)) * 0.5
    draws = null_statistics(Rx, Ry, null, 4000, np.random.default_rng(2), None, 0)
    W = np.einsum("ia,ib->iab", Rx, Ry).reshape(500, -1)
    expected = float(np.sum(W * W)) / 500
    assert abs(draws.mean() - expected) < 5 * draws.std() / np.sqrt(draws.size)


def test_level_on_a_regressable_null_and_power():
    """X and Y smooth functions of Z plus independent noise: over 100 problems the
    rejections at 0.1 within the 99.9% binomial band around 10; a shared noise term
    (X and Y dependent given Z) is found."""
    rejected = 0
    for rep in range(100):
        rng = np.random.default_rng(500 + rep)
        z = rng.uniform(-1, 1, size=(400, 1))
        x = z + 0.5 * rng.normal(size=(400, 1))
        y = z**2 + 0.5 * rng.normal(size=(400, 1))
        rejected += nk.conditional_independence_test(x, y, z, n_draws=99, random_state=rep).pvalue <= 0.1
    assert 2 <= rejected <= 21, rejected
    rng = np.random.default_rng(7)
    z = rng.normal(size=(1500, 1))
    e = rng.normal(size=(1500, 1))
    res = nk.conditional_independence_test(np.sin(2 * z) + e, np.cos(2 * z) + e**2, z, random_state=0)
    assert res.reject and res.explain().startswith("H0 (X independent of Y given Z) rejected")


def test_save_load_and_bad_input(tmp_path):
    rng = np.random.default_rng(3)
    z = rng.normal(size=(200, 1))
    x, y = z + rng.normal(size=(200, 1)), z + rng.normal(size=(200, 1))
    res = nk.conditional_independence_test(x, y, z, n_draws=19, random_state=0)
    res.save(tmp_path / "c.json")
    back = nk.load(tmp_path / "c.json")
    assert isinstance(back, nk.ConditionalIndependenceResult) and back.pvalue == res.pvalue
    with pytest.raises(ValueError, match="X and Z must hold the same rows"):
        nk.conditional_independence_test(x, y, z[:-1])
    with pytest.raises(ValueError, match="null must be"):
        nk.conditional_independence_test(x, y, z, null="gamma")
    with pytest.raises(ValueError, match="Z is constant"):
        nk.conditional_independence_test(x, y, np.ones((200, 1)))
    with pytest.raises(ValueError, match="ridge"):
        nk.conditional_independence_test(x, y, z, ridge=0.0)
