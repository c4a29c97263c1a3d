"""Dask arrays chunked by rows as a row source (optional extra:
``pip install "nystrom-kme[dask]"``).

Only the O(n m d) sums run on the workers: each task calls the compiled core
(GIL released) on one row block against the landmarks, and the (m,) or
(m, B + 1) partial sums are added by a tree reduction (``SPLIT_EVERY`` partials
per node). Rows gathered by index come to the client (O(m d) traffic).
Computations run on the active dask scheduler: a ``dask.distributed.Client`` when
one is set up, else dask's local scheduler.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from types import ModuleType

import numpy as np
from numpy.typing import ArrayLike

from .. import _core
from .._compensated import CompensatedSum
from .._validation import DaskArray, Weights, as_data_matrix, common_dtype
from ..kernels import Kernel
from ..permutation import SplitSpec
from .base import Progress, RowSource, add_block_sums, weight_block, weight_total

#: A dask.delayed object (dask is not followed by the type checker: Any).
DaskDelayed = DaskArray
#: Partial sums combined per node of the reduction tree.
SPLIT_EVERY = 8


def is_dask_array(X: object) -> bool:
    """True for a dask array (checked without importing dask).

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_kme.sources import is_dask_array
    >>> is_dask_array(np.ones((2, 2)))
    False
    """
    return type(X).__module__.split(".")[0] == "dask" and hasattr(X, "to_delayed")


def _dask() -> ModuleType:
    try:
        import dask
        import dask.array  # noqa: F401
    except ImportError as err:  # pragma: no cover - only without the extra
        raise ImportError("dask arrays need the optional extra: pip install 'nystrom-kme[dask]'") from err
    module: ModuleType = dask
    return module


def _block_sums(
    block: np.ndarray, L: np.ndarray, kernel: Kernel, n_threads: int, weights: np.ndarray | None
) -> CompensatedSum:
    """On a worker: K(L, block) 1 or K(L, block) w, compensated."""
    acc = CompensatedSum((L.shape[0],))
    add_block_sums(acc, L, as_data_matrix(block, "X"), kernel.to_core(), n_threads, weights)
    return acc


def _block_split_sums(
    block: np.ndarray, L: np.ndarray, kernel: Kernel, n_threads: int, spec: SplitSpec, packed: np.ndarray
) -> CompensatedSum:
    """On a worker: K(L, block) W for this block's label weights (from packed bits)."""
    L, block = common_dtype(L, as_data_matrix(block, "X"))
    W = spec.weights_from_packed(packed)
    return CompensatedSum.of(_core.kernel_sums(L, block, W, kernel.to_core(), n_threads))


def _merge(*parts: CompensatedSum) -> CompensatedSum:
    acc = parts[0].copy()
    for p in parts[1:]:
        acc.merge(p)
    return acc


class DaskSource(RowSource):
    """A 2-D dask array; its row blocks are summed where they live.

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> import dask.array as da                  # pip install "nystrom-kme[dask]"
    >>> X = np.random.default_rng(0).normal(size=(1000, 2))
    >>> Xd = da.from_array(X, chunks=(250, 2))
    >>> on_dask = nk.NystromKME(nk.Gaussian(1.0), n_landmarks=50, random_state=0).fit(Xd)
    >>> in_memory = nk.NystromKME(nk.Gaussian(1.0), n_landmarks=50, random_state=0).fit(X)
    >>> bool(np.array_equal(on_dask.landmarks_, in_memory.landmarks_))
    True
    >>> on_dask.distance(in_memory) < 1e-6                 # the same embedding, up to round-off
    True
    """

    def __init__(self, X: DaskArray, name: str = "X") -> None:
        if X.ndim != 2:
            raise ValueError(f"{name} must be 2-D of shape (n_samples, n_features), got shape {X.shape}")
        if any(np.isnan(c) for c in X.chunks[0]):
            X = X.compute_chunk_sizes()
        if X.shape[0] < 1 or X.shape[1] < 1:
            raise ValueError(f"{name} must have at least one row and one feature, got shape {X.shape}")
        if X.dtype not in (np.float32, np.float64):
            X = X.astype(np.float64)
        if len(X.chunks[1]) > 1:
            X = X.rechunk({1: -1})
        self.array = X
        self.name = name
        self.n_features = int(X.shape[1])
        self.dtype = np.dtype(X.dtype)
        self.starts = np.concatenate([[0], np.cumsum(X.chunks[0])]).astype(np.int64)

    @classmethod
    def from_array(cls, X: np.ndarray, name: str = "X") -> DaskSource:
        """An in-memory array as a single-block dask array."""
        return cls(_dask().array.from_array(X, chunks=X.shape), name)

    @property
    def n_rows(self) -> int:
        return int(self.array.shape[0])

    def chunks(self) -> Iterator[tuple[int, np.ndarray]]:
        """Blocks computed one at a time on the client (for the rare passes that need
        every row there, e.g. the exact MMD)."""
        for i, block in enumerate(self.array.to_delayed().ravel()):
            yield int(self.starts[i]), as_data_matrix(np.asarray(block.compute()), self.name)

    def take(self, indices: ArrayLike) -> np.ndarray:
        uniq, inverse = np.unique(np.asarray(indices, dtype=np.int64), return_inverse=True)
        if uniq.size and (uniq[0] < 0 or uniq[-1] >= self.n_rows):
            raise ValueError(f"indices must lie in [0, {self.n_rows})")
        rows = np.asarray(self.array[uniq].compute())
        return as_data_matrix(rows[inverse.reshape(-1)], self.name, min_rows=0)

    def _weight_blocks(self, weights: Weights | None) -> list[DaskDelayed | np.ndarray | None]:
        if weights is None:
            return [None] * (len(self.starts) - 1)
        if is_dask_array(weights):
            lazy: DaskArray = weights
            if lazy.shape != (self.n_rows,):
                raise ValueError(f"sample_weight must have shape ({self.n_rows},), got {lazy.shape}")
            return list(lazy.rechunk((self.array.chunks[0],)).to_delayed().ravel())
        return [weight_block(weights, int(a), int(b)) for a, b in zip(self.starts[:-1], self.starts[1:])]

    def _reduce(self, parts: list[DaskDelayed]) -> CompensatedSum:
        dask = _dask()
        from dask import delayed

        while len(parts) > 1:
            parts = [delayed(_merge, pure=True)(*parts[i : i + SPLIT_EVERY]) for i in range(0, len(parts), SPLIT_EVERY)]
        total: tuple[CompensatedSum] = dask.compute(parts[0])
        return total[0]

    def kernel_sums(
        self,
        L: np.ndarray,
        kernel: Kernel,
        *,
        weights: Weights | None = None,
        n_threads: int = 0,
        progress: Progress | None = None,
    ) -> tuple[CompensatedSum, float]:
        _dask()
        from dask import delayed

        self.check_features(L.shape[1])
        L_d, kernel_d = delayed(L, pure=True), delayed(kernel, pure=True)  # shipped once per worker
        wblocks = self._weight_blocks(weights)
        parts = [
            delayed(_block_sums, pure=True)(b, L_d, kernel_d, n_threads, w)
            for b, w in zip(self.array.to_delayed().ravel(), wblocks)
        ]
        acc = self._reduce(parts)
        if weights is None:
            total = float(self.n_rows)
        elif is_dask_array(weights):
            total = float(weights.sum().compute())
        else:
            total = weight_total(weight_block(weights, 0, self.n_rows))
        if progress is not None:
            progress(self.n_rows)
        return acc, total

    def split_sums_multi(
        self,
        L: np.ndarray,
        kernels: Iterable[Kernel],
        spec: SplitSpec,
        *,
        n_threads: int = 0,
        progress: Progress | None = None,
    ) -> np.ndarray:
        """One :meth:`split_sums` per kernel (each where this source sums its rows)."""
        return np.stack([self.split_sums(L, k, spec, n_threads=n_threads, progress=progress) for k in kernels])

    def split_sums(
        self, L: np.ndarray, kernel: Kernel, spec: SplitSpec, *, n_threads: int = 0, progress: Progress | None = None
    ) -> np.ndarray:
        """The labels are generated on the client in row order (packed, n (B + 1) / 8
        bytes) and travel with their blocks; the sums run on the workers."""
        _dask()
        from dask import delayed

        self.check_features(L.shape[1])
        if self.n_rows != spec.n_rows:
            raise ValueError(f"{self.name} has {self.n_rows} rows, the splits {spec.n_rows}")
        packed = spec.packed_labels()
        L_d, kernel_d = delayed(L, pure=True), delayed(kernel, pure=True)
        parts = [
            delayed(_block_split_sums, pure=True)(
                b, L_d, kernel_d, n_threads, spec, packed[self.starts[i] : self.starts[i + 1]]
            )
            for i, b in enumerate(self.array.to_delayed().ravel())
        ]
        out = self._reduce(parts).value()
        if progress is not None:
            progress(self.n_rows)
        return out


def concatenate(parts: list[DaskSource], name: str = "Z") -> DaskSource:
    """The pooled dask array of several dask sources."""
    da = _dask().array
    arrays = [p.array for p in parts]
    if len({a.dtype for a in arrays}) > 1:
        arrays = [a.astype(np.float64) for a in arrays]
    return DaskSource(da.concatenate(arrays), name)


__all__ = ["DaskSource", "concatenate", "is_dask_array"]
