"""Decay of the covariance eigenvalues, in the terms of Corollary 4.1.

:func:`fit_spectral_decay` fits polynomial vs exponential decay to estimated
eigenvalues (from :func:`nystrom_kme.bounds.estimate_spectrum`) and returns a
:class:`DecayFit`: the model, its parameters and the bound it gives on the
effective dimension N(lambda).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from .._blas import one_blas_thread
from ._checks import RELIABLE_FRACTION, count, lambda_at_dimension, positive

__all__ = ["DecayFit", "fit_spectral_decay"]

#: Smallest number of eigenvalues a decay fit needs, and the R^2 it must reach.
_MIN_FIT_POINTS = 6
_MIN_R2 = 0.95


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

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_kme import bounds
    >>> fit = bounds.fit_spectral_decay(np.arange(1, 200) ** -2.0, n_used=1000)
    >>> fit.reliable, round(fit.r2_polynomial, 3)
    (True, 1.0)
    >>> bool(fit.effective_dimension(1e-3) > fit.effective_dimension(1e-2))
    True
    """

    model: str | None
    params: dict[str, float] = field(default_factory=dict)
    r2_polynomial: float = float("nan")
    r2_exponential: float = float("nan")
    n_fit: int = 0
    reliable: bool = False
    lambda_range: tuple[float, float] = (float("nan"), float("nan"))

    def effective_dimension(self, lam: float) -> float:
        """The fitted model's bound on the effective dimension N(lam) (nan without a model).

        Parameters
        ----------
        lam : float > 0
            The regularisation parameter lambda.

        Returns
        -------
        float
        """
        lam = positive(lam, "lam")
        if self.model == "polynomial":
            bound: float = self.params["c"] * lam ** (-self.params["gamma"])
            return bound
        if self.model == "logarithmic":
            return math.log1p(self.params["c"] / lam) / self.params["beta"]
        return float("nan")


def _r2(y: np.ndarray, x: np.ndarray) -> tuple[float, float, float]:
    """Least-squares line y ~ a + b x: ``(a, b, R^2)``."""
    A = np.column_stack([np.ones_like(x), x])
    with one_blas_thread():  # the same bits for any thread setting (see _blas)
        coef, *_ = np.linalg.lstsq(A, y, rcond=None)
        r = y - A @ coef
    ss = float(((y - y.mean()) ** 2).sum())
    return float(coef[0]), float(coef[1]), (1.0 - float(r @ r) / ss) if ss > 0 else float("nan")


def fit_spectral_decay(eigenvalues: ArrayLike, n_used: int | None = None) -> DecayFit:
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

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_kme import bounds
    >>> fit = bounds.fit_spectral_decay(np.exp(-0.5 * np.arange(1, 40)), n_used=1000)
    >>> fit.model, round(fit.params["beta"], 3)
    ('logarithmic', 0.5)
    >>> fit = bounds.fit_spectral_decay(np.arange(1, 200) ** -2.0, n_used=1000)
    >>> fit.model, round(fit.params["alpha"], 3)
    ('polynomial', 2.0)
    """
    try:
        ev = np.asarray(eigenvalues, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise ValueError(f"eigenvalues must be a numeric array, got {eigenvalues!r}") from None
    if ev.size == 0 or not np.isfinite(ev).all():
        raise ValueError("eigenvalues must be a non-empty array of finite numbers")
    ev = np.sort(np.maximum(ev, 0.0))[::-1]
    s = ev.size if n_used is None else count(n_used, "n_used")
    if not ev[0] > 0:
        return DecayFit(model=None)
    head = int(max(_MIN_FIT_POINTS, s * RELIABLE_FRACTION))
    idx = np.arange(1, ev.size + 1)
    sel = (idx <= head) & (ev > 1e-10 * ev[0])
    i, y = idx[sel].astype(float), np.log(ev[sel])
    if i.size < 3:
        return DecayFit(model=None, n_fit=int(i.size))
    _, slope_p, r2_p = _r2(y, np.log(i))
    a_e, slope_e, r2_e = _r2(y, i)
    r2p = r2_p if math.isfinite(r2_p) else -math.inf
    r2e = r2_e if math.isfinite(r2_e) else -math.inf

    # lambda grid on which the model must dominate the estimated N
    top = float(ev[0])
    target = RELIABLE_FRACTION * s
    if ev.size > target and s > 1:
        lam_lo = min(lambda_at_dimension(ev, target, top * 1e-12, top, 1e-6), top)
    else:
        lam_lo = top * 1e-6
    grid = np.geomspace(lam_lo, top, 40)
    N_hat = np.array([np.sum(ev / (ev + x)) for x in grid])

    if r2p >= r2e and slope_p < 0:
        alpha = -slope_p
        gamma = float(min(1.0, 1.0 / alpha))
        c = float(np.max(N_hat * grid**gamma))
        fit = DecayFit(
            model="polynomial",
            params={"gamma": gamma, "c": c, "alpha": alpha},
            r2_polynomial=r2_p,
            r2_exponential=r2_e,
            n_fit=int(i.size),
            reliable=bool(i.size >= _MIN_FIT_POINTS and r2p >= _MIN_R2),
            lambda_range=(float(lam_lo), top),
        )
    elif slope_e < 0:
        beta = -slope_e
        c = float(np.max(grid * np.expm1(np.minimum(beta * N_hat, 700.0))))
        fit = DecayFit(
            model="logarithmic",
            params={"beta": beta, "c": c, "A": math.exp(a_e)},
            r2_polynomial=r2_p,
            r2_exponential=r2_e,
            n_fit=int(i.size),
            reliable=bool(i.size >= _MIN_FIT_POINTS and r2e >= _MIN_R2),
            lambda_range=(float(lam_lo), top),
        )
    else:
        fit = DecayFit(model=None, r2_polynomial=r2_p, r2_exponential=r2_e, n_fit=int(i.size))
    return fit
