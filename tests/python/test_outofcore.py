"""Out-of-core fitting: chunked sources, partial_fit and merge against in-memory fits."""

from __future__ import annotations

import h5py
import numpy as np
import pytest
import zarr

import nystrom_kme as nk
from nystrom_kme.chunked import core_block_rows


def _eval_close(a: nk.NystromKME, b: nk.NystromKME, Y: np.ndarray) -> float:
    """max |mu_a(y) - mu_b(y)| / max |mu_b(y)|: the embeddings as functions."""
    fa, fb = a(Y), b(Y)
    return float(np.abs(fa - fb).max() / np.abs(fb).max())


@pytest.fixture
def data(rng: np.random.Generator) -> np.ndarray:
    return rng.normal(size=(30_000, 4))


@pytest.fixture
def memmap(data: np.ndarray, tmp_path) -> np.ndarray:
    path = tmp_path / "x.npy"
    out = np.lib.format.open_memmap(path, mode="w+", dtype=data.dtype, shape=data.shape)
    out[:] = data
    out.flush()
    del out
    return np.load(path, mmap_mode="r")


def _same_fit(a: nk.NystromKME, b: nk.NystromKME) -> None:
    assert a.kernel_ == b.kernel_
    np.testing.assert_array_equal(a.landmark_indices_, b.landmark_indices_)
    np.testing.assert_array_equal(a.landmarks_, b.landmarks_)
    np.testing.assert_array_equal(a.s_sum_, b.s_sum_)
    np.testing.assert_array_equal(a.weights_, b.weights_)
    assert a.n_samples_ == b.n_samples_ and a.weight_sum_ == b.weight_sum_


@pytest.mark.parametrize("chunk_rows", [None, 1000, 5001])
@pytest.mark.parametrize("sampler", ["uniform", "uniform-without-replacement"])
def test_memmap_fit_is_bit_identical(data, memmap, chunk_rows, sampler):
    ref = nk.NystromKME(n_landmarks=150, sampler=sampler, random_state=7).fit(data)
    got = nk.NystromKME(n_landmarks=150, sampler=sampler, random_state=7,
                        chunk_rows=chunk_rows).fit(memmap)
    _same_fit(got, ref)


def test_float32_memmap_and_default_m(data, tmp_path):
    X32 = data.astype(np.float32)
    path = tmp_path / "x32.npy"
    np.save(path, X32)
    ref = nk.NystromKME(random_state=1).fit(X32)
    got = nk.NystromKME(random_state=1, chunk_rows=3000).fit(np.load(path, mmap_mode="r"))
    assert got.landmarks_.dtype == np.float32
    _same_fit(got, ref)


def test_hdf5_and_zarr_fit_are_bit_identical(data, tmp_path):
    ref = nk.NystromKME(n_landmarks=120, random_state=3).fit(data)
    with h5py.File(tmp_path / "x.h5", "w") as f:
        f.create_dataset("X", data=data, chunks=(2048, data.shape[1]))
    with h5py.File(tmp_path / "x.h5", "r") as f:
        _same_fit(nk.NystromKME(n_landmarks=120, random_state=3, chunk_rows=4000).fit(f["X"]), ref)
    z = zarr.create_array(store=str(tmp_path / "x.zarr"), shape=data.shape, chunks=(3000, 4),
                          dtype="f8")
    z[:] = data
    _same_fit(nk.NystromKME(n_landmarks=120, random_state=3).fit(zarr.open_array(str(tmp_path / "x.zarr"))), ref)


def test_given_landmark_indices_and_points(data, memmap):
    idx = np.array([5, 17, 17, 29_999, 100])
    ref = nk.NystromKME(kernel=nk.Gaussian(1.5), sampler=idx).fit(data)
    _same_fit(nk.NystromKME(kernel=nk.Gaussian(1.5), sampler=idx, chunk_rows=2000).fit(memmap), ref)
    pts = data[:40] + 0.1
    ref = nk.NystromKME(kernel=nk.Gaussian(1.5), sampler=pts).fit(data)
    got = nk.NystromKME(kernel=nk.Gaussian(1.5), sampler=pts).fit(memmap)
    _same_fit(got, ref)


def test_iterables_two_pass(data):
    chunks = [data[i:i + 3000] for i in range(0, len(data), 3000)]
    ref = nk.NystromKME(n_landmarks=100, random_state=4).fit(data)
    Y = data[:500] * 1.1
    for source in (chunks, tuple(chunks), lambda: iter(chunks)):
        got = nk.NystromKME(n_landmarks=100, random_state=4).fit(source)
        assert got.kernel_ == ref.kernel_
        np.testing.assert_array_equal(got.landmarks_, ref.landmarks_)
        # chunks not aligned to the core's blocks: same sums up to ~1e-16
        np.testing.assert_allclose(got.s_sum_, ref.s_sum_, rtol=1e-14)
        assert _eval_close(got, ref, Y) < 1e-12
    with pytest.raises(ValueError, match="read only once"):
        nk.NystromKME(n_landmarks=100).fit(c for c in chunks)


def test_one_pass_generator(data):
    k = nk.Gaussian(2.0)
    gen = (data[i:i + 2500] for i in range(0, len(data), 2500))
    got = nk.NystromKME(k, n_landmarks=3000, passes=1, random_state=0).fit(gen)
    # landmarks come from the pooled first chunks (>= m rows), sums from all rows
    assert got.n_samples_ == len(data)
    assert got.landmark_indices_.max() < 3000 + 2500
    ref = nk.NystromKME(k, sampler=got.landmarks_).fit(data)
    np.testing.assert_allclose(got.s_sum_, ref.s_sum_, rtol=1e-14)
    # any sampler works on the pool
    got = nk.NystromKME(k, n_landmarks=50, passes=1, sampler="greedy-cholesky").fit(
        data[i:i + 2500] for i in range(0, len(data), 2500))
    assert got.landmarks_.shape == (50, 4)
    with pytest.raises(ValueError, match="integer n_landmarks"):
        nk.NystromKME(k, passes=1).fit(iter([data]))


def test_chunked_source_errors(data, memmap):
    with pytest.raises(ValueError, match="needs all of X"):
        nk.NystromKME(n_landmarks=10, sampler="rpcholesky").fit(memmap)
    with pytest.raises(ValueError, match="sample_weight"):
        nk.NystromKME(n_landmarks=10).fit(memmap, sample_weight=np.ones(len(data)))
    with pytest.raises(ValueError, match="auto"):
        nk.NystromKME(n_landmarks="auto").fit(memmap)
    with pytest.raises(ValueError, match="passes"):
        nk.NystromKME(passes=3).fit(memmap)
    with pytest.raises(ValueError, match="features"):
        nk.NystromKME(n_landmarks=5).fit([data[:100], data[:100, :3]])
    with pytest.raises(ValueError, match="NaN"):
        bad = data[:1000].copy()
        bad[3, 1] = np.nan
        nk.NystromKME(n_landmarks=5).fit([data[:100], bad])


def test_in_memory_fit_unchanged_and_statistics(data):
    kme = nk.NystromKME(n_landmarks=80, random_state=2).fit(data)
    np.testing.assert_array_equal(kme.weights_, nk.NystromKME(n_landmarks=80, random_state=2).fit(data).weights_)
    assert kme.weight_sum_ == len(data)
    L = kme.landmarks_
    from conftest import dense_kernel

    sigma = kme.kernel_.bandwidth
    np.testing.assert_allclose(kme.s_sum_, dense_kernel("gaussian", L, data, sigma).sum(axis=1), rtol=1e-12)


def test_partial_fit_equals_fit(data):
    k = nk.Gaussian(1.0)
    est = nk.NystromKME(k, n_landmarks=60, random_state=5)
    for i in range(0, len(data), 7000):
        est.partial_fit(data[i:i + 7000])
    # landmarks from the first chunk, then fixed
    assert est.landmark_indices_.max() < 7000 and est.n_samples_ == len(data)
    ref = nk.NystromKME(k, sampler=est.landmarks_).fit(data)
    np.testing.assert_allclose(est.s_sum_, ref.s_sum_, rtol=1e-14)
    np.testing.assert_allclose(est.weights_, ref.weights_, rtol=1e-12, atol=1e-12 * np.abs(ref.weights_).max())
    # weighted chunks: raw weights, not normalised
    w = np.random.default_rng(0).uniform(size=len(data))
    wst = nk.NystromKME(k, sampler=est.landmarks_)
    for i in range(0, len(data), 9000):
        wst.partial_fit(data[i:i + 9000], sample_weight=w[i:i + 9000])
    wref = nk.NystromKME(k, sampler=est.landmarks_).fit(data, sample_weight=w)
    np.testing.assert_allclose(wst.weight_sum_, w.sum(), rtol=1e-13)
    np.testing.assert_allclose(wst.weights_, wref.weights_, rtol=1e-12, atol=1e-12 * np.abs(wref.weights_).max())
    with pytest.raises(ValueError, match="integer n_landmarks"):
        nk.NystromKME(k).partial_fit(data[:100])
    with pytest.raises(ValueError, match="features"):
        est.partial_fit(data[:10, :3])


def test_merge_same_landmarks_equals_union(data):
    k = nk.Gaussian(1.0)
    L = data[np.random.default_rng(1).integers(0, len(data), 60)]
    shards = [data[:11_000], data[11_000:12_345], data[12_345:]]
    fits = [nk.NystromKME(k, sampler=L).fit(s) for s in shards]
    merged = fits[0].merge(*fits[1:])
    ref = nk.NystromKME(k, sampler=L).fit(data)
    assert merged.n_samples_ == len(data) and merged.weight_sum_ == len(data)
    np.testing.assert_allclose(merged.s_sum_, ref.s_sum_, rtol=1e-14)
    np.testing.assert_allclose(merged.weights_, ref.weights_, rtol=1e-12,
                               atol=1e-12 * np.abs(ref.weights_).max())
    assert _eval_close(merged, ref, data[:300]) < 1e-12
    # inputs unchanged; merge then partial_fit continues exactly
    np.testing.assert_array_equal(fits[0].weights_, nk.NystromKME(k, sampler=L).fit(shards[0]).weights_)
    more = data[:5000] + 0.5
    cont = merged.partial_fit(more)
    ref2 = nk.NystromKME(k, sampler=L).fit(np.concatenate([data, more]))
    np.testing.assert_allclose(cont.s_sum_, ref2.s_sum_, rtol=1e-14)


def test_merge_different_landmarks_is_projection(data):
    k = nk.Gaussian(1.5)
    a = nk.NystromKME(k, n_landmarks=40, random_state=0).fit(data[:20_000])
    b = nk.NystromKME(k, n_landmarks=30, random_state=1).fit(data[20_000:])
    merged = a.merge(b)
    Lu = np.concatenate([a.landmarks_, b.landmarks_])
    assert merged.landmarks_.shape == (70, 4) and merged.landmark_indices_ is None
    from conftest import dense_kernel

    Ku = dense_kernel("gaussian", Lu, Lu, 1.5)
    beta = np.concatenate([a.weights_ * 2 / 3, b.weights_ / 3])  # W_a / W = 2/3
    alpha = np.linalg.pinv(Ku, rcond=1e-13) @ (Ku @ beta)
    Y = data[:400] * 1.2
    combined = (2 * a(Y) + b(Y)) / 3
    assert np.abs(merged(Y) - combined).max() < 1e-9 * np.abs(combined).max()
    assert np.abs(merged(Y) - dense_kernel("gaussian", Y, Lu, 1.5) @ alpha).max() < 1e-9 * np.abs(combined).max()
    # the documented bound: ||merged - P_u mu_hat|| <= sum_e (W_e/W) ||mu_e - P_u mu_hat_e||
    union = nk.NystromKME(k, sampler=Lu).fit(data)
    bound = (2 / 3 * a.distance(nk.NystromKME(k, sampler=Lu).fit(data[:20_000]))
             + 1 / 3 * b.distance(nk.NystromKME(k, sampler=Lu).fit(data[20_000:])))
    assert merged.distance(union) <= bound * (1 + 1e-6)
    with pytest.raises(ValueError, match="different kernels"):
        a.merge(nk.NystromKME(nk.Gaussian(1.0), n_landmarks=5).fit(data[:100]))


def test_core_block_rows_matches_engine():
    # bit-identity of chunked sums rests on this mirror of the core's superblock size
    assert core_block_rows(10, 8) == 13_056 and core_block_rows(4, 4) == 16_384
    assert core_block_rows(5000, 8) == 256
