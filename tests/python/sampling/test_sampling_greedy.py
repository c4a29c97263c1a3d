"""Kernel herding and Cortes-Scott (farthest point) against their definitions."""

from __future__ import annotations

import numpy as np
import pytest
from sampling_data import blobs

import nystrom_kme as nk
from nystrom_kme import sampling as S
from references import dense_kernel


def test_herding_matches_its_definition(rng):
    X = blobs(rng, n=250)
    K = dense_kernel("gaussian", X, X, 1.0)
    mu = K.mean(axis=1)
    idx = S.KernelHerding().select_indices(X, nk.Gaussian(1.0), 20)
    sums = np.zeros(len(X))
    taken = np.zeros(len(X), bool)
    for t, j in enumerate(idx):
        obj = np.where(taken, -np.inf, mu - sums / (t + 1))
        assert j == int(np.argmax(obj))
        taken[j] = True
        sums += K[:, j]
    # candidates subset: indices still rows of X, among the candidates
    pol = S.KernelHerding(n_candidates=100)
    sub = pol.select_indices(X, nk.Gaussian(1.0), 20, 1)
    assert np.isin(sub, pol.candidates_).all() and len(pol.candidates_) == 100
    rep = S.KernelHerding(allow_repeats=True).select_indices(X[:10], nk.Gaussian(1.0), 30)
    assert len(rep) == 30


def test_herding_with_a_nystrom_target(rng):
    """target_landmarks=p herds towards the Nyström embedding on p uniform landmarks:
    the same steps as the definition with mu replaced by K(., L) K_LL^+ K(L, X) 1 / n."""
    X = blobs(rng, n=250)
    K = dense_kernel("gaussian", X, X, 1.0)
    pol = S.KernelHerding(target_landmarks=40)
    idx = pol.select_indices(X, nk.Gaussian(1.0), 15, 7)
    land = np.sort(np.random.default_rng(7).choice(250, size=40, replace=False))
    alpha = np.linalg.pinv(K[np.ix_(land, land)], rcond=1e-12, hermitian=True) @ K[land].mean(axis=1)
    mu = K[:, land] @ alpha
    sums = np.zeros(len(X))
    taken = np.zeros(len(X), bool)
    for t, j in enumerate(idx):
        obj = np.where(taken, -np.inf, mu - sums / (t + 1))
        assert obj[j] >= obj.max() - 1e-9
        taken[j] = True
        sums += K[:, j]
    with pytest.raises(ValueError, match="target_landmarks"):
        S.KernelHerding(target_landmarks=0)


def test_herding_auto_target_rule(rng, monkeypatch):
    """target_landmarks="auto" (the default) is the exact target while n_c * n <= 10^8
    and the Nyström target on ceil(sqrt(n) log sqrt(n)) landmarks beyond, drawn as an
    explicit int p would be: the same indices as those two explicit policies, and no
    n x n row sum (the rows of each row-sum call are recorded)."""
    rows = []
    row_sums = nk._core.kernel_row_sums
    monkeypatch.setattr(nk._core, "kernel_row_sums", lambda A, *a: rows.append(len(A)) or row_sums(A, *a))
    k = nk.Gaussian(2.0)
    X = blobs(rng, n=300)
    assert S.KernelHerding().target_landmarks == "auto"
    np.testing.assert_array_equal(
        S.KernelHerding().select_indices(X, k, 12, 3),
        S.KernelHerding(target_landmarks=None).select_indices(X, k, 12, 3),
    )
    assert rows == [300, 300]
    X = rng.normal(size=(10_001, 2))  # 10_001^2 > 10^8 candidate-row evaluations
    p = nk.bounds.default_n_landmarks(len(X))
    rows.clear()
    auto = S.KernelHerding().select_indices(X, k, 12, 3)
    assert rows == [p]
    np.testing.assert_array_equal(auto, S.KernelHerding(target_landmarks=p).select_indices(X, k, 12, 3))
    # with fewer candidates the product is small again: exact target
    np.testing.assert_array_equal(
        S.KernelHerding(n_candidates=5000).select_indices(X, k, 12, 3),
        S.KernelHerding(n_candidates=5000, target_landmarks=None).select_indices(X, k, 12, 3),
    )
    with pytest.raises(ValueError, match="target_landmarks"):
        S.KernelHerding(target_landmarks="exact")


def test_cortes_scott_is_farthest_point(rng):
    X = blobs(rng, n=250)
    K = dense_kernel("gaussian", X, X, 1.0)
    idx = S.CortesScottSampling().select_indices(X, nk.Gaussian(1.0), 20, 5)
    for t in range(1, 20):
        dist = (2 - 2 * K[:, idx[:t]]).min(axis=1)
        assert dist[idx[t]] >= dist.max() - 1e-12


def test_input_validation(rng):
    X = rng.normal(size=(50, 2))
    k = nk.Gaussian(1.0)
    with pytest.raises(ValueError, match="X"):
        S.KernelHerding().select_indices(np.ones(5), k, 2)
    with pytest.raises(ValueError, match="kernel"):
        S.CortesScottSampling().select_indices(X, 3.0, 2)
    with pytest.raises(ValueError, match="n_candidates"):
        S.KernelHerding(n_candidates=0)
    with pytest.raises(ValueError, match="candidates"):
        S.KernelHerding(n_candidates=10).select_indices(X, k, 20, 0)
