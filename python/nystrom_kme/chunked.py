"""Out-of-core fitting: row-chunked data sources and the mergeable sufficient statistics.

With fixed landmarks L (m, d) the Nyström embedding (paper eq. 5) depends on the
data only through the row sums ``s = sum_i w_i k(L, x_i)`` (m,) and the total
weight ``W = sum_i w_i`` (``W = n`` unweighted): alpha = K_m^+ s / W. Both add up
over any split of the rows, so an embedding can be fitted chunk by chunk
(:meth:`NystromKME.partial_fit`), over a source that never fits in memory
(:meth:`NystromKME.fit` with a memmap, an h5py or zarr dataset, or an iterable of
chunks), or on shards that are merged afterwards (:meth:`NystromKME.merge`).

Sources accepted by ``fit`` (see :func:`is_chunked_source`):

* **array-likes with random access**: ``numpy.memmap``, ``h5py.Dataset``,
  ``zarr.Array``, or any object with ``shape`` (2-D), ``dtype`` and row slicing.
  Read in blocks of ``chunk_rows`` rows; landmark rows are gathered by index.
* **iterables of 2-D chunks**: a list or tuple of 2-D numpy arrays, a callable
  returning a fresh iterator of chunks (re-iterable), or a one-shot iterator /
  generator. Two-pass fitting reads a re-iterable source three times (count the
  rows, gather the landmark rows, stream the row sums); a one-shot generator
  needs ``passes=1``.

Peak memory is O(chunk_rows d + m d + m^2), independent of n.
"""

from __future__ import annotations

import collections.abc
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from . import _core
from ._validation import as_data_matrix, common_dtype

#: Default bytes of data read per block from an array-like source.
DEFAULT_CHUNK_BYTES = 16 * 1024 * 1024
#: Indices per fancy-indexing read when gathering rows from an h5py-like dataset.
_GATHER_BATCH = 4096
# Mirrors superblock_rows() in cpp/include/nystrom_kme/detail/tile_engine.hpp
# (kPackBytes = 1 MiB, kChunk = 256): the core sums the rows of B in superblocks of
# this many rows and adds the superblock sums with Neumaier compensation. Calling
# the core on slices of exactly that size and compensating across calls the same
# way makes a chunked sum bit-identical to one call over all rows. Should the core
# change, only that bit-identity (tested) is lost: sums stay within ~1e-16.
_PACK_BYTES = 1024 * 1024
_PACK_CHUNK = 256


def core_block_rows(n_features: int, itemsize: int) -> int:
    """Rows of the summed side per superblock of the compiled core."""
    r = _PACK_BYTES // (n_features * itemsize)
    r = max(_PACK_CHUNK, (r // _PACK_CHUNK) * _PACK_CHUNK)
    return min(r, 64 * _PACK_CHUNK)


class CompensatedSum:
    """Running Neumaier sum of float64 arrays of one shape (the core's own scheme)."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.sum = np.zeros(shape)
        self.comp = np.zeros(shape)

    def add(self, x: np.ndarray) -> None:
        s = self.sum
        t = s + x
        self.comp += np.where(np.abs(s) >= np.abs(x), (s - t) + x, (x - t) + s)
        self.sum = t

    def value(self) -> np.ndarray:
        return self.sum + self.comp

    def copy(self) -> CompensatedSum:
        out = CompensatedSum(self.sum.shape)
        out.sum, out.comp = self.sum.copy(), self.comp.copy()
        return out

    @classmethod
    def of(cls, total: np.ndarray) -> CompensatedSum:
        out = cls(np.shape(total))
        out.sum = np.array(total, dtype=np.float64)
        return out


def is_dask_array(X: Any) -> bool:
    """True for a dask array (checked without importing dask)."""
    return type(X).__module__.split(".")[0] == "dask" and hasattr(X, "to_delayed")


def _is_array_like(X: Any) -> bool:
    shape = getattr(X, "shape", None)
    return (shape is not None and getattr(X, "dtype", None) is not None
            and hasattr(X, "__getitem__") and len(shape) == 2)


def is_chunked_source(X: Any) -> bool:
    """True when ``fit`` streams ``X`` by chunks instead of converting it in memory.

    That is: a ``numpy.memmap``; a non-numpy array-like with a 2-D ``shape``, a
    ``dtype`` and slicing (h5py, zarr, ...); an iterator or generator; a callable
    returning one; or a non-empty list/tuple whose items are all 2-D numpy arrays.
    Dask arrays are handled by :mod:`nystrom_kme.distributed`.
    """
    if isinstance(X, np.memmap):
        return True
    if isinstance(X, np.ndarray) or is_dask_array(X):
        return False
    if isinstance(X, (list, tuple)):
        return len(X) > 0 and all(isinstance(c, np.ndarray) and c.ndim == 2 for c in X)
    if _is_array_like(X):
        return True
    return isinstance(X, collections.abc.Iterator) or callable(X)


def take_rows(X: Any, indices: np.ndarray) -> np.ndarray:
    """Rows ``X[indices]`` (any order, repeats allowed) of an array-like, in O(len(indices) d)
    memory: numpy fancy indexing; for other sources, window by window of about
    ``DEFAULT_CHUNK_BYTES`` (whole storage chunks), zarr's orthogonal selection or
    increasing index lists (h5py), so that at most one window's storage chunks are
    decompressed at a time; as a last resort, row slices one at a time."""
    uniq, inverse = np.unique(np.asarray(indices, dtype=np.int64), return_inverse=True)
    if isinstance(X, np.ndarray):
        rows = X[uniq]
    else:
        n_features = int(X.shape[1])
        window = max(1, DEFAULT_CHUNK_BYTES // (8 * n_features))
        storage = getattr(X, "chunks", None)
        if isinstance(storage, tuple) and storage and isinstance(storage[0], (int, np.integer)):
            window = max(int(storage[0]), (window // int(storage[0])) * int(storage[0]))
        parts = []
        bounds = np.searchsorted(uniq, np.arange(0, int(X.shape[0]) + window, window))
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            if hi > lo:
                parts.append(_take_sorted(X, uniq[lo:hi]))
        rows = np.concatenate(parts)
    return as_data_matrix(np.asarray(rows)[inverse.reshape(-1)], "X")


def _take_sorted(X: Any, idx: np.ndarray) -> np.ndarray:
    """X[idx] for increasing unique idx, on a non-numpy source."""
    if hasattr(X, "oindex"):  # zarr: reads only the storage chunks holding these rows
        return np.asarray(X.oindex[idx])
    try:
        return np.concatenate([np.asarray(X[idx[i:i + _GATHER_BATCH].tolist()])
                               for i in range(0, idx.size, _GATHER_BATCH)])
    except (TypeError, ValueError, IndexError, NotImplementedError):
        return np.concatenate([np.asarray(X[int(i):int(i) + 1]) for i in idx])


class RowSource:
    """A validated view of a chunked source: ``chunks()`` yields C-contiguous 2-D
    float32/float64 blocks (each converted with the in-memory rules);
    ``n_rows`` is None until known; ``take`` gathers rows of array-likes."""

    def __init__(self, X: Any, chunk_rows: int | None = None) -> None:
        self._array: Any = None
        self._factory: Callable[[], Iterator[Any]] | None = None
        self._one_shot: Iterator[Any] | None = None
        self.n_rows: int | None = None
        self.n_features: int | None = None
        self.dtype: np.dtype | None = None
        if isinstance(X, (list, tuple)):
            items = list(X)
            self._factory = lambda: iter(items)
        elif _is_array_like(X) and not isinstance(X, collections.abc.Iterator):
            self._array = X
            self.n_rows, self.n_features = int(X.shape[0]), int(X.shape[1])
            self.dtype = np.dtype(np.float32 if np.dtype(X.dtype) == np.float32 else np.float64)
            if self.n_rows < 1 or self.n_features < 1:
                raise ValueError(f"X must have at least one row and one feature, got shape {X.shape}")
        elif isinstance(X, collections.abc.Iterator):
            self._one_shot = X
        elif callable(X):
            self._factory = X
        else:
            raise ValueError(f"unsupported chunked source {type(X).__name__}")
        self.chunk_rows = chunk_rows
        self._used = False

    @property
    def reiterable(self) -> bool:
        return self._one_shot is None

    @property
    def random_access(self) -> bool:
        return self._array is not None

    def _block_rows(self) -> int:
        """Rows per read: ``chunk_rows`` or ~16 MiB, rounded up to a multiple of the
        core's superblock (so that the sums are bit-identical to an in-memory fit)."""
        itemsize = 4 if np.dtype(self._array.dtype) == np.float32 else 8
        rows = self.chunk_rows or max(1, DEFAULT_CHUNK_BYTES // (itemsize * self.n_features))
        step = core_block_rows(self.n_features, itemsize)
        return ((rows + step - 1) // step) * step

    def chunks(self) -> Iterator[np.ndarray]:
        """Validated blocks, in row order."""
        if self._array is not None:
            step = self._block_rows()
            for start in range(0, self.n_rows, step):
                yield as_data_matrix(self._array[start:min(self.n_rows, start + step)], "X")
            return
        if self._one_shot is not None:
            if self._used:
                raise ValueError("this iterator of chunks was already consumed; pass a list of "
                                 "chunks or a callable returning a fresh iterator")
            self._used = True
            it: Iterator[Any] = self._one_shot
        else:
            it = iter(self._factory())  # type: ignore[misc]
        for chunk in it:
            if np.ndim(chunk) == 2 and np.shape(chunk)[0] == 0:
                continue
            arr = as_data_matrix(chunk, "X chunk")
            if self.n_features is None:
                self.n_features, self.dtype = arr.shape[1], arr.dtype
            elif arr.shape[1] != self.n_features:
                raise ValueError(f"a chunk has {arr.shape[1]} features, earlier ones {self.n_features}")
            yield arr

    def count_rows(self) -> int:
        """n, by a pass over an iterable source when not known."""
        if self.n_rows is None:
            self.n_rows = sum(c.shape[0] for c in self.chunks())
            if self.n_rows < 1:
                raise ValueError("the source has no rows")
        return self.n_rows

    def take(self, indices: np.ndarray) -> np.ndarray:
        """Rows at ``indices`` (in that order): random access, or one pass over an iterable."""
        indices = np.asarray(indices, dtype=np.int64)
        if self._array is not None:
            return take_rows(self._array, indices)
        order = np.argsort(indices, kind="stable")
        sorted_idx = indices[order]
        out: np.ndarray | None = None
        offset = 0
        for chunk in self.chunks():
            lo = np.searchsorted(sorted_idx, offset)
            hi = np.searchsorted(sorted_idx, offset + chunk.shape[0])
            if hi > lo:
                if out is None:
                    out = np.empty((indices.size, chunk.shape[1]), dtype=chunk.dtype)
                elif out.dtype != chunk.dtype:
                    out = out.astype(np.result_type(out.dtype, chunk.dtype))
                out[order[lo:hi]] = chunk[sorted_idx[lo:hi] - offset]
            offset += chunk.shape[0]
        if out is None or (indices.size and sorted_idx[-1] >= offset):
            raise ValueError(f"indices must lie in [0, {offset})")
        return out


def add_row_sums(acc: CompensatedSum, L: np.ndarray, chunk: np.ndarray, core_kernel: Any,
                 n_threads: int, weights: np.ndarray | None = None) -> None:
    """acc += K(L, chunk) 1 (or K(L, chunk) w), one core call per core superblock so that
    the compensated total matches a single call over all rows bit for bit."""
    L, chunk = common_dtype(L, chunk)
    step = core_block_rows(chunk.shape[1], chunk.dtype.itemsize)
    for start in range(0, chunk.shape[0], step):
        part = chunk[start:start + step]
        if weights is None:
            acc.add(_core.kernel_row_sums(L, part, core_kernel, n_threads))
        else:
            w = np.ascontiguousarray(weights[start:start + step], dtype=np.float64).reshape(-1, 1)
            acc.add(_core.kernel_sums(L, part, w, core_kernel, n_threads)[:, 0])


__all__ = ["CompensatedSum", "RowSource", "add_row_sums", "core_block_rows", "is_chunked_source",
           "is_dask_array", "take_rows"]
