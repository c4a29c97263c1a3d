"""The GPU path's Python side end to end, with CuPy replaced by a numpy emulation of
the CUDA kernels (``cuda_fake``): CUDA-array dispatch, CudaSource, launch arguments
against the kernels' signatures, launch plans and the two-pass reduction, against
the CPU core. Runs everywhere; the CUDA code itself is tested by the ``gpu`` tests."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import cuda_fake
import nystrom_kme as nk
from cuda_fake import DevArray, dev
from nystrom_kme import sources
from nystrom_kme.cuda import program, sums

FAKE = cuda_fake.make_module()
RADIAL = [
    nk.Gaussian(1.3),
    nk.Laplacian(0.9),
    nk.Matern(1.1, nu=1.5),
    nk.Matern(0.8, nu=2.5),
    nk.InverseMultiquadric(1.7),
]
TOL = {np.float32: 2e-6, np.float64: 1e-12}


@pytest.fixture(autouse=True)
def fake_cupy(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setitem(sys.modules, "cupy", FAKE)
    for name, module in cuda_fake.make_cublas_modules().items():
        monkeypatch.setitem(sys.modules, name, module)
    return FAKE


def rel(a, b) -> float:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(b))), 1e-300))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kernel", RADIAL, ids=lambda k: k.name)
@pytest.mark.parametrize("k", [1, 5, 8, 9, 33])
def test_weighted_sums_against_the_core(dtype, kernel, k, rng) -> None:
    from nystrom_kme import _core

    X = rng.normal(size=(4200, 3)).astype(dtype)  # 3 row chunks of pass 1
    L = rng.normal(size=(130, 3)).astype(dtype)  # 2 landmark blocks
    W = rng.random((4200, k))
    got = sums.weighted_kernel_sums(dev(L), dev(X), dev(W), kernel)
    assert isinstance(got, DevArray) and got.shape == (130, k)
    assert rel(got, _core.kernel_sums(L, X, W, kernel.to_core(), 0)) <= TOL[dtype]
    assert rel(sums.row_sums(dev(L), dev(X), kernel), _core.kernel_row_sums(L, X, kernel.to_core(), 0)) <= TOL[dtype]


def test_total_and_matrix(rng) -> None:
    from nystrom_kme import _core

    k = nk.Matern(1.0, nu=2.5)
    X = rng.normal(size=(300, 4))
    assert rel(float(sums.total_kernel_sum(dev(X), k)), _core.kernel_row_sums(X, X, k.to_core(), 0).sum()) <= 1e-12
    K = sums.kernel_matrix(dev(X[:20]), dev(X), k)
    assert K.shape == (20, 300) and rel(K, _core.kernel_sums(X[:20], X, np.eye(300), k.to_core(), 0)) <= 1e-12


def test_argument_checks(rng) -> None:
    X = dev(rng.normal(size=(50, 3)))
    with pytest.raises(ValueError, match="same dtype"):
        sums.weighted_kernel_sums(dev(np.ones((2, 3), np.float32)), X, None, nk.Gaussian(1.0))
    with pytest.raises(ValueError, match="features"):
        sums.weighted_kernel_sums(dev(np.ones((2, 4))), X, None, nk.Gaussian(1.0))
    with pytest.raises(ValueError, match="W must be"):
        sums.weighted_kernel_sums(dev(np.ones((2, 3))), X, dev(np.ones((49, 2))), nk.Gaussian(1.0))
    with pytest.raises(ValueError, match="radial"):
        sums.weighted_kernel_sums(dev(np.ones((2, 3))), X, None, nk.Linear())
    with pytest.raises(ValueError, match="resolved"):
        sums.weighted_kernel_sums(dev(np.ones((2, 3))), X, None, nk.Gaussian())


def test_modules_hold_one_kernel_and_dtype(rng) -> None:
    cuda_fake.RawModule.compiled.clear()
    sums._module.cache_clear()  # compile afresh: the order of what is compiled is the point
    sums.row_sums(dev(np.ones((2, 3), np.float32)), dev(np.ones((5, 3), np.float32)), nk.InverseMultiquadric(1.0))
    assert cuda_fake.RawModule.compiled == [(program.small_name(4, np.float32, 3),), program.module_names(("reduce",))]
    W = dev(np.ones((5, 2)))
    sums.weighted_kernel_sums(dev(np.ones((2, 3))), dev(np.ones((5, 3))), W, nk.InverseMultiquadric(1.0))
    assert cuda_fake.RawModule.compiled[-1] == program.name_expressions(4, np.float64)


def test_sources_dispatch_and_validate(rng) -> None:
    src = sources.as_source(dev(rng.normal(size=(10, 2)).astype(np.float32)))
    assert isinstance(src, sources.CudaSource) and src.dtype == np.float32 and src.n_rows == 10
    assert type(src.take([3, 1])) is np.ndarray and src.take([3, 1]).shape == (2, 2)
    assert [(s, type(b)) for s, b in src.chunks()] == [(0, np.ndarray)]
    assert sources.as_source(dev(np.arange(6).reshape(3, 2))).dtype == np.float64  # ints: float64
    with pytest.raises(ValueError, match="NaN or inf"):
        sources.as_source(dev([[1.0, np.nan]]))
    with pytest.raises(ValueError, match="2-D"):
        sources.as_source(dev(np.ones(3)))
    with pytest.raises(ValueError, match="indices"):
        src.take([10])
    both = sources.concatenate([src, sources.as_source(dev(np.ones((4, 2))), "Y")])
    assert isinstance(both, sources.CudaSource) and both.n_rows == 14 and both.dtype == np.float64


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fit_evaluate_score_match_host(dtype, rng) -> None:
    X = rng.normal(size=(3000, 4)).astype(dtype)
    Y = (rng.normal(size=(500, 4)) + 0.5).astype(dtype)
    w = rng.random(3000)
    kw = {"kernel": nk.Matern(1.5, nu=1.5), "n_landmarks": 150, "random_state": 3}
    host = nk.NystromKME(**kw).fit(X, sample_weight=w)
    gpu = nk.NystromKME(**kw).fit(dev(X), sample_weight=w)
    np.testing.assert_array_equal(gpu.landmarks_, host.landmarks_)
    assert rel(gpu.s_sum_, host.s_sum_) <= TOL[dtype]  # the sums; the solve amplifies by cond(K_m)
    if dtype == np.float64:
        assert rel(gpu.weights_, host.weights_) <= 1e-9
    values = gpu(dev(Y))
    assert isinstance(values, DevArray) and rel(values, host(Y)) <= TOL[dtype] * 10
    assert rel(gpu.score(dev(Y)), host.score(Y)) <= (1e-5 if dtype == np.float32 else 1e-10)
    median = nk.NystromKME(n_landmarks=50, random_state=0)
    on_host = nk.NystromKME(n_landmarks=50, random_state=0).fit(X)
    assert median.fit(dev(X)).kernel_.bandwidth == on_host.kernel_.bandwidth


def test_mmds_and_tests_match_host(rng) -> None:
    X = rng.normal(size=(1200, 3))
    Y = rng.normal(size=(900, 3)) + 0.2
    kernel = nk.Gaussian(1.0)
    assert (
        rel(
            nk.mmd2(dev(X), dev(Y), kernel=kernel, n_landmarks=80, random_state=0),
            nk.mmd2(X, Y, kernel=kernel, n_landmarks=80, random_state=0),
        )
        <= 1e-9
    )
    for unbiased in (False, True):
        assert (
            rel(
                nk.mmd2_exact(dev(X), dev(Y), kernel=kernel, unbiased=unbiased),
                nk.mmd2_exact(X, Y, kernel=kernel, unbiased=unbiased),
            )
            <= 1e-12
        )
    a = nk.two_sample_test(dev(X), dev(Y), kernel=kernel, n_landmarks=60, n_permutations=40, random_state=1)
    b = nk.two_sample_test(X, Y, kernel=kernel, n_landmarks=60, n_permutations=40, random_state=1)
    assert a.pvalue == b.pvalue and rel(a.null_distribution, b.null_distribution) <= 1e-9
    assert rel(a.statistic, b.statistic) <= 1e-9


def test_split_sums_span_several_label_blocks(rng, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sources.CudaSource, "block_rows", 257)
    X = rng.normal(size=(700, 2))
    Y = rng.normal(size=(600, 2))
    a = nk.two_sample_test(dev(X), dev(Y), kernel=nk.Laplacian(1.0), n_landmarks=30, n_permutations=20, random_state=4)
    b = nk.two_sample_test(X, Y, kernel=nk.Laplacian(1.0), n_landmarks=30, n_permutations=20, random_state=4)
    assert a.pvalue == b.pvalue and rel(a.null_distribution, b.null_distribution) <= 1e-9


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kernel", RADIAL, ids=lambda k: k.name)
@pytest.mark.parametrize("d", [1, 3, 16, 17, 40])
def test_row_sums_of_every_path_against_the_core(dtype, kernel, d, rng) -> None:
    from nystrom_kme import _core

    X = (rng.normal(size=(2500, d)) * np.sqrt(2.0 / d) + 3.0).astype(dtype)  # off 0: centring matters
    L = (rng.normal(size=(300, d)) * np.sqrt(2.0 / d) + 3.0).astype(dtype)  # 2 landmark blocks of "small"
    w = rng.random(2500)
    want = _core.kernel_sums(L, X, w[:, None], kernel.to_core(), 0)[:, 0]
    path = program.row_sums_path(np.dtype(dtype), 300, d, 1)
    assert path == ("small" if d <= 16 else "tc" if dtype == np.float32 else "partial")
    got = sums.weighted_kernel_sums(dev(L), dev(X), dev(w[:, None]), kernel)
    assert got.shape == (300, 1) and rel(got[:, 0], want) <= TOL[dtype]
    ones = _core.kernel_row_sums(L, X, kernel.to_core(), 0)
    assert rel(sums.row_sums(dev(L), dev(X), kernel), ones) <= TOL[dtype]
    forced = sums.weighted_kernel_sums(dev(L), dev(X), None, kernel, path="partial")
    assert rel(forced[:, 0], ones) <= TOL[dtype]
    for other in ("gemm", "tc") if dtype == np.float32 else ("gemm",):
        got = sums.weighted_kernel_sums(dev(L), dev(X), dev(w[:, None]), kernel, path=other)
        assert rel(got[:, 0], want) <= TOL[dtype], other


def test_device_splits_are_the_cores_bit_for_bit() -> None:
    from nystrom_kme.permutation import SplitSpec

    spec = SplitSpec(700, 555, 37, 123456789)
    cpu, gpu = spec.new(), sums.DeviceSplits(spec.n1, spec.n2, spec.n_permutations, spec.seed)
    for rows in (1, 300, 0, 511, 443):
        np.testing.assert_array_equal(cuda_fake._host(gpu.next_weights(rows)), cpu.next_weights(rows))
    with pytest.raises(ValueError, match="remain"):
        gpu.next_weights(1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bin_sums_match_the_host_source(dtype, rng) -> None:
    X = rng.normal(size=(1500, 3)).astype(dtype)
    L = X[:40].copy()
    kernels = list(nk.KernelCollection(n_bandwidths=6).resolve(sources.as_source(X), rng))  # 12: two launches
    bins = rng.integers(-1, 50, size=1500)  # -1: dropped rows
    want = sources.as_source(X).bin_sums(L, kernels, bins, 50)
    got = sources.as_source(dev(X)).bin_sums(L, kernels, bins, 50)
    assert type(got) is np.ndarray and got.shape == (12, 40, 50)
    assert rel(got, want) <= TOL[dtype]
    with pytest.raises(ValueError, match="bins must"):
        sources.as_source(dev(X)).bin_sums(L, kernels, bins[:10], 50)


def test_aggregated_test_matches_host(rng) -> None:
    X = rng.normal(size=(900, 2))
    Y = rng.normal(size=(800, 2)) * 1.2
    kw = {"kernel": nk.KernelCollection(n_bandwidths=4), "n_landmarks": 60, "n_permutations": 30, "random_state": 2}
    a = nk.two_sample_test(dev(X), dev(Y), max_bins=128, **kw)
    b = nk.two_sample_test(X, Y, max_bins=128, **kw)
    assert a.bin_size == b.bin_size > 1  # the binned sums ran
    assert a.pvalue == b.pvalue and rel(a.kernel_statistics, b.kernel_statistics) <= 1e-9


@pytest.mark.parametrize("rows,max_bins", [(900, 128), (150, 2048)])
def test_the_default_collection_with_l1_kernels_matches_host(rng, rows, max_bins) -> None:
    """The default test's l1 Laplacians, which the GPU path does not compute, are summed by
    the host core over host copies of the device rows (binned and streamed alike)."""
    from nystrom_kme.two_sample import DEFAULT_COLLECTION

    X, Y = rng.normal(size=(rows, 3)), rng.normal(size=(rows - 50, 3)) * 1.2
    kw = {"kernel": DEFAULT_COLLECTION, "method": "nystrom", "n_landmarks": 60, "n_permutations": 30}
    a = nk.two_sample_test(dev(X), dev(Y), max_bins=max_bins, random_state=2, **kw)
    b = nk.two_sample_test(X, Y, max_bins=max_bins, random_state=2, **kw)
    assert {k.name for k in a.kernels} == {"gaussian", "laplacian_l1"}
    assert (a.bin_size > 1) == (max_bins == 128) and a.bin_size == b.bin_size
    assert a.pvalue == b.pvalue and rel(a.kernel_statistics, b.kernel_statistics) <= 1e-9


def test_bin_sums_split_launches_beyond_the_grid_limit(rng, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(program, "MAX_GRID_Y", 7)  # 50 bins: 8 launches per group of kernels
    X = rng.normal(size=(400, 2))
    kernels = [nk.Gaussian(0.5), nk.Laplacian(1.0)]
    bins = rng.integers(-1, 50, size=400)
    want = sources.as_source(X).bin_sums(X[:9], kernels, bins, 50)
    assert rel(sources.as_source(dev(X)).bin_sums(X[:9], kernels, bins, 50), want) <= 1e-12


def test_gemm_path_takes_many_landmarks_in_blocks(rng, monkeypatch: pytest.MonkeyPatch) -> None:
    from nystrom_kme import _core

    monkeypatch.setattr(program, "GEMM_MAX_LANDMARKS", 70)  # 300 landmarks: 5 blocks
    X, L = rng.normal(size=(900, 20)), rng.normal(size=(300, 20))
    kernel = nk.Laplacian(3.0)
    got = sums.weighted_kernel_sums(dev(L), dev(X), None, kernel, path="gemm")
    assert got.shape == (300, 1) and rel(got[:, 0], _core.kernel_row_sums(L, X, kernel.to_core(), 0)) <= 1e-12
