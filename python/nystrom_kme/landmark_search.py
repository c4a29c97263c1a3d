"""An a-posteriori number of landmarks: the smallest m whose Nyström embedding is, at a
stated confidence, as good as the empirical embedding up to a set fraction of the
latter's own statistical error. ``NystromKME(n_landmarks="auto")`` runs it.

The paper's m = sqrt(n) log sqrt(n) (Corollary 4.1) is a worst-case rate. Here m is
measured on the data.

**The question.** With mu the true embedding, mu_hat_n the empirical one and
sigma^2 = E ||mu_hat_n - mu||^2 its mean squared (statistical) error, the Nyström
embedding mu_m = P_m mu_hat_n (the orthogonal projection on the landmarks' span) has

    ||mu_m - mu||^2 = ||mu_hat_n - mu||^2 + e(m)^2 - 2 <mu_hat_n - mu_m, mu_hat_n - mu>,

with e(m) = ||mu_hat_n - mu_m||. The last term is a cross term between the residual
and the sample's noise, small against e(m)^2: measured on the Section 6.1 mixture,
digits and a d = 50 mixture, the excess ||mu_m - mu||^2 - ||mu_hat_n - mu||^2 is
e(m)^2 within a few percent (``bench/RESULTS.md``). So the target "the Nyström
embedding's RMS error within 10% of the empirical one's", E ||mu_m - mu||^2 <=
1.1^2 sigma^2, is e(m) <= tol sigma with tol = (1.1^2 - 1)^(1/2) = 0.458
(``AutoLandmarks(within=0.1)``, the default; ``tol`` sets the ratio directly). It is a
statement in expectation: for one sample, whose own error ||mu_hat_n - mu|| may be
below sigma, the ratio of the two errors may exceed 1.1 while the excess stays below
0.21 sigma^2.

**The certificate** (:mod:`nystrom_kme._certificate`). At every m of the landmark
path, e(m)^2 = ||mu_hat_n||^2 - ||P_m mu_hat_n||^2 (the projection identity). The
second term is exact for every prefix of the landmarks at once
(:mod:`nystrom_kme._nested_projection`, one in-order pivoted Cholesky factorization);
the first is estimated without bias from rows drawn from the data whose kernel sums
are known -- the landmarks themselves for the uniform samplers (each validates the
landmarks before it), 256 independent probe rows for the others -- with a standard
error. The search stops at the first m where the upper bound (the estimate plus z
standard errors, z the normal quantile of ``confidence`` with a correction for the
residuals' skewness) is at most tol^2 sigma_hat^2. Each bound holds with probability
about ``confidence`` (0.99 by default; a central-limit approximation over the draws);
the returned m is the first of several bounds that passed, and the measured rate at
which its bound holds is 98-99% on the mixture, digits and a 3-d set with a local
kernel (``bench/RESULTS.md``). sigma_hat comes from the same estimate of
||mu_hat_n||^2 (:mod:`nystrom_kme._statistical_error`): sigma^2 = q (E k(x,x) -
E k(x,x')), q = sum_i p_i^2 = 1/n_eff. Not covered: a mass of rows below about 1/k (k
the values behind the bound, at least 64) that no draw has met and that carries e^2;
where m is a sizable fraction of n the residual sits on the few rows left and the
bound covers less often.

**The returned weights.** The bound is for the path's projection, which skips
landmarks within 1e-8 of the span of the earlier ones. The fit keeps the weights of
the core's solver (``solver``, ``rcond``), whose squared error differs from the
path's by exactly delta^T K delta + 2 delta^T r (delta the difference of the weights,
r the solver's residual at the landmarks, O(m^2 d)); the report's bound includes that
shift and a random-walk allowance for its rounding. Where the solver's weights could
not be certified but the path's are, the path's are returned (``weights="path"``).

**Round-off.** Where both the bound and E k(x,x) - ||mu_hat_n||^2 are zero to
round-off (:func:`~nystrom_kme._certificate.round_off_level`: 64 eps kappa r, not
scaled by the weights), the kernel is constant on the data (sigma = 0) and the
embedding exact: certified. A bound at round-off level that still exceeds
tol^2 sigma_hat^2 stops the search (more landmarks change nothing float64 can see)
without a certificate.

**The path.** Landmarks join in blocks from the policy's ``nested_draws``: 64, then
blocks of 5% of m (at least 16), the bound checked at each block's end; their kernel
sums are computed in chunks of 64 landmarks (four of the core's tasks; the same chunks
on any number of threads, so the search's bits do not depend on it), so the sums cost
one fit at the returned m plus at most one chunk. The first bound needs 64
values, so the smallest m returned with uniform samplers is 80. The largest is
``max_landmarks`` (default min(n, max(8192, 2 ceil(sqrt(n) log sqrt(n))))).

**Samplers.** Uniform sampling (the default, with or without replacement, weighted or
not) draws one stream whose prefixes are the sets. The sequential policies
("rpcholesky", "greedy-cholesky", "dpp-greedy", "herding", "cortes-scott") are
rerun at doubling sizes from one seed: their first m picks do not depend on how many
follow, so every prefix of the last run is a set of that policy. "block-rpcholesky"
below 128 landmarks, "rls" and callables need not nest: the factorization then starts
again on the new run (``LandmarkSearch.nested`` is False). They are certified with the
probes, whose sums cost 256 landmarks' worth.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass

import numpy as np

from . import _core
from ._blas import one_blas_thread
from ._compensated import CompensatedSum, fsum_dot
from ._search_path import CertifiedPath, RowSums
from ._statistical_error import (
    StatisticalError,
    estimate_statistical_error,
    subsample_statistical_error,
)
from ._validation import Weights, normalised_weights
from .bounds import default_n_landmarks
from .kernels import Kernel
from .sampling import Policy, as_policy
from .sources import RowSource

#: Default ``max_landmarks``: min(n, max(MAX_FLOOR, MAX_FACTOR ceil(sqrt(n) log sqrt(n)))).
MAX_FACTOR = 2
MAX_FLOOR = 8192
#: m of the first block of landmarks (the window of the certificate needs 64 values).
FIRST_BLOCK = 64
#: The round-off allowance of the solver's shift (see _solver_shift).
SHIFT_SLACK = 8.0
EPS = float(np.finfo(np.float64).eps)
#: The default target: the Nyström embedding's RMS error within 10% of the empirical one's.
DEFAULT_WITHIN = 0.1


def _is_number(x: object) -> bool:
    return not isinstance(x, bool) and isinstance(x, (int, float, np.floating, np.integer))


@dataclass(frozen=True)
class AutoLandmarks:
    """Settings of the a-posteriori search of ``NystromKME(n_landmarks=AutoLandmarks(...))``;
    ``n_landmarks="auto"`` is ``AutoLandmarks()``. See :mod:`nystrom_kme.landmark_search`.

    Parameters
    ----------
    tol : float > 0 or None, default=None
        The bound to certify on e / sigma, the Nyström embedding's distance to the
        empirical one over the latter's statistical error. None: from ``within``.
    initial : int or None, default=None
        m of the first block of landmarks; None: 32 (at most ``max_landmarks``).
    max_landmarks : int or None, default=None
        Largest m tried; None: min(n, max(8192, 2 ceil(sqrt(n) log sqrt(n)))). The
        factorization takes 8 m^2 bytes (0.5 GiB at m = 8192) and O(m^3) time.
    stat_samples : int >= 2 or None, default=None
        None: sigma from the search's own estimate of ||mu_hat_n||^2 (no extra cost).
        An int s: from a subsample of s rows instead (O(s^2 d); as
        :func:`~nystrom_kme.estimate_statistical_error`).
    within : float > 0 or None, default=None
        The target as a fraction: the Nyström embedding's RMS error at most
        (1 + within) times the empirical embedding's, i.e.
        tol = ((1 + within)^2 - 1)^(1/2). None: 0.1 (tol = 0.458) unless ``tol`` is set.
    confidence : float in (0.5, 1), default=0.95
        Confidence of the upper bound on e.

    Examples
    --------
    >>> import nystrom_kme as nk
    >>> round(nk.AutoLandmarks().ratio_bound, 4)         # within 10%: ((1.1)^2 - 1)^(1/2)
    0.4583
    >>> round(nk.AutoLandmarks(within=0.05).ratio_bound, 4), nk.AutoLandmarks(tol=0.1).ratio_bound
    (0.3202, 0.1)
    """

    tol: float | None = None
    initial: int | None = None
    max_landmarks: int | None = None
    stat_samples: int | None = None
    within: float | None = None
    confidence: float = 0.99

    def __post_init__(self) -> None:
        for name in ("tol", "within"):
            value = getattr(self, name)
            if value is not None and not (_is_number(value) and math.isfinite(float(value)) and float(value) > 0):
                raise ValueError(f"{name} must be a positive finite number or None, got {value!r}")
        if self.tol is not None and self.within is not None:
            raise ValueError("give tol (the bound on e / sigma) or within (the excess RMS error), not both")
        for name in ("initial", "max_landmarks"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1):
                raise ValueError(f"{name} must be a positive integer or None, got {value!r}")
        s = self.stat_samples
        if s is not None and (isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 2):
            raise ValueError(f"stat_samples must be an integer >= 2 or None, got {s!r}")
        c = self.confidence
        if not (_is_number(c) and 0.5 < float(c) < 1):
            raise ValueError(f"confidence must be a number in (0.5, 1), got {c!r}")

    @property
    def ratio_bound(self) -> float:
        """The certified bound on e / sigma: ``tol``, or ((1 + within)^2 - 1)^(1/2)."""
        if self.tol is not None:
            return float(self.tol)
        within = DEFAULT_WITHIN if self.within is None else float(self.within)
        return math.sqrt((1.0 + within) ** 2 - 1.0)


def as_auto_spec(n_landmarks: object) -> AutoLandmarks | None:
    """The search settings when ``n_landmarks`` asks for the search ("auto" or an
    :class:`AutoLandmarks`), else None."""
    if isinstance(n_landmarks, AutoLandmarks):
        return n_landmarks
    if isinstance(n_landmarks, str) and n_landmarks == "auto":
        return AutoLandmarks()
    return None


@dataclass(frozen=True, repr=False)
class LandmarkSearch:
    """What ``NystromKME(n_landmarks="auto")`` found (its ``n_landmarks_report_``).

    Attributes
    ----------
    n_landmarks : int
        m of the returned embedding.
    approximation_error : float
        The upper bound, at ``confidence``, on e = ||mu_hat_n - mu_m|| (RKHS norm) of the
        returned embedding (0 when every row is a landmark).
    estimate : float
        The point estimate of e (its square clamped at 0).
    statistical_error : StatisticalError
        sigma, the RMS error of the empirical embedding, with its standard error.
    ratio : float
        approximation_error / statistical_error.value (when sigma = 0: 0 for an error
        zero to round-off, else inf).
    tol : float
        The bound to certify on ``ratio`` (0.458: RMS error within 10%).
    confidence : float
    converged : bool
        The search stopped on its own: the bound was met ("tolerance"), or nothing more
        could be gained ("round-off", "exhausted", "every row"); False when
        ``max_landmarks`` stopped it.
    certified : bool
        ratio <= tol (or both errors zero to round-off) with fewer landmarks than rows.
    round_off : float
        The round-off level of the squared error's estimate (see the module documentation).
    stop : str
        "tolerance", "round-off" (the bound is at round-off level), "exhausted" (a
        pivoted-Cholesky sampler found no further landmark), "every row" (sampling
        without replacement took all n rows: exact), or "max_landmarks".
    path : tuple of int
        m at the end of each block of landmarks (the bound is evaluated at every m).
    path_ratios : tuple of float
        The bound on e / sigma_hat at each m of ``path`` (inf before enough values).
    validation : str
        "landmarks" (each landmark validates the ones before it) or "probes" (independent rows).
    n_validation : int
        The values behind the last bound.
    weights : str
        "solver": the core solver's weights (``solver``, ``rcond``), certified through their
        exact distance to the path's projection; "path": the path's own (an in-order
        pivoted Cholesky, solver "cholesky"), where the solver's could not be certified as close.
    nested : bool
        Whether every draw of the sampler extended the previous one.
    seconds : float
        Wall time of the search.

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> X = np.random.default_rng(0).normal(size=(5000, 2))
    >>> kme = nk.NystromKME(nk.Gaussian(1.0), n_landmarks="auto", random_state=0).fit(X)
    >>> rep = kme.n_landmarks_report_
    >>> rep.certified, rep.n_landmarks == kme.landmarks_.shape[0], rep.ratio <= rep.tol
    (True, True, True)
    """

    n_landmarks: int
    approximation_error: float
    estimate: float
    statistical_error: StatisticalError
    ratio: float
    tol: float
    confidence: float
    converged: bool
    certified: bool
    round_off: float
    stop: str
    path: tuple[int, ...]
    path_ratios: tuple[float, ...]
    validation: str
    n_validation: int
    weights: str
    nested: bool
    seconds: float

    def __repr__(self) -> str:
        state = (
            ""
            if self.certified
            else ", NOT certified below m = n (every row a landmark)"
            if self.stop == "every row"
            else ", NOT certified"
            if self.converged
            else ", NOT converged (max_landmarks reached)"
        )
        return (
            f"LandmarkSearch(m={self.n_landmarks}, approximation <= {self.approximation_error:.3g} "
            f"= {self.ratio:.3g} x statistical error {self.statistical_error.value:.3g} "
            f"(± {self.statistical_error.std_error:.2g}), tol={self.tol:.3g} at {self.confidence:g}, "
            f"{self.seconds:.3g} s{state})"
        )

    def explain(self) -> str:
        """A paragraph a user can quote (also ``str(report)``; the CLI prints it).

        Examples
        --------
        >>> import numpy as np, nystrom_kme as nk
        >>> X = np.ones((400, 2))                      # constant rows: sigma = 0
        >>> rep = nk.NystromKME(nk.Gaussian(1.0), n_landmarks="auto").fit(X).n_landmarks_report_
        >>> rep.n_landmarks, rep.certified, "zero to round-off" in rep.explain()
        (80, True, True)
        """
        st = self.statistical_error
        head = (
            f"m = {self.n_landmarks}: the Nyström embedding is within {self.approximation_error:.3g} "
            f"(RKHS norm, upper bound at confidence {self.confidence:g}; estimate {self.estimate:.3g}) "
            f"of the empirical embedding, {self.ratio:.3g} x its estimated statistical error "
            f"{st.value:.3g} ± {st.std_error:.2g} (n_eff = {st.n_effective:.6g}); target {self.tol:.3g}, "
            f"i.e. an RMS error within {math.sqrt(1 + self.tol**2) - 1:.1%} of the empirical one's. "
            f"Validated by {self.n_validation} {self.validation}."
        )
        if not self.converged:
            return head + (
                " The search stopped at max_landmarks before meeting the target: "
                "nothing is certified; raise max_landmarks or tol."
            )
        if self.stop == "every row":
            return head + (
                " Every row is a landmark: the embedding is exact, but NOT certified below m = n: no "
                f"landmark set smaller than the {self.n_landmarks} rows met the target, so it is no cheaper "
                "than the empirical one (EmpiricalKME); a larger tol would allow fewer landmarks."
            )
        if self.stop == "round-off":
            body = f" The error is zero to round-off (bound at most {self.round_off:.2g})" + (
                " and so is the statistical error: the kernel is constant on the data."
                if self.certified
                else ", but above the target: more landmarks change nothing float64 can see, and nothing is certified."
            )
        elif self.stop == "exhausted":
            body = " The sampler found no further landmark (the kernel matrix is exhausted to its tolerance)."
        else:
            body = " The target is met."
        if self.stop != "round-off" and not self.certified:
            body += " NOT certified: the bound is above the target."
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


def search_landmarks(
    src: RowSource,
    kernel: Kernel,
    policy: Policy,
    rng: np.random.Generator,
    *,
    spec: AutoLandmarks,
    sample_weight: Weights | None,
    solver: str,
    rcond: float,
    n_threads: int,
) -> SearchResult:
    """Run the search over ``src`` (the engine of ``n_landmarks="auto"`` in
    :class:`~nystrom_kme.NystromKME` and :func:`~nystrom_kme.two_sample_test`).

    Parameters
    ----------
    src : RowSource of n rows (any source of :mod:`nystrom_kme.sources`)
    kernel : Kernel with a numeric bandwidth
    policy : SamplingPolicy, or an object with ``select_indices`` (a private copy:
        non-uniform policies keep their last run's state); its ``nested_draws`` give the sets
    rng : numpy Generator, consumed by the subsample of ``stat_samples`` (if any), the
        draws and the probes
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
        raise ValueError(
            f"n_landmarks='auto' with sampler {policy!r} needs all of X in memory; "
            "with a streamed source use sampler='uniform'"
        )
    cap = (
        min(n, max(MAX_FLOOR, MAX_FACTOR * default_n_landmarks(n)))
        if spec.max_landmarks is None
        else spec.max_landmarks
    )
    if spec.max_landmarks is not None and cap > n:
        raise ValueError(f"max_landmarks={cap} exceeds n_samples={n}")
    stream = drawer.nested_draws(src, kernel, rng, sample_weight=weights, max_landmarks=cap)
    cap = stream.max_landmarks  # no draw yet: they come after the statistical subsample's
    first = spec.initial if spec.initial is not None else FIRST_BLOCK
    if spec.initial is not None and first > cap:
        raise ValueError(f"initial={first} exceeds max_landmarks={cap}")
    first = min(first, cap)
    subsample = (
        None
        if spec.stat_samples is None
        else subsample_statistical_error(src, kernel, weights, spec.stat_samples, rng, n_threads)
    )
    p = None if weights is None else normalised_weights(weights)
    q = 1.0 / n if p is None else float(np.sum(p * p))
    sums = RowSums(src, kernel, sample_weight, n_threads)
    with one_blas_thread():  # the factorizations' bits must not depend on numpy's threads
        found = CertifiedPath(
            src, kernel, stream, sums, spec.confidence, spec.ratio_bound, rng, p, q, first, cap, n_threads
        ).run()
    idx = found.indices
    L = np.ascontiguousarray(src.take(idx))
    acc = sums.of(idx)
    core = kernel.to_core()
    s = (acc.value() / sums.total).reshape(-1, 1)
    solution = _core.nystrom_weights(L, s, core, solver, rcond, 1e-12, n_threads)
    shift, slack = _solver_shift(L, s[:, 0], solution[0][:, 0], found.projection_weights, core, n_threads)
    stat = subsample if subsample is not None else found.statistical_error
    tol = spec.ratio_bound
    check = found.check
    every_row = found.stop == "every row"
    # the certificate is for the path's projection; the solver's weights are shift closer
    bound2, estimate2, kept = check.bound.bound - shift + slack, check.bound.estimate - shift, "solver"
    if not every_row and bound2 > check.bound.bound and bound2 > tol**2 * stat.squared >= check.bound.bound:
        # the solver's weights cannot be certified where the path's are: return the path's
        bound2, estimate2, kept = check.bound.bound, check.bound.estimate, "path"
        solution = (
            found.projection_weights[:, None].copy(),
            "cholesky",
            int(np.count_nonzero(found.projection_weights)),
        )
    error = 0.0 if every_row else math.sqrt(max(bound2, 0.0))
    if stat.value > 0:
        ratio = error / stat.value
    else:
        ratio = 0.0 if error <= math.sqrt(check.round_off) else math.inf
    certified = idx.size < n and (check.zero or ratio <= tol)
    converged = found.stop != "max_landmarks"
    if not converged:
        warnings.warn(
            f"n_landmarks='auto' stopped at max_landmarks={cap} with the approximation bounded by "
            f"{ratio:.3g} x the statistical error (tol={tol:.3g}); raise "
            "AutoLandmarks(max_landmarks=...) or tol",
            RuntimeWarning,
            stacklevel=4,
        )
    report = LandmarkSearch(
        n_landmarks=int(idx.size),
        approximation_error=float(error),
        estimate=0.0 if every_row else math.sqrt(max(estimate2, 0.0)),
        statistical_error=stat,
        ratio=float(ratio),
        tol=float(tol),
        confidence=float(spec.confidence),
        converged=bool(converged),
        certified=bool(certified),
        round_off=float(math.sqrt(check.round_off)),
        stop=found.stop,
        path=tuple(found.path),
        path_ratios=tuple(found.path_ratios),
        validation=found.validation,
        n_validation=int(check.bound.n_values),
        weights=kept,
        nested=bool(found.nested),
        seconds=time.perf_counter() - start,
    )
    return SearchResult(
        indices=idx, landmarks=L, sums=acc, weight_sum=float(sums.total), solution=solution, report=report
    )


def _solver_shift(
    L: np.ndarray, means: np.ndarray, alpha: np.ndarray, beta: np.ndarray, core: _core.Kernel, n_threads: int
) -> tuple[float, float]:
    """(shift, slack): e_beta^2 - e_alpha^2 for the core's weights alpha and the path's
    projection beta on the landmarks L, and the round-off of its computation.

    With delta = alpha - beta and r = mu_hat - mu_alpha at the landmarks (the
    interpolation residual), e_beta^2 = e_alpha^2 + delta^T K delta + 2 delta^T r exactly,
    whatever either set of weights: no bound on their difference is needed, and a
    rank-deficient K_m, where the solvers keep directions the path leaves out, gets the
    benefit. O(m^2 d). The slack is a random-walk estimate of the float64 error,
    SHIFT_SLACK eps kappa sqrt(m) ||delta|| (||delta|| + 2 ||alpha||), 100x the errors
    measured against extended precision with weights of norm 1e4 (tests); the
    worst-case bound eps |delta|^T K |delta| would be 1e3x larger and is what made the
    old round-off stop certify changes above the target (issue 31).
    """
    delta = alpha - beta
    columns = np.ascontiguousarray(np.stack([delta, alpha], axis=1))
    K_cols = _core.kernel_sums(L, L, columns, core, n_threads)
    residual = means - K_cols[:, 1]
    shift = fsum_dot(delta, K_cols[:, 0]) + 2.0 * fsum_dot(delta, residual)
    kappa = float(np.max(_core.kernel_diagonal(L, core, n_threads), initial=0.0))
    norm_delta, norm_alpha = float(np.linalg.norm(delta)), float(np.linalg.norm(alpha))
    slack = SHIFT_SLACK * EPS * kappa * math.sqrt(alpha.size) * norm_delta * (norm_delta + 2.0 * norm_alpha)
    return shift, slack


__all__ = [
    "AutoLandmarks",
    "LandmarkSearch",
    "SearchResult",
    "StatisticalError",
    "estimate_statistical_error",
    "search_landmarks",
]
