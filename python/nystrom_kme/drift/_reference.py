"""The reference of the drift detectors, read once and shared by both: a held-out sample
H of rows (the permutation test's reference units, the online thresholds' streams), the
bandwidths and the landmarks L chosen from the other rows R, R's kernel sums K(L, R) 1
per kernel (its Nyström mean embedding mu_R) and MMD-FUSE's normaliser.

H and everything else are disjoint and drawn without looking at any batch: under H0 the
rows of H and of a new batch are exchangeable given R, so a permutation test that moves
rows between H and the batch has exact level. The reference itself is streamed (any row
source: memmaps, files, chunks, dask), O(m d) memory per pass besides H. R is a row
source of its own (:class:`RestRows`), so that the landmarks come from the library's
one landmark plan (:mod:`nystrom_kme._landmark_plan`: the default m, any sampler,
``n_landmarks="auto"``), as the two-sample test's do from its pooled rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .. import _core
from .._landmark_plan import DefaultLandmarks, plan_landmarks
from .._progress import RowsBar
from .._solve import solve_weights
from .._validation import as_data_matrix, check_positive_int
from ..kernel_collection import KernelCollection
from ..kernels import MEDIAN_SUBSET, Kernel, resolve_kernel
from ..landmark_search import AutoLandmarks
from ..persistence import save
from ..sampling import SamplerLike
from ..sources import RowSource, SourceLike, as_rows, as_source
from ..sources.base import DerivedSource
from ..two_sample.engine import FROBENIUS_SUBSET, mean_squares


@dataclass(frozen=True)
class Reference:
    """What a detector keeps of its reference.

    Attributes
    ----------
    kernels : list of Kernel
        Numeric bandwidths (from R only).
    holdout : ndarray (h, d) float64
        The held-out rows H, in a random order.
    landmarks : ndarray (m, d) float64
        Drawn from R (repeated points kept once).
    sums : ndarray (K, m)
        K(L, R) 1 for each kernel.
    n_rest : int
        |R|.
    mean_sq : ndarray (K,)
        The mean of k(x, y)^2 over distinct pairs of a uniform subsample of R
        (MMD-FUSE's ||K_0||_F^2 per pair).
    """

    kernels: list[Kernel]
    holdout: np.ndarray
    landmarks: np.ndarray
    sums: np.ndarray
    n_rest: int
    mean_sq: np.ndarray

    def check(self) -> None:
        """ValueError unless the fields agree with each other (a saved reference is
        checked on load): shapes, finite values, and sums and normalisers that bounded
        kernels can give (0 <= K(L, R) 1 <= |R|, 0 <= mean k^2 <= 1)."""
        if not self.kernels or not all(k.is_resolved for k in self.kernels):
            raise ValueError("kernels must be a non-empty list of kernels with numeric bandwidths")
        if self.landmarks.ndim != 2 or self.landmarks.shape[0] < 1:
            raise ValueError(f"landmarks must hold at least one row, got shape {self.landmarks.shape}")
        K, (m, d) = len(self.kernels), self.landmarks.shape
        if self.holdout.ndim != 2 or self.holdout.shape[1] != d or self.holdout.shape[0] < 2:
            raise ValueError(f"holdout must hold at least 2 rows of {d} features, got shape {self.holdout.shape}")
        if self.sums.shape != (K, m) or self.mean_sq.shape != (K,):
            raise ValueError(
                f"sums must have shape {(K, m)} and mean_sq {(K,)}, got {self.sums.shape}, {self.mean_sq.shape}"
            )
        if not isinstance(self.n_rest, (int, np.integer)) or self.n_rest < 1:
            raise ValueError(f"n_rest must be a positive integer, got {self.n_rest!r}")
        for name in ("holdout", "landmarks", "sums", "mean_sq"):
            if not np.isfinite(getattr(self, name)).all():
                raise ValueError(f"{name} must be finite")
        radial = np.array([k.radial for k in self.kernels])
        if radial.any():
            slack = 1e-9 * self.n_rest
            sums = self.sums[radial]
            if (sums < -slack).any() or (sums > self.n_rest + slack).any():
                raise ValueError(f"sums must lie in [0, n_rest = {self.n_rest}] for kernels bounded by 1")
            if (self.mean_sq[radial] < 0).any() or (self.mean_sq[radial] > 1 + 1e-12).any():
                raise ValueError(f"mean_sq must lie in [0, 1] for kernels bounded by 1, got {self.mean_sq.tolist()}")
        if (self.mean_sq < 0).any():
            raise ValueError(f"mean_sq must be non-negative, got {self.mean_sq.tolist()}")
        # the same mean over the held-out rows (a sample of the same distribution): a
        # normaliser far from it was not computed from this reference and these kernels
        # (bounded kernels: within a factor 2, or 0.02; the others, of any scale: a factor 4)
        H = frobenius_rows(self.holdout)
        if H.shape[0] >= 50:
            seen = mean_squares(H, self.kernels, 1)
            low = np.where(radial, 0.5 * seen - 0.02, 0.25 * seen)
            high = np.where(radial, 2.0 * seen + 0.02, 4.0 * seen)
            if ((self.mean_sq < low) | (self.mean_sq > high)).any():
                raise ValueError(
                    f"mean_sq {self.mean_sq.tolist()} disagrees with the held-out rows' {seen.tolist()}: "
                    "it was not computed from this reference"
                )

    def embedding(self, j: int, n_threads: int) -> np.ndarray:
        """mu_R's weights for kernel j, (m,): K_m^+ K(L, R) 1 / |R| (the core's solve)."""
        s = np.ascontiguousarray(self.sums[j][:, None] / self.n_rest)
        return solve_weights(self.landmarks, s, self.kernels[j], n_threads).weights[:, 0]


def frobenius_rows(rows: np.ndarray) -> np.ndarray:
    """At most FROBENIUS_SUBSET rows spread evenly over ``rows``: FUSE's normaliser is
    computed on them, as the two-sample test computes it on its pooled rows."""
    return np.ascontiguousarray(rows[:: max(1, rows.shape[0] // FROBENIUS_SUBSET)][:FROBENIUS_SUBSET])


def draw_holdout(n: int, n_holdout: int, rng: np.random.Generator) -> np.ndarray:
    """``n_holdout`` of the n reference rows, uniformly without replacement, sorted."""
    return np.sort(rng.choice(n, size=n_holdout, replace=False))


class RestRows(DerivedSource):
    """The rows of ``src`` outside the sorted rows ``held``, as a row source (R): R's r-th
    row is the source's row r + #{held rows before it}, found by a search in ``held`` (no
    n-sized array); a pass over R is a pass over ``src`` with the held rows dropped.

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_kme.sources import as_source
    >>> R = RestRows(as_source(np.arange(10.0)[:, None]), np.array([2, 3, 7]))
    >>> R.count_rows(), R.take([0, 2, 5]).ravel().tolist()
    (7, [0.0, 4.0, 8.0])
    >>> [block.ravel().tolist() for _, block in R.chunks()]
    [[0.0, 1.0, 4.0, 5.0, 6.0, 8.0, 9.0]]
    """

    def __init__(self, src: RowSource, held: np.ndarray) -> None:
        super().__init__(src)
        self.held = np.asarray(held, dtype=np.int64)
        self._before = self.held - np.arange(self.held.size)  # rows of R before held[i]

    @property
    def n_rows(self) -> int | None:
        n = self.inner.n_rows
        return None if n is None else n - int(self.held.size)

    def count_rows(self) -> int:
        return self.inner.count_rows() - int(self.held.size)

    def rows_of(self, positions: ArrayLike) -> np.ndarray:
        """The source's rows of R's rows ``positions``."""
        r = np.asarray(positions, dtype=np.int64)
        out: np.ndarray = r + np.searchsorted(self._before, r, side="right")
        return out

    def take(self, indices: ArrayLike) -> np.ndarray:
        return self.inner.take(self.rows_of(indices))

    def chunks(self) -> Iterator[tuple[int, np.ndarray]]:
        done = 0
        for start, block in self.inner.chunks():
            lo, hi = np.searchsorted(self.held, [start, start + block.shape[0]])
            if hi > lo:
                keep = np.ones(block.shape[0], dtype=bool)
                keep[self.held[lo:hi] - start] = False
                block = np.ascontiguousarray(block[keep])
            if block.shape[0]:
                yield done, block
                done += block.shape[0]


def as_float64(rows: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(rows, dtype=np.float64)


def reference_source(
    x_ref: SourceLike, preprocess: object, chunk_rows: object
) -> tuple[RowSource, tuple[str, ...] | None]:
    """The reference as a row source, after ``preprocess`` (a callable: then in memory),
    and the column names of ``x_ref`` itself (what every batch is checked against, before
    its own ``preprocess``)."""
    if preprocess is not None and not callable(preprocess):
        raise ValueError(f"preprocess must be a callable or None, got {preprocess!r}")
    rows = None if chunk_rows is None else check_positive_int(chunk_rows, "chunk_rows")
    if preprocess is not None:
        raw, names = as_rows(x_ref, "x_ref")  # a path is read first: preprocess sees rows
        return as_source(as_data_matrix(preprocess(raw), "preprocess(x_ref)"), "x_ref", chunk_rows=rows), names
    src = as_source(x_ref, "x_ref", chunk_rows=rows)
    return src, src.feature_names


def build_reference(
    src: RowSource,
    kernels: Kernel | KernelCollection,
    with_median: bool,
    n_landmarks: int | AutoLandmarks | None,
    sampler: SamplerLike | None,
    n_holdout: int,
    default: DefaultLandmarks,
    rng: np.random.Generator,
    n_threads: int,
    progress: bool | None = None,
) -> Reference:
    """Read the reference ``src`` once: hold out ``n_holdout`` rows (at most half), resolve
    the bandwidths on a subsample of the rest R (the median heuristic's or the
    collection's ``subset`` of rows), choose the landmarks from R by the library's plan
    (``n_landmarks``: m, None for ``default``'s m, or the search; ``sampler``: the policy),
    and sum every kernel over R (one pass per kernel)."""
    n = src.count_rows()
    h = min(n_holdout, n // 2)
    held = draw_holdout(n, h, rng)
    rest = RestRows(src, held)
    size = kernels.subset if isinstance(kernels, KernelCollection) else MEDIAN_SUBSET
    subset = rest.rows_of(np.sort(rng.choice(n - h, size=min(size, n - h), replace=False)))
    # one read for H and the bandwidths' subsample (a pass over a file)
    wanted, where = np.unique(np.concatenate([held, subset]), return_inverse=True)
    rows = as_float64(src.take(wanted))[where]
    sample = rows[h:]
    if isinstance(kernels, Kernel):
        resolved = [resolve_kernel(kernels, [as_source(sample)], rng)]
    else:
        resolved = list(kernels.resolve(sample, rng, with_median=with_median))
    where_rest = "the {n} reference rows outside the held-out ones"
    L = plan_landmarks(rest, resolved, n_landmarks, sampler, rng, n_threads, default=default, rows=where_rest)
    L = as_float64(L)
    holdout = rows[:h][rng.permutation(h)]  # shuffled: random bins
    bar = RowsBar("drift reference", progress, n_rows=n, passes=len(resolved))
    sums = np.empty((len(resolved), L.shape[0]))
    for j, kernel in enumerate(resolved):  # one streamed pass per kernel, minus H's sums
        acc, _ = src.kernel_sums(L, kernel, n_threads=n_threads, progress=bar.update)
        sums[j] = acc.value() - _core.kernel_matrix(L, holdout, kernel.to_core(), n_threads).sum(axis=1)
    bar.close()
    mean_sq = mean_squares(frobenius_rows(sample), resolved, n_threads)
    return Reference(resolved, holdout, L, sums, n - h, mean_sq)


def save_detector(detector: Any, path: Any) -> None:
    """nk.save for a detector, refused with a preprocess callable (no pickle)."""
    if detector.preprocess is not None:
        raise ValueError(
            "a detector with a preprocess callable cannot be saved (no pickle): save the "
            "preprocessing with its own library and build the detector on preprocessed data"
        )
    save(detector, path)


__all__ = [
    "Reference",
    "RestRows",
    "as_float64",
    "build_reference",
    "draw_holdout",
    "frobenius_rows",
    "reference_source",
    "save_detector",
]
