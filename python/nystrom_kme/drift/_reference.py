"""The reference of a drift detector, read once: a held-out sample H of rows (the
permutation test's reference units), the landmarks L and the bandwidths chosen from the
other rows R, and R's kernel sums K(L, R) 1 per kernel (its Nyström mean embedding).

H and everything else are disjoint and drawn without looking at any batch: under H0 the
rows of H and of a new batch are exchangeable given R, so a permutation test that moves
rows between H and the batch has exact level. The reference itself is streamed (any row
source: memmaps, files, chunks, dask), O(m d) memory per pass besides H.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _core
from .._validation import as_data_matrix, check_positive_int
from ..kernels import Kernel
from ..persistence import save
from ..sources import RowSource, SourceLike, as_source
from ..sources.base import Progress

#: Rows of R (at most) whose distances set the bandwidths and FUSE's normalisers.
SUBSET = 1000


@dataclass(frozen=True)
class Reference:
    """What a detector keeps of its reference.

    holdout (h, d) float64: the held-out rows H; landmarks (m, d) float64, drawn from R;
    sums (K, m): K(L, R) 1 for each kernel; n_rest: |R|; mean_sq (K,): the mean of
    k(x, y)^2 over distinct pairs of a uniform subsample of R (MMD-FUSE's ||K_0||_F^2 per
    pair)."""

    holdout: np.ndarray
    landmarks: np.ndarray
    sums: np.ndarray
    n_rest: int
    mean_sq: np.ndarray


def draw_holdout(n: int, n_holdout: int, rng: np.random.Generator) -> np.ndarray:
    """``n_holdout`` of the n reference rows, uniformly without replacement, sorted."""
    return np.sort(rng.choice(n, size=n_holdout, replace=False))


def rest_rows(n: int, held: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` rows of R = {0..n-1} minus ``held`` (sorted), uniformly without
    replacement, sorted: positions in R mapped past the held rows (no n-sized array)."""
    positions = np.sort(rng.choice(n - held.size, size=count, replace=False))
    # the r-th row of R is r + #{held rows <= it}: shift by the held rows before each
    out = positions.copy()
    for h in held:  # held is sorted: each shifts the positions at or after it
        out[out >= h] += 1
    return out


def mean_squares(rows: np.ndarray, kernels: list[Kernel], n_threads: int) -> np.ndarray:
    """The mean of k(x, y)^2 over the distinct pairs of ``rows``, per kernel."""
    r = rows.shape[0]
    out = np.empty(len(kernels))
    for j, kernel in enumerate(kernels):
        K = _core.kernel_matrix(rows, rows, kernel.to_core(), n_threads)
        out[j] = (float(np.sum(K * K)) - float(np.sum(np.diag(K) ** 2))) / (r * (r - 1))
    return out


def rest_sums(
    src: RowSource,
    holdout: np.ndarray,
    L: np.ndarray,
    kernels: list[Kernel],
    n_threads: int,
    progress: Progress | None = None,
) -> np.ndarray:
    """K(L, R) 1 per kernel (K, m): one streamed pass over all rows per kernel, minus the
    held-out rows' sums."""
    out = np.empty((len(kernels), L.shape[0]))
    for j, kernel in enumerate(kernels):
        acc, _ = src.kernel_sums(L, kernel, n_threads=n_threads, progress=progress)
        held = _core.kernel_matrix(L, holdout, kernel.to_core(), n_threads).sum(axis=1)
        out[j] = acc.value() - held
    return out


def as_float64(rows: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(rows, dtype=np.float64)


def reference_source(x_ref: SourceLike, preprocess: object, chunk_rows: object) -> RowSource:
    """The reference as a row source, after ``preprocess`` (a callable: then in memory)."""
    if preprocess is not None and not callable(preprocess):
        raise ValueError(f"preprocess must be a callable or None, got {preprocess!r}")
    if preprocess is not None:
        x_ref = as_data_matrix(preprocess(x_ref), "preprocess(x_ref)")
    rows = None if chunk_rows is None else check_positive_int(chunk_rows, "chunk_rows")
    return as_source(x_ref, "x_ref", chunk_rows=rows)


def save_detector(detector: Any, path: Any) -> None:
    """nk.save for a detector, refused with a preprocess callable (no pickle)."""
    if detector.preprocess is not None:
        raise ValueError(
            "a detector with a preprocess callable cannot be saved (no pickle): save the "
            "preprocessing with its own library and build the detector on preprocessed data"
        )
    save(detector, path)


__all__ = [
    "SUBSET",
    "Reference",
    "as_float64",
    "draw_holdout",
    "mean_squares",
    "reference_source",
    "rest_rows",
    "rest_sums",
    "save_detector",
]
