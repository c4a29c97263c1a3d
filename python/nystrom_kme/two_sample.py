"""Kernel two-sample tests with permutations: exact MMD and the Nyström test of
Chatalic, Letizia, Schreuder and Rosasco (2025).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Union, cast, overload

import numpy as np

from ._progress import progress_bar
from ._validation import (
    SPLIT_SEED_BOUND,
    RandomStateLike,
    check_positive_int,
    check_random_state,
    draw_seed,
    n_threads_arg,
)
from .aggregated import DEFAULT_MAX_BINS, AggregatedTestResult, aggregated_test
from .bounds import default_n_landmarks
from .kernel_collection import KernelCollection, as_collection
from .kernels import Kernel, resolve_kernel
from .landmark_search import AutoLandmarks, as_auto_spec, search_landmarks
from .permutation import SplitSpec, nystrom_statistics
from .persistence import JsonResult, persistable
from .sampling import UniformSampling
from .sources import SourceLike, as_source_pair, concatenate

#: Several kernels given as a list or tuple (of kernels or names): the aggregated test.
MultipleKernels = Union[list[Kernel], list[str], list[Union[Kernel, str]], tuple[Union[Kernel, str], ...]]

if TYPE_CHECKING:  # typing.TypeGuard is Python 3.10+; annotations only
    from typing import TypeGuard


@persistable
@dataclass(frozen=True)
class TwoSampleResult(JsonResult):
    """Outcome of a permutation two-sample test (in the spirit of scipy.stats results).

    ``save(path)`` / :func:`nystrom_kme.load` and ``to_json()`` / ``from_json(text)``
    store a result as JSON (floats exactly; see :mod:`nystrom_kme.persistence`).

    Attributes
    ----------
    statistic : float
        The observed statistic T: the squared MMD estimate between X and Y (biased
        V-statistic for ``method="exact"``, s^T K_m^+ s for ``"nystrom"``).
    pvalue : float
        (1 + #{b : T_b >= T}) / (1 + B), counting the observed statistic: in
        [1 / (1 + B), 1]; reject H0 (same distribution) at level alpha when
        ``pvalue <= alpha``.
    null_distribution : ndarray of shape (n_permutations,), float64
        The permuted statistics T_b, b = 1..B, in the order of the random splits
        (:func:`nystrom_kme.random_splits` replays them).
    method : str
        "nystrom" or "exact".
    kernel : Kernel
        The kernel used, with its numeric bandwidth (the median heuristic resolved
        on the pooled sample when it was asked for).
    n_landmarks : int or None
        m for the Nyström test, None for the exact test.
    n_permutations : int
        B, the number of random splits.

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> rng = np.random.default_rng(0)
    >>> X, Y = rng.normal(size=(500, 2)), rng.normal(size=(500, 2))
    >>> res = nk.two_sample_test(X, Y, n_permutations=49, random_state=0)
    >>> res.method, res.n_permutations, res.null_distribution.shape
    ('nystrom', 49, (49,))
    >>> bool(res.pvalue > 0.05)                     # same distribution: no rejection
    True
    """

    statistic: float
    pvalue: float
    null_distribution: np.ndarray = field(repr=False)
    method: str
    kernel: Kernel
    n_landmarks: int | None
    n_permutations: int

    def __post_init__(self) -> None:
        """Every field checked against what :func:`two_sample_test` returns (a result
        read from a file is built here too); ``null_distribution`` becomes float64."""

        def integer(value: object) -> TypeGuard[int]:
            return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))

        if self.method not in ("nystrom", "exact"):
            raise ValueError(f"method must be 'nystrom' or 'exact', got {self.method!r}")
        if not integer(self.n_permutations) or self.n_permutations < 1:
            raise ValueError(f"n_permutations must be a positive integer, got {self.n_permutations!r}")
        if self.method == "exact" and self.n_landmarks is not None:
            raise ValueError(f"n_landmarks must be None for method='exact', got {self.n_landmarks!r}")
        if self.method == "nystrom" and not (integer(self.n_landmarks) and self.n_landmarks >= 1):
            raise ValueError(f"n_landmarks must be a positive integer for method='nystrom', got {self.n_landmarks!r}")
        if not isinstance(self.kernel, Kernel) or not self.kernel.is_resolved:
            raise ValueError(f"kernel must be a Kernel with a numeric bandwidth, got {self.kernel!r}")
        if (
            not isinstance(self.statistic, numbers.Real)
            or isinstance(self.statistic, (bool, np.bool_))
            or not math.isfinite(self.statistic)
        ):
            raise ValueError(f"statistic must be a finite number, got {self.statistic!r}")
        null = np.asarray(self.null_distribution, dtype=np.float64)
        if null.shape != (self.n_permutations,) or not np.isfinite(null).all():
            raise ValueError(
                f"null_distribution must hold n_permutations = {self.n_permutations} "
                f"finite numbers, got shape {null.shape}"
            )
        object.__setattr__(self, "null_distribution", null)
        expected = (1.0 + int(np.count_nonzero(null >= self.statistic))) / (1.0 + self.n_permutations)
        if self.pvalue != expected:
            raise ValueError(
                f"pvalue must be (1 + #{{b: T_b >= T}}) / (1 + B) = {expected!r} for this "
                f"statistic and null distribution, got {self.pvalue!r}"
            )


@overload
def two_sample_test(
    X: SourceLike,
    Y: SourceLike,
    *,
    kernel: Kernel | str = "gaussian",
    method: str = "nystrom",
    n_landmarks: int | str | AutoLandmarks | None = None,
    n_permutations: int = 200,
    aggregation: str = "fuse",
    max_bins: int | None = DEFAULT_MAX_BINS,
    landmarks: str = "rpcholesky",
    temperature: float = 1.0,
    random_state: RandomStateLike = None,
    progress: bool | None = None,
    n_threads: int | None = None,
    chunk_rows: int | None = None,
) -> TwoSampleResult: ...
@overload
def two_sample_test(
    X: SourceLike,
    Y: SourceLike,
    *,
    kernel: KernelCollection | MultipleKernels,
    method: str = "nystrom",
    n_landmarks: int | str | AutoLandmarks | None = None,
    n_permutations: int = 200,
    aggregation: str = "fuse",
    max_bins: int | None = DEFAULT_MAX_BINS,
    landmarks: str = "rpcholesky",
    temperature: float = 1.0,
    random_state: RandomStateLike = None,
    progress: bool | None = None,
    n_threads: int | None = None,
    chunk_rows: int | None = None,
) -> AggregatedTestResult: ...


def two_sample_test(
    X: SourceLike,
    Y: SourceLike,
    *,
    kernel: Kernel | str | KernelCollection | MultipleKernels = "gaussian",
    method: str = "nystrom",
    n_landmarks: int | str | AutoLandmarks | None = None,
    n_permutations: int = 200,
    aggregation: str = "fuse",
    max_bins: int | None = DEFAULT_MAX_BINS,
    landmarks: str = "rpcholesky",
    temperature: float = 1.0,
    random_state: RandomStateLike = None,
    progress: bool | None = None,
    n_threads: int | None = None,
    chunk_rows: int | None = None,
) -> TwoSampleResult | AggregatedTestResult:
    """Permutation test of H0: X and Y come from the same distribution, with one kernel or
    with a collection of kernels at once.

    **One kernel** (``kernel`` a Kernel or a name). ``method="nystrom"`` (Chatalic,
    Letizia, Schreuder, Rosasco 2025; the statistic of :func:`nystrom_kme.mmd2` with shared
    landmarks): m landmarks are drawn uniformly without replacement from the pooled
    sample Z = [X; Y] (n = n1 + n2 points), features are Phi = K_{.m} (K_m^+)^{1/2}, and
    the statistic is ||mean Phi(X) - mean Phi(Y)||^2 = s^T K_m^+ s with s = K(L, Z) v and v
    the label weights (+1/n1 on X, -1/n2 on Y). All B permuted statistics come from one
    streaming pass computing K(L, Z) W in the C++ core, where column b of W holds the
    label weights of random split b, generated on the fly (see
    :func:`nystrom_kme.random_splits`): neither the n x m feature matrix nor W is stored.
    Time O(n m d + n m B + m^3), parallel; memory O(m B) floats plus ~1 MiB blocks. With
    m = n every pooled point is a landmark and the statistic is the exact biased MMD^2.
    ``method="exact"``: the biased MMD^2 of :func:`nystrom_kme.mmd2_exact` (V-statistic)
    with the same splits: O(n^2 (d + B)) time, O(n B) memory in memory (O(block B) for
    streamed samples, read once per block).

    **A collection** (``kernel`` a :class:`~nystrom_kme.KernelCollection` or a list of
    kernels): the aggregated test of :mod:`nystrom_kme.aggregated`. Each kernel's unbiased
    MMD^2 of every split is normalised by a permutation-invariant scale and the kernels
    are combined by MMD-FUSE's soft maximum (``aggregation="fuse"``) or by their smallest
    marginal p-value (``"mmdagg"``), over the same splits: exact level for the whole
    collection, and a result that says which kernel saw the difference
    (:class:`~nystrom_kme.AggregatedTestResult`). ``method="nystrom"``: every kernel's
    sums in one pass over the data, O(n m (d + K) + K m max_bins B + K m^3) time.

    Parameters
    ----------
    X : array-like (n1, d) or source;  Y : array-like (n2, d) or source
        In-memory arrays or any source of :mod:`nystrom_kme.sources` (memmaps,
        HDF5/zarr datasets, iterables of chunks, dask arrays: the sums then run on
        the dask workers for one kernel, block by block on the client for a collection).
    kernel : Kernel, str, KernelCollection or list of kernels, default="gaussian"
        One kernel ("gaussian": the median bandwidth on the pooled sample), or a
        collection: ``nk.KernelCollection()`` is MMD-FUSE's (Gaussian and Laplacian
        kernels at 10 bandwidths each, set from the pooled sample).
    method : {"nystrom", "exact"}
    n_landmarks : int, None, "auto" or AutoLandmarks
        m (Nyström only), 1 <= m <= n1 + n2 (>= 2 for a collection); None:
        ceil(sqrt(n) log sqrt(n)). "auto" (one kernel only): the landmarks are the
        final set of the doubling search of :mod:`nystrom_kme.landmark_search` run on
        the pooled sample (uniform without replacement, nested): the smallest m on the
        path at which the pooled Nyström embedding moves by at most ``tol`` x its
        statistical error; the chosen m is ``result.n_landmarks``. The search never
        sees the labels, so the permutation test keeps its level (tested over
        repetitions).
    n_permutations : int, default=200
    aggregation : {"fuse", "mmdagg"}, default="fuse"
        How a collection's kernels are combined (ignored for one kernel).
    max_bins : int or None, default=2048
        A collection only: beyond this many pooled rows the permutations move random
        bins of s = ceil(n / max_bins) rows of one sample instead of single rows (each
        sample's n mod s rows left over are dropped at random; ``result.bin_size``
        says s). Bins are exchangeable under H0, so the level stays exact; the
        permutations then cost O(K m max_bins B) whatever n. None: single rows always.
    landmarks : {"rpcholesky", "uniform"}, default="rpcholesky"
        A collection with ``method="nystrom"``: how the m landmarks are chosen from the
        pooled sample (never looking at the labels, so the level stays exact): block
        randomly pivoted Cholesky for the collection's narrowest kernel, among 20 m pooled
        rows drawn uniformly (it spreads them where the narrow kernels need them: on the
        clustered benchmark it kept the exact test's power where uniform landmarks lost
        0.05), or uniformly without replacement.
    temperature : float, default=1.0
        A collection with ``aggregation="fuse"``: the multiplier of FUSE's
        lambda = sqrt(n (n - 1)) in the soft maximum (larger: closer to the maximum).
    random_state : None, int or numpy Generator
        Splits and landmarks are reproducible from it (the splits do not depend on
        the thread count, the SIMD level or the data; :func:`random_splits` returns them).
    progress : bool or None
        Progress bar (needs tqdm); None: only when stderr is a terminal.
    n_threads : int or None
    chunk_rows : int or None
        Rows per read for array-like sources.

    Returns
    -------
    TwoSampleResult or AggregatedTestResult
        ``statistic``, ``pvalue`` = (1 + #{b: T_b >= T}) / (1 + B), the permuted
        statistics ``null_distribution`` (B,), and the method, kernel(s) and m used;
        for a collection also each kernel's statistic and marginal p-value, the
        dominant kernel and ``explain()``.

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> rng = np.random.default_rng(0)
    >>> X, Y = rng.normal(size=(3000, 2)), rng.normal(size=(3000, 2)) + 0.3
    >>> res = nk.two_sample_test(X, Y, n_permutations=99, random_state=0)
    >>> res.pvalue
    0.01
    >>> agg = nk.two_sample_test(X, Y, kernel=nk.KernelCollection(), n_permutations=99, random_state=0)
    >>> agg.pvalue, len(agg.kernels), agg.dominant_kernel.family
    (0.01, 20, 'Gaussian')
    """
    collection = as_collection(kernel)
    if collection is not None:
        if as_auto_spec(n_landmarks) is not None:
            raise ValueError(
                "n_landmarks='auto' is for a single kernel; give the aggregated test an integer n_landmarks or None"
            )
        return aggregated_test(
            X,
            Y,
            collection,
            aggregation=aggregation,
            method=method,
            n_landmarks=n_landmarks,  # type: ignore[arg-type]  # a str is refused there
            n_permutations=n_permutations,
            max_bins=max_bins,
            landmarks=landmarks,
            temperature=temperature,
            random_state=random_state,
            progress=progress,
            n_threads=n_threads,
            chunk_rows=chunk_rows,
        )
    sx, sy = as_source_pair(X, Y, chunk_rows=chunk_rows)
    n1, n2 = sx.count_rows(), sy.count_rows()
    if n1 < 2 or n2 < 2:
        raise ValueError("X and Y need at least 2 points each")
    if method not in ("nystrom", "exact"):
        raise ValueError(f"method must be 'nystrom' or 'exact', got {method!r}")
    B = check_positive_int(n_permutations, "n_permutations")
    nt = n_threads_arg(n_threads)
    rng = check_random_state(random_state)
    n = n1 + n2
    spec = SplitSpec(n1, n2, B, draw_seed(rng, SPLIT_SEED_BOUND))  # first draw: see random_splits
    k = resolve_kernel(cast("Kernel | str", kernel), [sx, sy], rng)  # one kernel: as_collection said so
    auto = as_auto_spec(n_landmarks)
    m: int | None
    if method == "nystrom" and auto is None:
        m = default_n_landmarks(n) if n_landmarks is None else check_positive_int(n_landmarks, "n_landmarks")
        if m > n:
            raise ValueError(f"n_landmarks={m} exceeds n1 + n2 = {n}")
    elif method == "exact" and n_landmarks is not None:
        raise ValueError("n_landmarks applies to method='nystrom' only")
    Z = concatenate([sx, sy])
    policy = UniformSampling(replace=False)  # the landmarks, blind to the labels: the level is kept
    if method == "nystrom" and auto is not None:
        L = search_landmarks(
            Z, k, policy, rng, spec=auto, sample_weight=None, solver="auto", rcond=0.0, n_threads=nt
        ).landmarks
        m = L.shape[0]
    bar = progress_bar(n, progress, f"{method} permutation test")
    update = None if bar is None else bar.update
    if method == "exact":
        labels = spec.new()
        stats = np.zeros(B + 1)
        for _, block in Z.chunks():  # T_b = w_b^T K(Z, Z) w_b, one block of rows at a time
            S = Z.split_sums(block, k, spec, n_threads=nt)
            stats += np.einsum("ib,ib->b", labels.next_weights(block.shape[0]), S)
            if update is not None:
                update(block.shape[0])
        m = None
    else:
        if auto is None:
            assert m is not None  # set above for the Nystrom method
            L = np.ascontiguousarray(Z.take(np.sort(policy.draw(Z, k, m, rng))))
        S = Z.split_sums(L, k, spec, n_threads=nt, progress=update)
        stats = nystrom_statistics(L, S, k, nt)
    if bar is not None:
        bar.close()
    observed, null = float(stats[0]), np.asarray(stats[1:])
    pvalue = (1.0 + np.count_nonzero(null >= observed)) / (1.0 + B)
    return TwoSampleResult(
        statistic=observed,
        pvalue=float(pvalue),
        null_distribution=null,
        method=method,
        kernel=k,
        n_landmarks=m,
        n_permutations=B,
    )


__all__ = ["TwoSampleResult", "two_sample_test"]
