"""The effect size of a two-sample test: the MMD of one kernel with a confidence interval.

In the Nyström features of landmarks L the two samples' mean embeddings differ by
delta = mean phi(X) - mean phi(Y), and ||delta||^2 is the (biased) MMD^2. Its witness
function f(z) = <phi(z), delta> = k(z, L) K_m^+ s, with s = K(L, X) 1 / n1 - K(L, Y) 1 / n2,
gives the first-order variance of the estimate, 4 (Var_X f / n1 + Var_Y f / n2) (the delta
method; Gretton et al. 2012, Sec. 6). Near H0 that term vanishes and the statistic's
spread is second order, which the permutation distribution measures: the standard error
adds both. Two passes over the data (s, then f), O(n m d), as one fit.
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


def _witness(src: RowSource, L: np.ndarray, alpha: np.ndarray, kernel: Kernel, nt: int) -> tuple[float, float, int]:
    """(mean, variance, n) of f(z) = k(z, L) alpha over the rows of ``src``, block by block."""
    core = kernel.to_core()
    total, squares, n = 0.0, 0.0, 0
    for _, block in src.chunks():
        rows, points = common_dtype(block, L)
        f = _core.kernel_sums(rows, points, alpha, core, nt)[:, 0]
        total += math.fsum(f)
        squares += math.fsum(f * f)
        n += f.size
    mean = total / n
    return mean, max(squares / n - mean * mean, 0.0), n


def effect_size(
    sx: RowSource, sy: RowSource, L: np.ndarray, kernel: Kernel, mmd2: float, permutation_sd: float, nt: int
) -> Effect:
    """The MMD of ``kernel`` between the samples of ``sx`` and ``sy``: ``mmd2`` (the test's
    unbiased estimate) with the interval MMD^2 +- z SE, SE^2 = 4 (Var_X f / n1 + Var_Y f / n2)
    + ``permutation_sd``^2, square roots of the ends clipped at 0."""
    core = kernel.to_core()
    n1, n2 = sx.count_rows(), sy.count_rows()
    acc_x, _ = sx.kernel_sums(L, kernel, n_threads=nt)
    acc_y, _ = sy.kernel_sums(L, kernel, n_threads=nt)
    s = acc_x.value() / n1 - acc_y.value() / n2
    alpha, _, _ = _core.nystrom_weights(L, np.ascontiguousarray(s[:, None]), core, "auto", 0.0, 1e-12, nt)
    alpha = np.ascontiguousarray(alpha, dtype=np.float64).reshape(-1, 1)
    _, var_x, _ = _witness(sx, L, alpha, kernel, nt)
    _, var_y, _ = _witness(sy, L, alpha, kernel, nt)
    se = math.sqrt(4.0 * (var_x / n1 + var_y / n2) + permutation_sd**2)
    z = NormalDist().inv_cdf(0.5 + LEVEL / 2)
    point = math.sqrt(max(mmd2, 0.0))
    low = math.sqrt(max(mmd2 - z * se, 0.0))
    high = math.sqrt(max(mmd2 + z * se, 0.0))
    return Effect(kernel, point, min(low, point), max(high, point), LEVEL)


__all__ = ["LEVEL", "effect_size"]
