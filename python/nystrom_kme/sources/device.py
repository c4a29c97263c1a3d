"""CUDA arrays (CuPy, PyTorch, any ``__cuda_array_interface__`` / DLPack CUDA array)
as a row source: the sums run on the GPU (:mod:`nystrom_kme.cuda.sums`), next to
the data; only landmarks, weights and the (m,)/(m, B + 1) results cross the bus.

CuPy is imported when a source is built, never at import time.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager

import numpy as np
from numpy.typing import ArrayLike

from .._compensated import CompensatedSum
from .._validation import Weights
from ..cuda.arrays import CupyArray, as_cupy, as_device_matrix, require_cupy
from ..kernels import Kernel
from ..permutation import SplitSpec
from .base import Progress, RowSource, weight_total


class CudaSource(RowSource):
    """An (n, d) float32/float64 array in CUDA memory, kept there (a zero-copy CuPy view).

    ``take`` and ``chunks`` return host (numpy) copies of the rows asked for, as the
    interface promises; the samplers other than uniform need all rows on the host
    (``to_array()`` is None: pass ``cupy.asnumpy(X)`` for them). The random-split
    labels of the permutation test are drawn on the GPU, block by block, bit for bit
    those the CPU core draws (:class:`~nystrom_kme.cuda.sums.DeviceSplits`).

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_kme import sources
    >>> from nystrom_kme.sources import CudaSource
    >>> # cupy.asarray(X) or a CUDA torch tensor would give a CudaSource; host data does not:
    >>> isinstance(sources.as_source(np.ones((4, 2))), CudaSource)
    False
    >>> CudaSource.block_rows
    131072
    """

    #: Rows per block of ``chunks()`` and of the uploaded split labels.
    block_rows = 1 << 17

    def __init__(self, X: object, name: str = "X") -> None:
        self.array = as_device_matrix(X, name)
        self.name = name
        self.n_features = int(self.array.shape[1])
        self.dtype = np.dtype(self.array.dtype.name)

    @classmethod
    def concatenate(cls, parts: list[CudaSource], name: str = "Z") -> CudaSource:
        """The rows of ``parts`` one after the other, on the first part's device (one
        device copy; float64 when the dtypes differ)."""
        cp = require_cupy()
        with cp.cuda.Device(parts[0].array.device.id):
            arrays = [cp.asarray(p.array) for p in parts]
            if len({a.dtype for a in arrays}) > 1:
                arrays = [a.astype(cp.float64) for a in arrays]
            return cls(cp.concatenate(arrays), name)

    @property
    def n_rows(self) -> int:
        return int(self.array.shape[0])

    def _on_device(self) -> AbstractContextManager[object]:
        """The context that makes the data's GPU current (landmarks, weights and
        launches then go to the device the data lives on)."""
        device: AbstractContextManager[object] = require_cupy().cuda.Device(self.array.device.id)
        return device

    def chunks(self) -> Iterator[tuple[int, np.ndarray]]:
        cp = require_cupy()
        for start in range(0, self.n_rows, self.block_rows):
            yield start, cp.asnumpy(self.array[start : start + self.block_rows])

    def take(self, indices: ArrayLike) -> np.ndarray:
        cp = require_cupy()
        indices = np.asarray(indices, dtype=np.int64)
        if indices.size and (indices.min() < 0 or indices.max() >= self.n_rows):
            raise ValueError(f"indices must lie in [0, {self.n_rows})")
        with self._on_device():
            return np.ascontiguousarray(cp.asnumpy(self.array[cp.asarray(indices)]))

    def _landmarks(self, L: np.ndarray | CupyArray) -> tuple[CupyArray, CupyArray]:
        """L on this source's device, in the common dtype of L and the data."""
        cp = require_cupy()
        L = as_cupy(L) if not isinstance(L, np.ndarray) else cp.asarray(L)
        if L.ndim != 2:
            raise ValueError(f"the landmarks must be 2-D, got shape {L.shape}")
        self.check_features(int(L.shape[1]))
        dtype = np.result_type(L.dtype.name, self.dtype)
        return cp.ascontiguousarray(L, dtype=dtype), (self.array if self.dtype == dtype else self.array.astype(dtype))

    def _weights(self, weights: Weights | CupyArray) -> CupyArray:
        cp = require_cupy()
        w = (cp.asarray(weights) if isinstance(weights, np.ndarray) else as_cupy(weights)).astype(cp.float64)
        if w.shape != (self.n_rows,):
            raise ValueError("sample_weight must be 1-D and have one entry per row")
        if not bool(cp.isfinite(w).all()):
            raise ValueError("sample_weight contains NaN or inf")
        if bool((w < 0).any()):
            raise ValueError("sample_weight must be non-negative")
        return cp.ascontiguousarray(w)

    def kernel_sums(
        self,
        L: np.ndarray | CupyArray,
        kernel: Kernel,
        *,
        weights: Weights | CupyArray | None = None,
        n_threads: int = 0,
        progress: Progress | None = None,
    ) -> tuple[CompensatedSum, float]:
        from ..cuda import sums

        cp = require_cupy()
        with self._on_device():
            L, X = self._landmarks(L)
            if weights is None:
                out = sums.weighted_kernel_sums(L, X, None, kernel)[:, 0]
                total = float(self.n_rows)
            else:
                w = self._weights(weights)
                out = sums.weighted_kernel_sums(L, X, w.reshape(-1, 1), kernel)[:, 0]
                total = weight_total(cp.asnumpy(w))
            out = cp.asnumpy(out)
        if progress is not None:
            progress(self.n_rows)
        return CompensatedSum.of(out), total

    def split_sums_multi(
        self,
        L: np.ndarray | CupyArray,
        kernels: Iterable[Kernel],
        spec: SplitSpec,
        *,
        n_threads: int = 0,
        progress: Progress | None = None,
    ) -> np.ndarray:
        """One :meth:`split_sums` per kernel (each where this source sums its rows); kernels
        the GPU path does not compute (the l1 Laplacian, the rational quadratic) in the
        host core's one pass over host copies of the rows."""
        kernels = list(kernels)
        if not _on_gpu(kernels):
            return super().split_sums_multi(L, kernels, spec, n_threads=n_threads, progress=progress)
        return np.stack([self.split_sums(L, k, spec, n_threads=n_threads, progress=progress) for k in kernels])

    def split_sums(
        self,
        L: np.ndarray | CupyArray,
        kernel: Kernel,
        spec: SplitSpec,
        *,
        n_threads: int = 0,
        progress: Progress | None = None,
    ) -> np.ndarray:
        from ..cuda import sums

        cp = require_cupy()
        if self.n_rows != spec.n_rows:
            raise ValueError(f"{self.name} has {self.n_rows} rows, the splits {spec.n_rows}")
        with self._on_device():
            L, X = self._landmarks(L)
            splits = sums.DeviceSplits(spec.n1, spec.n2, spec.n_permutations, spec.seed)  # labels drawn here
            acc = CompensatedSum((L.shape[0], spec.n_columns))
            for start in range(0, self.n_rows, self.block_rows):
                block = X[start : start + self.block_rows]
                W = splits.next_weights(block.shape[0])
                acc.add(cp.asnumpy(sums.weighted_kernel_sums(L, block, W, kernel)))
                if progress is not None:
                    progress(block.shape[0])
        return acc.value()

    def bin_sums(
        self,
        L: np.ndarray,
        kernels: Iterable[Kernel],
        bins: np.ndarray,
        n_bins: int,
        *,
        n_threads: int = 0,
        progress: Progress | None = None,
        out: np.ndarray | None = None,
        rows: Sequence[int] | None = None,
    ) -> np.ndarray:
        """As :meth:`RowSource.bin_sums`, on the GPU: the kept rows gathered in bin order
        once (a stable sort of ``bins`` on the device), then every kernel's sums by bin
        (on every landmark; with ``rows``, kernel j's first rows[j] are added).
        Kernels the GPU path does not compute (the l1 Laplacian, the rational quadratic):
        the host core's pass over host copies of the rows."""
        from ..cuda import sums

        kernels = list(kernels)
        if not _on_gpu(kernels):
            return super().bin_sums(
                L, kernels, bins, n_bins, n_threads=n_threads, progress=progress, out=out, rows=rows
            )
        cp = require_cupy()
        bins = np.asarray(bins, dtype=np.int64)
        if bins.shape != (self.n_rows,):
            raise ValueError(f"bins must hold one entry per row ({self.n_rows}), got shape {bins.shape}")
        if bins.size and (bins.min() < -1 or bins.max() >= n_bins):
            raise ValueError(f"bins must lie in [-1, {n_bins})")
        if out is None:
            out = np.zeros((len(kernels), L.shape[0], n_bins))
        with self._on_device():
            Ld, X = self._landmarks(L)
            labels = cp.asarray(bins)
            order = cp.argsort(labels)  # stable: rows keep their order within a bin
            counts = cp.bincount(labels + 1, minlength=n_bins + 1)  # bin -1 (dropped rows) first
            offsets = cp.concatenate([cp.zeros(1, dtype=cp.int64), cp.cumsum(counts[1:])]).astype(cp.int64)
            sorted_rows = cp.ascontiguousarray(X[order[int(counts[0]) :]])
            E = cp.asnumpy(sums.bin_sums(Ld, sorted_rows, offsets, kernels))
        for j, count in enumerate(rows or [L.shape[0]] * len(kernels)):
            out[j, :count] += E[j, :count]
        if progress is not None:
            progress(self.n_rows)
        return out

    def diagonal_sum(self, kernel: Kernel, *, weights: Weights | CupyArray | None = None, n_threads: int = 0) -> float:
        cp = require_cupy()
        if not kernel.radial:  # pragma: no cover - the GPU path refuses them earlier
            raise ValueError("the GPU path computes the radial kernels only")
        if weights is None:  # k(x, x) = 1 for every radial kernel
            return float(self.n_rows)
        with self._on_device():
            w = self._weights(weights)
            return weight_total(cp.asnumpy(w * w))


def _on_gpu(kernels: list[Kernel]) -> bool:
    """Whether the GPU path computes every one of ``kernels`` (``cuda.program.KERNEL_CODES``)."""
    from ..cuda.program import KERNEL_CODES

    return all(k.name in KERNEL_CODES for k in kernels)


__all__ = ["CudaSource"]
