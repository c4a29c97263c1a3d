"""The bounds on ``||mu - mu_hat_m||`` of "Nyström Kernel Mean Embeddings" (Section 4, App. C).

The error bounds of Chatalic et al. (ICML 2022) for one distribution, as functions:

* :func:`lemma_c1_bound` -- the generic bound of Lemma C.1 (any lambda), with its
  conditions checked and reported;
* :func:`theorem_4_1_constants`, :func:`theorem_4_1_lambda`, :func:`theorem_4_1_bound`
  -- Theorem 4.1 with the explicit constants of its proof (Appendix C.2);
* :func:`theorem_4_1_condition`, :func:`theorem_4_1_min_landmarks` -- the subsample
  condition ``m >= max(67, 12 K^2 / ||C||) log(m / delta)``, solved exactly with
  Lambert's W function.

The MMD bounds built from these (Theorem 5.1, Theorem D.1) are in
:mod:`nystrom_kme.bounds.mmd_bounds`; the subsample sizes of Corollary 4.1 are in
:mod:`nystrom_kme.bounds.suggest`.

``K = sup_x ||phi(x)|| = sup_x sqrt(k(x, x))`` (Assumption 4.1) is 1 for every
radial kernel of :mod:`nystrom_kme.kernels`; the bounds do not apply to unbounded
kernels (linear, polynomial). ``N(lambda)`` and ``N_inf(lambda)`` are the
effective dimension and its supremum version (eqs. 6b, 6c); see
:mod:`nystrom_kme.bounds.spectrum` for their estimates from data.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Union

from ._checks import (
    all_hold,
    boolean,
    check_m_le_n,
    count,
    eff_dim_at,
    nonnegative,
    positive,
    probability,
)

if TYPE_CHECKING:
    from .spectrum import CovarianceSpectrum

__all__ = [
    "EffDim",
    "LemmaC1Bound",
    "Theorem41Bound",
    "lemma_c1_bound",
    "theorem_4_1_bound",
    "theorem_4_1_condition",
    "theorem_4_1_constants",
    "theorem_4_1_lambda",
    "theorem_4_1_min_landmarks",
]

#: Constant 67 of Lemma F.1 (Rudi et al., 2015, Lemma 6) and of Theorem 4.1.
_C_RUDI = 67.0

#: An effective dimension: its value, a function of lambda, or an estimated spectrum.
EffDim = Union[float, Callable[[float], float], "CovarianceSpectrum"]


# --------------------------------------------------------------------------- #
# Lemma C.1
# --------------------------------------------------------------------------- #
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

    Examples
    --------
    >>> from nystrom_kme import bounds
    >>> b = bounds.lemma_c1_bound(lam=0.01, eff_dim=5.0, eff_dim_inf=20.0, K=1.0, n=10_000, m=2000, delta=0.05)
    >>> round(b.m_required), len(b.terms)
    (1009, 3)
    """

    value: float
    terms: tuple[float, float, float]
    m_condition: bool
    n_condition: bool
    lambda_condition: bool | None
    m_required: float
    lambda_n_required: float
    lam: float
    delta: float

    @property
    def conditions(self) -> dict[str, bool | None]:
        """``{"m": ..., "n": ..., "lambda": ...}``: whether each condition holds."""
        return {"m": self.m_condition, "n": self.n_condition, "lambda": self.lambda_condition}

    @property
    def holds(self) -> bool | None:
        """True if every condition holds, False if one fails, None if one is unknown."""
        return all_hold(self.m_condition, self.n_condition, self.lambda_condition)

    def __float__(self) -> float:
        return float(self.value)


def lemma_c1_bound(
    lam: float,
    eff_dim: float,
    eff_dim_inf: float,
    K: float,
    n: int,
    m: int,
    delta: float,
    *,
    op_norm: float | None = None,
    corrected: bool = False,
) -> LemmaC1Bound:
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
        The regularisation parameter :math:`\lambda` at which the bound is evaluated.
    eff_dim : float >= 0
        The effective dimension :math:`\mathcal N(\lambda) =
        \mathrm{tr}(CC_\lambda^{-1})` of the covariance operator at ``lam`` (eq. 6b).
    eff_dim_inf : float >= 0
        The maximal effective dimension :math:`\mathcal N_\infty(\lambda) =
        \sup_x\mathcal N_x(\lambda)` at ``lam`` (eq. 6c); ``K**2 / lam`` is always valid.
    K : float > 0
        The kernel's bound, :math:`\sup_x \|\phi(x)\| = \sup_x\sqrt{k(x, x)}`
        (Assumption 4.1; 1 for the radial kernels).
    n : int >= 1
        Number of data points.
    m : int, 1 <= m <= n
        Number of landmarks (drawn uniformly with replacement).
    delta : float in (0, 1)
        Failure probability: the bound holds with probability at least ``1 - delta``.
    op_norm : float > 0, optional
        The operator norm :math:`\|C\|` of the covariance (its largest eigenvalue);
        when given, the hypothesis :math:`\lambda \le \|C\|` is checked.
    corrected : bool, default=False
        The proof applies Lemma E.5 at confidence :math:`\delta/3`, whose hypothesis
        is then :math:`\lambda n \ge 12K^2\log(12/\delta)`, not the stated
        :math:`\log(4/\delta)`. ``True`` checks the stricter, consistent version.

    Returns
    -------
    LemmaC1Bound
        The value, its three terms, and whether each condition holds.

    Examples
    --------
    >>> from nystrom_kme import bounds
    >>> b = bounds.lemma_c1_bound(lam=0.01, eff_dim=5.0, eff_dim_inf=20.0, K=1.0, n=10_000, m=2000, delta=0.05)
    >>> round(b.value, 3), b.m_condition, b.n_condition
    (0.141, True, True)
    """
    lam = positive(lam, "lam")
    eff_dim = nonnegative(eff_dim, "eff_dim")
    eff_dim_inf = nonnegative(eff_dim_inf, "eff_dim_inf")
    K = positive(K, "K")
    n = count(n, "n")
    m = count(m, "m")
    check_m_le_n(m, n)
    delta = probability(delta)
    if op_norm is not None:
        op_norm = positive(op_norm, "op_norm")
    corrected = boolean(corrected, "corrected")

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
def theorem_4_1_constants(K: float, delta: float) -> tuple[float, float, float]:
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
        The kernel's bound, :math:`\sup_x\|\phi(x)\| = \sup_x\sqrt{k(x, x)}`
        (Assumption 4.1; 1 for the radial kernels).
    delta : float in (0, 1)
        Failure probability: the bound holds with probability at least ``1 - delta``.

    Returns
    -------
    tuple of float
        ``(c1, c2, c3)``.

    Examples
    --------
    >>> from nystrom_kme import bounds
    >>> c1, c2, c3 = bounds.theorem_4_1_constants(K=1.0, delta=0.05)
    >>> all(c > 0 for c in (c1, c2, c3))
    True
    """
    K = positive(K, "K")
    delta = probability(delta)
    c1 = 2.0 * K * math.sqrt(2.0 * math.log(6.0 / delta))
    c2 = 4.0 * math.sqrt(3.0) * K * math.log(12.0 / delta)
    c3 = 12.0 * math.sqrt(3.0) * K * math.sqrt(math.log(12.0 / delta))
    return c1, c2, c3


def theorem_4_1_lambda(m: int, delta: float, K: float = 1.0) -> float:
    r"""The regularisation of Theorem 4.1: :math:`\lambda_m = 12K^2\log(m/\delta)/m` (App. C.2).

    Parameters
    ----------
    m : int >= 1
        Number of landmarks.
    delta : float in (0, 1)
        Failure probability: the bound holds with probability at least ``1 - delta``.
    K : float > 0, default=1
        The kernel's bound, :math:`\sup_x\|\phi(x)\| = \sup_x\sqrt{k(x, x)}`
        (Assumption 4.1; 1 for the radial kernels).

    Returns
    -------
    float

    Examples
    --------
    >>> from nystrom_kme import bounds
    >>> round(bounds.theorem_4_1_lambda(1000, 0.05), 5)     # 12 log(m / delta) / m
    0.11884
    """
    m = count(m, "m")
    delta = probability(delta)
    K = positive(K, "K")
    return 12.0 * K * K * math.log(m / delta) / m


def theorem_4_1_condition(m: int, op_norm: float, delta: float, K: float = 1.0) -> bool:
    r"""Whether :math:`m \ge \max(67, 12K^2\|C\|^{-1})\log(m/\delta)` (Theorem 4.1).

    Parameters
    ----------
    m : int >= 1
        Number of landmarks.
    op_norm : float > 0
        The operator norm :math:`\|C\|_{\mathcal L(\mathcal H)}` of the covariance,
        i.e. its largest eigenvalue.
    delta : float in (0, 1)
        Failure probability: the bound holds with probability at least ``1 - delta``.
    K : float > 0, default=1
        The kernel's bound, :math:`\sup_x\|\phi(x)\| = \sup_x\sqrt{k(x, x)}`
        (Assumption 4.1; 1 for the radial kernels).

    Returns
    -------
    bool

    Examples
    --------
    >>> from nystrom_kme import bounds
    >>> bounds.theorem_4_1_condition(100, op_norm=0.5, delta=0.05)
    False
    >>> bounds.theorem_4_1_condition(2000, op_norm=0.5, delta=0.05)
    True
    """
    m = count(m, "m")
    op_norm = positive(op_norm, "op_norm")
    delta = probability(delta)
    K = positive(K, "K")
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


def theorem_4_1_min_landmarks(op_norm: float, delta: float, K: float = 1.0) -> int:
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
        The operator norm :math:`\|C\|_{\mathcal L(\mathcal H)}` of the covariance,
        i.e. its largest eigenvalue.
    delta : float in (0, 1)
        Failure probability: the bound holds with probability at least ``1 - delta``.
    K : float > 0, default=1
        The kernel's bound, :math:`\sup_x\|\phi(x)\| = \sup_x\sqrt{k(x, x)}`
        (Assumption 4.1; 1 for the radial kernels).

    Returns
    -------
    int
        The smallest integer :math:`m \ge m^\star`, which satisfies the condition
        while :math:`m - 1` does not.

    Examples
    --------
    >>> from nystrom_kme import bounds
    >>> m = bounds.theorem_4_1_min_landmarks(op_norm=0.5, delta=0.05)
    >>> m, bounds.theorem_4_1_condition(m, 0.5, 0.05), bounds.theorem_4_1_condition(m - 1, 0.5, 0.05)
    (633, True, False)
    """
    op_norm = positive(op_norm, "op_norm")
    delta = probability(delta)
    K = positive(K, "K")
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
        ``(c1, c2, c3)`` from :func:`theorem_4_1_constants`.
    lam : float
        ``12 K^2 log(m/delta) / m``.
    eff_dim : float
        ``N(lam)`` used.
    m_condition : bool or None
        ``m >= max(67, 12 K^2 / ||C||) log(m/delta)``; None when ``op_norm`` is unknown.
    m_min : int or None
        Smallest ``m`` meeting that condition (:func:`theorem_4_1_min_landmarks`).
    delta : float

    Examples
    --------
    >>> from nystrom_kme import bounds
    >>> b = bounds.theorem_4_1_bound(n=10_000, m=1000, delta=0.05, eff_dim=5.0)
    >>> len(b.terms), bool(abs(sum(b.terms) - b.value) < 1e-12 * b.value), round(b.lam, 4)
    (3, True, 0.1188)
    """

    value: float
    terms: tuple[float, float, float]
    constants: tuple[float, float, float]
    lam: float
    eff_dim: float
    m_condition: bool | None
    m_min: int | None
    delta: float

    @property
    def holds(self) -> bool | None:
        """Whether the theorem's condition holds (None if ``op_norm`` was not given)."""
        return self.m_condition

    def __float__(self) -> float:
        return float(self.value)


def theorem_4_1_bound(
    n: int, m: int, delta: float, eff_dim: EffDim, K: float = 1.0, *, op_norm: float | None = None
) -> Theorem41Bound:
    r"""Error bound of Theorem 4.1 with the constants of its proof (App. C.2).

    With probability at least :math:`1-\delta`,

    .. math::

        \|\mu - \hat\mu_m\| \le \frac{c_1}{\sqrt n} + \frac{c_2}{m}
        + \frac{c_3\sqrt{\log(m/\delta)}}{m}\sqrt{\mathcal N(\lambda_m)},\qquad
        \lambda_m = \frac{12K^2\log(m/\delta)}{m},

    provided :math:`4 \le m \le n` and :math:`m \ge \max(67, 12K^2\|C\|^{-1})
    \log(m/\delta)`, with :math:`c_1, c_2, c_3` of :func:`theorem_4_1_constants`
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
        Failure probability: the bound holds with probability at least ``1 - delta``.
    eff_dim : float, callable or CovarianceSpectrum
        The effective dimension of the covariance, :math:`\mathcal N(\lambda_m)`: a
        number, or a function of :math:`\lambda` (or a :class:`CovarianceSpectrum`)
        evaluated at :math:`\lambda_m`.
    K : float > 0, default=1
        The kernel's bound, :math:`\sup_x\|\phi(x)\| = \sup_x\sqrt{k(x, x)}`
        (Assumption 4.1; 1 for the radial kernels).
    op_norm : float > 0, optional
        The operator norm :math:`\|C\|` of the covariance (its largest eigenvalue);
        when given, the condition on ``m`` is checked.

    Returns
    -------
    Theorem41Bound

    Examples
    --------
    >>> from nystrom_kme import bounds
    >>> b = bounds.theorem_4_1_bound(n=10_000, m=1000, delta=0.05, eff_dim=lambda lam: 5.0, op_norm=0.5)
    >>> round(b.value, 3), b.m_condition, b.holds
    (0.442, True, True)
    """
    n = count(n, "n")
    m = count(m, "m")
    check_m_le_n(m, n)
    delta = probability(delta)
    K = positive(K, "K")
    if op_norm is not None:
        op_norm = positive(op_norm, "op_norm")
    lam = theorem_4_1_lambda(m, delta, K)
    N = eff_dim_at(eff_dim, lam)
    c1, c2, c3 = theorem_4_1_constants(K, delta)
    t1 = c1 / math.sqrt(n)
    t2 = c2 / m
    t3 = c3 * math.sqrt(max(math.log(m / delta), 0.0)) * math.sqrt(N) / m
    m_min = None if op_norm is None else theorem_4_1_min_landmarks(op_norm, delta, K)
    cond = None if op_norm is None else bool(m >= 4 and theorem_4_1_condition(m, op_norm, delta, K))
    return Theorem41Bound(
        value=t1 + t2 + t3,
        terms=(t1, t2, t3),
        constants=(c1, c2, c3),
        lam=lam,
        eff_dim=N,
        m_condition=cond,
        m_min=m_min,
        delta=delta,
    )
