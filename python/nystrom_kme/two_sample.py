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

#: Rows of the pooled sample per core call of the Nyström test (progress and
#: Ctrl-C between calls; the core streams each call in ~1 MiB superblocks).
CHUNK_ROWS = 1 << 18


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


def _split_seed(rng: np.random.Generator) -> int:
    """The seed of the permutation splits: the first draw from the test's generator."""
    return int(rng.integers(0, 2**63))


def random_splits(n1: int, n2: int, n_permutations: int = 200, random_state: Any = None) -> np.ndarray:
    """The splits a permutation test with these arguments uses, as booleans.

    Column 0 is the observed split (the first ``n1`` of the ``n1 + n2`` pooled rows
    belong to the first sample); column b >= 1 is an independent, uniformly random
    split into ``n1`` and ``n2`` rows, drawn in the C++ core by selection sampling.
    :func:`two_sample_test` with the same ``random_state`` (an int or a fresh
    Generator in the same state) uses exactly these splits, whatever the data, so
    its null distribution can be replayed.

    Parameters
    ----------
    n1, n2 : int
        Sizes of the two samples (>= 1 each).
    n_permutations : int, default=200
    random_state : None, int or numpy.random.Generator

    Returns
    -------
    ndarray of bool, shape (n1 + n2, n_permutations + 1)
        True where the row belongs to the first sample.

    Examples
    --------
    >>> import nystrom_kme as nk
    >>> S = nk.random_splits(3, 2, n_permutations=4, random_state=0)
    >>> S.shape, S.sum(axis=0).tolist()
    ((5, 5), [3, 3, 3, 3, 3])
    """
    n1 = check_positive_int(n1, "n1")
    n2 = check_positive_int(n2, "n2")
    B = check_positive_int(n_permutations, "n_permutations")
    splits = _core.RandomSplits(n1, n2, B, _split_seed(check_random_state(random_state)))
    return splits.next_weights(n1 + n2) > 0


def _label_bits(splits: _core.RandomSplits) -> np.ndarray:
    """All labels of `splits`, packed one bit per row and column as np.packbits does:
    an (n, ceil((B + 1) / 8)) uint8 array (for the dask path, which ships row
    blocks of it to the workers)."""
    n, cols = splits.n_rows, splits.n_columns
    packed = np.empty((n, (cols + 7) // 8), dtype=np.uint8)
    for start in range(0, n, CHUNK_ROWS):  # O(CHUNK_ROWS (B + 1)) scratch
        stop = min(n, start + CHUNK_ROWS)
        packed[start:stop] = np.packbits(splits.next_weights(stop - start) > 0, axis=1)
    return packed


def _weights_for(bits: np.ndarray, start: int, stop: int, n1: int, n2: int, n_columns: int) -> np.ndarray:
    """(stop - start, B + 1) label weights +1/n1 (X) / -1/n2 (Y) for rows start:stop."""
    labels = np.unpackbits(bits[start:stop], axis=1, count=n_columns)
    return labels * (1.0 / n1 + 1.0 / n2) - 1.0 / n2


def _nystrom_statistics(L: np.ndarray, S: np.ndarray, core: _core.Kernel, nt: int) -> np.ndarray:
    """T_b = s_b^T K_m^+ s_b for each column s_b of S (m, B + 1). The minimum-norm
    solve of the core (deterministic, parallel; s_b lies in the range of K_m)."""
    alpha, _, _ = _core.nystrom_weights(L, S, core, "auto", 0.0, 1e-12, nt)
    return np.einsum("ib,ib->b", S, alpha)


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
    one streaming pass computing K(L, Z) W in the C++ core, where column b of W
    holds the label weights of random split b, generated on the fly (see
    :func:`random_splits`): neither the n x m feature matrix nor W is stored.
    Time O(n m d + n m B + m^3), parallel; memory O(m B) floats plus ~1 MiB
    blocks. With m = n every pooled point is a landmark and the statistic is the
    exact biased MMD^2.

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
        Splits and landmarks are reproducible from it (the splits do not depend on
        the thread count or the data; :func:`random_splits` returns them).
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
    splits = _core.RandomSplits(n1, n2, B, _split_seed(rng))  # first draw: see random_splits
    k = _pooled_kernel(kernel, X, Y, rng)
    core = k.to_core()
    Z = np.concatenate([X, Y])
    if method == "nystrom":
        m = default_n_landmarks(n) if n_landmarks is None else check_positive_int(n_landmarks, "n_landmarks")
        if m > n:
            raise ValueError(f"n_landmarks={m} exceeds n1 + n2 = {n}")
    elif n_landmarks is not None:
        raise ValueError("n_landmarks applies to method='nystrom' only")
    if method == "exact":
        W = splits.next_weights(n)
        S = _core.kernel_sums(Z, Z, W, core, nt)
        stats = np.einsum("ib,ib->b", W, S)
        m = None
    else:
        L = np.ascontiguousarray(Z[np.sort(rng.choice(n, size=m, replace=False))])
        S = np.zeros((m, B + 1))
        bar = _progress(n, progress, "Nystrom permutation test")
        # One streaming pass: the core makes each chunk's label weights on the fly.
        for start in range(0, n, CHUNK_ROWS):
            stop = min(n, start + CHUNK_ROWS)
            S += _core.split_kernel_sums(L, Z[start:stop], splits, core, nt)
            if bar is not None:
                bar.update(stop - start)
        if bar is not None:
            bar.close()
        stats = _nystrom_statistics(L, S, core, nt)
    observed, null = float(stats[0]), np.asarray(stats[1:])
    pvalue = (1.0 + np.count_nonzero(null >= observed)) / (1.0 + B)
    return TwoSampleResult(statistic=observed, pvalue=float(pvalue), null_distribution=null,
                           method=method, kernel=k, n_landmarks=m, n_permutations=B)


