"""The Nyström weights alpha = K_m^+ S: the package's one call of the core's solve
(``solve.hpp``), with its error tolerance left at the core's default (``auto`` keeps a
pivoted factorisation when its estimated RKHS error is below 1e-12 of the embedding's
norm, else it computes the complete orthogonal decomposition).
"""

from __future__ import annotations

from typing import NamedTuple, Union

import numpy as np

from . import _core
from .kernels import Kernel

KernelLike = Union[Kernel, _core.Kernel]


class Solution(NamedTuple):
    """alpha (m, k) float64, the solver that ran (``"cholesky"`` or ``"cod"``) and the
    numerical rank of K_m it used."""

    weights: np.ndarray
    solver: str
    rank: int


def solve_weights(
    L: np.ndarray,
    S: np.ndarray,
    kernel: KernelLike,
    n_threads: int,
    *,
    solver: str = "auto",
    rcond: float = 0.0,
) -> Solution:
    """The minimum-norm solution of K(L, L) alpha = S for every column of S.

    Parameters
    ----------
    L : ndarray of shape (m, d), float64 or float32, C-contiguous
        The landmarks.
    S : ndarray of shape (m,) or (m, k)
        Right-hand sides (kernel sums at the landmarks); a vector is one column.
    kernel : Kernel (resolved) or the core's Kernel
    n_threads : int
        0: the default.
    solver : {"auto", "cod", "cholesky"}, default="auto"
    rcond : float, default=0.0
        The COD's relative rank threshold (0: the core's default).

    Returns
    -------
    Solution
        ``weights`` has shape (m, k), float64, C-contiguous.

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> from nystrom_kme._solve import solve_weights
    >>> L = np.array([[0.0], [1.0]])
    >>> K = nk.Gaussian(1.0)(L)
    >>> out = solve_weights(L, K @ np.array([1.0, 2.0]), nk.Gaussian(1.0), 1)
    >>> out.weights[:, 0].round(12).tolist(), out.rank
    ([1.0, 2.0], 2)
    """
    core = kernel.to_core() if isinstance(kernel, Kernel) else kernel
    rhs = np.ascontiguousarray(np.asarray(S, dtype=np.float64).reshape(len(L), -1))
    alpha, used, rank = _core.nystrom_weights(L, rhs, core, solver, rcond, n_threads=n_threads)
    return Solution(np.ascontiguousarray(alpha, dtype=np.float64), str(used), int(rank))


__all__ = ["Solution", "solve_weights"]
