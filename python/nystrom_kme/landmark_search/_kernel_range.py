"""What one streamed pass over a sample says of a kernel's values on it: the largest and
the mean k(x, x), and ranges for k(x, y) and for (k(x,x) + k(y,y))/2 - k(x, y), the
constants of the distribution-free bounds of ``n_landmarks="auto"``
(:mod:`nystrom_kme.landmark_search._certificate`).

For the radial kernels (k(x, x) = 1 and k(x, y) = k(||x - y||) decreasing in the
distance) the ranges come from a bound on the sample's diameter, 2 max_i ||x_i - x_0||:
on data whose spread is far below the bandwidth every kernel value is near 1 and the
ranges are tiny, which keeps the bounds at the data's own scale. For the others
(linear, polynomial) |k(x, y)| <= kappa = max_i k(x_i, x_i) by Cauchy-Schwarz.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import _core
from ..kernels import Kernel
from ..sources import RowSource


@dataclass(frozen=True)
class KernelRange:
    """A kernel's values on a sample.

    Attributes
    ----------
    kappa : float
        max_i k(x_i, x_i).
    mean_diagonal : float
        sum_i p_i k(x_i, x_i).
    value_low : float
        A lower bound on every k(x_i, x_j) (k at the diameter bound; -kappa if not radial).
    gap_high : float
        An upper bound on every (k(x_i,x_i) + k(x_j,x_j))/2 - k(x_i, x_j) >= 0.
    """

    kappa: float
    mean_diagonal: float
    value_low: float
    gap_high: float


def kernel_range(src: RowSource, kernel: Kernel, p: np.ndarray | None, n_threads: int) -> KernelRange:
    """One pass over ``src`` (rows in chunks): the :class:`KernelRange` of ``kernel``
    under the sample's distribution p (None: uniform).

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> from nystrom_kme.landmark_search._kernel_range import kernel_range
    >>> src = nk.sources.as_source(np.array([[0.0], [1.0], [3.0]]))
    >>> r = kernel_range(src, nk.Gaussian(1.0), None, 1)
    >>> r.kappa, r.mean_diagonal, round(r.value_low, 6), round(r.gap_high, 6)   # diameter bound 6
    (1.0, 1.0, 0.0, 1.0)
    """
    core = kernel.to_core()
    origin = np.asarray(src.take(np.array([0], dtype=np.int64)), dtype=np.float64)[0]
    radius2, kappa, weighted = 0.0, 0.0, 0.0
    l1 = kernel.metric == "l1"  # the l1 kernels' distances: sums of absolute differences
    for start, rows in src.chunks():
        block = np.asarray(rows, dtype=np.float64)
        diff = block - origin
        if l1:
            radius2 = max(radius2, float(np.max(np.abs(diff).sum(axis=1), initial=0.0)) ** 2)
        else:
            radius2 = max(radius2, float(np.max(np.einsum("ij,ij->i", diff, diff), initial=0.0)))
        if not kernel.radial:
            diag = np.asarray(_core.kernel_diagonal(np.ascontiguousarray(rows), core, n_threads), dtype=np.float64)
            kappa = max(kappa, float(np.max(diag, initial=0.0)))
            w = np.full(diag.size, 1.0 / src.count_rows()) if p is None else p[start : start + diag.size]
            weighted += math.fsum(w * diag)
    if kernel.radial:
        diameter = 2.0 * math.sqrt(radius2)  # in the kernel's metric (triangle inequality)
        far = float(kernel(np.zeros((1, 1)), np.array([[diameter]]))[0, 0])  # in 1-D every metric agrees
        return KernelRange(kappa=1.0, mean_diagonal=1.0, value_low=max(far, 0.0), gap_high=1.0 - max(far, 0.0))
    return KernelRange(kappa=kappa, mean_diagonal=weighted, value_low=-kappa, gap_high=2.0 * kappa)


__all__ = ["KernelRange", "kernel_range"]
