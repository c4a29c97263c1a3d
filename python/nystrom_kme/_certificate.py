"""Upper confidence bounds on the Nyström error e(m)^2 = ||mu_hat_n - P_m mu_hat_n||^2 at
every m of a landmark path: the certificate of ``n_landmarks="auto"``
(:mod:`nystrom_kme.landmark_search`).

The projection identity e(m)^2 = ||mu_hat_n||^2 - t(m), with t(m) = ||P_m mu_hat_n||^2
exact (:mod:`nystrom_kme._nested_projection`), leaves one unknown, N^2 = ||mu_hat_n||^2
= sum_i p_i mu_hat_n(x_i): the mean of mu_hat_n under the sample's distribution p. It
is estimated from rows x drawn from p whose kernel sums are known, through the residual
g_m(x) = mu_hat_n(x) - (P_m mu_hat_n)(x), whose mean under p is e(m)^2 (g_m is
orthogonal to the landmarks' span, so sum_i p_i g_m(x_i) = <g_m, mu_hat_n> = e(m)^2):

* **probes** (any sampler): q rows drawn from p with replacement, independently of the
  landmarks. The mean of g_m over them is unbiased for e(m)^2 at every m, with the
  usual standard error sd / sqrt(q).
* **prequential** (uniform samplers, no extra row): each landmark x_i is itself a draw
  from p, taken after the first i - 1, among the rows of mass M_i (1 with replacement;
  1 - the mass of the rows already drawn without, where g vanishes). Given the
  past, u_i = M_i g_{i-1}(x_i) + t(i - 1) has mean exactly N^2: the known change
  t(m) - t(i - 1) carries the estimate from the prefix i - 1 to m. The u_i are a
  martingale sequence, so the mean of the last w of them, minus t(m), is unbiased for
  e(m)^2 and its sample standard deviation / sqrt(w) is its standard error (martingale
  central limit theorem). The window (the last max(64, m / 3) landmarks) leaves out
  the early landmarks, whose residuals vary most.

The bound is max(estimate, 0) + z' std_error with z the normal quantile of the
confidence and z' = z + gamma (2 z^2 + 1) / (6 sqrt(k)) for a right-skewed sample (skewness
gamma > 0, k values; the Cornish-Fisher correction of the studentized mean, Johnson 1978,
Hall 1992): the residuals are skewed (most rows are close to a landmark, a few are far),
and a window that has not met the far ones underestimates both the mean and its spread.
The estimate is clamped at 0 so that a negative one certifies nothing by itself, and at
least 64 values are needed. What no sample-based bound sees is a mass of rows smaller
than about 1 / k whose residual carries e(m)^2: where m is a sizable fraction of n, most
rows are landmarks and the residual sits on the rest, and the coverage drops (95% at
m = n / 2 on 3-d data for a nominal 99%, tests).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

#: Fewest values behind a bound (landmarks of the window, or probes), and the prequential
#: window: the last max(WINDOW_MIN, WINDOW_FRACTION m) landmarks. Chosen by measurement
#: (bench/RESULTS.md, issue 31): with 32 values and m / 4, the first m that passed had
#: its bound wrong in 10 of 100 paths on 3-d data with a local kernel (the residual
#: carried by 5% of the rows); with 64 and m / 3, in 1 of 100 there and on the mixture and
#: digits, for a median m 3% larger.
WINDOW_MIN = 64
WINDOW_FRACTION = 1.0 / 3.0
#: Round-off level of an estimate of e^2 or of the statistical gap: ROUNDOFF_FACTOR eps
#: kappa max(r, 1) for kernel values <= kappa and rank r. The path's projections agree with
#: an extended-precision factorization to about eps r (tests), so 64 leaves a margin.
ROUNDOFF_FACTOR = 64.0


@dataclass(frozen=True)
class Bound:
    """An estimate of e(m)^2 and its upper confidence bound.

    Attributes
    ----------
    estimate : float
        Unbiased estimate of e(m)^2 (may be negative).
    std_error : float
    bound : float
        max(estimate, 0) + z std_error; inf with fewer than WINDOW_MIN values.
    norm2 : float
        The estimate of ||mu_hat_n||^2 behind it.
    n_values : int
    """

    estimate: float
    std_error: float
    bound: float
    norm2: float
    n_values: int


def z_value(confidence: float) -> float:
    """The one-sided normal quantile of ``confidence`` (1.645 at 0.95)."""
    return NormalDist().inv_cdf(confidence)


def _bound(values: np.ndarray, t_m: float, z: float) -> Bound:
    """From values whose mean estimates e(m)^2 + t_m (values - t_m have mean e^2)."""
    k = values.size
    shifted = values - t_m  # near e^2: no cancellation in the variance
    estimate = float(shifted.mean()) if k else math.nan
    sd = float(shifted.std(ddof=1)) if k >= 2 else math.inf
    se = sd / math.sqrt(k) if k >= 2 else math.inf
    if k < WINDOW_MIN:
        return Bound(estimate=estimate, std_error=se, bound=math.inf, norm2=estimate + t_m, n_values=k)
    # residuals are skewed to the right (a few rows far from every landmark): the studentized
    # mean's lower tail is then heavier, by Cornish-Fisher gamma (2 z^2 + 1) / (6 sqrt(k))
    skew = float(np.mean((shifted - estimate) ** 3)) / sd**3 if sd > 0 else 0.0
    z_skew = z + max(skew, 0.0) * (2.0 * z * z + 1.0) / (6.0 * math.sqrt(k))
    bound = max(estimate, 0.0) + z_skew * se
    return Bound(estimate=estimate, std_error=se, bound=bound, norm2=estimate + t_m, n_values=k)


def prequential_bound(u: np.ndarray, t_m: float, z: float) -> Bound:
    """The bound at m = u.size from the prequential values u (u[i] for landmark i + 1)
    and t_m = t(m): the window of the last max(WINDOW_MIN, WINDOW_FRACTION m) values,
    without the first landmark's."""
    m = u.size
    width = min(m - 1, max(WINDOW_MIN, math.ceil(WINDOW_FRACTION * m)))
    return _bound(u[m - width :] if width > 0 else u[:0], t_m, z)


def probe_bound(residuals: np.ndarray, t_m: float, z: float) -> Bound:
    """The bound at m from the probes' residuals g_m (their mean estimates e(m)^2)."""
    return _bound(residuals + t_m, t_m, z)


def round_off_level(kappa: float, rank: int) -> float:
    """The level below which an estimate of e^2 (or of E k(x,x) - ||mu_hat_n||^2) is zero to round-off."""
    return ROUNDOFF_FACTOR * float(np.finfo(np.float64).eps) * max(kappa, 0.0) * max(rank, 1)


__all__ = [
    "ROUNDOFF_FACTOR",
    "WINDOW_FRACTION",
    "WINDOW_MIN",
    "Bound",
    "prequential_bound",
    "probe_bound",
    "round_off_level",
    "z_value",
]
