"""NystromKME.fit over streamed sources (memmap, HDF5, zarr, iterables of chunks,
generators) against the in-memory fit: the same landmarks and sums."""

from __future__ import annotations

import numpy as np
import pytest

import nystrom_kme as nk
from references import eval_close


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
    got = nk.NystromKME(n_landmarks=150, sampler=sampler, random_state=7, chunk_rows=chunk_rows).fit(memmap)
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
    h5py, zarr = pytest.importorskip("h5py"), pytest.importorskip("zarr")  # the hdf5 and zarr extras
    ref = nk.NystromKME(n_landmarks=120, random_state=3).fit(data)
    with h5py.File(tmp_path / "x.h5", "w") as f:
        f.create_dataset("X", data=data, chunks=(2048, data.shape[1]))
    with h5py.File(tmp_path / "x.h5", "r") as f:
        _same_fit(nk.NystromKME(n_landmarks=120, random_state=3, chunk_rows=4000).fit(f["X"]), ref)
    z = zarr.create_array(store=str(tmp_path / "x.zarr"), shape=data.shape, chunks=(3000, 4), dtype="f8")
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
    chunks = [data[i : i + 3000] for i in range(0, len(data), 3000)]
    ref = nk.NystromKME(n_landmarks=100, random_state=4).fit(data)
    Y = data[:500] * 1.1
    for source in (chunks, tuple(chunks), lambda: iter(chunks)):
        got = nk.NystromKME(n_landmarks=100, random_state=4).fit(source)
        assert got.kernel_ == ref.kernel_
        np.testing.assert_array_equal(got.landmarks_, ref.landmarks_)
        # chunks not aligned to the core's blocks: same sums up to ~1e-16
        np.testing.assert_allclose(got.s_sum_, ref.s_sum_, rtol=1e-14)
        assert eval_close(got, ref, Y) < 1e-12
    with pytest.raises(ValueError, match="read only once"):
        nk.NystromKME(n_landmarks=100).fit(c for c in chunks)


def test_one_pass_generator(data):
    k = nk.Gaussian(2.0)
    gen = (data[i : i + 2500] for i in range(0, len(data), 2500))
    got = nk.NystromKME(k, n_landmarks=3000, passes=1, random_state=0).fit(gen)
    # landmarks come from the pooled first chunks (>= m rows), sums from all rows
    assert got.n_samples_ == len(data)
    assert got.landmark_indices_.max() < 3000 + 2500
    ref = nk.NystromKME(k, sampler=got.landmarks_).fit(data)
    np.testing.assert_allclose(got.s_sum_, ref.s_sum_, rtol=1e-14)
    # any sampler works on the pool
    got = nk.NystromKME(k, n_landmarks=50, passes=1, sampler="greedy-cholesky").fit(
        data[i : i + 2500] for i in range(0, len(data), 2500)
    )
    assert got.landmarks_.shape == (50, 4)
    with pytest.raises(ValueError, match="integer n_landmarks"):
        nk.NystromKME(k, passes=1).fit(iter([data]))


def test_chunked_source_errors(data, memmap):
    with pytest.raises(ValueError, match="needs all of X"):
        nk.NystromKME(n_landmarks=10, sampler="rpcholesky").fit(memmap)
    with pytest.raises(ValueError, match="sample_weight must have shape"):
        nk.NystromKME(n_landmarks=10).fit(memmap, sample_weight=np.ones(len(data) - 1))
    with pytest.raises(ValueError, match="sample_weight is not supported with passes=1"):
        nk.NystromKME(n_landmarks=10, passes=1).fit(memmap, sample_weight=np.ones(len(data)))
    with pytest.raises(ValueError, match="bound"):
        nk.NystromKME(n_landmarks="bound").fit(memmap)
    with pytest.raises(ValueError, match="auto"):
        nk.NystromKME(n_landmarks="auto", passes=1).fit(memmap)
    with pytest.raises(ValueError, match="passes"):
        nk.NystromKME(passes=3).fit(memmap)
    with pytest.raises(ValueError, match="features"):
        nk.NystromKME(n_landmarks=5).fit([data[:100], data[:100, :3]])
    with pytest.raises(ValueError, match="NaN"):
        bad = data[:1000].copy()
        bad[3, 1] = np.nan
        nk.NystromKME(n_landmarks=5).fit([data[:100], bad])


@pytest.mark.parametrize("chunk_rows", [None, 7000])
def test_weighted_fit_on_every_source(data, memmap, tmp_path, chunk_rows):
    """sample_weight works for every source: bit-identical to the in-memory weighted fit
    for array-likes (weights read block by block, also from a memmap), to ~1e-16 for
    iterables."""
    w = np.random.default_rng(3).uniform(0.0, 2.0, size=len(data))
    ref = nk.NystromKME(n_landmarks=90, random_state=6).fit(data, sample_weight=w)
    np.save(tmp_path / "w.npy", w)
    w_map = np.load(tmp_path / "w.npy", mmap_mode="r")
    for weights in (w, w_map):
        got = nk.NystromKME(n_landmarks=90, random_state=6, chunk_rows=chunk_rows).fit(memmap, sample_weight=weights)
        _same_fit(got, ref)
    chunks = [data[i : i + 4000] for i in range(0, len(data), 4000)]
    got = nk.NystromKME(n_landmarks=90, random_state=6).fit(chunks, sample_weight=w)
    np.testing.assert_array_equal(got.landmarks_, ref.landmarks_)  # draws proportional to w
    np.testing.assert_allclose(got.s_sum_, ref.s_sum_, rtol=1e-14)
    assert got.weight_sum_ == pytest.approx(w.sum(), rel=1e-15)
