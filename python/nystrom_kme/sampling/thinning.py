"""Kernel thinning landmarks (Compress++, Shetty, Dwivedi and Mackey, ICLR 2022) from the
optional ``goodpoints`` package (``pip install nystrom-kme[thinning]``).

Used by :func:`nystrom_kme.compress` for ``sampler="kernel-thinning"``; any
:class:`~nystrom_kme.NystromKME` accepts an instance as its ``sampler``.
"""

from __future__ import annotations

import numbers
from types import ModuleType

import numpy as np
from numpy.typing import ArrayLike

from .._validation import GOODPOINTS_SEED_BOUND, check_random_state, draw_seed
from ..kernels import Gaussian, Kernel
from .base import SamplingPolicy


def _goodpoints_compress() -> ModuleType:
    try:
        from goodpoints import compress
    except ImportError as err:
        raise ImportError(
            "sampler='kernel-thinning' needs the optional goodpoints package: "
            "pip install 'nystrom-kme[thinning]' (or pip install goodpoints)"
        ) from err
    module: ModuleType = compress
    return module


class KernelThinning(SamplingPolicy):
    """Compress++ with kernel thinning halving (``goodpoints.compress.compresspp_kt``).

    Compress++ turns 4^k input points into 2^k; so that any n works, the policy
    thins a uniform random subset of m^2 rows (drawn without replacement from
    ``rng``; all rows when n = m^2) in random order, and needs ``n_landmarks`` m to
    be a power of two with m^2 <= n. Compress++ may return a row more than once
    (kernel thinning's swap step keeps the best candidate for each output slot); its
    uniform weights then count that row twice. Only the Gaussian kernel is supported
    (goodpoints' parameter is 2 sigma^2). Cost: O(m^2 d 4^g) time (the full kernel
    thinning would be O(n^2)), in goodpoints' own (numba/Cython) code.

    Parameters
    ----------
    g : int, default=4
        Compress++'s oversampling parameter (larger: better, 4^g times slower).
    delta : float, default=0.5
        Kernel thinning's failure probability parameter.

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> from nystrom_kme.sampling.thinning import KernelThinning
    >>> X = np.random.default_rng(0).normal(size=(256, 2))
    >>> try:
    ...     idx = KernelThinning(g=1).select_indices(X, nk.Gaussian(1.0), 16, 0)
    ...     ok = idx.shape == (16,)
    ... except ImportError:
    ...     ok = True
    >>> ok
    True
    """

    def __init__(self, g: int = 4, delta: float = 0.5) -> None:
        if isinstance(g, bool) or not isinstance(g, numbers.Integral) or g < 0:
            raise ValueError(f"g must be a non-negative integer, got {g!r}")
        if not (isinstance(delta, numbers.Real) and 0.0 < delta < 1.0):
            raise ValueError(f"delta must be a number in (0, 1), got {delta!r}")
        self.g = g
        self.delta = delta

    def select_indices(
        self, X: ArrayLike, kernel: Kernel | str, n_landmarks: int, rng: np.random.Generator | int | None = None
    ) -> np.ndarray:
        compress = _goodpoints_compress()
        X = np.asarray(X)
        n, m = X.shape[0], int(n_landmarks)
        if m < 1 or m & (m - 1) or m * m > n:
            raise ValueError(
                f"n_points / n_landmarks must be a power of two with m^2 <= n for kernel thinning, got m={m} with n={n}"
            )
        if not isinstance(kernel, Gaussian) or not isinstance(kernel.bandwidth, numbers.Real):
            raise ValueError(f"kernel thinning supports the Gaussian kernel with a numeric bandwidth, got {kernel!r}")
        rng = check_random_state(rng)
        rows = rng.permutation(n)[: m * m]
        seed = draw_seed(rng, GOODPOINTS_SEED_BOUND)
        sub = np.ascontiguousarray(X[rows], dtype=np.float64)
        params = np.array([2.0 * float(kernel.bandwidth) ** 2])
        picked = compress.compresspp_kt(
            sub, b"gaussian", k_params=params, g=int(self.g), delta=float(self.delta), seed=seed
        )
        return np.asarray(rows[np.asarray(picked, dtype=np.int64)], dtype=np.int64)
