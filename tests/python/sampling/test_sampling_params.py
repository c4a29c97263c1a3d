"""scikit-learn style parameters of every policy: get_params / set_params, repr,
and sklearn.base.clone (scikit-learn is only needed for the clone tests)."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import nystrom_kme as nk
from nystrom_kme import sampling as S


def first_rows(X, kernel, n_landmarks, rng):
    return np.arange(n_landmarks)


# Every policy class, with non-default arguments (q=3: an int stays an int).
POLICIES = [
    S.UniformSampling(replace=False),
    S.FixedLandmarks([3, 1, 2]),
    S.FixedLandmarks(np.array([0, 5], dtype=np.int32)),
    S.CallableSampling(first_rows),
    S.GreedyCholeskySampling(tolerance=1e-8, n_threads=2),
    S.DPPGreedySampling(tolerance=0.0),
    S.RPCholeskySampling(n_threads=1),
    S.BlockRPCholeskySampling(16, tolerance=1e-10, n_threads=3),
    S.KernelHerding(allow_repeats=True, n_candidates=50, n_threads=2),
    S.CortesScottSampling(tolerance=1e-6),
    S.RidgeLeverageSampling(1e-3, deff_fraction=0.25, replace=False, q=3, q1=5, q2=6.0, n_threads=2),
]
THREADED = {
    S.GreedyCholeskySampling,
    S.DPPGreedySampling,
    S.RPCholeskySampling,
    S.BlockRPCholeskySampling,
    S.KernelHerding,
    S.CortesScottSampling,
    S.RidgeLeverageSampling,
}
IDS = [repr(p) for p in POLICIES]


def fitted_attributes(policy):
    return {a for a in vars(policy) if a.endswith("_") and not a.startswith("_")}


def same_value(a, b):
    return np.array_equal(a, b) if isinstance(a, (np.ndarray, list)) else a == b


def test_every_policy_class_is_covered():
    classes = {getattr(S, name) for name in S.__all__}
    concrete = {
        c for c in classes if isinstance(c, type) and issubclass(c, S.SamplingPolicy) and not inspect.isabstract(c)
    }
    assert concrete == {type(p) for p in POLICIES}


@pytest.mark.parametrize("policy", POLICIES, ids=IDS)
def test_get_params_returns_the_arguments_unmodified(policy):
    params = policy.get_params()
    assert list(params) == list(inspect.signature(type(policy)).parameters)
    assert policy.get_params(deep=False) == params  # no policy has nested parameters
    for name, value in params.items():
        assert getattr(policy, name) is value
    assert repr(policy) == f"{type(policy).__name__}(" + ", ".join(f"{k}={v!r}" for k, v in params.items()) + ")"


@pytest.mark.parametrize("policy", POLICIES, ids=IDS)
def test_get_params_set_params_round_trip(policy):
    params = policy.get_params()
    assert repr(type(policy)(**params)) == repr(policy)
    # a policy built otherwise becomes the same policy through set_params
    fresh = (
        S.FixedLandmarks([0])
        if isinstance(policy, S.FixedLandmarks)
        else S.CallableSampling(len)
        if isinstance(policy, S.CallableSampling)
        else type(policy)()
    )
    assert fresh.set_params(**params) is fresh
    assert repr(fresh) == repr(policy)
    assert all(getattr(fresh, k) is v for k, v in params.items())
    assert fresh.set_params() is fresh


def test_set_params_checks_names_and_values():
    policy = S.BlockRPCholeskySampling(8)
    with pytest.raises(ValueError, match="invalid parameter 'block'.*'block_size'"):
        policy.set_params(block=4)
    with pytest.raises(ValueError, match="invalid parameter 'tolerance__x'"):
        policy.set_params(tolerance__x=1)
    with pytest.raises(ValueError, match="tolerance"):
        policy.set_params(block_size=4, tolerance=2.0)
    assert repr(policy) == "BlockRPCholeskySampling(block_size=8, tolerance=1e-12, n_threads=None)"
    with pytest.raises(ValueError, match="replace must be a bool"):
        S.RidgeLeverageSampling().set_params(replace="no")


@pytest.mark.parametrize("policy", POLICIES, ids=IDS)
def test_n_threads_is_a_parameter_of_the_threaded_policies(policy):
    threaded = "n_threads" in policy.get_params()
    assert threaded == (type(policy) in THREADED)
    if threaded:
        copy = type(policy)(**policy.get_params())
        assert copy.set_params(n_threads=4).n_threads == 4
        assert policy.n_threads != 4
        with pytest.raises(ValueError, match="n_threads"):
            copy.set_params(n_threads=0)
        assert copy.n_threads == 4


def test_nested_parameters():
    class Wrapper(S.SamplingPolicy):
        def __init__(self, inner=None, scale=1):
            self.inner = inner
            self.scale = scale

        def select_indices(self, X, kernel, n_landmarks, rng=None):
            return self.inner.select_indices(X, kernel, n_landmarks * self.scale, rng)

    wrapper = Wrapper(S.CortesScottSampling())
    params = wrapper.get_params()
    assert params["inner__tolerance"] == 1e-12 and params["inner__n_threads"] is None
    assert set(wrapper.get_params(deep=False)) == {"inner", "scale"}
    wrapper.set_params(inner__n_threads=2, scale=2)
    assert wrapper.inner.n_threads == 2 and wrapper.scale == 2
    with pytest.raises(ValueError, match="invalid parameter 'scale__x'"):
        wrapper.set_params(scale__x=1)


# --------------------------------------------------------------------------- #
# sklearn.base.clone
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("policy", POLICIES, ids=IDS)
def test_clone_gives_an_equal_independent_policy(policy):
    clone = pytest.importorskip("sklearn").base.clone
    copy = clone(policy)
    assert type(copy) is type(policy) and copy is not policy
    assert repr(copy) == repr(policy)
    for name, value in policy.get_params().items():
        other = getattr(copy, name)
        assert same_value(other, value)
        if isinstance(value, (np.ndarray, list)):
            assert other is not value  # mutable arguments are copied
    if "n_threads" in policy.get_params():
        copy.set_params(n_threads=7)
        assert policy.n_threads != 7 and clone(policy).n_threads == policy.n_threads


@pytest.mark.parametrize("policy", POLICIES, ids=IDS)
def test_clone_leaves_the_fitted_results_behind(policy, rng):
    clone = pytest.importorskip("sklearn").base.clone
    fitted = clone(policy)
    X = rng.normal(size=(80, 2))
    fitted.select_indices(X, nk.Gaussian(1.0), 6, 0)
    if isinstance(policy, S.RidgeLeverageSampling | S.BlockRPCholeskySampling):
        assert fitted_attributes(fitted)  # what select_indices computed stays, named x_
    again = clone(fitted)
    assert not fitted_attributes(again)
    assert repr(again) == repr(policy)


def test_clone_of_a_nested_policy_copies_the_inner_one():
    clone = pytest.importorskip("sklearn").base.clone

    class Wrapper(S.SamplingPolicy):
        def __init__(self, inner=None):
            self.inner = inner

        def select_indices(self, X, kernel, n_landmarks, rng=None):
            return self.inner.select_indices(X, kernel, n_landmarks, rng)

    wrapper = Wrapper(S.RPCholeskySampling(n_threads=2))
    copy = clone(wrapper)
    assert copy.inner is not wrapper.inner and repr(copy) == repr(wrapper)
