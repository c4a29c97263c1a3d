"""The per-batch statistics of :class:`~nystrom_kme.DriftDetector`: how a batch and the
held-out reference rows become every kernel's statistic for every split (the one thing a
drift detector computes its own way; everything after it, from the round-off floor and
MMD-FUSE's normalisers to the decision, the rules and the intervals, is the two-sample
engine's, :mod:`nystrom_kme.two_sample.engine`).

``STATISTICS`` is the extension point (EXTENDING.md, "Drift statistics"): a statistic is
a class built from the :class:`~nystrom_kme.drift._reference.Reference` that returns, for
a batch X (b, d) and a Generator, a :class:`Permuted`: the statistics V (K, B + 1) of the
splits of the units of X and H (column 0: X itself), the units per side and their rows,
and what its distance needs. Under H0 the units of X and H are exchangeable given R, so
any statistic that treats the B + 1 splits alike keeps the test's level exact. Only the
batch detector reads the table: the online detector's threshold is simulated for its own
window statistic (:mod:`nystrom_kme.drift._thresholds`), not set by permutations.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _core
from .._solve import FLOAT32_RCOND
from .._validation import SPLIT_SEED_BOUND, draw_seed
from ..permutation import SplitSpec
from ..two_sample.engine import PermutedStatistics
from ._reference import Reference

#: Splits whose batch units are summed per block of gathered rows (SPLIT_BLOCK x b x m
#: values at a time).
SPLIT_BLOCK = 16
#: Held-out rows permuted one by one with small batches (at most).
ROW_POOL = 10_000
#: Larger batches permute bins of this many rows, against every held-out row in bins.
BIN = 10
#: The pool of held-out rows holds at least this many times the batch's rows, else the
#: detector warns. The p-values are exact over the draw of the held-out rows; for one
#: detector (its pool fixed) the false-alarm rate deviates from alpha by about
#: 0.054 (b / pool)^(1/2) in standard deviation (measured over detectors, bench/drift.py
#: --detectors; bench/RESULTS.md, issue 35): at POOL_RATIO, 0.01.
POOL_RATIO = 30
#: The pools' kernel values are kept in float32 (a detector's memory: (ROW_POOL +
#: n_holdout / BIN) m K 4 bytes); the sums over them are float64. The features stop K_m's
#: pivots at float32's rounding (FLOAT32_RCOND): below it they held the pools' rounding
#: only, and moved the statistics of 2- and 3-dimensional data by 33-85% from those of
#: float64 pools (within 1.2e-3 with the cut; bench/RESULTS.md, issue 46).
POOL_DTYPE = np.float32


@dataclass(frozen=True)
class Permuted:
    """A batch's permuted statistics.

    Attributes
    ----------
    V : ndarray (K, B + 1)
        Each kernel's statistic for every split (column 0: the batch itself).
    units : tuple of int
        The units of the batch and of the pool.
    size : int
        Rows per unit.
    batch_features : list of ndarray
        Per kernel, the batch's Nyström features (b, r) (the distance's input).
    """

    V: np.ndarray
    units: tuple[int, int]
    size: int
    batch_features: list[np.ndarray]

    @property
    def statistics(self) -> PermutedStatistics:
        """What the engine's ``decide`` reads: V as the biased statistics (the unbiased
        ones: V centred over the splits) of the rows in the units on each side."""
        return PermutedStatistics(self.V, None, (self.units[0] * self.size, self.units[1] * self.size), self.size)


class NystromMMD:
    """||mean phi(S) - mu_R||^2 per kernel, phi the Nyström features of the landmarks, for
    each split's batch units S: single rows (against the first ROW_POOL held-out rows)
    while they hold every held-out row or POOL_RATIO times the batch's, else bins of BIN
    rows (against every held-out row in bins); each split's batch units gathered,
    O(B b m) whatever |H|."""

    name = "nystrom-mmd"

    def __init__(self, ref: Reference, n_threads: int) -> None:
        m = ref.landmarks.shape[0]
        self.ref = ref
        self.features: list[np.ndarray] = []  # P_k (r, m): phi(x) = P_k k(L, x)
        self.means: list[np.ndarray] = []  # mu_R in features (r,)
        self.row_pool: list[np.ndarray] = []  # K(H[:ROW_POOL], L) (rows, m)
        self.bin_pool: list[np.ndarray] = []  # K(L, .) summed over bins of BIN held-out rows (bins, m)
        self._covariance: dict[int, np.ndarray] = {}
        H = ref.holdout
        rows, bins = min(ROW_POOL, H.shape[0]), H.shape[0] // BIN
        for j, k in enumerate(ref.kernels):
            P, _, _ = _core.nystrom_feature_sums(ref.landmarks, np.eye(m), k.to_core(), FLOAT32_RCOND, n_threads)
            self.features.append(np.ascontiguousarray(P))
            self.means.append(P @ (ref.sums[j] / ref.n_rest))
            self.row_pool.append(
                _core.kernel_matrix(H[:rows], ref.landmarks, k.to_core(), n_threads).astype(POOL_DTYPE)
            )
            E = np.empty((bins, m), dtype=POOL_DTYPE)
            step = max(1, (1 << 22) // (BIN * m)) * BIN  # rows per block: ~32 MiB of kernel values
            for start in range(0, bins * BIN, step):
                block = _core.kernel_matrix(
                    H[start : min(bins * BIN, start + step)], ref.landmarks, k.to_core(), n_threads
                )
                E[start // BIN : start // BIN + block.shape[0] // BIN] = block.reshape(-1, BIN, m).sum(axis=1)
            self.bin_pool.append(E)

    def largest_exact_batch(self) -> int:
        """The largest batch whose pool holds POOL_RATIO times its rows (a batch of up to
        ``ROW_POOL / POOL_RATIO`` rows is permuted by rows, a larger one by bins)."""
        by_rows = self.row_pool[0].shape[0] // POOL_RATIO
        return int(max(by_rows, self.bin_pool[0].shape[0] * BIN // POOL_RATIO))

    def permuted(self, X: np.ndarray, n_permutations: int, rng: np.random.Generator, n_threads: int) -> Permuted:
        b = X.shape[0]
        seed = draw_seed(rng, SPLIT_SEED_BOUND)
        rows = self.row_pool[0].shape[0]
        # rows while the row pool holds every held-out row (bins would only be coarser) or
        # POOL_RATIO times the batch; else bins of BIN rows, which take every held-out row
        by_rows = rows == self.ref.holdout.shape[0] or b * POOL_RATIO <= rows or b < 2 * BIN
        by_rows = by_rows or self.bin_pool[0].shape[0] < 2
        pool = self.row_pool if by_rows else self.bin_pool
        size = 1 if by_rows else BIN
        units_x = b if by_rows else b // BIN
        units_h = self.row_pool[0].shape[0] if by_rows else self.bin_pool[0].shape[0]
        # the batch's rows in random bins of BIN (b mod BIN dropped at random)
        keep = np.arange(b) if by_rows else rng.permutation(b)[: units_x * BIN]
        chosen = SplitSpec(units_x, units_h, n_permutations, seed).new().next_weights(units_x + units_h) > 0
        chosen_t = np.ascontiguousarray(chosen.T)  # (B + 1, units): split s's batch units
        # each split's batch units by index: gathering them costs O(B b m), whatever |H|
        picks = np.nonzero(chosen_t)[1].reshape(chosen_t.shape[0], units_x) if _gather(units_x, units_h) else None
        V = np.empty((len(self.ref.kernels), n_permutations + 1))
        batch_features = []
        for j, k in enumerate(self.ref.kernels):
            KX = _core.kernel_matrix(X, self.ref.landmarks, k.to_core(), n_threads)  # (b, m)
            batch_features.append(KX @ self.features[j].T)
            mine = KX if by_rows else KX[keep].reshape(units_x, BIN, -1).sum(axis=1)
            # rounded as the pool's units are: the observed split must be computed as every
            # permuted one, or the pool's rounding (amplified by an ill-conditioned kernel's
            # features) makes every split with held-out units look farther than the batch
            mine = mine.astype(POOL_DTYPE).astype(np.float64)
            if picks is not None:
                C = _split_sums(mine, pool[j], picks) / (units_x * size)  # (B + 1, m): the chosen rows' mean
            else:  # large batches: one product over every unit
                units = np.vstack([mine, pool[j].astype(np.float64)])
                C = _core.matrix_product(chosen_t.astype(np.float64), units, n_threads) / (units_x * size)
            D = C @ self.features[j].T - self.means[j]
            V[j] = np.einsum("sr,sr->s", D, D)
        return Permuted(V, (units_x, units_h), size, batch_features)

    def pool_covariance(self, j: int) -> np.ndarray:
        """The covariance (r, r) of kernel j's features over the held-out rows of the row
        pool: the reference distribution's (the distance's variance terms), computed once."""
        if j not in self._covariance:
            Phi = self.row_pool[j].astype(np.float64) @ self.features[j].T
            centred = Phi - Phi.mean(axis=0)
            self._covariance[j] = centred.T @ centred / (Phi.shape[0] - 1)
        return self._covariance[j]


def _gather(units_x: int, units_h: int) -> bool:
    """Whether summing each split's gathered batch units (memory-bound, O(B b m)) beats one
    product over all units (O(B (b + |H|) m) at matrix-product speed): when the held-out
    units outnumber the batch's several times, i.e. always at the default pool sizes."""
    return 4 * units_x <= units_x + units_h


def _split_sums(mine: np.ndarray, pool: np.ndarray, picks: np.ndarray) -> np.ndarray:
    """(B + 1, m): for each split, the sum of the units it picks (``picks``: (B + 1, k)
    indices into the batch's units ``mine`` followed by the pool's), SPLIT_BLOCK splits at a
    time, in float64 (the pool is gathered, never copied whole)."""
    out = np.empty((picks.shape[0], mine.shape[1]))
    ux = mine.shape[0]
    for s in range(0, picks.shape[0], SPLIT_BLOCK):
        P = picks[s : s + SPLIT_BLOCK]
        ours = P < ux
        total = np.where(ours[..., None], mine[np.where(ours, P, 0)], 0.0)
        total += np.where(ours[..., None], 0.0, pool[np.where(ours, 0, P - ux)])
        out[s : s + SPLIT_BLOCK] = total.sum(axis=1)
    return out


#: The drift statistics by name (the extension point: EXTENDING.md, "Drift statistics").
STATISTICS: dict[str, type[NystromMMD]] = {NystromMMD.name: NystromMMD}


__all__ = ["BIN", "POOL_DTYPE", "POOL_RATIO", "ROW_POOL", "SPLIT_BLOCK", "STATISTICS", "NystromMMD", "Permuted"]
