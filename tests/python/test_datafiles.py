"""Data files as row sources (nystrom_kme.datafiles): every format gives the rows and
columns numpy reads from the same file, streamed; bad files give one-line errors
that name the file."""

from __future__ import annotations

import sys

import numpy as np
import nystrom_kme as nk
import pytest
from numpy.testing import assert_array_equal
from nystrom_kme.datafiles import DataFileError, read_data
from nystrom_kme.sources import ArrayLikeSource


@pytest.fixture
def X(rng):
    return rng.normal(size=(700, 4))


def _rows(src):
    return np.concatenate([b for _, b in src.chunks()])


def test_npy_is_memory_mapped_and_bit_identical(tmp_path, X):
    np.save(tmp_path / "x.npy", X)
    src = read_data(tmp_path / "x.npy")
    assert isinstance(src, ArrayLikeSource) and isinstance(src.array, np.memmap)
    assert_array_equal(_rows(src), X)
    a = nk.NystromKME(n_landmarks=30, random_state=0).fit(src)
    b = nk.NystromKME(n_landmarks=30, random_state=0).fit(X)
    assert_array_equal(a.weights_, b.weights_)
    # columns and 1-D files
    assert_array_equal(_rows(read_data(tmp_path / "x.npy", columns=[3, 1])), X[:, [3, 1]])
    np.save(tmp_path / "v.npy", X[:, 0])
    assert_array_equal(_rows(read_data(tmp_path / "v.npy")), X[:, :1])


def test_npz_member(tmp_path, X):
    np.savez(tmp_path / "d.npz", a=X, b=X[:10])
    assert_array_equal(_rows(read_data(tmp_path / "d.npz", key="b")), X[:10])
    with pytest.raises(DataFileError, match="2 members .*--key"):
        read_data(tmp_path / "d.npz")
    with pytest.raises(DataFileError, match="no member 'c'"):
        read_data(tmp_path / "d.npz", key="c")


@pytest.mark.parametrize("suffix, delimiter", [(".csv", ","), (".tsv", "\t"), (".txt", " ")])
def test_text_files_with_and_without_header(tmp_path, X, suffix, delimiter):
    plain = tmp_path / f"plain{suffix}"
    np.savetxt(plain, X, delimiter=delimiter, fmt="%.17g")
    assert_array_equal(_rows(read_data(plain)), X)
    named = tmp_path / f"named{suffix}"
    np.savetxt(named, X, delimiter=delimiter, fmt="%.17g", header=delimiter.join("abcd"), comments="")
    src = read_data(named, columns=["d", "b"])
    assert src.count_rows() == 700
    assert_array_equal(_rows(src), X[:, [3, 1]])
    assert_array_equal(_rows(read_data(named, columns=["2"])), X[:, [2]])
    with pytest.raises(DataFileError, match="no column 'e'; columns: a, b, c, d"):
        read_data(named, columns=["e"])
    with pytest.raises(DataFileError, match="has no column names"):
        read_data(plain, columns=["a"])


def test_text_blocks_are_streamed(tmp_path, X, monkeypatch):
    monkeypatch.setattr("nystrom_kme.datafiles.TEXT_BLOCK_LINES", 64)
    np.savetxt(tmp_path / "x.csv", X, delimiter=",", fmt="%.17g")
    seen = []
    src = read_data(tmp_path / "x.csv", on_rows=seen.append)
    blocks = [b.shape[0] for _, b in src.chunks()]
    assert max(blocks) == 64 and sum(blocks) == 700 and seen == blocks
    kme = nk.NystromKME(n_landmarks=25, random_state=0)
    np.testing.assert_allclose(kme.fit(src).weights_,
                               nk.NystromKME(n_landmarks=25, random_state=0).fit(X).weights_, rtol=1e-10)


def test_hdf5_and_zarr(tmp_path, X):
    h5py = pytest.importorskip("h5py")
    zarr = pytest.importorskip("zarr")
    with h5py.File(tmp_path / "x.h5", "w") as f:
        f["group/data"] = X
    assert_array_equal(_rows(read_data(tmp_path / "x.h5", columns=[0, 2])), X[:, [0, 2]])
    with h5py.File(tmp_path / "two.h5", "w") as f:
        f["a"], f["b"] = X, X
    assert_array_equal(_rows(read_data(tmp_path / "two.h5", key="b")), X)
    with pytest.raises(DataFileError, match="2 datasets"):
        read_data(tmp_path / "two.h5")
    z = zarr.open(str(tmp_path / "x.zarr"), mode="w", shape=X.shape, chunks=(100, 4), dtype="f8")
    z[:] = X
    src = read_data(tmp_path / "x.zarr")
    assert_array_equal(_rows(src), X)
    assert_array_equal(src.take([5, 600, 5]), X[[5, 600, 5]])


def test_parquet(tmp_path, X):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"a": X[:, 0], "b": X[:, 1], "n": np.arange(700)}), tmp_path / "x.parquet")
    assert_array_equal(_rows(read_data(tmp_path / "x.parquet", columns=["b", "n"])),
                       np.c_[X[:, 1], np.arange(700.0)])
    pq.write_table(pa.table({"a": X[:, 0], "s": ["x"] * 700}), tmp_path / "s.parquet")
    with pytest.raises(DataFileError, match="s.parquet: non-numeric column"):
        _rows(read_data(tmp_path / "s.parquet"))


def test_missing_optional_readers_are_named(tmp_path, monkeypatch):
    for name in ("x.parquet", "x.h5"):
        (tmp_path / name).write_bytes(b"\0")
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    monkeypatch.setitem(sys.modules, "h5py", None)
    with pytest.raises(DataFileError, match=r"x.parquet: reading .parquet files needs pyarrow.*\[parquet\]"):
        read_data(tmp_path / "x.parquet")
    with pytest.raises(DataFileError, match=r"x.h5: reading this file needs h5py.*\[hdf5\]"):
        read_data(tmp_path / "x.h5")


def test_bad_files_name_the_file(tmp_path):
    cases = {
        "missing.npy": (None, "no such file"),
        "data.xlsx": (b"x", "unknown data file type '.xlsx'"),
        "text.npy": (b"hello", "not a .npy file"),
        "text.npz": (b"hello", "not a .npz file"),
        "ragged.csv": (b"1,2\n3\n", "ragged.csv: lines 1-2"),
        "words.csv": (b"a,b\n1,x\n", "could not convert"),
        "nan.csv": (b"1,2\n3,nan\n", "NaN or inf in the data \\(around line 2\\)"),
        "empty.csv": (b"# only a comment\n", "no rows"),
    }
    np.save(tmp_path / "cube.npy", np.zeros((2, 2, 2)))
    np.save(tmp_path / "strings.npy", np.array([["a"]]))
    for name, (content, message) in cases.items():
        if content is not None:
            (tmp_path / name).write_bytes(content)
        with pytest.raises(DataFileError, match=message) as err:
            _rows(read_data(tmp_path / name))
        assert name in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(DataFileError, match="cube.npy: expected a 1-D or 2-D array"):
        read_data(tmp_path / "cube.npy")
    with pytest.raises(DataFileError, match="strings.npy: expected numbers"):
        read_data(tmp_path / "strings.npy")
    np.save(tmp_path / "nan.npy", np.array([[1.0], [np.nan]]))
    with pytest.raises(ValueError, match="nan.npy contains NaN"):
        nk.NystromKME(n_landmarks=1).fit(read_data(tmp_path / "nan.npy"))
