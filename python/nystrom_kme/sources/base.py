"""The row-source interface: rows of a data matrix wherever they live, and the
kernel sums against landmarks computed next to them.

Every estimator and test of the package is written once over a :class:`RowSource`.
A source knows its shape and dtype, gathers rows by index (``take``), yields its
rows in order by blocks (``chunks``), and computes the two streaming sums the
package needs, in O(block) memory:

* ``kernel_sums(L, kernel, weights)``: sum_i w_i k(L, x_i), (m,) (w_i = 1 when
  ``weights`` is None), as a :class:`~nystrom_kme._compensated.CompensatedSum`;
* ``split_sums(L, kernel, spec)``: K(L, X) W for the label weights W of random
  splits (:mod:`nystrom_kme.permutation`), (m, B + 1), never storing W.

The defaults here stream ``chunks()`` through the compiled core; in-memory arrays
make one core call, dask arrays run the blocks on the workers.
"""

from __future__ import annotations

import abc
import math
from collections.abc import Callable, Iterable, Iterator, Sequence

import numpy as np
from numpy.typing import ArrayLike

from .. import _core
from .._compensated import CompensatedSum
from .._validation import Weights, common_dtype, core_array
from ..kernels import Kernel
from ..permutation import SplitSpec

#: Optional callback told how many rows were just processed (progress bars).
Progress = Callable[[int], None]

#: Rows per core call of the random splits' sums (progress between calls).
SPLIT_BLOCK_ROWS = 1 << 18

# Mirrors superblock_rows() in cpp/include/nystrom_kme/detail/tile_layout.hpp for
# one weight column (kPackBytes = 1 MiB, kChunk = 256): the core sums the rows of B
# in superblocks of this many rows and adds the superblock sums with Neumaier
# compensation. Calling the core on slices of exactly that size and compensating
# across calls the same way makes a chunked sum bit-identical to one call over all
# rows. Should the core change, only that bit-identity (tested) is lost.
_PACK_BYTES = 1024 * 1024
_PACK_CHUNK = 256


def core_block_rows(n_features: int, itemsize: int) -> int:
    """Rows of the summed side per superblock of the compiled core (one weight column).

    Examples
    --------
    >>> from nystrom_kme.sources import core_block_rows
    >>> core_block_rows(n_features=10, itemsize=8) > 0
    True
    """
    r = _PACK_BYTES // (n_features * itemsize)
    r = max(_PACK_CHUNK, (r // _PACK_CHUNK) * _PACK_CHUNK)
    return min(r, 64 * _PACK_CHUNK)


def weight_block(weights: Weights, start: int, stop: int, name: str = "sample_weight") -> np.ndarray:
    """weights[start:stop] as validated float64: finite and non-negative."""
    w = core_array(np.asarray(weights[start:stop]), np.float64)
    if w.shape != (stop - start,):
        raise ValueError(f"{name} must be 1-D and have one entry per row")
    if not np.isfinite(w).all():
        raise ValueError(f"{name} contains NaN or inf")
    if (w < 0).any():
        raise ValueError(f"{name} must be non-negative")
    return w


def weight_total(w: np.ndarray) -> float:
    """sum(w) as exactly as float64 allows (math.fsum); inf if it overflows (the
    estimators turn that into a clear error)."""
    try:
        return math.fsum(w)
    except OverflowError:
        return math.inf


def add_block_sums(
    acc: CompensatedSum,
    L: np.ndarray,
    block: np.ndarray,
    core_kernel: _core.Kernel,
    n_threads: int,
    weights: np.ndarray | None = None,
) -> None:
    """acc += K(L, block) 1 (or K(L, block) w), one core call per core superblock so
    that the compensated total matches a single call over all rows bit for bit."""
    L, block = common_dtype(L, block)
    if weights is not None:
        weights = core_array(weights, np.float64)
    step = core_block_rows(block.shape[1], block.dtype.itemsize)
    for start in range(0, block.shape[0], step):
        part = block[start : start + step]
        if weights is None:
            acc.add(_core.kernel_row_sums(L, part, core_kernel, n_threads))
        else:
            w = weights[start : start + step].reshape(-1, 1)
            acc.add(_core.kernel_sums(L, part, w, core_kernel, n_threads)[:, 0])


class RowSource(abc.ABC):
    """Rows of an (n, d) data matrix of float32 or float64 values.

    Attributes
    ----------
    name : str
        How error messages call the data ("X", "Y", ...).
    n_features : int or None
        d (None until the first block of an iterable has been read).
    dtype : numpy.dtype or None
        float32 or float64: the dtype the core computes in for these rows.
    feature_names : tuple of str or None
        The columns' names when the rows came with them (a DataFrame, a data file's
        header), else None; fitted objects keep them as ``feature_names_in_`` and
        check later batches against them (:mod:`nystrom_kme._columns`).

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> from nystrom_kme import sources
    >>> X = np.random.default_rng(0).normal(size=(100, 2))
    >>> src = sources.as_source([X[:60], X[60:]])           # two chunks
    >>> src.count_rows(), src.reiterable, src.random_access
    (100, True, False)
    >>> [(start, len(block)) for start, block in src.chunks()]
    [(0, 60), (60, 40)]
    >>> src.take([0, 99]).shape
    (2, 2)
    """

    name: str = "X"
    n_features: int | None = None
    dtype: np.dtype | None = None
    feature_names: tuple[str, ...] | None = None

    # -- shape --------------------------------------------------------------
    @property
    @abc.abstractmethod
    def n_rows(self) -> int | None:
        """n, or None while unknown (an iterable not read yet)."""

    def count_rows(self) -> int:
        """n, by a pass over the rows when not known yet."""
        if self.n_rows is None:
            raise NotImplementedError  # pragma: no cover - iterables override
        return self.n_rows

    @property
    def random_access(self) -> bool:
        """Whether ``take`` reads only the rows it needs (no pass over the data)."""
        return True

    @property
    def reiterable(self) -> bool:
        """Whether ``chunks()`` can be called more than once."""
        return True

    def to_array(self) -> np.ndarray | None:
        """All rows as one in-memory array when the source is one, else None."""
        return None

    # -- reading ------------------------------------------------------------
    @abc.abstractmethod
    def chunks(self) -> Iterator[tuple[int, np.ndarray]]:
        """(first row, block) pairs in row order; blocks are validated C-contiguous
        float32/float64 arrays of shape (rows, n_features)."""

    @abc.abstractmethod
    def take(self, indices: ArrayLike) -> np.ndarray:
        """Rows at ``indices`` (any order, repeats allowed), (len(indices), d)."""

    def check_features(self, n_features: int, what: str = "the landmarks") -> None:
        if self.n_features is not None and self.n_features != n_features:
            raise ValueError(f"{self.name} has {self.n_features} features but {what} {n_features}")

    # -- sums computed next to the data -------------------------------------
    def kernel_sums(
        self,
        L: np.ndarray,
        kernel: Kernel,
        *,
        weights: Weights | None = None,
        n_threads: int = 0,
        progress: Progress | None = None,
    ) -> tuple[CompensatedSum, float]:
        """(sum_i w_i k(L, x_i) as a CompensatedSum of shape (m,), sum_i w_i).

        ``weights``: None (w_i = 1), or a 1-D array-like with one non-negative
        entry per row, sliced block by block (numpy, memmap, h5py, ...).
        """
        core = kernel.to_core()
        acc = CompensatedSum((L.shape[0],))
        total: list[float] = []
        for start, block in self.chunks():
            self.check_features(L.shape[1])
            w = None if weights is None else weight_block(weights, start, start + block.shape[0])
            add_block_sums(acc, L, block, core, n_threads, w)
            total.append(float(block.shape[0]) if w is None else weight_total(w))
            if progress is not None:
                progress(block.shape[0])
        return acc, weight_total(np.asarray(total))

    def split_sums(
        self, L: np.ndarray, kernel: Kernel, spec: SplitSpec, *, n_threads: int = 0, progress: Progress | None = None
    ) -> np.ndarray:
        """K(L, X) W, (m, B + 1), for the label weights W of the random splits `spec`
        (the rows of this source in order are the pooled sample), W never stored."""
        core = kernel.to_core()
        return self._stream_splits(
            L,
            spec,
            (L.shape[0], spec.n_columns),
            lambda L2, block, splits: _core.split_kernel_sums(L2, block, splits, core, n_threads),
            progress,
        )

    def split_sums_multi(
        self,
        L: np.ndarray,
        kernels: Iterable[Kernel],
        spec: SplitSpec,
        *,
        n_threads: int = 0,
        progress: Progress | None = None,
    ) -> np.ndarray:
        """K_j(L, X) W for every kernel j of ``kernels`` (radial, of one distance), (K, m, B + 1): the sums of
        :meth:`split_sums` for several kernels with the same splits, in one pass over the
        rows (``_core.split_kernel_sums_multi``: the labels drawn once, the distances of
        each tile computed once); to ~1e-13 relative of the one-kernel sums."""
        cores = [k.to_core() for k in kernels]
        return self._stream_splits(
            L,
            spec,
            (len(cores), L.shape[0], spec.n_columns),
            lambda L2, block, splits: _core.split_kernel_sums_multi(L2, block, splits, cores, n_threads),
            progress,
        )

    def _stream_splits(
        self,
        L: np.ndarray,
        spec: SplitSpec,
        shape: tuple[int, ...],
        sums_of: Callable[[np.ndarray, np.ndarray, _core.RandomSplits], np.ndarray],
        progress: Progress | None,
    ) -> np.ndarray:
        """The one pass of :meth:`split_sums` and :meth:`split_sums_multi`: the splits'
        labels drawn block by block in row order (``spec.new()``), ``sums_of(L, block,
        splits)`` added up with compensation into ``shape``, the row counts checked."""
        if self.n_rows is not None and self.n_rows != spec.n_rows:
            raise ValueError(f"{self.name} has {self.n_rows} rows, the splits {spec.n_rows}")
        splits = spec.new()
        acc = CompensatedSum(shape)
        for _, chunk in self.chunks():
            self.check_features(L.shape[1])
            # at most SPLIT_BLOCK_ROWS rows per core call: progress between calls (an
            # in-memory sample is one chunk of all its rows)
            for first in range(0, chunk.shape[0], SPLIT_BLOCK_ROWS):
                L2, block = common_dtype(L, chunk[first : first + SPLIT_BLOCK_ROWS])
                acc.add(sums_of(L2, block, splits))
                if progress is not None:
                    progress(block.shape[0])
        if splits.position != spec.n_rows:
            raise ValueError(f"{self.name} has {splits.position} rows, the splits {spec.n_rows}")
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
        """E_j = K_j(L, X) A for every kernel j of ``kernels`` (radial, of one distance: the
        Euclidean kernels or the l1 ones) and the one-hot matrix A
        of ``bins`` (one int64 per row, in [-1, n_bins); -1 skips the row): (K, m, n_bins),
        E_j[r, g] = sum of k_j(l_r, x_i) over the rows i in bin g, added into ``out`` when
        given (C-contiguous float64). ``rows``: kernel j on the first rows[j] landmarks only
        (E_j's other rows untouched): nested landmark sets share the pass. One pass, all
        kernels at once (``_core.kernel_bin_sums`` block by block)."""
        cores = [k.to_core() for k in kernels]
        bins = core_array(bins, np.int64)
        for start, block in self.chunks():
            self.check_features(L.shape[1])
            L2, block2 = common_dtype(L, block)
            # out None: the core allocates the zeros (plain pages: numpy's huge pages
            # were 12x slower to touch first on the machine of bench/RESULTS.md)
            out = _core.kernel_bin_sums(
                L2, block2, bins[start : start + block.shape[0]], n_bins, cores, n_threads, out, list(rows or [])
            )
            if progress is not None:
                progress(block.shape[0])
        if out is None:  # no rows
            out = np.zeros((len(cores), L.shape[0], n_bins))
        return out

    def diagonal_sum(self, kernel: Kernel, *, weights: Weights | None = None, n_threads: int = 0) -> float:
        """sum_i w_i^2 k(x_i, x_i) (w_i = 1 when ``weights`` is None): the diagonal
        of the unbiased MMD. O(n d)."""
        core = kernel.to_core()
        parts = []
        for start, block in self.chunks():
            diag = _core.kernel_diagonal(block, core, n_threads)
            if weights is not None:
                w = weight_block(weights, start, start + block.shape[0])
                diag = diag * (w * w)
            parts.append(math.fsum(diag))
        return math.fsum(parts)

    def __repr__(self) -> str:
        n = "?" if self.n_rows is None else self.n_rows
        d = "?" if self.n_features is None else self.n_features
        return f"{type(self).__name__}({self.name}: {n} x {d}, {self.dtype})"


class DerivedSource(RowSource):
    """A source read through another, ``inner`` (a scaling of its columns, a subset of its
    rows): the name, dtype, width and column names are inner's, and so are the ways it
    can be read (random access, several passes)."""

    def __init__(self, inner: RowSource) -> None:
        self.inner = inner
        self.name, self.dtype = inner.name, inner.dtype
        self.n_features, self.feature_names = inner.n_features, inner.feature_names

    @property
    def random_access(self) -> bool:
        return self.inner.random_access

    @property
    def reiterable(self) -> bool:
        return self.inner.reiterable


__all__ = [
    "DerivedSource",
    "Progress",
    "RowSource",
    "add_block_sums",
    "core_block_rows",
    "weight_block",
    "weight_total",
]
