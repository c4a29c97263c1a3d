"""The effect size of a test: the MMD of one kernel with a confidence interval, for the
two-sample tests and the drift detectors alike (one interval, one level), from what the
test's own pass over the data computed (no second pass).

The interval is MMD^2 +- z SE on the squared scale, the square roots of its ends
clipped at 0, with SE^2 the sum of the first-order (witness function) variance and the
second-order variance that dominates near H0 (Gretton et al. 2012, Sec. 6; Sutherland et
al. 2017, the variance of the unbiased MMD^2). In the Nyström features phi of landmarks L
the two distributions' mean embeddings differ by delta, ||delta||^2 is the MMD^2 and the
witness is f(z) = <phi(z), delta>.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

from .. import _core
from .._validation import common_dtype
from ..kernels import Kernel
from ..sources import RowSource
from .results import Effect

#: The level of the effect size's interval.
LEVEL = 0.95
#: Rows per sample whose witness values give its variance (relative SE ~ 3%).
WITNESS_ROWS = 2000


def interval(kernel: Kernel, mmd2: float, variance: float, level: float = LEVEL) -> Effect:
    """The MMD of ``kernel`` from an estimate ``mmd2`` of MMD^2 and its variance: sqrt of
    mmd2 and of mmd2 -+ z sqrt(variance), each clipped at 0 (z the two-sided normal
    quantile of ``level``).

    >>> import nystrom_kme as nk
    >>> e = interval(nk.Gaussian(1.0), 0.04, 1e-4)
    >>> round(e.mmd, 4), round(e.low, 4), round(e.high, 4)
    (0.2, 0.1428, 0.2441)
    """
    z = NormalDist().inv_cdf(0.5 + level / 2)
    se = math.sqrt(max(variance, 0.0))
    point = math.sqrt(max(mmd2, 0.0))
    low = math.sqrt(max(mmd2 - z * se, 0.0))
    high = math.sqrt(max(mmd2 + z * se, 0.0))
    return Effect(kernel, point, min(low, point), max(high, point), level)


def _witness_variance(
    src: RowSource, L: np.ndarray, alpha: np.ndarray, kernel: Kernel, nt: int, rng: np.random.Generator
) -> float:
    """Var f over the rows of ``src``, f(z) = k(z, L) alpha: from WITNESS_ROWS rows drawn
    uniformly (every row when there are fewer), not another pass over the data."""
    n = src.count_rows()
    rows = (
        np.arange(n)
        if n <= WITNESS_ROWS or not src.random_access
        else np.sort(rng.choice(n, WITNESS_ROWS, replace=False))
    )
    if src.random_access:
        blocks = [np.asarray(src.take(rows))]
    else:  # a stream read once more, as a last resort
        blocks = [np.asarray(b) for _, b in src.chunks()]
    parts = []
    for block in blocks:
        rows_b, marks = common_dtype(block, L)
        parts.append(_core.kernel_sums(rows_b, marks, alpha, kernel.to_core(), nt)[:, 0])
    f = np.concatenate(parts)
    return float(np.var(f, ddof=1)) if f.size > 1 else 0.0


def effect_size(
    sx: RowSource,
    sy: RowSource,
    L: np.ndarray,
    kernel: Kernel,
    mmd2: float,
    permutation_sd: float,
    alpha: np.ndarray,
    nt: int,
    rng: np.random.Generator,
) -> Effect:
    """The MMD of ``kernel`` between the samples of ``sx`` and ``sy``: ``mmd2`` (the test's
    unbiased estimate) with SE^2 = 4 (Var_X f / n1 + Var_Y f / n2) + ``permutation_sd``^2
    (the permutation spread of the statistic: its second-order variance). ``alpha`` are
    the landmark weights of the witness f = k(., L) alpha, the observed split's
    K(L, X) 1 / n1 - K(L, Y) 1 / n2 through the test's own factor of K_m (the minimum-norm
    solve of K_m alpha = s gives the same witness, but factorised K_m again: 0.6 s of the
    default test at 10^6 rows per sample), so the variances cost WITNESS_ROWS rows per
    sample."""
    n1, n2 = sx.count_rows(), sy.count_rows()
    alpha = np.ascontiguousarray(np.asarray(alpha, dtype=np.float64).reshape(-1, 1))
    var_x = _witness_variance(sx, L, alpha, kernel, nt, rng)
    var_y = _witness_variance(sy, L, alpha, kernel, nt, rng)
    return interval(kernel, mmd2, 4.0 * (var_x / n1 + var_y / n2) + permutation_sd**2)


def distance(
    kernel: Kernel, batch: np.ndarray, covariance: np.ndarray, reference_mean: np.ndarray, n_reference: int
) -> Effect:
    """The MMD between a batch's distribution and a reference's, in the features of a
    frozen Nyström reference: the batch's features ``batch`` (b, r), the reference rows'
    feature ``covariance`` Sigma (r, r) and their mean ``reference_mean`` over its
    ``n_reference`` rows.

    MMD^2 = ||mean_b - mu_R||^2 - tr(S_b) / b - tr(Sigma) / n_R is unbiased (the reference's
    own error included: E ||mu_R - mu||^2 = tr(Sigma) / n_R); its variance is the
    first-order 4 (Var_b f / b + delta^T Sigma delta / n_R) plus the second-order
    2 ||Sigma||_F^2 (1 / b + 1 / n_R)^2 (the null's)."""
    b = batch.shape[0]
    mean = batch.mean(axis=0)
    delta = mean - reference_mean
    centred_b = batch - mean
    trace_b = float(np.einsum("ir,ir->", centred_b, centred_b)) / (b - 1)
    mmd2 = float(delta @ delta) - trace_b / b - float(np.trace(covariance)) / n_reference
    f = batch @ delta
    first = 4.0 * (float(np.var(f, ddof=1)) / b + float(delta @ covariance @ delta) / n_reference)
    second = 2.0 * float(np.sum(covariance * covariance)) * (1.0 / b + 1.0 / n_reference) ** 2
    return interval(kernel, mmd2, first + second)


__all__ = ["LEVEL", "distance", "effect_size", "interval"]
