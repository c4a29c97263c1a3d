"""Choice of the number of landmarks (Corollary 4.1 and the paper's default).

* :func:`default_n_landmarks` -- the paper's ``m = ceil(sqrt(n) log sqrt(n))``;
* :func:`corollary_4_1_n_landmarks` -- the subsample sizes of Corollary 4.1
  (Section 4.3, proof in Appendix C.2) for an assumed polynomial or logarithmic
  decay of the effective dimension;
* :func:`suggest_n_landmarks` -- ``m`` from the estimated decay of the covariance
  spectrum (Corollary 4.1), or the smallest ``m`` whose Theorem 4.1 bound meets a
  target error, reported as a :class:`LandmarkSuggestion` that explains itself.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from numpy.typing import ArrayLike

from .._validation import RandomStateLike, as_data_matrix
from ..defaults import BOUNDS_DELTA
from ..kernels import Kernel
from ._checks import count, positive, probability, real
from .decay import DecayFit, fit_spectral_decay
from .spectrum import CovarianceSpectrum, estimate_spectrum
from .theorems import (
    theorem_4_1_bound,
    theorem_4_1_constants,
    theorem_4_1_lambda,
    theorem_4_1_min_landmarks,
)

__all__ = [
    "Explanation",
    "LandmarkSuggestion",
    "corollary_4_1_n_landmarks",
    "default_n_landmarks",
    "suggest_n_landmarks",
]


def default_n_landmarks(n_samples: int) -> int:
    """The paper's m = ceil(sqrt(n) log sqrt(n)), at least 1 and at most n (Cor. 4.1).

    Examples
    --------
    >>> from nystrom_kme import bounds
    >>> bounds.default_n_landmarks(10_000), bounds.default_n_landmarks(1_000_000)
    (461, 6908)
    """
    root = math.sqrt(n_samples)
    return int(min(n_samples, max(1, math.ceil(root * math.log(root)))))


#: The two decay assumptions of Corollary 4.1.
_DECAYS = ("polynomial", "logarithmic")


def corollary_4_1_n_landmarks(
    n: int,
    delta: float,
    decay: str,
    *,
    gamma: float | None = None,
    c: float | None = None,
    K: float = 1.0,
    cap: bool = True,
) -> int:
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
        Failure probability of Theorem 4.1 (``m`` grows as ``delta`` shrinks).
    decay : {"polynomial", "logarithmic"}
        Which assumption of the corollary.
    gamma : float in (0, 1]
        Exponent of the polynomial decay :math:`\mathcal N(\lambda) \le c\lambda^{-\gamma}`
        of the effective dimension (``decay="polynomial"`` only, required there).
    c : float > 0
        Scale of the logarithmic decay :math:`\mathcal N(\lambda) \le \log(1+c/\lambda)/\beta`
        of the effective dimension (``decay="logarithmic"`` only, required there).
    K : float > 0, default=1
        The kernel's bound, :math:`\sup_x\|\phi(x)\| = \sup_x\sqrt{k(x, x)}`
        (Assumption 4.1; 1 for the radial kernels); used in the logarithmic case only.
    cap : bool, default=True
        Clip the result to ``[1, n]`` (Theorem 4.1 needs ``m <= n``); otherwise
        only rounded up.

    Returns
    -------
    int
        :math:`\lceil m\rceil`, clipped to ``[1, n]`` when ``cap``.

    Examples
    --------
    >>> from nystrom_kme import bounds
    >>> bounds.corollary_4_1_n_landmarks(10_000, 0.05, "logarithmic", c=1.0)
    761
    >>> bounds.corollary_4_1_n_landmarks(10_000, 0.05, "polynomial", gamma=0.5)
    5666
    """
    n = count(n, "n")
    delta = probability(delta)
    if decay not in _DECAYS:
        raise ValueError(f"decay must be one of {_DECAYS}, got {decay!r}")
    K = positive(K, "K")
    if decay == "polynomial":
        if gamma is None:
            raise ValueError("gamma is required for decay='polynomial'")
        gamma = real(gamma, "gamma")
        if not 0.0 < gamma <= 1.0:
            raise ValueError(f"gamma must lie in (0, 1], got {gamma!r}")
        m_real = n ** (1.0 / (2.0 - gamma)) * math.log(n / delta)
    else:
        if c is None:
            raise ValueError("c is required for decay='logarithmic'")
        c = positive(c, "c")
        root = math.sqrt(n)
        m_real = root * math.log(root * max(1.0 / delta, c / (6.0 * K * K)))
    m = max(1, math.ceil(m_real))
    return int(min(m, n)) if cap else int(m)


class Explanation(str):
    r"""Text whose ``repr`` is the text itself, so it reads as lines at a prompt.

    Returned by :meth:`LandmarkSuggestion.explain`: at an interactive prompt or in a
    notebook, ``suggestion.explain()`` shows the account line by line (instead of one
    quoted string full of ``\n``), while it stays a ``str`` for programs.

    Examples
    --------
    >>> from nystrom_kme.bounds import Explanation
    >>> text = Explanation("first line\nsecond line")
    >>> text
    first line
    second line
    >>> isinstance(text, str), text.splitlines()
    (True, ['first line', 'second line'])
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return str(self)


@dataclass(frozen=True, repr=False)
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
        Smallest ``m`` meeting that condition (:func:`theorem_4_1_min_landmarks`).
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

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> from nystrom_kme import bounds
    >>> X = np.random.default_rng(0).normal(size=(2000, 2))
    >>> s = bounds.suggest_n_landmarks(X, nk.Gaussian(1.0), max_samples=200, random_state=0)
    >>> s                                                     # doctest: +ELLIPSIS
    LandmarkSuggestion(n_landmarks=..., decay='logarithmic', bound=..., bound_valid=False, n_samples=2000, delta=0.05)
    >>> s.explain()                                           # doctest: +ELLIPSIS
    n_landmarks = ... for n = 2000 points: Corollary 4.1, logarithmic case: m = sqrt(n) log(...).
    Spectrum: exponential decay: eigenvalues ~ exp(-... i), so N(lambda) <= log(1 + .../lambda)/... (R^2 = ...); ||C|| ~ ..., K = 1.
    Theorem 4.1 bound at delta = 0.05: ||mu - mu_hat_m|| <= ... (lambda_m = ..., N(lambda_m) ~ ...), but m < ..., the size the theorem needs for a guarantee.
    """  # noqa: E501  (the doctest's expected output)

    n_landmarks: int
    decay: str
    params: dict[str, float]
    bound: float
    bound_valid: bool
    min_landmarks: int
    lam: float
    eff_dim: float
    op_norm: float
    K: float
    n_samples: int
    delta: float
    target_error: float | None
    reason: str
    fit: DecayFit

    def explain(self) -> Explanation:
        """A human-readable account of the choice, one statement per line.

        Returns an :class:`Explanation`, a ``str`` whose ``repr`` is the text itself:
        typed at a prompt it prints as lines; ``print(s.explain())`` and ``str(s)``
        give the same text.
        """
        p = self.params
        if self.decay == "polynomial":
            model = (
                f"polynomial decay: eigenvalues ~ i^(-{p['alpha']:.3g}), so N(lambda) <= "
                f"{p['c']:.3g} lambda^(-{p['gamma']:.3g}) (R^2 = {p['r2']:.3f})"
            )
        elif self.decay == "logarithmic":
            model = (
                f"exponential decay: eigenvalues ~ exp(-{p['beta']:.3g} i), so N(lambda) <= "
                f"log(1 + {p['c']:.3g}/lambda)/{p['beta']:.3g} (R^2 = {p['r2']:.3f})"
            )
        else:
            model = "no reliable decay fit"
        lines = [
            f"n_landmarks = {self.n_landmarks} for n = {self.n_samples} points: {self.reason}",
            f"Spectrum: {model}; ||C|| ~ {self.op_norm:.4g}, K = {self.K:.4g}.",
            (
                f"Theorem 4.1 bound at delta = {self.delta:g}: ||mu - mu_hat_m|| <= {self.bound:.4g} "
                f"(lambda_m = {self.lam:.4g}, N(lambda_m) ~ {self.eff_dim:.4g})"
                + (
                    "."
                    if self.bound_valid
                    else f", but m < {self.min_landmarks}, the size the theorem needs for a guarantee."
                )
            ),
        ]
        if self.target_error is not None:
            lines.append(f"Target error: {self.target_error:g}.")
        return Explanation("\n".join(lines))

    def __str__(self) -> str:
        return str(self.explain())

    def __repr__(self) -> str:
        # The generated dataclass repr would spell out all fifteen fields and the DecayFit.
        return (
            f"LandmarkSuggestion(n_landmarks={self.n_landmarks}, decay={self.decay!r}, "
            f"bound={self.bound:.4g}, bound_valid={self.bound_valid}, "
            f"n_samples={self.n_samples}, delta={self.delta:g})"
        )


def _bound_at(
    m: int, n: int, delta: float, K: float, spectrum: CovarianceSpectrum, fit: DecayFit
) -> tuple[float, float, float]:
    lam = theorem_4_1_lambda(m, delta, K)
    N = spectrum.effective_dimension(lam)
    if lam < spectrum.reliable_lambda and fit.reliable:
        N = max(N, fit.effective_dimension(lam))  # extrapolate below the resolved range
    b = theorem_4_1_bound(n, m, delta, N, K)
    return b.value, lam, N


def suggest_n_landmarks(
    X: ArrayLike,
    kernel: Kernel | str = "gaussian",
    delta: float = BOUNDS_DELTA,
    target_error: float | None = None,
    *,
    max_samples: int = 1000,
    max_landmarks: int | None = None,
    method: str = "subsample",
    random_state: RandomStateLike = None,
    n_threads: int | None = None,
) -> LandmarkSuggestion:
    r"""Suggest the number of landmarks from the spectrum's decay (Corollary 4.1).

    1. Estimate the covariance spectrum on at most ``max_samples`` points
       (:func:`estimate_spectrum`).
    2. Fit polynomial vs exponential decay of the eigenvalues
       (:func:`fit_spectral_decay`).
    3. Without ``target_error``: ``m`` of Corollary 4.1 for the fitted case
       (:func:`corollary_4_1_n_landmarks`): :math:`n^{1/(2-\gamma)}\log(n/\delta)` or
       :math:`\sqrt n\log(\sqrt n\max(1/\delta, c/(6K^2)))`; when the fit is
       unreliable, the fallback :math:`\lceil\sqrt n\log\sqrt n\rceil`
       (:func:`default_n_landmarks`).
       With ``target_error``: the smallest ``m`` whose Theorem 4.1 bound (estimated
       :math:`\mathcal N`) is at most ``target_error``, and at least the theorem's
       minimal ``m`` so that the bound is a guarantee; ``n`` if unattainable.
    4. Clip to ``[1, min(n, max_landmarks)]`` and report the Theorem 4.1 bound there.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        The data to embed (``n = n_samples``).
    kernel : Kernel or str, default="gaussian"
        ``bandwidth="median"`` is resolved on X.
    delta : float in (0, 1), default=0.05
        Failure probability of the bounds: they hold with probability at least
        ``1 - delta``.
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
        Seed of the spectrum's subsample (and of the median bandwidth).
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

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> from nystrom_kme import bounds
    >>> X = np.random.default_rng(0).normal(size=(2000, 2))
    >>> s = bounds.suggest_n_landmarks(X, nk.Gaussian(1.0), max_samples=200, random_state=0)
    >>> 1 <= s.n_landmarks <= 2000, s.decay in ("polynomial", "logarithmic", "fallback")
    (True, True)
    """
    X = as_data_matrix(X, "X")
    n = X.shape[0]
    delta = probability(delta)
    if target_error is not None:
        target_error = positive(target_error, "target_error")
    cap = n if max_landmarks is None else min(n, count(max_landmarks, "max_landmarks"))
    spectrum = estimate_spectrum(
        X, kernel, max_samples=max_samples, method=method, random_state=random_state, n_threads=n_threads
    )
    K = spectrum.K
    op_norm = spectrum.op_norm
    fit = fit_spectral_decay(spectrum.eigenvalues, spectrum.n_used)
    m_min = theorem_4_1_min_landmarks(op_norm, delta, K) if op_norm > 0 else n + 1

    if fit.reliable and fit.model is not None:
        decay = fit.model
        params = dict(fit.params)
        params["r2"] = fit.r2_polynomial if decay == "polynomial" else fit.r2_exponential
    else:
        decay, params = "fallback", {}

    if target_error is None:
        if decay == "polynomial":
            m = corollary_4_1_n_landmarks(n, delta, "polynomial", gamma=params["gamma"])
            reason = (
                f"Corollary 4.1, polynomial case: m = n^(1/(2-gamma)) log(n/delta) with gamma = {params['gamma']:.3g}"
            )
        elif decay == "logarithmic":
            m = corollary_4_1_n_landmarks(n, delta, "logarithmic", c=params["c"], K=K)
            reason = "Corollary 4.1, logarithmic case: m = sqrt(n) log(sqrt(n) max(1/delta, c/(6K^2)))"
        else:
            m = default_n_landmarks(n)
            reason = "the decay fit was unreliable, so the paper's default m = sqrt(n) log sqrt(n) is used"
    else:
        c1 = theorem_4_1_constants(K, delta)[0]
        floor = c1 / math.sqrt(n)

        def bound(k: int) -> float:
            return _bound_at(k, n, delta, K, spectrum, fit)[0]

        if floor >= target_error or bound(n) > target_error:
            m = n
            reason = (
                f"target_error {target_error:g} is out of reach of the Theorem 4.1 bound "
                f"(its m-free part alone is c1/sqrt(n) = {floor:.4g}); m = n"
            )
        else:
            lo, hi = 0, n  # bound(hi) <= target; bisection (bound decreases with m)
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if bound(mid) <= target_error:
                    hi = mid
                else:
                    lo = mid
            m = max(hi, min(m_min, n))
            reason = f"smallest m whose Theorem 4.1 bound is <= {target_error:g}" + (
                f", raised to the theorem's minimal m = {m_min}" if m_min > hi and m_min <= n else ""
            )
    if m > cap:
        reason += f"; that is {m}, capped at {cap} (" + ("max_landmarks)" if cap < n else "n, the rows)")
        m = cap
    m = int(max(1, m))
    value, lam, N = _bound_at(m, n, delta, K, spectrum, fit)
    valid = bool(4 <= m <= n and m >= m_min)
    if spectrum.K_is_plugin:
        reason += " (unbounded kernel: K is the plug-in max_i sqrt(k(x_i, x_i)))"
    return LandmarkSuggestion(
        n_landmarks=m,
        decay=decay,
        params=params,
        bound=value,
        bound_valid=valid,
        min_landmarks=int(m_min),
        lam=lam,
        eff_dim=float(N),
        op_norm=op_norm,
        K=K,
        n_samples=n,
        delta=delta,
        target_error=target_error,
        reason=reason + ".",
        fit=fit,
    )
