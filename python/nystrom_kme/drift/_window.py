"""The sliding window's arithmetic for :class:`~nystrom_kme.drift.OnlineDriftDetector`:
the statistic of each new row's window from a ring of the previous W - 1 rows.

The window y_1..y_W ending at a row has the statistic

    T = 2 P / (W (W - 1)) - 2 F / W + ||mu_R||^2,   P = sum_{i < j} k(y_i, y_j),  F = sum_i mu_R(y_i).

The ring keeps the last W - 1 rows, their mu_R values and their forward sums
g_i = sum_{j > i, j in the ring} k(y_i, y_j). A new row needs its W - 1 kernel values with
the ring (and its m with the landmarks, computed by the caller): P moves by the new row's
sum minus the leaving row's complete forward sum, and every pair is summed once, when
its later row arrives. A block of new rows is cut into sub-blocks of B = max(W - 1, 128)
rows, each with one kernel matrix of B x (B + W - 1) values against the rows it needs:
B + W - 1 values per row (about 2W for W > 129; below, 128 rows per call of the core cost
less than the values they add: measured at W = 10, 50, 100, d = 32), never the
(2W - 1)^2 of a window pair's matrix. Each sub-block's first pair sum is the exact sum of
the forward sums so far, so no running difference outlives a sub-block (no drift of
round-off over long streams).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from .. import _core

#: Rows per sub-block at least (and W - 1): one kernel matrix and a few numpy passes each.
MIN_BLOCK = 128


@dataclass(frozen=True)
class Ring:
    """The last min(t, W - 1) rows of a stream, oldest first.

    rows (r, d) float64; f (r,) their mu_R values; g (r,) their forward sums within the
    ring, g_i = sum_{j > i} k(rows_i, rows_j)."""

    rows: np.ndarray
    f: np.ndarray
    g: np.ndarray

    @classmethod
    def empty(cls, n_features: int) -> Ring:
        return cls(np.empty((0, n_features)), np.empty(0), np.empty(0))


@functools.lru_cache(maxsize=16)
def _band(rows: int, before: int, window: int) -> np.ndarray:
    """The (rows, before + rows) mask of a sub-block's kernel matrix: row i (the
    sub-block's i-th row, column before + i) against the W - 1 columns before it."""
    here = np.arange(rows)[:, None] + before
    there = np.arange(before + rows)[None, :]
    mask = (there < here) & (there >= here - (window - 1))
    mask.flags.writeable = False
    return mask


def forward_sums(rows: np.ndarray, kernel: _core.Kernel) -> np.ndarray:
    """g_i = sum_{j > i} k(rows_i, rows_j) of a ring's rows (r,) (a saved ring's g)."""
    if rows.shape[0] < 2:
        return np.zeros(rows.shape[0])
    K = _core.kernel_matrix(rows, rows, kernel, 1)
    return np.asarray(np.triu(K, 1).sum(axis=1), dtype=np.float64)


def advance(
    ring: Ring, X: np.ndarray, fX: np.ndarray, window: int, norm2: float, kernel: _core.Kernel
) -> tuple[np.ndarray, Ring]:
    """The statistic after each row of X (r, d), oldest first, with fX (r,) their mu_R
    values, and the ring after them; NaN while fewer than ``window`` rows are known.
    ``ring`` is not changed (an update either completes or leaves the detector as it was).
    """
    W = window
    h0, r = ring.rows.shape[0], X.shape[0]
    seq = np.vstack([ring.rows, X]) if h0 else X
    g = np.concatenate([ring.g, np.zeros(r)])
    fseq = np.concatenate([ring.f, fX])
    F = np.concatenate([[0.0], np.cumsum(fseq)])
    stats = np.full(r, np.nan)
    block = max(W - 1, MIN_BLOCK)
    for p0 in range(h0, h0 + r, block):
        p1 = min(h0 + r, p0 + block)
        lo = max(0, p0 - (W - 1))  # the earliest row a window of this sub-block reaches
        # the pair sum of the window ending at p0 - 1 (its rows' forward sums so far)
        pairs = float(np.sum(g[max(0, p0 - W) : p0]))
        K = _core.kernel_matrix(seq[p0:p1], seq[lo:p1], kernel, 1)  # (b, p1 - lo)
        K *= _band(p1 - p0, p0 - lo, W)  # each new row's previous W - 1 rows
        g[lo:p1] += K.sum(axis=0)  # every row's forward sums now reach p1 - 1
        leaving = np.arange(p0, p1) - W  # the row each window drops (complete forward sums)
        dropped = np.where(leaving >= 0, g[np.maximum(leaving, 0)], 0.0)
        P = pairs + np.cumsum(K.sum(axis=1) - dropped)
        ends = np.arange(p0, p1)
        full = ends >= W - 1
        e = ends[full]
        stats[e - h0] = 2.0 * P[full] / (W * (W - 1)) - 2.0 * (F[e + 1] - F[e + 1 - W]) / W + norm2
    keep = min(W - 1, h0 + r)
    return stats, Ring(
        np.ascontiguousarray(seq[h0 + r - keep :]), fseq[h0 + r - keep :].copy(), g[h0 + r - keep :].copy()
    )


__all__ = ["MIN_BLOCK", "Ring", "advance", "forward_sums"]
