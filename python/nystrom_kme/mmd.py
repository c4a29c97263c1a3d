"""Maximum mean discrepancy: between fitted embeddings (paper Section 5), exact
U/V-statistics by streaming kernel sums, and the linear-time estimator.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from . import _core
from ._validation import (
    as_data_matrix,
    as_weights,
    check_random_state,
    common_dtype,
    n_threads_arg,
)
from .chunked import is_dask_array
from .embedding import KernelMeanEmbedding, NystromKME, inner_product, rkhs_distance
from .kernels import Kernel, get_kernel


def _pair(X: Any, Y: Any) -> tuple[np.ndarray, np.ndarray]:
    X = as_data_matrix(X, "X")
    Y = as_data_matrix(Y, "Y")
    if X.shape[1] != Y.shape[1]:
        raise ValueError(f"X has {X.shape[1]} features but Y has {Y.shape[1]}")
    X, Y = common_dtype(X, Y)
    return X, Y


def _pooled_kernel(kernel: Kernel | str, X: Any, Y: Any, rng: np.random.Generator,
                   take: Callable[[Any, np.ndarray], np.ndarray] | None = None) -> Kernel:
    """Resolve the median heuristic on the pooled sample, so both sides share sigma.

    ``take(A, rows)`` gathers rows (numpy indexing by default; dask arrays pass their own).
    """
    k = get_kernel(kernel)
    if k.is_resolved:
        return k
    take = take or (lambda A, rows: A[rows])
    nx, ny = X.shape[0], Y.shape[0]
    if nx + ny <= 2000:
        pooled = np.concatenate([take(X, np.arange(nx)), take(Y, np.arange(ny))])
    else:
        pooled = np.concatenate([take(X, rng.choice(nx, min(nx, 1000), replace=False)),
                                 take(Y, rng.choice(ny, min(ny, 1000), replace=False))])
    return k.resolve(pooled, rng)


def mmd2(P: Any, Q: Any, *, kernel: Kernel | str = "gaussian", n_landmarks: int | None = None,
         random_state: Any = None, n_threads: int | None = None) -> float:
    """Squared MMD ||mu_P - mu_Q||^2 between two embeddings or two samples.

    With two fitted embeddings (Nyström or empirical, same kernel), this is
    <P, P> + <Q, Q> - 2 <P, Q>; for two Nyström embeddings it is the estimator of
    the paper's Section 5 (separate landmark sets, m1 != m2 allowed), costing
    O((m1 + m2)^2 d). With two arrays X (n1, d) and Y (n2, d), a Nyström embedding
    is fitted on each (``n_landmarks`` each, default sqrt(n) log sqrt(n); the
    median-heuristic bandwidth is taken on the pooled sample) and compared.

    Returns
    -------
    float, >= 0 (clamped against round-off).
    """
    return mmd(P, Q, kernel=kernel, n_landmarks=n_landmarks, random_state=random_state,
               n_threads=n_threads) ** 2


def mmd(P: Any, Q: Any, *, kernel: Kernel | str = "gaussian", n_landmarks: int | None = None,
        random_state: Any = None, n_threads: int | None = None) -> float:
    """MMD ||mu_P - mu_Q|| in the RKHS; see :func:`mmd2` for the arguments.

    P and Q may be dask arrays chunked by rows: both fits then run their row sums
    on the dask workers, with the same draws and result (to round-off) as in
    memory; see :mod:`nystrom_kme.distributed`.
    """
    if isinstance(P, KernelMeanEmbedding) and isinstance(Q, KernelMeanEmbedding):
        return rkhs_distance(P, Q, n_threads=n_threads)
    if isinstance(P, KernelMeanEmbedding) or isinstance(Q, KernelMeanEmbedding):
        raise ValueError("P and Q must both be fitted embeddings or both be arrays")
    if is_dask_array(P) or is_dask_array(Q):
        from .distributed import _pair as pair, take
    else:
        pair, take = _pair, None
    X, Y = pair(P, Q)
    rng = check_random_state(random_state)
    k = _pooled_kernel(kernel, X, Y, rng, take)
    ex = NystromKME(k, n_landmarks=n_landmarks, random_state=rng, n_threads=n_threads).fit(X)
    ey = NystromKME(k, n_landmarks=n_landmarks, random_state=rng, n_threads=n_threads).fit(Y)
    return rkhs_distance(ex, ey, n_threads=n_threads)


def _weighted_self_term(Z: np.ndarray, w: np.ndarray | None, core: _core.Kernel, unbiased: bool,
                        n_threads: int) -> float:
    n = len(Z)
    if w is None:
        total = _core.kernel_total_sum(Z, Z, core, n_threads)
        if not unbiased:
            return total / n**2
        if n < 2:
            raise ValueError("the unbiased MMD needs at least 2 points per sample")
        diag = _core.kernel_diagonal(Z, core, n_threads).sum()
        return (total - diag) / (n * (n - 1))
    quad = float(w @ _core.kernel_sums(Z, Z, w.reshape(-1, 1), core, n_threads)[:, 0])
    if not unbiased:
        return quad
    # Weighted U-statistic: sum_{i != j} w_i w_j k_ij / (1 - sum w_i^2), unbiased
    # for E k(x, x') when the (normalised) weights are fixed.
    w2 = float(w @ w)
    if w2 >= 1.0:
        raise ValueError("the unbiased MMD needs at least 2 points with positive weight")
    diag = float((w * w) @ _core.kernel_diagonal(Z, core, n_threads))
    return (quad - diag) / (1.0 - w2)


def mmd2_exact(X: Any, Y: Any, *, kernel: Kernel | str = "gaussian", unbiased: bool = False,
               weights_x: Any = None, weights_y: Any = None, random_state: Any = None,
               n_threads: int | None = None) -> float:
    """Exact empirical MMD^2 between samples, by streaming kernel sums.

    Biased (V-statistic): mean K_XX + mean K_YY - 2 mean K_XY. Unbiased
    (U-statistic, Gretton et al. 2012, eq. 3): the same with the diagonals
    i = j left out of the within-sample means. Weighted samples (a non-negative
    weight per point, normalised to sum to one) are supported; the weighted
    U-statistic divides the off-diagonal sum by 1 - sum w_i^2.

    Time O((n1 + n2)^2 d); memory O(n1 + n2) (row sums), never an (n1 + n2)^2 matrix.

    Parameters
    ----------
    X : array-like (n1, d);  Y : array-like (n2, d)
    kernel : Kernel or str; "median" bandwidths use the pooled sample.
    unbiased : bool, default=False
    weights_x, weights_y : array-like (n1,), (n2,) or None

    Returns
    -------
    float (the unbiased estimate may be negative).
    """
    X, Y = _pair(X, Y)
    rng = check_random_state(random_state)
    core = _pooled_kernel(kernel, X, Y, rng).to_core()
    nt = n_threads_arg(n_threads)
    wx = None if weights_x is None else as_weights(weights_x, len(X), "weights_x")
    wy = None if weights_y is None else as_weights(weights_y, len(Y), "weights_y")
    xx = _weighted_self_term(X, wx, core, unbiased, nt)
    yy = _weighted_self_term(Y, wy, core, unbiased, nt)
    wy_col = (np.full(len(Y), 1.0 / len(Y)) if wy is None else wy).reshape(-1, 1)
    sx = _core.kernel_sums(X, Y, wy_col, core, nt)[:, 0]
    xy = float(sx.mean() if wx is None else wx @ sx)
    value = xx + yy - 2.0 * xy
    return value if unbiased else max(value, 0.0)


def mmd2_linear(X: Any, Y: Any, *, kernel: Kernel | str = "gaussian", random_state: Any = None) -> float:
    """Linear-time unbiased MMD^2 estimator of Gretton et al. (2012, Lemma 14).

    With n = min(n1, n2) // 2 pairs: mean over i of
    k(x_2i, x_2i+1) + k(y_2i, y_2i+1) - k(x_2i, y_2i+1) - k(x_2i+1, y_2i).
    O(n d) time and memory; higher variance than the quadratic estimators.
    """
    X, Y = _pair(X, Y)
    n = min(len(X), len(Y)) // 2
    if n < 1:
        raise ValueError("the linear-time MMD needs at least 2 points in each sample")
    core = _pooled_kernel(kernel, X, Y, check_random_state(random_state)).to_core()
    x0, x1 = np.ascontiguousarray(X[0:2 * n:2]), np.ascontiguousarray(X[1:2 * n:2])
    y0, y1 = np.ascontiguousarray(Y[0:2 * n:2]), np.ascontiguousarray(Y[1:2 * n:2])
    h = (_core.paired_kernel(x0, x1, core) + _core.paired_kernel(y0, y1, core)
         - _core.paired_kernel(x0, y1, core) - _core.paired_kernel(x1, y0, core))
    return float(h.mean())


__all__ = ["inner_product", "mmd", "mmd2", "mmd2_exact", "mmd2_linear"]
