"""The permutations of the pairing, and the cross products of the features under each.

The rows are put in a random order once and cut into bins of at most ``BIN_ROWS``
consecutive rows (sizes differing by at most one). A permutation keeps X where it is and
moves Y within each bin by a cyclic shift: row i of a bin of s rows is paired with the
Y of row (i + t) mod s, t drawn uniformly in {0, ..., s - 1}, independently per bin and
per permutation (column 0, the observed pairing: t = 0 everywhere). These permutations
form a group (the product of the bins' cyclic groups), so drawing from it uniformly
keeps the permutation test's level exact under H0 (X independent of Y, rows
i.i.d.; Hemerik and Goeman 2018); the random order makes every bin a uniform sample of
the rows, so the null distribution is that of full permutations up to a 1 / s share of
the dependence left in the bins' sums.

Why shifts in bins: the cross products D_b = F_X^T P_b F_Y of every shift of a bin come
from one FFT of each variable's features (a cross-correlation), O(s Q_X Q_Y log s) per
bin instead of O(B s Q_X Q_Y) for B gathered permutations, with every access inside a
bin (cache-resident): the whole null costs O(n Q_X Q_Y log s), n x n never formed.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np

from .._validation import RandomStateLike, check_positive_int, check_random_state
from ..sources.base import Progress

#: Rows per bin of the cyclic shifts (a power of two: FFTs of that length).
BIN_ROWS = 1024
#: Beyond this many rows the FFTs run in float32 (twice the speed; the sums over the
#: bins stay float64, and the observed pairing is computed as every permuted one).
FLOAT32_ROWS = 4 * BIN_ROWS


def bins_and_shifts(n: int, n_permutations: int, rng: np.random.Generator) -> tuple[list[np.ndarray], np.ndarray]:
    """The bins (the random order cut in pieces: each an array of row indices) and the
    shifts (n_bins, B + 1) (column 0: zeros), drawn from ``rng`` in this order."""
    order = rng.permutation(n)
    n_bins = -(-n // BIN_ROWS)
    bins = np.array_split(order, n_bins)
    sizes = np.array([b.size for b in bins])
    shifts = np.zeros((n_bins, n_permutations + 1), dtype=np.int64)
    shifts[:, 1:] = np.floor(rng.random((n_bins, n_permutations)) * sizes[:, None]).astype(np.int64)
    return bins, shifts


def pairings(n: int, n_permutations: int = 200, random_state: RandomStateLike = None) -> np.ndarray:
    """The pairings of the independence test's permutations, (B + 1, n): column b pairs
    row i of X with row ``pairings[b, i]`` of Y (row 0: the observed pairing, i -> i).
    :func:`~nystrom_kme.independence_test` with a Generator in the same state (after its
    own earlier draws) uses exactly these; the tests replay them against dense kernel
    matrices.

    Examples
    --------
    >>> from nystrom_kme.independence._pairings import pairings
    >>> P = pairings(6, 3, random_state=0)
    >>> P.shape, P[0].tolist(), sorted(P[2].tolist())
    ((4, 6), [0, 1, 2, 3, 4, 5], [0, 1, 2, 3, 4, 5])
    """
    n = check_positive_int(n, "n")
    B = check_positive_int(n_permutations, "n_permutations")
    bins, shifts = bins_and_shifts(n, B, check_random_state(random_state))
    out = np.empty((B + 1, n), dtype=np.int64)
    for rows, t in zip(bins, shifts):
        s = rows.size
        position = (np.arange(s)[None, :] + t[:, None]) % s  # (B + 1, s)
        out[:, rows] = rows[position]
    return out


def cross_products(
    FX: np.ndarray,
    FY: np.ndarray,
    bins: list[np.ndarray],
    shifts: np.ndarray,
    progress: Progress | None = None,
    n_threads: int = 0,
) -> np.ndarray:
    """D_b = sum_i F_X[i] F_Y[pair_b(i)]^T for every pairing b, (B + 1, Q_X, Q_Y): per bin the
    cross-correlation of the two blocks over every shift (real FFTs along contiguous rows,
    scipy.fft on ``n_threads`` workers where installed, else numpy.fft), the B + 1 drawn
    shifts picked and summed over the bins in bin order."""
    QX, QY = FX.shape[1], FY.shape[1]
    D = np.zeros((QX, QY, shifts.shape[1]))
    dtype = np.float32 if FX.shape[0] > FLOAT32_ROWS else np.float64
    rfft, irfft = _real_ffts(n_threads if n_threads > 0 else (os.cpu_count() or 1))
    for rows, t in zip(bins, shifts):
        s = rows.size
        A, B = FX[rows].T.astype(dtype), FY[rows].T.astype(dtype)  # (Q, s): each feature's row contiguous
        if s <= 4 * t.size:  # small bins: the shifts directly
            for b, shift in enumerate(t):
                D[:, :, b] += A @ np.roll(B, -int(shift), axis=1).T
        else:
            Ah, Bh = rfft(A), rfft(B)
            # corr[t] = sum_i A[:, i] B[:, (i + t) mod s]^T = IDFT(conj(Ah) Bh)[t]
            corr = irfft(np.conj(Ah)[:, None, :] * Bh[None, :, :], s)
            D += corr[:, :, t]
        if progress is not None:
            progress(s)
    out: np.ndarray = np.ascontiguousarray(D.transpose(2, 0, 1))
    return out


def _real_ffts(workers: int) -> tuple[Callable[..., np.ndarray], Callable[..., np.ndarray]]:
    """The real FFT and its inverse along the last axis: scipy's on ``workers`` threads when
    scipy is installed (it is not a dependency of the package), else numpy's."""
    try:
        import scipy.fft as sfft
    except ImportError:
        return (lambda a: np.fft.rfft(a, axis=-1)), (lambda a, n: np.fft.irfft(a, n=n, axis=-1))
    return (lambda a: sfft.rfft(a, axis=-1, workers=workers)), (
        lambda a, n: sfft.irfft(a, n=n, axis=-1, workers=workers)
    )


def pair_statistics(D: np.ndarray, grams_x: np.ndarray, grams_y: np.ndarray, n: int) -> np.ndarray:
    """HSIC_b of every pair of kernels (k of X, l of Y), ((K_X K_Y), B + 1), pairs in the
    order (k, l) with l fastest: tr(D_b G^Y_l D_b^T G^X_k) / n^2, the squared Frobenius
    norm of the centred cross-covariance of the two kernels' features."""
    KX, KY = grams_x.shape[0], grams_y.shape[0]
    T = np.empty((KX * KY, D.shape[0]))
    for ell, GY in enumerate(grams_y):
        H = np.einsum("bij,jk,blk->bil", D, GY, D, optimize=True)  # D G_l D^T, (B + 1, QX, QX)
        for k, GX in enumerate(grams_x):
            T[k * KY + ell] = np.einsum("bil,li->b", H, GX) / (n * n)
    return T


__all__ = ["BIN_ROWS", "FLOAT32_ROWS", "bins_and_shifts", "cross_products", "pair_statistics", "pairings"]
