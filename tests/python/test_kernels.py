"""Kernel objects and the core's kernel evaluations against dense numpy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.spatial.distance import pdist

import nystrom_kme as nk
from nystrom_kme import _core
from references import dense_kernel

KERNELS = [
    ("gaussian", nk.Gaussian(1.7)),
    ("laplacian", nk.Laplacian(1.7)),
    ("matern12", nk.Matern(1.7, nu=0.5)),
    ("matern32", nk.Matern(1.7, nu=1.5)),
    ("matern52", nk.Matern(1.7, nu=2.5)),
    ("inverse_multiquadric", nk.InverseMultiquadric(1.7)),
    ("linear", nk.Linear(1.7)),
    ("polynomial", nk.Polynomial(1.7, degree=3, offset=0.5)),
]


@pytest.mark.parametrize(("name", "kernel"), KERNELS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("d", [1, 4, 37])
def test_kernel_matrix_and_row_sums_match_dense(rng, name, kernel, dtype, d):
    X = rng.normal(size=(301, d)).astype(dtype)
    L = np.concatenate([X[:5], rng.normal(size=(6, d)).astype(dtype)])  # duplicates of data rows
    extra = {"degree": 3, "offset": 0.5} if name == "polynomial" else {}
    ref = dense_kernel(name, L.astype(np.float64), X.astype(np.float64), 1.7, **extra)
    rtol = 1e-12 if dtype == np.float64 else 2e-5
    np.testing.assert_allclose(kernel(L, X), ref, rtol=rtol, atol=rtol * np.abs(ref).max())
    sums = _core.kernel_row_sums(L, X, kernel.to_core(), 0)
    np.testing.assert_allclose(sums, ref.sum(axis=1), rtol=rtol)


@pytest.mark.parametrize("n", [1, 255, 256, 257, 1237, 4099])
@pytest.mark.parametrize("m", [1, 3, 17])
def test_row_sums_any_block_remainder(rng, n, m):
    X = rng.normal(size=(n, 3))
    L = rng.normal(size=(m, 3))
    ref = dense_kernel("gaussian", L, X, 0.9).sum(axis=1)
    got = _core.kernel_row_sums(L, X, _core.Kernel("gaussian", 0.9), 0)
    np.testing.assert_allclose(got, ref, rtol=1e-13)


def test_weighted_multi_column_sums(rng):
    X = rng.normal(size=(3001, 5))
    L = rng.normal(size=(40, 5))
    W = rng.normal(size=(3001, 7))
    ref = dense_kernel("matern32", L, X, 2.0) @ W
    got = _core.kernel_sums(L, X, W, _core.Kernel("matern32", 2.0), 0)
    np.testing.assert_allclose(got, ref, rtol=1e-11, atol=1e-11 * np.abs(ref).max())
    total = _core.kernel_total_sum(L, X, _core.Kernel("matern32", 2.0), 0)
    assert total == pytest.approx(dense_kernel("matern32", L, X, 2.0).sum(), rel=1e-13)


def test_row_sums_thread_count_invariant_bitwise(rng):
    X = rng.normal(size=(30_001, 10))
    L = X[:257]
    k = _core.Kernel("gaussian", 3.0)
    one = _core.kernel_row_sums(L, X, k, 1)
    two = _core.kernel_row_sums(L, X, k, 2)
    three = _core.kernel_row_sums(L, X, k, 3)
    assert one.tobytes() == two.tobytes() == three.tobytes()


def test_median_distance_matches_scipy(rng):
    X = rng.normal(size=(700, 4))
    assert nk.median_distance(X) == pytest.approx(np.median(pdist(X)), rel=1e-12)
    Y = rng.normal(size=(5000, 4))
    med = nk.median_distance(Y, random_state=0)  # subset of 1000 rows
    assert med == pytest.approx(np.median(pdist(Y[:2000])), rel=0.05)


def test_median_resolution_and_repr(rng):
    X = rng.normal(size=(200, 3))
    k = nk.Gaussian()
    assert not k.is_resolved
    r = k.resolve(X)
    assert r.is_resolved and r.bandwidth == pytest.approx(np.median(pdist(X)))
    assert repr(nk.Polynomial(2.0, degree=3)) == "Polynomial(bandwidth=2.0, degree=3, offset=1.0)"
    assert nk.Gaussian(2.0) == nk.Gaussian(2.0) != nk.Laplacian(2.0)
    assert nk.get_kernel("matern52") == nk.Matern(nu=2.5)


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf"), "mean", None, True])
def test_bad_bandwidth_is_named(bad):
    with pytest.raises(ValueError, match="bandwidth"):
        nk.Gaussian(bad)


def test_core_rejects_bad_bandwidth_and_parameters():
    with pytest.raises(ValueError, match="bandwidth"):
        _core.Kernel("gaussian", 0.0)
    with pytest.raises(ValueError, match="unknown kernel"):
        _core.Kernel("cosine", 1.0)
    with pytest.raises(ValueError, match="degree"):
        nk.Polynomial(1.0, degree=0)
    with pytest.raises(ValueError, match="offset"):
        nk.Polynomial(1.0, offset=-1.0)
    with pytest.raises(ValueError, match="nu"):
        nk.Matern(1.0, nu=1.0)
    with pytest.raises(ValueError, match="kernel"):
        nk.get_kernel("cosine")


def test_core_checks_its_preconditions():
    k = _core.Kernel("gaussian", 1.0)
    with pytest.raises(ValueError, match="dimension mismatch"):
        _core.kernel_row_sums(np.ones((2, 3)), np.ones((4, 2)), k, 0)
    bad = np.ones((4, 3))
    bad[1, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        _core.kernel_row_sums(np.ones((2, 3)), bad, k, 0)
    with pytest.raises(ValueError, match="rows"):
        _core.kernel_sums(np.ones((2, 3)), np.ones((4, 3)), np.ones((5, 1)), k, 0)
    with pytest.raises(TypeError):  # no silent conversion at the boundary
        _core.kernel_row_sums(np.ones((2, 3), dtype=np.int64), np.ones((4, 3)), k, 0)


def test_kernel_call_validates_inputs(rng):
    k = nk.Gaussian(1.0)
    with pytest.raises(ValueError, match="X"):
        k(np.ones(3))
    with pytest.raises(ValueError, match="features"):
        k(np.ones((2, 3)), np.ones((2, 4)))
    with pytest.raises(ValueError, match="resolved"):
        nk.Gaussian()(np.ones((2, 3)))


# --------------------------------------------------------------------------- #
# the whole float64 range (issue 12)
# --------------------------------------------------------------------------- #
RADIAL = [
    nk.Gaussian,
    nk.Laplacian,
    nk.InverseMultiquadric,
    lambda b: nk.Matern(b, nu=1.5),
    lambda b: nk.Matern(b, nu=2.5),
    lambda b: nk.RationalQuadratic(b, alpha=0.3),
    nk.LaplacianL1,
]


@pytest.mark.parametrize("make", RADIAL)
def test_tiny_bandwidths_keep_k_of_a_point_with_itself_exactly_one(make, rng):
    X = rng.normal(size=(6, 3))
    for sigma in (1e-200, 1e-300, 2.3e-308):
        K = make(sigma)(X)
        assert np.isfinite(K).all()
        np.testing.assert_array_equal(np.diag(K), 1.0)
        assert (K[~np.eye(6, dtype=bool)] == 0.0).all()  # distinct points are infinitely far apart
    for bad in (1e-310, 0.0, -1.0, np.inf):  # subnormal: 1 / bandwidth would overflow
        with pytest.raises(ValueError, match="bandwidth must be a finite number >= 2.2250738585072014e-308"):
            make(bad)


@pytest.mark.parametrize("make", RADIAL + [nk.Linear, lambda b: nk.Polynomial(b, degree=3)])
def test_kernel_values_do_not_depend_on_the_units(make, rng):
    """k(a x, a y) with bandwidth a sigma equals k(x, y) with sigma, for a far from 1."""
    X, Y = rng.normal(size=(40, 4)), rng.normal(size=(30, 4))
    ref = make(1.7)(X, Y)
    for a in (1e150, 1e-170, 2.0**700):
        got = make(1.7 * a)(X * a, Y * a)
        np.testing.assert_allclose(got, ref, rtol=1e-13, atol=1e-15)
    for a in (2.0**100, 2.0**-100):  # float32 data near the ends of its range
        got32 = make(1.7 * a)((X * a).astype(np.float32), (Y * a).astype(np.float32))
        np.testing.assert_allclose(got32, ref, rtol=2e-5, atol=1e-6)


def test_median_heuristic_works_at_any_scale(rng):
    X = rng.normal(size=(300, 3))
    ref = nk.median_distance(X)
    for a in (1e-170, 1e154, 1e300):
        assert nk.median_distance(X * a) == pytest.approx(ref * a, rel=1e-12)


def test_overflowing_values_are_named(rng):
    X = rng.normal(size=(50, 2)) * 1e300
    with pytest.raises(ValueError, match="divided by the kernel's bandwidth overflows float64"):
        nk.Gaussian(1e-10)(X)
    with pytest.raises(ValueError, match="overflows float32"):
        nk.Gaussian(1e-10)(np.array([[1e30, -1e30], [-1e30, 1e30], [0, 0]], dtype=np.float32))


def _numpy_median_distance(X):
    """The median heuristic as numpy computes it (the package's Python code before the
    core took it over): float64, a power-of-two rescaling, direct differences."""
    Z = np.asarray(X, dtype=np.float64)
    largest = float(np.abs(Z).max())
    scale = 2.0 ** math.floor(math.log2(largest)) if largest > 0 else 1.0
    Z = Z / scale
    d2 = np.concatenate([((Z[i + 1 :] - Z[i]) ** 2).sum(axis=1) for i in range(Z.shape[0] - 1)])
    return float(np.median(np.sqrt(d2))) * scale


@pytest.mark.parametrize(
    ("dtype", "magnitude"),
    [
        (np.float64, 1.0),
        (np.float64, 1e-160),
        (np.float64, 1e150),
        (np.float64, 1e-300),
        (np.float32, 1.0),
        (np.float32, 1e-30),
        (np.float32, 1e30),
    ],
)
def test_median_distance_has_numpys_bits(dtype, magnitude):
    """Bit for bit numpy's result: widths that take every branch of numpy's pairwise
    sums (below 8, blocks of 8 up to 128, halving above), odd and even pair counts,
    duplicated rows, spread magnitudes, any thread count."""
    rng = np.random.default_rng(7)
    for k, d in [(2, 1), (3, 5), (40, 7), (41, 8), (30, 9), (25, 64), (20, 129), (17, 300)]:
        X = rng.normal(size=(k, d)) * np.exp(3 * rng.normal(size=(k, d))) * magnitude
        X[rng.integers(0, k, size=k // 3)] = X[0]  # duplicates: zero distances
        X = X.astype(dtype)
        ref = _numpy_median_distance(X)
        assert _core.median_pairwise_distance(X, 1) == ref, (k, d)
        assert _core.median_pairwise_distance(X, 2) == ref, (k, d)


def test_median_distance_keeps_its_draws_and_errors():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(1797, 64))
    sub = X[np.random.default_rng(5).choice(1797, size=1000, replace=False)]
    assert nk.median_distance(X, random_state=5) == _numpy_median_distance(sub)
    assert nk.median_distance(X[:300]) == _numpy_median_distance(X[:300])  # no draw below 1000 rows
    # most rows repeat: the median of the distances between distinct rows; one point: 1
    assert nk.median_distance(np.ones((10, 3))) == 1.0
    many = np.ones((10, 1))
    many[:2, 0] = [0.0, 3.0]  # eight equal rows: 28 of the 45 distances are 0
    nonzero = _numpy_median_distance(many)
    assert nonzero == 0.0 and nk.median_distance(many) == np.median(
        [abs(a - b) for i, a in enumerate(many[:, 0]) for b in many[i + 1 :, 0] if a != b]
    )
    with pytest.raises(ValueError, match="at least 2 row"):
        nk.median_distance(np.ones((1, 3)))
    with pytest.raises(ValueError, match="NaN or inf"):
        nk.median_distance(np.array([[0.0, np.nan], [1.0, 2.0]]))


def test_one_table_of_kernel_classes_and_names():
    """KERNEL_CLASSES lists every kernel class of the module, the package exports each,
    and KERNEL_NAMES are exactly the names get_kernel accepts, reaching every class."""
    from nystrom_kme import kernels

    def subclasses(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    defined = {c for c in subclasses(nk.Kernel) if c.__module__ == "nystrom_kme.kernels"}
    assert set(kernels.KERNEL_CLASSES) == defined and len(kernels.KERNEL_CLASSES) == len(defined)
    exported = {v for v in vars(nk).values() if isinstance(v, type) and issubclass(v, nk.Kernel)}
    assert exported == defined | {nk.Kernel}
    assert all(getattr(nk, c.__name__) is c for c in kernels.KERNEL_CLASSES)
    reached = {type(nk.get_kernel(name)) for name in kernels.KERNEL_NAMES}
    assert reached == defined
    assert len(set(kernels.KERNEL_NAMES)) == len(kernels.KERNEL_NAMES)
    with pytest.raises(ValueError) as err:
        nk.get_kernel("gauss")
    assert str(sorted(kernels.KERNEL_NAMES)) in str(err.value)


# --------------------------------------------------------------------------- #
# the rational quadratic and l1 Laplacian kernels (issues 41, 42): scikit-learn's
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("alpha", [0.05, 0.5, 1.0, 4.0, 250.0])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_rational_quadratic_is_scikit_learns(alpha, dtype, rng):
    gp = pytest.importorskip("sklearn.gaussian_process.kernels")
    for d in (3, 40):  # direct differences and the centred expansion
        X, Y = rng.normal(size=(70, d)), 2.0 * rng.normal(size=(300, d)) + 0.5
        sigma = 1.3 * math.sqrt(d)
        k = nk.RationalQuadratic(sigma, alpha=alpha)
        A, B = X.astype(dtype), Y.astype(dtype)
        X64, Y64 = A.astype(np.float64), B.astype(np.float64)  # the points the core sees
        # scikit-learn rounds 1 + x, which its power raises to alpha (alpha eps); the
        # reference is exp(-alpha log1p(x)), whose log1p and exp carry a few ulp of alpha log1p(x)
        x = ((X64[:, None] - Y64[None]) ** 2).sum(-1) / (2 * alpha * sigma**2)
        ref = np.exp(-alpha * np.log1p(x))
        sk = gp.RationalQuadratic(length_scale=sigma, alpha=alpha)(X64, Y64)
        assert np.abs(sk - ref).max() <= 4e-16 * max(alpha, 1.0) * 8
        eps = 4e-16 if dtype == np.float64 else 2e-7
        tol = 8 * eps * np.maximum(1.0, alpha * np.log1p(x))
        assert (np.abs(k(A, B) - ref) <= tol * ref + np.finfo(dtype).tiny).all()
        w = rng.normal(size=(300, 3))
        S = _core.kernel_sums(A, B, np.ascontiguousarray(w), k.to_core(), 0)  # the multi-column tiles
        assert (np.abs(S - ref @ w) <= 4 * (tol * ref) @ np.abs(w) + 1e-300).all()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_laplacian_l1_is_scikit_learns(dtype, rng):
    pairwise = pytest.importorskip("sklearn.metrics.pairwise")
    for d in (1, 3, 50):
        X, Y = rng.normal(size=(70, d)), rng.standard_cauchy(size=(300, d))
        sigma = 0.8 * d
        k = nk.LaplacianL1(sigma)
        A, B = X.astype(dtype), Y.astype(dtype)
        X, Y = A.astype(np.float64), B.astype(np.float64)  # the points the core sees
        ref = pairwise.laplacian_kernel(X, Y, gamma=1 / sigma)
        # exp(-t) carries the rounding of t = ||x - y||_1 / sigma: d + 1 ulp of t, relative
        eps = 2.3e-16 if dtype == np.float64 else 1.2e-7
        t_ = np.abs(X[:, None] - Y[None]).sum(-1) / sigma
        tol = 2 * eps * (d + 2) * (1.0 + t_)
        tiny = np.finfo(dtype).tiny  # below the smallest normal float32 exp gives 0
        assert (np.abs(k(A, B) - ref) <= tol * ref + tiny).all()
        row = _core.kernel_row_sums(A, B, k.to_core(), 0)  # the fused one-column tiles
        assert (np.abs(row - ref.sum(1)) <= 2 * (tol * ref).sum(1) + 300 * tiny).all()
    if True:  # in d = 1 the two Laplacians coincide
        X = rng.normal(size=(20, 1))
        np.testing.assert_allclose(nk.LaplacianL1(0.7)(X), nk.Laplacian(0.7)(X), rtol=1e-15)


def test_new_kernels_arguments_and_files(tmp_path, rng):
    for bad in (0.0, -1.0, math.inf, math.nan, "1", True):
        with pytest.raises(ValueError, match="alpha"):
            nk.RationalQuadratic(1.0, alpha=bad)
    assert nk.RationalQuadratic(2.0, alpha=3.0).with_bandwidth(1.0) == nk.RationalQuadratic(1.0, alpha=3.0)
    assert nk.get_kernel("laplacian_l1") == nk.LaplacianL1()
    X = rng.normal(size=(500, 4))
    # the median heuristic of the l1 kernel is the median l1 distance
    l1 = np.concatenate([np.abs(X[i + 1 :] - X[i]).sum(1) for i in range(len(X) - 1)])
    assert nk.LaplacianL1().resolve(X).bandwidth == pytest.approx(float(np.median(l1)), rel=1e-12)
    for k in (nk.RationalQuadratic(1.5, alpha=0.7), nk.LaplacianL1(2.0)):
        est = nk.NystromKME(k, n_landmarks=50, random_state=0).fit(X)
        path = tmp_path / f"{k.name}.npz"
        est.save(path)
        again = nk.load(path)
        assert again.kernel_ == k and np.array_equal(again.weights_, est.weights_)
