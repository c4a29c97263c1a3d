"""The statistical error sigma of the empirical embedding (nystrom_kme._statistical_error):
both estimators against the closed form of the Section 6.1 mixture,
E ||mu_hat_n - mu||^2 = (1 - ||mu||^2) / n for the Gaussian kernel."""

from __future__ import annotations

import math

import numpy as np
import pytest

import nystrom_kme as nk
from nystrom_kme import _core
from nystrom_kme._statistical_error import statistical_error_from_norm
from nystrom_kme.datasets import GaussianMixture

MIX = GaussianMixture(8, 10, random_state=0)


def _closed_form_sigma2(bw: float) -> float:
    """E||mu_hat_1 - mu||^2 = E k(x,x) - E k(x,x') = 1 - ||mu||^2 (Gaussian kernel)."""
    return 1.0 - MIX.embedding_norm2(bw)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_subsample_estimate_matches_the_closed_form(seed):
    n, bw = 10_000, 4.0
    X = MIX.sample(n, random_state=seed)
    est = nk.estimate_statistical_error(X, nk.Gaussian(bw), random_state=seed)
    exact = math.sqrt(_closed_form_sigma2(bw) / n)
    assert est.n_effective == n and est.n_used == 2000
    assert abs(est.value - exact) <= 4 * est.std_error
    assert abs(est.value / exact - 1) < 0.05
    assert "StatisticalError(" in repr(est)


def test_weighted_subsample_estimate_uses_the_effective_sample_size():
    n, bw = 5000, 4.0
    rng = np.random.default_rng(7)
    X = MIX.sample(n, random_state=3)
    w = rng.uniform(0.2, 3.0, size=n)  # independent of X: the target stays mu
    est = nk.estimate_statistical_error(X, nk.Gaussian(bw), sample_weight=w, random_state=1)
    p = w / w.sum()
    assert est.n_effective == pytest.approx(1 / np.sum(p**2), rel=1e-12)
    exact = math.sqrt(_closed_form_sigma2(bw) * np.sum(p**2))
    assert abs(est.value - exact) <= 4 * est.std_error and abs(est.value / exact - 1) < 0.05
    with pytest.raises(ValueError, match="max_samples"):
        nk.estimate_statistical_error(X, nk.Gaussian(bw), max_samples=1)
    with pytest.raises(ValueError, match="sample_weight"):
        nk.estimate_statistical_error(X, nk.Gaussian(bw), sample_weight=np.ones(n - 1))


def test_estimate_from_the_norm_is_the_plug_in_of_the_exact_v_statistic():
    """With the exact ||mu_hat_n||^2 (dense numpy) the estimate is
    q (mean k(x,x) - ||mu_hat_n||^2) / (1 - q) exactly, and it matches the closed form."""
    n, bw = 3000, 4.0
    X = MIX.sample(n, random_state=5)
    K = _core.kernel_matrix(X, X, _core.Kernel("gaussian", bw))
    norm2 = float(K.mean())
    rows = np.arange(0, n, 7)
    est = statistical_error_from_norm(norm2, np.ones(rows.size), K[rows].mean(axis=1), 1.0 / n)
    assert est.squared == pytest.approx((1.0 - norm2) / (n - 1), rel=1e-12)
    exact = math.sqrt(_closed_form_sigma2(bw) / n)
    assert abs(est.value - exact) <= 4 * est.std_error and abs(est.value / exact - 1) < 0.05
    assert est.n_effective == n and est.n_used == rows.size
    with pytest.raises(ValueError, match="n_eff = 1"):
        statistical_error_from_norm(norm2, np.ones(3), np.ones(3), 1.0)


def test_the_search_reports_the_closed_form_sigma():
    """n_landmarks="auto" estimates sigma from its own sums: within 4 standard errors and
    2% of the closed form, with no subsample (and the subsample when asked for)."""
    n = 10_000
    X = MIX.sample(n, random_state=11)
    kme = nk.NystromKME(nk.Gaussian(4.0), n_landmarks="auto", random_state=0).fit(X)
    st = kme.n_landmarks_report_.statistical_error
    exact = math.sqrt(_closed_form_sigma2(4.0) / n)
    assert abs(st.value - exact) <= 4 * st.std_error and abs(st.value / exact - 1) < 0.02
    assert st.n_used == kme.n_landmarks_report_.n_landmarks  # the landmarks' sums
    sub = nk.NystromKME(nk.Gaussian(4.0), n_landmarks=nk.AutoLandmarks(stat_samples=500), random_state=0).fit(X)
    assert sub.n_landmarks_report_.statistical_error.n_used == 500
