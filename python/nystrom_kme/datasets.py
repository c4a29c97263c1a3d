"""Synthetic data with closed-form kernel mean embeddings.

The isotropic Gaussian mixture of Chatalic et al., "Nyström Kernel Mean
Embeddings" (ICML 2022), Section 6.1, together with the closed forms of its
Gaussian-kernel mean embedding and of the embedding norm (Appendix G). These
give the *exact* RKHS error ``||mu - sum_j w_j phi(x_j)||`` of any weighted
point set, which is what the paper's experiments report.

Everything here is pure numpy, except :meth:`GaussianMixture.embedding_error`
without ``gram_quadratic``: its w^T K w comes from the compiled core.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from . import _core
from ._compensated import fsum_dot
from ._validation import check_positive_int, check_random_state

__all__ = ["GaussianMixture"]

# Rows of Y handled at once by mean_embedding: the (block, p, d) difference
# array is capped at this many float64 entries (8 MiB).
_BLOCK_ENTRIES = 1 << 20


# --------------------------------------------------------------------------- #
# validation helpers
# --------------------------------------------------------------------------- #
def _real_scalar(value: Any, name: str) -> float:  # Any: any object, checked here
    if (isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real)) and not (
        isinstance(value, np.ndarray)
        and value.ndim == 0
        and np.issubdtype(value.dtype, np.number)
        and not np.issubdtype(value.dtype, np.complexfloating)
    ):
        raise ValueError(f"{name} must be a real number, got {value!r}")
    out = float(value)
    if not np.isfinite(out):
        raise ValueError(f"{name} must be finite, got {out!r}")
    return out


def _positive_scalar(value: object, name: str) -> float:
    out = _real_scalar(value, name)
    if not out > 0:
        raise ValueError(f"{name} must be positive, got {out!r}")
    return out


def _float_array(value: ArrayLike, name: str) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a real numeric array: {err}") from None
    return arr


def _check_finite(arr: np.ndarray, name: str) -> None:
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or inf")


# --------------------------------------------------------------------------- #
class GaussianMixture:
    r"""Isotropic Gaussian mixture with closed-form Gaussian-kernel embeddings.

    .. math::

        \rho = \sum_{i=1}^{p} \pi_i \, \mathcal N(c_i, s_i^2 I_d)

    By default (paper, Section 6.1) ``p = 8`` components in ``d = 10``
    dimensions, centres :math:`c_i \sim \mathcal N(0, 5 I_d)` drawn from
    ``random_state``, unit variances :math:`s_i^2 = 1` and equal weights
    :math:`\pi_i = 1/p`.

    Parameters
    ----------
    n_components : int, default=8
        Number of components ``p``.
    dim : int, default=10
        Ambient dimension ``d``.
    center_variance : float, default=5.0
        Variance ``v`` of the centre distribution :math:`\mathcal N(0, v I_d)`;
        must be non-negative. Unused (but still validated) when ``centers`` is given.
    component_variance : float or array_like of shape (n_components,), default=1.0
        Per-component variances :math:`s_i^2` (positive).
    weights : array_like of shape (n_components,), optional
        Mixture weights :math:`\pi_i`: non-negative, summing to one within
        ``1e-12`` (relative). Default: uniform.
    centers : array_like of shape (n_components, dim), optional
        Explicit centres; overrides sampling.
    random_state : None, int or numpy.random.Generator, optional
        Source of the centres. The same generator is kept and used by
        :meth:`sample` when that call is given no ``random_state``.

    Attributes
    ----------
    centers_ : ndarray of shape (n_components, dim), float64
    variances_ : ndarray of shape (n_components,), float64
    weights_ : ndarray of shape (n_components,), float64
    n_components : int
    dim : int

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> from nystrom_kme.datasets import GaussianMixture
    >>> mix = GaussianMixture(n_components=8, dim=10, random_state=0)
    >>> X = mix.sample(1000, random_state=1)
    >>> X.shape
    (1000, 10)
    >>> kme = nk.NystromKME(nk.Gaussian(1.0), n_landmarks=100, random_state=0).fit(X)
    >>> err = mix.embedding_error(kme.landmarks_, kme.weights_, bandwidth=1.0)
    >>> bool(0 < err < 0.1)                                  # exact RKHS error (App. G)
    True
    """

    def __init__(
        self,
        n_components: int = 8,
        dim: int = 10,
        *,
        center_variance: float = 5.0,
        component_variance: float | np.ndarray = 1.0,
        weights: np.ndarray | None = None,
        centers: np.ndarray | None = None,
        random_state: int | np.random.Generator | None = None,
    ) -> None:
        p = check_positive_int(n_components, "n_components")
        d = check_positive_int(dim, "dim")
        cvar = _real_scalar(center_variance, "center_variance")
        if cvar < 0:
            raise ValueError(f"center_variance must be non-negative, got {cvar!r}")

        var = _float_array(component_variance, "component_variance")
        if var.ndim == 0:
            var = np.full(p, float(var))
        elif var.shape != (p,):
            raise ValueError(f"component_variance must be a scalar or have shape ({p},), got shape {var.shape}")
        _check_finite(var, "component_variance")
        if not (var > 0).all():
            raise ValueError("component_variance must be positive")

        if weights is None:
            w = np.full(p, 1.0 / p)
        else:
            w = _float_array(weights, "weights")
            if w.shape != (p,):
                raise ValueError(f"weights must have shape ({p},), got shape {w.shape}")
            _check_finite(w, "weights")
            if (w < 0).any():
                raise ValueError("weights must be non-negative")
            total = float(w.sum())
            if not abs(total - 1.0) <= 1e-12:
                raise ValueError(f"weights must sum to 1 (within 1e-12), got sum {total!r}")
            w = w / total

        rng = check_random_state(random_state)
        if centers is None:
            c = np.sqrt(cvar) * rng.standard_normal((p, d))
        else:
            c = _float_array(centers, "centers")
            if c.shape != (p, d):
                raise ValueError(f"centers must have shape ({p}, {d}), got shape {c.shape}")
            _check_finite(c, "centers")

        self.n_components = p
        self.dim = d
        self.centers_ = np.ascontiguousarray(c, dtype=np.float64).copy()
        self.variances_ = np.ascontiguousarray(var, dtype=np.float64).copy()
        self.weights_ = np.ascontiguousarray(w, dtype=np.float64).copy()
        self._rng = rng

    # ------------------------------------------------------------------ #
    def __repr__(self) -> str:
        return f"GaussianMixture(n_components={self.n_components}, dim={self.dim})"

    # ------------------------------------------------------------------ #
    def sample(self, n_samples: int, random_state: int | np.random.Generator | None = None) -> np.ndarray:
        """Draw i.i.d. points from the mixture.

        Parameters
        ----------
        n_samples : int
            Number of points ``n`` (positive).
        random_state : None, int or numpy.random.Generator, optional
            Source of randomness; ``None`` uses (and advances) the generator
            kept from construction.

        Returns
        -------
        X : ndarray of shape (n_samples, dim), float64
        """
        n = check_positive_int(n_samples, "n_samples")
        rng = self._rng if random_state is None else check_random_state(random_state)
        labels = rng.choice(self.n_components, size=n, p=self.weights_)
        X = rng.standard_normal((n, self.dim))
        X *= np.sqrt(self.variances_)[labels, None]
        X += self.centers_[labels]
        return X

    # ------------------------------------------------------------------ #
    def _check_points(self, Y: ArrayLike, name: str) -> np.ndarray:
        arr = _float_array(Y, name)
        if arr.ndim != 2 or arr.shape[1] != self.dim:
            raise ValueError(f"{name} must have shape (n, {self.dim}), got shape {arr.shape}")
        _check_finite(arr, name)
        return arr

    def mean_embedding(self, Y: np.ndarray, bandwidth: float) -> np.ndarray:
        r"""Kernel mean embedding :math:`\mu(y) = E_{x\sim\rho} k(x, y)` at given points.

        For the Gaussian kernel :math:`k(x, y) = \exp(-\|x-y\|^2 / (2\sigma^2))`,

        .. math::

            \mu(y) = \sum_i \pi_i \Big(\frac{\sigma^2}{\sigma^2 + s_i^2}\Big)^{d/2}
                     \exp\Big(-\frac{\|y - c_i\|^2}{2(\sigma^2 + s_i^2)}\Big).

        Rows are processed in blocks, so memory stays bounded (a few MiB of
        temporaries) whatever ``n_y``.

        Parameters
        ----------
        Y : array_like of shape (n_y, dim)
            Evaluation points.
        bandwidth : float
            Kernel bandwidth :math:`\sigma > 0`.

        Returns
        -------
        mu : ndarray of shape (n_y,), float64
        """
        Y = self._check_points(Y, "Y")
        sigma2 = _positive_scalar(bandwidth, "bandwidth") ** 2
        tau = sigma2 + self.variances_  # (p,)
        with np.errstate(divide="ignore"):
            log_coef = np.log(self.weights_) + 0.5 * self.dim * np.log(sigma2 / tau)
        inv2tau = 0.5 / tau
        p, d = self.n_components, self.dim
        n_y = Y.shape[0]
        out = np.empty(n_y, dtype=np.float64)
        block = max(1, _BLOCK_ENTRIES // (p * d))
        for start in range(0, n_y, block):
            Yb = Y[start : start + block]
            diff = Yb[:, None, :] - self.centers_[None, :, :]  # (b, p, d)
            dist2 = np.einsum("bpd,bpd->bp", diff, diff)  # (b, p)
            out[start : start + block] = np.exp(log_coef - dist2 * inv2tau).sum(axis=1)
        return out

    def embedding_norm2(self, bandwidth: float) -> float:
        r"""Squared RKHS norm of the mean embedding, :math:`\|\mu\|^2 = E\,k(x, x')`.

        .. math::

            \|\mu\|^2 = \sum_{i,j} \pi_i \pi_j
              \Big(\frac{\sigma^2}{\sigma^2 + s_i^2 + s_j^2}\Big)^{d/2}
              \exp\Big(-\frac{\|c_i - c_j\|^2}{2(\sigma^2 + s_i^2 + s_j^2)}\Big)

        Parameters
        ----------
        bandwidth : float
            Kernel bandwidth :math:`\sigma > 0`.

        Returns
        -------
        float
        """
        sigma2 = _positive_scalar(bandwidth, "bandwidth") ** 2
        v = self.variances_
        tau = sigma2 + v[:, None] + v[None, :]  # (p, p)
        c = self.centers_
        diff = c[:, None, :] - c[None, :, :]
        dist2 = np.einsum("ijk,ijk->ij", diff, diff)
        with np.errstate(divide="ignore"):
            logw = np.log(self.weights_)
        log_terms = logw[:, None] + logw[None, :] + 0.5 * self.dim * np.log(sigma2 / tau) - dist2 / (2.0 * tau)
        return float(np.exp(log_terms).sum())

    def embedding_error(
        self,
        points: np.ndarray,
        weights: np.ndarray,
        bandwidth: float,
        *,
        gram_quadratic: float | None = None,
    ) -> float:
        r"""Exact RKHS error :math:`\|\mu - \sum_j w_j \phi(x_j)\|` of a weighted point set.

        Computed as :math:`\sqrt{\|\mu\|^2 - 2 w^\top \mu(X) + w^\top K w}` with
        :math:`K = k(X, X)`.

        Parameters
        ----------
        points : array_like of shape (m, dim)
            Points :math:`x_j`.
        weights : array_like of shape (m,)
            Any real weights :math:`w_j` (no sign or normalisation constraint).
        bandwidth : float
            Kernel bandwidth :math:`\sigma > 0`.
        gram_quadratic : float, optional
            Precomputed :math:`w^\top K(X, X) w`. If omitted it is computed with
            the compiled core (``nystrom_kme._core.kernel_sums``).

        Returns
        -------
        float
            The error (non-negative).

        Raises
        ------
        RuntimeError
            If the squared error evaluates to a negative number larger (in
            magnitude) than rounding can explain: ``1e-12`` times the largest
            of :math:`\|\mu\|^2`, :math:`|2 w^\top \mu(X)|`, :math:`|w^\top K w|`
            (for probability weights this is ``1e-12 * ||mu||^2`` up to a small
            factor). Smaller negative values are clamped to 0.
        """
        X = self._check_points(points, "points")
        m = X.shape[0]
        w = _float_array(weights, "weights")
        if w.shape != (m,):
            raise ValueError(f"weights must have shape ({m},) to match points, got shape {w.shape}")
        _check_finite(w, "weights")
        sigma = _positive_scalar(bandwidth, "bandwidth")

        if gram_quadratic is not None:
            quad = _real_scalar(gram_quadratic, "gram_quadratic")
        elif m == 0:
            quad = 0.0
        else:
            Xc = np.ascontiguousarray(X, dtype=np.float64)
            Wc = np.ascontiguousarray(w.reshape(-1, 1), dtype=np.float64)
            s = np.asarray(_core.kernel_sums(Xc, Xc, Wc, _core.Kernel("gaussian", sigma)))
            quad = fsum_dot(w, s[:, 0])

        norm2 = self.embedding_norm2(sigma)
        cross = fsum_dot(w, self.mean_embedding(X, sigma)) if m else 0.0
        err2 = norm2 - 2.0 * cross + quad
        if err2 < 0.0:
            scale = max(norm2, abs(2.0 * cross), abs(quad))
            if -err2 <= 1e-12 * scale:
                err2 = 0.0
            else:
                raise RuntimeError(
                    f"squared embedding error is negative ({err2!r}) beyond rounding "
                    f"(||mu||^2={norm2!r}, w^T mu(X)={cross!r}, w^T K w={quad!r}); "
                    "is gram_quadratic computed with the same points, weights and bandwidth?"
                )
        return float(np.sqrt(err2))
