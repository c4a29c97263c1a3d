"""Ridge leverage scores by BLESS, and landmarks drawn proportionally to them.

:func:`ridge_leverage_scores` estimates ``l_i(lam) = (K (K + lam n I)^{-1})_ii``
for every row from a small weighted dictionary (BLESS, Rudi et al. 2018);
:class:`RidgeLeverageSampling` draws landmarks with probability ~ l_i. The
dictionary solves and the score estimates run in the compiled core; memory is
O(|D|^2 + n) for a dictionary of |D| <= n rows (about q2 d_eff), never more.
"""

from __future__ import annotations

import math
from typing import TypedDict

import numpy as np
from numpy.typing import ArrayLike

from .. import _core
from .._validation import RandomStateLike, as_data_matrix, check_random_state, n_threads_arg
from ..kernels import Kernel, get_kernel
from ._common import (
    check_bool,
    check_n_threads,
    check_positive_real,
    prepare_input,
)
from .base import SamplingPolicy

#: Most draws of one BLESS level (M = q2 d_eff is drawn as multinomial counts over the
#: candidates, so M costs no memory; this only keeps it an int64).
_MAX_DRAWS = 2**62

#: Smallest kappa^2 = max_i k(x_i, x_i) handled: lambda n goes down to
#: sqrt(eps) kappa^2 and is divided by weights, all in normal float64 numbers.
_MIN_KERNEL_SCALE = 1e-280


def _kernel_scale(X: np.ndarray, core_kernel: _core.Kernel, n_threads: int) -> float:
    """kappa^2 = max_i k(x_i, x_i), or ValueError when it is 0 or not finite."""
    kappa2 = float(np.max(_core.kernel_diagonal(X, core_kernel, n_threads)))
    if not math.isfinite(kappa2):
        raise ValueError(
            "the kernel values of X are not finite (they overflow float64); "
            "ridge leverage scores are undefined: rescale the data or use another "
            "kernel or bandwidth"
        )
    if not kappa2 > 0:
        raise ValueError(
            "the kernel matrix of X is zero (max_i k(x_i, x_i) = 0, numerical rank "
            "0), so ridge leverage scores are undefined and no landmark can be "
            "chosen by them; use another kernel or bandwidth"
        )
    if kappa2 < _MIN_KERNEL_SCALE:
        raise ValueError(
            f"the kernel values of X are too small (max_i k(x_i, x_i) = {kappa2:.3g} "
            "underflows the leverage score arithmetic); rescale the data or use "
            "another kernel or bandwidth"
        )
    return kappa2


def _lambda_floor(X: np.ndarray, kappa2: float) -> float:
    """The smallest lambda whose scores are resolved: ``sqrt(eps) kappa^2 / n``.

    The estimator subtracts two numbers of size k(x, x) and divides the difference by
    lambda n, so its round-off is about ``eps kappa^2 / (lambda n)`` (eps of X's dtype:
    float32 kernel values carry float32 round-off). At ``lambda n >= sqrt(eps) kappa^2``
    that is at most about ``sqrt(eps)``; far below, the estimates are round-off.
    """
    return math.sqrt(float(np.finfo(X.dtype).eps)) * kappa2 / int(X.shape[0])


def _check_lambda(lam: float, X: np.ndarray, kappa2: float) -> None:
    n = X.shape[0]
    floor = _lambda_floor(X, kappa2)
    if lam < floor:
        hint = " or float64 data" if X.dtype == np.float32 else ""
        raise ValueError(
            f"lam={lam!r} is too small to resolve ridge leverage scores on this data: they "
            f"need lam * n_samples >= sqrt(eps) * max_i k(x_i, x_i), i.e. lam >= {floor:.3g} "
            f"here (n_samples={n}, max_i k(x_i, x_i)={kappa2:.3g}, {X.dtype} eps); below it "
            f"the estimates are round-off. Use a larger lam{hint}"
        )
    if not math.isfinite(lam * n * n):
        raise ValueError(f"lam={lam!r} is too large: lam * n_samples^2 overflows float64")


def _n_draws(q2: float, deff: float) -> int:
    """M = q2 d_eff draws (at least 1, at most _MAX_DRAWS)."""
    return max(1, math.ceil(min(q2 * deff, float(_MAX_DRAWS))))


class _Dictionary(TypedDict):
    """BLESS's last level: lambda, the estimated d_eff, the dictionary's rows and weights."""

    lam: float
    deff: float
    D_idx: np.ndarray
    D_w: np.ndarray
    levels: int


def _bless(
    X: np.ndarray,
    core_kernel: _core.Kernel,
    rng: np.random.Generator,
    *,
    lam: float | None,
    target_deff: float | None,
    q: float,
    q1: float,
    q2: float,
    n_threads: int,
    max_levels: int = 64,
) -> _Dictionary:
    """BLESS (Rudi, Calandriello, Carratino, Rosasco 2018, Alg. 1), with-replacement
    dictionaries. Walks lambda_h = kappa^2 / q^h down to ``lam`` (or, with
    ``lam=None``, until the estimated effective dimension reaches ``target_deff`` or
    lambda reaches :func:`_lambda_floor`, below which scores are round-off: on a kernel
    matrix of numerical rank below the target, d_eff never reaches it). With ``lam``
    the last level is always ``lam``, also when ``max_levels`` cuts the path short.
    Returns the final dictionary (indices, weights) and lambda / d_eff.

    Sizes: the candidates R_h <= n; the estimates are capped at 1 (see
    :func:`_estimates`), so d_eff <= n; the M_h = q2 d_eff draws are multinomial
    counts over the candidates, O(R_h) memory whatever M_h; the dictionary has at
    most R_h <= n distinct rows (its solve is O(|D|^2) memory)."""
    n = X.shape[0]
    kappa2 = _kernel_scale(X, core_kernel, n_threads)
    if lam is not None:
        _check_lambda(lam, X, kappa2)
    floor = _lambda_floor(X, kappa2)
    lam_h = kappa2
    D_idx = np.empty(0, dtype=np.int64)
    D_w = np.empty(0, dtype=np.float64)
    deff = 0.0
    levels = 0
    while True:
        levels += 1
        lam_h /= q
        last = levels >= max_levels
        if lam is not None and (lam_h <= lam or last):
            lam_h, last = lam, True
        elif lam is None and lam_h <= floor:
            lam_h, last = floor, True
        R = n if q1 * kappa2 / lam_h >= n else max(1, math.ceil(q1 * kappa2 / lam_h))
        U = np.arange(n, dtype=np.int64) if R >= n else rng.choice(n, size=R, replace=False)
        XU = X if R >= n else np.ascontiguousarray(X[U])
        est = _estimates(XU, X, D_idx, D_w, lam_h, n, core_kernel, n_threads)
        total = float(est.sum())
        deff = n / U.size * total
        if lam is None and deff >= target_deff:
            last = True
        M = _n_draws(q2, deff)
        # all estimates 0 (every candidate represented to round-off): draw uniformly
        p = est / total if total > 0 else np.full(U.size, 1.0 / U.size)
        # M i.i.d. draws from p, as counts; each draw carries weight (n / R) / (M p_j):
        # sum_D w phi phi^T is unbiased for sum_i phi_i phi_i^T, and duplicates merge
        # by adding their weights
        counts = rng.multinomial(M, p)
        keep = np.flatnonzero(counts)
        D_idx = U[keep].astype(np.int64)
        D_w = counts[keep] * (n / U.size) / (M * p[keep])
        if last:
            return {"lam": lam_h, "deff": deff, "D_idx": D_idx, "D_w": D_w, "levels": levels}


def _estimates(
    XE: np.ndarray,
    X: np.ndarray,
    D_idx: np.ndarray,
    D_w: np.ndarray,
    lam: float,
    n: int,
    core_kernel: _core.Kernel,
    n_threads: int,
) -> np.ndarray:
    """The estimator of [1] eq. (5) for the rows of XE, capped at 1.

    The exact scores are in [0, 1]; the estimator is not: a point the dictionary
    misses (no dictionary row near it, e.g. a cluster of copies that was not drawn)
    gets up to ``k(x, x) / (lam n)``, far above 1 at small lambda, and a dictionary
    row of weight w < 1 up to 1 / w. Capping at 1 keeps both sides
    of the multiplicative guarantee (l / c <= l~ <= c l with l <= 1 gives
    l / c <= min(l~, 1) <= c l) and bounds d_eff, hence the next dictionary, by n.
    The core solves in the scaled form I + R^{-1/2} K_DD R^{-1/2} (eigenvalues >= 1,
    also with duplicate dictionary rows; a diagonal shift where round-off still breaks
    its Cholesky factorisation), so it never fails on a singular K_DD.
    """
    D = np.ascontiguousarray(X[D_idx]) if D_idx.size else np.empty((0, X.shape[1]), dtype=X.dtype)
    reg = np.ascontiguousarray(n * lam / D_w, dtype=np.float64)
    if not np.isfinite(reg).all():
        raise ValueError(f"lam={lam!r} is too large: lam * n_samples / weight overflows float64")
    est = np.asarray(_core.ridge_leverage_estimates(XE, D, reg, n * lam, core_kernel, n_threads))
    return np.minimum(est, 1.0)


def ridge_leverage_scores(
    X: ArrayLike,
    kernel: Kernel | str,
    lam: float,
    *,
    random_state: RandomStateLike = None,
    q: float = 2.0,
    q1: float = 4.0,
    q2: float = 4.0,
    n_threads: int | None = None,
) -> np.ndarray:
    """Approximate ridge leverage scores ``l_i(lam) = (K (K + lam n I)^{-1})_ii`` by BLESS.

    Their sum is the effective dimension d_eff(lam) of the paper's Section 4.
    BLESS [1] builds weighted dictionaries along lambda_h = kappa^2 / q^h down to
    ``lam`` (kappa^2 = max_i k(x_i, x_i)): at each level it estimates the scores of
    ``R_h = min(n, q1 kappa^2 / lambda_h)`` uniform candidates from the previous
    dictionary and draws ``q2 d_eff(lambda_h)`` of them proportionally to the
    estimates. The returned scores are the estimator of [1], eq. (5), at ``lam``
    for every row, capped at 1 (the bound of the exact scores; a row the dictionary
    misses would otherwise get up to k(x, x) / (lam n)), within a constant factor of
    the exact ones with high probability ([1], Thm. 1). They are in [0, 1].

    Scores are resolved only down to ``lam * n >= sqrt(eps) * kappa^2`` (eps of X's
    dtype): below, the estimator is round-off (it divides a difference of numbers of
    size kappa^2 by lam n), and a smaller ``lam`` raises ValueError.

    Cost: O(n M (M + d) + M^3) for the last level, M = q2 d_eff(lam) the dictionary
    size; memory O(M^2 + n), never more than O(n^2) (d_eff <= n; the dictionary has
    at most n distinct rows; the draws are counted, not listed).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    kernel : Kernel or str
    lam : float
        Regularisation lambda > 0 (the n-normalised convention K + lam n I), at least
        ``sqrt(eps) * max_i k(x_i, x_i) / n_samples``.
    random_state : None, int or numpy.random.Generator
    q, q1, q2 : float
        Path ratio (> 1), candidate and dictionary oversampling (> 0).
    n_threads : int or None

    Returns
    -------
    ndarray of shape (n_samples,), float64, in [0, 1]

    Raises
    ------
    ValueError
        For a bad argument (naming it), a ``lam`` below the resolution above, or a
        kernel matrix of X that is zero.

    References
    ----------
    .. [1] A. Rudi, D. Calandriello, L. Carratino, L. Rosasco, "On fast leverage
       score sampling and optimal learning", NeurIPS 2018.

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> X = np.random.default_rng(0).normal(size=(1000, 2))
    >>> scores = nk.ridge_leverage_scores(X, nk.Gaussian(1.0), lam=1e-3, random_state=0)
    >>> scores.shape, bool(np.all((scores > 0) & (scores <= 1 + 1e-9)))
    ((1000,), True)
    """
    check_positive_real(lam, "lam")
    policy = RidgeLeverageSampling(lam=lam, q=q, q1=q1, q2=q2, n_threads=n_threads)
    X = as_data_matrix(X, "X")
    rng = check_random_state(random_state)
    kernel = get_kernel(kernel).resolve(X, rng)
    policy._fit_scores(X, kernel, None, rng)
    return policy.scores_


def _check_params(
    lam: object, deff_fraction: object, replace: object, q: object, q1: object, q2: object, n_threads: int | None
) -> None:
    if lam is not None:
        check_positive_real(lam, "lam")
    check_positive_real(deff_fraction, "deff_fraction")
    check_bool(replace, "replace")
    check_positive_real(q, "q", above=1.0)
    check_positive_real(q1, "q1")
    check_positive_real(q2, "q2")
    check_n_threads(n_threads)


class RidgeLeverageSampling(SamplingPolicy):
    """Landmarks drawn proportionally to approximate ridge leverage scores (BLESS).

    The scores ``l_i(lam) = (K (K + lam n I)^{-1})_ii`` are estimated by BLESS (see
    :func:`ridge_leverage_scores`), then m landmarks are drawn with probability
    ``l_i / sum_j l_j`` (with replacement by default, like the paper's uniform
    sampling). Leverage-score sampling is the "natural next step" of the paper's
    Section 7 (Alaoui & Mahoney 2015; Rudi et al. 2015 for kernel ridge regression).

    Every argument is checked here, by ``set_params`` and again by
    ``select_indices``: a bad value raises ValueError naming it.

    Cost: O(n M (M + d) + M^3) time, O(M^2 + n) memory with M ~ q2 d_eff(lam) the
    final dictionary size (about 2 m by default), never more than n rows.

    Parameters
    ----------
    lam : float or None, default=None
        Regularisation. None: derived from m, as the largest lambda on BLESS's path
        ``kappa^2 / q^h`` whose estimated effective dimension d_eff(lam) reaches
        ``deff_fraction * n_landmarks``; where it never does (a kernel matrix of
        numerical rank below that, e.g. duplicated rows), the path stops at
        ``sqrt(eps) * kappa^2 / n``, the smallest lambda whose scores are resolved
        (see :func:`ridge_leverage_scores`), and ``effective_dimension_`` stays
        below the target. A given lam must be at least that.
    deff_fraction : float > 0, default=0.5
        Only used with ``lam=None``.
    replace : bool, default=True
    q, q1, q2 : float, default=2.0, 4.0, 4.0
        BLESS path ratio (> 1), candidate and dictionary oversampling (> 0).
    n_threads : int or None

    Attributes (after ``select_indices``)
    -------------------------------------
    scores_ : ndarray of shape (n_samples,), estimated ridge leverage scores, in [0, 1]
    lam_ : float, the lambda used
    effective_dimension_ : float, estimated d_eff(lam_) = sum of the exact scores
    dictionary_ : ndarray of int64, the final BLESS dictionary rows

    References
    ----------
    .. [1] A. Rudi, D. Calandriello, L. Carratino, L. Rosasco, "On fast leverage
       score sampling and optimal learning", NeurIPS 2018.
    .. [2] C. Musco, C. Musco, "Recursive sampling for the Nyström method", NeurIPS 2017.

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> X = np.random.default_rng(0).normal(size=(2000, 2))
    >>> pol = nk.RidgeLeverageSampling()
    >>> idx = pol.select_indices(X, nk.Gaussian(1.0), 20, np.random.default_rng(0))
    >>> idx.shape, bool(idx.min() >= 0 and idx.max() < 2000)
    ((20,), True)
    >>> kme = nk.NystromKME(nk.Gaussian(1.0), n_landmarks=20, sampler='rls', random_state=0).fit(X)
    >>> kme.landmarks_.shape
    (20, 2)
    """

    def __init__(
        self,
        lam: float | None = None,
        *,
        deff_fraction: float = 0.5,
        replace: bool = True,
        q: float = 2.0,
        q1: float = 4.0,
        q2: float = 4.0,
        n_threads: int | None = None,
    ) -> None:
        _check_params(lam, deff_fraction, replace, q, q1, q2, n_threads)
        self.lam = lam
        self.deff_fraction = deff_fraction
        self.replace = replace
        self.q = q
        self.q1 = q1
        self.q2 = q2
        self.n_threads = n_threads

    def _fit_scores(self, X: np.ndarray, kernel: Kernel, m: int | None, rng: np.random.Generator) -> None:
        # attributes may have been assigned directly since __init__
        _check_params(self.lam, self.deff_fraction, self.replace, self.q, self.q1, self.q2, self.n_threads)
        nt = n_threads_arg(self.n_threads)
        core_kernel = kernel.to_core()
        lam = None if self.lam is None else float(self.lam)
        target = None if m is None else float(self.deff_fraction) * m
        path = _bless(
            X,
            core_kernel,
            rng,
            lam=lam,
            target_deff=target,
            q=float(self.q),
            q1=float(self.q1),
            q2=float(self.q2),
            n_threads=nt,
        )
        self.lam_ = float(path["lam"])
        self.dictionary_ = path["D_idx"]
        self.scores_ = _estimates(X, X, path["D_idx"], path["D_w"], self.lam_, X.shape[0], core_kernel, nt)
        self.effective_dimension_ = float(self.scores_.sum())

    def select_indices(
        self, X: ArrayLike, kernel: Kernel | str, n_landmarks: int, rng: np.random.Generator | int | None = None
    ) -> np.ndarray:
        replace = bool(self.replace)
        X, kernel, m, rng = prepare_input(X, kernel, n_landmarks, rng, distinct=not replace)
        self._fit_scores(X, kernel, m, rng)
        total = self.scores_.sum()
        if not total > 0:  # kappa^2 > 0 and lam_ >= the floor make this unreachable
            raise ValueError(
                "every ridge leverage score estimate is 0; no landmark can be "
                "drawn by them: use another kernel or bandwidth"
            )
        p = self.scores_ / total
        if not replace and np.count_nonzero(p) < m:
            raise ValueError(
                f"only {np.count_nonzero(p)} rows have a positive score; "
                f"cannot draw n_landmarks={m} without replacement"
            )
        return rng.choice(X.shape[0], size=m, replace=replace, p=p).astype(np.int64)
