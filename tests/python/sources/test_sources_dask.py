"""Dask sources on a 2-process LocalCluster: fit (weighted too), the MMDs and both
two-sample tests equal the in-memory results."""

from __future__ import annotations

import numpy as np
import pytest

import nystrom_kme as nk

# the dask extra: every test here runs on a dask cluster
da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
Client, LocalCluster, get_task_stream = distributed.Client, distributed.LocalCluster, distributed.get_task_stream


@pytest.fixture(scope="module")
def client():
    # One cluster for the module: worker processes start once (a few seconds).
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=50)
    with Client(cluster) as c:
        yield c
    cluster.close()


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(2024)
    return rng.normal(size=(20_000, 5)), rng.normal(size=(15_000, 5)) + 0.05


def _rel(a: float, b: float) -> float:
    return abs(a - b) / abs(b)


def test_fit_matches_in_memory(client, data):
    X = data[0]
    dX = da.from_array(X, chunks=(3_000, 5))
    ref = nk.NystromKME(n_landmarks=200, random_state=11).fit(X)
    with get_task_stream() as ts:
        got = nk.NystromKME(n_landmarks=200, random_state=11).fit(dX)
    # the row sums ran as tasks on the worker processes
    workers = set(client.scheduler_info()["workers"])
    ran = [t for t in ts.data if "_block_sums" in str(t["key"])]
    assert len(ran) == dX.numblocks[0] and {t["worker"] for t in ran} <= workers
    assert got.kernel_ == ref.kernel_  # median heuristic: same draws, rows gathered by index
    np.testing.assert_array_equal(got.landmark_indices_, ref.landmark_indices_)
    np.testing.assert_array_equal(got.landmarks_, ref.landmarks_)
    np.testing.assert_allclose(got.s_sum_, ref.s_sum_, rtol=1e-14)
    Y = X[:300] * 1.1
    assert np.abs(got(Y) - ref(Y)).max() < 1e-12 * np.abs(ref(Y)).max()


def test_fit_given_landmarks_float32_and_column_chunks(client, data):
    X = data[0].astype(np.float32)
    L = X[:64]
    dX = da.from_array(X, chunks=(4_096, 2))  # column chunks are merged
    ref = nk.NystromKME(nk.Gaussian(2.0), sampler=L).fit(X)
    got = nk.NystromKME(nk.Gaussian(2.0), sampler=L).fit(dX)
    np.testing.assert_allclose(got.s_sum_, ref.s_sum_, rtol=1e-14)
    np.testing.assert_allclose(got.weights_, ref.weights_, rtol=1e-12, atol=1e-12 * np.abs(ref.weights_).max())
    with pytest.raises(ValueError, match="needs all of X"):
        nk.NystromKME(n_landmarks=5, sampler="herding").fit(dX)


def test_mmd_matches_in_memory(client, data):
    X, Y = data
    ref = nk.mmd(X, Y, n_landmarks=150, random_state=3)
    got = nk.mmd(
        da.from_array(X, chunks=(5_000, 5)), da.from_array(Y, chunks=(4_000, 5)), n_landmarks=150, random_state=3
    )
    assert _rel(got, ref) < 1e-10  # the MMD is a difference of O(1) terms


def test_two_sample_matches_in_memory(client, data):
    X, Y = data[0][:6_000], data[1][:5_000]
    kw = dict(n_landmarks=100, n_permutations=50, random_state=5)
    ref = nk.two_sample_test(X, Y, kernel="gaussian", **kw)
    got = nk.two_sample_test(
        da.from_array(X, chunks=(2_500, 5)), da.from_array(Y, chunks=(2_000, 5)), kernel="gaussian", **kw
    )
    assert got.kernel == ref.kernel and got.n_landmarks == ref.n_landmarks
    assert _rel(got.statistic, ref.statistic) < 1e-10
    np.testing.assert_allclose(got.null_distribution, ref.null_distribution, rtol=1e-10)
    assert got.pvalue == ref.pvalue
    # the default test (several kernels, bins of rows): the same kernels and statistics
    ref = nk.two_sample_test(X, Y, **kw)
    got = nk.two_sample_test(da.from_array(X, chunks=(2_500, 5)), da.from_array(Y, chunks=(2_000, 5)), **kw)
    assert got.kernels == ref.kernels and got.bin_size == ref.bin_size > 1
    np.testing.assert_allclose(got.kernel_statistics, ref.kernel_statistics, rtol=1e-9)
    assert got.pvalue == ref.pvalue
    # the exact test too (each pooled block's sums run on the workers), and mixed inputs
    exact_ref = nk.two_sample_test(X[:800], Y[:700], method="exact", n_permutations=30, random_state=2)
    exact = nk.two_sample_test(
        da.from_array(X[:800], chunks=(300, 5)), Y[:700], method="exact", n_permutations=30, random_state=2
    )
    assert _rel(exact.statistic, exact_ref.statistic) < 1e-12
    np.testing.assert_allclose(exact.null_distribution, exact_ref.null_distribution, rtol=1e-11)


def test_weighted_fit_and_exact_mmd_match_in_memory(client, data):
    X, Y = data[0][:4000], data[1][:3000]
    w = np.random.default_rng(1).uniform(0.1, 2.0, size=len(X))
    ref = nk.NystromKME(n_landmarks=80, random_state=4).fit(X, sample_weight=w)
    for weights in (w, da.from_array(w, chunks=1500)):  # numpy or dask weights
        got = nk.NystromKME(n_landmarks=80, random_state=4).fit(
            da.from_array(X, chunks=(1000, 5)), sample_weight=weights
        )
        np.testing.assert_array_equal(got.landmark_indices_, ref.landmark_indices_)
        np.testing.assert_allclose(got.s_sum_, ref.s_sum_, rtol=1e-14)
        assert got.weight_sum_ == pytest.approx(ref.weight_sum_, rel=1e-15)
    k = nk.Gaussian(2.0)
    exact = nk.mmd2_exact(X[:1500], Y[:1200], kernel=k, unbiased=True)
    got = nk.mmd2_exact(
        da.from_array(X[:1500], chunks=(400, 5)), da.from_array(Y[:1200], chunks=(500, 5)), kernel=k, unbiased=True
    )
    assert abs(got - exact) < 1e-13  # a difference of O(1) means of kernel values
