"""The aggregated two-sample test: many kernels at once, one permutation test.

MMD-FUSE (Biggs, Schrab and Gretton, NeurIPS 2023): for each kernel k of a collection
(by default Gaussian and Laplacian kernels at 10 bandwidths each, set from the pooled
sample) the unbiased MMD^2 of every random split is normalised by a
permutation-invariant scale, and the test statistic is their soft maximum, the
log-mean-exp over the kernels. One permutation test over the shared splits then has
exact level with no correction for the number of kernels. ``aggregation="mmdagg"``
instead combines the kernels' marginal permutation p-values by their minimum, whose
null distribution comes from the same splits (the level correction of MMDAgg, Schrab
et al., JMLR 2023, with uniform weights).

``method="nystrom"`` computes every kernel's statistics at Nyström cost: m landmarks
drawn uniformly without replacement from the pooled sample (label-blind), one
streaming pass K_k(L, Z) W for the label weights W of all splits and every kernel
(:meth:`nystrom_kme.sources.RowSource.split_sums_multi`), and per-kernel solves on
the landmarks: O(n m d + K n m B + K m^3) time, O((n + m) d + K m B) memory.
``method="exact"`` computes the same statistics from the full kernel matrices, O(K n^2 (d + B)):
the reference, for small n.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import _core
from ._validation import check_positive_int, check_random_state, common_dtype, n_threads_arg
from .aggregation import (
    AGGREGATIONS,
    fuse_scores,
    log_mean_exp,
    marginal_pvalues,
    permutation_pvalue,
    unbiased_mmd2,
)
from .bounds import default_n_landmarks
from .kernel_collection import KernelCollection
from .kernels import Kernel
from .permutation import SplitSpec, nystrom_quadratic_forms, split_seed
from .sources import RowSource, as_source_pair, concatenate

#: Rows of the pooled sample per block of the exact method (its sums are (K, rows, B + 1)).
EXACT_BLOCK_ROWS = 2048


@dataclass(frozen=True)
class AggregatedTestResult:
    """Outcome of an aggregated permutation two-sample test.

    Attributes
    ----------
    statistic : float
        The observed aggregate: the FUSE soft maximum (``aggregation="fuse"``), or
        minus the smallest marginal p-value (``"mmdagg"``): larger is more extreme.
    pvalue : float
        (1 + #{b : F_b >= F_0}) / (1 + B) for the aggregates F_b of the B random
        splits: reject H0 (same distribution) at level alpha when ``pvalue <= alpha``.
        Exact level, whatever the number of kernels.
    null_distribution : ndarray of shape (n_permutations,)
        The aggregates F_b of the random splits, b = 1..B.
    method : str
        "nystrom" or "exact".
    aggregation : str
        "fuse" or "mmdagg".
    kernels : KernelCollection
        The kernels tested, with their numeric bandwidths.
    kernel_statistics : ndarray of shape (n_kernels,)
        Each kernel's unbiased MMD^2 estimate between X and Y.
    kernel_scores : ndarray of shape (n_kernels,)
        Each kernel's normalised statistic (FUSE's lambda MMD^2 / sqrt(N_hat)), the
        terms of the soft maximum.
    kernel_pvalues : ndarray of shape (n_kernels,)
        Each kernel's marginal permutation p-value (1 + #{b : U_b >= U_0}) / (1 + B):
        what a test of that kernel alone would report. Not corrected for the
        collection: the test's p-value is ``pvalue``.
    n_landmarks : int or None
        m for the Nyström method, None for the exact one.
    n_permutations : int
        B.
    temperature : float
        The multiplier of FUSE's lambda = sqrt(n (n - 1)).

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> rng = np.random.default_rng(0)
    >>> X, Y = rng.normal(size=(400, 1)), rng.laplace(scale=2 ** -0.5, size=(400, 1))
    >>> res = nk.two_sample_test(X, Y, kernel=nk.KernelCollection(n_bandwidths=4),
    ...                          n_permutations=99, random_state=0)
    >>> len(res.kernels), res.kernel_pvalues.shape, res.aggregation
    (8, (8,), 'fuse')
    """

    statistic: float
    pvalue: float
    null_distribution: np.ndarray = field(repr=False)
    method: str
    aggregation: str
    kernels: KernelCollection
    kernel_statistics: np.ndarray = field(repr=False)
    kernel_scores: np.ndarray = field(repr=False)
    kernel_pvalues: np.ndarray = field(repr=False)
    n_landmarks: int | None
    n_permutations: int
    temperature: float = 1.0

    @property
    def dominant(self) -> int:
        """Index of the kernel that dominated: the largest normalised statistic (FUSE),
        or the smallest marginal p-value, ties broken by that statistic (MMDAgg)."""
        if self.aggregation == "mmdagg":
            return int(np.lexsort((-self.kernel_scores, self.kernel_pvalues))[0])
        return int(np.argmax(self.kernel_scores))

    @property
    def dominant_kernel(self) -> Kernel:
        """The kernel that dominated (see :attr:`dominant`)."""
        return self.kernels[self.dominant]

    def explain(self, alpha: float = 0.05) -> str:
        """The result in words: the decision at level ``alpha`` and which kernels saw a
        difference.

        Examples
        --------
        >>> import numpy as np, nystrom_kme as nk
        >>> rng = np.random.default_rng(1)
        >>> X, Y = rng.normal(size=(500, 1)), rng.normal(size=(500, 1)) + 0.5
        >>> res = nk.two_sample_test(X, Y, kernel=nk.KernelCollection(n_bandwidths=3),
        ...                          n_permutations=99, random_state=0)
        >>> print(res.explain().splitlines()[0])
        H0 (same distribution) rejected at level 0.05: p-value 0.01 <= 0.05.
        """
        if not 0 < alpha < 1:
            raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
        reject = self.pvalue <= alpha
        how = ("MMD-FUSE (soft maximum of the normalised MMDs)" if self.aggregation == "fuse"
               else "MMDAgg (minimum marginal p-value)")
        where = (f"Nystrom, m = {self.n_landmarks} landmarks" if self.method == "nystrom" else "exact")
        lines = [
            f"H0 (same distribution) {'rejected' if reject else 'not rejected'} at level {alpha:g}: "
            f"p-value {self.pvalue:.4g} {'<=' if reject else '>'} {alpha:g}.",
            f"Test: {how} over {len(self.kernels)} kernels ({self.kernels.summary()}), {where}, "
            f"{self.n_permutations} permutations.",
        ]
        order = np.lexsort((-self.kernel_scores, self.kernel_pvalues))
        top = [i for i in order[:3]]
        lead = "Strongest evidence" if reject else "Closest to a difference"
        parts = [f"{self.kernels[i]!r}: marginal p-value {self.kernel_pvalues[i]:.3g}, "
                 f"MMD^2 {self.kernel_statistics[i]:.3g}" for i in top]
        lines.append(f"{lead}: " + "; ".join(parts) + ".")
        lines.append(f"The dominant kernel is {self.dominant_kernel!r}; marginal p-values are not "
                     "corrected for the collection, the test's p-value is.")
        return "\n".join(lines)


def aggregated_test(X: Any, Y: Any, kernels: KernelCollection, *, aggregation: str = "fuse",
                    method: str = "nystrom", n_landmarks: int | None = None, n_permutations: int = 200,
                    temperature: float = 1.0, random_state: Any = None, progress: Any = None,
                    n_threads: int | None = None, chunk_rows: int | None = None) -> AggregatedTestResult:
    """The aggregated test of :func:`nystrom_kme.two_sample_test` (called with a kernel
    collection); arguments as documented there. Random draws, in order: the splits'
    seed (so :func:`nystrom_kme.random_splits` replays them), the rows that set the
    bandwidth grid, the landmarks."""
    if aggregation not in AGGREGATIONS:
        raise ValueError(f"aggregation must be one of {AGGREGATIONS}, got {aggregation!r}")
    if method not in ("nystrom", "exact"):
        raise ValueError(f"method must be 'nystrom' or 'exact', got {method!r}")
    try:
        temperature = float(temperature)
    except (TypeError, ValueError):
        raise ValueError(f"temperature must be a positive number, got {temperature!r}") from None
    if not (math.isfinite(temperature) and temperature > 0):
        raise ValueError(f"temperature must be a positive number, got {temperature!r}")
    sx, sy = as_source_pair(X, Y, chunk_rows=chunk_rows)
    n1, n2 = sx.count_rows(), sy.count_rows()
    if n1 < 2 or n2 < 2:
        raise ValueError("X and Y need at least 2 points each")
    B = check_positive_int(n_permutations, "n_permutations")
    nt = n_threads_arg(n_threads)
    rng = check_random_state(random_state)
    N = n1 + n2
    spec = SplitSpec(n1, n2, B, split_seed(rng))  # first draw: see random_splits
    Z = concatenate([sx, sy])
    collection = kernels.resolve(Z, rng)
    if method == "exact":
        if n_landmarks is not None:
            raise ValueError("n_landmarks applies to method='nystrom' only")
        T, cross, total, trace, frob, m = *_exact_forms(Z, collection, spec, nt, progress), None
    else:
        m = default_n_landmarks(N) if n_landmarks is None else check_positive_int(n_landmarks, "n_landmarks")
        if m > N:
            raise ValueError(f"n_landmarks={m} exceeds n1 + n2 = {N}")
        if m < 2:
            raise ValueError("the aggregated Nystrom test needs n_landmarks >= 2")
        L = np.ascontiguousarray(Z.take(np.sort(rng.choice(N, size=m, replace=False))))
        T, cross, total, frob = _nystrom_forms(Z, L, collection, spec, nt, progress, need_cross=n1 != n2)
        trace = None  # the Nystrom diagonal is estimated from the splits (see unbiased_mmd2)
    U = unbiased_mmd2(T, n1, n2, cross=cross, total=total, trace=trace)
    scores = fuse_scores(U, frob, n1, n2, temperature)
    pvals = marginal_pvalues(U)
    F = log_mean_exp(scores) if aggregation == "fuse" else -pvals.min(axis=0)
    return AggregatedTestResult(
        statistic=float(F[0]), pvalue=permutation_pvalue(F), null_distribution=F[1:].copy(),
        method=method, aggregation=aggregation, kernels=collection, kernel_statistics=U[:, 0].copy(),
        kernel_scores=scores[:, 0].copy(), kernel_pvalues=pvals[:, 0].copy(), n_landmarks=m,
        n_permutations=B, temperature=temperature)


def _nystrom_forms(Z: RowSource, L: np.ndarray, collection: KernelCollection, spec: SplitSpec, nt: int,
                   progress: Any, *, need_cross: bool) -> tuple[np.ndarray, Any, Any, np.ndarray]:
    """(T, cross, total, Frobenius norms) of the Nystrom approximations of every kernel:
    one streaming pass for the split sums of all kernels, per-kernel solves on L."""
    N = spec.n_rows
    m = L.shape[0]
    S = Z.split_sums_multi(L, collection.kernels, spec, n_threads=nt, progress=progress)
    K = len(collection)
    T = np.empty((K, spec.n_columns))
    cross = np.empty((K, spec.n_columns)) if need_cross else None
    total = np.empty(K) if need_cross else None
    frob = np.empty(K)
    for j, kernel in enumerate(collection):
        t = None
        if need_cross:
            acc, _ = Z.kernel_sums(L, kernel, n_threads=nt)
            t = acc.value()
        forms = nystrom_quadratic_forms(L, S[j], kernel, nt, t=t)
        T[j] = forms[0]
        if need_cross:
            cross[j], total[j] = forms[1], forms[2]
        # ||K_0||_F^2 = sum_{i != j} k(z_i, z_j)^2 over the pooled sample, estimated by the
        # mean over distinct landmark pairs (uniform without replacement: unbiased).
        Km = _core.kernel_matrix(L, L, kernel.to_core(), nt)
        off = (float(np.sum(Km * Km)) - float(np.sum(np.diag(Km) ** 2))) / (m * (m - 1))
        frob[j] = math.sqrt(max(off, 0.0) * N * (N - 1))
    return T, cross, total, frob


def _exact_forms(Z: RowSource, collection: KernelCollection, spec: SplitSpec, nt: int,
                 progress: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(T, cross, total, trace, Frobenius norms) of every kernel's full matrix on the
    pooled sample, one block of rows at a time: O(K n^2 (d + B)) time."""
    K = len(collection)
    T = np.zeros((K, spec.n_columns))
    cross = np.zeros((K, spec.n_columns))
    total_parts: list[list[float]] = [[] for _ in range(K)]
    square_parts: list[list[float]] = [[] for _ in range(K)]
    labels = spec.new()
    for _, chunk in Z.chunks():
        for start in range(0, chunk.shape[0], EXACT_BLOCK_ROWS):
            block = np.ascontiguousarray(chunk[start:start + EXACT_BLOCK_ROWS])
            W = labels.next_weights(block.shape[0])  # the labels of these rows, (rows, B + 1)
            S = Z.split_sums_multi(block, collection.kernels, spec, n_threads=nt)
            for j, kernel in enumerate(collection):
                T[j] += np.einsum("ib,ib->b", W, S[j])
                acc, _ = Z.kernel_sums(block, kernel, n_threads=nt)
                t = acc.value()                       # K(block, Z) 1
                cross[j] += np.einsum("ib,i->b", W, t)
                total_parts[j].append(math.fsum(t))
                square_parts[j].append(_square_sum(block, Z, kernel, nt))
            if progress is not None:
                progress(block.shape[0])
    N = spec.n_rows
    total = np.array([math.fsum(p) for p in total_parts])
    # radial kernels: k(z, z) = 1, so the diagonal adds N to the trace and to the squares
    trace = np.full(K, float(N))
    frob = np.sqrt(np.maximum(np.array([math.fsum(p) for p in square_parts]) - N, 0.0))
    return T, cross, total, trace, frob


def _square_sum(block: np.ndarray, Z: RowSource, kernel: Kernel, nt: int) -> float:
    """sum_{i in block, j} k(b_i, z_j)^2 from dense kernel blocks of at most 512 rows."""
    parts = []
    for _, chunk in Z.chunks():
        for start in range(0, block.shape[0], 512):
            a, b = common_dtype(np.ascontiguousarray(block[start:start + 512]), chunk)
            Kb = _core.kernel_matrix(a, b, kernel.to_core(), nt)
            parts.append(float(np.sum(Kb * Kb)))  # pairwise summation: no BLAS, no threads
    return math.fsum(parts)


__all__ = ["AggregatedTestResult", "aggregated_test"]
