"""The compiled module's boundary: calls the typed overloads refuse get a TypeError that
says what is expected and what came; misaligned arrays are refused, not read."""

import numpy as np
import nystrom_kme as nk
import pytest
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


@pytest.mark.parametrize("case, shown", [
    ("fortran", "NOT C-contiguous"),
    ("strided", "NOT C-contiguous"),
    ("int64", "array int64"),
    ("byteswapped", "NON-native byte order"),
    ("mixed", "array float32"),
])
def test_layout_errors_say_what_is_expected_and_what_came(data, case, shown):
    A, B, k = data
    bad = {"fortran": np.asfortranarray(A), "strided": np.vstack([A, A])[::2],
           "int64": A.astype(np.int64), "byteswapped": A.astype(">f8"),
           "mixed": A.astype(np.float32)}[case]
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


@pytest.mark.parametrize("call", ["kernel_row_sums", "kernel_sums", "nystrom_weights",
                                  "pivoted_cholesky", "kernel_herding"])
def test_misaligned_arrays_are_refused_by_the_core(data, call):
    A, B, k = data
    Am = misaligned(A)
    args = {"kernel_row_sums": (Am, B, k), "kernel_sums": (Am, B, np.ones((30, 1)), k),
            "nystrom_weights": (Am, np.ones((40, 1)), k),
            "pivoted_cholesky": (Am, k, 3, "greedy"),
            "kernel_herding": (Am, np.zeros(40), k, 3)}[call]
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
