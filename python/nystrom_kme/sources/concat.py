"""Sources one after the other: the pooled sample [X; Y] of a two-sample test,
without copying either."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from numpy.typing import ArrayLike

from .._compensated import CompensatedSum
from .._validation import Weights
from ..kernels import Kernel
from .base import Progress, RowSource


class ConcatSource(RowSource):
    """The rows of several sources of one width, in order.

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_kme.sources import ConcatSource, as_source
    >>> Z = ConcatSource([as_source([np.ones((2, 2))]), as_source([np.zeros((3, 2))])])
    >>> Z.count_rows(), Z.take([0, 4]).tolist()
    (5, [[1.0, 1.0], [0.0, 0.0]])
    """

    def __init__(self, parts: list[RowSource], name: str = "Z") -> None:
        self.parts = parts
        self.name = name
        for p in parts:
            if p.n_features is None:  # an iterable not read yet: its first pass tells
                p.count_rows()
        widths = {p.n_features for p in parts if p.n_features is not None}  # all, once read
        if len(widths) > 1:
            raise ValueError(f"{name}: the parts have {sorted(widths)} features")
        width = parts[0].n_features
        assert width is not None  # every part was read above
        self.n_features: int = width
        dtypes = {p.dtype for p in parts}
        self.dtype: np.dtype = np.dtype(np.float32) if dtypes == {np.dtype(np.float32)} else np.dtype(np.float64)

    @property
    def n_rows(self) -> int | None:
        counts = [p.n_rows for p in self.parts]
        return None if None in counts else sum(counts)  # type: ignore[arg-type]

    def count_rows(self) -> int:
        return sum(p.count_rows() for p in self.parts)

    @property
    def random_access(self) -> bool:
        return all(p.random_access for p in self.parts)

    @property
    def reiterable(self) -> bool:
        return all(p.reiterable for p in self.parts)

    def chunks(self) -> Iterator[tuple[int, np.ndarray]]:
        offset = 0
        for part in self.parts:
            end = offset
            for start, block in part.chunks():
                yield offset + start, block.astype(self.dtype, copy=False)
                end = offset + start + block.shape[0]
            offset = end

    def take(self, indices: ArrayLike) -> np.ndarray:
        indices = np.asarray(indices, dtype=np.int64)
        out = np.empty((indices.size, self.n_features), dtype=self.dtype)
        offset = 0
        for part in self.parts:
            n = part.count_rows()
            mask = (indices >= offset) & (indices < offset + n)
            if mask.any():
                out[mask] = part.take(indices[mask] - offset)
            offset += n
        if indices.size and (indices.min() < 0 or indices.max() >= offset):
            raise ValueError(f"indices must lie in [0, {offset})")
        return out

    def kernel_sums(
        self,
        L: np.ndarray,
        kernel: Kernel,
        *,
        weights: Weights | None = None,
        n_threads: int = 0,
        progress: Progress | None = None,
    ) -> tuple[CompensatedSum, float]:
        acc = CompensatedSum((L.shape[0],))
        total = 0.0
        offset = 0
        for part in self.parts:
            n = part.count_rows()
            w = None if weights is None else weights[offset : offset + n]
            part_acc, part_total = part.kernel_sums(L, kernel, weights=w, n_threads=n_threads, progress=progress)
            acc.merge(part_acc)
            total += part_total
            offset += n
        return acc, total


__all__ = ["ConcatSource"]
