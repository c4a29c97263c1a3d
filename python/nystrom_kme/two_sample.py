"""Kernel two-sample tests with permutations: exact MMD and the Nyström test of
Chatalic, Letizia, Schreuder and Rosasco (2025).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import _core
from ._validation import check_positive_int, check_random_state, n_threads_arg
from .chunked import is_dask_array
from .embedding import default_n_landmarks
from .kernels import Kernel
from .mmd import _pair, _pooled_kernel

#: Rows of the pooled sample per streaming pass of the Nyström test.
CHUNK_ROWS = 16_384


@dataclass(frozen=True)
class TwoSampleResult:
    """Outcome of a permutation two-sample test (in the spirit of scipy.stats results).

    Attributes
    ----------
    statistic : float
        The observed statistic (squared MMD estimate).
    pvalue : float
        (1 + #{b : T_b >= T}) / (1 + B), counting the observed statistic.
    null_distribution : ndarray of shape (n_permutations,)
        The permuted statistics T_b.
    method : str
        "nystrom" or "exact".
    kernel : Kernel
        The kernel used (numeric bandwidth).
    n_landmarks : int or None
        m for the Nyström test, None for the exact test.
    n_permutations : int
    """

    statistic: float
    pvalue: float
    null_distribution: np.ndarray = field(repr=False)
    method: str
    kernel: Kernel
    n_landmarks: int | None
    n_permutations: int


def _progress(total: int, enabled: bool | None, desc: str):  # pragma: no cover - cosmetic
    """A tqdm bar when tqdm is installed and stderr is a terminal (or when forced)."""
    show = sys.stderr.isatty() if enabled is None else enabled
    if not show:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=desc, leave=False)


def _label_bits(n1: int, n: int, n_permutations: int, rng: np.random.Generator) -> np.ndarray:
    """Labels of the observed split (column 0: the first n1 rows are X) and of
    n_permutations random permutations (columns 1..B), one bit per point and
    permutation: an (n, ceil((B + 1) / 8)) uint8 array, row i packing point i.
    """
    observed = np.zeros(n, dtype=bool)
    observed[:n1] = True
    packed = np.empty((n, (n_permutations + 8) // 8), dtype=np.uint8)
    for byte in range(packed.shape[1]):  # eight label columns per byte: O(8 n) scratch
        cols = range(8 * byte, min(8 * byte + 8, n_permutations + 1))
        group = np.stack([observed if c == 0 else observed[rng.permutation(n)] for c in cols], axis=1)
        packed[:, byte] = np.packbits(group, axis=1)[:, 0]
    return packed


def _weights_for(bits: np.ndarray, start: int, stop: int, n1: int, n2: int, n_columns: int) -> np.ndarray:
    """(stop - start, B + 1) label weights +1/n1 (X) / -1/n2 (Y) for rows start:stop."""
    labels = np.unpackbits(bits[start:stop], axis=1, count=n_columns)
    return labels * (1.0 / n1 + 1.0 / n2) - 1.0 / n2


def _nystrom_statistics(L: np.ndarray, S: np.ndarray, core: _core.Kernel, nt: int) -> np.ndarray:
    """T_b = s_b^T K_m^+ s_b for each column s_b of S (m, B + 1), through the
    eigendecomposition of K_m (pinv threshold as numpy's pinv: eigenvalues below
    m * eps * largest are dropped)."""
    m = L.shape[0]
    evals, evecs = np.linalg.eigh(_core.kernel_matrix(L, L, core, nt))
    keep = evals > max(evals[-1], 0.0) * m * np.finfo(float).eps
    proj = evecs[:, keep].T @ S
    return (proj**2 / evals[keep, None]).sum(axis=0)


def two_sample_test(X: Any, Y: Any, *, kernel: Kernel | str = "gaussian", method: str = "nystrom",
                    n_landmarks: int | None = None, n_permutations: int = 200,
                    random_state: Any = None, progress: bool | None = None,
                    n_threads: int | None = None) -> TwoSampleResult:
    """Permutation test of H0: X and Y come from the same distribution.

    ``method="nystrom"`` (Chatalic, Letizia, Schreuder, Rosasco 2025): m landmarks
    are drawn uniformly without replacement from the pooled sample Z = [X; Y]
    (n = n1 + n2 points), features are Phi = K_{.m} (K_m^+)^{1/2}, and the statistic
    is ||mean Phi(X) - mean Phi(Y)||^2 = s^T K_m^+ s with s = K(L, Z) v and v the
    label weights (+1/n1 on X, -1/n2 on Y). All B permuted statistics come from
    one streaming pass computing K(L, Z) W, where column b of W holds the label
    weights of permutation b, chunk by chunk: the n x m feature matrix is never
    stored. Time O(n m d + n m B + m^3); memory O(m B + chunk B) floats plus
    n (B + 1) bits of permutation labels. With m = n every pooled point is a
    landmark and the statistic is the exact biased MMD^2.

    ``method="exact"``: the biased MMD^2 (V-statistic) with the same permutations,
    from one streaming pass K(Z, Z) W: O(n^2 (d + B)) time, O(n B) memory.

    Parameters
    ----------
    X : array-like (n1, d);  Y : array-like (n2, d)
    kernel : Kernel or str, default="gaussian" (median bandwidth on the pooled sample)
    method : {"nystrom", "exact"}
    n_landmarks : int or None
        m (Nyström only), 1 <= m <= n1 + n2; None: ceil(sqrt(n) log sqrt(n)).
    n_permutations : int, default=200
    random_state : None, int or numpy.random.Generator
        Landmarks and permutations are reproducible from it.
    progress : bool or None
        Progress bar (needs tqdm); None: only when stderr is a terminal.

    X and Y may be dask arrays chunked by rows (``method="nystrom"``): the
    streaming pass then runs on the dask workers, with the same landmarks,
    permutations and result (to round-off) as in memory; see
    :mod:`nystrom_kme.distributed`.

    Returns
    -------
    TwoSampleResult
    """
    if is_dask_array(X) or is_dask_array(Y):
        from .distributed import two_sample_test_dask

        return two_sample_test_dask(X, Y, kernel=kernel, method=method, n_landmarks=n_landmarks,
                                    n_permutations=n_permutations, random_state=random_state,
                                    n_threads=n_threads)
    X, Y = _pair(X, Y)
    if len(X) < 2 or len(Y) < 2:
        raise ValueError("X and Y need at least 2 points each")
    if method not in ("nystrom", "exact"):
        raise ValueError(f"method must be 'nystrom' or 'exact', got {method!r}")
    B = check_positive_int(n_permutations, "n_permutations")
    nt = n_threads_arg(n_threads)
    rng = check_random_state(random_state)
    n1, n2 = len(X), len(Y)
    n = n1 + n2
    k = _pooled_kernel(kernel, X, Y, rng)
    core = k.to_core()
    Z = np.concatenate([X, Y])
    if method == "nystrom":
        m = default_n_landmarks(n) if n_landmarks is None else check_positive_int(n_landmarks, "n_landmarks")
        if m > n:
            raise ValueError(f"n_landmarks={m} exceeds n1 + n2 = {n}")
    elif n_landmarks is not None:
        raise ValueError("n_landmarks applies to method='nystrom' only")
    bits = _label_bits(n1, n, B, rng)

    if method == "exact":
        W = _weights_for(bits, 0, n, n1, n2, B + 1)
        S = _core.kernel_sums(Z, Z, W, core, nt)
        stats = np.einsum("ib,ib->b", W, S)
        m = None
    else:
        L = np.ascontiguousarray(Z[np.sort(rng.choice(n, size=m, replace=False))])
        S = np.zeros((m, B + 1))
        bar = _progress(n, progress, "Nystrom permutation test")
        for start in range(0, n, CHUNK_ROWS):
            stop = min(n, start + CHUNK_ROWS)
            S += _core.kernel_sums(L, Z[start:stop], _weights_for(bits, start, stop, n1, n2, B + 1), core, nt)
            if bar is not None:
                bar.update(stop - start)
        if bar is not None:
            bar.close()
        stats = _nystrom_statistics(L, S, core, nt)
    observed, null = float(stats[0]), np.asarray(stats[1:])
    pvalue = (1.0 + np.count_nonzero(null >= observed)) / (1.0 + B)
    return TwoSampleResult(statistic=observed, pvalue=float(pvalue), null_distribution=null,
                           method=method, kernel=k, n_landmarks=m, n_permutations=B)


