"""The Nyström weights alpha = K_m^+ S: the package's one call of the core's solve
(``solve.hpp``), with its error tolerance left at the core's default (``auto`` keeps a
pivoted factorisation when its estimated RKHS error is below 1e-12 of the embedding's
norm, else it computes the complete orthogonal decomposition), and the rank threshold of
float32 data (``FLOAT32_RCOND``).
"""

from __future__ import annotations

from typing import NamedTuple, Union

import numpy as np

from . import _core
from .kernels import Kernel

KernelLike = Union[Kernel, _core.Kernel]

#: The relative pivot below which K_m's directions are dropped for float32 landmarks (and
#: so float32 data, whose kernel sums are computed in float32): float32's epsilon, the
#: relative rounding of their kernel values. The default m * float64 epsilon kept
#: directions that hold that rounding only, amplified by 1 / pivot: on 2- and
#: 3-dimensional float32 data a Nyström fit's MMD came out 0.0 or 56 where float64 gave
#: 1.2e-4 and 2.7e-4, and the tests' statistics moved by up to 47% (bench/RESULTS.md,
#: issue 46).
FLOAT32_RCOND = float(np.finfo(np.float32).eps)


def default_rcond(L: np.ndarray, rcond: float | None = None) -> float:
    """``rcond`` when given (> 0), else FLOAT32_RCOND for float32 landmarks and 0.0 (the
    core's default, m * float64 epsilon) for float64 ones."""
    if rcond:
        return float(rcond)
    return FLOAT32_RCOND if L.dtype == np.float32 else 0.0


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
        The relative rank threshold (0: :func:`default_rcond`, float32's epsilon for
        float32 landmarks, else the core's m * float64 epsilon).

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
    alpha, used, rank = _core.nystrom_weights(L, rhs, core, solver, default_rcond(L, rcond), n_threads=n_threads)
    return Solution(np.ascontiguousarray(alpha, dtype=np.float64), str(used), int(rank))


__all__ = ["FLOAT32_RCOND", "Solution", "default_rcond", "solve_weights"]
