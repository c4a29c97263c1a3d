"""Confidence bounds behind the certificate of ``n_landmarks="auto"``
(:mod:`nystrom_kme.landmark_search`): valid for any data, using only that the kernel is
bounded on the sample. Pure functions of arrays; the search computes their inputs.

Notation: p the sample's distribution (uniform on the n rows, or the normalised
weights), mu_hat = sum_i p_i phi(x_i), P_m the projection on the span of the first m
landmarks, e(m) = ||mu_hat - P_m mu_hat||, and g_m(x) = mu_hat(x) - (P_m mu_hat)(x) =
<(I - P_m) phi(x), (I - P_m) mu_hat>, the residual of the embedding at x.

**What the data fix.** e(m)^2 = ||mu_hat||^2 - t(m) (the projection identity), with
t(m) = ||P_m mu_hat||^2 exact for every prefix (:mod:`nystrom_kme.landmark_search._nested_projection`).
The one unknown N^2 = ||mu_hat||^2 = sum_{i,j} p_i p_j k(x_i, x_j) is either computed
(O(n^2 d), "exact": e(m)^2 is then known to round-off) or bounded from rows drawn from p
independently of the landmarks ("validation rows"):

* **The residual's mean is e(m)^2**: E_p g_m = <(I - P_m) mu_hat, (I - P_m) mu_hat>.
* **Its range scales with e(m)**: by Cauchy-Schwarz |g_m(x)| <= ||(I - P_m) phi(x)|| e(m)
  <= sqrt(kappa) e(m), kappa = max_i k(x_i, x_i). A row that no landmark reaches carries
  g_m of order e(m), never more; this is what makes a mass of rows missed by every
  landmark visible at a cost of about log(1/delta) / e rows, not 1 / e^2. A narrower
  range when the kernel varies little on the data: for any two rows ||phi(x) -
  phi(x')||^2 <= 2 gap_high (the kernel's range, one pass over every row), so g lies
  within (2 gap_high)^(1/2) e of its value at a landmark (:func:`value_range`).

**What no validation row sees** (issue 43). Both ranges hold for *every* row of the
sample, read by the validation rows or not: kappa and gap_high come from a pass over all
n rows. So the test below is valid for every distribution of residuals consistent with
them, among them those with a rare far row that no validation row drew: its residual may
lie anywhere in the range, and the wealth is a supermartingale under each. What such a
row can hide is bounded by the range and the rows not seen: a mass p_far with residual at
most sqrt(kappa) e adds at most p_far sqrt(kappa) e to e^2, so e <= p_far sqrt(kappa), and
it escapes k draws with probability (1 - p_far)^k <= exp(-k e / sqrt(kappa)), above delta
only for e <= sqrt(kappa) ln(1/delta) / k; k residuals that all read 0 reject the
intervals down to about (4/3) sqrt(kappa) ln(1/delta) / k (bets of at most MAX_BET), above
that. A shortcut that read k zeros as "zero to round-off" (issue 43's false certificate:
10^4 identical rows and one far row, e = 0.71 sigma certified <= 1.2e-7) held only for the
distributions the rows had seen, and is gone: the one deterministic zero is the kernel's
range itself (gap_high at round-off: every row's phi(x) within round-off of every other's),
where N^2 <= sum_i p_i k(x_i, x_i) bounds e_alpha^2 <= sum_i p_i k(x_i, x_i) - alpha^T s + c
for any data.

**The test** (:func:`certified_distance`). Fix a grid e_0 = sqrt(kappa) > e_1 > ...,
e_{k+1} = e_k / GRID_RATIO, independent of the data. For each interval [e_{k+1}, e_k]
the null "e(m) lies in it" implies E g >= e_{k+1}^2 with |g| <= e_k sqrt(kappa); a test
by betting (Waudby-Smith and Ramdas 2023, JRSSB 86(1): the wealth prod_i (1 + lambda_i
(mu_0 - X_i)) of bets against the null mean, lambda_i chosen from the earlier values
only, is a non-negative supermartingale under the null, so by Ville's inequality it
exceeds 1/delta with probability at most delta, at any number of rows) rejects it. The
certified bound is the upper end of the highest interval not rejected: if e(m) exceeds
it, the interval holding e(m), a fixed one, was rejected, which has probability at most
delta. No union over the intervals is needed (an intersection-union test), and the rows
may be added until the test decides.

**The statistical error** sigma^2 = q (a - b), a = E k(x, x), b = E k(x, x'), q = sum p_i^2
(1/n unweighted): its lower confidence bound (:func:`u_statistic_lower`) comes from the
unbiased U-statistic (a_hat - N^2) / (1 - q) over the n rows (Hoeffding 1963, Sec. 5:
an order-2 U-statistic of n i.i.d. rows with a kernel h in [0, R] deviates by t with
probability at most exp(-2 floor(n/2) t^2 / R^2); here h(x, y) = (k(x,x) + k(y,y))/2 -
k(x, y) = ||phi(x) - phi(y)||^2 / 2, R bounded from the data's diameter) and, with
validation rows, an upper bound on N^2 (:func:`mean_upper`, the empirical Bernstein bound
of Maurer and Pontil 2009, Theorem 4). With weights n is replaced by n_eff = 1 / q (an
approximation, as for sigma itself).

**Assumptions, named.** The n rows are i.i.d. draws of the distribution whose sigma is
meant (only sigma's bound uses it; e(m) is a property of the sample and its bound holds
for any sample); the validation rows are drawn from p independently of the landmarks;
the kernel is bounded on the sample (kappa finite: always, for a finite sample). Round-off
is added to every value (:func:`round_off_level`).

The screening estimate (:func:`prequential_bound`, :func:`probe_bound`) is *not* a
bound: from the landmarks' own residuals (each landmark validates the ones before it) or
256 probe rows, with a normal approximation, it only decides *when* the test is tried
(it reads no validation row), so that the test is tried a few times, each at its own
share of the confidence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

#: Screening: the fewest values behind an estimate, and the prequential window (the last
#: max(WINDOW_MIN, WINDOW_FRACTION m) landmarks). The window leaves out the early
#: landmarks, whose residuals vary most (issue 31); a window can miss a rare mass, which
#: is why the screen decides nothing by itself (issue 34).
WINDOW_MIN = 64
WINDOW_FRACTION = 1.0 / 3.0
#: Round-off level of an estimate of e^2 or of the statistical gap: ROUNDOFF_FACTOR eps
#: kappa max(r, 1) for kernel values <= kappa and rank r. The path's projections agree with
#: an extended-precision factorization to about eps r (tests), so 64 leaves a margin.
ROUNDOFF_FACTOR = 64.0
#: The grid of the test: consecutive interval ends differ by this factor (the certified
#: bound is at most this much above the best the rows allow).
GRID_RATIO = 1.02
#: The largest bet, as a fraction of the one that can zero the wealth (Waudby-Smith and
#: Ramdas's c; 1/2 to 3/4 are their recommendations).
MAX_BET = 0.75


@dataclass(frozen=True)
class Bound:
    """A screening estimate of e(m)^2 (not a confidence bound).

    Attributes
    ----------
    estimate : float
        Unbiased estimate of e(m)^2 (may be negative).
    std_error : float
    bound : float
        max(estimate, 0) + z' std_error (a normal approximation with a skewness
        correction); inf with fewer than WINDOW_MIN values.
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
    """The screen at m = u.size from the prequential values u (u[i] for landmark i + 1,
    with mean ||mu_hat||^2 given the landmarks before it) and t_m = t(m): the window of the
    last max(WINDOW_MIN, WINDOW_FRACTION m) values, without the first landmark's."""
    m = u.size
    width = min(m - 1, max(WINDOW_MIN, math.ceil(WINDOW_FRACTION * m)))
    return _bound(u[m - width :] if width > 0 else u[:0], t_m, z)


def probe_bound(residuals: np.ndarray, t_m: float, z: float) -> Bound:
    """The screen at m from the probes' residuals g_m (their mean estimates e(m)^2)."""
    return _bound(residuals + t_m, t_m, z)


def round_off_level(kappa: float, rank: int) -> float:
    """The level below which an estimate of e^2 (or of E k(x,x) - ||mu_hat_n||^2) is zero to round-off."""
    return ROUNDOFF_FACTOR * float(np.finfo(np.float64).eps) * max(kappa, 0.0) * max(rank, 1)


def attempt_delta(attempt: int, delta: float) -> float:
    """The share of ``delta`` spent on the test's ``attempt``-th try (1, 2, ...):
    6 delta / (pi^2 j^2), whose sum over every try is delta."""
    return 6.0 * delta / (math.pi**2 * attempt * attempt)


def u_statistic_lower(value: float, n_eff: float, h_range: float, delta: float) -> float:
    """A lower confidence bound, at 1 - delta, on the mean of an order-2 U-statistic
    ``value`` over ``n_eff`` i.i.d. rows whose kernel lies in [0, h_range]: Hoeffding's
    value - h_range (ln(1/delta) / (2 floor(n_eff / 2)))^(1/2).

    Examples
    --------
    >>> from nystrom_kme.landmark_search._certificate import u_statistic_lower
    >>> round(u_statistic_lower(0.5, 10_000, 1.0, 0.01), 4)
    0.4785
    """
    pairs = max(math.floor(n_eff / 2.0), 1)
    return value - h_range * math.sqrt(math.log(1.0 / delta) / (2.0 * pairs))


def mean_upper(values: np.ndarray, value_range: float, delta: float) -> float:
    """An upper confidence bound, at 1 - delta, on the mean of i.i.d. values lying in an
    interval of width ``value_range``: the empirical Bernstein bound of Maurer and Pontil
    (2009, Theorem 4), mean + (2 V ln(2/delta) / k)^(1/2) + 7 R ln(2/delta) / (3 (k - 1)),
    V the sample variance of the k values. inf below 2 values.

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_kme.landmark_search._certificate import mean_upper
    >>> v = np.random.default_rng(0).uniform(0.4, 0.6, 10_000)
    >>> 0.5 < mean_upper(v, 1.0, 0.01) < 0.51
    True
    """
    k = values.size
    if k < 2:
        return math.inf
    log_term = math.log(2.0 / delta)
    var = float(np.var(values, ddof=1))
    return float(np.mean(values)) + math.sqrt(2.0 * var * log_term / k) + 7.0 * value_range * log_term / (3.0 * (k - 1))


def value_range(
    kappa: float, gap_high: float, c: float, centre: float, level: float, target: float
) -> tuple[float, float]:
    """(r^2, spread) such that every value y(x) = g_alpha(x) + c of the test lies within
    r e_alpha + spread of 0, for every row x of the sample, seen or not: the narrower at
    e_alpha = ``target`` of

    * |y - c| <= sqrt(kappa) e_alpha (Cauchy-Schwarz: |<phi(x), r_alpha>| <= ||phi(x)|| e_alpha),
    * |y - centre| <= (2 gap_high)^(1/2) e_alpha, ``centre`` = y at a row of the sample (the
      first landmark): y(x) - y(x_0) = <phi(x) - phi(x_0), r_alpha> and ||phi(x) - phi(x_0)||^2
      <= 2 gap_high for any two rows (the kernel's range on the data, one pass).

    Each spread adds 2 ``level`` for the round-off of the values. The second range is the
    narrow one when the kernel varies little on the data (a bandwidth far above the data's
    spread); a row far from every other keeps it at the first.

    Examples
    --------
    >>> from nystrom_kme.landmark_search._certificate import value_range
    >>> value_range(1.0, 1.0, 0.0, 0.0, 0.0, 1e-3)        # a far row possible: sqrt(kappa)
    (1.0, 0.0)
    >>> value_range(1.0, 1e-6, 0.0, 1e-9, 0.0, 1e-3)      # every row near every other
    (2e-06, 1e-09)
    """
    wide = (kappa, abs(c) + 2.0 * level)
    narrow = (2.0 * gap_high, abs(centre) + 2.0 * level)
    width = [math.sqrt(max(r2, 0.0)) * target + spread for r2, spread in (wide, narrow)]
    return narrow if width[1] < width[0] else wide


def _rejects(
    g: np.ndarray, low: float, high: float, sqrt_kappa: float, spread: float, horizon: int, log_level: float
) -> bool:
    """Whether the betting test rejects "e lies in [low, high]" from the values g (rounded
    up already): under that null E g >= low^2 and |g| <= high sqrt(kappa) + spread."""
    R = high * sqrt_kappa + spread
    if R <= 0.0:
        return False
    if float(np.max(np.abs(g), initial=0.0)) > R:  # a value the null cannot produce
        return True
    x = (g + R) / (2.0 * R)  # in [0, 1] under the null
    mu0 = (low * low + R) / (2.0 * R)
    k = x.size
    steps = np.arange(1, k + 1, dtype=np.float64)
    # predictable plug-in bets: the mean and variance of the values before each one, with
    # the prior (1/2, 1/4) of a value in [0, 1] counted once (Waudby-Smith and Ramdas, eq. 26)
    csum = np.cumsum(x)
    mean_incl = (0.5 + csum) / (steps + 1.0)
    sq = np.cumsum((x - mean_incl) ** 2)
    var_before = np.concatenate([[0.25], (0.25 + sq[:-1]) / (steps[:-1] + 1.0)])
    cap = MAX_BET / max(1.0 - mu0, 1e-300)
    lam = np.minimum(cap, np.sqrt(2.0 * log_level / (horizon * np.maximum(var_before, 1e-300))))
    wealth = np.cumsum(np.log1p(lam * (mu0 - x)))
    return bool(wealth.max(initial=-math.inf) >= log_level)


def certified_distance(
    g: np.ndarray, kappa: float, shift: float, spread: float, stop_at: float, delta: float, horizon: int
) -> float:
    """The smallest upper bound on e(m) that the betting test certifies from the residuals
    ``g`` of validation rows (see the module documentation), at confidence 1 - delta.

    Parameters
    ----------
    g : ndarray of shape (k,)
        Values with mean e^2 at k rows drawn from p independently of the landmarks, in
        their draw order, within ``spread`` of the range [-e sqrt(kappa), e sqrt(kappa)].
    kappa : float
        max_i k(x_i, x_i) over the sample.
    shift : float
        The round-off of each value: the values are taken as g + shift (a larger mean
        keeps the test valid).
    spread : float
        What the values may exceed the range by (round-off, and a known constant added to
        the residuals).
    stop_at : float
        The search stops once every interval above this is rejected (the bound returned is
        then the end of the grid at or below it).
    delta : float
    horizon : int
        The number of rows the bets are sized for (their validity does not depend on it).

    Returns
    -------
    float
        e* = the upper end of the highest interval of the grid not rejected (sqrt(kappa)
        when none is); e(m) <= e* with probability at least 1 - delta.

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_kme.landmark_search._certificate import certified_distance
    >>> g = np.full(5000, 1e-6)                # residuals of a sample with e^2 = 1e-6
    >>> e = certified_distance(g, 1.0, 0.0, 0.0, 1e-3, 0.01, 5000)
    >>> 1e-3 < e < 2e-3                        # e = 1e-3 is not excluded: the bound is above it
    True
    """
    sqrt_kappa = math.sqrt(max(kappa, 0.0))
    values = np.asarray(g, dtype=np.float64) + shift
    log_level = math.log(1.0 / delta)
    high = sqrt_kappa
    while high > stop_at:
        low = high / GRID_RATIO
        if not _rejects(values, low, high, sqrt_kappa, spread, max(horizon, values.size), log_level):
            return high
        high = low
    return high


__all__ = [
    "GRID_RATIO",
    "MAX_BET",
    "ROUNDOFF_FACTOR",
    "WINDOW_FRACTION",
    "WINDOW_MIN",
    "Bound",
    "attempt_delta",
    "certified_distance",
    "mean_upper",
    "prequential_bound",
    "probe_bound",
    "round_off_level",
    "u_statistic_lower",
    "value_range",
    "z_value",
]
