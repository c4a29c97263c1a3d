"""Landmark selection policies for Nyström kernel mean embeddings.

A policy chooses which rows of ``X`` become the landmarks of
:class:`~nystrom_kme.NystromKME`. Every policy is an object with one method,
``select_indices(X, kernel, n_landmarks, rng) -> ndarray[int64]``; string names
resolve in one place, :func:`resolve_sampler`:

=================================  =============================================
``"uniform"`` (default)            uniform with replacement: the paper's guarantee
``"uniform-without-replacement"``  uniform without replacement
``"rls"`` / ``"bless"``            approximate ridge leverage scores (BLESS)
``"rpcholesky"``                   randomly pivoted Cholesky
``"block-rpcholesky"``             accelerated (block, rejection) RPCholesky
``"greedy-cholesky"``              greedy (deterministic) pivoted Cholesky
``"herding"``                      kernel herding
``"cortes-scott"``                 farthest-point (incoherence) selection
``"dpp-greedy"``                   fast greedy MAP inference of a k-DPP
=================================  =============================================

All heavy loops (kernel columns, pivot and diagonal updates, argmax over the n
rows, herding's objective, leverage-score estimates) run in the compiled core.
No policy ever forms the n x n kernel matrix; each docstring states its cost.

Policies that compute something worth inspecting keep it after a call, with a
trailing underscore (``scores_``, ``residual_trace_``, ...).
"""

from __future__ import annotations

import abc
import math
import numbers
from collections.abc import Callable
from typing import Any

import numpy as np

from . import _core
from ._validation import as_data_matrix, check_positive_int, check_random_state, n_threads_arg
from .kernels import Kernel, get_kernel

__all__ = [
    "BlockRPCholeskySampling",
    "CallableSampling",
    "CortesScottSampling",
    "DPPGreedySampling",
    "FixedLandmarks",
    "GreedyCholeskySampling",
    "KernelHerding",
    "RPCholeskySampling",
    "RidgeLeverageSampling",
    "SamplingPolicy",
    "UniformSampling",
    "landmark_points",
    "resolve_sampler",
    "ridge_leverage_scores",
    "validate_indices",
]

_SEED_BOUND = 2**63 - 1


# --------------------------------------------------------------------------- #
# shared argument handling
# --------------------------------------------------------------------------- #
def _prepare(X: Any, kernel: Kernel | str, n_landmarks: Any, rng: Any, *,
             distinct: bool) -> tuple[np.ndarray, Kernel, int, np.random.Generator]:
    """Validated (X, resolved kernel, m, Generator); distinct: m must not exceed n."""
    X = as_data_matrix(X, "X")
    m = check_positive_int(n_landmarks, "n_landmarks")
    if distinct and m > X.shape[0]:
        raise ValueError(f"n_landmarks={m} exceeds n_samples={X.shape[0]}; this policy "
                         "selects distinct rows")
    rng = check_random_state(rng)
    if not isinstance(kernel, (Kernel, str)):
        raise ValueError(f"kernel must be a nystrom_kme Kernel or a kernel name, got {kernel!r}")
    kernel = get_kernel(kernel).resolve(X, rng)
    return X, kernel, m, rng


def _optional_threads(n_threads: Any) -> int | None:
    n_threads_arg(n_threads)  # validates
    return n_threads


def _check_tolerance(tolerance: Any) -> float:
    if isinstance(tolerance, bool) or not isinstance(tolerance, numbers.Real):
        raise ValueError(f"tolerance must be a real number in [0, 1), got {tolerance!r}")
    if not (math.isfinite(tolerance) and 0.0 <= tolerance < 1.0):
        raise ValueError(f"tolerance must be in [0, 1), got {tolerance!r}")
    return float(tolerance)


def _seed(rng: np.random.Generator) -> int:
    return int(rng.integers(0, _SEED_BOUND))


def validate_indices(indices: Any, n: int, name: str = "indices") -> np.ndarray:
    """``indices`` as a non-empty 1-D int64 array of rows of an n-row X, or ValueError."""
    arr = np.asarray(indices)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array of row indices, got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"{name} must be integers, got dtype {arr.dtype}")
    if arr.min() < 0 or arr.max() >= n:
        raise ValueError(f"{name} must lie in [0, {n}), got values in [{arr.min()}, {arr.max()}]")
    return arr.astype(np.int64)


def landmark_points(sampler: Any, X: np.ndarray) -> np.ndarray | None:
    """User-supplied landmark *points* (a 2-D array-like) as an array of X's dtype,
    or None when ``sampler`` is anything else (a name, a policy, indices)."""
    if not isinstance(sampler, (np.ndarray, list, tuple)):
        return None
    arr = np.asarray(sampler)
    if arr.ndim != 2:
        return None
    if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_):
        raise ValueError(f"landmark points must be numeric, got dtype {arr.dtype}")
    points = as_data_matrix(np.asarray(arr, dtype=X.dtype), "landmark points")
    if points.shape[1] != X.shape[1]:
        raise ValueError(f"landmark points have {points.shape[1]} features but X has {X.shape[1]}")
    return points


# --------------------------------------------------------------------------- #
# the interface
# --------------------------------------------------------------------------- #
class SamplingPolicy(abc.ABC):
    """Chooses landmark rows of ``X`` for a Nyström approximation.

    Subclasses implement :meth:`select_indices`. Any object with a method of that
    signature (or a plain function of it, see :class:`CallableSampling`) is
    accepted by :class:`~nystrom_kme.NystromKME` as well.
    """

    @abc.abstractmethod
    def select_indices(self, X: Any, kernel: Kernel | str, n_landmarks: int,
                       rng: np.random.Generator | int | None = None) -> np.ndarray:
        """Return landmark row indices of X.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        kernel : Kernel or str
            A kernel with a numeric bandwidth (``"median"`` is resolved on X).
        n_landmarks : int
            m >= 1; policies that select distinct rows need m <= n_samples.
        rng : numpy.random.Generator, int or None
            Source of randomness (unused by the deterministic policies).

        Returns
        -------
        ndarray of shape (m',), int64
            m' = m, except for the pivoted-Cholesky and farthest-point policies,
            which stop early (m' < m) once the kernel matrix is exhausted to
            round-off (numerical rank below m).
        """

    def _params(self) -> dict[str, Any]:
        return {}

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self._params().items())
        return f"{type(self).__name__}({inner})"


class UniformSampling(SamplingPolicy):
    """Uniform landmarks, with replacement (default) or without.

    With replacement is the paper's setting, for which Theorem 4.1 (Chatalic et
    al. 2022) bounds the error; without replacement never wastes a landmark on a
    duplicate. O(m) time and memory.

    Parameters
    ----------
    replace : bool, default=True
    """

    def __init__(self, replace: bool = True) -> None:
        if not isinstance(replace, (bool, np.bool_)):
            raise ValueError(f"replace must be a bool, got {replace!r}")
        self.replace = bool(replace)

    def _params(self) -> dict[str, Any]:
        return {"replace": self.replace}

    def select_indices(self, X: Any, kernel: Kernel | str, n_landmarks: int,
                       rng: np.random.Generator | int | None = None) -> np.ndarray:
        X = as_data_matrix(X, "X")
        m = check_positive_int(n_landmarks, "n_landmarks")
        n = X.shape[0]
        rng = check_random_state(rng)
        if self.replace:
            return rng.integers(0, n, size=m).astype(np.int64)
        if m > n:
            raise ValueError(f"n_landmarks={m} exceeds n_samples={n} (sampling without replacement)")
        return rng.choice(n, size=m, replace=False).astype(np.int64)


class FixedLandmarks(SamplingPolicy):
    """User-supplied landmark rows: returns ``indices`` whatever ``n_landmarks`` is.

    Parameters
    ----------
    indices : array-like of int, shape (m,)
    """

    def __init__(self, indices: Any) -> None:
        arr = np.asarray(indices)
        if arr.ndim != 1 or arr.size == 0 or not np.issubdtype(arr.dtype, np.integer):
            raise ValueError("indices must be a non-empty 1-D array of integers, got "
                             f"shape {arr.shape} and dtype {arr.dtype}")
        self.indices = arr.astype(np.int64)

    def _params(self) -> dict[str, Any]:
        return {"indices": self.indices}

    def select_indices(self, X: Any, kernel: Kernel | str, n_landmarks: int | None = None,
                       rng: np.random.Generator | int | None = None) -> np.ndarray:
        X = as_data_matrix(X, "X")
        return validate_indices(self.indices, X.shape[0]).copy()


class CallableSampling(SamplingPolicy):
    """Wraps a function ``f(X, kernel, n_landmarks, rng) -> indices`` as a policy."""

    def __init__(self, function: Callable[..., Any]) -> None:
        if not callable(function):
            raise ValueError(f"function must be callable, got {function!r}")
        self.function = function

    def _params(self) -> dict[str, Any]:
        return {"function": self.function}

    def select_indices(self, X: Any, kernel: Kernel | str, n_landmarks: int,
                       rng: np.random.Generator | int | None = None) -> np.ndarray:
        X = as_data_matrix(X, "X")
        return validate_indices(self.function(X, kernel, n_landmarks, rng), X.shape[0],
                           "the indices returned by the sampler")


# --------------------------------------------------------------------------- #
# pivoted Cholesky family
# --------------------------------------------------------------------------- #
class _PivotedCholesky(SamplingPolicy):
    """Common parts: tolerance, threads and the fitted traces."""

    def __init__(self, *, tolerance: float = 1e-12, n_threads: int | None = None) -> None:
        self.tolerance = _check_tolerance(tolerance)
        self.n_threads = _optional_threads(n_threads)

    def _params(self) -> dict[str, Any]:
        return {"tolerance": self.tolerance, "n_threads": self.n_threads}

    def _store(self, result: tuple[np.ndarray, np.ndarray, np.ndarray]) -> np.ndarray:
        pivots, trace, values = result
        self.residual_trace_ = np.asarray(trace, dtype=np.float64)
        self.pivot_values_ = np.asarray(values, dtype=np.float64)
        return np.asarray(pivots, dtype=np.int64)


class GreedyCholeskySampling(_PivotedCholesky):
    """Greedy (deterministic) pivoted partial Cholesky of the kernel matrix.

    Each step takes the row with the largest residual diagonal
    ``d_i = k(x_i, x_i) - ||F_i||^2`` (smallest index on ties), evaluates its kernel
    column in the core and updates the factor ``F`` and ``d``. Stops early when
    ``max d <= tolerance * max_i k(x_i, x_i)`` (numerical rank reached).

    Cost: O(n m (m + d)) time; **O(n m) memory** for the n x m factor ``F``.

    Parameters
    ----------
    tolerance : float, default=1e-12
    n_threads : int or None, default=None

    Attributes (after ``select_indices``)
    -------------------------------------
    residual_trace_ : ndarray of shape (m' + 1,)
        tr(K - F F^T) before the first pivot and after each one (non-increasing).
    pivot_values_ : ndarray of shape (m',)
        Residual diagonal of each pivot when it was chosen.

    References
    ----------
    .. [1] Y. Chen, E. N. Epperly, J. A. Tropp, R. J. Webber, "Randomly pivoted
       Cholesky: practical approximation of a kernel matrix with few entry
       evaluations", arXiv:2207.06503, 2022 (greedy pivoting as the baseline).
    """

    _rule = "greedy"

    def select_indices(self, X: Any, kernel: Kernel | str, n_landmarks: int,
                       rng: np.random.Generator | int | None = None) -> np.ndarray:
        X, kernel, m, rng = _prepare(X, kernel, n_landmarks, rng, distinct=True)
        seed = _seed(rng) if self._rule == "random" else 0
        return self._store(_core.pivoted_cholesky(X, kernel.to_core(), m, self._rule, seed,
                                                  self.tolerance, n_threads_arg(self.n_threads)))


class DPPGreedySampling(GreedyCholeskySampling):
    """Fast greedy MAP inference of a k-DPP with L-ensemble L = K (Chen, Zhang, Zhou 2018).

    Algorithm 1 of [1] adds, at each step, the item j maximising
    ``log det L_{S + j}``, updating incremental Cholesky rows ``c_i`` and
    ``d_i^2 = L_ii - ||c_i||^2``; the gain of j is ``log d_j^2``, so for a
    cardinality-constrained MAP with uniform quality it *is* the greedy pivoted
    Cholesky of K (:class:`GreedyCholeskySampling`), which this class runs.
    Θ(n m (m + d)) time and **O(n m) memory**, as stated in the paper's Figure 1.

    References
    ----------
    .. [1] L. Chen, G. Zhang, H. Zhou, "Fast greedy MAP inference for determinantal
       point process to improve recommendation diversity", NeurIPS 2018.
    """


class RPCholeskySampling(GreedyCholeskySampling):
    """Randomly pivoted Cholesky (Chen, Epperly, Tropp, Webber 2022, Algorithm 1).

    Each pivot is drawn with probability proportional to the residual diagonal
    ``d_i``; then one kernel column is evaluated and ``F``, ``d`` updated in the
    core. Pivots are distinct. Used for kernel quadrature by Epperly & Moreno
    (NeurIPS 2023), whose error bounds are for this sampler.

    Cost: O(n m (m + d)) time; **O(n m) memory** for the factor. Same attributes
    as :class:`GreedyCholeskySampling`.

    References
    ----------
    .. [1] Y. Chen, E. N. Epperly, J. A. Tropp, R. J. Webber, "Randomly pivoted
       Cholesky: practical approximation of a kernel matrix with few entry
       evaluations", arXiv:2207.06503, 2022 (CPAM 2024).
    .. [2] E. N. Epperly, E. Moreno, "Kernel quadrature with randomly pivoted
       Cholesky", NeurIPS 2023.
    """

    _rule = "random"


class BlockRPCholeskySampling(_PivotedCholesky):
    """Accelerated randomly pivoted Cholesky: block proposals with rejection.

    Each round draws ``block_size`` proposals i.i.d. from the residual diagonal
    ``d`` and accepts proposal i with probability ``g_ii / d_i``, with ``g_ii`` its
    residual after the proposals accepted before it in the round (a small Schur
    complement). Accepted pivots have exactly the law of sequential RPCholesky
    ([1], Alg. 2), but the factor is updated with one block kernel column per
    round from the tiled engine (GEMM speed instead of one column at a time).

    Cost: O(n m (m + d)) time, **O(n m + n b) memory** (factor and one block).

    Parameters
    ----------
    block_size : int or None, default=None
        Proposals per round b; None: min(n_landmarks, 128).
    tolerance, n_threads : as :class:`GreedyCholeskySampling`

    References
    ----------
    .. [1] E. N. Epperly, J. A. Tropp, R. J. Webber, "Embrace rejection: kernel
       matrix approximation by accelerated randomly pivoted Cholesky",
       arXiv:2410.03969, 2024.
    .. [2] Y. Chen, E. N. Epperly, J. A. Tropp, R. J. Webber, "Randomly pivoted
       Cholesky", arXiv:2207.06503 (the block variant, Alg. 3).
    """

    def __init__(self, block_size: int | None = None, *, tolerance: float = 1e-12,
                 n_threads: int | None = None) -> None:
        super().__init__(tolerance=tolerance, n_threads=n_threads)
        self.block_size = None if block_size is None else check_positive_int(block_size, "block_size")

    def _params(self) -> dict[str, Any]:
        return {"block_size": self.block_size, **super()._params()}

    def select_indices(self, X: Any, kernel: Kernel | str, n_landmarks: int,
                       rng: np.random.Generator | int | None = None) -> np.ndarray:
        X, kernel, m, rng = _prepare(X, kernel, n_landmarks, rng, distinct=True)
        b = min(m, 128) if self.block_size is None else self.block_size
        return self._store(_core.block_rpcholesky(X, kernel.to_core(), m, b, _seed(rng),
                                                  self.tolerance, n_threads_arg(self.n_threads)))


# --------------------------------------------------------------------------- #
# greedy mean-matching baselines
# --------------------------------------------------------------------------- #
class KernelHerding(SamplingPolicy):
    """Kernel herding (Chen, Welling, Smola 2010) towards the empirical embedding.

    Step t picks ``argmax_x mu_hat(x) - (1/(t+1)) sum_{s<=t} k(x, z_s)`` over the
    candidates, with ``mu_hat(x) = (1/n) sum_i k(x_i, x)``. Candidates are the rows
    of X (or a random subset of ``n_candidates`` rows).

    Cost: computing ``mu_hat`` on the candidates is **O(n_c n d)** time (O(n^2 d)
    with all rows: about a second at n = 10^4, d = 10; use ``n_candidates`` for
    larger n), then O(m n_c d) for the herding steps; O(n_c) memory.

    Parameters
    ----------
    allow_repeats : bool, default=False
        Herding proper may pick a point again; repeats add nothing to a Nyström
        span, so by default chosen points are excluded (then m <= n_c).
    n_candidates : int or None, default=None
        None: every row is a candidate.
    n_threads : int or None, default=None

    Attributes
    ----------
    candidates_ : ndarray of int64, the candidate rows used by the last call

    References
    ----------
    .. [1] Y. Chen, M. Welling, A. Smola, "Super-samples from kernel herding", UAI 2010.
    """

    def __init__(self, *, allow_repeats: bool = False, n_candidates: int | None = None,
                 n_threads: int | None = None) -> None:
        if not isinstance(allow_repeats, (bool, np.bool_)):
            raise ValueError(f"allow_repeats must be a bool, got {allow_repeats!r}")
        self.allow_repeats = bool(allow_repeats)
        self.n_candidates = (None if n_candidates is None
                             else check_positive_int(n_candidates, "n_candidates"))
        self.n_threads = _optional_threads(n_threads)

    def _params(self) -> dict[str, Any]:
        return {"allow_repeats": self.allow_repeats, "n_candidates": self.n_candidates,
                "n_threads": self.n_threads}

    def select_indices(self, X: Any, kernel: Kernel | str, n_landmarks: int,
                       rng: np.random.Generator | int | None = None) -> np.ndarray:
        X, kernel, m, rng = _prepare(X, kernel, n_landmarks, rng, distinct=False)
        n = X.shape[0]
        nt = n_threads_arg(self.n_threads)
        core_kernel = kernel.to_core()
        if self.n_candidates is None or self.n_candidates >= n:
            cand = np.arange(n, dtype=np.int64)
            C = X
        else:
            cand = np.sort(rng.choice(n, size=self.n_candidates, replace=False)).astype(np.int64)
            C = np.ascontiguousarray(X[cand])
        if not self.allow_repeats and m > cand.size:
            raise ValueError(f"n_landmarks={m} exceeds the {cand.size} candidates; "
                             "set allow_repeats=True or use more candidates")
        target = np.asarray(_core.kernel_row_sums(C, X, core_kernel, nt), dtype=np.float64) / n
        chosen = _core.kernel_herding(C, np.ascontiguousarray(target), core_kernel, m,
                                      self.allow_repeats, nt)
        self.candidates_ = cand
        return cand[np.asarray(chosen, dtype=np.int64)]


class CortesScottSampling(SamplingPolicy):
    """Greedy incoherent subset: farthest-point selection in the RKHS metric.

    Cruz Cortes & Scott approximate the sample mean by a sparse combination of
    kernel functions at points chosen greedily for low mutual coherence; with the
    RKHS distance ``||phi(x) - phi(z)||^2 = k(x,x) + k(z,z) - 2 k(x,z)`` this is the
    greedy k-centre (Gonzalez) rule: start at a random row, then repeatedly add the
    row farthest from the chosen set. (This follows the paper's description of
    the method; the weights are then the Nyström projection, as for every policy.)
    Stops early once all rows are within round-off of a chosen one.

    Cost: O(m n d) time, O(n) memory (the Θ(n m) memory of the original comes from
    storing K_nm for its weights, which NystromKME streams instead).

    References
    ----------
    .. [1] E. Cruz Cortes, C. Scott, "Scalable sparse approximation of a sample
       mean", ICASSP 2014, pp. 5237-5241.
    .. [2] E. Cruz Cortes, C. Scott, "Sparse approximation of a kernel mean",
       IEEE Trans. Signal Processing 65(5), 2017.
    """

    def __init__(self, *, tolerance: float = 1e-12, n_threads: int | None = None) -> None:
        self.tolerance = _check_tolerance(tolerance)
        self.n_threads = _optional_threads(n_threads)

    def _params(self) -> dict[str, Any]:
        return {"tolerance": self.tolerance, "n_threads": self.n_threads}

    def select_indices(self, X: Any, kernel: Kernel | str, n_landmarks: int,
                       rng: np.random.Generator | int | None = None) -> np.ndarray:
        X, kernel, m, rng = _prepare(X, kernel, n_landmarks, rng, distinct=True)
        first = int(rng.integers(0, X.shape[0]))
        out = _core.farthest_point(X, kernel.to_core(), m, first, self.tolerance,
                                   n_threads_arg(self.n_threads))
        return np.asarray(out, dtype=np.int64)


# --------------------------------------------------------------------------- #
# ridge leverage scores (BLESS)
# --------------------------------------------------------------------------- #
def _check_positive_real(value: Any, name: str, *, above: float = 0.0) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number > {above}, got {value!r}")
    if not (math.isfinite(value) and value > above):
        raise ValueError(f"{name} must be a finite number > {above}, got {value!r}")
    return float(value)


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
        self.lam = None if lam is None else _check_positive_real(lam, "lam")
        self.deff_fraction = _check_positive_real(deff_fraction, "deff_fraction")
        if not isinstance(replace, (bool, np.bool_)):
            raise ValueError(f"replace must be a bool, got {replace!r}")
        self.replace = bool(replace)
        self.q = _check_positive_real(q, "q", above=1.0)
        self.q1 = _check_positive_real(q1, "q1")
        self.q2 = _check_positive_real(q2, "q2")
        self.n_threads = _optional_threads(n_threads)

    def _params(self) -> dict[str, Any]:
        return {"lam": self.lam, "deff_fraction": self.deff_fraction, "replace": self.replace,
                "q": self.q, "q1": self.q1, "q2": self.q2, "n_threads": self.n_threads}

    def _fit_scores(self, X: np.ndarray, kernel: Kernel, m: int | None,
                    rng: np.random.Generator) -> None:
        nt = n_threads_arg(self.n_threads)
        core_kernel = kernel.to_core()
        target = None if m is None else self.deff_fraction * m
        path = _bless(X, core_kernel, rng, lam=self.lam, target_deff=target, q=self.q,
                      q1=self.q1, q2=self.q2, n_threads=nt)
        self.lam_ = float(path["lam"])
        self.dictionary_ = path["D_idx"]
        self.scores_ = _estimates(X, X, path["D_idx"], path["D_w"], self.lam_, X.shape[0],
                                  core_kernel, nt)
        self.effective_dimension_ = float(self.scores_.sum())

    def select_indices(self, X: Any, kernel: Kernel | str, n_landmarks: int,
                       rng: np.random.Generator | int | None = None) -> np.ndarray:
        X, kernel, m, rng = _prepare(X, kernel, n_landmarks, rng, distinct=not self.replace)
        self._fit_scores(X, kernel, m, rng)
        p = self.scores_ / self.scores_.sum()
        if not self.replace and np.count_nonzero(p) < m:
            raise ValueError(f"only {np.count_nonzero(p)} rows have a positive score; "
                             f"cannot draw n_landmarks={m} without replacement")
        return rng.choice(X.shape[0], size=m, replace=self.replace, p=p).astype(np.int64)


# --------------------------------------------------------------------------- #
# resolution of names and objects
# --------------------------------------------------------------------------- #
_NAMES: dict[str, Callable[[], SamplingPolicy]] = {
    "uniform": UniformSampling,
    "uniform-without-replacement": lambda: UniformSampling(replace=False),
    "rls": RidgeLeverageSampling,
    "bless": RidgeLeverageSampling,
    "rpcholesky": RPCholeskySampling,
    "block-rpcholesky": BlockRPCholeskySampling,
    "greedy-cholesky": GreedyCholeskySampling,
    "herding": KernelHerding,
    "cortes-scott": CortesScottSampling,
    "dpp-greedy": DPPGreedySampling,
}

#: The accepted sampler names.
SAMPLER_NAMES: tuple[str, ...] = tuple(_NAMES)


def resolve_sampler(sampler: Any) -> Any:
    """A policy object from a name, a policy, an object with ``select_indices``, a
    function ``f(X, kernel, n_landmarks, rng)`` or an integer index array.

    Raises
    ------
    ValueError
        For an unknown name or an unusable object.
    """
    if isinstance(sampler, str):
        try:
            return _NAMES[sampler]()
        except KeyError:
            raise ValueError(f"unknown sampler {sampler!r}; expected one of {sorted(_NAMES)}, "
                             "a SamplingPolicy, or landmark indices / points") from None
    if isinstance(sampler, SamplingPolicy):
        return sampler
    if callable(getattr(sampler, "select_indices", None)):
        return sampler
    if isinstance(sampler, (np.ndarray, list, tuple)):
        return FixedLandmarks(sampler)
    if callable(sampler):
        return CallableSampling(sampler)
    raise ValueError(f"sampler must be a name in {sorted(_NAMES)}, a SamplingPolicy, an object "
                     f"with select_indices, a function or landmark indices; got {sampler!r}")
