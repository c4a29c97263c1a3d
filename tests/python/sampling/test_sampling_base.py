"""The policies that need no kernel (uniform, fixed rows, a user function), the
index and landmark-point checks, and their use by NystromKME."""

from __future__ import annotations

import numpy as np
import pytest

import nystrom_kme as nk
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


# --------------------------------------------------------------------------- #
# draws from a row source: the policy is the one owner
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("name", S.SAMPLER_NAMES)
def test_every_policy_draws_from_a_source_what_it_selects_on_the_array(rng, name):
    """draw(source) = select_indices(array) for the same seed, int64 rows of the source;
    needs_data_in_memory is False exactly for the uniform draws, which then draw from a
    streamed copy the same rows, and True policies refuse a streamed source by name."""
    from nystrom_kme.sources import as_source

    X = rng.normal(size=(300, 2))
    k = nk.Gaussian(1.0)
    policy = S.resolve_sampler(name)
    got = policy.draw(as_source(X), k, 12, np.random.default_rng(3))
    want = S.resolve_sampler(name).select_indices(X, k, 12, np.random.default_rng(3))
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, want)
    assert policy.needs_data_in_memory is (not name.startswith("uniform"))
    streamed = as_source([X[:100], X[100:]])
    if policy.needs_data_in_memory:
        with pytest.raises(ValueError, match="needs all of the rows of X in memory"):
            policy.draw(streamed, k, 12, np.random.default_rng(3))
    else:
        np.testing.assert_array_equal(policy.draw(streamed, None, 12, np.random.default_rng(3)), want)


def test_uniform_draws_follow_the_weights_and_given_indices_need_no_data(rng):
    from nystrom_kme.sources import as_source

    src = as_source([rng.normal(size=(60, 2)), rng.normal(size=(40, 2))])
    w = np.zeros(100)
    w[[5, 50, 99]] = [1.0, 2.0, 1.0]
    for replace in (True, False):
        got = S.UniformSampling(replace=replace).draw(src, None, 3, np.random.default_rng(0), sample_weight=w)
        ref = np.random.default_rng(0).choice(100, size=3, replace=replace, p=w / w.sum())
        np.testing.assert_array_equal(got, ref)
        assert set(got.tolist()) <= {5, 50, 99}
    with pytest.raises(ValueError, match="exceeds the 3 rows with a positive sample_weight"):
        S.UniformSampling(replace=False).draw(src, None, 4, 0, sample_weight=w)
    with pytest.raises(ValueError, match="n_landmarks=101 exceeds n_samples=100"):
        S.UniformSampling(replace=False).draw(src, None, 101, 0)
    fixed = S.FixedLandmarks([7, 99])
    assert not fixed.needs_data_in_memory
    np.testing.assert_array_equal(fixed.draw(src, None), [7, 99])
    with pytest.raises(ValueError, match="the indices returned by the sampler must lie in"):
        S.FixedLandmarks([100]).draw(src, None)
    with pytest.raises(ValueError, match="kernel"):  # a policy that looks at the kernel needs one
        S.RPCholeskySampling().draw(as_source(rng.normal(size=(50, 2))), None, 3, 0)


def test_as_policy_wraps_objects_with_select_indices(rng):
    from nystrom_kme.sources import as_source

    class EveryOther:
        def select_indices(self, X, kernel, n_landmarks, rng=None):
            return np.arange(0, 2 * n_landmarks, 2)

    policy = S.RPCholeskySampling()
    assert S.as_policy(policy) is policy
    wrapped = S.as_policy(EveryOther())
    assert isinstance(wrapped, S.CallableSampling) and wrapped.needs_data_in_memory
    np.testing.assert_array_equal(wrapped.draw(as_source(rng.normal(size=(20, 2))), None, 4), [0, 2, 4, 6])


def test_nested_draws_draw_nothing_until_asked_and_nest(rng):
    """Creating nested draws moves no random number (the search draws its statistical
    subsample in between); uniform sets are prefixes of one stream, of at most the rows
    of positive weight without replacement; the rerun policies nest from one seed."""
    from nystrom_kme.sources import as_source

    X = rng.normal(size=(400, 2))
    src = as_source(X)
    w = np.ones(400)
    w[:390] = 0.0
    for policy, weights in (
        (S.UniformSampling(), None),
        (S.UniformSampling(replace=False), None),
        (S.UniformSampling(replace=False), w),
        (S.RPCholeskySampling(), None),
    ):
        g = np.random.default_rng(1)
        draws = policy.nested_draws(src, nk.Gaussian(1.0), g, sample_weight=weights, max_landmarks=40)
        assert g.integers(1 << 62) == np.random.default_rng(1).integers(1 << 62)  # nothing drawn yet
        cap = draws.max_landmarks
        assert cap == (10 if weights is not None else 40)
        assert draws.exhaustive is (isinstance(policy, S.UniformSampling) and not policy.replace)
        small, large = draws.get(cap // 2), draws.get(cap)
        assert small.dtype == np.int64 and large.size == cap
        np.testing.assert_array_equal(large[: small.size], small)
        if weights is not None:
            assert sorted(large.tolist()) == list(range(390, 400))  # every row of positive weight
    g = np.random.default_rng(2)
    draws = S.UniformSampling().nested_draws(src, None, g, max_landmarks=400)
    first = draws.get(5)
    np.testing.assert_array_equal(first, np.random.default_rng(2).integers(0, 400, size=5))
    with pytest.raises(ValueError, match="in memory"):
        S.RPCholeskySampling().nested_draws(as_source([X]), nk.Gaussian(1.0), g, max_landmarks=10)
