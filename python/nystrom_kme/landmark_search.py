"""An a-posteriori number of landmarks: the smallest m whose Nyström embedding is, at a
stated confidence and for any data, as good as the empirical embedding up to a set
fraction of the latter's own statistical error. ``NystromKME(n_landmarks="auto")`` runs it.

The paper's m = sqrt(n) log sqrt(n) (Corollary 4.1) is a worst-case rate. Here m is
measured on the data.

**The question.** With mu the true embedding, mu_hat_n the empirical one and
sigma^2 = E ||mu_hat_n - mu||^2 its mean squared (statistical) error, the Nyström
embedding mu_m = P_m mu_hat_n (the orthogonal projection on the landmarks' span) has

    ||mu_m - mu||^2 = ||mu_hat_n - mu||^2 + e(m)^2 - 2 <mu_hat_n - mu_m, mu_hat_n - mu>,

with e(m) = ||mu_hat_n - mu_m||. The last term is a cross term between the residual
and the sample's noise, small against e(m)^2 (measured on the Section 6.1 mixture,
digits and a d = 50 mixture: bench/RESULTS.md). So the target "the Nyström embedding's
RMS error within 10% of the empirical one's", E ||mu_m - mu||^2 <= 1.1^2 sigma^2, is
e(m) <= tol sigma with tol = (1.1^2 - 1)^(1/2) = 0.458 (``AutoLandmarks(within=0.1)``,
the default; ``tol`` sets the ratio directly). It is a statement in expectation: for one
sample, whose own error may be below sigma, the ratio of the two errors may exceed 1.1
while the excess stays below 0.21 sigma^2.

**The certificate** (:mod:`nystrom_kme._certificate` has the bounds and why they hold).
"certified" means: with probability at least ``confidence`` (0.99 by default) over the
draws of the search, e(m) <= tol sigma, where sigma is the population's statistical
error, for *any* data -- no normal approximation, no assumption on how the mass is
spread; only that the rows are i.i.d. (for sigma) and the kernel bounded on them. By the
projection identity e(m)^2 = ||mu_hat_n||^2 - ||P_m mu_hat_n||^2, the second term exact for
every prefix of the landmarks (:mod:`nystrom_kme._nested_projection`). The first is

* computed ("exact", O(n^2 d)) where that costs less than the rows below: e(m) is then
  known to round-off, and only sigma's lower bound (Hoeffding's, for the U-statistic of
  the n rows) is random;
* or bounded from validation rows drawn from the data independently of the landmarks,
  by a test by betting whose values have mean e(m)^2 and a range proportional to e(m):
  a mass of rows that no landmark reaches shows up after about log(1/delta) / e of them.
  Their number is sized for the target: VALIDATION_FACTOR ln(1/delta) / (tol sigma)
  rows at most (about 40 / sigma at the defaults), drawn in doubling batches while the
  test can still decide; each costs one kernel sum over the n rows.

A screen (the landmarks' own residuals, as a prequential estimate; 256 probe rows for
samplers whose landmarks are not draws from the data) decides when the test is tried:
when it estimates e(m) at about 0.7 of the target, and m grew by a quarter since the
last try. Each try j spends 6 delta / (pi^2 j^2) of the confidence, so the tries together
spend at most delta; the screen reads no validation row, so it cannot bias the test.

**The returned weights** are the core solver's (``solver``, ``rcond``), and they are
what is certified: for any weights alpha on the landmarks L, ||mu_hat_n - sum_j alpha_j
phi(l_j)||^2 = ||mu_hat_n||^2 - alpha^T s + alpha^T (K_m alpha - s), s = mu_hat_n(L), the
last two terms exact (O(m^2 d)); the validation rows see the residual mu_hat_n(v) -
sum_j alpha_j k(l_j, v), whose mean is the same up to that exact term. So neither the
solver's treatment of a rank-deficient K_m nor the nested factorization's rounding
(which only proposes where to look) enters the bound, beyond a round-off allowance.

**Stops.** "tolerance": certified. "every row": sampling without replacement took all n
rows (exact, but no cheaper than the empirical embedding: not certified). "plateau": the
last landmarks added no direction to the span and every row lies in it to 1e-6 of k(x, x) (constant
or near-constant kernels, few distinct rows): more landmarks change nothing. "exhausted":
a pivoted-Cholesky sampler found no further landmark. "max_landmarks": the cap (not
converged). Only "tolerance" is certified; constant data (sigma = 0, both errors zero to
round-off) are certified at the first check.

**The path.** Landmarks join in blocks from the policy's ``nested_draws``: 64, then
blocks of 5% of m (at least 16), the screen (or, "exact", the certificate) at each
block's end; their kernel sums are computed in chunks of 64 landmarks (four of the core's
tasks; the same chunks on any number of threads, so the search's bits do not depend on
it). The smallest m returned is 64. The largest is ``max_landmarks`` (default min(n,
max(8192, 2 ceil(sqrt(n) log sqrt(n))))).

**Cost** (bench/RESULTS.md, issue 34): the landmarks' sums, as one fit at the returned
m; plus the certificate: n^2 d / 2 kernel values for "exact" (n up to about 2x the
validation budget, ~10^4 to 4 10^4 rows at the defaults), else the validation rows'
sums, a few times sqrt(n) of them times n; plus one O(n d) pass for the kernel's range.

**Samplers.** Uniform sampling (the default, with or without replacement, weighted or
not) draws one stream whose prefixes are the sets. The sequential policies
("rpcholesky", "greedy-cholesky", "dpp-greedy", "herding", "cortes-scott") are
rerun at doubling sizes from one seed: their first m picks do not depend on how many
follow, so every prefix of the last run is a set of that policy. "block-rpcholesky"
below 128 landmarks, "rls" and callables need not nest: the factorization then starts
again on the new run (``LandmarkSearch.nested`` is False).
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass

import numpy as np

from ._blas import one_blas_thread
from ._certificate import u_statistic_lower
from ._compensated import CompensatedSum
from ._kernel_range import kernel_range
from ._search_path import SIGMA_SHARE, CertifiedPath, RowSums, Sigma
from ._statistical_error import (
    StatisticalError,
    estimate_statistical_error,
    subsample_statistical_error,
)
from ._validation import Weights, draw_seed, normalised_weights
from .bounds import default_n_landmarks
from .kernels import Kernel
from .sampling import Policy, as_policy
from .sources import RowSource

#: Default ``max_landmarks``: min(n, max(MAX_FLOOR, MAX_FACTOR ceil(sqrt(n) log sqrt(n)))).
MAX_FACTOR = 2
MAX_FLOOR = 8192
#: m of the first block of landmarks (the window of the certificate needs 64 values).
FIRST_BLOCK = 64
#: The validation rows' generator is seeded by one draw below this bound.
SEED_BOUND = 2**63
#: The default target: the Nyström embedding's RMS error within 10% of the empirical one's.
DEFAULT_WITHIN = 0.1
#: How the certificate obtains ||mu_hat_n||^2 (AutoLandmarks.check).
CHECKS = ("auto", "exact", "validation")


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
        m of the first block of landmarks; None: 64 (at most ``max_landmarks``).
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
    confidence : float in (0.5, 1), default=0.99
        The probability, over the search's random draws, that a certified embedding
        meets the target (for any data: see :mod:`nystrom_kme.landmark_search`).
    check : {"auto", "exact", "validation"}, default="auto"
        How ||mu_hat_n||^2 enters the certificate: "exact" computes it (O(n^2 d)),
        "validation" bounds it from rows drawn independently of the landmarks (about
        40 / sigma of them at most, each a kernel sum over the n rows), "auto" takes the
        cheaper of the two.

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
    check: str = "auto"

    def __post_init__(self) -> None:
        if self.check not in CHECKS:
            raise ValueError(f"check must be one of {CHECKS}, got {self.check!r}")
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
        returned embedding (0 when every row is a landmark; inf when nothing bounds it).
    estimate : float
        The point estimate of e (its square clamped at 0).
    statistical_error : StatisticalError
        sigma, the RMS error of the empirical embedding, with its standard error and its
        lower confidence bound ``lower``.
    ratio : float
        approximation_error / statistical_error.lower, the quantity certified against
        ``tol`` (when sigma's bound is 0: 0 for an error zero to round-off, else inf).
    tol : float
        The bound to certify on ``ratio`` (0.458: RMS error within 10%).
    confidence : float
    converged : bool
        The search stopped on its own: the bound was met ("tolerance"), or nothing more
        could be gained ("plateau", "exhausted", "every row"); False when
        ``max_landmarks`` stopped it.
    certified : bool
        ratio <= tol (or both errors zero to round-off) with fewer landmarks than rows;
        then ``stop`` is "tolerance".
    round_off : float
        The round-off level of the squared error (see the module documentation).
    stop : str
        "tolerance" (certified), "plateau" (no row can join the landmarks' span: more
        landmarks change nothing), "exhausted" (a pivoted-Cholesky sampler found no
        further landmark), "every row" (sampling without replacement took all n rows:
        exact), or "max_landmarks".
    path : tuple of int
        m at the end of each block of landmarks.
    path_ratios : tuple of float
        The screen's estimate of e / sigma at each m of ``path`` (a point estimate that
        only decides when the certificate is tried; inf before enough values).
    attempts : tuple of (int, float)
        Each m where the certificate was evaluated, with its bound on e / sigma's lower bound.
    validation : str
        "exact" (||mu_hat_n||^2 computed over every pair of rows) or "validation"
        (validation rows drawn independently of the landmarks).
    screening : str
        What the screen read: "landmarks" (each landmark validates the ones before it)
        or "probes" (256 independent rows).
    n_validation : int
        The rows behind the last bound (n for "exact").
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
    attempts: tuple[tuple[int, float], ...]
    validation: str
    screening: str
    n_validation: int
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
            f"(>= {self.statistical_error.lower:.3g}), tol={self.tol:.3g} at {self.confidence:g}, "
            f"{self.validation}, {self.seconds:.3g} s{state})"
        )

    def explain(self) -> str:
        """A paragraph a user can quote (also ``str(report)``; the CLI prints it).

        Examples
        --------
        >>> import numpy as np, nystrom_kme as nk
        >>> X = np.ones((400, 2))                      # constant rows: sigma = 0
        >>> rep = nk.NystromKME(nk.Gaussian(1.0), n_landmarks="auto").fit(X).n_landmarks_report_
        >>> rep.n_landmarks, rep.certified, rep.stop, "zero to round-off" in rep.explain()
        (1, True, 'tolerance', True)
        """
        st = self.statistical_error
        how = (
            f"||mu_hat_n||^2 computed over every pair of the {self.n_validation} rows"
            if self.validation == "exact"
            else f"{self.n_validation} validation rows drawn independently of the landmarks"
        )
        head = (
            f"m = {self.n_landmarks}: the Nyström embedding is within {self.approximation_error:.3g} "
            f"(RKHS norm, upper bound at confidence {self.confidence:g} for any data; estimate "
            f"{self.estimate:.3g}) of the empirical embedding, {self.ratio:.3g} x a lower bound "
            f"{st.lower:.3g} on its statistical error (estimate {st.value:.3g}, n_eff = {st.n_effective:.6g}); "
            f"target {self.tol:.3g}, i.e. an RMS error within {math.sqrt(1 + self.tol**2) - 1:.1%} of the "
            f"empirical one's. Checked by {how}."
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
        if self.certified and st.lower <= self.round_off:
            return head + (
                f" The error is zero to round-off (at most {self.round_off:.2g}) and so is the statistical "
                "error: the kernel is constant on the data."
            )
        if self.certified:
            return head + " The target is met."
        if self.stop == "plateau":
            body = (
                " The landmarks' span stopped growing (every row lies in it to 1e-6 of k(x, x)): more landmarks change "
                "nothing float64 can see."
            )
        elif self.stop == "exhausted":
            body = " The sampler found no further landmark (the kernel matrix is exhausted to its tolerance)."
        else:
            body = ""
        return head + body + " NOT certified: the bound is above the target."

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
    if n < 2:
        raise ValueError(
            f"n_landmarks='auto' needs at least 2 rows (the statistical error of {n} row is undefined); "
            "give an integer n_landmarks"
        )
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
    p = None if weights is None else normalised_weights(weights)
    q = 1.0 / n if p is None else float(np.sum(p * p))
    if not q < 1.0:
        raise ValueError("sample_weight puts all its mass on one row: the statistical error is undefined (n_eff = 1)")
    krange = kernel_range(src, kernel, p, n_threads)
    delta = 1.0 - float(spec.confidence)
    pilot = None
    if spec.stat_samples is not None:
        sub = subsample_statistical_error(src, kernel, weights, spec.stat_samples, rng, n_threads)
        lower = u_statistic_lower(sub.squared * sub.n_effective, sub.n_used, krange.gap_high, SIGMA_SHARE * delta)
        pilot = Sigma(sub.squared, max(lower / sub.n_effective, 0.0), sub.n_used, sub.std_error**2)
    # the validation rows' own generator, seeded before any landmark is drawn: independent draws
    validation_rng = np.random.default_rng(draw_seed(rng, SEED_BOUND))
    sums = RowSums(src, kernel, sample_weight, n_threads)
    with one_blas_thread():  # the factorizations' bits must not depend on numpy's threads
        found = CertifiedPath(
            src,
            kernel,
            stream,
            sums,
            spec.confidence,
            spec.ratio_bound,
            rng,
            validation_rng,
            p,
            q,
            first,
            cap,
            n_threads,
            krange,
            spec.check,
            pilot,
            solver,
            rcond,
        ).run()
    idx = found.indices
    L = np.ascontiguousarray(src.take(idx))
    acc = sums.of(idx)
    check = found.check
    solution = check.solution  # the weights the certificate is for
    tol = spec.ratio_bound
    sigma = check.sigma
    every_row = found.stop == "every row"
    certified = check.certified and not every_row
    bound2, estimate2 = check.bound, check.estimate
    error = 0.0 if every_row else math.sqrt(bound2) if math.isfinite(bound2) else math.inf
    if sigma.lower > 0:
        ratio = error / math.sqrt(sigma.lower)
    else:
        ratio = 0.0 if check.zero or every_row else math.inf
    stat = _statistical_error(sigma, q)
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
        attempts=tuple(found.attempts),
        validation=found.validation,
        screening=found.screening,
        n_validation=int(check.n_values),
        nested=bool(found.nested),
        seconds=time.perf_counter() - start,
    )
    return SearchResult(
        indices=idx, landmarks=L, sums=acc, weight_sum=float(sums.total), solution=solution, report=report
    )


def _statistical_error(sigma: Sigma, q: float) -> StatisticalError:
    """The report's sigma: the estimate, its standard error and the lower confidence bound."""
    se_sq = sigma.std_error
    value = math.sqrt(max(sigma.squared, 0.0))
    se = se_sq / (2.0 * value) if value > 0 else math.sqrt(max(se_sq, 0.0))
    return StatisticalError(
        value=value,
        std_error=se,
        squared=max(sigma.squared, 0.0),
        n_effective=1.0 / q,
        n_used=sigma.n_used,
        lower=math.sqrt(max(sigma.lower, 0.0)),
    )


__all__ = [
    "AutoLandmarks",
    "LandmarkSearch",
    "SearchResult",
    "StatisticalError",
    "estimate_statistical_error",
    "search_landmarks",
]
