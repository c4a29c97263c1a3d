"""Sources that are read block by block: array-likes with random access (a
``numpy.memmap``, an h5py or zarr dataset, or any object with a 2-D ``shape``, a
``dtype`` and row slicing) and iterables of 2-D chunks (a list or tuple of arrays,
a callable returning a fresh iterator, or a one-shot iterator / generator).

Peak memory is one block (``chunk_rows`` rows, default ~16 MiB of data) plus
what is computed from it, independent of n.
"""

from __future__ import annotations

import collections.abc
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Protocol, Union

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

from .._validation import as_data_matrix, check_positive_int
from .base import RowSource, core_block_rows

#: Default bytes of data read per block from an array-like source.
DEFAULT_CHUNK_BYTES = 16 * 1024 * 1024
#: Indices per fancy-indexing read when gathering rows from an h5py-like dataset.
GATHER_BATCH = 4096


class Dataset(Protocol):
    """A 2-D array read by row slices: a memmap, an h5py or zarr dataset, ..."""

    @property
    def shape(self) -> tuple[int, ...]: ...

    @property
    def dtype(self) -> DTypeLike: ...

    def __getitem__(self, rows: slice) -> Any: ...


#: Chunks of rows (2-D arrays of one width): a list or tuple of numpy arrays, a
#: callable returning a fresh iterator of them (both re-iterable), or a one-shot iterator.
Chunks = Union[Sequence[np.ndarray], Callable[[], Iterable[ArrayLike]], Iterator[ArrayLike]]


def is_array_like(X: object) -> bool:
    """A 2-D object with ``shape``, ``dtype`` and slicing that is not an iterator."""
    shape = getattr(X, "shape", None)
    return (
        shape is not None
        and getattr(X, "dtype", None) is not None
        and hasattr(X, "__getitem__")
        and len(shape) == 2
        and not isinstance(X, collections.abc.Iterator)
    )


def _take_sorted(X: Dataset, idx: np.ndarray) -> np.ndarray:
    """X[idx] for increasing unique idx, on a non-numpy source."""
    if hasattr(X, "oindex"):  # zarr: reads only the storage chunks holding these rows
        return np.asarray(X.oindex[idx])
    try:
        return np.concatenate(
            [np.asarray(X[idx[i : i + GATHER_BATCH].tolist()]) for i in range(0, idx.size, GATHER_BATCH)]
        )
    except (TypeError, ValueError, IndexError, NotImplementedError):
        return np.concatenate([np.asarray(X[int(i) : int(i) + 1]) for i in idx])


class ArrayLikeSource(RowSource):
    """A memmap, h5py/zarr dataset or other sliceable 2-D array, read in blocks.

    Examples
    --------
    >>> import os, tempfile, numpy as np, nystrom_kme as nk
    >>> from nystrom_kme.sources import ArrayLikeSource
    >>> path = os.path.join(tempfile.mkdtemp(), "X.npy")
    >>> np.save(path, np.random.default_rng(0).normal(size=(1000, 2)))
    >>> X = np.load(path, mmap_mode="r")
    >>> src = ArrayLikeSource(X, chunk_rows=256)
    >>> src.n_rows, src.random_access
    (1000, True)
    >>> kme = nk.NystromKME(nk.Gaussian(1.0), n_landmarks=50, random_state=0)
    >>> bool(np.array_equal(kme.fit(src).weights_, kme.fit(np.asarray(X)).weights_))   # bit for bit
    True
    """

    n_features: int
    dtype: np.dtype

    def __init__(self, X: Dataset, name: str = "X", chunk_rows: int | None = None) -> None:
        self.array = X
        self.name = name
        n, d = int(X.shape[0]), int(X.shape[1])
        if n < 1 or d < 1:
            raise ValueError(f"{name} must have at least one row and one feature, got shape {X.shape}")
        self._n_rows = n
        self.n_features = d
        self.dtype = np.dtype(np.float32 if np.dtype(X.dtype) == np.float32 else np.float64)
        self.chunk_rows = None if chunk_rows is None else check_positive_int(chunk_rows, "chunk_rows")

    @property
    def n_rows(self) -> int:
        return self._n_rows

    def block_rows(self) -> int:
        """Rows per read: ``chunk_rows`` or ~16 MiB, rounded up to a multiple of the
        core's superblock (so that the sums are bit-identical to an in-memory fit)."""
        itemsize = self.dtype.itemsize
        rows = self.chunk_rows or max(1, DEFAULT_CHUNK_BYTES // (itemsize * self.n_features))
        step = core_block_rows(self.n_features, itemsize)
        return ((rows + step - 1) // step) * step

    def chunks(self) -> Iterator[tuple[int, np.ndarray]]:
        step = self.block_rows()
        for start in range(0, self.n_rows, step):
            yield start, as_data_matrix(self.array[start : min(self.n_rows, start + step)], self.name)

    def take(self, indices: ArrayLike) -> np.ndarray:
        """Rows at ``indices`` in O(len(indices) d) memory: window by window of about
        DEFAULT_CHUNK_BYTES (whole storage chunks), so that at most one window's
        storage chunks are decompressed at a time."""
        uniq, inverse = np.unique(np.asarray(indices, dtype=np.int64), return_inverse=True)
        if uniq.size and (uniq[0] < 0 or uniq[-1] >= self.n_rows):
            raise ValueError(f"indices must lie in [0, {self.n_rows})")
        X = self.array
        if isinstance(X, np.ndarray):  # memmap: numpy fancy indexing reads only those rows
            rows = X[uniq]
        else:
            window = max(1, DEFAULT_CHUNK_BYTES // (8 * self.n_features))
            storage = getattr(X, "chunks", None)
            if isinstance(storage, tuple) and storage and isinstance(storage[0], (int, np.integer)):
                window = max(int(storage[0]), (window // int(storage[0])) * int(storage[0]))
            bounds = np.searchsorted(uniq, np.arange(0, self.n_rows + window, window))
            parts = [_take_sorted(X, uniq[lo:hi]) for lo, hi in zip(bounds[:-1], bounds[1:]) if hi > lo]
            rows = np.concatenate(parts) if parts else np.empty((0, self.n_features), self.dtype)
        return as_data_matrix(np.asarray(rows)[inverse.reshape(-1)], self.name, min_rows=0)


class IterableSource(RowSource):
    """An iterable of 2-D chunks: a list or tuple of arrays, a callable returning a
    fresh iterator (both re-iterable), or a one-shot iterator / generator.

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> from nystrom_kme.sources import IterableSource
    >>> rng = np.random.default_rng(0)
    >>> chunks = [rng.normal(size=(300, 2)) for _ in range(3)]
    >>> src = IterableSource(lambda: iter(chunks))          # a callable: can be read twice
    >>> src.count_rows(), src.reiterable
    (900, True)
    >>> nk.NystromKME(nk.Gaussian(1.0), n_landmarks=30, random_state=0).fit(src).weights_.shape
    (30,)
    """

    def __init__(self, X: Chunks, name: str = "X") -> None:
        self.name = name
        self._factory: Callable[[], Iterable[ArrayLike]] | None = None
        self._one_shot: Iterator[ArrayLike] | None = None
        if isinstance(X, (list, tuple)):
            items = list(X)
            self._factory = lambda: iter(items)
        elif isinstance(X, collections.abc.Iterator):
            self._one_shot = X
        elif callable(X):
            self._factory = X
        else:
            raise ValueError(f"{name}: unsupported source {type(X).__name__}")
        self._n_rows: int | None = None
        self._used = False

    @property
    def n_rows(self) -> int | None:
        return self._n_rows

    @property
    def random_access(self) -> bool:
        return False

    @property
    def reiterable(self) -> bool:
        return self._one_shot is None

    def chunks(self) -> Iterator[tuple[int, np.ndarray]]:
        if self._one_shot is not None:
            if self._used:
                raise ValueError(
                    f"{self.name}: this iterator of chunks was already consumed; pass a "
                    "list of chunks or a callable returning a fresh iterator"
                )
            self._used = True
            it: Iterable[ArrayLike] = self._one_shot
        else:
            it = iter(self._factory())  # type: ignore[misc]
        start = 0
        for chunk in it:
            if np.ndim(chunk) == 2 and np.shape(chunk)[0] == 0:
                continue
            arr = as_data_matrix(chunk, f"{self.name} chunk")
            if self.n_features is None:
                self.n_features, self.dtype = arr.shape[1], arr.dtype
            elif arr.shape[1] != self.n_features:
                raise ValueError(f"a chunk of {self.name} has {arr.shape[1]} features, earlier ones {self.n_features}")
            yield start, arr
            start += arr.shape[0]
        if self._n_rows is None:
            self._n_rows = start
        if start < 1:
            raise ValueError(f"{self.name} has no rows")

    def count_rows(self) -> int:
        if self._n_rows is None:
            for _ in self.chunks():
                pass
        return self._n_rows  # type: ignore[return-value]

    def take(self, indices: ArrayLike) -> np.ndarray:
        """Rows at ``indices`` (in that order), by one pass over the chunks."""
        indices = np.asarray(indices, dtype=np.int64)
        order = np.argsort(indices, kind="stable")
        sorted_idx = indices[order]
        out: np.ndarray | None = None
        end = 0
        for start, chunk in self.chunks():
            end = start + chunk.shape[0]
            lo, hi = np.searchsorted(sorted_idx, start), np.searchsorted(sorted_idx, end)
            if hi > lo:
                if out is None:
                    out = np.empty((indices.size, chunk.shape[1]), dtype=chunk.dtype)
                elif out.dtype != chunk.dtype:
                    out = out.astype(np.result_type(out.dtype, chunk.dtype))
                out[order[lo:hi]] = chunk[sorted_idx[lo:hi] - start]
        if out is None or (indices.size and (sorted_idx[0] < 0 or sorted_idx[-1] >= end)):
            raise ValueError(f"indices must lie in [0, {end})")
        return out


__all__ = ["ArrayLikeSource", "DEFAULT_CHUNK_BYTES", "IterableSource", "is_array_like"]
