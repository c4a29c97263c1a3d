"""The pivoted partial Cholesky family: greedy, DPP greedy, randomly pivoted, block.

Every member factors K ~ F F^T one pivot (or one block of pivots) at a time in
the compiled core, evaluating one kernel column per pivot; the pivots are the
landmarks. They share the stopping rule (residual diagonal below ``tolerance``
times the largest kernel diagonal) and the fitted traces.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .. import _core
from .._validation import SAMPLER_SEED_BOUND, draw_seed, n_threads_arg
from ..kernels import Kernel
from ._common import (
    check_n_threads,
    check_optional_positive_int,
    check_tolerance,
    prepare_input,
)
from .base import SamplingPolicy


def _default_block(m: int) -> int:
    """Proposals per round of the block RPCholesky: 128 (the core caps it at n). Not
    min(m, 128): a block that does not depend on m makes the pivots drawn for m, with
    one seed, a prefix of those drawn for any larger m (the nested sets that
    ``n_landmarks="auto"`` relies on); the unused proposals of the last round cost
    at most a 128 x 128 kernel block."""
    return 128


class _PivotedCholesky(SamplingPolicy):
    """Common parts: tolerance, threads and the fitted traces."""

    def __init__(self, *, tolerance: float = 1e-12, n_threads: int | None = None) -> None:
        check_tolerance(tolerance)
        check_n_threads(n_threads)
        self.tolerance = tolerance
        self.n_threads = n_threads

    def _store(self, result: tuple[np.ndarray, np.ndarray, np.ndarray]) -> np.ndarray:
        pivots, trace, values = result
        self.residual_trace_ = np.asarray(trace, dtype=np.float64)
        self.pivot_values_ = np.asarray(values, dtype=np.float64)
        pivots = np.asarray(pivots, dtype=np.int64)
        if pivots.size == 0:
            # The first pivot is taken whenever max_i k(x_i, x_i) > 0 (tolerance < 1), so
            # no pivot means a zero kernel diagonal, hence (K is PSD) a zero kernel matrix.
            raise ValueError(
                f"{type(self).__name__}: the kernel matrix of X is zero (k(x_i, x_i) = 0 for "
                "every row: numerical rank 0), so the pivoted Cholesky finds no pivot and no "
                "landmark can be chosen; use another kernel or bandwidth (e.g. the linear kernel "
                "vanishes on all-zero data)"
            )
        return pivots


class GreedyCholeskySampling(_PivotedCholesky):
    """Greedy (deterministic) pivoted partial Cholesky of the kernel matrix.

    Each step takes the row with the largest residual diagonal
    ``d_i = k(x_i, x_i) - ||F_i||^2`` (smallest index on ties) and updates the factor
    ``F`` and ``d`` with its residual column. Stops early when
    ``max d <= tolerance * max_i k(x_i, x_i)`` (numerical rank reached). The core runs it
    in panels: the residual columns of the 128 largest residuals are formed at once
    (kernel engine + one matrix product against ``F``), and pivots are taken from them
    while the argmax stays among them; the pivots are those of the one-at-a-time rule.

    Cost: O(n m (m + d)) time; **O(n m) memory** for the n x m factor ``F`` (plus two
    n x 128 panels).

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

    Raises ValueError when the kernel matrix of X is zero (every k(x_i, x_i) = 0,
    e.g. the linear kernel on all-zero data): there is no pivot to choose.

    References
    ----------
    .. [1] Y. Chen, E. N. Epperly, J. A. Tropp, R. J. Webber, "Randomly pivoted
       Cholesky: practical approximation of a kernel matrix with few entry
       evaluations", arXiv:2207.06503, 2022 (greedy pivoting as the baseline).

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> X = np.random.default_rng(0).normal(size=(2000, 2))
    >>> pol = nk.GreedyCholeskySampling()
    >>> idx = pol.select_indices(X, nk.Gaussian(1.0), 20, np.random.default_rng(0))
    >>> idx.shape, bool(idx.min() >= 0 and idx.max() < 2000)
    ((20,), True)
    >>> kme = nk.NystromKME(nk.Gaussian(1.0), n_landmarks=20, sampler='greedy-cholesky', random_state=0).fit(X)
    >>> kme.landmarks_.shape
    (20, 2)
    """

    _rule = "greedy"

    def select_indices(
        self, X: ArrayLike, kernel: Kernel | str, n_landmarks: int, rng: np.random.Generator | int | None = None
    ) -> np.ndarray:
        X, kernel, m, rng = prepare_input(X, kernel, n_landmarks, rng, distinct=True)
        if self._rule == "random":
            # the accelerated block form: the same law as one pivot at a time, at the speed
            # of matrix products (see BlockRPCholeskySampling)
            return self._store(
                _core.block_rpcholesky(
                    X,
                    kernel.to_core(),
                    m,
                    _default_block(m),
                    draw_seed(rng, SAMPLER_SEED_BOUND),
                    float(self.tolerance),
                    n_threads_arg(self.n_threads),
                )
            )
        return self._store(
            _core.pivoted_cholesky(
                X, kernel.to_core(), m, self._rule, 0, float(self.tolerance), n_threads_arg(self.n_threads)
            )
        )


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

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> X = np.random.default_rng(0).normal(size=(2000, 2))
    >>> pol = nk.DPPGreedySampling()
    >>> idx = pol.select_indices(X, nk.Gaussian(1.0), 20, np.random.default_rng(0))
    >>> idx.shape, bool(idx.min() >= 0 and idx.max() < 2000)
    ((20,), True)
    >>> kme = nk.NystromKME(nk.Gaussian(1.0), n_landmarks=20, sampler='dpp-greedy', random_state=0).fit(X)
    >>> kme.landmarks_.shape
    (20, 2)
    """


class RPCholeskySampling(GreedyCholeskySampling):
    """Randomly pivoted Cholesky (Chen, Epperly, Tropp, Webber 2022, Algorithm 1).

    Each pivot is drawn with probability proportional to the residual diagonal
    ``d_i``, then ``F`` and ``d`` are updated. Pivots are distinct. Runs as the
    accelerated block form of :class:`BlockRPCholeskySampling` (default block size),
    whose pivots have exactly this law: block kernel columns and matrix products
    instead of one column and one pass over ``F`` per pivot. Used for kernel quadrature by Epperly & Moreno
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

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> X = np.random.default_rng(0).normal(size=(2000, 2))
    >>> pol = nk.RPCholeskySampling()
    >>> idx = pol.select_indices(X, nk.Gaussian(1.0), 20, np.random.default_rng(0))
    >>> idx.shape, bool(idx.min() >= 0 and idx.max() < 2000)
    ((20,), True)
    >>> kme = nk.NystromKME(nk.Gaussian(1.0), n_landmarks=20, sampler='rpcholesky', random_state=0).fit(X)
    >>> kme.landmarks_.shape
    (20, 2)
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
        Proposals per round b; None: 128 (capped at n), whatever n_landmarks.
    tolerance, n_threads : as :class:`GreedyCholeskySampling`

    References
    ----------
    .. [1] E. N. Epperly, J. A. Tropp, R. J. Webber, "Embrace rejection: kernel
       matrix approximation by accelerated randomly pivoted Cholesky",
       arXiv:2410.03969, 2024.
    .. [2] Y. Chen, E. N. Epperly, J. A. Tropp, R. J. Webber, "Randomly pivoted
       Cholesky", arXiv:2207.06503 (the block variant, Alg. 3).

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> X = np.random.default_rng(0).normal(size=(2000, 2))
    >>> pol = nk.BlockRPCholeskySampling(block_size=8)
    >>> idx = pol.select_indices(X, nk.Gaussian(1.0), 20, np.random.default_rng(0))
    >>> idx.shape, bool(idx.min() >= 0 and idx.max() < 2000)
    ((20,), True)
    >>> kme = nk.NystromKME(nk.Gaussian(1.0), n_landmarks=20, sampler='block-rpcholesky', random_state=0).fit(X)
    >>> kme.landmarks_.shape
    (20, 2)
    """

    def __init__(
        self, block_size: int | None = None, *, tolerance: float = 1e-12, n_threads: int | None = None
    ) -> None:
        super().__init__(tolerance=tolerance, n_threads=n_threads)
        check_optional_positive_int(block_size, "block_size")
        self.block_size = block_size

    def select_indices(
        self, X: ArrayLike, kernel: Kernel | str, n_landmarks: int, rng: np.random.Generator | int | None = None
    ) -> np.ndarray:
        X, kernel, m, rng = prepare_input(X, kernel, n_landmarks, rng, distinct=True)
        b = _default_block(m) if self.block_size is None else int(self.block_size)
        return self._store(
            _core.block_rpcholesky(
                X,
                kernel.to_core(),
                m,
                b,
                draw_seed(rng, SAMPLER_SEED_BOUND),
                float(self.tolerance),
                n_threads_arg(self.n_threads),
            )
        )
