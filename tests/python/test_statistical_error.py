"""The statistical error sigma of the empirical embedding (nystrom_kme.landmark_search._statistical_error):
both estimators against the closed form of the Section 6.1 mixture,
E ||mu_hat_n - mu||^2 = (1 - ||mu||^2) / n for the Gaussian kernel."""

from __future__ import annotations

import math

import numpy as np
import pytest

import nystrom_kme as nk
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


def test_the_search_reports_the_closed_form_sigma():
    """n_landmarks="auto" estimates sigma from the certificate's ||mu_hat_n||^2: within 4
    standard errors and 2% of the closed form, with no subsample (and the subsample when
    asked for), and bounds it from below."""
    n = 10_000
    X = MIX.sample(n, random_state=11)
    kme = nk.NystromKME(nk.Gaussian(4.0), n_landmarks="auto", random_state=0).fit(X)
    st = kme.n_landmarks_report_.statistical_error
    exact = math.sqrt(_closed_form_sigma2(4.0) / n)
    assert abs(st.value - exact) <= 4 * st.std_error and abs(st.value / exact - 1) < 0.02
    assert st.n_used == n  # ||mu_hat_n||^2 computed over every row ("exact" at this n)
    assert st.lower < exact  # the lower confidence bound (Hoeffding's, for the U-statistic)
    sub = nk.NystromKME(nk.Gaussian(4.0), n_landmarks=nk.AutoLandmarks(stat_samples=500), random_state=0).fit(X)
    assert sub.n_landmarks_report_.statistical_error.n_used == 500
