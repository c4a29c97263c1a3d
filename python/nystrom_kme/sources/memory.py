"""In-memory numpy arrays as a row source: one core call per sum (the random splits' sums
go in blocks of rows, like every source's: base.py)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from numpy.typing import ArrayLike

from .. import _core
from .._compensated import CompensatedSum
from .._validation import Weights, as_data_matrix, common_dtype
from ..kernels import Kernel
from .base import Progress, RowSource, weight_block, weight_total


class ArraySource(RowSource):
    """A C-contiguous float32/float64 array in memory (anything else is converted once).

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_kme.sources import ArraySource
    >>> src = ArraySource(np.arange(6).reshape(3, 2))      # integers: converted once
    >>> src.dtype, src.take([2, 0]).tolist()
    (dtype('float64'), [[4.0, 5.0], [0.0, 1.0]])
    """

    def __init__(self, X: ArrayLike, name: str = "X") -> None:
        self.array = as_data_matrix(X, name)
        self.name = name
        self.n_features = self.array.shape[1]
        self.dtype = self.array.dtype

    @property
    def n_rows(self) -> int:
        return int(self.array.shape[0])

    def to_array(self) -> np.ndarray:
        return self.array

    def chunks(self) -> Iterator[tuple[int, np.ndarray]]:
        yield 0, self.array

    def take(self, indices: ArrayLike) -> np.ndarray:
        indices = np.asarray(indices, dtype=np.int64)
        if indices.size and (indices.min() < 0 or indices.max() >= self.n_rows):
            raise ValueError(f"indices must lie in [0, {self.n_rows})")
        return np.ascontiguousarray(self.array[indices])

    def kernel_sums(
        self,
        L: np.ndarray,
        kernel: Kernel,
        *,
        weights: Weights | None = None,
        n_threads: int = 0,
        progress: Progress | None = None,
    ) -> tuple[CompensatedSum, float]:
        self.check_features(L.shape[1])
        L, X = common_dtype(L, self.array)
        if weights is None:
            sums = _core.kernel_row_sums(L, X, kernel.to_core(), n_threads)
            total = float(self.n_rows)
        else:
            w = weight_block(weights, 0, self.n_rows)
            sums = _core.kernel_sums(L, X, w.reshape(-1, 1), kernel.to_core(), n_threads)[:, 0]
            total = weight_total(w)
        if progress is not None:
            progress(self.n_rows)
        return CompensatedSum.of(sums), total


__all__ = ["ArraySource"]
