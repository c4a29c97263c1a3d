"""The compiled module's boundary: calls the typed overloads refuse get a TypeError that
says what is expected and what came; misaligned arrays are refused, not read."""

import numpy as np
import pytest

import nystrom_kme as nk
from nystrom_kme import _core
from references import dense_kernel


def misaligned(a):
    """A C-contiguous copy of ``a`` whose data start one byte past an aligned address."""
    raw = np.zeros(a.nbytes + 1, dtype=np.uint8)[1:]
    out = raw.view(a.dtype).reshape(a.shape)
    out[...] = a
    assert out.flags.c_contiguous and not out.flags.aligned
    return out


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(40, 3)), rng.normal(size=(30, 3)), nk.Gaussian(1.5).to_core()


@pytest.mark.parametrize(
    "case, shown",
    [
        ("fortran", "NOT C-contiguous"),
        ("strided", "NOT C-contiguous"),
        ("int64", "array int64"),
        ("byteswapped", "NON-native byte order"),
        ("mixed", "array float32"),
    ],
)
def test_layout_errors_say_what_is_expected_and_what_came(data, case, shown):
    A, B, k = data
    bad = {
        "fortran": np.asfortranarray(A),
        "strided": np.vstack([A, A])[::2],
        "int64": A.astype(np.int64),
        "byteswapped": A.astype(">f8"),
        "mixed": A.astype(np.float32),
    }[case]
    with pytest.raises(TypeError) as err:
        _core.kernel_row_sums(bad, B, k)
    msg = str(err.value)
    assert msg.startswith("kernel_row_sums(): invalid arguments")
    assert "C-contiguous, aligned, in native byte order" in msg
    assert "both float64 or both float32" in msg
    assert shown in msg


def test_an_integer_out_of_range_is_a_clear_error(data):
    A, B, k = data
    with pytest.raises(TypeError, match=r"n_threads=int 1099511627776"):
        _core.kernel_row_sums(A, B, k, n_threads=2**40)


@pytest.mark.parametrize(
    "call", ["kernel_row_sums", "kernel_sums", "nystrom_weights", "pivoted_cholesky", "kernel_herding"]
)
def test_misaligned_arrays_are_refused_by_the_core(data, call):
    A, B, k = data
    Am = misaligned(A)
    args = {
        "kernel_row_sums": (Am, B, k),
        "kernel_sums": (Am, B, np.ones((30, 1)), k),
        "nystrom_weights": (Am, np.ones((40, 1)), k),
        "pivoted_cholesky": (Am, k, 3, "greedy"),
        "kernel_herding": (Am, np.zeros(40), k, 3),
    }[call]
    with pytest.raises(ValueError, match="not aligned to its item size"):
        getattr(_core, call)(*args)


def test_the_public_api_realigns_misaligned_input(data):
    A, B, _ = data
    kernel = nk.Gaussian(1.5)
    expected = dense_kernel("gaussian", B, A, 1.5).mean(axis=1)
    emb = nk.EmpiricalKME(kernel).fit(misaligned(A), sample_weight=misaligned(np.ones(40)))
    np.testing.assert_allclose(emb(misaligned(B)), expected, rtol=1e-13, atol=1e-15)
    fit = nk.NystromKME(kernel, n_landmarks=10, random_state=0).fit(misaligned(A))
    same = nk.NystromKME(kernel, n_landmarks=10, random_state=0).fit(A)
    np.testing.assert_array_equal(fit(misaligned(B)), same(B))


# The core's own preconditions, reached through _core (native applications call it the
# same way): a clear ValueError, never a crash, an overflow or a silent wrong answer.


def test_ridge_weights_do_not_overflow_near_the_float64_limit():
    """K + ridge I overflowed to inf (the weights came back as zeros): the solve now runs
    on K, ridge and s scaled by powers of two. Reference: exact rationals."""
    from fractions import Fraction

    diag = np.array([1.5e308, 1e308, 0.5e308])
    s = np.array([1e300, 3e299, -2e300])
    got = _core.ridge_weights(np.diag(diag), s, 1e308)
    ref = [float(Fraction(b) / (Fraction(a) + Fraction(1e308))) for a, b in zip(diag, s)]
    np.testing.assert_allclose(got, ref, rtol=1e-15)
    # a full PSD matrix of huge entries against numpy's solve in units of 2^1000
    rng = np.random.default_rng(0)
    G = rng.normal(size=(6, 6))
    K = (G @ G.T) * 2.0**1015
    s = rng.normal(size=6) * 2.0**1010
    ref = np.linalg.solve(K / 2.0**1000 + 2.0**17 * np.eye(6), s / 2.0**1000)
    np.testing.assert_allclose(_core.ridge_weights(K, s, 2.0**1017), ref, rtol=1e-12)


def test_ridge_weights_in_range_are_unchanged_by_the_scaling():
    rng = np.random.default_rng(1)
    G = rng.normal(size=(8, 8))
    K, s = G @ G.T, rng.normal(size=8)
    for c in (1.0, 2.0**-600, 2.0**600):  # exact rescalings: the same bits, scaled
        assert np.array_equal(_core.ridge_weights(K * c, s * c, 0.1 * c), _core.ridge_weights(K, s, 0.1))
    np.testing.assert_allclose(_core.ridge_weights(K, s, 0.1), np.linalg.solve(K + 0.1 * np.eye(8), s), rtol=1e-12)


def test_ridge_weights_that_overflow_are_a_clear_error():
    with pytest.raises(ValueError, match=r"overflow float64: ridge = 1e-10 is too small"):
        _core.ridge_weights(np.zeros((2, 2)), np.array([1e300, 1.0]), 1e-10)


def test_nystrom_weights_refuse_s_without_columns(data):
    A, _, k = data
    for solver in ("auto", "cod", "cholesky"):
        with pytest.raises(ValueError, match=r"s must have at least one column.*\(40, 0\)"):
            _core.nystrom_weights(A, np.zeros((40, 0)), k, solver)
    with pytest.raises(ValueError, match="at least one column"):  # duplicated landmarks too
        _core.nystrom_weights(np.vstack([A, A]), np.zeros((80, 0)), k)


@pytest.mark.parametrize(
    ("n1", "n2", "b", "match"),
    [
        (2**62, 2**62, 10, r"n1 \+ n2 must be at most 2\^53"),
        (2**63 - 1, 1, 10, r"n1 \+ n2 must be at most 2\^53"),  # n1 + n2 overflows int64
        (2**53, 1, 10, r"n1 \+ n2 must be at most 2\^53"),
        (10, 10, 2**63 - 1, r"n_permutations = 9223372036854775807 is too large"),  # B + 1 overflows
        (10, 10, 2**62, r"n_permutations = 4611686018427387904 is too large"),
        (10, 10, 2**50, r"too large: its split states need 3\.6\d*e\+16 bytes"),  # beyond memory
    ],
)
def test_random_splits_refuse_sizes_that_overflow(n1, n2, b, match):
    with pytest.raises(ValueError, match=match):
        _core.RandomSplits(n1, n2, b, 0)


def test_random_splits_at_the_largest_row_count_are_accepted():
    splits = _core.RandomSplits(2**53 - 1, 1, 3, 0)
    assert splits.n_rows == 2**53 and splits.n_columns == 4
    w = splits.next_weights(5)
    assert w.shape == (5, 4) and np.all(w[:, 0] == 1.0 / (2**53 - 1))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_bin_sums_allocate_their_zeros_and_take_nested_rows(dtype):
    """kernel_bin_sums without ``out`` returns the dense sums by bin in an array the core
    allocated (it outlives the call); ``rows`` limits kernel j to the first rows[j]
    landmarks and leaves the rest of E_j at 0; a bad count is a clear error."""
    rng = np.random.default_rng(4)
    L, Z = rng.normal(size=(20, 3)).astype(dtype), rng.normal(size=(300, 3)).astype(dtype)
    bins = rng.integers(-1, 7, size=300).astype(np.int64)
    kernels = [nk.Gaussian(0.8), nk.Gaussian(2.0)]
    E = _core.kernel_bin_sums(L, Z, bins, 7, [k.to_core() for k in kernels], 1, None, [20, 9])
    assert E.shape == (2, 20, 7) and E.flags.c_contiguous and E.flags.writeable
    onehot = np.zeros((300, 7))
    onehot[bins >= 0, bins[bins >= 0]] = 1
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for Ej, k, rows in zip(E, kernels, (20, 9)):
        want = dense_kernel(k.name, L, Z, k.bandwidth) @ onehot
        np.testing.assert_allclose(Ej[:rows], want[:rows], rtol=tol, atol=tol)
        assert (Ej[rows:] == 0).all()
    with pytest.raises(ValueError, match="kernel_rows has 21"):
        _core.kernel_bin_sums(L, Z, bins, 7, [kernels[0].to_core()], 1, None, [21])
    with pytest.raises(ValueError, match="one count per kernel"):
        _core.kernel_bin_sums(L, Z, bins, 7, [k.to_core() for k in kernels], 1, None, [5])
