"""The statistical error of the empirical embedding, sigma = (E ||mu_hat_n - mu||^2)^(1/2):
the yardstick of ``n_landmarks="auto"`` (:mod:`nystrom_kme.landmark_search`).

For n i.i.d. rows, E ||mu_hat_n - mu||^2 = (E k(x, x) - E k(x, x')) / n (x, x'
independent). With ``sample_weight`` w the target is the weighted embedding
sum_i p_i phi(x_i), p = w / sum(w), and for fixed weights
E ||sum_i p_i phi(x_i) - mu||^2 = (E k(x, x) - E k(x, x')) q with q = sum_i p_i^2 =
1 / n_eff, the effective sample size n_eff = (sum_i w_i)^2 / sum_i w_i^2 (Kish). For
importance weights (x_i drawn from another distribution) this is the usual n_eff
approximation.

Two estimators of a = E k(x, x) and b = E k(x, x'):

* :func:`subsample_statistical_error` (behind :func:`estimate_statistical_error`): a
  random subsample of s rows (default s = min(n, 2000)), the mean of k(x_i, x_i) and
  the U-statistic (1/(s(s-1))) sum_{i != j} k(x_i, x_j); together one U-statistic
  with kernel h(x, y) = (k(x, x) + k(y, y))/2 - k(x, y), whose standard error
  2 sd(h_1(x_i)) / sqrt(s) (Hoeffding's first projection) is reported. With weights
  the subsample is drawn proportionally to w (with replacement) and pairs of draws
  of the same row are left out, which makes it unbiased for the weighted
  U-statistic sum_{i != j} p_i p_j k(x_i, x_j) / (1 - q). O(s^2 d).
* the landmark search's (:mod:`nystrom_kme.landmark_search._certified_path`): from ||mu_hat_n||^2, which
  its certificate computes or bounds anyway. E ||mu_hat_n||^2 = q a + (1 - q) b, so
  sigma^2 = q (a - b) has the unbiased estimate q (a_hat - ||mu_hat_n||^2) / (1 - q),
  with a lower confidence bound from Hoeffding's inequality for U-statistics
  (:mod:`nystrom_kme.landmark_search._certificate`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike

from .. import _core
from .._validation import (
    RandomStateLike,
    check_random_state,
    check_sample_weight,
    n_threads_arg,
    normalised_weights,
)
from ..kernels import Kernel, resolve_kernel
from ..sources import RowSource, SourceLike, as_source

#: Default subsample size of :func:`estimate_statistical_error`.
STAT_SAMPLES = 2000
#: The confidence 1 - LOWER_DELTA of :func:`estimate_statistical_error`'s lower bound.
LOWER_DELTA = 0.01


@dataclass(frozen=True)
class StatisticalError:
    """Estimate of the statistical error of the empirical embedding,
    sigma = (E ||mu_hat_n - mu||^2)^(1/2) = ((E k(x,x) - E k(x,x')) / n_eff)^(1/2).

    Attributes
    ----------
    value : float
        sigma, an RKHS norm.
    std_error : float
        Standard error of ``value`` (delta method on the U-statistic's).
    squared : float
        sigma^2 (unbiased estimate; may be 0 when the kernel is constant on the data).
    n_effective : float
        n (unweighted) or (sum w)^2 / sum w^2.
    n_used : int
        Rows sampled: the subsample, the validation rows of the landmark search, or
        every row when it computed ||mu_hat_n||^2.
    lower : float
        A lower confidence bound on sigma (the landmark search's, at its confidence;
        :func:`estimate_statistical_error`'s at 0.99 for the radial kernels, whose
        U-statistic kernel lies in [0, 1]; nan where no bound is known).

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> X = np.random.default_rng(0).normal(size=(4000, 2))
    >>> err = nk.estimate_statistical_error(X, nk.Gaussian(1.0), random_state=0)
    >>> err.n_effective, bool(err.std_error < err.value)
    (4000.0, True)
    """

    value: float
    std_error: float
    squared: float
    n_effective: float
    n_used: int
    lower: float = math.nan

    def __repr__(self) -> str:
        return (
            f"StatisticalError({self.value:.4g} ± {self.std_error:.2g}, "
            f"n_effective={self.n_effective:.6g}, n_used={self.n_used})"
        )


def _from_squared(sq: float, se_sq: float, n_eff: float, n_used: int) -> StatisticalError:
    """sigma and its standard error (delta method) from sigma^2 and its standard error."""
    sq = max(0.0, sq)
    value = math.sqrt(sq)
    se = se_sq / (2.0 * value) if value > 0 else math.sqrt(se_sq)
    return StatisticalError(value=value, std_error=se, squared=sq, n_effective=n_eff, n_used=int(n_used))


def subsample_statistical_error(
    src: RowSource,
    kernel: Kernel,
    weights: np.ndarray | None,
    n_samples: int,
    rng: np.random.Generator,
    n_threads: int,
) -> StatisticalError:
    """sigma from a subsample of ``n_samples`` rows (see the module documentation)."""
    n = src.count_rows()
    core = kernel.to_core()
    if weights is None:
        s = min(n, n_samples)
        idx = np.sort(rng.choice(n, size=s, replace=False)) if s < n else np.arange(n)
        n_eff = float(n)
        mult = np.ones(s)
    else:
        p = normalised_weights(weights)
        s = n_samples
        idx = np.sort(rng.choice(n, size=s, p=p))
        n_eff = 1.0 / float(np.sum(p * p))
        _, inverse, counts = np.unique(idx, return_inverse=True, return_counts=True)
        mult = counts[inverse].astype(np.float64)
    if s < 2:
        raise ValueError(f"the statistical error needs at least 2 rows, got {n}")
    S = np.ascontiguousarray(src.take(idx))
    diag = np.asarray(_core.kernel_diagonal(S, core, n_threads), dtype=np.float64)
    rows = np.asarray(_core.kernel_row_sums(S, S, core, n_threads), dtype=np.float64)
    off = rows - mult * diag  # pairs of draws of different rows only
    pairs = s - mult
    if not (pairs > 0).any():
        raise ValueError("sample_weight puts all its mass on one row: the statistical error is undefined (n_eff = 1)")
    b_hat = float(off.sum() / pairs.sum())
    a_hat = float(diag.mean())
    theta = max(0.0, a_hat - b_hat)
    r = np.where(pairs > 0, off / np.maximum(pairs, 1.0), b_hat)
    g = 0.5 * (diag + a_hat) - r
    se_theta = 2.0 * float(np.std(g, ddof=1)) / math.sqrt(s)
    out = _from_squared(theta / n_eff, se_theta / n_eff, n_eff, s)
    if not kernel.radial:
        return out
    # radial kernels: h(x, y) = 1 - k(x, y) lies in [0, 1], Hoeffding's bound for U-statistics
    low = max(theta - math.sqrt(math.log(1.0 / LOWER_DELTA) / (2.0 * (s // 2))), 0.0)
    return replace(out, lower=math.sqrt(low / n_eff))


def estimate_statistical_error(
    X: SourceLike,
    kernel: Kernel | str = "gaussian",
    *,
    sample_weight: ArrayLike | None = None,
    max_samples: int = STAT_SAMPLES,
    random_state: RandomStateLike = None,
    n_threads: int | None = None,
) -> StatisticalError:
    """Estimate sigma = (E ||mu_hat_n - mu||^2)^(1/2), the RMS error of the empirical
    embedding (1/n) sum_i phi(x_i) (or sum_i p_i phi(x_i) with weights), from a
    subsample: sigma^2 = (E k(x, x) - E k(x, x')) / n_eff, the first mean over the
    subsample's rows and the second its U-statistic over pairs of different draws, with
    the standard error of Hoeffding's first projection. (``n_landmarks="auto"`` estimates
    sigma from its own sums instead, :class:`~nystrom_kme.AutoLandmarks`.)

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features), or any row source
    kernel : Kernel or str, default="gaussian"
        A name uses the median heuristic (drawn from ``random_state``).
    sample_weight : array-like of shape (n_samples,), optional
        Non-negative weights; then n is replaced by n_eff = (sum w)^2 / sum w^2.
    max_samples : int >= 2, default=2000
        Subsample size s: O(s^2 d) time, O(s d) memory.
    random_state : None, int or numpy Generator
    n_threads : int or None

    Returns
    -------
    StatisticalError

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> X = np.random.default_rng(0).normal(size=(10_000, 2))
    >>> est = nk.estimate_statistical_error(X, nk.Gaussian(1.0), random_state=0)
    >>> 0.005 < est.value < 0.01        # closed form: sqrt((1 - 1/sqrt(5)) / 10^4) = 0.0074
    True
    """
    rng = check_random_state(random_state)
    if isinstance(max_samples, bool) or not isinstance(max_samples, (int, np.integer)) or max_samples < 2:
        raise ValueError(f"max_samples must be an integer >= 2, got {max_samples!r}")
    src = as_source(X, "X")
    w = check_sample_weight(sample_weight, src.count_rows())
    if w is not None:
        w = np.asarray(w, dtype=np.float64)
    kern = resolve_kernel(kernel, [src], rng)
    return subsample_statistical_error(src, kern, w, int(max_samples), rng, n_threads_arg(n_threads))


__all__ = [
    "STAT_SAMPLES",
    "StatisticalError",
    "estimate_statistical_error",
    "subsample_statistical_error",
]
