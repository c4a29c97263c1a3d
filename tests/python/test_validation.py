"""Argument checks shared by the package: one seed rule, sample weights, the fitted check."""

from __future__ import annotations

import numpy as np
import pytest

import nystrom_kme as nk
from nystrom_kme._validation import (
    GOODPOINTS_SEED_BOUND,
    MIN_BYTES_PER_PERMUTATION,
    SAMPLER_SEED_BOUND,
    SPLIT_SEED_BOUND,
    NotFittedError,
    as_data_matrix,
    check_allocation,
    check_finite_real,
    check_is_fitted,
    check_n_permutations,
    check_positive_int,
    check_positive_real,
    check_probability,
    check_random_state,
    check_sample_weight,
    draw_seed,
    n_threads_arg,
    physical_memory_bytes,
)


def test_one_seed_rule_everywhere():
    g = np.random.default_rng(5)
    assert check_random_state(g) is g  # draws continue from the caller's generator
    a, b = check_random_state(3), check_random_state(3)
    assert a.integers(1 << 30) == b.integers(1 << 30)
    seq = np.random.SeedSequence(9)
    fresh = np.random.default_rng(np.random.SeedSequence(9))
    assert check_random_state(seq).integers(1 << 30) == fresh.integers(1 << 30)
    legacy = check_random_state(np.random.RandomState(0))  # scikit-learn users pass these
    assert isinstance(legacy, np.random.Generator)
    assert check_random_state(None) is not check_random_state(None)
    for bad, match in ((-1, "non-negative"), (True, "random_state"), (1.5, "random_state"), ("7", "random_state")):
        with pytest.raises(ValueError, match=match):
            check_random_state(bad)
    # the same rule in the public API (datasets used to have its own)
    with pytest.raises(ValueError, match="non-negative"):
        nk.NystromKME(random_state=-2).fit(np.random.default_rng(0).normal(size=(50, 2)))
    from nystrom_kme.datasets import GaussianMixture

    with pytest.raises(ValueError, match="non-negative"):
        GaussianMixture(2, 2, random_state=-2)


def test_seeds_for_other_generators_are_one_draw_below_their_bound():
    for bound in (SPLIT_SEED_BOUND, SAMPLER_SEED_BOUND, GOODPOINTS_SEED_BOUND):
        for seed in range(20):
            got = draw_seed(np.random.default_rng(seed), bound)
            assert type(got) is int and 0 <= got < bound
            assert got == np.random.default_rng(seed).integers(0, bound)
    g, ref = np.random.default_rng(1), np.random.default_rng(1)
    draw_seed(g, SPLIT_SEED_BOUND)
    ref.integers(0, 2**63)
    assert g.integers(1 << 30) == ref.integers(1 << 30)  # exactly one draw consumed
    # the permutation tests' bound (random_splits replays the test's splits from it)
    seed = int(np.random.default_rng(4).integers(0, 2**63))
    labels = nk.random_splits(5, 4, 7, random_state=4)
    from nystrom_kme.permutation import SplitSpec

    np.testing.assert_array_equal(labels, SplitSpec(5, 4, 7, seed).labels())


def test_sample_weight_checks():
    w = check_sample_weight([1, 2, 3], 3)
    assert w.dtype == np.float64 and w.tolist() == [1.0, 2.0, 3.0]
    assert check_sample_weight(None, 3) is None
    for bad, match in (
        ([1, 2], "must have shape \\(3,\\)"),
        ([1, np.nan, 1], "contains NaN"),
        ([1, -1, 1], "must be non-negative"),
        ([0, 0, 0], "must have a positive sum"),
    ):
        with pytest.raises(ValueError, match="sample_weight " + match):
            check_sample_weight(bad, 3)
    assert check_sample_weight([0, 0, 0], 3, normalisable=False).sum() == 0  # partial_fit allows it
    with pytest.raises(ValueError, match="w_y must be"):
        check_sample_weight([1, -1, 1], 3, name="w_y")


def test_fitted_check_and_small_checks():
    class Thing:
        pass

    thing = Thing()
    with pytest.raises(NotFittedError, match="this Thing is not fitted"):
        check_is_fitted(thing)
    thing.weights_ = 1
    check_is_fitted(thing)
    assert issubclass(NotFittedError, ValueError) and issubclass(NotFittedError, AttributeError)
    assert nk.NotFittedError is NotFittedError
    assert check_positive_int(np.int64(3), "k") == 3
    for bad in (0, -1, 2.0, True, "3"):
        with pytest.raises(ValueError, match="k must be a positive integer"):
            check_positive_int(bad, "k")
    assert n_threads_arg(None) == 0 and n_threads_arg(2) == 2
    X = as_data_matrix(np.asfortranarray(np.ones((3, 2), dtype=np.float32)))
    assert X.flags.c_contiguous and X.dtype == np.float32


def test_scale_weights_is_a_power_of_two_near_the_maximum():
    from nystrom_kme._validation import normalised_weights, power_of_two_scale, scale_weights

    for top in (5e-324, 1e-310, 2.2250738585072014e-308, 1e-300, 0.3, 1.0, 1.999, 2.0, 3.0, 1e300, 1.7e308):
        unit, c = scale_weights(np.array([top, top / 3, 0.0]))
        assert np.frexp(c)[0] == 0.5  # a power of two ...
        assert 1.0 <= unit[0] < 2.0 and unit[2] == 0.0  # ... bringing the maximum to [1, 2)
        assert unit[0] * c == top  # exactly
        assert power_of_two_scale(top) == c
    assert scale_weights(None) == (None, 1.0)
    assert scale_weights(np.zeros(3))[1] == 1.0  # nothing to scale (partial_fit allows it)
    w = np.array([1.0, 3.0, 4.0])
    assert scale_weights(w)[1] == 4.0 and scale_weights(w)[0].tolist() == [0.25, 0.75, 1.0]
    unchanged = np.array([1.5, 0.2])
    assert scale_weights(unchanged)[0] is unchanged  # already in [1, 2): not even copied
    np.testing.assert_array_equal(normalised_weights(w * 5e-324), np.array([1.0, 3.0, 4.0]) / 8.0)
    np.testing.assert_allclose(normalised_weights(w * 1e307), w / 8.0, rtol=1e-15)


def test_messages_scikit_learn_expects():
    with pytest.raises(ValueError, match="Complex data not supported"):
        as_data_matrix(np.ones((3, 2)) * 1j)
    with pytest.raises(ValueError, match=r"0 feature\(s\) \(shape=\(4, 0\)\) while a minimum of 1 is required"):
        as_data_matrix(np.ones((4, 0)))
    with pytest.raises(ValueError, match="n_samples = 1"):
        as_data_matrix(np.ones((1, 2)), min_rows=2)
    bad = np.ones((2, 2), dtype=object)
    bad[0, 0] = {"a": 1}
    with pytest.raises(TypeError, match="X must be a numeric array: float.. argument must be a string or a"):
        as_data_matrix(bad)
    with pytest.raises(ValueError, match="X must be a numeric array"):  # also a ValueError
        as_data_matrix(bad)
    with pytest.raises(ValueError, match="sample_weight must have a positive sum \\(all weights are zero\\)"):
        check_sample_weight([0.0, 0.0], 2)


# Every numeric type a user may hold: Python's, numpy's floats of each width, numpy's
# integers (the value is exactly representable in each).
def _numbers(value):
    out = [value, np.float64(value), np.float32(value), np.float16(value)]
    if float(value).is_integer():
        out += [int(value), np.int64(value), np.int32(value), np.uint16(value)]
    return out


def test_numpy_scalars_are_numbers_wherever_python_numbers_are():
    for x in _numbers(0.25):  # 0.25 is exact in float16
        assert check_probability(x, "alpha") == 0.25 and type(check_probability(x, "alpha")) is float
    for x in _numbers(100.0):
        assert check_positive_real(x, "ert") == 100.0 and check_finite_real(x, "t") == 100.0
    assert check_finite_real(np.float32(-2.5), "t") == -2.5
    for bad in (0, 1, 1.5, -0.1, np.float32(1.0), np.nan, True, np.bool_(True), "0.05", None, [0.05]):
        with pytest.raises(ValueError, match=r"^alpha must be in \(0, 1\), got "):
            check_probability(bad, "alpha")
    for bad in (0, -1.0, np.int64(0), np.float32(np.inf), np.nan, False, "100", None):
        with pytest.raises(ValueError, match="^ert must be a positive number, got "):
            check_positive_real(bad, "ert")
    for bad in (np.inf, np.float64(np.nan), True, "1"):
        with pytest.raises(ValueError, match="^t must be a finite number, got "):
            check_finite_real(bad, "t")


def test_impossible_permutation_counts_are_refused_before_any_work():
    total = physical_memory_bytes()
    assert total > 2**20  # a POSIX machine says how much memory it has
    # the count at which (B + 1) * bytes each crosses the machine's memory
    largest = total // MIN_BYTES_PER_PERMUTATION - 1
    assert check_n_permutations(np.int64(200)) == 200 and check_n_permutations(largest) == largest
    for B, each in ((2**40, 0.0), (largest + 1, 0.0), (total // 8000, 8000.0)):
        with pytest.raises(ValueError, match=rf"^n_permutations={B} is too large: it needs .* bytes, more than"):
            check_n_permutations(B, bytes_each=each)
    with pytest.raises(ValueError, match="B must be a positive integer"):
        check_n_permutations(0, "B")
    check_allocation(total, "all of it")  # at the bound: allowed
    with pytest.raises(ValueError, match=r"^X \(n = 10\^12\) is too large"):
        check_allocation(total + 1, "X (n = 10^12)")
