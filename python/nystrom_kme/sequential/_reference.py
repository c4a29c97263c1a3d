"""The reference of a :class:`~nystrom_kme.SequentialDriftTest`, read once: three disjoint
random sets of rows and the rest.

* S, at most ``SUBSET`` rows (a tenth of the reference at most): the bandwidths, and
  nothing else, so that the kernels do not depend on the rows behind the reference's
  embedding (the margin's concentration bound holds for a kernel fixed before R is seen);
* H, the paired pool: rows each paired once with an observation (exactly fair bets);
* L, the landmarks (m rows, uniformly without replacement, repeated points kept once),
  part of R;
* R, every row outside S and H: its kernel sums K(L, R) 1, one streamed pass per kernel
  (the source's own ``kernel_sums``, minus the rows of S and H), O(m d) memory.

One read of S, H and L (``take`` of their sorted indices), then the passes: any row
source (memmaps, data files, chunks, dask) of any size.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _core
from .._landmark_plan import DefaultLandmarks, distinct_rows
from .._progress import RowsBar
from ..kernel_collection import KernelCollection
from ..kernels import MEDIAN_SUBSET, Kernel, resolve_kernel
from ..sources import RowSource, as_source

#: Rows of S at most (the median heuristic's and the bandwidth grid's subset).
SUBSET = MEDIAN_SUBSET
#: S takes at most this share of the reference.
SUBSET_SHARE = 10
#: The paired pool by default: a quarter of the reference, at most POOL rows.
POOL = 10_000
POOL_SHARE = 4
#: The default m: the paper's ceil(sqrt(N) log sqrt(N)) for the N rows of R, at most 256
#: (a row costs O(K m d): 256 landmarks keep the default kernels above 10^5 rows/s).
DEFAULT_LANDMARKS = DefaultLandmarks(high=256)


@dataclass(frozen=True)
class BettingReference:
    """What a sequential drift test keeps of its reference.

    Attributes
    ----------
    kernels : list of Kernel
        Numeric bandwidths, from S only.
    landmarks : ndarray (m, d) float64
    sums : ndarray (K, m)
        K_j(L, R) 1 for each kernel.
    n_rest : int
        |R|.
    pool : ndarray (h, d) float64
        H, in a random order (the order they are paired in).
    """

    kernels: list[Kernel]
    landmarks: np.ndarray
    sums: np.ndarray
    n_rest: int
    pool: np.ndarray


def split_sizes(n: int, n_holdout: int | None) -> tuple[int, int]:
    """(|S|, |H|) for a reference of n rows (``n_holdout`` None: the default pool)."""
    s = min(SUBSET, max(2, n // SUBSET_SHARE))
    h = min(POOL, n // POOL_SHARE) if n_holdout is None else n_holdout
    if s + h + 2 > n:
        raise ValueError(
            f"the reference has {n} rows: too few for {s} bandwidth rows, n_holdout={h} paired rows and 2 more "
            "(reduce n_holdout)"
        )
    return s, h


def read_reference(
    src: RowSource,
    kernels: Kernel | KernelCollection,
    with_median: bool,
    n_landmarks: int | None,
    n_holdout: int | None,
    rng: np.random.Generator,
    n_threads: int,
    progress: bool | None = None,
) -> BettingReference:
    """Read ``src`` once as the module says: S, H and L drawn together without
    replacement (disjoint), the bandwidths from S (a collection resolved there, with the
    median Gaussian appended for ``with_median``), the sums over R."""
    n = src.count_rows()
    s, h = split_sizes(n, n_holdout)
    rest = n - s - h
    m = min(DEFAULT_LANDMARKS(rest) if n_landmarks is None else n_landmarks, rest)
    drawn = rng.choice(n, size=s + h + m, replace=False)
    wanted, where = np.unique(drawn, return_inverse=True)
    rows = np.ascontiguousarray(src.take(wanted), dtype=np.float64)[where]
    S, H, L = rows[:s], rows[s : s + h], distinct_rows(np.ascontiguousarray(rows[s + h :]))
    if isinstance(kernels, Kernel):
        resolved = [resolve_kernel(kernels, [as_source(S)], rng)]
    else:
        resolved = list(kernels.resolve(S, rng, with_median=with_median))
    held = np.ascontiguousarray(rows[: s + h])
    bar = RowsBar("sequential reference", progress, n_rows=n, passes=len(resolved))
    sums = np.empty((len(resolved), L.shape[0]))
    for j, kernel in enumerate(resolved):  # one streamed pass per kernel, minus S's and H's rows
        acc, _ = src.kernel_sums(L, kernel, n_threads=n_threads, progress=bar.update)
        sums[j] = acc.value() - _core.kernel_matrix(L, held, kernel.to_core(), n_threads).sum(axis=1)
    bar.close()
    return BettingReference(resolved, L, sums, rest, np.ascontiguousarray(H))


__all__ = ["DEFAULT_LANDMARKS", "POOL", "SUBSET", "BettingReference", "read_reference", "split_sizes"]
