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
import numbers
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from . import _core
from ._progress import progress_bar
from ._validation import (
    SPLIT_SEED_BOUND,
    RandomStateLike,
    check_positive_int,
    check_random_state,
    draw_seed,
    n_threads_arg,
)
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
from .permutation import SplitSpec, nystrom_quadratic_forms
from .persistence import JsonResult, persistable
from .sampling import BlockRPCholeskySampling, UniformSampling
from .sources import RowSource, SourceLike, as_source_pair, concatenate
from .sources.base import Progress

if TYPE_CHECKING:  # typing.TypeGuard is Python 3.10+; annotations only
    from typing import TypeGuard


#: Above this many pooled rows the permutations move bins of rows (see make_binning).
DEFAULT_MAX_BINS = 2048
#: Bins hold fewer rows when a sample would otherwise have fewer bins than this.
MIN_BINS_PER_SAMPLE = 32
#: Memory for one dense block of kernel values of the exact method.
EXACT_BLOCK_BYTES = 16 * 1024 * 1024
#: Memory for the bin sums of the kernels computed in one pass (larger collections take
#: several passes, reusing it).
BIN_SUMS_BYTES = 64 * 1024 * 1024


@persistable
@dataclass(frozen=True)
class AggregatedTestResult(JsonResult):
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
    bin_size : int
        Rows per bin that the permutations move (1: single rows; see ``max_bins``).
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
    bin_size: int = 1
    temperature: float = 1.0

    def __post_init__(self) -> None:
        """Every field checked against what the test returns (a result read from a file is
        built here too); the arrays become float64."""

        def integer(value: object) -> TypeGuard[int]:
            return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))

        def finite_number(value: object) -> bool:
            return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)) and math.isfinite(value)

        if self.method not in ("nystrom", "exact"):
            raise ValueError(f"method must be 'nystrom' or 'exact', got {self.method!r}")
        if self.aggregation not in AGGREGATIONS:
            raise ValueError(f"aggregation must be one of {AGGREGATIONS}, got {self.aggregation!r}")
        if not isinstance(self.kernels, KernelCollection) or not self.kernels.is_resolved:
            raise ValueError(f"kernels must be a resolved KernelCollection, got {self.kernels!r}")
        for name in ("n_permutations", "bin_size"):
            if not integer(getattr(self, name)) or getattr(self, name) < 1:
                raise ValueError(f"{name} must be a positive integer, got {getattr(self, name)!r}")
        if self.method == "exact" and self.n_landmarks is not None:
            raise ValueError(f"n_landmarks must be None for method='exact', got {self.n_landmarks!r}")
        if self.method == "nystrom" and not (integer(self.n_landmarks) and self.n_landmarks >= 2):
            raise ValueError(f"n_landmarks must be an integer >= 2 for method='nystrom', got {self.n_landmarks!r}")
        if not (finite_number(self.temperature) and self.temperature > 0):
            raise ValueError(f"temperature must be a positive number, got {self.temperature!r}")
        if not finite_number(self.statistic):
            raise ValueError(f"statistic must be a finite number, got {self.statistic!r}")
        B, K = self.n_permutations, len(self.kernels)
        for name, size in (
            ("null_distribution", B),
            ("kernel_statistics", K),
            ("kernel_scores", K),
            ("kernel_pvalues", K),
        ):
            values = np.asarray(getattr(self, name), dtype=np.float64)
            if values.shape != (size,) or not np.isfinite(values).all():
                raise ValueError(f"{name} must hold {size} finite numbers, got shape {values.shape}")
            object.__setattr__(self, name, values)
        counts = self.kernel_pvalues * (B + 1)
        if (
            (np.abs(counts - np.round(counts)) > 1e-9 * (B + 1)).any()
            or (self.kernel_pvalues <= 0).any()
            or (self.kernel_pvalues > 1).any()
        ):
            raise ValueError(f"kernel_pvalues must be multiples of 1 / (1 + B) in (0, 1], got {self.kernel_pvalues!r}")
        expected = permutation_pvalue(np.r_[self.statistic, self.null_distribution])
        if self.pvalue != expected:
            raise ValueError(
                f"pvalue must be (1 + #{{b: F_b >= F}}) / (1 + B) = {expected!r} for this "
                f"statistic and null distribution, got {self.pvalue!r}"
            )

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
        how = (
            "MMD-FUSE (soft maximum of the normalised MMDs)"
            if self.aggregation == "fuse"
            else "MMDAgg (minimum marginal p-value)"
        )
        where = f"Nystrom, m = {self.n_landmarks} landmarks" if self.method == "nystrom" else "exact"
        lines = [
            f"H0 (same distribution) {'rejected' if reject else 'not rejected'} at level {alpha:g}: "
            f"p-value {self.pvalue:.4g} {'<=' if reject else '>'} {alpha:g}.",
            f"Test: {how} over {len(self.kernels)} kernels ({self.kernels.summary()}), {where}, "
            f"{self.n_permutations} permutations.",
        ]
        order = np.lexsort((-self.kernel_scores, self.kernel_pvalues))
        lead = "Strongest evidence" if reject else "Closest to a difference"
        parts = [
            f"{_label(self.kernels[i])} (marginal p-value {self.kernel_pvalues[i]:.3g}, "
            f"MMD^2 {self.kernel_statistics[i]:.3g})"
            for i in order[:3]
        ]
        lines.append(f"{lead}: " + "; ".join(parts) + ".")
        lines.append(
            f"Dominant kernel: {_label(self.dominant_kernel)}. Marginal p-values are not "
            "corrected for the collection; the test's p-value is."
        )
        return "\n".join(lines)


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


def _label(kernel: Kernel) -> str:
    """'Gaussian, bandwidth 0.4968': a kernel in a sentence."""
    return f"{kernel.family}, bandwidth {float(kernel.bandwidth):.4g}"


def aggregated_test(
    X: SourceLike,
    Y: SourceLike,
    kernels: KernelCollection,
    *,
    aggregation: str = "fuse",
    method: str = "nystrom",
    n_landmarks: int | None = None,
    n_permutations: int = 200,
    max_bins: int | None = DEFAULT_MAX_BINS,
    landmarks: str = "rpcholesky",
    temperature: float = 1.0,
    random_state: RandomStateLike = None,
    progress: bool | None = None,
    n_threads: int | None = None,
    chunk_rows: int | None = None,
) -> AggregatedTestResult:
    """The aggregated test of :func:`nystrom_kme.two_sample_test` (called with a kernel
    collection); arguments as documented there. Random draws, in order: the splits'
    seed (so :func:`nystrom_kme.random_splits` replays them), the rows that set the
    bandwidth grid, the landmarks, the bins (only when they hold several rows)."""
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
    if landmarks not in LANDMARKS:
        raise ValueError(f"landmarks must be one of {LANDMARKS}, got {landmarks!r}")
    if max_bins is not None:
        max_bins = check_positive_int(max_bins, "max_bins")
        if max_bins < 2 * MIN_BINS_PER_SAMPLE:
            raise ValueError(f"max_bins must be at least {2 * MIN_BINS_PER_SAMPLE}, got {max_bins}")
    sx, sy = as_source_pair(X, Y, chunk_rows=chunk_rows)
    n1, n2 = sx.count_rows(), sy.count_rows()
    if n1 < 2 or n2 < 2:
        raise ValueError("X and Y need at least 2 points each")
    B = check_positive_int(n_permutations, "n_permutations")
    nt = n_threads_arg(n_threads)
    rng = check_random_state(random_state)
    N = n1 + n2
    seed = draw_seed(rng, SPLIT_SEED_BOUND)  # first draw: see random_splits
    Z = concatenate([sx, sy])
    collection = kernels.resolve(Z, rng)
    binning = make_binning(n1, n2, max_bins, rng)  # before the landmarks: the same for both methods
    if method == "exact":
        if n_landmarks is not None:
            raise ValueError("n_landmarks applies to method='nystrom' only")
        m = None
    else:
        m = default_n_landmarks(N) if n_landmarks is None else check_positive_int(n_landmarks, "n_landmarks")
        if m > N:
            raise ValueError(f"n_landmarks={m} exceeds n1 + n2 = {N}")
        if m < 2:
            raise ValueError("the aggregated Nystrom test needs n_landmarks >= 2")
        L = _landmarks(Z, collection, m, landmarks, rng, nt)
    if binning is None and method == "exact":
        raise ValueError(
            f"the exact test over single rows of {N} pooled rows exceeds max_bins={max_bins}; "
            "raise max_bins or use method='nystrom'"
        )
    units = (n1, n2) if binning is None else (binning.n1, binning.n2)
    bar = progress_bar(len(collection), progress, f"aggregated {method} test, kernels")
    progress = None if bar is None else bar.update
    spec = SplitSpec(units[0], units[1], B, seed)
    kept1, kept2 = (n1, n2) if binning is None else (binning.n1 * binning.size, binning.n2 * binning.size)
    cross: np.ndarray | None
    total: np.ndarray | None
    if method == "exact":
        assert binning is not None  # refused above
        T, cross, total, trace, frob = _exact_forms(Z, collection, spec, binning, nt, progress)
    else:
        need_cross = kept1 != kept2
        if binning is None:
            T, cross, total, frob = _streamed_nystrom_forms(Z, L, collection, spec, nt, progress, need_cross)
        else:
            T, cross, total, frob = _binned_nystrom_forms(Z, L, collection, spec, binning, nt, progress, need_cross)
        trace = None  # the Nystrom diagonal is estimated from the splits (see unbiased_mmd2)
    if bar is not None:
        bar.close()
    U = unbiased_mmd2(T, kept1, kept2, cross=cross, total=total, trace=trace)
    scores = fuse_scores(U, frob, kept1, kept2, temperature)
    pvals = marginal_pvalues(U)
    F = log_mean_exp(scores) if aggregation == "fuse" else -pvals.min(axis=0)
    return AggregatedTestResult(
        statistic=float(F[0]),
        pvalue=permutation_pvalue(F),
        null_distribution=F[1:].copy(),
        method=method,
        aggregation=aggregation,
        kernels=collection,
        kernel_statistics=U[:, 0].copy(),
        kernel_scores=scores[:, 0].copy(),
        kernel_pvalues=pvals[:, 0].copy(),
        n_landmarks=m,
        n_permutations=B,
        bin_size=1 if binning is None else binning.size,
        temperature=temperature,
    )


#: The pooled rows the "rpcholesky" landmarks are chosen among: at most this many times m,
#: drawn uniformly (the choice costs O(rows m^2)).
RPCHOLESKY_POOL = 20
LANDMARKS = ("rpcholesky", "uniform")


def _landmarks(
    Z: RowSource, collection: KernelCollection, m: int, landmarks: str, rng: np.random.Generator, nt: int
) -> np.ndarray:
    """The m landmarks of the Nystrom method, chosen from the pooled rows without the
    labels: uniformly without replacement, or ("rpcholesky") by block randomly pivoted
    Cholesky for the collection's narrowest kernel among RPCHOLESKY_POOL m rows drawn
    uniformly, which spreads them where that kernel needs them (clusters, fine scales)."""
    uniform = UniformSampling(replace=False)
    N = Z.count_rows()
    if landmarks == "uniform" or m >= N:
        return np.ascontiguousarray(Z.take(np.sort(uniform.draw(Z, None, m, rng))))
    pool = np.sort(uniform.draw(Z, None, min(N, RPCHOLESKY_POOL * m), rng))
    narrowest = min(collection, key=lambda k: float(k.bandwidth))
    rows = np.ascontiguousarray(Z.take(pool))
    chosen = BlockRPCholeskySampling(n_threads=nt or None).select_indices(rows, narrowest, m, rng)
    return np.ascontiguousarray(rows[np.sort(chosen)])


def _kernel_groups(kernels: KernelCollection, per_kernel_bytes: int) -> list[list[Kernel]]:
    """The kernels in consecutive groups whose outputs fit BIN_SUMS_BYTES together."""
    size = max(1, BIN_SUMS_BYTES // max(per_kernel_bytes, 1))
    ks = list(kernels)
    return [ks[i : i + size] for i in range(0, len(ks), size)]


def _landmark_frobenius(L: np.ndarray, kernel: Kernel, N: int, nt: int) -> float:
    """||K_0||_F = sqrt(sum_{i != j} k(z_i, z_j)^2) over the pooled sample, estimated by the
    mean over distinct landmark pairs (uniform without replacement: unbiased)."""
    m = L.shape[0]
    Km = _core.kernel_matrix(L, L, kernel.to_core(), nt)
    off = (float(np.sum(Km * Km)) - float(np.sum(np.diag(Km) ** 2))) / (m * (m - 1))
    return math.sqrt(max(off, 0.0) * N * (N - 1))


def _binned_nystrom_forms(
    Z: RowSource,
    L: np.ndarray,
    collection: KernelCollection,
    spec: SplitSpec,
    binning: Binning,
    nt: int,
    progress: Progress | None,
    need_cross: bool,
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None, np.ndarray]:
    """(T, cross, total, Frobenius norms) of the Nystrom approximations: each kernel's bin
    sums E = K(L, Z) A in one pass (per group of kernels), the permuted sums S = E W of the
    bin-level splits W, per-kernel solves on L."""
    N, m, G = Z.count_rows(), L.shape[0], binning.n_bins
    W = np.ascontiguousarray(spec.new().next_weights(G) / binning.size)  # per-row weights +-1/n
    bins = binning.row_bins(N)
    K = len(collection)
    T = np.empty((K, spec.n_columns))
    cross = np.empty((K, spec.n_columns)) if need_cross else None
    total = np.empty(K) if need_cross else None
    frob = np.empty(K)
    j = 0
    groups = _kernel_groups(collection, 8 * m * G)
    buffer = np.empty((len(groups[0]), m, G))  # one allocation, its pages touched once
    for group in groups:
        E = buffer[: len(group)]
        E.fill(0.0)
        Z.bin_sums(L, group, bins, G, n_threads=nt, out=E)
        for Ej, kernel in zip(E, group):
            S = _core.matrix_product(Ej, W, nt)
            t = np.sum(Ej, axis=1) if need_cross else None  # K(L, Z) 1 over the kept rows
            forms = nystrom_quadratic_forms(L, S, kernel, nt, t=t)
            T[j] = forms[0]
            if cross is not None and total is not None:  # need_cross
                cross[j], total[j] = forms[1], forms[2]
            frob[j] = _landmark_frobenius(L, kernel, N, nt)
            j += 1
            if progress is not None:
                progress(1)
    return T, cross, total, frob


def _streamed_nystrom_forms(
    Z: RowSource,
    L: np.ndarray,
    collection: KernelCollection,
    spec: SplitSpec,
    nt: int,
    progress: Progress | None,
    need_cross: bool,
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None, np.ndarray]:
    """As _binned_nystrom_forms for single rows beyond max_bins of them (very unequal
    samples): the split sums S = K(L, Z) W streamed with the label weights generated on
    the fly (nothing of size m x n is stored)."""
    N = spec.n_rows
    S = Z.split_sums_multi(L, collection.kernels, spec, n_threads=nt)
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
        if cross is not None and total is not None:  # need_cross
            cross[j], total[j] = forms[1], forms[2]
        frob[j] = _landmark_frobenius(L, kernel, N, nt)
        if progress is not None:
            progress(1)
    return T, cross, total, frob


def _exact_forms(
    Z: RowSource, collection: KernelCollection, spec: SplitSpec, binning: Binning, nt: int, progress: Progress | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(T, cross, total, trace, Frobenius norms) of every kernel's full matrix on the kept
    pooled rows, through the bin Gram matrix Q = A^T K A (n_bins x n_bins), one kernel at a
    time: O(K (n^2 d + n_bins^2 B)) time, O(n d + n_bins^2) memory. The kept rows are
    gathered in bin order once, so that each bin is a run of rows: dense blocks of K then
    sum to Q by reshaping, and their squares give ||K_0||_F for any kernel."""
    N, G, size = Z.count_rows(), binning.n_bins, binning.size
    bins = binning.row_bins(N)
    kept = np.flatnonzero(bins >= 0)
    Zs = np.ascontiguousarray(Z.take(kept[np.argsort(bins[kept], kind="stable")]))  # row g*size+i: bin g
    n_kept = Zs.shape[0]
    W = np.ascontiguousarray(spec.new().next_weights(G) / size)
    rows = size * max(1, EXACT_BLOCK_BYTES // (8 * n_kept * size))  # whole bins per block
    K = len(collection)
    T = np.empty((K, spec.n_columns))
    cross = np.empty((K, spec.n_columns))
    total = np.empty(K)
    squares = np.empty(K)
    for j, kernel in enumerate(collection):
        core = kernel.to_core()
        Q = np.empty((G, G))
        square_parts = []
        for start in range(0, n_kept, rows):
            block = _core.kernel_matrix(Zs[start : start + rows], Zs, core, nt)  # (rows, n_kept)
            square_parts.append(float(np.sum(block * block)))  # pairwise summation: no BLAS
            Q[start // size : (start + block.shape[0]) // size] = _bin_sums_2d(block, size)
        QW = _core.matrix_product(Q, W, nt)
        T[j] = np.einsum("gb,gb->b", W, QW)
        row_sums = np.sum(Q, axis=1)
        cross[j] = np.einsum("gb,g->b", W, row_sums)
        total[j] = float(np.sum(row_sums))
        squares[j] = math.fsum(square_parts)
        if progress is not None:
            progress(1)
    # radial kernels: k(z, z) = 1, so the diagonal adds n_kept to the trace and to the squares
    trace = np.full(K, float(n_kept))
    frob = np.sqrt(np.maximum(squares - n_kept, 0.0))
    return T, cross, total, trace, frob


def _bin_sums_2d(block: np.ndarray, size: int) -> np.ndarray:
    """Sums of the (size x size) sub-blocks of ``block`` (rows and columns in runs of
    ``size``, bin by bin), by strided additions in a fixed order."""
    if size == 1:
        return block
    columns = block[:, 0::size].copy()
    for i in range(1, size):
        columns += block[:, i::size]
    out = columns[0::size].copy()
    for i in range(1, size):
        out += columns[i::size]
    return out


__all__ = ["AggregatedTestResult", "Binning", "aggregated_test", "make_binning"]
