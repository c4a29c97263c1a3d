"""The compiled multi-column sums: ``_core.split_kernel_sums`` at the edge shapes of its
register blocks, and ``_core.split_kernel_sums_multi`` (every kernel of a collection in
one pass) against separate calls and dense numpy, at every SIMD level the CPU runs."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import nystrom_kme as nk
from nystrom_kme import _core
from references import dense_kernel

LEVELS = nk.show_config(mode="dicts")["simd"]["available"]
RADIAL = ("gaussian", "laplacian", "matern32", "matern52", "inverse_multiquadric")


def labels(n1, n2, B, seed):
    return _core.RandomSplits(n1, n2, B, seed).next_weights(n1 + n2)


def rel_err(got, expected):
    return float(np.abs(got - expected).max() / np.abs(expected).max())


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("k", [2, 17, 201])
@pytest.mark.parametrize("m", [1, 7, 16, 29])
def test_split_sums_edge_shapes_match_dense(level, k, m):
    # k weight columns: one partial panel, two panels and a column, 201 (B = 200);
    # m below, at and past one 16-row tile, not a multiple of the register blocks;
    # q = 1100 is no multiple of a 256-row chunk.
    rng = np.random.default_rng(k * 100 + m)
    n1, n2, d = 560, 540, 4
    Z = rng.normal(size=(n1 + n2, d))
    L = rng.normal(size=(m, d))
    nk.set_simd_level(level)
    kernel = nk.Laplacian(1.8).to_core()
    expected = dense_kernel("laplacian", L, Z, 1.8) @ labels(n1, n2, k - 1, 3)
    splits = _core.RandomSplits(n1, n2, k - 1, 3)
    S = _core.split_kernel_sums(L, Z[:300], splits, kernel, 1) + _core.split_kernel_sums(L, Z[300:], splits, kernel, 1)
    assert S.shape == (m, k)
    assert rel_err(S, expected) < 1e-12
    again = _core.split_kernel_sums(L, Z[:300], _core.RandomSplits(n1, n2, k - 1, 3), kernel, 2)
    first = _core.split_kernel_sums(L, Z[:300], _core.RandomSplits(n1, n2, k - 1, 3), kernel, 1)
    assert np.array_equal(again, first)  # bit-identical for any thread count


def collection(d):
    """The five radial kernels at three bandwidths each, around the scale of N(0, I_d) data."""
    return [_core.Kernel(name, h * np.sqrt(d)) for name in RADIAL for h in (0.3, 1.0, 3.0)]


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("dtype, single_tol, dense_tol", [(np.float64, 1e-13, 1e-12), (np.float32, 1e-5, 1e-5)])
@pytest.mark.parametrize("d", [3, 40])  # direct distances; centred expansion
def test_multi_matches_separate_calls_and_dense(level, dtype, single_tol, dense_tol, d):
    rng = np.random.default_rng(d)
    n1, n2, m, B = 420, 381, 23, 30
    Z = rng.normal(size=(n1 + n2, d)).astype(dtype)
    L = rng.normal(size=(m, d)).astype(dtype)
    kernels = collection(d)
    nk.set_simd_level(level)
    S = _core.split_kernel_sums_multi(L, Z, _core.RandomSplits(n1, n2, B, 8), kernels, 1)
    assert S.shape == (len(kernels), m, B + 1) and S.dtype == np.float64 and S.flags.c_contiguous
    W = labels(n1, n2, B, 8)
    for j, kernel in enumerate(kernels):
        single = _core.split_kernel_sums(L, Z, _core.RandomSplits(n1, n2, B, 8), kernel, 1)
        assert rel_err(S[j], single) < single_tol
        name = RADIAL[j // 3]
        assert rel_err(S[j], dense_kernel(name, L, Z, kernel.bandwidth) @ W) < dense_tol


def test_multi_chunks_compose_and_threads_agree():
    rng = np.random.default_rng(5)
    n1, n2, m, B = 1500, 1300, 40, 200
    Z = rng.normal(size=(n1 + n2, 6))
    L = Z[:m].copy()
    kernels = [_core.Kernel("gaussian", 0.7), _core.Kernel("laplacian", 2.0), _core.Kernel("matern52", 5.0)]
    whole = _core.split_kernel_sums_multi(L, Z, _core.RandomSplits(n1, n2, B, 2), kernels, 1)
    splits = _core.RandomSplits(n1, n2, B, 2)
    parts = [
        _core.split_kernel_sums_multi(L, Z[a:b], splits, kernels, 2)
        for a, b in ((0, 999), (999, 1000), (1000, n1 + n2))
    ]
    assert splits.position == n1 + n2
    assert rel_err(sum(parts), whole) < 1e-12  # another summation order
    for threads in (2, 3):
        again = _core.split_kernel_sums_multi(L, Z, _core.RandomSplits(n1, n2, B, 2), kernels, threads)
        assert np.array_equal(again, whole)


def test_multi_releases_the_gil():
    # While one thread runs the call, this one keeps running Python code.
    rng = np.random.default_rng(6)
    Z = rng.normal(size=(40_000, 5))
    L = Z[:300].copy()
    kernels = [_core.Kernel("gaussian", h) for h in (0.5, 1.0, 2.0, 4.0)]
    worker = threading.Thread(
        target=_core.split_kernel_sums_multi, args=(L, Z, _core.RandomSplits(20_000, 20_000, 200, 1), kernels, 1)
    )
    ticks = 0
    worker.start()
    while worker.is_alive():
        time.sleep(0.002)
        ticks += 1
    worker.join()
    assert ticks >= 5


def test_multi_argument_errors():
    rng = np.random.default_rng(7)
    Z, L = rng.normal(size=(50, 3)), rng.normal(size=(4, 3))
    gauss = _core.Kernel("gaussian", 1.0)

    def splits():
        return _core.RandomSplits(25, 25, 9, 1)

    with pytest.raises(ValueError, match="kernels is empty"):
        _core.split_kernel_sums_multi(L, Z, splits(), [])
    with pytest.raises(ValueError, match=r"kernels\[1\] is not radial"):
        _core.split_kernel_sums_multi(L, Z, splits(), [gauss, _core.Kernel("linear", 1.0)])
    with pytest.raises(ValueError, match="bandwidths span"):
        _core.split_kernel_sums_multi(
            L.astype(np.float32), Z.astype(np.float32), splits(), [gauss, _core.Kernel("laplacian", 1e-20)]
        )
    with pytest.raises(ValueError, match="51 rows but the splits have 50 left"):
        _core.split_kernel_sums_multi(L, rng.normal(size=(51, 3)), splits(), [gauss])
    with pytest.raises(ValueError, match="dimension mismatch"):
        _core.split_kernel_sums_multi(L, rng.normal(size=(50, 2)), splits(), [gauss])
    with pytest.raises(TypeError, match="both float64 or both float32"):
        _core.split_kernel_sums_multi(L.astype(np.float32), Z, splits(), [gauss])
    with pytest.raises(TypeError, match="kernels a list of radial Kernel"):
        _core.split_kernel_sums_multi(L, Z, splits(), ["gaussian"])
