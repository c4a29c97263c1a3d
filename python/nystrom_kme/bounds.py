"""Theory helpers: the error bounds of Chatalic et al. (ICML 2022) and their ingredients.

This module turns Sections 4 and 5 and Appendices C, D and F of "Nyström Kernel
Mean Embeddings" into functions:

* :func:`lemma_c1_bound` -- the generic bound of Lemma C.1 (any lambda), with its
  conditions checked and reported;
* :func:`theorem41_constants`, :func:`theorem41_lambda`, :func:`theorem41_bound` --
  Theorem 4.1 with the explicit constants of its proof (Appendix C.2);
* :func:`theorem41_condition`, :func:`theorem41_min_landmarks` -- the subsample
  condition ``m >= max(67, 12 K^2 / ||C||) log(m / delta)``, solved exactly with
  Lambert's W function;
* :func:`corollary41_n_landmarks` -- the subsample sizes of Corollary 4.1;
* :func:`theorem51_bound`, :func:`theorem_d1_bound` -- the MMD bounds of
  Theorem 5.1 and Theorem D.1;
* :func:`estimate_spectrum` (and the shortcuts :func:`effective_dimension`,
  :func:`max_leverage`, :func:`covariance_norm`) -- data-driven estimates of the
  spectrum of the covariance operator, of the effective dimension N(lambda), of
  N_inf(lambda) and of ||C||, from a subsample of at most ``max_samples`` points;
* :func:`fit_spectral_decay` and :func:`suggest_n_landmarks` -- choose the number
  of landmarks from the estimated decay of the spectrum (Corollary 4.1).

Normalisation (paper, Section 4.1): ``C = E_x[phi(x) (x) phi(x)]`` is the
*uncentred* covariance operator, ``C_lambda = C + lambda I``,
``N_x(lambda) = <phi(x), C_lambda^{-1} phi(x)>``, ``N(lambda) = E_x N_x(lambda)
= tr(C C_lambda^{-1}) = sum_i sigma_i / (sigma_i + lambda)`` over the eigenvalues
``sigma_i`` of ``C`` and ``N_inf(lambda) = sup_x N_x(lambda)``. The nonzero
eigenvalues of the empirical covariance of points ``z_1..z_s`` are those of
``K_s / s``. Note that ``N_x`` is *not* a ridge leverage score in ``[0, 1]``: for
a sample point, ``N_{x_i}(lambda) = s [K_s (K_s + s lambda I)^{-1}]_{ii}`` when
``C`` is replaced by the empirical covariance of the sample.

``K = sup_x sqrt(k(x, x))`` (Assumption 4.1) is 1 for every radial kernel of
:mod:`nystrom_kme.kernels`; the bounds do not apply to unbounded kernels (linear,
polynomial), for which the data-driven helpers use the plug-in value
``max_i sqrt(k(x_i, x_i))`` and say so.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence, Tuple, Union

import numpy as np

from ._validation import as_data_matrix, check_random_state, n_threads_arg
from .kernels import Kernel, get_kernel

__all__ = [
    "CovarianceSpectrum",
    "DecayFit",
    "LandmarkSuggestion",
    "LemmaC1Bound",
    "MMDBound",
    "Theorem41Bound",
    "corollary41_n_landmarks",
    "covariance_norm",
    "effective_dimension",
    "estimate_spectrum",
    "fit_spectral_decay",
    "lemma_c1_bound",
    "max_leverage",
    "suggest_n_landmarks",
    "theorem41_bound",
    "theorem41_condition",
    "theorem41_constants",
    "theorem41_lambda",
    "theorem41_min_landmarks",
    "theorem51_bound",
    "theorem_d1_bound",
]

#: Constant 67 of Lemma F.1 (Rudi et al., 2015, Lemma 6) and of Theorem 4.1.
_C_RUDI = 67.0
#: Rows of a kernel block formed at once by the estimators (block of s x _CHUNK).
_CHUNK = 2048
#: The subsample estimate of N(lambda) is trusted while N_hat(lambda) <= s * this.
_RELIABLE_FRACTION = 0.1
#: Smallest number of eigenvalues a decay fit needs, and the R^2 it must reach.
_MIN_FIT_POINTS = 6
_MIN_R2 = 0.95

EffDim = Union[float, Callable[[float], float], "CovarianceSpectrum"]


# --------------------------------------------------------------------------- #
# argument checks: every failure is a ValueError that names the argument
# --------------------------------------------------------------------------- #
def _real(value: Any, name: str) -> float:
    is_scalar_array = (isinstance(value, np.ndarray) and value.ndim == 0
                       and value.dtype.kind in "fiu")
    if (isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real)) \
            and not is_scalar_array:
        raise ValueError(f"{name} must be a real number, got {value!r}")
    out = float(value)
    if math.isnan(out):
        raise ValueError(f"{name} must be a real number, got nan")
    return out


def _positive(value: Any, name: str, *, finite: bool = True) -> float:
    out = _real(value, name)
    if not out > 0.0 or (finite and not math.isfinite(out)):
        raise ValueError(f"{name} must be a {'finite ' if finite else ''}number > 0, got {value!r}")
    return out


def _nonnegative(value: Any, name: str) -> float:
    out = _real(value, name)
    if not (out >= 0.0 and math.isfinite(out)):
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return out


def _probability(value: Any, name: str = "delta") -> float:
    out = _real(value, name)
    if not 0.0 < out < 1.0:
        raise ValueError(f"{name} must lie in the open interval (0, 1), got {value!r}")
    return out


def _count(value: Any, name: str) -> int:
    if isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if isinstance(value, numbers.Integral):
        out = int(value)
    elif isinstance(value, numbers.Real) and math.isfinite(float(value)) and float(value).is_integer():
        out = int(value)
    else:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if out < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return out


def _pair(value: Any, name: str) -> tuple:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or len(value) != 2:
        if not (isinstance(value, np.ndarray) and value.shape == (2,)):
            raise ValueError(f"{name} must be a pair (one value per distribution), got {value!r}")
    return (value[0], value[1])


def _check_m_le_n(m: int, n: int, m_name: str = "m", n_name: str = "n") -> None:
    if m > n:
        raise ValueError(f"{m_name}={m} must be <= {n_name}={n} (sub-samples are drawn from the data)")


# --------------------------------------------------------------------------- #
# Lemma C.1
# --------------------------------------------------------------------------- #
def _holds(*conds: Optional[bool]) -> Optional[bool]:
    if any(c is False for c in conds):
        return False
    if any(c is None for c in conds):
        return None
    return True


@dataclass(frozen=True)
class LemmaC1Bound:
    """Value and conditions of the generic bound of Lemma C.1.

    Attributes
    ----------
    value : float
        The right-hand side of Lemma C.1: a bound on ``||mu - mu_hat_m||`` that holds
        with probability at least ``1 - delta`` *when the conditions hold*.
    terms : tuple of float
        Its three summands: ``2 K sqrt(2 log(6/delta)) / sqrt(n)`` (empirical
        estimator), ``sqrt(lam) 4 sqrt(3 N_inf) log(12/delta) / m`` and
        ``sqrt(lam) 6 sqrt(N log(12/delta) / m)`` (Nyström projection).
    m_condition : bool
        ``m >= max(67, 5 N_inf(lam)) log(12 K^2 / (lam delta))`` (first condition).
    n_condition : bool
        ``lam n >= 12 K^2 log(4/delta)`` (second condition; ``log(12/delta)`` with
        ``corrected=True``).
    lambda_condition : bool or None
        ``0 < lam <= ||C||`` (hypothesis of the lemma); None when ``op_norm`` was
        not given.
    m_required : float
        The right-hand side of the first condition.
    lambda_n_required : float
        The right-hand side of the second condition.
    lam, delta : float
        The inputs the bound was evaluated at.
    """

    value: float
    terms: Tuple[float, float, float]
    m_condition: bool
    n_condition: bool
    lambda_condition: Optional[bool]
    m_required: float
    lambda_n_required: float
    lam: float
    delta: float

    @property
    def conditions(self) -> dict:
        """``{"m": ..., "n": ..., "lambda": ...}``: whether each condition holds."""
        return {"m": self.m_condition, "n": self.n_condition, "lambda": self.lambda_condition}

    @property
    def holds(self) -> Optional[bool]:
        """True if every condition holds, False if one fails, None if one is unknown."""
        return _holds(self.m_condition, self.n_condition, self.lambda_condition)

    def __float__(self) -> float:
        return float(self.value)


def lemma_c1_bound(lam: float, eff_dim: float, eff_dim_inf: float, K: float, n: int, m: int,
                   delta: float, *, op_norm: Optional[float] = None,
                   corrected: bool = False) -> LemmaC1Bound:
    r"""Generic error bound of Lemma C.1 (Appendix C.1), with its conditions.

    With probability at least :math:`1-\delta`,

    .. math::

        \|\mu - \hat\mu_m\| \le \frac{2K\sqrt{2\log(6/\delta)}}{\sqrt n}
        + \sqrt\lambda\Big(\frac{4\sqrt{3\mathcal N_\infty(\lambda)}\log(12/\delta)}{m}
        + 6\sqrt{\frac{\mathcal N(\lambda)\log(12/\delta)}{m}}\Big)

    provided that :math:`m \ge \max(67, 5\mathcal N_\infty(\lambda))
    \log\frac{12K^2}{\lambda\delta}` and :math:`\lambda n \ge 12K^2\log(4/\delta)`,
    for :math:`\lambda \in ]0, \|C\|]`.

    Parameters
    ----------
    lam : float > 0
        Regularisation :math:`\lambda`.
    eff_dim : float >= 0
        Effective dimension :math:`\mathcal N(\lambda)` (eq. 6b).
    eff_dim_inf : float >= 0
        :math:`\mathcal N_\infty(\lambda)` (eq. 6c); ``K**2 / lam`` is always valid.
    K : float > 0
        :math:`\sup_x \|\phi(x)\|` (Assumption 4.1).
    n : int >= 1
        Number of data points.
    m : int, 1 <= m <= n
        Number of landmarks (drawn uniformly with replacement).
    delta : float in (0, 1)
        Confidence level.
    op_norm : float > 0, optional
        :math:`\|C\|`; when given, the hypothesis :math:`\lambda \le \|C\|` is checked.
    corrected : bool, default=False
        The proof applies Lemma E.5 at confidence :math:`\delta/3`, whose hypothesis
        is then :math:`\lambda n \ge 12K^2\log(12/\delta)`, not the stated
        :math:`\log(4/\delta)`. ``True`` checks the stricter, consistent version.

    Returns
    -------
    LemmaC1Bound
        The value, its three terms, and whether each condition holds.
    """
    lam = _positive(lam, "lam")
    eff_dim = _nonnegative(eff_dim, "eff_dim")
    eff_dim_inf = _nonnegative(eff_dim_inf, "eff_dim_inf")
    K = _positive(K, "K")
    n = _count(n, "n")
    m = _count(m, "m")
    _check_m_le_n(m, n)
    delta = _probability(delta)
    if op_norm is not None:
        op_norm = _positive(op_norm, "op_norm")
    if not isinstance(corrected, (bool, np.bool_)):
        raise ValueError(f"corrected must be a bool, got {corrected!r}")

    l12 = math.log(12.0 / delta)
    t1 = 2.0 * K * math.sqrt(2.0 * math.log(6.0 / delta)) / math.sqrt(n)
    t2 = math.sqrt(lam) * 4.0 * math.sqrt(3.0 * eff_dim_inf) * l12 / m
    t3 = math.sqrt(lam) * 6.0 * math.sqrt(eff_dim * l12 / m)
    m_required = max(_C_RUDI, 5.0 * eff_dim_inf) * math.log(12.0 * K * K / (lam * delta))
    lambda_n_required = 12.0 * K * K * math.log((12.0 if corrected else 4.0) / delta)
    return LemmaC1Bound(
        value=t1 + t2 + t3,
        terms=(t1, t2, t3),
        m_condition=bool(m >= m_required),
        n_condition=bool(lam * n >= lambda_n_required),
        lambda_condition=None if op_norm is None else bool(lam <= op_norm),
        m_required=m_required,
        lambda_n_required=lambda_n_required,
        lam=lam,
        delta=delta,
    )


# --------------------------------------------------------------------------- #
# Theorem 4.1
# --------------------------------------------------------------------------- #
def theorem41_constants(K: float, delta: float) -> Tuple[float, float, float]:
    r"""Constants :math:`(c_1, c_2, c_3)` of Theorem 4.1, as derived in its proof (App. C.2).

    .. math::

        c_1 = 2K\sqrt{2\log(6/\delta)},\quad c_2 = 4\sqrt3 K\log(12/\delta),\quad
        c_3 = 12\sqrt3 K\sqrt{\log(12/\delta)}.

    :math:`c_3` comes from substituting :math:`\lambda = 12K^2\log(m/\delta)/m` in
    :math:`6\sqrt{\log(12/\delta)}\sqrt{\lambda\mathcal N(\lambda)/m}`:
    :math:`6\sqrt{12}K = 12\sqrt3 K`. The statement of Theorem 5.1 prints
    :math:`c_3 = 6K\sqrt{\log(12/\delta)}` (and then omits :math:`c_3` from its
    third term); that value drops the factor :math:`\sqrt{12}` of the substitution
    and is *not* what the proof gives, so it is not used here.

    Parameters
    ----------
    K : float > 0
        :math:`\sup_x\|\phi(x)\|` (Assumption 4.1).
    delta : float in (0, 1)
        Confidence level.

    Returns
    -------
    tuple of float
        ``(c1, c2, c3)``.
    """
    K = _positive(K, "K")
    delta = _probability(delta)
    c1 = 2.0 * K * math.sqrt(2.0 * math.log(6.0 / delta))
    c2 = 4.0 * math.sqrt(3.0) * K * math.log(12.0 / delta)
    c3 = 12.0 * math.sqrt(3.0) * K * math.sqrt(math.log(12.0 / delta))
    return c1, c2, c3


def theorem41_lambda(m: int, delta: float, K: float = 1.0) -> float:
    r"""The regularisation of Theorem 4.1: :math:`\lambda_m = 12K^2\log(m/\delta)/m` (App. C.2).

    Parameters
    ----------
    m : int >= 1
        Number of landmarks.
    delta : float in (0, 1)
        Confidence level.
    K : float > 0, default=1
        :math:`\sup_x\|\phi(x)\|`.

    Returns
    -------
    float
    """
    m = _count(m, "m")
    delta = _probability(delta)
    K = _positive(K, "K")
    return 12.0 * K * K * math.log(m / delta) / m


def theorem41_condition(m: int, op_norm: float, delta: float, K: float = 1.0) -> bool:
    r"""Whether :math:`m \ge \max(67, 12K^2\|C\|^{-1})\log(m/\delta)` (Theorem 4.1).

    Parameters
    ----------
    m : int >= 1
        Number of landmarks.
    op_norm : float > 0
        :math:`\|C\|_{\mathcal L(\mathcal H)}`, the largest eigenvalue of the covariance.
    delta : float in (0, 1)
        Confidence level.
    K : float > 0, default=1
        :math:`\sup_x\|\phi(x)\|`.

    Returns
    -------
    bool
    """
    m = _count(m, "m")
    op_norm = _positive(op_norm, "op_norm")
    delta = _probability(delta)
    K = _positive(K, "K")
    c = max(_C_RUDI, 12.0 * K * K / op_norm)
    return bool(m >= c * math.log(m / delta))


def _lambertw_m1(x: float) -> float:
    """Lower branch W_{-1}(x) for x in [-1/e, 0): scipy if available, else Halley."""
    try:
        from scipy.special import lambertw
    except ImportError:  # pragma: no cover - scipy is a test dependency
        lambertw = None
    if lambertw is not None:
        w = lambertw(x, k=-1)
        if abs(w.imag) <= 1e-12 * max(1.0, abs(w.real)) and math.isfinite(w.real):
            return float(w.real)
    # Halley iteration on f(w) = w e^w - x from the asymptotic start (w <= -1).
    lx = math.log(-x)
    w = lx - math.log(-lx) if lx < -1.0 else -1.0 - math.sqrt(2.0 * (1.0 + math.e * x))
    for _ in range(100):
        ew = math.exp(w)
        f = w * ew - x
        wp1 = w + 1.0
        if wp1 == 0.0:
            break
        step = f / (ew * wp1 - (w + 2.0) * f / (2.0 * wp1))
        w -= step
        if abs(step) <= 1e-15 * abs(w):
            break
    return w


def theorem41_min_landmarks(op_norm: float, delta: float, K: float = 1.0) -> int:
    r"""Smallest integer :math:`m` with :math:`m \ge c\log(m/\delta)`, :math:`c=\max(67, 12K^2/\|C\|)`.

    This is the subsample condition of Theorem 4.1, solved exactly (remark after
    the theorem and end of App. C.2): with :math:`y = m/\delta`, the condition is
    :math:`y \ge (c/\delta)\log y`, whose larger root is
    :math:`m^\star = -c\,W_{-1}(-\delta/c)` (Lambert's W, lower branch
    ``scipy.special.lambertw(x, k=-1)``). The condition holds for every
    :math:`m \ge m^\star`; the function returns :math:`\lceil m^\star\rceil`,
    corrected by one if rounding puts it on the wrong side. (The condition also
    holds below the smaller root :math:`-c\,W_0(-\delta/c) < e\delta`, which contains
    the integer 1 only when :math:`\delta > e^{-1/c} \ge 0.985`; that degenerate
    range is not the theorem's and is ignored.)

    Parameters
    ----------
    op_norm : float > 0
        :math:`\|C\|_{\mathcal L(\mathcal H)}`.
    delta : float in (0, 1)
        Confidence level.
    K : float > 0, default=1
        :math:`\sup_x\|\phi(x)\|`.

    Returns
    -------
    int
        The smallest integer :math:`m \ge m^\star`, which satisfies the condition
        while :math:`m - 1` does not.
    """
    op_norm = _positive(op_norm, "op_norm")
    delta = _probability(delta)
    K = _positive(K, "K")
    c = max(_C_RUDI, 12.0 * K * K / op_norm)
    m_star = -c * _lambertw_m1(-delta / c)
    m = max(1, math.ceil(m_star))

    def ok(k: int) -> bool:
        return k >= c * math.log(k / delta)

    while not ok(m):
        m += 1
    while m > 1 and m - 1 > m_star * 0.5 and ok(m - 1):
        m -= 1
    return int(m)


@dataclass(frozen=True)
class Theorem41Bound:
    """Value, ingredients and condition of the bound of Theorem 4.1.

    Attributes
    ----------
    value : float
        ``c1 / sqrt(n) + c2 / m + c3 sqrt(log(m/delta)) sqrt(N(lam)) / m``.
    terms : tuple of float
        The three summands.
    constants : tuple of float
        ``(c1, c2, c3)`` from :func:`theorem41_constants`.
    lam : float
        ``12 K^2 log(m/delta) / m``.
    eff_dim : float
        ``N(lam)`` used.
    m_condition : bool or None
        ``m >= max(67, 12 K^2 / ||C||) log(m/delta)``; None when ``op_norm`` is unknown.
    m_min : int or None
        Smallest ``m`` meeting that condition (:func:`theorem41_min_landmarks`).
    delta : float
    """

    value: float
    terms: Tuple[float, float, float]
    constants: Tuple[float, float, float]
    lam: float
    eff_dim: float
    m_condition: Optional[bool]
    m_min: Optional[int]
    delta: float

    @property
    def holds(self) -> Optional[bool]:
        """Whether the theorem's condition holds (None if ``op_norm`` was not given)."""
        return self.m_condition

    def __float__(self) -> float:
        return float(self.value)


def _eval_eff_dim(eff_dim: Any, lam: float, name: str = "eff_dim") -> float:
    if isinstance(eff_dim, CovarianceSpectrum):
        value = eff_dim.effective_dimension(lam)
    elif callable(eff_dim):
        value = eff_dim(lam)
    else:
        value = eff_dim
    return _nonnegative(value, name)


def theorem41_bound(n: int, m: int, delta: float, eff_dim: EffDim, K: float = 1.0,
                    *, op_norm: Optional[float] = None) -> Theorem41Bound:
    r"""Error bound of Theorem 4.1 with the constants of its proof (App. C.2).

    With probability at least :math:`1-\delta`,

    .. math::

        \|\mu - \hat\mu_m\| \le \frac{c_1}{\sqrt n} + \frac{c_2}{m}
        + \frac{c_3\sqrt{\log(m/\delta)}}{m}\sqrt{\mathcal N(\lambda_m)},\qquad
        \lambda_m = \frac{12K^2\log(m/\delta)}{m},

    provided :math:`4 \le m \le n` and :math:`m \ge \max(67, 12K^2\|C\|^{-1})
    \log(m/\delta)`, with :math:`c_1, c_2, c_3` of :func:`theorem41_constants`
    (:math:`c_3 = 12\sqrt3K\sqrt{\log(12/\delta)}`, the proof's value; see there for
    the :math:`6K\sqrt{\log(12/\delta)}` printed in Theorem 5.1). It equals
    :func:`lemma_c1_bound` at :math:`\lambda_m` with
    :math:`\mathcal N_\infty(\lambda_m)` replaced by its bound :math:`K^2/\lambda_m`.

    Parameters
    ----------
    n : int >= 1
        Number of data points.
    m : int, 1 <= m <= n
        Number of landmarks.
    delta : float in (0, 1)
        Confidence level.
    eff_dim : float, callable or CovarianceSpectrum
        :math:`\mathcal N(\lambda_m)` as a number, or a function of
        :math:`\lambda` (or a :class:`CovarianceSpectrum`) evaluated at
        :math:`\lambda_m`.
    K : float > 0, default=1
        :math:`\sup_x\|\phi(x)\|`.
    op_norm : float > 0, optional
        :math:`\|C\|`; when given, the condition on ``m`` is checked.

    Returns
    -------
    Theorem41Bound
    """
    n = _count(n, "n")
    m = _count(m, "m")
    _check_m_le_n(m, n)
    delta = _probability(delta)
    K = _positive(K, "K")
    if op_norm is not None:
        op_norm = _positive(op_norm, "op_norm")
    lam = theorem41_lambda(m, delta, K)
    N = _eval_eff_dim(eff_dim, lam)
    c1, c2, c3 = theorem41_constants(K, delta)
    t1 = c1 / math.sqrt(n)
    t2 = c2 / m
    t3 = c3 * math.sqrt(max(math.log(m / delta), 0.0)) * math.sqrt(N) / m
    m_min = None if op_norm is None else theorem41_min_landmarks(op_norm, delta, K)
    cond = None if op_norm is None else bool(m >= 4 and theorem41_condition(m, op_norm, delta, K))
    return Theorem41Bound(value=t1 + t2 + t3, terms=(t1, t2, t3), constants=(c1, c2, c3), lam=lam,
                          eff_dim=N, m_condition=cond, m_min=m_min, delta=delta)


# --------------------------------------------------------------------------- #
# Theorem 5.1 and Theorem D.1 (MMD)
# --------------------------------------------------------------------------- #
@dataclass(frozen=True)
class MMDBound:
    """Bound on ``|MMD(rho_1, rho_2) - MMD_hat|``: the sum of one bound per distribution.

    Attributes
    ----------
    value : float
        Sum of the two parts' values.
    parts : tuple
        The two :class:`Theorem41Bound` (Theorem 5.1) or :class:`LemmaC1Bound`
        (Theorem D.1), one per distribution.
    confidence : float
        ``1 - 2 delta``.
    """

    value: float
    parts: tuple
    confidence: float

    @property
    def holds(self) -> Optional[bool]:
        """Whether both parts' conditions hold (None if one is unknown)."""
        return _holds(*(p.holds for p in self.parts))

    def __float__(self) -> float:
        return float(self.value)


def theorem51_bound(n: Sequence[int], m: Sequence[int], delta: float, eff_dim: Sequence[EffDim],
                    K: float = 1.0, *, op_norm: Optional[Sequence[float]] = None) -> MMDBound:
    r"""MMD error bound of Theorem 5.1 (Nyström MMD estimator, Section 5).

    With probability at least :math:`1-2\delta`,
    :math:`|\mathrm{MMD}(\rho_1,\rho_2) - \widehat{\mathrm{MMD}}| \le \sum_{k=1,2}
    \big(c_1/\sqrt{n_k} + c_2/m_k + c_3\sqrt{\log(m_k/\delta)}\,
    \sqrt{\mathcal N^{(\rho_k)}(\lambda_{m_k})}/m_k\big)`, i.e. the sum of
    :func:`theorem41_bound` for each distribution (proof of Theorem D.1: reverse
    triangle inequality, then Theorem 4.1 twice and a union bound), provided
    each :math:`m_k` meets the condition of Theorem 4.1 for :math:`C_k`.

    The statement of Theorem 5.1 prints :math:`c_3 = 6K\sqrt{\log(12/\delta)}` and
    omits :math:`c_3` from the third term; both are typos with respect to the proof
    of Theorem 4.1, whose :math:`c_3 = 12\sqrt3K\sqrt{\log(12/\delta)}` is used.

    Parameters
    ----------
    n, m : pair of int
        Sample and subsample sizes ``(n_1, n_2)``, ``(m_1, m_2)``, with ``m_k <= n_k``.
    delta : float in (0, 1)
        Confidence level (the bound holds with probability ``1 - 2 delta``).
    eff_dim : pair
        :math:`\mathcal N^{(\rho_k)}` for each distribution: numbers (values at
        :math:`\lambda_{m_k}`), callables of :math:`\lambda` or spectra.
    K : float > 0, default=1
        :math:`\sup_x\|\phi(x)\|`.
    op_norm : pair of float, optional
        :math:`(\|C_1\|, \|C_2\|)`; when given, the conditions are checked.

    Returns
    -------
    MMDBound
    """
    n, m, eff_dim = _pair(n, "n"), _pair(m, "m"), _pair(eff_dim, "eff_dim")
    ops = (None, None) if op_norm is None else _pair(op_norm, "op_norm")
    parts = []
    for k in range(2):
        nk = _count(n[k], f"n[{k}]")
        mk = _count(m[k], f"m[{k}]")
        _check_m_le_n(mk, nk, f"m[{k}]", f"n[{k}]")
        lam = theorem41_lambda(mk, delta, K)
        Nk = _eval_eff_dim(eff_dim[k], lam, f"eff_dim[{k}]")
        opk = None if ops[k] is None else _positive(ops[k], f"op_norm[{k}]")
        parts.append(theorem41_bound(nk, mk, delta, Nk, K, op_norm=opk))
    return MMDBound(value=parts[0].value + parts[1].value, parts=tuple(parts),
                    confidence=1.0 - 2.0 * parts[0].delta)


def theorem_d1_bound(lam: Sequence[float], eff_dim: Sequence[float], eff_dim_inf: Sequence[float],
                     K: float, n: Sequence[int], m: Sequence[int], delta: float, *,
                     op_norm: Optional[Sequence[float]] = None, corrected: bool = False) -> MMDBound:
    r"""Generic MMD error bound of Theorem D.1 (Appendix D): Lemma C.1 for each distribution.

    With probability at least :math:`1-2\delta`, :math:`|\mathrm{MMD}(\rho_1,\rho_2)
    - \widehat{\mathrm{MMD}}|` is at most the sum over :math:`k` of the bound of
    :func:`lemma_c1_bound` at :math:`(\lambda_k, \mathcal N^{(\rho_k)}(\lambda_k),
    \mathcal N^{(\rho_k)}_\infty(\lambda_k), n_k, m_k)`, provided both sets of
    conditions hold. (The statement writes :math:`\mathcal N^{(\rho_k)}(\lambda)`
    in the last term; it is :math:`\lambda_k`, as the proof applies Lemma C.1 to
    each distribution.)

    Parameters
    ----------
    lam, eff_dim, eff_dim_inf : pair of float
        :math:`\lambda_k`, :math:`\mathcal N^{(\rho_k)}(\lambda_k)`,
        :math:`\mathcal N^{(\rho_k)}_\infty(\lambda_k)`.
    K : float > 0
        :math:`\sup_x\|\phi(x)\|`.
    n, m : pair of int
        Sample and subsample sizes, ``m_k <= n_k``.
    delta : float in (0, 1)
        Confidence level (the bound holds with probability ``1 - 2 delta``).
    op_norm : pair of float, optional
        :math:`(\|C_1\|, \|C_2\|)`, to check :math:`\lambda_k \le \|C_k\|`.
    corrected : bool, default=False
        See :func:`lemma_c1_bound`.

    Returns
    -------
    MMDBound
    """
    lam, eff_dim, eff_dim_inf = _pair(lam, "lam"), _pair(eff_dim, "eff_dim"), _pair(eff_dim_inf,
                                                                                     "eff_dim_inf")
    n, m = _pair(n, "n"), _pair(m, "m")
    ops = (None, None) if op_norm is None else _pair(op_norm, "op_norm")
    parts = []
    for k in range(2):
        args = dict(lam=_positive(lam[k], f"lam[{k}]"),
                    eff_dim=_nonnegative(eff_dim[k], f"eff_dim[{k}]"),
                    eff_dim_inf=_nonnegative(eff_dim_inf[k], f"eff_dim_inf[{k}]"),
                    n=_count(n[k], f"n[{k}]"), m=_count(m[k], f"m[{k}]"))
        _check_m_le_n(args["m"], args["n"], f"m[{k}]", f"n[{k}]")
        opk = None if ops[k] is None else _positive(ops[k], f"op_norm[{k}]")
        parts.append(lemma_c1_bound(K=K, delta=delta, op_norm=opk, corrected=corrected, **args))
    return MMDBound(value=parts[0].value + parts[1].value, parts=tuple(parts),
                    confidence=1.0 - 2.0 * parts[0].delta)


# --------------------------------------------------------------------------- #
# Corollary 4.1
# --------------------------------------------------------------------------- #
_DECAYS = ("polynomial", "logarithmic")


def corollary41_n_landmarks(n: int, delta: float, decay: str, *, gamma: Optional[float] = None,
                            c: Optional[float] = None, K: float = 1.0, cap: bool = True) -> int:
    r"""Subsample size of Corollary 4.1 for an assumed decay of the effective dimension.

    * ``decay="polynomial"``, :math:`\mathcal N(\lambda) \le c\lambda^{-\gamma}`,
      :math:`\gamma\in]0,1]`: :math:`m = n^{1/(2-\gamma)}\log(n/\delta)`;
    * ``decay="logarithmic"``, :math:`\mathcal N(\lambda) \le \log(1+c/\lambda)/\beta`:
      :math:`m = \sqrt n\log\big(\sqrt n\max(1/\delta, c/(6K^2))\big)`.

    Either choice gives :math:`\|\mu - \hat\mu_m\| = O(1/\sqrt n)` (when the
    conditions of Theorem 4.1 also hold). Neither depends on :math:`\beta`, nor the
    polynomial one on :math:`c`.

    Parameters
    ----------
    n : int >= 1
        Number of data points.
    delta : float in (0, 1)
        Confidence level.
    decay : {"polynomial", "logarithmic"}
        Which assumption of the corollary.
    gamma : float in (0, 1]
        Exponent (``decay="polynomial"`` only, required there).
    c : float > 0
        Scale (``decay="logarithmic"`` only, required there).
    K : float > 0, default=1
        :math:`\sup_x\|\phi(x)\|` (logarithmic case).
    cap : bool, default=True
        Clip the result to ``[1, n]`` (Theorem 4.1 needs ``m <= n``); otherwise
        only rounded up.

    Returns
    -------
    int
        :math:`\lceil m\rceil`, clipped to ``[1, n]`` when ``cap``.
    """
    n = _count(n, "n")
    delta = _probability(delta)
    if decay not in _DECAYS:
        raise ValueError(f"decay must be one of {_DECAYS}, got {decay!r}")
    K = _positive(K, "K")
    if decay == "polynomial":
        if gamma is None:
            raise ValueError("gamma is required for decay='polynomial'")
        gamma = _real(gamma, "gamma")
        if not 0.0 < gamma <= 1.0:
            raise ValueError(f"gamma must lie in (0, 1], got {gamma!r}")
        m_real = n ** (1.0 / (2.0 - gamma)) * math.log(n / delta)
    else:
        if c is None:
            raise ValueError("c is required for decay='logarithmic'")
        c = _positive(c, "c")
        root = math.sqrt(n)
        m_real = root * math.log(root * max(1.0 / delta, c / (6.0 * K * K)))
    m = max(1, math.ceil(m_real))
    return int(min(m, n)) if cap else int(m)


# --------------------------------------------------------------------------- #
# spectrum estimation
# --------------------------------------------------------------------------- #
def _kernel_diag(kernel: Kernel, X: np.ndarray) -> np.ndarray:
    """k(x_i, x_i) for each row, without an n x n matrix."""
    if kernel.radial:
        return np.ones(X.shape[0])
    name = getattr(kernel, "name", "")
    sq = np.einsum("ij,ij->i", X, X) / float(kernel.bandwidth) ** 2
    if name == "linear":
        return sq
    if name == "polynomial":
        return (sq + kernel.offset) ** kernel.degree  # type: ignore[attr-defined]
    return np.array([kernel(X[i:i + 1], X[i:i + 1])[0, 0] for i in range(X.shape[0])])


class CovarianceSpectrum:
    r"""Estimated spectrum of the covariance operator :math:`C` (Section 4.1).

    Built by :func:`estimate_spectrum`. Holds the estimated eigenvalues of
    :math:`C = E[\phi(x)\otimes\phi(x)]` (uncentred), and an orthonormal basis of
    :math:`\mathrm{span}\{\phi(z_1), \dots, \phi(z_s)\}` (``z`` the subsample) in
    which the estimated covariance is diagonal, so that
    :math:`\mathcal N(\lambda)`, :math:`\mathcal N_x(\lambda)` and :math:`\|C\|` are
    cheap to evaluate.

    Attributes
    ----------
    eigenvalues : ndarray of shape (r,)
        Estimated eigenvalues of :math:`C`, non-negative, in decreasing order.
    n_samples : int
        Rows of the data.
    n_used : int
        Subsample size ``s`` (landmarks of the basis).
    method : str
        ``"subsample"``: eigenvalues of :math:`K_s/s`; ``"nystrom"``: eigenvalues of
        the Nyström approximation :math:`\frac1n K_{ns}K_s^+K_{sn}` (all ``n`` points,
        projected on the subsample's features).
    kernel : Kernel
        The kernel, with a numeric bandwidth.
    K : float
        :math:`\sup_x\sqrt{k(x,x)}`: ``kernel.sup_norm`` when finite, else the plug-in
        :math:`\max_i\sqrt{k(x_i,x_i)}` over the data (see ``K_is_plugin``).
    K_is_plugin : bool
    """

    def __init__(self, *, eigenvalues: np.ndarray, n_samples: int, n_used: int, method: str,
                 kernel: Kernel, K: float, K_is_plugin: bool, basis_points: np.ndarray,
                 basis: np.ndarray, cov_vectors: Optional[np.ndarray], cov_values: np.ndarray,
                 eval_points: np.ndarray, n_threads: Optional[int] = None) -> None:
        self.eigenvalues = eigenvalues
        self.n_threads = n_threads
        self.n_samples = n_samples
        self.n_used = n_used
        self.method = method
        self.kernel = kernel
        self.K = K
        self.K_is_plugin = K_is_plugin
        self._Z = basis_points
        self._B = basis                 # (s, r): coordinates c(x) = B^T k_Z(x)
        self._V = cov_vectors           # (r, r) or None (identity)
        self._sigma = cov_values        # (r,): covariance eigenvalues in those coordinates
        self._eval = eval_points

    def __repr__(self) -> str:
        return (f"CovarianceSpectrum(method={self.method!r}, n_samples={self.n_samples}, "
                f"n_used={self.n_used}, op_norm={self.op_norm:.4g}, trace={self.trace:.4g})")

    @property
    def op_norm(self) -> float:
        r""":math:`\|C\|_{\mathcal L(\mathcal H)}`: the largest estimated eigenvalue."""
        return float(self.eigenvalues[0]) if self.eigenvalues.size else 0.0

    @property
    def trace(self) -> float:
        r""":math:`\mathrm{tr}(C) = E\,k(x,x)` estimated by the sum of the eigenvalues."""
        return float(self.eigenvalues.sum())

    def effective_dimension(self, lam: Any) -> Any:
        r"""Effective dimension :math:`\mathcal N(\lambda) = \mathrm{tr}(CC_\lambda^{-1})` (eq. 6b).

        Evaluated as :math:`\sum_i \hat\sigma_i/(\hat\sigma_i+\lambda)` over the
        estimated eigenvalues.

        Parameters
        ----------
        lam : float > 0 or array of them

        Returns
        -------
        float, or ndarray of the shape of ``lam``
        """
        arr = np.asarray(lam, dtype=np.float64) if not isinstance(lam, numbers.Real) else None
        if arr is None:
            lam_f = _positive(lam, "lam")
            return float(np.sum(self.eigenvalues / (self.eigenvalues + lam_f)))
        if not (np.isfinite(arr).all() and (arr > 0).all()):
            raise ValueError("lam must contain finite numbers > 0")
        ev = self.eigenvalues
        flat = arr.reshape(-1)
        out = np.array([np.sum(ev / (ev + x)) for x in flat])
        return out.reshape(arr.shape)

    def __call__(self, lam: Any) -> Any:
        """Alias of :meth:`effective_dimension`."""
        return self.effective_dimension(lam)

    def leverage(self, Y: Any, lam: float) -> np.ndarray:
        r""":math:`\mathcal N_x(\lambda)=\langle\phi(x), C_\lambda^{-1}\phi(x)\rangle` (eq. 6a) at rows of Y.

        With :math:`C` replaced by its estimate :math:`\hat C` (diagonal in the
        basis of the subsample's features): :math:`\mathcal N_x(\lambda) =
        \|P^\perp\phi(x)\|^2/\lambda + \sum_j \langle v_j, \phi(x)\rangle^2/
        (\hat\sigma_j+\lambda)`. Costs :math:`O(s(d + r))` per point.

        Parameters
        ----------
        Y : array-like of shape (n_points, n_features)
        lam : float > 0

        Returns
        -------
        ndarray of shape (n_points,)
        """
        lam = _positive(lam, "lam")
        Y = as_data_matrix(Y, "Y")
        if Y.shape[1] != self._Z.shape[1]:
            raise ValueError(f"Y has {Y.shape[1]} features but the spectrum was fitted on "
                             f"{self._Z.shape[1]}")
        Y = np.ascontiguousarray(Y, dtype=np.float64)
        out = np.empty(Y.shape[0])
        for start in range(0, Y.shape[0], _CHUNK):
            Yc = Y[start:start + _CHUNK]
            coords = self._B.T @ self.kernel(self._Z, Yc, n_threads=self.n_threads)  # (r, b)
            if self._V is not None:
                coords = self._V.T @ coords
            sq = coords * coords
            resid = np.maximum(_kernel_diag(self.kernel, Yc) - sq.sum(axis=0), 0.0)
            out[start:start + _CHUNK] = resid / lam + (sq / (self._sigma[:, None] + lam)).sum(axis=0)
        return out

    def max_leverage(self, lam: float, Y: Any = None) -> float:
        r""":math:`\mathcal N_\infty(\lambda) = \sup_x\mathcal N_x(\lambda)` (eq. 6c), estimated.

        The supremum is taken over the rows of ``Y``, by default the subsample and
        up to ``n_used`` further held-out data points; it never exceeds the
        always-valid bound :math:`K^2/\lambda`.

        Parameters
        ----------
        lam : float > 0
        Y : array-like of shape (n_points, n_features), optional

        Returns
        -------
        float
        """
        lam = _positive(lam, "lam")
        pts = self._eval if Y is None else Y
        return float(min(self.leverage(pts, lam).max(), self.K ** 2 / lam))

    @property
    def reliable_lambda(self) -> float:
        r"""Smallest :math:`\lambda` at which the estimate of :math:`\mathcal N` is trusted.

        The :math:`\lambda` where :math:`\hat{\mathcal N}(\lambda) = s/10`, ``s`` the
        subsample size (below it, a subsample of ``s`` points cannot resolve the
        eigenvalues that matter; Lemma E.6 asks :math:`s \gtrsim 12\mathcal
        N_\infty(\lambda)\log(2/\delta)`). 0 when ``s`` covers all the data.
        """
        cached = self.__dict__.get("_reliable_lambda")
        if cached is None:
            cached = self._reliable_lambda = self._compute_reliable_lambda()
        return cached

    def _compute_reliable_lambda(self) -> float:
        if self.n_used >= self.n_samples:
            return 0.0
        target = _RELIABLE_FRACTION * self.n_used
        ev = self.eigenvalues[self.eigenvalues > 0]
        if ev.size == 0 or ev.size <= target:
            return 0.0
        lo, hi = ev[-1] * 1e-6, ev[0] * 1e6
        for _ in range(200):  # bisection in log scale; N is decreasing in lambda
            mid = math.sqrt(lo * hi)
            if np.sum(ev / (ev + mid)) > target:
                lo = mid
            else:
                hi = mid
            if hi / lo < 1.0 + 1e-9:
                break
        return float(hi)


_METHODS = ("subsample", "nystrom")


def _resolve_kernel(kernel: Any, X: np.ndarray, rng: np.random.Generator) -> Kernel:
    try:
        kern = get_kernel(kernel)
    except ValueError as err:
        raise ValueError(f"kernel: {err}") from None
    return kern.resolve(X, rng)


def _sup_norm(kernel: Kernel, X: np.ndarray) -> Tuple[float, bool]:
    K = float(kernel.sup_norm)
    if math.isfinite(K):
        return K, False
    diag = np.concatenate([_kernel_diag(kernel, X[i:i + _CHUNK])
                           for i in range(0, X.shape[0], _CHUNK)])
    return float(math.sqrt(max(float(diag.max()), np.finfo(float).tiny))), True


def estimate_spectrum(X: Any, kernel: Any, *, max_samples: int = 1000, method: str = "subsample",
                      random_state: Any = None, n_threads: Optional[int] = None) -> CovarianceSpectrum:
    r"""Estimate the spectrum of the covariance operator :math:`C` from data (Section 4.1).

    ``method="subsample"`` (default): draw ``s = min(n, max_samples)`` rows without
    replacement and take the eigenvalues of :math:`K_s/s`, those of the empirical
    (uncentred) covariance :math:`\frac1s\sum_i\phi(z_i)\otimes\phi(z_i)`; with
    ``s = n`` they are exactly the eigenvalues of :math:`K_n/n`. Costs
    :math:`O(s^2 d + s^3)` time and :math:`O(s^2)` memory.

    ``method="nystrom"``: the same ``s`` rows are Nyström landmarks; the eigenvalues
    are those of :math:`\frac1n\sum_{i\le n}P\phi(x_i)\otimes P\phi(x_i)`, ``P`` the
    projection on the landmarks' features, i.e. of :math:`\frac1n K_s^{+1/2}
    K_{sn}K_{ns}K_s^{+1/2}`. Uses all ``n`` points in :math:`O(n s (d + s))` time and
    :math:`O(s^2)` memory (``K_sn`` is formed in blocks); it under-estimates the
    tail of the spectrum (a projection), which the subsample method does not.

    No ``n x n`` matrix is formed by either.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    kernel : Kernel or str
        ``bandwidth="median"`` is resolved on X with ``random_state``.
    max_samples : int >= 1, default=1000
        Subsample size cap ``s``.
    method : {"subsample", "nystrom"}, default="subsample"
    random_state : None, int or numpy.random.Generator
    n_threads : int or None
        OpenMP threads for the kernel evaluations (None: all).

    Returns
    -------
    CovarianceSpectrum
        With :meth:`~CovarianceSpectrum.effective_dimension`,
        :meth:`~CovarianceSpectrum.max_leverage` and
        :attr:`~CovarianceSpectrum.op_norm`.
    """
    X = as_data_matrix(X, "X")
    if isinstance(max_samples, (bool, np.bool_)) or not isinstance(max_samples, numbers.Integral) \
            or max_samples < 1:
        raise ValueError(f"max_samples must be a positive integer, got {max_samples!r}")
    if method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}, got {method!r}")
    rng = check_random_state(random_state)
    n_threads_arg(n_threads)
    kern = _resolve_kernel(kernel, X, rng)
    X = np.ascontiguousarray(X, dtype=np.float64)
    n = X.shape[0]
    s = int(min(n, max_samples))
    perm = rng.permutation(n) if s < n else np.arange(n)
    Z = X[perm[:s]]
    held_out = X[perm[s:2 * s]]
    K, plugin = _sup_norm(kern, X)

    Ks = kern(Z, n_threads=n_threads)
    Ks = 0.5 * (Ks + Ks.T)
    w, U = np.linalg.eigh(Ks)
    w, U = w[::-1], U[:, ::-1]
    top = max(float(w[0]), 0.0)
    keep = w > max(top * s * np.finfo(float).eps * 10.0, np.finfo(float).tiny)
    wr, Ur = w[keep], U[:, keep]
    B = Ur / np.sqrt(wr)                                   # c(x) = B^T k_Z(x)
    if method == "subsample":
        eigenvalues = np.maximum(w, 0.0) / s
        V, sigma = None, wr / s
    else:
        G = np.zeros((wr.size, wr.size))
        for start in range(0, n, _CHUNK):
            Cc = B.T @ kern(Z, X[start:start + _CHUNK], n_threads=n_threads)
            G += Cc @ Cc.T
        G = 0.5 * (G + G.T) / n
        sig, V = np.linalg.eigh(G)
        sig, V = np.maximum(sig[::-1], 0.0), V[:, ::-1]
        eigenvalues, sigma = sig.copy(), sig
    eval_points = np.concatenate([Z, held_out]) if held_out.size else Z
    return CovarianceSpectrum(eigenvalues=np.ascontiguousarray(eigenvalues), n_samples=n, n_used=s,
                              method=method, kernel=kern, K=K, K_is_plugin=plugin, basis_points=Z,
                              basis=B, cov_vectors=V, cov_values=sigma, eval_points=eval_points,
                              n_threads=n_threads)


def effective_dimension(X: Any, kernel: Any, lam: Any, **kwargs: Any) -> Any:
    r"""Estimated effective dimension :math:`\mathcal N(\lambda) = \mathrm{tr}(CC_\lambda^{-1})` (eq. 6b).

    Shortcut for ``estimate_spectrum(X, kernel, **kwargs).effective_dimension(lam)``;
    see :func:`estimate_spectrum` for ``max_samples``, ``method``, ``random_state``.
    """
    return estimate_spectrum(X, kernel, **kwargs).effective_dimension(lam)


def max_leverage(X: Any, kernel: Any, lam: float, **kwargs: Any) -> float:
    r"""Estimated :math:`\mathcal N_\infty(\lambda) = \sup_x \mathcal N_x(\lambda)` (eq. 6c).

    Shortcut for ``estimate_spectrum(X, kernel, **kwargs).max_leverage(lam)``: the
    largest :math:`\mathcal N_x(\lambda)` over the subsample and up to as many
    held-out rows, capped by :math:`K^2/\lambda`.
    """
    return estimate_spectrum(X, kernel, **kwargs).max_leverage(lam)


def covariance_norm(X: Any, kernel: Any, **kwargs: Any) -> float:
    r"""Estimated :math:`\|C\|_{\mathcal L(\mathcal H)}`, the top eigenvalue of the covariance (Sec. 4.1).

    Shortcut for ``estimate_spectrum(X, kernel, **kwargs).op_norm``.
    """
    return estimate_spectrum(X, kernel, **kwargs).op_norm


# --------------------------------------------------------------------------- #
# decay of the spectrum and choice of m
# --------------------------------------------------------------------------- #
@dataclass(frozen=True)
class DecayFit:
    r"""Fitted decay of the covariance eigenvalues, in the terms of Corollary 4.1.

    Attributes
    ----------
    model : {"polynomial", "logarithmic"} or None
        ``"polynomial"``: :math:`\sigma_i \approx A i^{-1/\gamma}`, hence
        :math:`\mathcal N(\lambda) \le c\lambda^{-\gamma}`; ``"logarithmic"``:
        :math:`\sigma_i \approx A e^{-\beta i}`, hence
        :math:`\mathcal N(\lambda) \le \log(1+c/\lambda)/\beta` (Della Vecchia et
        al. 2021, Props. 4 and 5, quoted after Corollary 4.1). None when no fit
        was possible.
    params : dict
        ``{"gamma", "c", "alpha"}`` (``alpha = 1/gamma`` before clipping ``gamma`` to
        ``(0, 1]``) or ``{"beta", "c", "A"}``.
    r2_polynomial, r2_exponential : float
        Coefficients of determination of the two least-squares fits of
        :math:`\log\hat\sigma_i` (against :math:`\log i`, resp. :math:`i`).
    n_fit : int
        Number of eigenvalues fitted.
    reliable : bool
        Whether the better fit has ``R^2 >= 0.95`` on at least 6 eigenvalues.
    lambda_range : tuple of float
        :math:`[\lambda_{lo}, \|C\|]` over which ``c`` was set so that the model
        bounds the estimated :math:`\mathcal N`.
    """

    model: Optional[str]
    params: dict = field(default_factory=dict)
    r2_polynomial: float = float("nan")
    r2_exponential: float = float("nan")
    n_fit: int = 0
    reliable: bool = False
    lambda_range: Tuple[float, float] = (float("nan"), float("nan"))

    def effective_dimension(self, lam: float) -> float:
        """The fitted model's bound on N(lam) (nan without a model)."""
        lam = _positive(lam, "lam")
        if self.model == "polynomial":
            return self.params["c"] * lam ** (-self.params["gamma"])
        if self.model == "logarithmic":
            return math.log1p(self.params["c"] / lam) / self.params["beta"]
        return float("nan")


def _r2(y: np.ndarray, x: np.ndarray) -> Tuple[float, float, float]:
    A = np.column_stack([np.ones_like(x), x])
    coef, *_ = np.linalg.lstsq(A, y, rcond=None)
    r = y - A @ coef
    ss = float(((y - y.mean()) ** 2).sum())
    return float(coef[0]), float(coef[1]), (1.0 - float(r @ r) / ss) if ss > 0 else float("nan")


def fit_spectral_decay(eigenvalues: Any, n_used: Optional[int] = None) -> DecayFit:
    r"""Fit polynomial vs exponential decay to covariance eigenvalues (for Corollary 4.1).

    Fits :math:`\log\hat\sigma_i = a - \alpha\log i` (polynomial decay,
    :math:`\gamma = 1/\alpha` clipped to :math:`]0, 1]`; :math:`\gamma=1` always
    holds since :math:`\mathcal N(\lambda) \le \mathrm{tr}(C)/\lambda`) and
    :math:`\log\hat\sigma_i = a - \beta i` (exponential decay, i.e. the logarithmic
    effective dimension of Corollary 4.1) by least squares over the head of the
    spectrum, and keeps the model with the larger :math:`R^2`. The head is the
    eigenvalues :math:`i \le \max(6, s/10)` (``s = n_used``; beyond, a subsample of
    ``s`` points does not resolve them) that exceed :math:`10^{-10}\hat\sigma_1`.
    Then the constant ``c`` is the smallest making the model an upper bound of the
    estimated :math:`\hat{\mathcal N}(\lambda)` on a grid of
    :math:`\lambda \in [\lambda_{lo}, \hat\sigma_1]`, where
    :math:`\hat{\mathcal N}(\lambda_{lo}) = s/10`.

    Parameters
    ----------
    eigenvalues : array-like of shape (r,)
        Estimated eigenvalues of :math:`C` (any order; negatives are clipped to 0).
    n_used : int, optional
        Sample size they were estimated from (default: ``len(eigenvalues)``).

    Returns
    -------
    DecayFit
    """
    try:
        ev = np.asarray(eigenvalues, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise ValueError(f"eigenvalues must be a numeric array, got {eigenvalues!r}") from None
    if ev.size == 0 or not np.isfinite(ev).all():
        raise ValueError("eigenvalues must be a non-empty array of finite numbers")
    ev = np.sort(np.maximum(ev, 0.0))[::-1]
    s = ev.size if n_used is None else _count(n_used, "n_used")
    if not ev[0] > 0:
        return DecayFit(model=None)
    head = int(max(_MIN_FIT_POINTS, s * _RELIABLE_FRACTION))
    idx = np.arange(1, ev.size + 1)
    sel = (idx <= head) & (ev > 1e-10 * ev[0])
    i, y = idx[sel].astype(float), np.log(ev[sel])
    if i.size < 3:
        return DecayFit(model=None, n_fit=int(i.size))
    a_p, slope_p, r2_p = _r2(y, np.log(i))
    a_e, slope_e, r2_e = _r2(y, i)
    r2p = r2_p if math.isfinite(r2_p) else -math.inf
    r2e = r2_e if math.isfinite(r2_e) else -math.inf

    # lambda grid on which the model must dominate the estimated N
    top = float(ev[0])
    target = _RELIABLE_FRACTION * s
    if ev.size > target and s > 1:
        lo, hi = top * 1e-12, top
        for _ in range(200):
            mid = math.sqrt(lo * hi)
            if np.sum(ev / (ev + mid)) > target:
                lo = mid
            else:
                hi = mid
            if hi / lo < 1.0 + 1e-6:
                break
        lam_lo = min(hi, top)
    else:
        lam_lo = top * 1e-6
    grid = np.geomspace(lam_lo, top, 40)
    N_hat = np.array([np.sum(ev / (ev + x)) for x in grid])

    if r2p >= r2e and slope_p < 0:
        alpha = -slope_p
        gamma = float(min(1.0, 1.0 / alpha))
        c = float(np.max(N_hat * grid ** gamma))
        fit = DecayFit(model="polynomial", params={"gamma": gamma, "c": c, "alpha": alpha},
                       r2_polynomial=r2_p, r2_exponential=r2_e, n_fit=int(i.size),
                       reliable=bool(i.size >= _MIN_FIT_POINTS and r2p >= _MIN_R2),
                       lambda_range=(float(lam_lo), top))
    elif slope_e < 0:
        beta = -slope_e
        c = float(np.max(grid * np.expm1(np.minimum(beta * N_hat, 700.0))))
        fit = DecayFit(model="logarithmic", params={"beta": beta, "c": c, "A": math.exp(a_e)},
                       r2_polynomial=r2_p, r2_exponential=r2_e, n_fit=int(i.size),
                       reliable=bool(i.size >= _MIN_FIT_POINTS and r2e >= _MIN_R2),
                       lambda_range=(float(lam_lo), top))
    else:
        fit = DecayFit(model=None, r2_polynomial=r2_p, r2_exponential=r2_e, n_fit=int(i.size))
    return fit


@dataclass(frozen=True)
class LandmarkSuggestion:
    """Number of landmarks chosen by :func:`suggest_n_landmarks`, with its justification.

    Attributes
    ----------
    n_landmarks : int
        The suggested ``m`` (``1 <= m <= n``).
    decay : str
        ``"polynomial"`` or ``"logarithmic"`` (Corollary 4.1 case used), or
        ``"fallback"`` (``ceil(sqrt(n) log sqrt(n))``, fit unreliable).
    params : dict
        Fitted decay parameters (see :class:`DecayFit`), plus the fit's ``r2``.
    bound : float
        Theorem 4.1 bound on ``||mu - mu_hat_m||`` at the suggested ``m`` with the
        estimated ``N(lambda_m)`` (probability ``1 - delta``); a guarantee only if
        ``bound_valid``.
    bound_valid : bool
        Whether ``m`` meets the condition of Theorem 4.1 with the estimated ``||C||``.
    min_landmarks : int
        Smallest ``m`` meeting that condition (:func:`theorem41_min_landmarks`).
    lam : float
        ``lambda_m = 12 K^2 log(m/delta)/m``.
    eff_dim : float
        ``N(lambda_m)`` used in ``bound``.
    op_norm, K : float
        Estimated ``||C||`` and the ``K`` used.
    n_samples : int
    delta : float
    target_error : float or None
    reason : str
        Why this ``m`` (one sentence).
    fit : DecayFit
    """

    n_landmarks: int
    decay: str
    params: dict
    bound: float
    bound_valid: bool
    min_landmarks: int
    lam: float
    eff_dim: float
    op_norm: float
    K: float
    n_samples: int
    delta: float
    target_error: Optional[float]
    reason: str
    fit: DecayFit

    def explain(self) -> str:
        """A human-readable account of the choice."""
        p = self.params
        if self.decay == "polynomial":
            model = (f"polynomial decay: eigenvalues ~ i^(-{p['alpha']:.3g}), so N(lambda) <= "
                     f"{p['c']:.3g} lambda^(-{p['gamma']:.3g}) (R^2 = {p['r2']:.3f})")
        elif self.decay == "logarithmic":
            model = (f"exponential decay: eigenvalues ~ exp(-{p['beta']:.3g} i), so N(lambda) <= "
                     f"log(1 + {p['c']:.3g}/lambda)/{p['beta']:.3g} (R^2 = {p['r2']:.3f})")
        else:
            model = "no reliable decay fit"
        lines = [
            f"n_landmarks = {self.n_landmarks} for n = {self.n_samples} points: {self.reason}",
            f"Spectrum: {model}; ||C|| ~ {self.op_norm:.4g}, K = {self.K:.4g}.",
            (f"Theorem 4.1 bound at delta = {self.delta:g}: ||mu - mu_hat_m|| <= {self.bound:.4g} "
             f"(lambda_m = {self.lam:.4g}, N(lambda_m) ~ {self.eff_dim:.4g})"
             + ("." if self.bound_valid else
                f", but m < {self.min_landmarks}, the size the theorem needs for a guarantee.")),
        ]
        if self.target_error is not None:
            lines.append(f"Target error: {self.target_error:g}.")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.explain()


def _bound_at(m: int, n: int, delta: float, K: float, spectrum: CovarianceSpectrum,
              fit: DecayFit) -> Tuple[float, float, float]:
    lam = theorem41_lambda(m, delta, K)
    N = spectrum.effective_dimension(lam)
    if lam < spectrum.reliable_lambda and fit.reliable:
        N = max(N, fit.effective_dimension(lam))   # extrapolate below the resolved range
    b = theorem41_bound(n, m, delta, N, K)
    return b.value, lam, N


def suggest_n_landmarks(X: Any, kernel: Any = "gaussian", delta: float = 0.05,
                        target_error: Optional[float] = None, *, max_samples: int = 1000,
                        max_landmarks: Optional[int] = None, method: str = "subsample",
                        random_state: Any = None, n_threads: Optional[int] = None
                        ) -> LandmarkSuggestion:
    r"""Suggest the number of landmarks from the spectrum's decay (Corollary 4.1).

    1. Estimate the covariance spectrum on at most ``max_samples`` points
       (:func:`estimate_spectrum`).
    2. Fit polynomial vs exponential decay of the eigenvalues
       (:func:`fit_spectral_decay`).
    3. Without ``target_error``: ``m`` of Corollary 4.1 for the fitted case
       (:func:`corollary41_n_landmarks`): :math:`n^{1/(2-\gamma)}\log(n/\delta)` or
       :math:`\sqrt n\log(\sqrt n\max(1/\delta, c/(6K^2)))`; when the fit is
       unreliable, the fallback :math:`\lceil\sqrt n\log\sqrt n\rceil`
       (:func:`~nystrom_kme.default_n_landmarks`).
       With ``target_error``: the smallest ``m`` whose Theorem 4.1 bound (estimated
       :math:`\mathcal N`) is at most ``target_error``, and at least the theorem's
       minimal ``m`` so that the bound is a guarantee; ``n`` if unattainable.
    4. Clip to ``[1, min(n, max_landmarks)]`` and report the Theorem 4.1 bound there.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    kernel : Kernel or str, default="gaussian"
        ``bandwidth="median"`` is resolved on X.
    delta : float in (0, 1), default=0.05
        Confidence level of the bounds.
    target_error : float > 0, optional
        Desired bound on :math:`\|\mu - \hat\mu_m\|` (RKHS norm).
    max_samples : int, default=1000
        Subsample size for the spectrum.
    max_landmarks : int, optional
        Upper cap on the suggestion (default ``n``). Corollary 4.1's polynomial case
        can ask for ``m`` close to ``n`` (``m = n`` when ``gamma = 1``).
    method : {"subsample", "nystrom"}, default="subsample"
        See :func:`estimate_spectrum`.
    random_state : None, int or numpy.random.Generator
    n_threads : int or None
        OpenMP threads for the kernel evaluations (None: all).

    Returns
    -------
    LandmarkSuggestion
        ``.n_landmarks`` is the suggestion; ``.explain()`` says why.

    Notes
    -----
    Corollary 4.1 is a sufficient condition with loose logarithmic factors, and
    the head of a Gaussian-kernel spectrum in moderate dimension often fits a
    polynomial better than an exponential: on the Section 6.1 mixture (d = 10,
    median bandwidth) the fit gives ``gamma ~ 0.45``, hence
    ``m ~ n^0.65 log(n/delta)`` (about 4600 at ``n = 10^4``), well above the
    ``sqrt(n) log sqrt(n)`` that the paper finds sufficient in practice. Pass
    ``max_landmarks`` to bound the cost (``O(n m d + m^3)`` time, ``O(m^2)`` memory).
    """
    from .embedding import default_n_landmarks

    X = as_data_matrix(X, "X")
    n = X.shape[0]
    delta = _probability(delta)
    if target_error is not None:
        target_error = _positive(target_error, "target_error")
    cap = n if max_landmarks is None else min(n, _count(max_landmarks, "max_landmarks"))
    spectrum = estimate_spectrum(X, kernel, max_samples=max_samples, method=method,
                                 random_state=random_state, n_threads=n_threads)
    K = spectrum.K
    op_norm = spectrum.op_norm
    fit = fit_spectral_decay(spectrum.eigenvalues, spectrum.n_used)
    m_min = theorem41_min_landmarks(op_norm, delta, K) if op_norm > 0 else n + 1

    if fit.reliable and fit.model is not None:
        decay = fit.model
        params = dict(fit.params)
        params["r2"] = fit.r2_polynomial if decay == "polynomial" else fit.r2_exponential
    else:
        decay, params = "fallback", {}

    if target_error is None:
        if decay == "polynomial":
            m = corollary41_n_landmarks(n, delta, "polynomial", gamma=params["gamma"])
            reason = (f"Corollary 4.1, polynomial case: m = n^(1/(2-gamma)) log(n/delta) with "
                      f"gamma = {params['gamma']:.3g}")
        elif decay == "logarithmic":
            m = corollary41_n_landmarks(n, delta, "logarithmic", c=params["c"], K=K)
            reason = "Corollary 4.1, logarithmic case: m = sqrt(n) log(sqrt(n) max(1/delta, c/(6K^2)))"
        else:
            m = default_n_landmarks(n)
            reason = ("the decay fit was unreliable, so the paper's default "
                      "m = sqrt(n) log sqrt(n) is used")
    else:
        c1 = theorem41_constants(K, delta)[0]
        floor = c1 / math.sqrt(n)

        def bound(k: int) -> float:
            return _bound_at(k, n, delta, K, spectrum, fit)[0]

        if floor >= target_error or bound(n) > target_error:
            m = n
            reason = (f"target_error {target_error:g} is out of reach of the Theorem 4.1 bound "
                      f"(its m-free part alone is c1/sqrt(n) = {floor:.4g}); m = n")
        else:
            lo, hi = 0, n            # bound(hi) <= target; bisection (bound decreases with m)
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if bound(mid) <= target_error:
                    hi = mid
                else:
                    lo = mid
            m = max(hi, min(m_min, n))
            reason = (f"smallest m whose Theorem 4.1 bound is <= {target_error:g}"
                      + (f", raised to the theorem's minimal m = {m_min}" if m_min > hi and m_min <= n
                         else ""))
    if m > cap:
        m = cap
        reason += f"; capped at {cap}"
    m = int(max(1, m))
    value, lam, N = _bound_at(m, n, delta, K, spectrum, fit)
    valid = bool(4 <= m <= n and m >= m_min)
    if spectrum.K_is_plugin:
        reason += " (unbounded kernel: K is the plug-in max_i sqrt(k(x_i, x_i)))"
    return LandmarkSuggestion(n_landmarks=m, decay=decay, params=params, bound=value,
                              bound_valid=valid, min_landmarks=int(m_min), lam=lam, eff_dim=float(N),
                              op_norm=op_norm, K=K, n_samples=n, delta=delta,
                              target_error=target_error, reason=reason + ".", fit=fit)
