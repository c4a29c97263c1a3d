"""Kernel tests of independence (HSIC) and conditional independence (KCI) at Nyström cost,
on the two-sample tests' engine:

    arguments -> each variable's rows -> its kernels (median bandwidths) -> its landmarks
    -> its features in a few directions (``_features``) -> every permuted pairing's cross
    products (``_pairings``: cyclic shifts in random bins, by FFT) -> every pair of kernels'
    HSIC -> the two-sample engine's ``decide`` (the rules, the p-value, the pair that
    decided) -> the effect size -> :class:`IndependenceTestResult`

The engine's pieces are reused as they are: a test brings its permuted statistics as a
:class:`~nystrom_kme.two_sample.engine.PermutedStatistics` (the B + 1 columns of every
pair of kernels; the rows on each side of a "split" are the n pairs) and its own
permutation scheme; the rules, the p-values and the kernel that decided are the
engine's. :func:`conditional_independence_test` (``conditional``) is the Nyström KCI.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from .. import defaults
from .._blas import one_blas_thread
from .._landmark_plan import DefaultLandmarks, plan_landmarks
from .._progress import progress_bar
from .._scaling import check_standardize, fit_scaling, warn_scales
from .._validation import RandomStateLike, check_random_state
from ..kernels import Kernel
from ..landmark_search import AutoLandmarks
from ..sampling import SamplerLike
from ..sources import RowSource, SourceLike, as_source, scaled
from ..two_sample.engine import LEVEL, PermutedStatistics, decide
from ._arguments import (
    DEFAULT_AGGREGATION,
    DEFAULT_SCALES,
    METHODS,
    Arguments,
    check_arguments,
    check_not_constant,
    resolve,
    same_rows,
)
from ._features import Features, build_features
from ._pairings import bins_and_shifts, cross_products, pair_statistics, pairings
from .conditional import ConditionalIndependenceResult, conditional_independence_test
from .results import AGGREGATIONS, Dependence, IndependenceTestResult

#: Each variable's default m: every row up to LANDMARKS rows, else LANDMARKS drawn
#: uniformly, fewer beyond 10^5 rows (the features' cost n m (d + Q) per kernel is kept
#: near that of 10^5 rows, at least MIN_LANDMARKS): the features keep a few tens of
#: directions, which a few hundred landmarks resolve.
LANDMARKS = 500
MIN_LANDMARKS = 250
LANDMARK_BUDGET = 5 * 10**7
#: The permutations' cost n Q_X Q_Y (times log 1024) is kept under this many pair-rows,
#: with at least MIN_PAIR_COMPONENTS pairs of directions (16 per variable from 10^5 rows
#: on), at most MAX_COMPONENTS per variable (up to 2.5 10^4 rows).
PAIR_BUDGET = 2.5 * 10**7
MIN_PAIR_COMPONENTS = 256
MAX_COMPONENTS = 32


@dataclass(frozen=True)
class Pair:
    """A pair of kernels as the engine's ``decide`` sees it (bounded when both are)."""

    x: Kernel
    y: Kernel

    @property
    def radial(self) -> bool:
        return bool(self.x.radial and self.y.radial)


def default_landmarks(n: int) -> DefaultLandmarks:
    """The default m rule at n rows: min(n, LANDMARKS), fewer beyond 10^5 rows.

    >>> default_landmarks(300)(300), default_landmarks(10**5)(10**5), default_landmarks(10**6)(10**6)
    (300, 500, 250)
    """
    m = min(LANDMARKS, max(MIN_LANDMARKS, LANDMARK_BUDGET // n))
    return DefaultLandmarks(low=m, high=m)


def component_cap(n: int, given: int | None) -> int:
    """Each variable's most directions: ``given``, else sqrt of the pair budget at n rows."""
    if given is not None:
        return given
    return min(MAX_COMPONENTS, int(math.isqrt(max(MIN_PAIR_COMPONENTS, int(PAIR_BUDGET // n)))))


def _variable(
    src: RowSource,
    kernels: list[Kernel],
    args: Arguments,
    n: int,
    rng: np.random.Generator,
    what: str,
) -> Features:
    """One variable's features: landmarks (every row for the exact method), then the basis."""
    if args.method == "exact":
        L = np.ascontiguousarray(src.take(np.arange(n)))
        return build_features(src, kernels, L, None, rng, args.n_threads, missed_variance=0.0, pca_rows=n)
    wanted: int | AutoLandmarks | None = args.auto if args.auto is not None else args.n_landmarks
    L = plan_landmarks(
        src,
        kernels,
        wanted,
        args.sampler,
        rng,
        args.n_threads,
        default=default_landmarks(n),
        rows=f"the {{n}} rows of {what}",
    )
    return build_features(src, kernels, L, component_cap(n, args.max_components), rng, args.n_threads)


def _dependence(
    fx: Features, fy: Features, D0: np.ndarray, k: int, ell: int, unbiased: np.ndarray, n: int
) -> Dependence:
    """The normalised HSIC of pair (k, ell) with its interval: the unbiased HSIC (the
    biased minus its permutation mean) +- z SE, SE^2 = 4 Var_i(w_i) / n (first order, w_i =
    phi(x_i)^T C psi(y_i)) + the permutation variance, over ||C_XX||_F ||C_YY||_F."""
    Gx, Gy = fx.grams[k], fy.grams[ell]
    C = Gx @ D0 @ Gy / n  # phi^T C psi in basis coordinates
    w = np.einsum("ia,ab,ib->i", fx.F, C, fy.F, optimize=True)
    variance = 4.0 * float(np.var(w)) / n + float(unbiased.std()) ** 2
    norm = float(fx.self_norms()[k] * fy.self_norms()[ell])
    z = NormalDist().inv_cdf(0.5 + LEVEL / 2)
    se = math.sqrt(max(variance, 0.0))
    u = float(unbiased[0])
    if norm <= 0:
        return Dependence(fx.kernels[k], fy.kernels[ell], 0.0, 0.0, 0.0, LEVEL)
    value = max(u, 0.0) / norm
    low = max(u - z * se, 0.0) / norm
    high = max(u + z * se, 0.0) / norm
    return Dependence(fx.kernels[k], fy.kernels[ell], value, min(low, value), max(high, value), LEVEL)


def independence_test(
    X: SourceLike,
    Y: SourceLike,
    *,
    kernel: object = "auto",
    method: str = "auto",
    n_landmarks: int | str | AutoLandmarks | None = None,
    n_permutations: int = defaults.N_PERMUTATIONS,
    aggregation: str | None = None,
    max_components: int | None = None,
    sampler: SamplerLike | None = None,
    alpha: float = defaults.ALPHA,
    effect: bool = True,
    standardize: bool | str = False,
    random_state: RandomStateLike = None,
    progress: bool | None = None,
    n_threads: int | None = None,
    chunk_rows: int | None = None,
) -> IndependenceTestResult:
    """Permutation test of H0: X and Y are independent (row i of X paired with row i of Y,
    the pairs i.i.d.), by the HSIC of kernels on X and on Y, aggregated over pairs of
    bandwidths, at Nyström cost.

    **The statistic.** For a kernel k on X and l on Y, HSIC = ||C||_F^2, C the
    cross-covariance of the centred features of k and l: the MMD^2 between the joint
    distribution and the product of its marginals for the product kernel. Each variable's
    features are Nyström features (m landmarks of that variable's own rows) kept in the Q
    directions that hold all but 0.1% of their variance; every pair of kernels reads the
    same Q_X x Q_Y cross product, so a permutation costs O(n Q_X Q_Y) for all pairs
    together, and nothing of size n x n or n x m is formed.

    **The null.** The pairing is permuted: cyclic shifts of Y within random bins of 1024
    rows (a group of permutations, so the level is exact), every shift of a bin from one
    FFT (:mod:`nystrom_kme.independence._pairings`).

    **The default** (``kernel="auto"``): Gaussian kernels at 0.5, 1 and 2 times each
    variable's median distance, the 9 pairs aggregated by the smallest marginal p-value
    ("mmdagg", HSICAgg's rule), calibrated by the same permutations (a wider grid loses
    power: docs/user_guide/independence.rst).

    Parameters
    ----------
    X : array-like (n, d_X) or source;  Y : array-like (n, d_Y) or source
        The same n rows (pairs), any widths: arrays, DataFrames, data files or any source
        of :mod:`nystrom_kme.sources`.
    kernel : "auto", Kernel, str, or a pair (X's, Y's)
        One kernel or name: the same family on both, each at its own median bandwidth (unless
        given). A pair: each "auto" (the default grid), a kernel, a name or a list of them:
        every pair of X's and Y's kernels is tested.
    method : {"auto", "nystrom", "exact"}, default="auto"
        "exact": every row a landmark and every direction kept: the HSIC of the full
        kernel matrices (O(n^3): small n only). "auto" and "nystrom": ``n_landmarks``
        landmarks per variable (every row up to 500 rows) and the directions of all but
        0.1% of the variance, at most sqrt(3 10^8 / n) of them (``max_components``).
    n_landmarks : int, None or "auto"
        m per variable (None: min(n, 500), down to 250 at 10^6 rows; "auto": the certified search of
        :mod:`nystrom_kme.landmark_search` for each variable's narrowest kernel).
    n_permutations : int, default=200
    aggregation : {"mmdagg", "maxz"} or None
        How several pairs combine (None: "mmdagg"); not for one pair.
    max_components : int or None
        At most this many feature directions per variable (None: the cost rule above).
    sampler : sampling policy name or object, or None
        How each variable's landmarks are drawn from its own rows (None: uniform without
        replacement).
    alpha : float, default=0.05
    effect : bool, default=True
        Also estimate the normalised HSIC of the pair that decided, with a 95% interval.
    standardize : bool or {"standard", "robust"}, default=False
        Centre and scale each variable's columns (its own statistics) first.
    random_state : None, int or numpy Generator
    progress : bool or None
        A progress bar over the permutations' pass over the rows (None: when stderr is a
        terminal).
    n_threads : int or None
    chunk_rows : int or None

    Returns
    -------
    IndependenceTestResult

    Notes
    -----
    Time O(n m (d + Q) K) for the features of K kernels per variable, plus O(n Q_X Q_Y log
    1024) for all permutations; memory O(n (Q_X + Q_Y) + B Q_X Q_Y).

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(3000, 2)); y = np.sin(2 * x[:, :1]) + rng.normal(size=(3000, 1))
    >>> res = nk.independence_test(x, y, n_permutations=99, random_state=0)
    >>> res.pvalue, res.reject
    (0.01, True)
    >>> nk.independence_test(x, rng.normal(size=(3000, 1)), n_permutations=99, random_state=0).reject
    False
    """
    args = check_arguments(
        kernel, method, n_landmarks, sampler, max_components, n_permutations, aggregation, alpha, n_threads, chunk_rows
    )
    kind = check_standardize(standardize)
    sx, sy = as_source(X, "X", chunk_rows=args.chunk_rows), as_source(Y, "Y", chunk_rows=args.chunk_rows)
    n = same_rows(sx, sy)
    check_not_constant(sx, "X")
    check_not_constant(sy, "Y")
    if kind is not None:  # each variable's own scales: a function of its rows alone, the level is kept
        sx, sy = scaled(sx, fit_scaling([sx], kind)), scaled(sy, fit_scaling([sy], kind))
    else:
        for src, given in ((sx, args.kernels_x), (sy, args.kernels_y)):
            warn_scales([src], [] if given is None else list(given), "independence_test")
    rng = check_random_state(random_state)
    with one_blas_thread():  # numpy's small factorisations and products: OpenBLAS thrashes on a busy machine
        return _run(args, sx, sy, n, rng, effect, progress)


def _run(
    args: Arguments,
    sx: RowSource,
    sy: RowSource,
    n: int,
    rng: np.random.Generator,
    effect: bool,
    progress: bool | None,
) -> IndependenceTestResult:
    """The test once its arguments and data are checked (see :func:`independence_test`)."""
    kernels_x = resolve(args.kernels_x, sx, rng)
    kernels_y = resolve(args.kernels_y, sy, rng)
    fx = _variable(sx, kernels_x, args, n, rng, "X")
    fy = _variable(sy, kernels_y, args, n, rng, "Y")
    bins, shifts = bins_and_shifts(n, args.n_permutations, rng)
    bar = progress_bar(n, progress, f"independence test, {args.n_permutations} permutations")
    try:
        D = cross_products(fx.F, fy.F, bins, shifts, None if bar is None else bar.update, args.n_threads)
    finally:
        if bar is not None:
            bar.close()
    T = pair_statistics(D, fx.grams, fy.grams, n)
    pairs = [Pair(a, b) for a in kernels_x for b in kernels_y]
    decision = decide(args.rule, PermutedStatistics(T, None, (n, n), n_pooled=n), pairs)
    j = decision.deciding
    k, ell = divmod(j, len(kernels_y))
    found = _dependence(fx, fy, D[0], k, ell, decision.unbiased[j], n) if effect else None
    exact = args.method == "exact"
    return IndependenceTestResult(
        statistic=decision.statistic,
        pvalue=decision.pvalue,
        null_distribution=decision.null,
        method="exact" if exact else "nystrom",
        aggregation=args.rule.name,
        kernels_x=kernels_x,
        kernels_y=kernels_y,
        pair_statistics=decision.kernel_statistics,
        pair_scores=decision.kernel_scores,
        pair_pvalues=decision.kernel_pvalues,
        n_rows=n,
        n_landmarks_x=fx.n_landmarks,
        n_landmarks_y=fy.n_landmarks,
        n_components_x=fx.n_components,
        n_components_y=fy.n_components,
        n_permutations=args.n_permutations,
        alpha=args.alpha,
        effect=found,
    )


__all__ = [
    "AGGREGATIONS",
    "DEFAULT_AGGREGATION",
    "LANDMARKS",
    "DEFAULT_SCALES",
    "METHODS",
    "ConditionalIndependenceResult",
    "Dependence",
    "IndependenceTestResult",
    "conditional_independence_test",
    "independence_test",
    "pairings",
]
