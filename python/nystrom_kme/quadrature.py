"""Kernel quadrature rules from embeddings (paper Section 2.2).

A rule sum_j w_j f(x_j) approximates the integral of f against a distribution
rho; for f in the RKHS its error is at most ||f||_H times the worst-case error
||mu_rho - sum_j w_j phi(x_j)||_H.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from . import _core
from ._compensated import fsum_dot
from ._validation import (
    as_data_matrix,
    check_sample_weight,
    common_dtype,
    n_threads_arg,
    normalised_weights,
)
from .datasets import GaussianMixture
from .embedding import KernelMeanEmbedding
from .kernels import Gaussian, Kernel, get_kernel
from .persistence import persistable, save


@persistable
class QuadratureRule:
    """Nodes x_j (m, d) and weights w_j (m,) with an optional kernel.

    Parameters
    ----------
    nodes : array-like of shape (m, d)
    weights : array-like of shape (m,)
        Real weights (Nyström weights can be negative and need not sum to one).
    kernel : Kernel, optional
        Needed by :meth:`worst_case_error`; set by :meth:`from_embedding`.

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> from nystrom_kme.datasets import GaussianMixture
    >>> mix = GaussianMixture(n_components=2, dim=2, random_state=0)
    >>> X = mix.sample(5000, random_state=1)
    >>> kme = nk.NystromKME(nk.Gaussian(1.0), n_landmarks=200, random_state=0).fit(X)
    >>> rule = nk.QuadratureRule.from_embedding(kme)
    >>> rule.nodes.shape, rule.weights.shape
    ((200, 2), (200,))
    >>> f = lambda P: np.cos(P[:, 0])
    >>> bool(abs(rule.integrate(f) - f(X).mean()) < 0.01)          # close to the sample mean of f
    True
    >>> rule.worst_case_error(mix) < 0.05                    # exact ||mu - sum_j w_j phi(x_j)||
    True
    >>> nk.QuadratureRule([[0.0], [1.0]], [0.5, 0.5]).integrate(lambda P: P[:, 0])
    0.5
    """

    def __init__(self, nodes: ArrayLike, weights: ArrayLike, kernel: Kernel | str | None = None) -> None:
        self.nodes = as_data_matrix(nodes, "nodes")
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != (self.nodes.shape[0],):
            raise ValueError(f"weights must have shape ({self.nodes.shape[0]},), got {w.shape}")
        if not np.isfinite(w).all():
            raise ValueError("weights contain NaN or inf")
        self.weights = np.ascontiguousarray(w)
        self.kernel = None if kernel is None else get_kernel(kernel)

    @classmethod
    def from_embedding(cls, embedding: KernelMeanEmbedding) -> QuadratureRule:
        """The rule sum_j weights_[j] f(support_[j]) of a fitted embedding (not of one
        fitted with ``standardize=``: its support is in standardised units)."""
        if not isinstance(embedding, KernelMeanEmbedding):
            raise ValueError(f"expected a fitted embedding, got {type(embedding).__name__}")
        support, weights, kernel = embedding.fitted()
        if getattr(embedding, "scaling_", None) is not None:  # f would be called on scaled nodes
            raise ValueError(
                "embedding: fitted with standardize=, its support is in standardised units and f "
                "would see those; fit it on rows scaled beforehand to integrate in those units"
            )
        return cls(support, weights, kernel)

    def integrate(self, f: Callable[[np.ndarray], ArrayLike]) -> float | np.ndarray:
        """sum_j w_j f(x_j) for a vectorised f: (m, d) -> (m,) or (m, k) -> () or (k,)."""
        values = np.asarray(f(self.nodes), dtype=np.float64)
        if values.shape[:1] != (self.nodes.shape[0],):
            raise ValueError(
                f"f must return one value (or row) per node: got shape {values.shape} for {self.nodes.shape[0]} nodes"
            )
        if not np.isfinite(values).all():
            raise ValueError("f returned NaN or inf")
        if values.ndim == 1:
            return fsum_dot(self.weights, values)
        flat = values.reshape(values.shape[0], -1)
        result = np.array([fsum_dot(self.weights, flat[:, c]) for c in range(flat.shape[1])])
        return result.reshape(values.shape[1:])

    def worst_case_error(
        self,
        reference: GaussianMixture | KernelMeanEmbedding | ArrayLike,
        *,
        sample_weight: ArrayLike | None = None,
        n_threads: int | None = None,
    ) -> float:
        """||mu_ref - sum_j w_j phi(x_j)||_H, the worst-case error over the unit ball.

        ``reference`` is a :class:`~nystrom_kme.datasets.GaussianMixture` (closed form,
        Gaussian kernel only), a fitted embedding, or a dataset (n, d) with optional
        ``sample_weight`` (uniform otherwise; streaming sums, O(n (n + m) d) time).
        """
        if self.kernel is None or not self.kernel.is_resolved:
            raise ValueError("the rule needs a kernel with a numeric bandwidth for worst_case_error")
        core = self.kernel.to_core()
        nt = n_threads_arg(n_threads)
        nodes = np.ascontiguousarray(self.nodes, dtype=np.float64)
        quad = fsum_dot(self.weights, _core.kernel_sums(nodes, nodes, self.weights.reshape(-1, 1), core, nt)[:, 0])
        if isinstance(reference, GaussianMixture):
            if not isinstance(self.kernel, Gaussian):
                raise ValueError("the closed form of a GaussianMixture needs a Gaussian kernel")
            return reference.embedding_error(nodes, self.weights, float(self.kernel.bandwidth), gram_quadratic=quad)
        if isinstance(reference, KernelMeanEmbedding):
            Z, wz, ref_kernel = reference.fitted()
            if ref_kernel != self.kernel:
                raise ValueError(f"the reference uses {ref_kernel!r}, the rule {self.kernel!r}")
        else:
            Z = as_data_matrix(reference, "reference")
            wz = (
                np.full(len(Z), 1.0 / len(Z))
                if sample_weight is None
                else normalised_weights(check_sample_weight(sample_weight, len(Z)))
            )
        if Z.shape[1] != nodes.shape[1]:
            raise ValueError(f"the reference has {Z.shape[1]} features, the nodes {nodes.shape[1]}")
        Z, nodes_z = common_dtype(Z, nodes)
        ref2 = fsum_dot(wz, _core.kernel_sums(Z, Z, wz.reshape(-1, 1), core, nt)[:, 0])
        cross = fsum_dot(self.weights, _core.kernel_sums(nodes_z, Z, wz.reshape(-1, 1), core, nt)[:, 0])
        return math.sqrt(max(ref2 + quad - 2.0 * cross, 0.0))

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the rule (nodes, weights, kernel) to ``path`` (a ``.npz`` file, no pickle);
        read it back with :func:`nystrom_kme.load` (see :mod:`nystrom_kme.persistence`)."""
        save(self, path)

    def summary(self) -> dict[str, Any]:
        """What ``nystrom-kme info`` prints: the rule's fields as JSON data."""
        return {
            "kernel": None if self.kernel is None else repr(self.kernel),
            "n_nodes": int(self.nodes.shape[0]),
            "n_features": int(self.nodes.shape[1]),
            "weight_sum": float(self.weights.sum()),
        }

    def __repr__(self) -> str:
        return f"QuadratureRule(n_nodes={self.nodes.shape[0]}, dim={self.nodes.shape[1]}, kernel={self.kernel!r})"
