"""MMD estimators against dense numpy formulas."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

import nystrom_kme as nk
from references import dense_kernel


def dense_mmd2(X, Y, sigma, unbiased=False, wx=None, wy=None):
    Kxx = dense_kernel("gaussian", X, X, sigma)
    Kyy = dense_kernel("gaussian", Y, Y, sigma)
    Kxy = dense_kernel("gaussian", X, Y, sigma)
    wx = np.full(len(X), 1 / len(X)) if wx is None else wx / wx.sum()
    wy = np.full(len(Y), 1 / len(Y)) if wy is None else wy / wy.sum()
    if not unbiased:
        return wx @ Kxx @ wx + wy @ Kyy @ wy - 2 * wx @ Kxy @ wy

    def within(K, w):
        off = w @ K @ w - (w * w) @ np.diag(K)
        return off / (1 - w @ w)

    return within(Kxx, wx) + within(Kyy, wy) - 2 * wx @ Kxy @ wy


@pytest.fixture
def samples(rng):
    X = rng.normal(size=(700, 3))
    Y = rng.normal(size=(450, 3)) + np.array([0.4, 0.0, 0.0])
    return X, Y


@pytest.mark.parametrize("unbiased", [False, True])
def test_exact_mmd_matches_dense(samples, unbiased):
    X, Y = samples
    k = nk.Gaussian(1.1)
    got = nk.mmd2_exact(X, Y, kernel=k, unbiased=unbiased)
    assert got == pytest.approx(dense_mmd2(X, Y, 1.1, unbiased), rel=1e-10)


@pytest.mark.parametrize("unbiased", [False, True])
def test_weighted_exact_mmd_matches_dense(samples, rng, unbiased):
    X, Y = samples
    wx, wy = rng.uniform(0.1, 1, len(X)), rng.uniform(0.1, 1, len(Y))
    got = nk.mmd2_exact(X, Y, kernel=nk.Gaussian(0.8), unbiased=unbiased, sample_weight_x=wx, sample_weight_y=wy)
    assert got == pytest.approx(dense_mmd2(X, Y, 0.8, unbiased, wx, wy), rel=1e-10)
    # integer weights are the same as repeating points (V-statistic)
    counts = rng.integers(1, 4, len(X))
    rep = nk.mmd2_exact(np.repeat(X, counts, axis=0), Y, kernel=nk.Gaussian(0.8))
    assert nk.mmd2_exact(X, Y, kernel=nk.Gaussian(0.8), sample_weight_x=counts) == pytest.approx(rep, rel=1e-10)


def test_unbiased_estimate_is_unbiased_under_h0(rng):
    # E[U-statistic] = 0 when P = Q: the mean over many draws is within 4 standard errors
    vals = [
        nk.mmd2_exact(rng.normal(size=(30, 2)), rng.normal(size=(30, 2)), kernel=nk.Gaussian(1.0), unbiased=True)
        for _ in range(300)
    ]
    assert abs(np.mean(vals)) < 4 * np.std(vals) / math.sqrt(len(vals))


def test_linear_time_estimator(samples):
    X, Y = samples
    n = min(len(X), len(Y)) // 2
    K = lambda a, b: np.exp(-((a - b) ** 2).sum(1) / (2 * 1.1**2))  # noqa: E731
    x0, x1, y0, y1 = X[0 : 2 * n : 2], X[1 : 2 * n : 2], Y[0 : 2 * n : 2], Y[1 : 2 * n : 2]
    ref = np.mean(K(x0, x1) + K(y0, y1) - K(x0, y1) - K(x1, y0))
    assert nk.mmd2_linear(X, Y, kernel=nk.Gaussian(1.1)) == pytest.approx(ref, rel=1e-12)


def test_nystrom_mmd_between_embeddings_matches_dense(samples):
    X, Y = samples
    k = nk.Gaussian(1.1)
    ex = nk.NystromKME(k, n_landmarks=60, random_state=0).fit(X)
    ey = nk.NystromKME(k, n_landmarks=35, random_state=1).fit(Y)  # m1 != m2
    La, a, Lb, b = ex.landmarks_, ex.weights_, ey.landmarks_, ey.weights_
    ref = (
        a @ dense_kernel("gaussian", La, La, 1.1) @ a
        + b @ dense_kernel("gaussian", Lb, Lb, 1.1) @ b
        - 2 * a @ dense_kernel("gaussian", La, Lb, 1.1) @ b
    )
    assert nk.mmd2(ex, ey) == pytest.approx(ref, rel=1e-9)
    assert nk.mmd(ex, ey) == pytest.approx(math.sqrt(ref), rel=1e-9)
    # on raw arrays, with enough landmarks, the Nystrom MMD approaches the exact one
    exact = math.sqrt(nk.mmd2_exact(X, Y, kernel=k))
    assert nk.mmd(X, Y, kernel=k, n_landmarks=400, random_state=0) == pytest.approx(exact, rel=0.05)


def test_median_bandwidth_is_pooled(samples):
    X, Y = samples[0][:500], samples[1][:400]  # 900 pooled points: no 1000-point subset drawn
    pooled = nk.median_distance(np.concatenate([X, Y]))
    assert nk.mmd2_exact(X, Y) == pytest.approx(dense_mmd2(X, Y, pooled), rel=1e-10)


def test_mmd_bad_input(samples):
    X, Y = samples
    with pytest.raises(ValueError, match="features"):
        nk.mmd2_exact(X, Y[:, :2])
    with pytest.raises(ValueError, match="sample_weight_x must have shape"):
        nk.mmd2_exact(X, Y, sample_weight_x=np.ones(3))
    with pytest.raises(ValueError, match="sample_weight_y must be non-negative"):
        nk.mmd2_exact(X, Y, sample_weight_y=-np.ones(len(Y)))
    with pytest.raises(ValueError, match="at least 2 points"):
        nk.mmd2_exact(X[:1], Y, unbiased=True)
    with pytest.raises(ValueError, match="at least 2 points"):
        nk.mmd2_linear(X[:1], Y)
    with pytest.raises(ValueError, match="both"):
        nk.mmd(nk.EmpiricalKME(nk.Gaussian(1.0)).fit(X), Y)
    with pytest.raises(ValueError, match="NaN"):
        nk.mmd2_exact(np.full((3, 3), np.nan), Y)


def test_every_source_gives_the_in_memory_mmd(samples, tmp_path, rng):
    """The exact and Nystrom MMDs over a memmap and an iterable of chunks equal the
    in-memory ones to 1e-13 (the sums are only grouped differently), weights included."""
    X, Y = samples
    k = nk.Gaussian(0.9)
    wx = rng.uniform(0.2, 1.0, len(X))
    np.save(tmp_path / "x.npy", X)
    streamed = [np.load(tmp_path / "x.npy", mmap_mode="r"), [X[:300], X[300:]]]
    for unbiased in (False, True):
        ref = nk.mmd2_exact(X, Y, kernel=k, unbiased=unbiased, sample_weight_x=wx)
        for src in streamed:
            got = nk.mmd2_exact(
                src, [Y[:200], Y[200:]], kernel=k, unbiased=unbiased, sample_weight_x=wx, chunk_rows=256
            )
            assert abs(got - ref) < 1e-13
    ref = nk.mmd2(X, Y, kernel=k, n_landmarks=50, random_state=2, sample_weight_x=wx)
    for src in streamed:
        got = nk.mmd2(src, Y, kernel=k, n_landmarks=50, random_state=2, sample_weight_x=wx)
        assert abs(got - ref) < 1e-13
    # one vocabulary: mmd is the square root of mmd2, both plain floats
    value = nk.mmd(X, Y, kernel=k, n_landmarks=50, random_state=2, sample_weight_x=wx)
    assert type(value) is float and value == pytest.approx(math.sqrt(ref), rel=1e-15)
    assert type(nk.mmd2_exact(X, Y, kernel=k)) is float and type(nk.mmd2_linear(X, Y, kernel=k)) is float


def test_tiny_bandwidths_and_huge_weights(rng):
    """Issue 12: IMQ/Matern at bandwidth 1e-200 used to give NaN, weights of 1e307
    overflowed the normalisation. Distinct points: K is the identity, so the biased
    MMD^2 is 1/n1 + 1/n2 exactly."""
    X, Y = rng.normal(size=(40, 3)), rng.normal(size=(30, 3))
    for k in (nk.InverseMultiquadric(1e-200), nk.Matern(1e-200, nu=2.5), nk.Gaussian(1e-200), nk.Laplacian(1e-300)):
        assert nk.mmd2_exact(X, Y, kernel=k) == pytest.approx(1 / 40 + 1 / 30, rel=1e-14)
        # the U-statistic drops the diagonal: 0, up to rounding of O(1) terms
        assert abs(nk.mmd2_exact(X, Y, kernel=k, unbiased=True)) < 1e-15
    k = nk.Gaussian(1.3)
    wx = rng.uniform(0.5, 1.5, 40)
    ref = nk.mmd2_exact(X, Y, kernel=k, sample_weight_x=wx)
    assert nk.mmd2_exact(X, Y, kernel=k, sample_weight_x=wx * 1e307) == pytest.approx(ref, rel=1e-13)
    assert nk.mmd2_exact(X, Y, kernel=k, sample_weight_x=wx * 1e-300) == pytest.approx(ref, rel=1e-13)


_WIDE = """
import resource, numpy as np, nystrom_kme as nk
X = np.random.default_rng(0).normal(size=(2, 10**6))
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
v = nk.mmd2_exact(X, X + 0.001, kernel=nk.Gaussian(2000.0))
print(v, (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024)
"""


def test_few_very_wide_rows_need_little_memory():
    """Two (2, 10^6) inputs (32 MB) made the tiled engine allocate 256 x d per side:
    2.2 GB. Few rows of very wide data are now summed pair by pair."""
    out = subprocess.run([sys.executable, "-c", _WIDE], capture_output=True, text=True, timeout=300, check=True)
    value, growth_mb = map(float, out.stdout.split())
    assert growth_mb < 200  # the inputs are 16 MB each
    X = np.random.default_rng(0).normal(size=(2, 10**6))
    d2 = ((X[:, None, :] - X[None, :, :] - 0.001) ** 2).sum(-1)  # tiny: one row pair at a time
    Kxy = np.exp(-d2 / (2 * 2000.0**2))
    Kxx = np.exp(-((X[:, None, :] - X[None, :, :]) ** 2).sum(-1) / (2 * 2000.0**2))
    # a difference of O(1) kernel means, each a sum over 10^6 features: absolute error
    assert value == pytest.approx(2 * Kxx.mean() - 2 * Kxy.mean(), rel=0, abs=5e-14)


@pytest.mark.filterwarnings("ignore:n_landmarks='auto' stopped")
def test_mmd_with_automatic_m_is_within_tol_of_the_empirical_mmd():
    """n_landmarks="auto" per sample: |MMD_auto - MMD_empirical| <= e_X + e_Y <= tol (sigma_X
    + sigma_Y) (each embedding is certified within tol sigma of the empirical one, at 99%
    per search), against the exact V-statistic from dense numpy. Level stated: at least 9
    of 10 repetitions."""
    from nystrom_kme.datasets import GaussianMixture

    mix = GaussianMixture(4, 3, random_state=0)
    k = nk.Gaussian(1.0)
    ok, ratios = 0, []
    for t in range(10):
        rng = np.random.default_rng(t)
        X = mix.sample(2500, random_state=rng)
        Y = mix.sample(2000, random_state=rng) + np.array([0.3, 0.0, 0.0])
        exact = math.sqrt(
            max(
                dense_kernel("gaussian", X, X, 1.0).mean()
                + dense_kernel("gaussian", Y, Y, 1.0).mean()
                - 2 * dense_kernel("gaussian", X, Y, 1.0).mean(),
                0.0,
            )
        )
        est = nk.mmd(X, Y, kernel=k, n_landmarks="auto", random_state=t)
        sigma = sum(nk.estimate_statistical_error(Z, k, random_state=0).value for Z in (X, Y))
        ratios.append(abs(est - exact) / sigma)
        ok += ratios[-1] <= nk.AutoLandmarks().ratio_bound
    assert ok >= 9, ratios


# --------------------------------------------------------------------------- #
# the same bits for any BLAS thread count (issue 21: a numpy dot on a result path)
# --------------------------------------------------------------------------- #
def _blas_threads_can_be_two(threadpoolctl) -> bool:
    with threadpoolctl.threadpool_limits(2, user_api="blas"):
        infos = [i for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]
        return bool(infos) and all(i["num_threads"] == 2 for i in infos)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("unbiased", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_exact_mmd_is_bit_identical_for_one_and_two_blas_threads(dtype, unbiased, weighted):
    threadpoolctl = pytest.importorskip("threadpoolctl")
    if not _blas_threads_can_be_two(threadpoolctl):
        pytest.skip("numpy's BLAS cannot run 2 threads here (one CPU?): nothing to compare")
    rng = np.random.default_rng(7)
    # 16,000 rows: numpy's dot of that length is split over BLAS threads (OpenBLAS
    # threads a dot above ~12,000 entries). With these data each of the 8 cases gave
    # different bits for 1 and 2 threads before the dots were replaced (OpenBLAS 0.3.31).
    X = rng.normal(size=(16_000, 2)).astype(dtype)
    Y = (rng.normal(size=(200, 2)) + 0.3).astype(dtype)
    kw = dict(kernel=nk.Gaussian(1.0), unbiased=unbiased)
    if weighted:
        kw.update(sample_weight_x=rng.uniform(0.5, 2.0, len(X)), sample_weight_y=rng.uniform(0.5, 2.0, len(Y)))
    values = []
    for threads in (1, 2, 1):
        with threadpoolctl.threadpool_limits(threads, user_api="blas"):
            values.append(nk.mmd2_exact(X, Y, **kw))
    assert values[0] == values[1] == values[2]
    assert values[0] > 0.01


def test_subnormal_weights_in_the_exact_mmd(samples):
    X, Y = samples
    k = nk.Gaussian(1.0)
    tiny = nk.mmd2_exact(
        X, Y, kernel=k, unbiased=True, sample_weight_x=np.full(len(X), 5e-324), sample_weight_y=np.full(len(Y), 5e-324)
    )
    assert tiny == pytest.approx(nk.mmd2_exact(X, Y, kernel=k, unbiased=True), rel=1e-12)
    nys = nk.mmd2(
        X,
        Y,
        kernel=k,
        n_landmarks=30,
        random_state=0,
        sample_weight_x=np.full(len(X), 5e-324),
        sample_weight_y=np.full(len(Y), 5e-324),
    )
    ones = nk.mmd2(
        X, Y, kernel=k, n_landmarks=30, random_state=0, sample_weight_x=np.ones(len(X)), sample_weight_y=np.ones(len(Y))
    )
    assert nys == ones


# --------------------------------------------------------------------------- #
# return_info: the kernel and the m an estimate used
# --------------------------------------------------------------------------- #
def test_return_info_reports_the_kernel_and_the_landmark_counts(samples):
    from scipy.spatial.distance import pdist

    X, Y = samples[0][:500], samples[1][:400]  # 900 pooled rows: the median uses them all
    pooled_median = float(np.median(pdist(np.concatenate([X, Y]))))
    for seed in (0, 3):
        est = nk.mmd2(X, Y, random_state=seed, return_info=True)
        assert est.mmd2 == nk.mmd2(X, Y, random_state=seed)  # the float, unchanged
        assert est.kernel == nk.Gaussian(est.kernel.bandwidth)
        assert est.kernel.bandwidth == pytest.approx(pooled_median, rel=1e-12)
        # the default m of each sample (the paper's sqrt(n) log sqrt(n)), independently
        assert est.n_landmarks == tuple(math.ceil(math.sqrt(n) * math.log(math.sqrt(n))) for n in (500, 400))
        assert est.mmd == math.sqrt(est.mmd2)
        assert nk.mmd(X, Y, random_state=seed, return_info=True) == est
    est = nk.mmd2(X, Y, kernel=nk.Laplacian(0.7), n_landmarks=33, random_state=1, return_info=True)
    assert est.n_landmarks == (33, 33) and est.kernel == nk.Laplacian(0.7)
    # the reported m reproduces the estimate: two embeddings with those landmark counts
    ex = nk.NystromKME(nk.Gaussian(1.1), n_landmarks=40, random_state=0).fit(X)
    ey = nk.NystromKME(nk.Gaussian(1.1), n_landmarks=25, random_state=1).fit(Y)
    est = nk.mmd2(ex, ey, return_info=True)
    assert (est.mmd2, est.kernel, est.n_landmarks) == (nk.mmd2(ex, ey), nk.Gaussian(1.1), (40, 25))
    emp = nk.EmpiricalKME(nk.Gaussian(1.1)).fit(Y)
    assert nk.mmd2(ex, emp, return_info=True).n_landmarks is None


@pytest.mark.parametrize("unbiased", [False, True])
def test_exact_return_info_reports_the_pooled_median_kernel(samples, unbiased):
    from scipy.spatial.distance import pdist

    X, Y = samples[0][:500], samples[1][:400]
    est = nk.mmd2_exact(X, Y, unbiased=unbiased, return_info=True)
    sigma = float(np.median(pdist(np.concatenate([X, Y]))))
    assert est.kernel.bandwidth == pytest.approx(sigma, rel=1e-12) and est.n_landmarks is None
    assert est.mmd2 == nk.mmd2_exact(X, Y, unbiased=unbiased)
    assert est.mmd2 == pytest.approx(dense_mmd2(X, Y, est.kernel.bandwidth, unbiased), rel=1e-10)


def test_the_module_is_not_shadowed_by_the_function():
    """nystrom_kme.mmd is the function; the estimators' module has its own name."""
    import importlib
    import importlib.util
    import types

    import nystrom_kme.mmd_estimators as module

    assert isinstance(module, types.ModuleType) and module.mmd is nk.mmd
    assert callable(nk.mmd) and not isinstance(nk.mmd, types.ModuleType)
    assert importlib.util.find_spec("nystrom_kme.mmd") is None
    assert importlib.import_module("nystrom_kme.mmd_estimators") is module
