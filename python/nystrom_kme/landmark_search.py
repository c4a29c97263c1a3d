"""An a-posteriori number of landmarks: the smallest m (on a doubling path) whose
Nyström approximation error is negligible next to the statistical error of the
empirical embedding itself. ``NystromKME(n_landmarks="auto")`` runs it.

The paper's m = sqrt(n) log sqrt(n) (Corollary 4.1) is a worst-case rate. Here m is
chosen on the data, with two measured numbers:

* the **statistical error** sigma = (E ||mu_hat_n - mu||^2)^(1/2), where
  E ||mu_hat_n - mu||^2 = (E k(x, x) - E k(x, x')) / n for n i.i.d. rows (x, x'
  independent). Both expectations are estimated on a random subsample of s rows
  (default s = min(n, 2000)): the mean of k(x_i, x_i) and the U-statistic
  (1/(s(s-1))) sum_{i != j} k(x_i, x_j); together they form one U-statistic with
  kernel h(x, y) = (k(x, x) + k(y, y))/2 - k(x, y), whose standard error
  2 sd(h_1(x_i)) / sqrt(s) (Hoeffding's first projection) is reported.
  With ``sample_weight`` w the target is the weighted embedding sum_i p_i phi(x_i),
  p = w / sum(w), and for fixed weights E ||sum_i p_i phi(x_i) - mu||^2 =
  (E k(x, x) - E k(x, x')) sum_i p_i^2 = (...) / n_eff with the effective sample
  size n_eff = (sum_i w_i)^2 / sum_i w_i^2 (Kish). The expectations are then taken
  under the weighted distribution: the subsample is drawn proportionally to w
  (with replacement) and pairs of draws of the same row are left out of the
  U-statistic, which makes it unbiased for the weighted U-statistic
  sum_{i != j} p_i p_j k(x_i, x_j) / (1 - sum_i p_i^2). For importance weights
  (x_i drawn from another distribution) this is the usual n_eff approximation.
* the **approximation error**, measured on nested landmark sets
  S_0 c S_1 c ... with |S_{k+1}| = 2 |S_k|: the exact RKHS change
  delta_k = ||mu_{k+1} - mu_k|| between the Nyström embeddings on S_{k+1} and S_k,
  computed from their weights and the kernel matrix of S_{k+1} (O(m^2 d)).

The search stops at the first k with delta_k <= tol * sigma and returns mu_{k+1},
the embedding on the larger set. It also stops when delta_k is zero to round-off:
at most the round-off level of its own computation, (ROUNDOFF_FACTOR eps
|d|^T K |d|)^(1/2) for the weight difference d of the two embeddings (every kernel
of the package is non-negative), about 6e-8 |||d|||_K; more landmarks then
change nothing that float64 can see. That is what happens when sigma = 0 (the
kernel is constant on the data, e.g. constant rows), where the first step stops.

What is certified, and what is not. mu_k = P_k mu_hat_n is the orthogonal
projection of the empirical embedding onto span phi(S_k), and the spans are nested,
so mu_{k+1} - mu_k = (P_{k+1} - P_k) mu_hat_n is orthogonal to
mu_hat_n - mu_{k+1} and, with e_k = ||mu_hat_n - mu_k||,

    e_k^2 = delta_k^2 + e_{k+1}^2.

Hence delta_k <= e_k always: it is a lower bound on the error of mu_k, and the
error of the returned mu_{k+1} is e_{k+1} = (e_k^2 - delta_k^2)^(1/2) < e_k. The
rule claims e_{k+1} <= delta_k, which holds exactly when doubling the landmarks at
least halves the squared error, e_{k+1}^2 <= e_k^2 / 2 -- the regime of every
decay in Corollary 4.1 once m is past the first few eigenfunctions (the observed
ratios delta_k / delta_{k-1} are in ``LandmarkSearch.changes``). Under that
condition the returned embedding satisfies

    ||mu_{k+1} - mu|| <= ||mu_hat_n - mu|| + e_{k+1} <= ||mu_hat_n - mu|| + tol * sigma,

i.e. its error is within (1 + tol) of the empirical embedding's for a realised
statistical error near its RMS sigma (and, the two errors being nearly
orthogonal, typically within sqrt(1 + tol^2)). sigma is an estimate with the
reported standard error. Nothing is claimed when the search stops at
``max_landmarks`` without meeting the tolerance (``converged=False``, with a
warning), and nothing smaller than the data is certified when it meets it only at
m = n (``certified=False``: the embedding then has as many landmarks as rows).

The largest m tried is ``max_landmarks`` (default min(n, max(8192,
2 ceil(sqrt(n) log sqrt(n))))); m_0 defaults to ceil(sqrt(n)) (at least 8).

Cost: the kernel sums of each landmark are computed once, for the new landmarks
of each step only (``src.kernel_sums(L_new, ...)``), so all sums together cost one
fit at the final m; plus one solve per step (O(m^3), geometric: about 8/7 of the
final solve) and the O(s^2 d) subsample. A streamed source is read once per step.

Samplers. The sets come from the policy's ``nested_draws``. Uniform sampling (the
default, with or without replacement, weighted or not) draws one stream of indices
and takes prefixes (without replacement: the
order of E_i / w_i, E_i ~ Exp(1), i.e. successive sampling; O(n) memory for the
keys). The draws differ from those of a fit with a fixed m: same law, other numbers. The sequential policies
("rpcholesky", "greedy-cholesky", "dpp-greedy", "herding", "cortes-scott") are
rerun at each size from the same seed; their first m picks do not depend on how
many more follow, so the sets are prefixes of each other (their cost, O(n m^2)
per run, sums to about 4/3 of one run at the final m). "block-rpcholesky" (its
block size follows m below 128), "rls" (its regularisation follows m) and
callables need not nest: the change delta_k is then still computed exactly (on
the union of the two sets) but the orthogonality above does not hold, and each
step's new rows are summed afresh; ``LandmarkSearch.nested`` says which case
happened.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from . import _core
from ._compensated import CompensatedSum, fsum_dot
from ._validation import (
    RandomStateLike,
    Weights,
    check_random_state,
    check_sample_weight,
    common_dtype,
    n_threads_arg,
    normalised_weights,
)
from .bounds import default_n_landmarks
from .kernels import Kernel, resolve_kernel
from .sampling import Policy, as_policy
from .sources import RowSource, SourceLike, as_source

#: Default ``max_landmarks``: min(n, max(MAX_FLOOR, MAX_FACTOR ceil(sqrt(n) log sqrt(n)))).
MAX_FACTOR = 2
MAX_FLOOR = 8192
#: Default subsample size of the statistical-error estimate.
STAT_SAMPLES = 2000
#: A change delta with delta^2 <= ROUNDOFF_FACTOR eps |d|^T K |d| is zero to round-off:
#: kernel values (a few ulp), the core's compensated sums and the fsum dot each err
#: by about eps relative to |d|^T K |d|; 16 leaves a margin.
ROUNDOFF_FACTOR = 16.0


@dataclass(frozen=True)
class AutoLandmarks:
    """Settings of the a-posteriori search of ``NystromKME(n_landmarks=AutoLandmarks(...))``;
    ``n_landmarks="auto"`` is ``AutoLandmarks()``. See :mod:`nystrom_kme.landmark_search`.

    Parameters
    ----------
    tol : float > 0, default=0.1
        Stop when the change of the embedding between two nested landmark sets is at
        most ``tol`` times the estimated statistical error (both RKHS norms).
    initial : int or None, default=None
        m of the first set; None: ceil(sqrt(n)) (at least 8, at most ``max_landmarks``).
    max_landmarks : int or None, default=None
        Largest m tried; None: min(n, max(8192, 2 ceil(sqrt(n) log sqrt(n)))). K_m
        takes 8 m^2 bytes (0.5 GiB at m = 8192) and each solve O(m^3).
    stat_samples : int >= 2, default=2000
        Subsample size s of the statistical-error estimate (O(s^2 d) time, O(s d) memory).

    Examples
    --------
    >>> import nystrom_kme as nk
    >>> nk.AutoLandmarks(tol=0.05)
    AutoLandmarks(tol=0.05, initial=None, max_landmarks=None, stat_samples=2000)
    """

    tol: float = 0.1
    initial: int | None = None
    max_landmarks: int | None = None
    stat_samples: int = STAT_SAMPLES

    def __post_init__(self) -> None:
        if isinstance(self.tol, bool) or not isinstance(self.tol, (int, float, np.floating, np.integer)) \
                or not (math.isfinite(float(self.tol)) and float(self.tol) > 0):
            raise ValueError(f"tol must be a positive finite number, got {self.tol!r}")
        for name in ("initial", "max_landmarks"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, np.integer))
                                      or value < 1):
                raise ValueError(f"{name} must be a positive integer or None, got {value!r}")
        s = self.stat_samples
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 2:
            raise ValueError(f"stat_samples must be an integer >= 2, got {s!r}")


def as_auto_spec(n_landmarks: object) -> AutoLandmarks | None:
    """The search settings when ``n_landmarks`` asks for the search ("auto" or an
    :class:`AutoLandmarks`), else None."""
    if isinstance(n_landmarks, AutoLandmarks):
        return n_landmarks
    if isinstance(n_landmarks, str) and n_landmarks == "auto":
        return AutoLandmarks()
    return None


@dataclass(frozen=True)
class StatisticalError:
    """Estimate of the statistical error of the empirical embedding,
    sigma = (E ||mu_hat_n - mu||^2)^(1/2) = ((E k(x,x) - E k(x,x')) / n_eff)^(1/2).

    Attributes
    ----------
    value : float
        sigma, an RKHS norm.
    std_error : float
        Standard error of ``value`` (delta method on the U-statistic's).
    squared : float
        sigma^2 (unbiased estimate; may be 0 when the kernel is constant on the data).
    n_effective : float
        n (unweighted) or (sum w)^2 / sum w^2.
    n_used : int
        Rows of the subsample.

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> X = np.random.default_rng(0).normal(size=(4000, 2))
    >>> err = nk.estimate_statistical_error(X, nk.Gaussian(1.0), random_state=0)
    >>> err.n_effective, bool(err.std_error < err.value)
    (4000.0, True)
    """

    value: float
    std_error: float
    squared: float
    n_effective: float
    n_used: int

    def __repr__(self) -> str:
        return (f"StatisticalError({self.value:.4g} ± {self.std_error:.2g}, "
                f"n_effective={self.n_effective:.6g}, n_used={self.n_used})")


def _statistical_error(src: RowSource, kernel: Kernel, weights: np.ndarray | None, n_samples: int,
                       rng: np.random.Generator, n_threads: int) -> StatisticalError:
    n = src.count_rows()
    core = kernel.to_core()
    if weights is None:
        s = min(n, n_samples)
        idx = np.sort(rng.choice(n, size=s, replace=False)) if s < n else np.arange(n)
        n_eff = float(n)
        mult = np.ones(s)
    else:
        p = normalised_weights(weights)
        s = n_samples
        idx = np.sort(rng.choice(n, size=s, p=p))
        n_eff = 1.0 / float(np.sum(p * p))
        _, inverse, counts = np.unique(idx, return_inverse=True, return_counts=True)
        mult = counts[inverse].astype(np.float64)
    if s < 2:
        raise ValueError(f"the statistical error needs at least 2 rows, got {n}")
    S = np.ascontiguousarray(src.take(idx))
    diag = np.asarray(_core.kernel_diagonal(S, core, n_threads), dtype=np.float64)
    rows = np.asarray(_core.kernel_row_sums(S, S, core, n_threads), dtype=np.float64)
    off = rows - mult * diag            # pairs of draws of different rows only
    pairs = s - mult
    if not (pairs > 0).any():
        raise ValueError("sample_weight puts all its mass on one row: the statistical error "
                         "is undefined (n_eff = 1)")
    b_hat = float(off.sum() / pairs.sum())
    a_hat = float(diag.mean())
    theta = max(0.0, a_hat - b_hat)
    r = np.where(pairs > 0, off / np.maximum(pairs, 1.0), b_hat)
    g = 0.5 * (diag + a_hat) - r
    se_theta = 2.0 * float(np.std(g, ddof=1)) / math.sqrt(s)
    sq = theta / n_eff
    value = math.sqrt(sq)
    se_sq = se_theta / n_eff
    se = se_sq / (2.0 * value) if value > 0 else math.sqrt(se_sq)
    return StatisticalError(value=value, std_error=se, squared=sq, n_effective=n_eff, n_used=int(s))


def estimate_statistical_error(X: SourceLike, kernel: Kernel | str = "gaussian", *,
                               sample_weight: ArrayLike | None = None,
                               max_samples: int = STAT_SAMPLES, random_state: RandomStateLike = None,
                               n_threads: int | None = None) -> StatisticalError:
    """Estimate sigma = (E ||mu_hat_n - mu||^2)^(1/2), the RMS error of the empirical
    embedding (1/n) sum_i phi(x_i) (or sum_i p_i phi(x_i) with weights), from a
    subsample. See :mod:`nystrom_kme.landmark_search` for the estimator.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features), or any row source
    kernel : Kernel or str, default="gaussian"
        A name uses the median heuristic (drawn from ``random_state``).
    sample_weight : array-like of shape (n_samples,), optional
        Non-negative weights; then n is replaced by n_eff = (sum w)^2 / sum w^2.
    max_samples : int >= 2, default=2000
        Subsample size s: O(s^2 d) time, O(s d) memory.
    random_state : None, int or numpy Generator
    n_threads : int or None

    Returns
    -------
    StatisticalError

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> X = np.random.default_rng(0).normal(size=(10_000, 2))
    >>> est = nk.estimate_statistical_error(X, nk.Gaussian(1.0), random_state=0)
    >>> 0.005 < est.value < 0.01        # closed form: sqrt((1 - 1/sqrt(5)) / 10^4) = 0.0074
    True
    """
    rng = check_random_state(random_state)
    if isinstance(max_samples, bool) or not isinstance(max_samples, (int, np.integer)) or max_samples < 2:
        raise ValueError(f"max_samples must be an integer >= 2, got {max_samples!r}")
    src = as_source(X, "X")
    w = check_sample_weight(sample_weight, src.count_rows())
    if w is not None:
        w = np.asarray(w, dtype=np.float64)
    kern = resolve_kernel(kernel, [src], rng)
    return _statistical_error(src, kern, w, int(max_samples), rng, n_threads_arg(n_threads))


@dataclass(frozen=True, repr=False)
class LandmarkSearch:
    """What ``NystromKME(n_landmarks="auto")`` found (its ``n_landmarks_report_``).

    Attributes
    ----------
    n_landmarks : int
        m of the returned embedding (the larger set of the last step).
    approximation_error : float
        delta = ||mu_m - mu_{m/2}|| at the last step (RKHS norm): the certified
        bound on the returned embedding's distance to the empirical one when doubling
        halves the squared error (see the module documentation).
    statistical_error : StatisticalError
        sigma, the RMS error of the empirical embedding, with its standard error.
    ratio : float
        approximation_error / statistical_error.value (when sigma = 0: 0 for a change
        that is zero to round-off, else inf).
    tol : float
        The stopping tolerance on ``ratio``.
    converged : bool
        ratio <= tol, a change zero to round-off, or every row became a landmark;
        False when ``max_landmarks`` stopped the search.
    certified : bool
        Converged with fewer landmarks than rows (m < n): the search certifies that
        m landmarks suffice. False when it did not converge, or converged only at
        m = n (nothing smaller met the tolerance: the Nyström embedding is then no
        cheaper than the empirical one).
    round_off : float
        The round-off level of the last change (see the module documentation); a
        change at most this is zero to round-off (nan when no change was measured).
    stop : str
        Why the search stopped: "tolerance" (change <= tol x sigma), "round-off" (the
        change is zero to round-off), "exhausted" (a pivoted-Cholesky sampler found no
        further landmark: the kernel matrix is exhausted to its tolerance), "every row"
        (sampling without replacement took all n rows: exact), or "max_landmarks"
        (not converged).
    path : tuple of int
        m at each step, doubling: (m_0, 2 m_0, 4 m_0, ...), the last one possibly capped.
    changes : tuple of float
        delta_k = ||mu_{m_{k+1}} - mu_{m_k}||, one per step after the first.
    nested : bool
        Whether every set contained the previous one.
    seconds : float
        Wall time of the search (sums, solves and the statistical estimate).

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> X = np.random.default_rng(0).normal(size=(5000, 2))
    >>> kme = nk.NystromKME(nk.Gaussian(1.0), n_landmarks="auto", random_state=0).fit(X)
    >>> rep = kme.n_landmarks_report_
    >>> rep.converged, rep.n_landmarks == kme.landmarks_.shape[0], rep.ratio <= 0.1
    (True, True, True)
    """

    n_landmarks: int
    approximation_error: float
    statistical_error: StatisticalError
    ratio: float
    tol: float
    converged: bool
    path: tuple[int, ...]
    changes: tuple[float, ...]
    nested: bool
    seconds: float
    certified: bool
    round_off: float
    stop: str

    def __repr__(self) -> str:
        state = ("" if self.certified else ", NOT certified below m = n (every row a landmark)"
                 if self.converged else ", NOT converged (max_landmarks reached)")
        return (f"LandmarkSearch(m={self.n_landmarks}, approximation {self.approximation_error:.3g} "
                f"<= {self.ratio:.3g} x statistical error {self.statistical_error.value:.3g} "
                f"(± {self.statistical_error.std_error:.2g}), tol={self.tol:g}, "
                f"path={list(self.path)}, {self.seconds:.3g} s{state})")

    def explain(self) -> str:
        """A paragraph a user can quote (also ``str(report)``; the CLI prints it).

        Examples
        --------
        >>> import numpy as np, nystrom_kme as nk
        >>> X = np.ones((400, 2))                      # constant rows: sigma = 0
        >>> rep = nk.NystromKME(nk.Gaussian(1.0), n_landmarks="auto").fit(X).n_landmarks_report_
        >>> rep.n_landmarks, rep.certified, "zero to round-off" in rep.explain()
        (40, True, True)
        """
        st = self.statistical_error
        head = (f"m = {self.n_landmarks}: the embedding changed by {self.approximation_error:.3g} "
                f"(RKHS norm) between the last two nested landmark sets, "
                f"{self.ratio:.3g} x the estimated statistical error {st.value:.3g} ± {st.std_error:.2g} "
                f"of the empirical embedding (n_eff = {st.n_effective:.6g}, from {st.n_used} rows); "
                f"tolerance {self.tol:g}.")
        if not self.converged:
            return head + (" The search stopped at max_landmarks before meeting the tolerance: "
                           "nothing is certified; raise max_landmarks or tol.")
        if self.stop == "every row":
            body = " The approximation is exact: every row is a landmark."
        elif self.stop == "exhausted":
            body = (" The approximation is exact to the sampler's tolerance: it found no further "
                    "landmark (the kernel matrix is exhausted).")
        elif self.stop == "round-off":
            body = (f" That change is zero to round-off (at most {self.round_off:.2g}, the round-off "
                    "level of its computation): more landmarks change nothing float64 can see.")
        else:
            body = (" Approximation <= "
                    f"{self.ratio:.2g} x statistical error, provided doubling the landmarks "
                    "at least halves the squared approximation error (changes along the path: "
                    + ", ".join(f"{c:.3g}" for c in self.changes) + ").")
        if not self.certified:
            body += (f" NOT certified below m = n: no landmark set smaller than the {self.n_landmarks} rows "
                     "met the tolerance, so this Nyström embedding is no cheaper than the empirical "
                     "one (EmpiricalKME); a larger tol would allow fewer landmarks.")
        return head + body

    def __str__(self) -> str:
        return self.explain()


@dataclass(frozen=True)
class SearchResult:
    """What :func:`search_landmarks` found: the final landmark set, its sums and solve.

    Attributes
    ----------
    indices : ndarray of shape (m,), int64
        Rows of the source.
    landmarks : ndarray of shape (m, n_features)
    sums : CompensatedSum of shape (m,)
        sum_i w_i k(l_j, x_i).
    weight_sum : float
        sum_i w_i.
    solution : tuple
        The core's (alpha (m, 1), solver used, rank) for these landmarks and sums.
    report : LandmarkSearch
    """

    indices: np.ndarray
    landmarks: np.ndarray
    sums: CompensatedSum
    weight_sum: float
    solution: tuple[np.ndarray, str, int]
    report: LandmarkSearch


def search_landmarks(src: RowSource, kernel: Kernel, policy: Policy, rng: np.random.Generator, *,
                     spec: AutoLandmarks, sample_weight: Weights | None, solver: str, rcond: float,
                     n_threads: int) -> SearchResult:
    """Run the doubling search over ``src`` (the engine of ``n_landmarks="auto"`` in
    :class:`~nystrom_kme.NystromKME` and :func:`~nystrom_kme.two_sample_test`).

    Parameters
    ----------
    src : RowSource of n rows (any source of :mod:`nystrom_kme.sources`)
    kernel : Kernel with a numeric bandwidth
    policy : SamplingPolicy, or an object with ``select_indices`` (a private copy:
        non-uniform policies keep their last run's state); its ``nested_draws`` give the sets
    rng : numpy Generator, consumed by the statistical subsample, then the draws
    spec : AutoLandmarks
    sample_weight : ndarray of shape (n,) or None (validated by the caller)
    solver, rcond, n_threads : as for ``_core.nystrom_weights``

    Returns
    -------
    SearchResult
    """
    start = time.perf_counter()
    n = src.count_rows()
    weights = None if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    drawer = as_policy(policy)
    if drawer.needs_data_in_memory and src.to_array() is None:
        raise ValueError(f"n_landmarks='auto' with sampler {policy!r} needs all of X in memory; "
                         "with a streamed source use sampler='uniform'")
    cap = (min(n, max(MAX_FLOOR, MAX_FACTOR * default_n_landmarks(n))) if spec.max_landmarks is None
           else spec.max_landmarks)
    if spec.max_landmarks is not None and cap > n:
        raise ValueError(f"max_landmarks={cap} exceeds n_samples={n}")
    stream = drawer.nested_draws(src, kernel, rng, sample_weight=weights, max_landmarks=cap)
    cap = stream.max_landmarks  # no draw yet: they come after the statistical subsample's
    m = spec.initial if spec.initial is not None else max(8, math.ceil(math.sqrt(n)))
    if spec.initial is not None and m > cap:
        raise ValueError(f"initial={m} exceeds max_landmarks={cap}")
    m = min(m, cap)

    stat = _statistical_error(src, kernel, weights, spec.stat_samples, rng, n_threads)
    core = kernel.to_core()
    cache_sum: dict[int, float] = {}
    cache_comp: dict[int, float] = {}
    total = [math.nan]

    def sums_of(idx: np.ndarray) -> CompensatedSum:
        new = np.unique(idx[~np.isin(idx, np.fromiter(cache_sum, dtype=np.int64, count=len(cache_sum)))])
        if new.size:
            acc, tot = src.kernel_sums(np.ascontiguousarray(src.take(new)), kernel, weights=sample_weight,
                                       n_threads=n_threads)
            total[0] = tot
            for i, a, c in zip(new.tolist(), acc.sum.tolist(), acc.comp.tolist()):
                cache_sum[i], cache_comp[i] = a, c
        out = CompensatedSum((idx.size,))
        out.sum = np.array([cache_sum[i] for i in idx.tolist()])
        out.comp = np.array([cache_comp[i] for i in idx.tolist()])
        return out

    def solve(idx: np.ndarray) -> tuple[np.ndarray, tuple[np.ndarray, str, int], CompensatedSum]:
        acc = sums_of(idx)
        L = np.ascontiguousarray(src.take(idx))
        if not (math.isfinite(total[0]) and total[0] > 0):
            raise ValueError("sample_weight: the total weight must be positive and finite")
        s = acc.value() / total[0]
        return L, _core.nystrom_weights(L, s.reshape(-1, 1), core, solver, rcond, 1e-12, n_threads), acc

    idx = stream.get(m)
    L, sol, acc = solve(idx)
    path, changes = [int(idx.size)], []
    nested, converged, delta, round_off, stop = True, False, math.inf, math.nan, "max_landmarks"
    while True:
        m_next = min(2 * idx.size, cap)
        if m_next <= idx.size:
            break
        idx_next = stream.get(m_next)
        if idx_next.size <= idx.size:  # a pivoted Cholesky reached the numerical rank
            converged, delta, stop = True, 0.0, "exhausted"
            break
        L_next, sol_next, acc_next = solve(idx_next)
        is_nested = np.array_equal(idx_next[:idx.size], idx)
        nested = nested and is_nested
        delta, round_off = _change(L, sol[0][:, 0], L_next, sol_next[0][:, 0], is_nested, core, n_threads)
        path.append(int(idx_next.size))
        changes.append(delta)
        idx, L, sol, acc = idx_next, L_next, sol_next, acc_next
        everything = stream.exhaustive and idx.size == n
        if delta <= spec.tol * stat.value or delta <= round_off or everything:
            converged = True
            stop = ("every row" if everything else "tolerance" if delta <= spec.tol * stat.value
                    else "round-off")
            if everything:
                delta = 0.0
            break
    if not changes and not converged:  # a single set (the cap at once): no change measured
        exact = stream.exhaustive and idx.size == n
        delta, converged = (0.0, True) if exact else (math.inf, False)
        stop = "every row" if exact else stop
    if stat.value > 0:
        ratio = delta / stat.value
    else:
        ratio = 0.0 if delta == 0 or delta <= round_off else math.inf
    if not converged:
        warnings.warn(f"n_landmarks='auto' stopped at max_landmarks={cap} with the approximation "
                      f"{ratio:.3g} x the statistical error (tol={spec.tol:g}); raise "
                      "AutoLandmarks(max_landmarks=...) or tol", RuntimeWarning, stacklevel=4)
    report = LandmarkSearch(n_landmarks=int(idx.size), approximation_error=float(delta),
                            statistical_error=stat, ratio=float(ratio), tol=float(spec.tol),
                            converged=bool(converged), path=tuple(path), changes=tuple(changes),
                            nested=bool(nested), seconds=time.perf_counter() - start,
                            certified=bool(converged and idx.size < n), round_off=float(round_off),
                            stop=stop)
    return SearchResult(indices=idx, landmarks=L, sums=acc, weight_sum=float(total[0]), solution=sol,
                        report=report)


def _change(L: np.ndarray, alpha: np.ndarray, L_next: np.ndarray, alpha_next: np.ndarray,
            is_nested: bool, core: _core.Kernel, n_threads: int) -> tuple[float, float]:
    """(delta, round_off): delta = ||sum_j alpha_next_j phi(L_next_j) - sum_j alpha_j phi(L_j)||,
    as d^T K d on the union of the two supports (the larger set when nested): no
    cancellation between the three terms alpha^T K alpha - 2 alpha^T K beta + beta^T K beta;
    round_off = (ROUNDOFF_FACTOR eps |d|^T K |d|)^(1/2), the level below which the
    computed delta cannot be told from 0 (K >= 0; both from one pass of the core)."""
    if is_nested:
        points, d = L_next, alpha_next.copy()
        d[:alpha.size] -= alpha
    else:
        points, d = np.concatenate(common_dtype(L_next, L)), np.concatenate([alpha_next, -alpha])
    points = np.ascontiguousarray(points)
    K_d = _core.kernel_sums(points, points, np.ascontiguousarray(np.stack([d, np.abs(d)], axis=1)),
                            core, n_threads)
    delta = math.sqrt(max(0.0, fsum_dot(d, K_d[:, 0])))
    bound = fsum_dot(np.abs(d), K_d[:, 1])
    return delta, math.sqrt(ROUNDOFF_FACTOR * np.finfo(np.float64).eps * max(bound, 0.0))


__all__ = ["AutoLandmarks", "LandmarkSearch", "SearchResult", "StatisticalError", "estimate_statistical_error",
           "search_landmarks"]
