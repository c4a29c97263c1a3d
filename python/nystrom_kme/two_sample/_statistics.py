"""Every kernel's statistic for every split: the permuted MMD^2 matrices of a test.

For kernels k_1..k_K and the B + 1 splits of :class:`~nystrom_kme.permutation.SplitSpec`
(column 0 the observed one), :class:`PermutedStatistics` holds the biased MMD^2 T (the
quadratic forms w_b^T G_k w_b of the label weights) and the unbiased U of each kernel and
split, computed one of three ways:

* ``nystrom_single``: one kernel, its label weights streamed row by row with the sums
  K(L, Z) W (:meth:`RowSource.split_sums`), T = s^T K_m^+ s (the test of Chatalic et al.
  2025);
* ``nystrom_collection``: several kernels: with bins of rows (``Binning``) every kernel's
  bin sums E = K(L, Z) A in one pass and the permuted sums E W of the bin-level splits;
  beyond ``max_bins`` single rows, the label weights streamed for all kernels at once;
  then per-kernel quadratic forms of the Nyström features;
* ``exact``: every pooled row's exact kernel values, block of rows by block of rows,
  O(N^2 (d + B)) time, O(N B) memory; single rows are permuted (no bins).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from .. import _core
from .._landmark_plan import distinct_rows
from ..kernels import Kernel
from ..permutation import SplitSpec, nystrom_quadratic_forms
from ..sources import RowSource
from ..sources.base import Progress
from .rules import unbiased_mmd2

#: Above this many pooled rows a collection's permutations move bins of rows (make_binning).
DEFAULT_MAX_BINS = 2048
#: Bins hold fewer rows when a sample would otherwise have fewer bins than this.
MIN_BINS_PER_SAMPLE = 32
#: Memory for one dense block of exact kernel values.
EXACT_BLOCK_BYTES = 16 * 1024 * 1024
#: Memory for the bin sums of the kernels computed in one pass (larger collections take
#: several passes, reusing it). 192 MiB holds three kernels' sums at m = 4096 landmarks and
#: 2048 bins: the default test's three kernels of one distance (on nested landmark sets)
#: share one pass, 1.3-1.5x faster than a pass each (bench/RESULTS.md, issue 46).
BIN_SUMS_BYTES = 192 * 1024 * 1024
#: Pooled rows of the uniform subsample that estimates MMD-FUSE's normaliser ||K_0||_F.
FROBENIUS_SUBSET = 500


@dataclass(frozen=True)
class Binning:
    """How the permutations group the pooled rows: each sample's rows split at random into
    bins of ``size`` rows (size 1: every row its own bin, no draw), ``n1`` + ``n2`` bins."""

    size: int
    n1: int
    n2: int
    bins: np.ndarray | None  # (n1 + n2 rows,) int64 bin of each pooled row, -1 dropped; None: row i is bin i

    @property
    def n_bins(self) -> int:
        return self.n1 + self.n2

    def row_bins(self, n_rows: int) -> np.ndarray:
        return np.arange(n_rows, dtype=np.int64) if self.bins is None else self.bins


def make_binning(n1: int, n2: int, max_bins: int | None, rng: np.random.Generator) -> Binning | None:
    """Bins of s = ceil((n1 + n2) / max_bins) rows, at least MIN_BINS_PER_SAMPLE per sample;
    None when single rows are needed but there are more than max_bins of them (the test
    then streams the label weights of single rows instead)."""
    N = n1 + n2
    if max_bins is None or N <= max_bins:
        return Binning(1, n1, n2, None)
    size = min(-(-N // max_bins), min(n1, n2) // MIN_BINS_PER_SAMPLE)
    if size <= 1:
        return None
    bins = np.full(N, -1, dtype=np.int64)
    g1, g2 = n1 // size, n2 // size
    # row perm[i] of a sample goes to bin i // size; the last n mod size rows of perm are dropped
    bins[rng.permutation(n1)[: g1 * size]] = np.arange(g1 * size) // size
    bins[n1 + rng.permutation(n2)[: g2 * size]] = g1 + np.arange(g2 * size) // size
    return Binning(size, g1, g2, bins)


@dataclass(frozen=True)
class PermutedStatistics:
    """Every kernel's statistics for every split of a permutation test, what
    :func:`~nystrom_kme.two_sample._decision.decide` reads.

    Attributes
    ----------
    T : ndarray (K, B + 1)
        Each kernel's biased statistic (the squared distance of the split's two sides),
        column 0 the observed split.
    U : ndarray (K, B + 1) or None
        The unbiased statistics (None: the centred T, for a statistic whose unbiased
        form differs from T by a term every split shares).
    n_rows : tuple of int
        The rows on each side of a split (the units permuted times ``bin_size``).
    bin_size : int
        Rows per unit.
    witness_weights : ndarray (K, m), list of K arrays (m_j,), or None
        Nyström: the landmark weights alpha of each kernel's witness k(., L) alpha of the
        observed split (its squared norm is T[:, 0]; each kernel's own landmarks: a list),
        the effect's.
    witness : ndarray (K, 2) or None
        Exact: Var_X f, Var_Y f of the witness, the effect's.
    n_pooled : int or None
        The pooled rows MMD-FUSE's normaliser ||K_0||_F is taken over (None: the rows
        of ``n_rows``; the test: every pooled row, binned or not).
    """

    T: np.ndarray
    U: np.ndarray | None
    n_rows: tuple[int, int]
    bin_size: int = 1
    witness_weights: np.ndarray | list[np.ndarray] | None = None
    witness: np.ndarray | None = None
    n_pooled: int | None = None

    @property
    def pooled_rows(self) -> int:
        return sum(self.n_rows) if self.n_pooled is None else self.n_pooled


def _unbiased(
    T: np.ndarray, n1: int, n2: int, cross: np.ndarray | None, total: np.ndarray | None, trace: np.ndarray | None
) -> np.ndarray:
    return unbiased_mmd2(T, n1, n2, cross=cross, total=total, trace=trace)


def nystrom_single(
    Z: RowSource, L: np.ndarray, kernel: Kernel, spec: SplitSpec, nt: int, progress: Progress | None
) -> PermutedStatistics:
    """One kernel: S = K(L, Z) W streamed (the labels drawn row by row, nothing of size
    m x n stored), T_b = s_b^T K_m^{-1} s_b on the pivots of K_m's pivoted Cholesky (all
    of them at full numerical rank; :func:`~nystrom_kme.permutation.nystrom_quadratic_forms`,
    6x faster than the minimum-norm solve at m = 1000 and 201 columns, and float32 sums
    cut at their rounding), and U (one more pass for K(L, Z) 1 when the samples differ in
    size)."""
    S = Z.split_sums(L, kernel, spec, n_threads=nt, progress=progress)
    t = Z.kernel_sums(L, kernel, n_threads=nt)[0].value() if spec.n1 != spec.n2 else None
    T, c, tot, alpha = nystrom_quadratic_forms(L, S, kernel, nt, t=t)
    cross = total = None
    if t is not None:
        cross, total = c[None] if c is not None else None, np.array([tot])
    elif spec.n1 >= 2:
        total = np.zeros(1)  # cancels for equal sizes
    T = T[None]
    U = _unbiased(T, spec.n1, spec.n2, cross, total, None) if min(spec.n1, spec.n2) >= 2 else np.zeros_like(T)
    return PermutedStatistics(T, U, (spec.n1, spec.n2), witness_weights=alpha[None].copy())


def _kernel_groups(kernels: list[Kernel], per_kernel_bytes: int) -> list[list[int]]:
    """The indices of the kernels in groups of one metric (the core's passes share one
    distance: the l1 kernels take a pass of their own) whose outputs fit BIN_SUMS_BYTES
    together; each metric's kernels in their order, the metrics in order of first use."""
    size = max(1, BIN_SUMS_BYTES // max(per_kernel_bytes, 1))
    groups: list[list[int]] = []
    for metric in dict.fromkeys(k.metric for k in kernels):
        same = [j for j, k in enumerate(kernels) if k.metric == metric]
        groups += [same[i : i + size] for i in range(0, len(same), size)]
    return groups


def nystrom_collection(
    Z: RowSource,
    L: np.ndarray,
    kernels: list[Kernel],
    spec: SplitSpec,
    binning: Binning | None,
    nt: int,
    progress: Progress | None,
    rows: list[int] | None = None,
) -> PermutedStatistics:
    """Several kernels, Nyström features on the landmarks L: bin sums then the bin-level
    splits (``binning``), or the label weights of single rows streamed (None). ``rows``
    (bins only): kernel j on the first rows[j] rows of L, nested landmark sets in one pass
    per metric. ``witness_weights``: a list of each kernel's (rows[j] or m,)."""
    N = Z.count_rows()
    K = len(kernels)
    T = np.empty((K, spec.n_columns))
    cross = np.empty((K, spec.n_columns))
    total = np.empty(K)
    witness: list[np.ndarray] = [np.empty(0)] * K
    if binning is None:
        if rows is not None:
            raise ValueError("kernels on nested landmark sets need bins of rows")
        # one streamed pass per metric: every pass draws the same labels (spec.new())
        S_all: list[np.ndarray] = [np.empty(0)] * K
        for group in _kernel_groups(kernels, 0):
            for j, S in zip(group, Z.split_sums_multi(L, [kernels[j] for j in group], spec, n_threads=nt)):
                S_all[j] = S
        for j, kernel in enumerate(kernels):
            acc, _ = Z.kernel_sums(L, kernel, n_threads=nt)
            T[j], cross[j], total[j], witness[j] = _forms(L, S_all[j], kernel, nt, acc.value())
            if progress is not None:
                progress(1)
        U = _unbiased(T, spec.n1, spec.n2, cross, total, None)
        return PermutedStatistics(T, U, (spec.n1, spec.n2), witness_weights=witness)
    m, G = L.shape[0], binning.n_bins
    sizes = [m] * K if rows is None else list(rows)
    W = np.ascontiguousarray(spec.new().next_weights(G) / binning.size)  # per-row weights +-1/n
    bins = binning.row_bins(N)
    for group in _kernel_groups(kernels, 8 * m * G):
        E = Z.bin_sums(L, [kernels[j] for j in group], bins, G, n_threads=nt, rows=[sizes[j] for j in group])
        for Ej, j in zip(E, group):
            sums = Ej[: sizes[j]]
            S = _core.matrix_product(sums, W, nt)
            # t: K(L, Z) 1 over kept rows
            T[j], cross[j], total[j], witness[j] = _forms(L[: sizes[j]], S, kernels[j], nt, np.sum(sums, axis=1))
            if progress is not None:
                progress(1)
        del E, Ej, sums  # freed before the next metric's sums are allocated
    kept = (binning.n1 * binning.size, binning.n2 * binning.size)
    U = _unbiased(T, kept[0], kept[1], cross, total, None)
    return PermutedStatistics(T, U, kept, binning.size, witness)


def _forms(
    L: np.ndarray, S: np.ndarray, kernel: Kernel, nt: int, t: np.ndarray
) -> tuple[np.ndarray, np.ndarray, float, np.ndarray]:
    T, c, tot, alpha = nystrom_quadratic_forms(L, S, kernel, nt, t=t)
    assert c is not None and tot is not None  # t was given
    return T, c, tot, alpha


def exact(
    Z: RowSource, kernels: list[Kernel], spec: SplitSpec, nt: int, progress: Progress | None
) -> PermutedStatistics:
    """Every kernel's exact statistics over single rows: the pooled rows in blocks, each
    block's dense kernel values against all rows times the label weights W (N, B + 1)."""
    N = Z.count_rows()
    pooled = Z.to_array()
    Zs = np.ascontiguousarray(pooled if pooled is not None else Z.take(np.arange(N)))
    W = spec.new().next_weights(N)
    rows = max(1, EXACT_BLOCK_BYTES // (8 * N))
    K = len(kernels)
    T = np.zeros((K, spec.n_columns))
    cross = np.zeros((K, spec.n_columns))
    total = np.zeros(K)
    witness = np.empty((K, 2))
    for j, kernel in enumerate(kernels):
        core = kernel.to_core()
        parts_t, parts_c, parts_tot, f = [], [], [], np.empty(N)
        for start in range(0, N, rows):
            block = _core.kernel_matrix(Zs[start : start + rows], Zs, core, nt)  # (rows, N)
            Wb = W[start : start + block.shape[0]]
            KW = _core.matrix_product(block, W, nt)  # fixed order, thread-count independent
            parts_t.append(np.einsum("ib,ib->b", Wb, KW))
            f[start : start + block.shape[0]] = KW[:, 0]  # the witness mean k(z, X) - mean k(z, Y)
            t = np.sum(block, axis=1)
            parts_c.append(Wb.T @ t)
            parts_tot.append(float(np.sum(t)))
        T[j] = np.sum(parts_t, axis=0)
        cross[j] = np.sum(parts_c, axis=0)
        total[j] = math.fsum(parts_tot)
        witness[j] = np.var(f[: spec.n1], ddof=1), np.var(f[spec.n1 :], ddof=1)
        if progress is not None:
            progress(1)
    trace = np.full(K, float(N))  # radial kernels: k(z, z) = 1
    U = _unbiased(T, spec.n1, spec.n2, cross, total, trace)
    return PermutedStatistics(T, U, (spec.n1, spec.n2), witness=witness)


def permuted(
    Z: RowSource,
    kernels: list[Kernel],
    landmarks: np.ndarray | None,
    spec: SplitSpec,
    binning: Binning | None,
    several: bool,
    nt: int,
    progress: Progress | None,
    counts: tuple[int, ...] | None = None,
) -> PermutedStatistics:
    """Every kernel's statistics for every split of a plan: exact (no landmarks), one
    kernel's label weights streamed, or a collection's (by bins, or streamed single rows;
    ``counts``: kernel j on the distinct rows among the first counts[j] landmarks);
    MMD-FUSE's normaliser over every pooled row."""
    if landmarks is None:
        stats = exact(Z, kernels, spec, nt, progress)
    elif not several:
        stats = nystrom_single(Z, landmarks, kernels[0], spec, nt, progress)
    elif counts is None:
        stats = nystrom_collection(Z, landmarks, kernels, spec, binning, nt, progress)
    else:
        stats = _by_landmarks(Z, landmarks, counts, kernels, spec, binning, nt, progress)
    return replace(stats, n_pooled=Z.count_rows())


def _by_landmarks(
    Z: RowSource,
    landmarks: np.ndarray,
    counts: tuple[int, ...],
    kernels: list[Kernel],
    spec: SplitSpec,
    binning: Binning | None,
    nt: int,
    progress: Progress | None,
) -> PermutedStatistics:
    """nystrom_collection on the distinct rows among the first counts[j] landmarks for
    kernel j: with bins, one pass per metric over the largest set (the distinct rows of a
    prefix are a prefix of the distinct rows: distinct_rows keeps first rows in order);
    single rows, one collection per landmark count. The same splits and bins for all."""
    if binning is not None:
        L = distinct_rows(np.ascontiguousarray(landmarks[: max(counts)]))
        rows = [distinct_rows(np.ascontiguousarray(landmarks[:c])).shape[0] for c in counts]
        return nystrom_collection(Z, L, kernels, spec, binning, nt, progress, rows=rows)
    T = np.empty((len(kernels), spec.n_columns))
    U = np.empty_like(T)
    witness: list[np.ndarray] = [np.empty(0)] * len(kernels)
    part = None
    for count in sorted(set(counts)):
        idx = [j for j, c in enumerate(counts) if c == count]
        L = distinct_rows(np.ascontiguousarray(landmarks[:count]))
        part = nystrom_collection(Z, L, [kernels[j] for j in idx], spec, binning, nt, progress)
        assert part.U is not None and part.witness_weights is not None
        T[idx], U[idx] = part.T, part.U
        for row, j in enumerate(idx):
            witness[j] = part.witness_weights[row]
    assert part is not None
    return PermutedStatistics(T, U, part.n_rows, part.bin_size, witness)


def mean_squares(rows: np.ndarray, kernels: list[Kernel], nt: int) -> np.ndarray:
    """The mean of k(x, y)^2 over the distinct pairs of ``rows``, per kernel (K,)."""
    r = rows.shape[0]
    out = np.empty(len(kernels))
    for j, kernel in enumerate(kernels):
        Kr = _core.kernel_matrix(rows, rows, kernel.to_core(), nt)
        out[j] = (float(np.sum(Kr * Kr)) - float(np.sum(np.diag(Kr) ** 2))) / (r * (r - 1))
    return out


def subset_mean_squares(Z: RowSource, kernels: list[Kernel], rng: np.random.Generator, nt: int) -> np.ndarray:
    """The mean of k^2 over pairs of the pooled rows (MMD-FUSE's normaliser ||K_0||_F per
    pair), estimated from a uniform subsample of FROBENIUS_SUBSET rows (label-blind;
    :func:`mean_squares`). (Landmarks chosen for the narrow kernels are not a uniform
    sample: their mean underestimated it by a quarter.)"""
    N = Z.count_rows()
    rows = np.sort(rng.choice(N, size=FROBENIUS_SUBSET, replace=False)) if N > FROBENIUS_SUBSET else np.arange(N)
    return mean_squares(np.ascontiguousarray(Z.take(rows)), kernels, nt)


__all__ = [
    "DEFAULT_MAX_BINS",
    "Binning",
    "PermutedStatistics",
    "exact",
    "mean_squares",
    "make_binning",
    "nystrom_collection",
    "nystrom_single",
    "permuted",
    "subset_mean_squares",
]
