"""Data-driven estimates of the spectrum of the covariance operator (Section 4.1).

:func:`estimate_spectrum` (and the shortcuts :func:`effective_dimension`,
:func:`max_leverage`, :func:`covariance_norm`) estimate, from a subsample of at
most ``max_samples`` points, the eigenvalues of the covariance operator, the
effective dimension N(lambda), N_inf(lambda) and ||C||: the data-dependent
quantities of the bounds in :mod:`nystrom_kme.bounds.theorems` and
:mod:`nystrom_kme.bounds.mmd_bounds`.

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
:mod:`nystrom_kme.kernels`; for unbounded kernels (linear, polynomial) the
estimates use the plug-in value ``max_i sqrt(k(x_i, x_i))`` and say so.
"""

from __future__ import annotations

import math
import numbers
from typing import Any, overload

import numpy as np
from numpy.typing import ArrayLike

from .._blas import one_blas_thread
from .._validation import RandomStateLike, as_data_matrix, check_random_state, n_threads_arg
from ..kernels import Kernel, get_kernel
from ._checks import RELIABLE_FRACTION, lambda_at_dimension, positive

__all__ = [
    "CovarianceSpectrum",
    "covariance_norm",
    "effective_dimension",
    "estimate_spectrum",
    "max_leverage",
]

#: Rows of a kernel block formed at once by the estimators (block of s x _CHUNK).
_CHUNK = 2048


def _kernel_diag(kernel: Kernel, X: np.ndarray) -> np.ndarray:
    """k(x_i, x_i) for each row, without an n x n matrix."""
    if kernel.radial:
        return np.ones(X.shape[0])
    name = getattr(kernel, "name", "")
    sq: np.ndarray = np.einsum("ij,ij->i", X, X) / float(kernel.bandwidth) ** 2
    if name == "linear":
        return sq
    if name == "polynomial":
        powered: np.ndarray = (sq + kernel.offset) ** kernel.degree  # type: ignore[attr-defined]
        return powered
    return np.array([kernel(X[i : i + 1], X[i : i + 1])[0, 0] for i in range(X.shape[0])])


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
        The kernel's bound :math:`\sup_x\sqrt{k(x,x)}`: ``kernel.sup_norm`` when finite,
        else the plug-in :math:`\max_i\sqrt{k(x_i,x_i)}` over the data.
    K_is_plugin : bool
        Whether ``K`` is that plug-in value (unbounded kernel).

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> from nystrom_kme import bounds
    >>> X = np.random.default_rng(0).normal(size=(1000, 2))
    >>> spec = bounds.estimate_spectrum(X, nk.Gaussian(1.0), max_samples=200, random_state=0)
    >>> N = spec.effective_dimension([1e-1, 1e-2, 1e-3])
    >>> bool(np.all(np.diff(N) > 0))              # N(lambda) grows as lambda shrinks
    True
    >>> bool(spec.max_leverage(1e-2) >= spec.effective_dimension(1e-2))
    True
    """

    def __init__(
        self,
        *,
        eigenvalues: np.ndarray,
        n_samples: int,
        n_used: int,
        method: str,
        kernel: Kernel,
        K: float,
        K_is_plugin: bool,
        basis_points: np.ndarray,
        basis: np.ndarray,
        cov_vectors: np.ndarray | None,
        cov_values: np.ndarray,
        eval_points: np.ndarray,
        n_threads: int | None = None,
    ) -> None:
        self.eigenvalues = eigenvalues
        self.n_threads = n_threads
        self.n_samples = n_samples
        self.n_used = n_used
        self.method = method
        self.kernel = kernel
        self.K = K
        self.K_is_plugin = K_is_plugin
        self._Z = basis_points
        self._B = basis  # (s, r): coordinates c(x) = B^T k_Z(x)
        self._V = cov_vectors  # (r, r) or None (identity)
        self._sigma = cov_values  # (r,): covariance eigenvalues in those coordinates
        self._eval = eval_points

    def __repr__(self) -> str:
        return (
            f"CovarianceSpectrum(method={self.method!r}, n_samples={self.n_samples}, "
            f"n_used={self.n_used}, op_norm={self.op_norm:.4g}, trace={self.trace:.4g})"
        )

    @property
    def op_norm(self) -> float:
        r""":math:`\|C\|_{\mathcal L(\mathcal H)}`: the largest estimated eigenvalue."""
        return float(self.eigenvalues[0]) if self.eigenvalues.size else 0.0

    @property
    def trace(self) -> float:
        r""":math:`\mathrm{tr}(C) = E\,k(x,x)` estimated by the sum of the eigenvalues."""
        return float(self.eigenvalues.sum())

    @overload
    def effective_dimension(self, lam: float) -> float: ...
    @overload
    def effective_dimension(self, lam: ArrayLike) -> float | np.ndarray: ...

    def effective_dimension(self, lam: ArrayLike) -> float | np.ndarray:
        r"""Effective dimension :math:`\mathcal N(\lambda) = \mathrm{tr}(CC_\lambda^{-1})` (eq. 6b).

        Evaluated as :math:`\sum_i \hat\sigma_i/(\hat\sigma_i+\lambda)` over the
        estimated eigenvalues.

        Parameters
        ----------
        lam : float > 0 or array of them
            The regularisation parameter :math:`\lambda` (one or several values).

        Returns
        -------
        float, or ndarray of the shape of ``lam``
        """
        arr = np.asarray(lam, dtype=np.float64) if not isinstance(lam, numbers.Real) else None
        if arr is None:
            lam_f = positive(lam, "lam")
            return float(np.sum(self.eigenvalues / (self.eigenvalues + lam_f)))
        if not (np.isfinite(arr).all() and (arr > 0).all()):
            raise ValueError("lam must contain finite numbers > 0")
        ev = self.eigenvalues
        flat = arr.reshape(-1)
        out = np.array([np.sum(ev / (ev + x)) for x in flat])
        return out.reshape(arr.shape)

    @overload
    def __call__(self, lam: float) -> float: ...
    @overload
    def __call__(self, lam: ArrayLike) -> float | np.ndarray: ...

    def __call__(self, lam: ArrayLike) -> float | np.ndarray:
        """Alias of :meth:`effective_dimension`."""
        return self.effective_dimension(lam)

    def leverage(self, Y: ArrayLike, lam: float) -> np.ndarray:
        r""":math:`\mathcal N_x(\lambda)=\langle\phi(x), C_\lambda^{-1}\phi(x)\rangle` (eq. 6a) at rows of Y.

        With :math:`C` replaced by its estimate :math:`\hat C` (diagonal in the
        basis of the subsample's features): :math:`\mathcal N_x(\lambda) =
        \|P^\perp\phi(x)\|^2/\lambda + \sum_j \langle v_j, \phi(x)\rangle^2/
        (\hat\sigma_j+\lambda)`. Costs :math:`O(s(d + r))` per point.

        Parameters
        ----------
        Y : array-like of shape (n_points, n_features)
            The points :math:`x` at which to evaluate :math:`\mathcal N_x(\lambda)`.
        lam : float > 0
            The regularisation parameter :math:`\lambda`.

        Returns
        -------
        ndarray of shape (n_points,)
        """
        lam = positive(lam, "lam")
        Y = as_data_matrix(Y, "Y")
        if Y.shape[1] != self._Z.shape[1]:
            raise ValueError(f"Y has {Y.shape[1]} features but the spectrum was fitted on {self._Z.shape[1]}")
        Y = np.ascontiguousarray(Y, dtype=np.float64)
        out = np.empty(Y.shape[0])
        for start in range(0, Y.shape[0], _CHUNK):
            Yc = Y[start : start + _CHUNK]
            with one_blas_thread():
                coords = self._B.T @ self.kernel(self._Z, Yc, n_threads=self.n_threads)  # (r, b)
                if self._V is not None:
                    coords = self._V.T @ coords
            sq = coords * coords
            resid = np.maximum(_kernel_diag(self.kernel, Yc) - sq.sum(axis=0), 0.0)
            out[start : start + _CHUNK] = resid / lam + (sq / (self._sigma[:, None] + lam)).sum(axis=0)
        return out

    def max_leverage(self, lam: float, Y: ArrayLike | None = None) -> float:
        r""":math:`\mathcal N_\infty(\lambda) = \sup_x\mathcal N_x(\lambda)` (eq. 6c), estimated.

        The supremum is taken over the rows of ``Y``, by default the subsample and
        up to ``n_used`` further held-out data points; it never exceeds the
        always-valid bound :math:`K^2/\lambda`.

        Parameters
        ----------
        lam : float > 0
            The regularisation parameter :math:`\lambda`.
        Y : array-like of shape (n_points, n_features), optional
            The points over which the supremum is taken (default: see above).

        Returns
        -------
        float
        """
        lam = positive(lam, "lam")
        pts = self._eval if Y is None else Y
        return float(min(self.leverage(pts, lam).max(), self.K**2 / lam))

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
        target = RELIABLE_FRACTION * self.n_used
        ev = self.eigenvalues[self.eigenvalues > 0]
        if ev.size == 0 or ev.size <= target:
            return 0.0
        return float(lambda_at_dimension(ev, target, ev[-1] * 1e-6, ev[0] * 1e6, 1e-9))


_METHODS = ("subsample", "nystrom")


def _sup_norm(kernel: Kernel, X: np.ndarray) -> tuple[float, bool]:
    K = float(kernel.sup_norm)
    if math.isfinite(K):
        return K, False
    diag = np.concatenate([_kernel_diag(kernel, X[i : i + _CHUNK]) for i in range(0, X.shape[0], _CHUNK)])
    return float(math.sqrt(max(float(diag.max()), np.finfo(float).tiny))), True


def estimate_spectrum(
    X: ArrayLike,
    kernel: Kernel | str,
    *,
    max_samples: int = 1000,
    method: str = "subsample",
    random_state: RandomStateLike = None,
    n_threads: int | None = None,
) -> CovarianceSpectrum:
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
        The data, samples of the distribution whose covariance is estimated.
    kernel : Kernel or str
        ``bandwidth="median"`` is resolved on X with ``random_state``.
    max_samples : int >= 1, default=1000
        Subsample size cap ``s``.
    method : {"subsample", "nystrom"}, default="subsample"
        Which estimate of the eigenvalues (see above).
    random_state : None, int or numpy.random.Generator
        Seed of the subsample (and of the median bandwidth).
    n_threads : int or None
        OpenMP threads for the kernel evaluations (None: all).

    Returns
    -------
    CovarianceSpectrum
        With :meth:`~CovarianceSpectrum.effective_dimension`,
        :meth:`~CovarianceSpectrum.max_leverage` and
        :attr:`~CovarianceSpectrum.op_norm`.

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> from nystrom_kme import bounds
    >>> X = np.random.default_rng(0).normal(size=(1000, 2))
    >>> spec = bounds.estimate_spectrum(X, nk.Gaussian(1.0), max_samples=200, random_state=0)
    >>> spec.eigenvalues.shape[0] <= 200, bool(0 < spec.op_norm <= spec.trace <= 1 + 1e-9)
    (True, True)
    """
    X = as_data_matrix(X, "X")
    if isinstance(max_samples, (bool, np.bool_)) or not isinstance(max_samples, numbers.Integral) or max_samples < 1:
        raise ValueError(f"max_samples must be a positive integer, got {max_samples!r}")
    if method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}, got {method!r}")
    rng = check_random_state(random_state)
    n_threads_arg(n_threads)
    try:
        kern = get_kernel(kernel)
    except ValueError as err:
        raise ValueError(f"kernel: {err}") from None
    kern = kern.resolve(X, rng)
    X = np.ascontiguousarray(X, dtype=np.float64)
    n = X.shape[0]
    s = int(min(n, max_samples))
    perm = rng.permutation(n) if s < n else np.arange(n)
    Z = X[perm[:s]]
    held_out = X[perm[s : 2 * s]]
    K, plugin = _sup_norm(kern, X)

    Ks = kern(Z, n_threads=n_threads)
    Ks = 0.5 * (Ks + Ks.T)
    with one_blas_thread():  # see _blas: no thrashing on a busy machine, the same bits
        w, U = np.linalg.eigh(Ks)
    w, U = w[::-1], U[:, ::-1]
    top = max(float(w[0]), 0.0)
    keep = w > max(top * s * np.finfo(float).eps * 10.0, np.finfo(float).tiny)
    wr, Ur = w[keep], U[:, keep]
    B = Ur / np.sqrt(wr)  # c(x) = B^T k_Z(x)
    if method == "subsample":
        eigenvalues = np.maximum(w, 0.0) / s
        V, sigma = None, wr / s
    else:
        G = np.zeros((wr.size, wr.size))
        for start in range(0, n, _CHUNK):
            block = kern(Z, X[start : start + _CHUNK], n_threads=n_threads)
            with one_blas_thread():
                Cc = B.T @ block
                G += Cc @ Cc.T
        G = 0.5 * (G + G.T) / n
        with one_blas_thread():
            sig, V = np.linalg.eigh(G)
        sig, V = np.maximum(sig[::-1], 0.0), V[:, ::-1]
        eigenvalues, sigma = sig.copy(), sig
    eval_points = np.concatenate([Z, held_out]) if held_out.size else Z
    return CovarianceSpectrum(
        eigenvalues=np.ascontiguousarray(eigenvalues),
        n_samples=n,
        n_used=s,
        method=method,
        kernel=kern,
        K=K,
        K_is_plugin=plugin,
        basis_points=Z,
        basis=B,
        cov_vectors=V,
        cov_values=sigma,
        eval_points=eval_points,
        n_threads=n_threads,
    )


@overload
def effective_dimension(X: ArrayLike, kernel: Kernel | str, lam: float, **kwargs: Any) -> float: ...
@overload
def effective_dimension(X: ArrayLike, kernel: Kernel | str, lam: ArrayLike, **kwargs: Any) -> float | np.ndarray: ...


def effective_dimension(X: ArrayLike, kernel: Kernel | str, lam: ArrayLike, **kwargs: Any) -> float | np.ndarray:
    r"""Estimated effective dimension :math:`\mathcal N(\lambda) = \mathrm{tr}(CC_\lambda^{-1})` (eq. 6b).

    Shortcut for ``estimate_spectrum(X, kernel, **kwargs).effective_dimension(lam)``.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        The data, samples of the distribution whose covariance is estimated.
    kernel : Kernel or str
        The kernel (``bandwidth="median"`` is resolved on X).
    lam : float > 0 or array of them
        The regularisation parameter :math:`\lambda` (one or several values).
    **kwargs
        ``max_samples``, ``method``, ``random_state``, ``n_threads`` of
        :func:`estimate_spectrum`.

    Returns
    -------
    float, or ndarray of the shape of ``lam``

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> from nystrom_kme import bounds
    >>> X = np.random.default_rng(0).normal(size=(1000, 2))
    >>> N = bounds.effective_dimension(X, nk.Gaussian(1.0), 1e-2, max_samples=200, random_state=0)
    >>> bool(1 < N < 200)
    True
    """
    return estimate_spectrum(X, kernel, **kwargs).effective_dimension(lam)


def max_leverage(X: ArrayLike, kernel: Kernel | str, lam: float, **kwargs: Any) -> float:
    r"""Estimated :math:`\mathcal N_\infty(\lambda) = \sup_x \mathcal N_x(\lambda)` (eq. 6c).

    Shortcut for ``estimate_spectrum(X, kernel, **kwargs).max_leverage(lam)``: the
    largest :math:`\mathcal N_x(\lambda)` over the subsample and up to as many
    held-out rows, capped by :math:`K^2/\lambda`.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        The data, samples of the distribution whose covariance is estimated.
    kernel : Kernel or str
        The kernel (``bandwidth="median"`` is resolved on X).
    lam : float > 0
        The regularisation parameter :math:`\lambda`.
    **kwargs
        ``max_samples``, ``method``, ``random_state``, ``n_threads`` of
        :func:`estimate_spectrum`.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> from nystrom_kme import bounds
    >>> X = np.random.default_rng(0).normal(size=(1000, 2))
    >>> kw = dict(max_samples=200, random_state=0)
    >>> Ninf = bounds.max_leverage(X, nk.Gaussian(1.0), 1e-2, **kw)
    >>> bool(Ninf >= bounds.effective_dimension(X, nk.Gaussian(1.0), 1e-2, **kw))
    True
    """
    return estimate_spectrum(X, kernel, **kwargs).max_leverage(lam)


def covariance_norm(X: ArrayLike, kernel: Kernel | str, **kwargs: Any) -> float:
    r"""Estimated :math:`\|C\|_{\mathcal L(\mathcal H)}`, the top eigenvalue of the covariance (Sec. 4.1).

    Shortcut for ``estimate_spectrum(X, kernel, **kwargs).op_norm``.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        The data, samples of the distribution whose covariance is estimated.
    kernel : Kernel or str
        The kernel (``bandwidth="median"`` is resolved on X).
    **kwargs
        ``max_samples``, ``method``, ``random_state``, ``n_threads`` of
        :func:`estimate_spectrum`.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> from nystrom_kme import bounds
    >>> X = np.random.default_rng(0).normal(size=(1000, 2))
    >>> c = bounds.covariance_norm(X, nk.Gaussian(1.0), max_samples=200, random_state=0)
    >>> bool(0 < c <= 1)                           # ||C|| <= tr C = E k(x, x) = 1
    True
    """
    return estimate_spectrum(X, kernel, **kwargs).op_norm
