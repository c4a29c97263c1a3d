"""The search of ``n_landmarks="auto"`` (:mod:`nystrom_kme.landmark_search` documents
it): the sample's weights and kernel range, sigma's pilot, the walk along the policy's
landmark stream (:mod:`._certified_path`), and its report."""

from __future__ import annotations

import math
import time
import warnings

import numpy as np

from .._blas import one_blas_thread
from .._validation import Weights, draw_seed, normalised_weights
from ..bounds import default_n_landmarks
from ..kernels import Kernel
from ..sampling import Policy, as_policy
from ..sources import RowSource
from ._auto_landmarks import AutoLandmarks
from ._certificate import u_statistic_lower
from ._certified_path import SIGMA_SHARE, CertifiedPath
from ._kernel_range import kernel_range
from ._path_settings import Draws, LandmarkStream, Levels, RowSums, Sample, Sigma, SolverSettings
from ._report import LandmarkSearch, SearchResult
from ._statistical_error import StatisticalError, subsample_statistical_error

#: Default ``max_landmarks``: min(n, max(MAX_FLOOR, MAX_FACTOR ceil(sqrt(n) log sqrt(n)))).
MAX_FACTOR = 2
MAX_FLOOR = 8192
#: m of the first block of landmarks (the window of the certificate needs 64 values).
FIRST_BLOCK = 64
#: The validation rows' generator is seeded by one draw below this bound.
SEED_BOUND = 2**63


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
    path = CertifiedPath(
        sample=Sample(src, kernel, sums, p, q, krange),
        levels=Levels(spec.ratio_bound, float(spec.confidence), spec.check, pilot),
        landmarks=LandmarkStream(stream, first, cap),
        solver=SolverSettings(solver, rcond, n_threads),
        draws=Draws(screen=rng, validation=validation_rng),
    )
    with one_blas_thread():  # the factorizations' bits must not depend on numpy's threads
        found = path.run()
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


__all__ = ["FIRST_BLOCK", "MAX_FACTOR", "MAX_FLOOR", "SEED_BOUND", "search_landmarks"]
