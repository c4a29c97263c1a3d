"""The policies that need no kernel (uniform, fixed rows, a user function), the
index and landmark-point checks, and their use by NystromKME."""

from __future__ import annotations

import numpy as np
import nystrom_kme as nk
import pytest
from nystrom_kme import sampling as S
from references import dense_kernel


def test_nystrom_default_sampling_is_unchanged(rng):
    X = rng.normal(size=(500, 2))
    est = nk.NystromKME(nk.Gaussian(1.0), n_landmarks=25, random_state=7).fit(X)
    ref = np.random.default_rng(7).integers(0, 500, size=25)
    np.testing.assert_array_equal(est.landmark_indices_, ref)
    assert isinstance(est.sampler_, S.UniformSampling) and est.sampler_.replace
    # weighted data: uniform draws become draws proportional to the weights
    w = np.zeros(500)
    w[:10] = 1.0
    est = nk.NystromKME(nk.Gaussian(1.0), n_landmarks=25, random_state=7).fit(X, sample_weight=w)
    assert est.landmark_indices_.max() < 10


def test_user_supplied_landmarks(rng):
    X = rng.normal(size=(300, 2))
    idx = np.array([3, 10, 10, 250])
    est = nk.NystromKME(nk.Gaussian(1.0), sampler=idx).fit(X)
    np.testing.assert_array_equal(est.landmark_indices_, idx)
    np.testing.assert_array_equal(est.landmarks_, X[idx])
    Z = rng.normal(size=(7, 2))
    est = nk.NystromKME(nk.Gaussian(1.0), sampler=Z).fit(X)
    assert est.landmark_indices_ is None and est.sampler_ is None
    np.testing.assert_array_equal(est.landmarks_, Z)
    s = dense_kernel("gaussian", Z, X, 1.0).mean(axis=1)
    np.testing.assert_allclose(dense_kernel("gaussian", Z, Z, 1.0) @ est.weights_, s, atol=1e-10)
    est32 = nk.NystromKME(nk.Gaussian(1.0), sampler=Z.tolist()).fit(X.astype(np.float32))
    assert est32.landmarks_.dtype == np.float32
    with pytest.raises(ValueError, match="n_landmarks=3"):
        nk.NystromKME(nk.Gaussian(1.0), n_landmarks=3, sampler=idx).fit(X)
    with pytest.raises(ValueError, match="must lie in"):
        nk.NystromKME(nk.Gaussian(1.0), sampler=[0, 300]).fit(X)
    with pytest.raises(ValueError, match="integers"):
        nk.NystromKME(nk.Gaussian(1.0), sampler=np.array([0.0, 1.0])).fit(X)
    with pytest.raises(ValueError, match="features"):
        nk.NystromKME(nk.Gaussian(1.0), sampler=np.zeros((3, 5))).fit(X)
    with pytest.raises(ValueError, match="returned by the sampler"):
        nk.NystromKME(nk.Gaussian(1.0), n_landmarks=3, sampler=lambda X, k, m, r: [-1]).fit(X)


def test_fixed_landmarks_keep_the_indices_as_given(rng):
    X = rng.normal(size=(20, 2))
    given = [4, 1, 4]
    policy = S.FixedLandmarks(given)
    assert policy.indices is given  # stored unmodified (scikit-learn's clone needs it)
    idx = policy.select_indices(X, "gaussian", 99)
    assert idx.dtype == np.int64
    np.testing.assert_array_equal(idx, given)
    idx[0] = 0  # the returned array is the caller's
    np.testing.assert_array_equal(policy.select_indices(X, "gaussian", 3), given)
    with pytest.raises(ValueError, match="must lie in"):
        S.FixedLandmarks([0, 20]).select_indices(X, "gaussian", 2)
    with pytest.raises(ValueError, match="indices must be"):
        S.FixedLandmarks([[0, 1]])


def test_validate_indices_and_landmark_points():
    np.testing.assert_array_equal(S.validate_indices(np.array([2, 0], np.int32), 3), [2, 0])
    assert S.validate_indices([1], 2).dtype == np.int64
    for bad, match in (([], "non-empty"), ([[0]], "1-D"), ([0.5], "integers"), ([3], "lie in")):
        with pytest.raises(ValueError, match=match):
            S.validate_indices(bad, 3)
    X = np.zeros((4, 2), dtype=np.float32)
    assert S.landmark_points("uniform", X) is None
    assert S.landmark_points([0, 1], X) is None  # 1-D: indices, not points
    points = S.landmark_points([[1, 2]], X)
    assert points.dtype == np.float32 and points.shape == (1, 2)
    with pytest.raises(ValueError, match="numeric"):
        S.landmark_points(np.array([["a", "b"]]), X)


def test_input_validation(rng):
    X = rng.normal(size=(50, 2))
    k = nk.Gaussian(1.0)
    with pytest.raises(ValueError, match="n_landmarks=51 exceeds"):
        S.UniformSampling(replace=False).select_indices(X, k, 51)
    assert len(S.UniformSampling().select_indices(X, k, 51, 0)) == 51
    with pytest.raises(ValueError, match="replace must be a bool"):
        S.UniformSampling(replace=1)
    with pytest.raises(ValueError, match="function must be callable"):
        S.CallableSampling([0, 1])
