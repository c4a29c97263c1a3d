"""Kernel two-sample tests with permutations, as one pipeline:

    arguments -> sources (in a canonical order) -> kernels -> landmarks (a sampling
    policy) -> every kernel's statistic for every split -> one aggregate per split (a
    rule) -> permutation p-value -> effect size -> result

:func:`two_sample_test` is the one entry point. With ``kernel="auto"`` (the default) it
takes the largest standardised MMD^2 of six kernels, Gaussian and l1 Laplacian at three
bandwidths each from the lower end of MMD-FUSE's grid to the median distance, one
aggregation over one collection chosen by power on the widened suite of issue 42
(docs/user_guide/mmd.rst, bench/RESULTS.md). One kernel (``kernel="gaussian"``: the median
heuristic), MMD-FUSE's or MMDAgg's aggregation and the previous default
(``aggregation="fuse+median"``) stay a keyword away.

Modules, in the order the data flows: ``_arguments`` (every check, and the default rule
and collection), ``_plan`` (the canonical order, the kernels, the landmarks through the
package's one landmark plan, :mod:`nystrom_kme._landmark_plan`, the units),
``_statistics`` (every kernel's permuted MMD^2: Nyström or exact), ``rules`` (the rules as
objects: scores, aggregate, the kernel that decided, the check of a saved result; one
kernel is the rule ``ONE_KERNEL``), ``_decision`` (everything between the statistics and
the decision: the round-off floor, the matrix a rule reads, MMD-FUSE's normalisers, the
p-values and the deciding kernel), ``_effect`` (the MMD's confidence interval),
``results``. The drift detectors bring their own permuted statistics to the same
pieces, through ``engine``.
"""

from __future__ import annotations

from typing import Literal, Union, overload

from .. import defaults
from .._progress import progress_bar
from .._scaling import SCALING_SEED as SCALING_SEED  # where it was: the scaling's seed, now _scaling's
from .._scaling import check_standardize, fit_scaling, warn_scales
from .._validation import SPLIT_SEED_BOUND, RandomStateLike, check_random_state, draw_seed
from ..kernel_collection import KernelCollection
from ..kernels import Kernel
from ..landmark_search import AutoLandmarks
from ..sampling import SamplerLike
from ..sources import SourceLike, as_source_pair, concatenate, scaled
from . import _statistics
from ._arguments import (
    COLLECTION_RULE,
    DEFAULT_COLLECTION,
    DEFAULT_RULE,
    METHODS,
    PREVIOUS_DEFAULT,
    check_arguments,
    given_kernels,
)
from ._decision import decide
from ._effect import effect_size, interval
from ._plan import DEFAULT_LANDMARKS, EXACT_FEATURES, EXACT_ROWS, exact_rows, make_plan, swapped
from ._statistics import DEFAULT_MAX_BINS
from .results import AggregatedTestResult, Effect, TwoSampleResult
from .rules import AGGREGATIONS

#: Several kernels given as a list or tuple (of kernels or names): a collection.
MultipleKernels = Union[list[Kernel], list[str], list[Union[Kernel, str]], tuple[Union[Kernel, str], ...]]


@overload
def two_sample_test(  # type: ignore[overload-overlap]  # "auto" is a str: this one first
    X: SourceLike,
    Y: SourceLike,
    *,
    kernel: Literal["auto"] | KernelCollection | MultipleKernels = ...,
    method: str = "auto",
    n_landmarks: int | str | AutoLandmarks | None = None,
    n_permutations: int = defaults.N_PERMUTATIONS,
    aggregation: str | None = None,
    max_bins: int | None = DEFAULT_MAX_BINS,
    sampler: SamplerLike | None = None,
    temperature: float = 1.0,
    alpha: float = defaults.ALPHA,
    effect: bool = True,
    standardize: bool | str = False,
    random_state: RandomStateLike = None,
    progress: bool | None = None,
    n_threads: int | None = None,
    chunk_rows: int | None = None,
) -> AggregatedTestResult: ...


@overload
def two_sample_test(
    X: SourceLike,
    Y: SourceLike,
    *,
    kernel: Kernel | str,
    method: str = "auto",
    n_landmarks: int | str | AutoLandmarks | None = None,
    n_permutations: int = defaults.N_PERMUTATIONS,
    aggregation: str | None = None,
    max_bins: int | None = DEFAULT_MAX_BINS,
    sampler: SamplerLike | None = None,
    temperature: float = 1.0,
    alpha: float = defaults.ALPHA,
    effect: bool = True,
    standardize: bool | str = False,
    random_state: RandomStateLike = None,
    progress: bool | None = None,
    n_threads: int | None = None,
    chunk_rows: int | None = None,
) -> TwoSampleResult: ...


def two_sample_test(
    X: SourceLike,
    Y: SourceLike,
    *,
    kernel: Kernel | str | KernelCollection | MultipleKernels = "auto",
    method: str = "auto",
    n_landmarks: int | str | AutoLandmarks | None = None,
    n_permutations: int = defaults.N_PERMUTATIONS,
    aggregation: str | None = None,
    max_bins: int | None = DEFAULT_MAX_BINS,
    sampler: SamplerLike | None = None,
    temperature: float = 1.0,
    alpha: float = defaults.ALPHA,
    effect: bool = True,
    standardize: bool | str = False,
    random_state: RandomStateLike = None,
    progress: bool | None = None,
    n_threads: int | None = None,
    chunk_rows: int | None = None,
) -> TwoSampleResult | AggregatedTestResult:
    """Permutation test of H0: X and Y come from the same distribution.

    **The default** (``kernel="auto"``, ``aggregation="maxz"``) is one permutation test
    over six kernels: Gaussian and l1 Laplacian (MMD-FUSE's Laplace kernel) at three
    bandwidths each, geometrically from the lower end of MMD-FUSE's grid (half the 5%
    quantile of the pooled sample's distances) to the median distance. The narrow kernels
    see local differences (perturbations, mixtures, dependence), the median Gaussian a
    plain shift, the l1 kernels a change in a few coordinates of many; the statistic is
    the largest of the six MMD^2 in units of each one's permutation spread, compared with
    the same maximum over the same permutations, so the level is exact. Over the 22
    problems of the widened suite (bench/problems_wide.py, 500 rows per sample, 100
    repetitions) it is at most 0.12 and on average 0.04 below the best fixed choice (the
    median Gaussian, MMD-FUSE and MMDAgg over 20 kernels, exact MMD-FUSE over its published
    20, the previous default), where each fixed choice loses 0.25 to 0.92 somewhere
    (docs/user_guide/mmd.rst, "Level, power and the default"). Above the exact limit the
    narrowest kernel of each family takes at least 4096 landmarks ("How many landmarks").
    ``aggregation="fuse+median"`` with ``kernel="auto"`` runs the previous default (issue
    27: the smaller of MMD-FUSE's p-value over the Gaussian and Laplacian grid ends and the
    median Gaussian's).

    **One kernel** (``kernel`` a Kernel or a name, e.g. ``"gaussian"``: the median
    bandwidth on the pooled sample): the Nyström test of Chatalic, Letizia, Schreuder and
    Rosasco (2025): m landmarks drawn without the labels, features Phi = K_{.m} (K_m^+)^{1/2},
    statistic ||mean Phi(X) - mean Phi(Y)||^2 = s^T K_m^+ s, all B permuted statistics from
    one streaming pass computing K(L, Z) W with the label weights generated on the fly.

    **A collection** (a :class:`~nystrom_kme.KernelCollection` or a list of kernels):
    ``aggregation`` "fuse" (the default for a collection: MMD-FUSE's soft maximum of
    MMD^2 / ||K_0||_F), "mmdagg" (MMDAgg's smallest marginal p-value), "maxz" (the largest
    standardised MMD^2) or "fuse+median" (the collection's FUSE and the median Gaussian).
    ``kernel="auto"`` with "fuse" or "mmdagg" takes MMD-FUSE's own 20 kernels, with
    "fuse+median" the previous default's five. ``method="exact"`` computes every
    statistic from the full kernel matrices over single rows (O(N^2 (d + B)) per kernel).

    Parameters
    ----------
    X : array-like (n1, d) or source;  Y : array-like (n2, d) or source
        In-memory arrays or any source of :mod:`nystrom_kme.sources` (memmaps, HDF5/zarr
        datasets, iterables of chunks, dask and CUDA arrays).
    kernel : "auto", Kernel, str, KernelCollection or list of kernels, default="auto"
    method : {"auto", "nystrom", "exact"}, default="auto"
        "auto": the exact test (every pooled row) up to 10 000 pooled rows (fewer above 20
        features, at the same cost: 4443 at d = 784), about 2 s on two cores; Nyström
        beyond (and whenever ``n_landmarks`` or ``sampler`` is given); ``result.method``
        says which ran.
    n_landmarks : int, None, "auto" or AutoLandmarks
        m (Nyström only, 1 <= m; above the pooled rows capped at them with a warning, as
        every entry point does); None: the paper's sqrt(N) log sqrt(N) for N pooled rows,
        kept between 1024 and 3000 (fewer lost power on local differences, more costs
        minutes at 10^6 rows: the user guide, "How many landmarks"), and for the default
        test's narrowest kernel of each family at least 4096 (at most N).
        "auto": the certified search of :mod:`nystrom_kme.landmark_search` on the pooled
        sample (label-blind), for the collection's narrowest kernel.
    n_permutations : int, default=200
    aggregation : {"maxz", "fuse", "mmdagg", "fuse+median"} or None
        How a collection's kernels combine (None: "maxz" for ``kernel="auto"``, "fuse" for
        a collection given); not for one kernel.
    max_bins : int or None, default=2048
        A collection only: beyond this many pooled rows the Nyström permutations move random
        bins of s = ceil(N / max_bins) rows of one sample (n mod s rows of each dropped at
        random; ``result.bin_size`` says s). Bins are exchangeable under H0, so the level
        stays exact; None: single rows always. The default test also keeps its
        permutations' work to about 2 single-kernel tests: at most max(256, 2 N / K) bins
        for its K kernels. The exact method always permutes rows.
    sampler : sampling policy name or object, or None
        How the landmarks are chosen from the pooled sample (never looking at the labels,
        so the level stays exact); the names of ``NystromKME(sampler=...)``. None: uniform
        without replacement. A policy that reads the rows (e.g. "block-rpcholesky") looks
        at the narrowest kernel of a collection, among 20 m pooled rows drawn uniformly.
    temperature : float, default=1.0
        "fuse" and "fuse+median" only: the multiplier of FUSE's lambda = sqrt(n (n - 1)).
    alpha : float, default=0.05
        The level of ``result.reject`` and ``result.explain()``.
    effect : bool, default=True
        Also estimate the MMD of the kernel whose p-value decided, with a 95% interval
        (``result.effect``), from the test's own sums (no further pass over the data; 2000
        rows per sample for the witness's variance; the exact test: every row's).
    standardize : bool or {"standard", "robust"}, default=False
        Centre and scale every column with the pooled sample's statistics (label-blind:
        the level is kept) before the test: True or "standard" the mean and standard
        deviation, "robust" the median and IQR / 1.349 (heavy-tailed columns). The
        kernels' bandwidths and the effect size are then in standardised units. Without
        it, a UserWarning names the columns that carry most of the distances when their
        variance dwarfs the others' (different units), and a fixed bandwidth far below the
        nearest-neighbour distances or far above the largest one.
    random_state : None, int or numpy Generator
        Splits and landmarks are reproducible from it (the splits do not depend on the
        thread count, the SIMD level or the data; :func:`random_splits` returns them for the
        samples in the test's order: the larger first).
    progress : bool or None
        A progress bar (tqdm) over the pass over the rows, or over the kernels of a
        collection; None: only when stderr is a terminal.
    n_threads : int or None
    chunk_rows : int or None
        Rows per read for array-like sources.

    Returns
    -------
    TwoSampleResult or AggregatedTestResult
        ``statistic``, ``pvalue`` = (1 + #{b: T_b >= T}) / (1 + B), the permuted statistics
        ``null_distribution`` (B,), ``reject`` at ``alpha``, ``effect``, ``explain()``; for a
        collection also each kernel's statistic, score and marginal p-value and the
        dominant kernel.

    Notes
    -----
    The test is symmetric: swapping X and Y gives the same result (the samples are taken
    in a canonical order, the larger first). Memory O((n + m) d + K m B) plus ~1 MiB blocks.

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> rng = np.random.default_rng(0)
    >>> X, Y = rng.normal(size=(3000, 2)), rng.normal(size=(3000, 2)) + 0.3
    >>> res = nk.two_sample_test(X, Y, n_permutations=99, random_state=0)
    >>> res.pvalue, res.reject, len(res.kernels), res.aggregation
    (0.01, True, 6, 'maxz')
    >>> one = nk.two_sample_test(X, Y, kernel="gaussian", n_permutations=99, random_state=0)
    >>> one.pvalue, one.kernel.family
    (0.01, 'Gaussian')
    """
    args = check_arguments(
        kernel,
        method,
        n_landmarks,
        n_permutations,
        aggregation,
        max_bins,
        sampler,
        temperature,
        alpha,
        n_threads,
        chunk_rows,
    )
    kind = check_standardize(standardize)
    sx, sy = as_source_pair(X, Y, chunk_rows=args.chunk_rows)
    n1, n2 = sx.count_rows(), sy.count_rows()
    if n1 < 2 or n2 < 2:
        raise ValueError(f"X and Y need at least 2 rows each, got {n1} and {n2}")
    if swapped(sx, sy):
        sx, sy, n1, n2 = sy, sx, n2, n1
    if kind is not None:  # the pooled sample's scales, label-blind: the level is kept
        scaling = fit_scaling([sx, sy], kind)
        sx, sy = scaled(sx, scaling), scaled(sy, scaling)
    else:
        warn_scales([sx, sy], given_kernels(args.kernel, args.collection), "two_sample_test")
    rng = check_random_state(random_state)
    seed = draw_seed(rng, SPLIT_SEED_BOUND)  # first draw: see random_splits
    Z = concatenate([sx, sy])
    nt = args.n_threads
    plan = make_plan(args, sx, sy, Z, seed, rng)
    several = plan.collection is not None
    total = len(plan.kernels) if several else n1 + n2
    bar = progress_bar(total, progress, f"{plan.method} two-sample test" + (", kernels" if several else ""))
    stats = _statistics.permuted(
        Z,
        plan.kernels,
        plan.landmarks,
        plan.spec,
        plan.binning,
        several,
        nt,
        None if bar is None else bar.update,
        plan.kernel_landmarks,
    )
    if bar is not None:
        if not several and plan.landmarks is None:
            bar.update(n1 + n2)
        bar.close()
    rule = plan.rule
    decision = decide(
        rule, stats, plan.kernels, lambda: _statistics.subset_mean_squares(Z, plan.kernels, rng, nt), args.temperature
    )
    found = None
    j = decision.deciding
    U = decision.unbiased
    if effect and stats.witness is not None:  # exact: the witness's variances from the same pass
        n_x, n_y = stats.n_rows
        variance = 4.0 * (stats.witness[j, 0] / n_x + stats.witness[j, 1] / n_y) + float(U[j].std()) ** 2
        found = interval(plan.kernels[j], float(U[j, 0]), variance)
    elif effect and plan.landmarks is not None and stats.witness_weights is not None:
        L = plan.landmarks_of(j)
        assert L is not None
        found = effect_size(
            sx,
            sy,
            L,
            plan.kernels[j],
            float(U[j, 0]),
            float(U[j].std()),
            stats.witness_weights[j],
            nt,
            rng,
        )
    m = None if plan.landmarks is None else int(plan.landmarks.shape[0])
    if not several:
        return TwoSampleResult(
            statistic=decision.statistic,
            pvalue=decision.pvalue,
            null_distribution=decision.null,
            method=plan.method,
            kernel=plan.kernels[0],
            n_landmarks=m,
            n_permutations=args.n_permutations,
            alpha=args.alpha,
            effect=found,
        )
    assert plan.collection is not None
    return AggregatedTestResult(
        statistic=decision.statistic,
        pvalue=decision.pvalue,
        null_distribution=decision.null,
        method=plan.method,
        aggregation=rule.name,
        kernels=plan.collection,
        kernel_statistics=decision.kernel_statistics,
        kernel_scores=decision.kernel_scores,
        kernel_pvalues=decision.kernel_pvalues,
        n_landmarks=m,
        n_permutations=args.n_permutations,
        bin_size=stats.bin_size,
        temperature=args.temperature,
        alpha=args.alpha,
        effect=found,
    )


def swaps(X: SourceLike, Y: SourceLike) -> bool:
    """Whether :func:`two_sample_test` takes Y as its first sample: it orders the samples
    canonically (the larger first; equal sizes by their first differing value at fixed
    rows, a comparison that a change of units keeps), so that swapping X and Y gives the
    same result. :func:`nystrom_kme.random_splits` replays its splits for the samples in
    that order.

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_kme.two_sample import swaps
    >>> swaps(np.zeros((5, 2)), np.zeros((7, 2))), swaps(np.zeros((7, 2)), np.zeros((5, 2)))
    (True, False)
    """
    sx, sy = as_source_pair(X, Y)
    return swapped(sx, sy)


__all__ = [
    "AGGREGATIONS",
    "COLLECTION_RULE",
    "DEFAULT_COLLECTION",
    "DEFAULT_LANDMARKS",
    "DEFAULT_MAX_BINS",
    "DEFAULT_RULE",
    "EXACT_FEATURES",
    "EXACT_ROWS",
    "METHODS",
    "PREVIOUS_DEFAULT",
    "AggregatedTestResult",
    "Effect",
    "TwoSampleResult",
    "exact_rows",
    "swaps",
    "two_sample_test",
]
