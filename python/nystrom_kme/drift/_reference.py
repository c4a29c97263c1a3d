"""The reference of the drift detectors, read once and shared by both: a held-out sample
H of rows (the permutation test's reference units, the online thresholds' streams), the
landmarks L and the bandwidths chosen from the other rows R, R's kernel sums K(L, R) 1
per kernel (its Nyström mean embedding mu_R) and MMD-FUSE's normaliser.

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
from .._landmark_count import cap_landmarks
from .._progress import RowsBar
from .._scaling import peek_rows, warn_bandwidths, warn_units
from .._solve import solve_weights
from .._validation import as_data_matrix, check_positive_int
from ..bounds import default_n_landmarks
from ..kernel_collection import KernelCollection
from ..kernels import Kernel, median_distance
from ..persistence import save
from ..sources import RowSource, SourceLike, as_rows, as_source
from ..two_sample.engine import FROBENIUS_SUBSET, mean_squares

#: Rows of R (at most) whose distances set the bandwidths (FUSE's normalisers take the
#: first FROBENIUS_SUBSET of them, as the two-sample test does of its pooled rows).
SUBSET = 1000


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
        if all(k.radial for k in self.kernels):
            slack = 1e-9 * self.n_rest
            if (self.sums < -slack).any() or (self.sums > self.n_rest + slack).any():
                raise ValueError(f"sums must lie in [0, n_rest = {self.n_rest}] for kernels bounded by 1")
            if (self.mean_sq < 0).any() or (self.mean_sq > 1 + 1e-12).any():
                raise ValueError(f"mean_sq must lie in [0, 1] for kernels bounded by 1, got {self.mean_sq.tolist()}")
            # the same mean over the held-out rows (a sample of the same distribution): a
            # normaliser far from it was not computed from this reference
            H = frobenius_rows(self.holdout)
            if H.shape[0] >= 50:
                seen = mean_squares(H, self.kernels, 1)
                if ((self.mean_sq < 0.5 * seen - 0.02) | (self.mean_sq > 2.0 * seen + 0.02)).any():
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


def rest_rows(n: int, held: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` rows of R = {0..n-1} minus ``held`` (sorted), uniformly without
    replacement, sorted: positions in R mapped past the held rows (no n-sized array)."""
    positions = np.sort(rng.choice(n - held.size, size=count, replace=False))
    # the r-th row of R is r + #{held rows before it}; held[i] - i rows of R precede held[i]
    return positions + np.searchsorted(held - np.arange(held.size), positions, side="right")


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
    n_landmarks: object,
    n_holdout: int,
    max_default_rows: int,
    rng: np.random.Generator,
    n_threads: int,
    progress: bool | None = None,
) -> Reference:
    """Read the reference ``src`` once: hold out ``n_holdout`` rows (at most half), resolve
    the bandwidths on a subsample of the rest, draw m landmarks from the rest (None: the
    paper's m for min(|R|, ``max_default_rows``) rows; above |R| capped with a warning, as
    every entry point does), and sum every kernel over the rest (one pass per kernel)."""
    n = src.count_rows()
    h = min(n_holdout, n // 2)
    m = (
        default_n_landmarks(min(n - h, max_default_rows))
        if n_landmarks is None
        else check_positive_int(n_landmarks, "n_landmarks")
    )
    m = cap_landmarks(m, n - h, "the {n} reference rows outside the held-out ones", stacklevel=5)
    held = draw_holdout(n, h, rng)
    subset = rest_rows(n, held, min(SUBSET, n - h), rng)
    chosen = rest_rows(n, held, m, rng)
    # one read for H, the bandwidths' subsample and the landmarks (a pass over a file)
    wanted, where = np.unique(np.concatenate([held, subset, chosen]), return_inverse=True)
    rows = as_float64(src.take(wanted))[where]
    holdout = rows[:h][rng.permutation(h)]  # shuffled: random bins
    sample = rows[h : h + subset.size]
    L = np.unique(rows[h + subset.size :], axis=0)
    if isinstance(kernels, Kernel):
        resolved = [
            kernels if kernels.is_resolved else kernels.with_bandwidth(median_distance(sample, random_state=rng))
        ]
    else:
        resolved = list(kernels.resolve(sample, rng, with_median=with_median))
    bar = RowsBar("drift reference", progress, n_rows=n, passes=len(resolved))
    sums = np.empty((len(resolved), L.shape[0]))
    for j, kernel in enumerate(resolved):  # one streamed pass per kernel, minus H's sums
        acc, _ = src.kernel_sums(L, kernel, n_threads=n_threads, progress=bar.update)
        sums[j] = acc.value() - _core.kernel_matrix(L, holdout, kernel.to_core(), n_threads).sum(axis=1)
    bar.close()
    mean_sq = mean_squares(frobenius_rows(sample), resolved, n_threads)
    return Reference(resolved, holdout, L, sums, n - h, mean_sq)


def warn_reference(src: RowSource, single: Kernel | None, collection: KernelCollection | None) -> None:
    """The unit and bandwidth warnings of :mod:`nystrom_kme._scaling` on up to 500 reference
    rows (:func:`~nystrom_kme._scaling.peek_rows`: no extra pass over the data)."""
    rows = peek_rows(src, 500)
    if rows is None:
        return
    names = list(src.feature_names) if src.feature_names else None
    warn_units(rows, names, "the drift reference", stacklevel=5)
    given = [single] if single is not None else list(collection.families) if collection is not None else []
    warn_bandwidths(rows, [k for k in given if k.is_resolved], "the drift reference", stacklevel=5)


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
    "build_reference",
    "draw_holdout",
    "reference_source",
    "rest_rows",
    "save_detector",
    "warn_reference",
]
