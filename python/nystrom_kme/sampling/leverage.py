"""Ridge leverage scores by BLESS, and landmarks drawn proportionally to them.

:func:`ridge_leverage_scores` estimates ``l_i(lam) = (K (K + lam n I)^{-1})_ii``
for every row from a small weighted dictionary (BLESS, Rudi et al. 2018);
:class:`RidgeLeverageSampling` draws landmarks with probability ~ l_i. The
dictionary solves and the score estimates run in the compiled core; nothing is
O(n^2).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import _core
from .._validation import as_data_matrix, check_random_state, n_threads_arg
from ..kernels import Kernel, get_kernel
from ._common import check_bool, check_n_threads, check_positive_real, prepare_input
from .base import SamplingPolicy


def _bless(X: np.ndarray, core_kernel: Any, rng: np.random.Generator, *, lam: float | None,
           target_deff: float | None, q: float, q1: float, q2: float, n_threads: int,
           max_levels: int = 64) -> dict[str, Any]:
    """BLESS (Rudi, Calandriello, Carratino, Rosasco 2018, Alg. 1), with-replacement
    dictionaries. Walks lambda_h = kappa^2 / q^h down to ``lam`` (or, with
    ``lam=None``, until the estimated effective dimension reaches ``target_deff``).
    Returns the final dictionary (indices, weights) and lambda / d_eff."""
    n = X.shape[0]
    kappa2 = float(np.max(_core.kernel_diagonal(X, core_kernel, n_threads)))
    if not kappa2 > 0:
        raise ValueError("the kernel vanishes on the diagonal of X; leverage scores are undefined")
    lam_h = kappa2
    D_idx = np.empty(0, dtype=np.int64)
    D_w = np.empty(0, dtype=np.float64)
    deff = 0.0
    levels = 0
    while True:
        last = False
        lam_next = lam_h / q
        if lam is not None and lam_next <= lam:
            lam_next, last = lam, True
        lam_h = lam_next
        levels += 1
        R = n if q1 * kappa2 / lam_h >= n else max(1, math.ceil(q1 * kappa2 / lam_h))
        U = np.arange(n, dtype=np.int64) if R >= n else rng.choice(n, size=R, replace=False)
        XU = X if R >= n else np.ascontiguousarray(X[U])
        est = _estimates(XU, X, D_idx, D_w, lam_h, n, core_kernel, n_threads)
        total = float(est.sum())
        deff = n / U.size * total
        if lam is None and (deff >= target_deff or levels >= max_levels):
            last = True
        if levels >= max_levels:
            last = True
        M = max(1, math.ceil(q2 * deff))
        p = est / total
        draws = rng.choice(U.size, size=M, replace=True, p=p)
        uniq, counts = np.unique(draws, return_counts=True)
        # each draw carries weight (n / R) / (M p_j): sum_D w phi phi^T is unbiased for
        # sum_i phi_i phi_i^T; duplicates merge by adding their weights
        D_idx = U[uniq].astype(np.int64)
        D_w = counts * (n / U.size) / (M * p[uniq])
        if last:
            return {"lam": lam_h, "deff": deff, "D_idx": D_idx, "D_w": D_w, "levels": levels}


def _estimates(XE: np.ndarray, X: np.ndarray, D_idx: np.ndarray, D_w: np.ndarray, lam: float,
               n: int, core_kernel: Any, n_threads: int) -> np.ndarray:
    D = np.ascontiguousarray(X[D_idx]) if D_idx.size else np.empty((0, X.shape[1]), dtype=X.dtype)
    reg = np.ascontiguousarray(n * lam / D_w, dtype=np.float64)
    return np.asarray(_core.ridge_leverage_estimates(XE, D, reg, n * lam, core_kernel, n_threads))


def ridge_leverage_scores(X: Any, kernel: Kernel | str, lam: float, *, random_state: Any = None,
                          q: float = 2.0, q1: float = 4.0, q2: float = 4.0,
                          n_threads: int | None = None) -> np.ndarray:
    """Approximate ridge leverage scores ``l_i(lam) = (K (K + lam n I)^{-1})_ii`` by BLESS.

    Their sum is the effective dimension d_eff(lam) of the paper's Section 4.
    BLESS [1] builds weighted dictionaries along lambda_h = kappa^2 / q^h down to
    ``lam`` (kappa^2 = max_i k(x_i, x_i)): at each level it estimates the scores of
    ``R_h = min(n, q1 kappa^2 / lambda_h)`` uniform candidates from the previous
    dictionary and draws ``q2 d_eff(lambda_h)`` of them proportionally to the
    estimates. The returned scores are the estimator of [1], eq. (5), at ``lam``
    for every row, within a constant factor of the exact ones with high
    probability ([1], Thm. 1).

    Cost: O(n M (M + d) + M^3) for the last level, M = q2 d_eff(lam) the dictionary
    size; memory O(M^2 + n), never O(n^2).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    kernel : Kernel or str
    lam : float
        Regularisation lambda > 0 (the n-normalised convention K + lam n I).
    random_state : None, int or numpy.random.Generator
    q, q1, q2 : float
        Path ratio (> 1), candidate and dictionary oversampling (> 0).
    n_threads : int or None

    Returns
    -------
    ndarray of shape (n_samples,), float64

    References
    ----------
    .. [1] A. Rudi, D. Calandriello, L. Carratino, L. Rosasco, "On fast leverage
       score sampling and optimal learning", NeurIPS 2018.
    """
    check_positive_real(lam, "lam")
    policy = RidgeLeverageSampling(lam=lam, q=q, q1=q1, q2=q2, n_threads=n_threads)
    X = as_data_matrix(X, "X")
    rng = check_random_state(random_state)
    kernel = get_kernel(kernel).resolve(X, rng)
    policy._fit_scores(X, kernel, None, rng)
    return policy.scores_


class RidgeLeverageSampling(SamplingPolicy):
    """Landmarks drawn proportionally to approximate ridge leverage scores (BLESS).

    The scores ``l_i(lam) = (K (K + lam n I)^{-1})_ii`` are estimated by BLESS (see
    :func:`ridge_leverage_scores`), then m landmarks are drawn with probability
    ``l_i / sum_j l_j`` (with replacement by default, like the paper's uniform
    sampling). Leverage-score sampling is the "natural next step" of the paper's
    Section 7 (Alaoui & Mahoney 2015; Rudi et al. 2015 for kernel ridge regression).

    Parameters
    ----------
    lam : float or None, default=None
        Regularisation. None: derived from m, as the largest lambda on BLESS's path
        ``kappa^2 / q^h`` whose estimated effective dimension d_eff(lam) reaches
        ``deff_fraction * n_landmarks``.
    deff_fraction : float, default=0.5
        Only used with ``lam=None``.
    replace : bool, default=True
    q, q1, q2 : float, default=2.0, 4.0, 4.0
        BLESS path ratio, candidate and dictionary oversampling.
    n_threads : int or None

    Cost: O(n M (M + d) + M^3) time, O(M^2 + n) memory with M ~ q2 d_eff(lam) the
    final dictionary size (about 2 m by default); never O(n^2).

    Attributes (after ``select_indices``)
    -------------------------------------
    scores_ : ndarray of shape (n_samples,), estimated ridge leverage scores
    lam_ : float, the lambda used
    effective_dimension_ : float, estimated d_eff(lam_) = sum of the exact scores
    dictionary_ : ndarray of int64, the final BLESS dictionary rows

    References
    ----------
    .. [1] A. Rudi, D. Calandriello, L. Carratino, L. Rosasco, "On fast leverage
       score sampling and optimal learning", NeurIPS 2018.
    .. [2] C. Musco, C. Musco, "Recursive sampling for the Nyström method", NeurIPS 2017.
    """

    def __init__(self, lam: float | None = None, *, deff_fraction: float = 0.5,
                 replace: bool = True, q: float = 2.0, q1: float = 4.0, q2: float = 4.0,
                 n_threads: int | None = None) -> None:
        if lam is not None:
            check_positive_real(lam, "lam")
        check_positive_real(deff_fraction, "deff_fraction")
        check_bool(replace, "replace")
        check_positive_real(q, "q", above=1.0)
        check_positive_real(q1, "q1")
        check_positive_real(q2, "q2")
        check_n_threads(n_threads)
        self.lam = lam
        self.deff_fraction = deff_fraction
        self.replace = replace
        self.q = q
        self.q1 = q1
        self.q2 = q2
        self.n_threads = n_threads

    def _fit_scores(self, X: np.ndarray, kernel: Kernel, m: int | None,
                    rng: np.random.Generator) -> None:
        nt = n_threads_arg(self.n_threads)
        core_kernel = kernel.to_core()
        lam = None if self.lam is None else float(self.lam)
        target = None if m is None else float(self.deff_fraction) * m
        path = _bless(X, core_kernel, rng, lam=lam, target_deff=target, q=float(self.q),
                      q1=float(self.q1), q2=float(self.q2), n_threads=nt)
        self.lam_ = float(path["lam"])
        self.dictionary_ = path["D_idx"]
        self.scores_ = _estimates(X, X, path["D_idx"], path["D_w"], self.lam_, X.shape[0],
                                  core_kernel, nt)
        self.effective_dimension_ = float(self.scores_.sum())

    def select_indices(self, X: Any, kernel: Kernel | str, n_landmarks: int,
                       rng: np.random.Generator | int | None = None) -> np.ndarray:
        replace = bool(self.replace)
        X, kernel, m, rng = prepare_input(X, kernel, n_landmarks, rng, distinct=not replace)
        self._fit_scores(X, kernel, m, rng)
        p = self.scores_ / self.scores_.sum()
        if not replace and np.count_nonzero(p) < m:
            raise ValueError(f"only {np.count_nonzero(p)} rows have a positive score; "
                             f"cannot draw n_landmarks={m} without replacement")
        return rng.choice(X.shape[0], size=m, replace=replace, p=p).astype(np.int64)
