"""Maximum mean discrepancy between two samples or two fitted embeddings.

``mmd2`` (the Nyström estimator of the paper's Section 5) is the primary
function and ``mmd`` its square root; ``mmd2_exact`` gives the exact U- and
V-statistics by streaming kernel sums, ``mmd2_linear`` the linear-time estimator.
Samples may be in-memory arrays or any source of :mod:`nystrom_kme.sources`
(memmaps, HDF5/zarr datasets, iterables of chunks, dask arrays), with per-row
``sample_weight_x`` / ``sample_weight_y``. All return plain Python floats;
``mmd2`` and ``mmd2_exact`` with ``return_info=True`` return an :class:`MMDEstimate`,
the value with the kernel (bandwidth resolved) and the landmark counts it used.

(The module is ``mmd_estimators``, not ``mmd``: ``nystrom_kme.mmd`` is the function.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal, overload

import numpy as np
from numpy.typing import ArrayLike

from . import _core
from ._compensated import fsum_dot
from ._validation import (
    RandomStateLike,
    Weights,
    as_data_matrix,
    check_not_sparse,
    check_random_state,
    check_sample_weight,
    n_threads_arg,
    normalised_weights,
    scale_weights,
)
from .embedding import KernelMeanEmbedding, squared_distance
from .kernels import Kernel, resolve_kernel
from .landmark_search import AutoLandmarks
from .nystrom import NystromKME
from .sources import RowSource, SourceLike, as_source_pair


@dataclass(frozen=True)
class MMDEstimate:
    """An MMD^2 estimate with what it was computed with (``return_info=True``).

    Attributes
    ----------
    mmd2 : float
        The estimate, as the function returns it without ``return_info``.
    kernel : Kernel
        The kernel used, its bandwidth resolved (the median heuristic on the pooled
        sample when it was asked for).
    n_landmarks : tuple of two ints, or None
        (m1, m2): the landmarks of each sample's Nyström embedding (:func:`mmd2` on
        samples or on two fitted NystromKME), None otherwise (exact estimates, and
        embeddings that are not both Nyström ones).

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> rng = np.random.default_rng(0)
    >>> X, Y = rng.normal(size=(2000, 2)), rng.normal(size=(1500, 2)) + 1.0
    >>> est = nk.mmd2(X, Y, random_state=0, return_info=True)
    >>> est.n_landmarks == (nk.default_n_landmarks(2000), nk.default_n_landmarks(1500))
    True
    >>> est.mmd2 == nk.mmd2(X, Y, random_state=0), est.kernel.is_resolved
    (True, True)
    >>> bool(np.isclose(est.mmd, nk.mmd(X, Y, random_state=0)))
    True
    """

    mmd2: float
    kernel: Kernel
    n_landmarks: tuple[int, int] | None

    @property
    def mmd(self) -> float:
        """The MMD, sqrt(max(mmd2, 0)) (an unbiased estimate may be negative)."""
        return math.sqrt(max(self.mmd2, 0.0))


def _nystrom_sizes(a: KernelMeanEmbedding, b: KernelMeanEmbedding) -> tuple[int, int] | None:
    if isinstance(a, NystromKME) and isinstance(b, NystromKME):
        return a.fitted()[0].shape[0], b.fitted()[0].shape[0]
    return None


@overload
def mmd2(
    X: SourceLike | KernelMeanEmbedding,
    Y: SourceLike | KernelMeanEmbedding,
    *,
    kernel: Kernel | str = "gaussian",
    n_landmarks: int | str | AutoLandmarks | None = None,
    sample_weight_x: ArrayLike | None = None,
    sample_weight_y: ArrayLike | None = None,
    random_state: RandomStateLike = None,
    n_threads: int | None = None,
    chunk_rows: int | None = None,
    return_info: Literal[False] = False,
) -> float: ...
@overload
def mmd2(
    X: SourceLike | KernelMeanEmbedding,
    Y: SourceLike | KernelMeanEmbedding,
    *,
    kernel: Kernel | str = "gaussian",
    n_landmarks: int | str | AutoLandmarks | None = None,
    sample_weight_x: ArrayLike | None = None,
    sample_weight_y: ArrayLike | None = None,
    random_state: RandomStateLike = None,
    n_threads: int | None = None,
    chunk_rows: int | None = None,
    return_info: Literal[True],
) -> MMDEstimate: ...
@overload
def mmd2(
    X: SourceLike | KernelMeanEmbedding,
    Y: SourceLike | KernelMeanEmbedding,
    *,
    kernel: Kernel | str = "gaussian",
    n_landmarks: int | str | AutoLandmarks | None = None,
    sample_weight_x: ArrayLike | None = None,
    sample_weight_y: ArrayLike | None = None,
    random_state: RandomStateLike = None,
    n_threads: int | None = None,
    chunk_rows: int | None = None,
    return_info: bool = False,
) -> float | MMDEstimate: ...


def mmd2(
    X: SourceLike | KernelMeanEmbedding,
    Y: SourceLike | KernelMeanEmbedding,
    *,
    kernel: Kernel | str = "gaussian",
    n_landmarks: int | str | AutoLandmarks | None = None,
    sample_weight_x: ArrayLike | None = None,
    sample_weight_y: ArrayLike | None = None,
    random_state: RandomStateLike = None,
    n_threads: int | None = None,
    chunk_rows: int | None = None,
    return_info: bool = False,
) -> float | MMDEstimate:
    """Squared MMD ||mu_X - mu_Y||^2 between two samples or two fitted embeddings.

    With two fitted embeddings (Nyström or empirical, same kernel) this is
    <X, X> + <Y, Y> - 2 <X, Y>; for two Nyström embeddings it is the estimator of the
    paper's Section 5 (separate landmark sets, m1 != m2 allowed), costing
    O((m1 + m2)^2 d). With two samples, a Nyström embedding is fitted on each
    (``n_landmarks`` each, default sqrt(n) log sqrt(n); a "median" bandwidth is
    taken on the pooled sample) and compared: O((n1 + n2) m d + m^3).

    Parameters
    ----------
    X, Y : array-like (n1, d) and (n2, d), sources, or fitted KernelMeanEmbedding
    kernel : Kernel or str, default="gaussian"
    n_landmarks : int, None, "auto", "bound" or AutoLandmarks
        As in :class:`NystromKME`, for each sample. "auto" chooses m per sample by the
        a-posteriori search (:mod:`nystrom_kme.landmark_search`): each embedding is then
        certified within ``tol`` x its own statistical error of the empirical one, so
        the MMD estimate is within ``tol`` (sigma_X + sigma_Y) of the MMD between the
        two empirical embeddings (checked over repetitions in the tests).
    sample_weight_x, sample_weight_y : array-like (n1,), (n2,) or None
        Non-negative per-row weights of each sample.
    random_state : None, int or numpy Generator
    n_threads : int or None
    chunk_rows : int or None
        Rows per read for array-like sources (see :class:`nystrom_kme.NystromKME`).
    return_info : bool, default=False
        Return an :class:`MMDEstimate` (the value, the resolved kernel and the m of
        each embedding) instead of the float.

    Returns
    -------
    float, >= 0 (clamped against round-off); an MMDEstimate with ``return_info``.

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> rng = np.random.default_rng(0)
    >>> X, Y = rng.normal(size=(2000, 2)), rng.normal(size=(2000, 2)) + 1.0
    >>> nk.mmd2(X, Y, kernel=nk.Gaussian(1.0), random_state=0) > 0.1
    True
    """
    if isinstance(X, KernelMeanEmbedding) and isinstance(Y, KernelMeanEmbedding):
        value = squared_distance(X, Y, n_threads=n_threads)
        return MMDEstimate(value, X.fitted()[2], _nystrom_sizes(X, Y)) if return_info else value
    if isinstance(X, KernelMeanEmbedding) or isinstance(Y, KernelMeanEmbedding):
        raise ValueError("X and Y must both be fitted embeddings or both be samples")
    check_not_sparse(X, "X")
    check_not_sparse(Y, "Y")
    sx, sy = as_source_pair(X, Y, chunk_rows=chunk_rows)
    rng = check_random_state(random_state)
    k = resolve_kernel(kernel, [sx, sy], rng)
    ex = NystromKME(k, n_landmarks=n_landmarks, random_state=rng, n_threads=n_threads).fit(
        sx, sample_weight=sample_weight_x
    )
    ey = NystromKME(k, n_landmarks=n_landmarks, random_state=rng, n_threads=n_threads).fit(
        sy, sample_weight=sample_weight_y
    )
    value = squared_distance(ex, ey, n_threads=n_threads)
    return MMDEstimate(value, k, _nystrom_sizes(ex, ey)) if return_info else value


def mmd(X: SourceLike | KernelMeanEmbedding, Y: SourceLike | KernelMeanEmbedding, **kwargs: Any) -> float | MMDEstimate:
    """MMD ||mu_X - mu_Y||, the square root of :func:`mmd2` (same arguments; with
    ``return_info=True`` the same :class:`MMDEstimate`, whose ``mmd`` is this value).

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> rng = np.random.default_rng(0)
    >>> X, Y = rng.normal(size=(2000, 2)), rng.normal(size=(2000, 2)) + 1.0
    >>> d = nk.mmd(X, Y, kernel=nk.Gaussian(1.0), random_state=0)
    >>> bool(np.isclose(d ** 2, nk.mmd2(X, Y, kernel=nk.Gaussian(1.0), random_state=0)))
    True
    """
    value = mmd2(X, Y, **kwargs)
    return value if isinstance(value, MMDEstimate) else math.sqrt(value)


def _normalised(sample_weight: ArrayLike | None, n: int, name: str) -> Weights | None:
    w = check_sample_weight(sample_weight, n, name=name)
    if w is None:
        return None
    if not isinstance(w, np.ndarray):  # dask weights: normalised lazily
        scaled = scale_weights(w)[0]
        return scaled / scaled.sum().compute()
    return normalised_weights(w)


def _cross(
    sa: RowSource, wa: np.ndarray | None, sb: RowSource, wb: np.ndarray | None, kernel: Kernel, n_threads: int
) -> float:
    """sum_ij a_i b_j k(x_i, y_j) with a, b the normalised weights (1/n when None):
    blocks of A against a streamed pass over B, O(n_a n_b d) time, O(block) memory."""
    na = sa.count_rows()
    parts = []
    for start, block in sa.chunks():
        acc, total = sb.kernel_sums(block, kernel, weights=wb, n_threads=n_threads)
        sums = acc.value() / (total if wb is None else 1.0)  # sum_j b_j k(x_i, y_j)
        a = (
            np.full(block.shape[0], 1.0 / na)
            if wa is None
            else np.asarray(wa[start : start + block.shape[0]], dtype=np.float64)
        )
        parts.append(fsum_dot(a, sums))  # not BLAS: the same bits for any thread count
    return math.fsum(parts)


def _within(src: RowSource, w: np.ndarray | None, kernel: Kernel, unbiased: bool, n_threads: int) -> float:
    """The within-sample mean of k: V-statistic, or U-statistic without the diagonal
    (weighted: sum_{i != j} w_i w_j k_ij / (1 - sum w_i^2), unbiased for fixed weights)."""
    n = src.count_rows()
    quad = _cross(src, w, src, w, kernel, n_threads)
    if not unbiased:
        return quad
    if w is None:
        if n < 2:
            raise ValueError("the unbiased MMD needs at least 2 points per sample")
        diag = src.diagonal_sum(kernel, n_threads=n_threads) / n**2
        return (quad - diag) * n / (n - 1)
    w2 = fsum_dot(w, w) if isinstance(w, np.ndarray) else float((w * w).sum().compute())
    if w2 >= 1.0:
        raise ValueError("the unbiased MMD needs at least 2 points with positive weight")
    diag = src.diagonal_sum(kernel, weights=w, n_threads=n_threads)
    return (quad - diag) / (1.0 - w2)


@overload
def mmd2_exact(
    X: SourceLike,
    Y: SourceLike,
    *,
    kernel: Kernel | str = "gaussian",
    unbiased: bool = False,
    sample_weight_x: ArrayLike | None = None,
    sample_weight_y: ArrayLike | None = None,
    random_state: RandomStateLike = None,
    n_threads: int | None = None,
    chunk_rows: int | None = None,
    return_info: Literal[False] = False,
) -> float: ...
@overload
def mmd2_exact(
    X: SourceLike,
    Y: SourceLike,
    *,
    kernel: Kernel | str = "gaussian",
    unbiased: bool = False,
    sample_weight_x: ArrayLike | None = None,
    sample_weight_y: ArrayLike | None = None,
    random_state: RandomStateLike = None,
    n_threads: int | None = None,
    chunk_rows: int | None = None,
    return_info: Literal[True],
) -> MMDEstimate: ...
@overload
def mmd2_exact(
    X: SourceLike,
    Y: SourceLike,
    *,
    kernel: Kernel | str = "gaussian",
    unbiased: bool = False,
    sample_weight_x: ArrayLike | None = None,
    sample_weight_y: ArrayLike | None = None,
    random_state: RandomStateLike = None,
    n_threads: int | None = None,
    chunk_rows: int | None = None,
    return_info: bool = False,
) -> float | MMDEstimate: ...


def mmd2_exact(
    X: SourceLike,
    Y: SourceLike,
    *,
    kernel: Kernel | str = "gaussian",
    unbiased: bool = False,
    sample_weight_x: ArrayLike | None = None,
    sample_weight_y: ArrayLike | None = None,
    random_state: RandomStateLike = None,
    n_threads: int | None = None,
    chunk_rows: int | None = None,
    return_info: bool = False,
) -> float | MMDEstimate:
    """Exact empirical MMD^2 between two samples, by streaming kernel sums.

    Biased (V-statistic): mean K_XX + mean K_YY - 2 mean K_XY. Unbiased
    (U-statistic, Gretton et al. 2012, eq. 3): the same with the diagonals i = j
    left out of the within-sample means. With weights (non-negative, normalised to
    sum to one per sample) the weighted U-statistic divides the off-diagonal sum by
    1 - sum w_i^2.

    Time O((n1 + n2)^2 d); memory O(block) beyond the inputs, never an n x n matrix.
    Streamed sources are read once per block of the other side.

    Parameters
    ----------
    X, Y : array-like (n1, d) and (n2, d), or sources
    kernel : Kernel or str; "median" bandwidths use the pooled sample.
    unbiased : bool, default=False
    sample_weight_x, sample_weight_y : array-like (n1,), (n2,) or None
    random_state, n_threads, chunk_rows : see :func:`mmd2`
    return_info : bool, default=False
        Return an :class:`MMDEstimate` (the value and the resolved kernel;
        ``n_landmarks`` None) instead of the float.

    Returns
    -------
    float (the unbiased estimate may be negative; the biased one is clamped at 0); an
    MMDEstimate with ``return_info``.

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> rng = np.random.default_rng(0)
    >>> X, Y = rng.normal(size=(1000, 2)), rng.normal(size=(1000, 2))
    >>> abs(nk.mmd2_exact(X, Y, kernel=nk.Gaussian(1.0), unbiased=True)) < 0.01   # same law
    True
    >>> nk.mmd2_exact(X, Y + 1.0, kernel=nk.Gaussian(1.0)) > 0.1
    True
    """
    check_not_sparse(X, "X")
    check_not_sparse(Y, "Y")
    sx, sy = as_source_pair(X, Y, chunk_rows=chunk_rows)
    k = resolve_kernel(kernel, [sx, sy], check_random_state(random_state))
    nt = n_threads_arg(n_threads)
    wx = _normalised(sample_weight_x, sx.count_rows(), "sample_weight_x")
    wy = _normalised(sample_weight_y, sy.count_rows(), "sample_weight_y")
    value = _within(sx, wx, k, unbiased, nt) + _within(sy, wy, k, unbiased, nt) - 2.0 * _cross(sx, wx, sy, wy, k, nt)
    value = float(value) if unbiased else max(float(value), 0.0)
    return MMDEstimate(value, k, None) if return_info else value


def mmd2_linear(
    X: ArrayLike, Y: ArrayLike, *, kernel: Kernel | str = "gaussian", random_state: RandomStateLike = None
) -> float:
    """Linear-time unbiased MMD^2 estimator of Gretton et al. (2012, Lemma 14).

    With n = min(n1, n2) // 2 pairs: mean over i of
    k(x_2i, x_2i+1) + k(y_2i, y_2i+1) - k(x_2i, y_2i+1) - k(x_2i+1, y_2i).
    O(n d) time and memory (in-memory samples); higher variance than the quadratic
    estimators.

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> rng = np.random.default_rng(0)
    >>> X, Y = rng.normal(size=(5000, 2)), rng.normal(size=(5000, 2)) + 1.0
    >>> nk.mmd2_linear(X, Y, kernel=nk.Gaussian(1.0)) > 0.1
    True
    """
    X, Y = as_data_matrix(X, "X"), as_data_matrix(Y, "Y")
    sx, sy = as_source_pair(X, Y)
    n = min(len(X), len(Y)) // 2
    if n < 1:
        raise ValueError("the linear-time MMD needs at least 2 points in each sample")
    core = resolve_kernel(kernel, [sx, sy], check_random_state(random_state)).to_core()
    if X.dtype != Y.dtype:
        X, Y = X.astype(np.float64), Y.astype(np.float64)
    x0, x1 = np.ascontiguousarray(X[0 : 2 * n : 2]), np.ascontiguousarray(X[1 : 2 * n : 2])
    y0, y1 = np.ascontiguousarray(Y[0 : 2 * n : 2]), np.ascontiguousarray(Y[1 : 2 * n : 2])
    h = (
        _core.paired_kernel(x0, x1, core)
        + _core.paired_kernel(y0, y1, core)
        - _core.paired_kernel(x0, y1, core)
        - _core.paired_kernel(x1, y0, core)
    )
    return float(h.mean())


__all__ = ["MMDEstimate", "mmd", "mmd2", "mmd2_exact", "mmd2_linear"]
