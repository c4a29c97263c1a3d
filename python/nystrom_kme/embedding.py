"""Kernel mean embeddings: the empirical one (eq. 2) and the Nyström one (eq. 5).

An embedding is stored as a weighted point set, mu = sum_j w_j phi(z_j), with
``support_`` (m, d), ``weights_`` (m,) and the resolved ``kernel_``. Evaluations,
inner products, norms and distances are streaming sums in the compiled core:
no matrix larger than a block is ever formed.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import _core
from ._validation import (
    as_data_matrix,
    as_weights,
    check_positive_int,
    check_random_state,
    common_dtype,
    n_threads_arg,
)
from .kernels import Kernel, get_kernel
from .sampling import (
    FixedLandmarks,
    UniformSampling,
    landmark_points,
    resolve_sampler,
    validate_indices,
)

SOLVERS = ("auto", "cod", "cholesky")
#: n_landmarks="auto" takes at most this many times the paper's sqrt(n) log sqrt(n).
AUTO_CAP_FACTOR = 4


def default_n_landmarks(n_samples: int) -> int:
    """The paper's m = ceil(sqrt(n) log sqrt(n)), at least 1 and at most n (Cor. 4.1)."""
    root = math.sqrt(n_samples)
    return int(min(n_samples, max(1, math.ceil(root * math.log(root)))))


class KernelMeanEmbedding:
    """Base class: a fitted embedding mu = sum_j weights_[j] phi(support_[j]).

    Attributes (after ``fit``)
    --------------------------
    support_ : ndarray of shape (m, n_features), float32 or float64
    weights_ : ndarray of shape (m,), float64
    kernel_ : Kernel, with a numeric bandwidth
    n_samples_ : int
    n_features_in_ : int
    """

    def _check_fitted(self) -> None:
        if not hasattr(self, "weights_"):
            raise RuntimeError(f"this {type(self).__name__} is not fitted yet; call fit(X) first")

    def __call__(self, Y: Any) -> np.ndarray:
        """Evaluate the embedding: mu(y) = sum_j w_j k(z_j, y) for each row y of Y.

        Parameters
        ----------
        Y : array-like of shape (n_points, n_features)

        Returns
        -------
        ndarray of shape (n_points,), float64
        """
        self._check_fitted()
        Y = as_data_matrix(Y, "Y")
        if Y.shape[1] != self.n_features_in_:
            raise ValueError(f"Y has {Y.shape[1]} features but the embedding has {self.n_features_in_}")
        Y, S = common_dtype(Y, self.support_)
        out = _core.kernel_sums(Y, S, self.weights_.reshape(-1, 1), self.kernel_.to_core(),
                                n_threads_arg(getattr(self, "n_threads", None)))
        return out[:, 0]

    def inner(self, other: KernelMeanEmbedding) -> float:
        """RKHS inner product <self, other> = w^T K(Z, Z') w'. See :func:`inner_product`."""
        return inner_product(self, other)

    def norm(self) -> float:
        """RKHS norm ||mu||."""
        return math.sqrt(max(inner_product(self, self), 0.0))

    def distance(self, other: KernelMeanEmbedding) -> float:
        """RKHS distance ||self - other|| (the MMD between the two embeddings)."""
        return rkhs_distance(self, other)


def _parts(embedding: KernelMeanEmbedding) -> tuple[np.ndarray, np.ndarray, Kernel]:
    if not isinstance(embedding, KernelMeanEmbedding):
        raise ValueError(f"expected a fitted embedding, got {type(embedding).__name__}")
    embedding._check_fitted()
    return embedding.support_, embedding.weights_, embedding.kernel_


def inner_product(a: KernelMeanEmbedding, b: KernelMeanEmbedding, *, n_threads: int | None = None) -> float:
    """<mu_a, mu_b> in the RKHS, by one streaming pass over both supports.

    Costs O(m_a m_b d) time and O(min(m_a, m_b)) extra memory. Both embeddings must
    use the same kernel (same type and bandwidth).
    """
    Za, wa, ka = _parts(a)
    Zb, wb, kb = _parts(b)
    if ka != kb:
        raise ValueError(f"the embeddings use different kernels: {ka!r} and {kb!r}")
    if Za.shape[1] != Zb.shape[1]:
        raise ValueError(f"the embeddings live in R^{Za.shape[1]} and R^{Zb.shape[1]}")
    if Za.shape[0] > Zb.shape[0]:  # the smaller support is the output side
        Za, wa, Zb, wb = Zb, wb, Za, wa
    Za, Zb = common_dtype(Za, Zb)
    s = _core.kernel_sums(Za, Zb, wb.reshape(-1, 1), ka.to_core(), n_threads_arg(n_threads))
    return float(wa @ s[:, 0])


def rkhs_distance(a: KernelMeanEmbedding, b: KernelMeanEmbedding, *, n_threads: int | None = None) -> float:
    """||mu_a - mu_b|| = sqrt(<a, a> + <b, b> - 2 <a, b>), clamped at 0 against round-off."""
    d2 = (inner_product(a, a, n_threads=n_threads) + inner_product(b, b, n_threads=n_threads)
          - 2.0 * inner_product(a, b, n_threads=n_threads))
    return math.sqrt(max(d2, 0.0))


class EmpiricalKME(KernelMeanEmbedding):
    """Empirical kernel mean embedding mu_hat = (1/n) sum_i phi(x_i) (paper eq. 2).

    Parameters
    ----------
    kernel : Kernel or str, default="gaussian"
        A Kernel instance or a name; radial kernels given by name use the median
        heuristic for their bandwidth.
    random_state : None, int or numpy.random.Generator
        Only used by the median heuristic.
    n_threads : int or None
        OpenMP threads for the core (None: all); results do not depend on it.
    """

    def __init__(self, kernel: Kernel | str = "gaussian", *, random_state: Any = None,
                 n_threads: int | None = None) -> None:
        self.kernel = kernel
        self.random_state = random_state
        self.n_threads = n_threads

    def fit(self, X: Any, sample_weight: Any = None) -> EmpiricalKME:
        """Store X (n, d) and the weights 1/n (or ``sample_weight`` normalised)."""
        X = as_data_matrix(X, "X")
        n = X.shape[0]
        n_threads_arg(self.n_threads)
        rng = check_random_state(self.random_state)
        self.kernel_ = get_kernel(self.kernel).resolve(X, rng)
        self.support_ = X
        self.weights_ = (np.full(n, 1.0 / n) if sample_weight is None
                         else as_weights(sample_weight, n))
        self.n_samples_ = n
        self.n_features_in_ = X.shape[1]
        return self


class NystromKME(KernelMeanEmbedding):
    """Nyström kernel mean embedding (Chatalic et al., 2022, eq. 5).

    mu_m = sum_j alpha_j phi(l_j) is the orthogonal projection of the empirical
    embedding onto span{phi(l_1), ..., phi(l_m)}, with landmarks l_j drawn by
    ``sampler`` (by default uniformly with replacement from X, the paper's setting)
    and alpha = (1/n) K_m^+ K_mn 1_n. Costs O(n m d + m^3) time and O(m^2 + m d)
    memory plus the sampler's cost; K_mn is never stored.

    Parameters
    ----------
    kernel : Kernel or str, default="gaussian"
        A Kernel instance or a name; radial kernels given by name use the median
        heuristic for their bandwidth.
    n_landmarks : int, None or "auto", default=None
        m, with 1 <= m <= n_samples. None: ceil(sqrt(n) log sqrt(n)) capped at n,
        the size for which the paper's Corollary 4.1 keeps the O(1/sqrt(n)) rate.
        "auto": :func:`nystrom_kme.bounds.suggest_n_landmarks` fits the decay of the
        estimated covariance spectrum and applies Corollary 4.1, capped at
        4 ceil(sqrt(n) log sqrt(n)) (the corollary's constants are conservative);
        its report is kept in ``n_landmarks_report_``.
    solver : {"auto", "cod", "cholesky"}, default="auto"
        How K_m alpha = s is solved. "cod": complete orthogonal decomposition of
        K_m, the minimum-norm solution K_m^+ s of eq. 5. "cholesky": merge
        duplicate landmarks, then Cholesky; fails on a numerically singular K_m.
        "auto": Cholesky when its estimated RKHS error is below 1e-12 of the
        embedding's norm, else COD. All give the same embedding.
    rcond : float or None, default=None
        COD rank threshold relative to the largest pivot; None: m * machine epsilon.
    sampler : str, SamplingPolicy, array-like or callable, default="uniform"
        How landmarks are chosen: a name of :data:`nystrom_kme.sampling.SAMPLER_NAMES`
        ("uniform" is uniform with replacement, the paper's guarantee), a policy
        object with ``select_indices(X, kernel, n_landmarks, rng)``, a function of
        that signature, user-supplied landmark row indices (1-D ints) or landmark
        points (2-D, n_features columns; then ``landmark_indices_`` is None). With
        explicit landmarks ``n_landmarks`` must be None or their number. Pivoted
        Cholesky and farthest-point policies may return fewer than m landmarks
        when the kernel matrix has numerical rank below m. ``sample_weight``
        weights the uniform draws; the other policies select on X unweighted.
    random_state : None, int or numpy.random.Generator
        Landmark sampling and the median heuristic.
    n_threads : int or None
        OpenMP threads for the core (None: all); results do not depend on it.

    Attributes
    ----------
    landmarks_ : ndarray of shape (m, n_features), dtype of X
    landmark_indices_ : ndarray of shape (m,), int64 rows of X (None for given points)
    sampler_ : the resolved sampling policy (None for given points); policies keep
        what they computed, e.g. ``sampler_.scores_`` for "rls"
    weights_ : ndarray of shape (m,), float64 (alpha)
    support_ : alias of landmarks_
    kernel_ : Kernel with a numeric bandwidth
    n_samples_, n_features_in_ : int
    solver_ : str, the solver actually used ("cholesky" or "cod")
    rank_ : int, numerical rank of K_m (COD) or number of distinct landmarks
    """

    def __init__(self, kernel: Kernel | str = "gaussian", *, n_landmarks: int | None = None,
                 solver: str = "auto", rcond: float | None = None, sampler: Any = "uniform",
                 random_state: Any = None, n_threads: int | None = None) -> None:
        self.kernel = kernel
        self.n_landmarks = n_landmarks
        self.solver = solver
        self.rcond = rcond
        self.sampler = sampler
        self.random_state = random_state
        self.n_threads = n_threads

    def fit(self, X: Any, sample_weight: Any = None) -> NystromKME:
        """Fit on X of shape (n_samples, n_features), float32 or float64.

        ``sample_weight`` (n,), non-negative, makes the target the weighted empirical
        embedding; landmarks are then drawn with probability proportional to it.
        """
        X = as_data_matrix(X, "X")
        n = X.shape[0]
        if self.solver not in SOLVERS:
            raise ValueError(f"solver must be one of {SOLVERS}, got {self.solver!r}")
        rcond = 0.0 if self.rcond is None else float(self.rcond)
        if not (math.isfinite(rcond) and 0.0 <= rcond < 1.0):
            raise ValueError(f"rcond must be in [0, 1), got {self.rcond!r}")
        n_threads = n_threads_arg(self.n_threads)
        points = landmark_points(self.sampler, X)
        policy = None if points is not None else resolve_sampler(self.sampler)
        n_given = (points.shape[0] if points is not None
                   else policy.indices.size if isinstance(policy, FixedLandmarks) else None)
        if n_given is not None:
            if self.n_landmarks is not None and self.n_landmarks != n_given:
                raise ValueError(f"n_landmarks={self.n_landmarks!r} but the sampler gives "
                                 f"{n_given} landmarks; leave n_landmarks=None")
            m = n_given
        elif self.n_landmarks is None:
            m = default_n_landmarks(n)
        elif isinstance(self.n_landmarks, str) and self.n_landmarks == "auto":
            m = None  # needs the resolved kernel, below
        else:
            m = check_positive_int(self.n_landmarks, "n_landmarks")
            if m > n:
                raise ValueError(f"n_landmarks={m} exceeds n_samples={n}")
        w = None if sample_weight is None else as_weights(sample_weight, n)
        rng = check_random_state(self.random_state)
        kernel = get_kernel(self.kernel).resolve(X, rng)
        core_kernel = kernel.to_core()
        self.n_landmarks_report_ = None
        if m is None:
            from .bounds import suggest_n_landmarks

            report = suggest_n_landmarks(X, kernel, random_state=rng, n_threads=self.n_threads,
                                         max_landmarks=AUTO_CAP_FACTOR * default_n_landmarks(n))
            self.n_landmarks_report_ = report
            m = min(n, report.n_landmarks)

        if points is not None:
            indices, landmarks = None, points
        else:
            if w is not None and isinstance(policy, UniformSampling):
                # weighted data: uniform draws become draws proportional to w
                indices = rng.choice(n, size=m, replace=policy.replace, p=w)
            else:
                # default: the paper's sampling, uniform with replacement
                indices = policy.select_indices(X, kernel, m, rng)
            indices = validate_indices(indices, n, "the indices returned by the sampler")
            landmarks = np.ascontiguousarray(X[indices])
        if w is None:
            s = _core.kernel_row_sums(landmarks, X, core_kernel, n_threads) / n
        else:
            s = _core.kernel_sums(landmarks, X, w.reshape(-1, 1), core_kernel, n_threads)[:, 0]
        alpha, used, rank = _core.nystrom_weights(landmarks, s.reshape(-1, 1), core_kernel,
                                                  self.solver, rcond, 1e-12, n_threads)
        self.kernel_ = kernel
        self.landmark_indices_ = indices
        self.sampler_ = policy
        self.landmarks_ = landmarks
        self.support_ = landmarks
        self.weights_ = np.ascontiguousarray(alpha[:, 0])
        self.n_samples_ = n
        self.n_features_in_ = X.shape[1]
        self.solver_ = used
        self.rank_ = int(rank)
        return self
