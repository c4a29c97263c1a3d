"""The row-source interface (sources/base.py, memory.py, chunked.py, as_source): every
kind reads, gathers and sums like the in-memory array, against dense numpy
references; array-likes bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

import nystrom_kme as nk
from nystrom_kme.sources import (
    ArrayLikeSource,
    ArraySource,
    IterableSource,
    RowSource,
    as_source,
    base,
    concatenate,
    core_block_rows,
)
from references import dense_kernel

KERNEL = nk.Gaussian(1.3)


@pytest.fixture
def data(rng: np.random.Generator) -> np.ndarray:
    return rng.normal(size=(9_001, 3))


@pytest.fixture
def sources(data: np.ndarray, tmp_path) -> dict[str, RowSource]:
    """The same rows behind every kind of source (small blocks: many of them)."""
    h5py, zarr = pytest.importorskip("h5py"), pytest.importorskip("zarr")  # the hdf5 and zarr extras
    np.save(tmp_path / "x.npy", data)
    with h5py.File(tmp_path / "x.h5", "w") as f:
        f.create_dataset("X", data=data, chunks=(1000, 3))
    h5 = h5py.File(tmp_path / "x.h5", "r")
    z = zarr.create_array(store=str(tmp_path / "x.zarr"), shape=data.shape, chunks=(700, 3), dtype="f8")
    z[:] = data
    chunks = [data[i : i + 2500] for i in range(0, len(data), 2500)]
    out = {
        "array": as_source(data),
        "memmap": as_source(np.load(tmp_path / "x.npy", mmap_mode="r"), chunk_rows=1000),
        "hdf5": as_source(h5["X"], chunk_rows=3000),
        "zarr": as_source(zarr.open_array(str(tmp_path / "x.zarr"))),
        "list": as_source(chunks),
        "callable": as_source(lambda: iter(chunks)),
    }
    yield out
    h5.close()


def test_as_source_picks_the_kind(data, sources):
    kinds = {name: type(src) for name, src in sources.items()}
    assert kinds == {
        "array": ArraySource,
        "memmap": ArrayLikeSource,
        "hdf5": ArrayLikeSource,
        "zarr": ArrayLikeSource,
        "list": IterableSource,
        "callable": IterableSource,
    }
    assert isinstance(as_source(iter([data])), IterableSource)
    assert isinstance(as_source(data.tolist()), ArraySource)  # a nested list is an array
    src = as_source(data)
    assert as_source(src) is src


def test_is_streamed_says_what_as_source_does(data, tmp_path):
    """One classification behind both: streamed exactly when the source is not an
    in-memory array (dask arrays and CUDA arrays are covered in their own tests)."""
    from nystrom_kme.sources import is_streamed

    h5py = pytest.importorskip("h5py")
    np.save(tmp_path / "x.npy", data[:50])
    with h5py.File(tmp_path / "x.h5", "w") as f:
        f.create_dataset("X", data=data[:50])
        f.create_dataset("v", data=data[:50, 0])
    with h5py.File(tmp_path / "x.h5", "r") as h5:
        inputs = [
            data,
            data.tolist(),
            [data[:5], data[5:9]],
            (data[:5],),
            [data[:, 0]],
            iter([data]),
            lambda: iter([data]),
            np.load(tmp_path / "x.npy", mmap_mode="r"),
            h5["X"],
        ]
        for X in inputs:
            assert is_streamed(X) is not isinstance(as_source(X), ArraySource), type(X)
        assert not is_streamed([]) and not is_streamed(h5["v"])  # refused by as_source, by name
        with pytest.raises(ValueError, match="X must be 2-D"):
            as_source(h5["v"])


def test_chunks_and_take_give_the_rows(data, sources):
    idx = np.array([9000, 0, 2500, 2499, 7, 7, 4321])
    for name, src in sources.items():
        starts, blocks = zip(*src.chunks())
        np.testing.assert_array_equal(np.concatenate(blocks), data, err_msg=name)
        assert list(starts) == list(np.cumsum([0] + [len(b) for b in blocks[:-1]]))
        assert src.count_rows() == len(data) and src.n_features == 3
        np.testing.assert_array_equal(src.take(idx), data[idx], err_msg=name)
        with pytest.raises(ValueError, match="indices must lie in"):
            src.take([len(data)])


def test_kernel_sums_match_dense(data, sources, rng):
    L = data[rng.integers(0, len(data), 40)] + 0.05
    w = rng.uniform(0.0, 3.0, size=len(data))
    K = dense_kernel("gaussian", L, data, 1.3)
    ref_acc, ref_total = sources["array"].kernel_sums(L, KERNEL)
    ref_w, ref_wtotal = sources["array"].kernel_sums(L, KERNEL, weights=w)
    np.testing.assert_allclose(ref_acc.value(), K.sum(axis=1), rtol=1e-13)
    np.testing.assert_allclose(ref_w.value(), K @ w, rtol=1e-13)
    assert ref_total == len(data) and ref_wtotal == pytest.approx(w.sum(), rel=1e-15)
    for name, src in sources.items():
        acc, total = src.kernel_sums(L, KERNEL)
        acc_w, total_w = src.kernel_sums(L, KERNEL, weights=w)
        if isinstance(src, ArrayLikeSource):  # blocks aligned with the core's: bit for bit
            np.testing.assert_array_equal(acc.value(), ref_acc.value(), err_msg=name)
            np.testing.assert_array_equal(acc_w.value(), ref_w.value(), err_msg=name)
        else:
            np.testing.assert_allclose(acc.value(), ref_acc.value(), rtol=1e-15, err_msg=name)
            np.testing.assert_allclose(acc_w.value(), ref_w.value(), rtol=1e-15, err_msg=name)
        assert total == len(data) and total_w == pytest.approx(w.sum(), rel=1e-15)


def test_split_sums_and_diagonal_match_dense(data, sources, rng):
    L = data[:25]
    spec = nk.permutation.SplitSpec(4000, 5001, 17, seed=99)
    W = np.where(spec.labels(), 1 / 4000, -1 / 5001)
    K = dense_kernel("gaussian", L, data, 1.3)
    ref, scale = K @ W, (K @ np.abs(W)).max()  # signed sums: errors scale with sum |terms|
    lin = nk.Linear(2.0)
    for name, src in sources.items():
        np.testing.assert_allclose(src.split_sums(L, KERNEL, spec), ref, rtol=1e-12, atol=1e-14 * scale, err_msg=name)
        # k(x, x): 1 for a radial kernel; <x, x> / s^2 for the linear one, weighted by w^2
        assert src.diagonal_sum(KERNEL) == len(data)
        w = np.arange(len(data), dtype=float) / len(data)
        expected = float(((data * data).sum(axis=1) / 4.0 * w * w).sum())
        assert src.diagonal_sum(lin, weights=w) == pytest.approx(expected, rel=1e-13)
    with pytest.raises(ValueError, match="rows, the splits"):
        sources["memmap"].split_sums(L, KERNEL, nk.permutation.SplitSpec(4000, 5000, 3, seed=1))


def test_split_sums_report_progress_in_blocks(data, monkeypatch):
    # an in-memory sample is one chunk of all its rows; its split sums still go to the
    # core in blocks of SPLIT_BLOCK_ROWS, with progress after each (a pooled sample too)
    monkeypatch.setattr(base, "SPLIT_BLOCK_ROWS", 1000)
    L, spec = data[:25], nk.permutation.SplitSpec(4000, 5001, 17, seed=99)
    W = np.where(spec.labels(), 1 / 4000, -1 / 5001)
    K = dense_kernel("gaussian", L, data, 1.3)
    pooled = concatenate([as_source(data[:4500]), as_source(data[4500:])])  # 4500 + 4501 rows
    blocks = {"array": [1000] * 9 + [1], "pooled": [1000] * 4 + [500] + [1000] * 4 + [501]}
    for name, src in (("array", as_source(data)), ("pooled", pooled)):
        seen: list[int] = []
        got = src.split_sums(L, KERNEL, spec, progress=seen.append)
        assert seen == blocks[name]
        np.testing.assert_allclose(got, K @ W, rtol=1e-12, atol=1e-14 * (K @ np.abs(W)).max())
        seen.clear()
        multi = src.split_sums_multi(L, [KERNEL, nk.Gaussian(0.7)], spec, progress=seen.append)
        assert max(seen) == 1000 and sum(seen) == len(data)
        np.testing.assert_allclose(multi[0], got, rtol=1e-12, atol=1e-14 * (K @ np.abs(W)).max())


def test_bad_input_is_named(data, tmp_path):
    src = as_source([data[:10], data[10:20]])
    bad = np.ones(20)
    bad[13] = -1.0
    with pytest.raises(ValueError, match="sample_weight must be non-negative"):
        src.kernel_sums(data[:2], KERNEL, weights=bad)
    bad[13] = np.nan
    with pytest.raises(ValueError, match="sample_weight contains NaN"):
        src.kernel_sums(data[:2], KERNEL, weights=bad)
    once = as_source(iter([data[:10]]))
    list(once.chunks())
    with pytest.raises(ValueError, match="already consumed"):
        list(once.chunks())
    with pytest.raises(ValueError, match="features"):
        list(as_source([data[:10], data[:10, :2]]).chunks())
    with pytest.raises(ValueError, match="has no rows"):
        as_source([np.empty((0, 3))]).count_rows()
    with pytest.raises(ValueError, match="X has 3 features but the landmarks 2"):
        as_source(data).kernel_sums(data[:4, :2], KERNEL)


def test_core_block_rows_matches_engine():
    # bit-identity of chunked sums rests on this mirror of the core's superblock size
    assert core_block_rows(10, 8) == 13_056 and core_block_rows(4, 4) == 16_384
    assert core_block_rows(5000, 8) == 256


def test_one_dimensional_sources_are_named(tmp_path):
    np.save(tmp_path / "v.npy", np.arange(10.0))
    with pytest.raises(ValueError, match="X must be 2-D of shape \\(n_samples, n_features\\), got shape \\(10,\\)"):
        as_source(np.load(tmp_path / "v.npy", mmap_mode="r"))


def test_sparse_input_is_refused_by_name_everywhere():
    import scipy.sparse

    import nystrom_kme as nk

    X = scipy.sparse.random(50, 3, density=0.5, format="csr", random_state=0)
    with pytest.raises(ValueError, match="Y is a scipy.sparse"):
        nk.two_sample_test(np.ones((50, 3)), X)
    with pytest.raises(ValueError, match="X is a scipy.sparse"):
        nk.mmd2(X, np.ones((50, 3)))
